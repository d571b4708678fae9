"""Policy-as-code: data roles and their per-table data grants, declared once as data.

The declarations name tables by their logical name (``memory``, ``message``...) and express row
predicates as a small engine-neutral tree; each renderer turns them into one database's DDL.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EndUserIs:
    """``column`` equals the current end user's name."""

    column: str


@dataclass(frozen=True)
class IsNull:
    """``column`` is NULL (an unscoped record)."""

    column: str


@dataclass(frozen=True)
class Equals:
    """``column`` equals the constant ``value``."""

    column: str
    value: str


@dataclass(frozen=True)
class ExistsVisible:
    """A row of ``table`` with ``table.key = this.column`` exists and satisfies ``where``.

    The subquery runs with the end user's own rights, so it sees only rows the user may see.
    """

    table: str
    key: str
    column: str
    where: Predicate | None = None


@dataclass(frozen=True)
class AllOf:
    """Every part holds."""

    parts: tuple[Predicate, ...]


@dataclass(frozen=True)
class AnyOf:
    """At least one part holds."""

    parts: tuple[Predicate, ...]


@dataclass(frozen=True)
class Always:
    """No row restriction."""


Predicate = EndUserIs | IsNull | Equals | ExistsVisible | AllOf | AnyOf | Always


@dataclass(frozen=True)
class TableGrant:
    """What a data role may do on one table, and on which rows.

    ``insert_columns`` / ``update_columns`` list the only columns the role may write; ``None``
    means the privilege is not granted.
    """

    table: str
    predicate: Predicate
    select: bool = True
    insert_columns: tuple[str, ...] | None = None
    update_columns: tuple[str, ...] | None = None
    delete: bool = False


@dataclass(frozen=True)
class DataRolePolicy:
    """A named bundle of data grants (an Oracle data role; PostgreSQL RLS policies)."""

    name: str
    description: str
    grants: tuple[TableGrant, ...]

    def tables(self) -> tuple[str, ...]:
        """Tables this policy touches, in declaration order."""
        return tuple(dict.fromkeys(g.table for g in self.grants))
