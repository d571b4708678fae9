"""Runs the Oracle engine's statements on one python-oracledb connection.

Every builder returns one shape, :class:`~oracleagentmemory.engines.oracle.statement.Statement`
(frozen). This module is the one place that turns it into ``setinputsizes``,
``execute``/``executemany`` and ``cursor.var`` calls, one code path per execution kind
(:meth:`StatementRunner.execute`, :meth:`StatementRunner.many`), following python-oracledb's
documented API:

- every query runs with ``fetch_lobs=False``: CLOB and BLOB columns arrive as ``str`` and
  ``bytes`` (no LOB locator, no extra round trip per value);
- each out-bind is a ``cursor.var`` of its declared type; one of a DML ``RETURNING`` clause
  reads back as a list (one value per affected row), a PL/SQL OUT variable as a single value;
- a batch that must report per-row failures runs with ``batcherrors=True``.

Not run against a live database (none is reachable where it was written).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import oracledb

from oracleagentmemory.engines.oracle.statement import Statement

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


class StatementRunner:
    """Executes rendered statements on ``conn`` (in its open transaction; never commits)."""

    def __init__(self, conn: oracledb.Connection) -> None:
        self.conn = conn

    def _cursor(self, input_sizes: Mapping[str, Any]) -> oracledb.Cursor:
        cursor = self.conn.cursor()
        if input_sizes:
            cursor.setinputsizes(**dict(input_sizes))
        return cursor

    def execute(self, statement: Statement) -> Executed:
        """One ``execute`` (a statement with ``rows`` goes to :meth:`many`)."""
        if statement.many:
            raise TypeError("an executemany statement runs through StatementRunner.many")
        cursor = self._cursor(statement.input_sizes)
        variables = {name: cursor.var(kind) for name, kind in statement.out_binds.items()}
        cursor.execute(statement.sql, {**statement.binds, **variables}, fetch_lobs=False)
        plsql = _is_plsql(statement.sql)
        out = {name: (var.getvalue() if plsql else _returned(var))
               for name, var in variables.items()}
        return Executed(cursor=cursor, rowcount=cursor.rowcount, out=out)

    def rows(self, statement: Statement) -> list[tuple[Any, ...]]:
        """The rows a query returns."""
        return list(self.execute(statement).cursor.fetchall())

    def dicts(self, statement: Statement) -> list[dict[str, Any]]:
        """The rows of a query whose ``columns`` name its selected keys, as dicts."""
        return [dict(zip(statement.columns, row, strict=True))
                for row in self.rows(statement)]

    def scalar(self, statement: Statement) -> Any:
        """The first column of the first row (``None`` without rows)."""
        row = self.execute(statement).cursor.fetchone()
        return None if row is None else row[0]

    def many(self, statement: Statement, *, batch_size: int | None = None,
             batcherrors: bool = False) -> oracledb.Cursor:
        """One ``executemany`` over the statement's ``rows`` (no round trip for no rows);
        ``batch_size`` rows per round trip (python-oracledb's default when ``None``)."""
        if statement.rows is None:
            raise TypeError("a single statement runs through StatementRunner.execute")
        cursor = self._cursor(statement.input_sizes)
        if statement.rows:
            sizing = {} if batch_size is None else {"batch_size": max(1, batch_size)}
            cursor.executemany(statement.sql, [dict(r) for r in statement.rows],
                               batcherrors=batcherrors, **sizing)
        return cursor


def _returned(var: oracledb.Var) -> list[Any]:
    """A DML ``RETURNING ... INTO`` variable's values: one per affected row."""
    value = var.getvalue()
    if value is None:
        return []
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) \
        else [value]
