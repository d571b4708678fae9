"""The one statement type of the Oracle engine (text, binds, bind types), and bound id lists.

Builders of the Oracle engine return a :class:`Statement` and execute nothing;
:class:`~oracleagentmemory.engines.oracle.runner.StatementRunner` runs it:
``cursor.setinputsizes(**s.input_sizes)`` then ``cursor.execute(s.sql, s.binds)`` (or
``cursor.executemany(s.sql, s.rows)`` when :attr:`Statement.many`), with a ``cursor.var`` of
the declared type for each out-bind of :attr:`Statement.out_binds`.

Oracle has no array parameter like PostgreSQL's ``= ANY(%s)``: a list of ids is bound as one
JSON array (a Python ``list`` declared ``DB_TYPE_JSON``) and read with ``JSON_TABLE``
(:func:`id_list`), so a statement's text does not depend on the list's length (one cursor in
the statement cache, no limit of 1000 items as in an ``IN`` list, no SQL collection type to
create). ``JSON_TABLE`` over a JSON-typed expression: Oracle SQL Language Reference,
"JSON_TABLE" (21c and later accept the JSON type as its input).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import oracledb

from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

ID_COLUMN_TYPE = "VARCHAR2(128 CHAR)"
"""The type of every id the SDK stores (it refuses longer ids)."""

_BIND_NAME = re.compile(r"[a-z][a-z0-9_]{0,29}")


@dataclass(frozen=True)
class Statement:
    """One statement to run: its text, bind values, bind types, out-binds and row keys.

    - ``binds``: the named bind values of one ``cursor.execute``;
    - ``rows``: set for one ``cursor.executemany`` instead (one bind mapping per row;
      ``binds`` stays empty), see :attr:`many`;
    - ``input_sizes``: the bind types python-oracledb must be told (``setinputsizes``);
    - ``out_binds``: out-bind name -> ``cursor.var`` type, for a DML ``RETURNING ... INTO``
      clause (read back as a list, one value per affected row) or a PL/SQL block's OUT
      variables (read back as one value);
    - ``columns``: the keys of the rows a query returns (each selected under that quoted,
      lower-case alias, :func:`aliased`).
    """

    sql: str
    binds: Mapping[str, Any] = field(default_factory=dict)
    input_sizes: Mapping[str, Any] = field(default_factory=dict)
    rows: tuple[Mapping[str, Any], ...] | None = None
    out_binds: Mapping[str, Any] = field(default_factory=dict)
    columns: tuple[str, ...] = ()

    @property
    def many(self) -> bool:
        """Whether this is one ``executemany`` over :attr:`rows`."""
        return self.rows is not None


def bind_name(name: str) -> str:
    """``name`` checked as a bind variable name (lower case, at most 30 characters)."""
    if not isinstance(name, str) or not _BIND_NAME.fullmatch(name):
        raise InvalidArgumentError(f"invalid bind name {name!r}")
    return name


def id_list(bind: str) -> str:
    """``SELECT j.id FROM JSON_TABLE(:bind, ...) j``: the ids of a bound JSON array of str."""
    return (f"SELECT j.id FROM JSON_TABLE(:{bind_name(bind)}, '$[*]' "
            f"COLUMNS (id {ID_COLUMN_TYPE} PATH '$')) j")


def id_list_bind(ids: Sequence[str], *, what: str = "ids") -> list[str]:
    """``ids`` as the value of an :func:`id_list` bind: a list of str, duplicates removed
    (first occurrence kept). Declare it with :func:`json_sizes`."""
    if isinstance(ids, str):
        raise InvalidArgumentTypeError(f"{what} must be a sequence of str, not a str")
    values = list(dict.fromkeys(ids))
    for value in values:
        if not isinstance(value, str):
            raise InvalidArgumentTypeError(
                f"{what} holds a {type(value).__name__}; ids are str", argument=what)
    return values


def json_sizes(*names: str) -> dict[str, Any]:
    """``setinputsizes`` entries declaring the binds ``names`` as ``DB_TYPE_JSON``."""
    return {bind_name(name): oracledb.DB_TYPE_JSON for name in names}


def aliased(columns: Mapping[str, str]) -> str:
    """``expr AS "key", ...``: a SELECT list whose rows come back under lower-case keys
    (python-oracledb reports an unquoted column as upper case)."""
    return ", ".join(f'{expression} AS "{key}"' for key, expression in columns.items())
