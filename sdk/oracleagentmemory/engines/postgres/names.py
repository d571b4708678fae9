"""Quoting of managed identifiers for PostgreSQL (the one place that quotes)."""

from __future__ import annotations

from psycopg import sql

from oracleagentmemory.engines.identifiers import REGISTRY_TABLE, StoreNames


def table(names: StoreNames, logical: str) -> sql.Composable:
    """Qualified, quoted name of managed table ``logical``."""
    return _qualify(names, names.table(logical))


def registry(names: StoreNames) -> sql.Composable:
    """Qualified, quoted name of the registry table."""
    return _qualify(names, REGISTRY_TABLE)


def index(names: StoreNames, suffix: str) -> sql.Composable:
    """Quoted (unqualified) name of a managed index; indexes live in their table's schema."""
    return sql.Identifier(names.object_name(suffix))


def index_qualified(names: StoreNames, suffix: str) -> sql.Composable:
    """Qualified, quoted name of a managed index (for DROP INDEX)."""
    return _qualify(names, names.object_name(suffix))


def _qualify(names: StoreNames, name: str) -> sql.Composable:
    if names.schema is None:
        return sql.Identifier(name)
    return sql.Identifier(names.schema, name)
