"""A rendered Oracle statement (text, bind values, bind types), and bound id lists.

Builders of the Oracle engine return an :class:`OracleStatement` and execute nothing; the
session runs it: ``cursor.setinputsizes(**s.input_sizes)`` then ``cursor.execute(s.sql,
s.binds)`` (or ``executemany`` when :attr:`OracleStatement.many`), with a ``cursor.var`` for
each name in :attr:`OracleStatement.out_binds`.

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
class OracleStatement:
    """One statement: its text, its bind values and the types some binds must be declared.

    ``binds`` is one mapping (``execute``) or, when ``many``, a list of them
    (``executemany``). ``out_binds`` names the ``RETURNING ... INTO`` or PL/SQL OUT variables
    the executor creates with ``cursor.var`` (each a list of ``str`` for a multi-row
    ``RETURNING``, a number for a PL/SQL OUT count). ``columns`` are the keys of the rows a
    query returns (each selected under that quoted, lower-case alias).
    """

    sql: str
    binds: Mapping[str, Any] | Sequence[Mapping[str, Any]] = field(default_factory=dict)
    input_sizes: Mapping[str, Any] = field(default_factory=dict)
    many: bool = False
    out_binds: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()

    def named_binds(self) -> dict[str, Any]:
        """The binds of a single execution (``execute``), as a new dict."""
        if self.many or not isinstance(self.binds, Mapping):
            raise TypeError("an executemany statement has a list of bind mappings")
        return dict(self.binds)


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
