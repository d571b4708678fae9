"""Named bind variables of one Oracle statement, collected while a builder writes it.

Builders never format a value into SQL text: each value gets a bind name (``:mf0``, ``:qv``)
from a :class:`BindSet`, and JSON values are declared ``DB_TYPE_JSON`` (python-oracledb needs
``cursor.setinputsizes`` for them, see :mod:`.binds`). :meth:`BindSet.statement` returns the
engine's one :class:`~oracleagentmemory.engines.oracle.statement.Statement`.
"""

from __future__ import annotations

import re
from typing import Any

import oracledb

from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import InvalidArgumentError

_PREFIX = re.compile(r"[a-z][a-z0-9_]{0,20}")


class BindSet:
    """Bind names and values collected while a statement is built."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.input_sizes: dict[str, Any] = {}
        self._counts: dict[str, int] = {}
        self._aliases: dict[str, int] = {}

    def add(self, prefix: str, value: Any) -> str:
        """Bind ``value`` under a new name ``<prefix><n>``; returns the name (no colon)."""
        if not _PREFIX.fullmatch(prefix):
            raise InvalidArgumentError(f"invalid bind prefix {prefix!r}")
        n = self._counts.get(prefix, 0)
        while f"{prefix}{n}" in self.values:
            n += 1
        self._counts[prefix] = n + 1
        name = f"{prefix}{n}"
        self.values[name] = value
        return name

    def add_json(self, prefix: str, value: Any) -> str:
        """Bind ``value`` (any JSON value, scalars included) as ``DB_TYPE_JSON``."""
        name = self.add(prefix, value)
        self.input_sizes[name] = oracledb.DB_TYPE_JSON
        return name

    def alias(self, prefix: str) -> str:
        """A new table alias ``<prefix><n>`` for this statement (no value is bound)."""
        if not _PREFIX.fullmatch(prefix):
            raise InvalidArgumentError(f"invalid alias prefix {prefix!r}")
        n = self._aliases.get(prefix, 0)
        self._aliases[prefix] = n + 1
        return f"{prefix}{n}"

    def named(self, name: str, value: Any) -> str:
        """Bind ``value`` under the fixed ``name`` (``qv``, ``q``); it must be new."""
        if not _PREFIX.fullmatch(name) or name in self.values:
            raise InvalidArgumentError(f"invalid or repeated bind name {name!r}")
        self.values[name] = value
        return name

    def statement(self, sql: str) -> Statement:
        """The finished statement with every bind collected so far."""
        return Statement(sql=sql, binds=dict(self.values), input_sizes=dict(self.input_sizes))
