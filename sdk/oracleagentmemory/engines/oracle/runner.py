"""Runs the Oracle engine's rendered statements on one python-oracledb connection.

The builders return three shapes (all frozen dataclasses): a single execution with named binds
(``bindset.Statement`` and its ``record_sql.Statement`` subclass, whose ``returning`` names
``RETURNING ... INTO`` out-binds with their types), a batch (``record_sql.Batch``), and
:class:`~oracleagentmemory.engines.oracle.statement.OracleStatement` (single or
``executemany``, with out-bind names and the keys of the rows it selects). This module is the
one place that turns them into ``setinputsizes``, ``execute``/``executemany`` and
``cursor.var`` calls, following python-oracledb's documented API:

- every query runs with ``fetch_lobs=False``: CLOB and BLOB columns arrive as ``str`` and
  ``bytes`` (no LOB locator, no extra round trip per value);
- an out-bind of a DML ``RETURNING`` clause reads back as a list (one value per affected row);
  a PL/SQL OUT variable as a single value;
- a batch that must report per-row failures runs with ``batcherrors=True``.

Not run against a live database (none is reachable where it was written).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import oracledb

from oracleagentmemory.engines.oracle import bindset
from oracleagentmemory.engines.oracle.record_sql import Batch
from oracleagentmemory.engines.oracle.record_sql import Statement as ReturningStatement
from oracleagentmemory.engines.oracle.statement import OracleStatement

Runnable = bindset.Statement | OracleStatement
"""A single execution (``Batch`` runs through :meth:`StatementRunner.batch`)."""

DEFAULT_BATCH_SIZE = 500
"""Rows per ``executemany`` round trip when the caller names no batch size."""


@dataclass
class Executed:
    """A finished execution: its cursor (rows not fetched yet), affected row count and the
    out-bind values by name."""

    cursor: oracledb.Cursor
    rowcount: int
    out: dict[str, Any]


def _is_plsql(sql: str) -> bool:
    return sql.lstrip().upper().startswith(("DECLARE", "BEGIN"))


def _out_types(statement: Runnable) -> dict[str, Any]:
    """Out-bind name -> ``cursor.var`` type. ``OracleStatement`` names its out-binds only: a
    PL/SQL block's are counts (``NUMBER``), a DML ``RETURNING`` clause's are ids and labels
    (``VARCHAR``)."""
    if isinstance(statement, ReturningStatement):
        return dict(statement.returning)
    if isinstance(statement, OracleStatement):
        kind = oracledb.DB_TYPE_NUMBER if _is_plsql(statement.sql) else oracledb.DB_TYPE_VARCHAR
        return dict.fromkeys(statement.out_binds, kind)
    return {}


class StatementRunner:
    """Executes rendered statements on ``conn`` (in its open transaction; never commits)."""

    def __init__(self, conn: oracledb.Connection) -> None:
        self.conn = conn

    def _cursor(self, input_sizes: Mapping[str, Any]) -> oracledb.Cursor:
        cursor = self.conn.cursor()
        if input_sizes:
            cursor.setinputsizes(**dict(input_sizes))
        return cursor

    def execute(self, statement: Runnable) -> Executed:
        """One execution (an ``executemany`` ``OracleStatement`` goes to :meth:`many`)."""
        if isinstance(statement, OracleStatement) and statement.many:
            raise TypeError("an executemany statement runs through StatementRunner.many")
        cursor = self._cursor(statement.input_sizes)
        binds = dict(statement.binds) if isinstance(statement.binds, Mapping) else {}
        variables = {name: cursor.var(kind) for name, kind in _out_types(statement).items()}
        cursor.execute(statement.sql, {**binds, **variables}, fetch_lobs=False)
        plsql = _is_plsql(statement.sql)
        out = {name: (var.getvalue() if plsql else _returned(var))
               for name, var in variables.items()}
        return Executed(cursor=cursor, rowcount=cursor.rowcount, out=out)

    def rows(self, statement: Runnable) -> list[tuple[Any, ...]]:
        """The rows a query returns."""
        return list(self.execute(statement).cursor.fetchall())

    def dicts(self, statement: OracleStatement) -> list[dict[str, Any]]:
        """The rows of a query whose ``columns`` name its selected keys, as dicts."""
        return [dict(zip(statement.columns, row, strict=True))
                for row in self.rows(statement)]

    def scalar(self, statement: Runnable) -> Any:
        """The first column of the first row (``None`` without rows)."""
        row = self.execute(statement).cursor.fetchone()
        return None if row is None else row[0]

    def batch(self, batch: Batch, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        """One ``executemany`` of a :class:`Batch` (nothing to do for no rows)."""
        if batch.rows:
            cursor = self._cursor(batch.input_sizes)
            cursor.executemany(batch.sql, [dict(r) for r in batch.rows],
                               batch_size=max(1, batch_size))

    def many(self, statement: OracleStatement, *, batcherrors: bool = False
             ) -> oracledb.Cursor:
        """One ``executemany`` of an ``OracleStatement`` whose ``binds`` is a list."""
        rows = statement.binds
        if isinstance(rows, Mapping):
            raise TypeError("an executemany statement binds a list of mappings")
        cursor = self._cursor(statement.input_sizes)
        if rows:
            cursor.executemany(statement.sql, [dict(r) for r in rows],
                               batcherrors=batcherrors)
        return cursor


def _returned(var: oracledb.Var) -> list[Any]:
    """A DML ``RETURNING ... INTO`` variable's values: one per affected row."""
    value = var.getvalue()
    if value is None:
        return []
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) \
        else [value]
