"""Schema lifecycle SQL of one store on PostgreSQL: lock, inspect, create, upgrade, drop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE, StoreNames
from oracleagentmemory.engines.interfaces import RegistryRow, SchemaOptions, SchemaState
from oracleagentmemory.engines.postgres import ddl
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.errors import MemoryStoreSchemaError

AdapterHook = Callable[[psycopg.Connection[Any]], None]
"""Called on a connection once the pgvector extension exists (registers its adapters)."""


def lock_store(conn: psycopg.Connection[Any], names: StoreNames) -> None:
    """Serialise schema lifecycle work on the store until the transaction ends."""
    key = f"oam-store:{names.schema or ''}:{names.store_key}"
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])


def schema_name(conn: psycopg.Connection[Any], names: StoreNames) -> str:
    """The schema holding the store: its own, or the connection's current schema."""
    if names.schema is not None:
        return names.schema
    row = conn.execute("SELECT current_schema()").fetchone()
    if row is None or row[0] is None:
        raise RuntimeError("the connection has no current schema (check search_path)")
    return str(row[0])


def read_schema_state(conn: psycopg.Connection[Any], names: StoreNames) -> SchemaState:
    """Which managed tables exist, the registry row and the embedding dimension."""
    schema = schema_name(conn, names)
    wanted = {names.table(t): t for t in MANAGED_TABLES}
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = ANY(%s) AND c.relkind IN ('r', 'p', 'v')",
        [schema, list(wanted) + [REGISTRY_TABLE]],
    ).fetchall()
    present = {r[0] for r in rows}
    existing = frozenset(wanted[name] for name in present if name in wanted)
    registry: RegistryRow | None = None
    registry_exists = REGISTRY_TABLE in present
    if registry_exists:
        row = conn.execute(
            sql.SQL(
                "SELECT schema_version, search_mode, vector_dim, default_ttl_days, "
                "max_ttl_days, search_index_sync FROM {} WHERE store_key = %s"
            ).format(q.registry(names)),
            [names.store_key],
        ).fetchone()
        if row is not None:
            registry = RegistryRow(*row)
    embedding_dim = None
    if "record_chunks" in existing:
        dim_row = conn.execute(
            "SELECT a.atttypmod FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
            "AND c.relname = %s AND a.attname = 'embedding' AND NOT a.attisdropped",
            [schema, names.table("record_chunks")],
        ).fetchone()
        if dim_row is not None:
            embedding_dim = int(dim_row[0])
    return SchemaState(
        registry=registry,
        registry_table_exists=registry_exists,
        existing_tables=existing,
        embedding_dim=embedding_dim,
    )


def bypasses_row_security(conn: psycopg.Connection[Any], names: StoreNames) -> bool:
    """Whether the connection's user escapes the store's row security."""
    row = conn.execute(
        "SELECT r.rolsuper OR r.rolbypassrls OR EXISTS (SELECT 1 FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = "
        "coalesce(%s, current_schema()) AND c.relname = %s "
        "AND pg_has_role(current_user, c.relowner, 'MEMBER')) "
        "FROM pg_roles r WHERE r.rolname = current_user",
        [names.schema, names.table("memory")],
    ).fetchone()
    return bool(row and row[0])


def apply_schema_version(conn: psycopg.Connection[Any], names: StoreNames, version: int,
                         options: SchemaOptions, on_vector_created: AdapterHook) -> None:
    """Apply the DDL step to ``version``; the first step creates pgvector when needed."""
    if version == 1 and options.vector_dim is not None:
        _ensure_vector_extension(conn, on_vector_created)
    ddl.SCHEMA_STEPS[version](conn, names, options)


def add_embedding_storage(conn: psycopg.Connection[Any], names: StoreNames, dim: int,
                          on_vector_created: AdapterHook) -> None:
    """Add the embedding column to a store created without vector storage."""
    _ensure_vector_extension(conn, on_vector_created)
    ddl.add_embedding_column(conn, names, dim)


def _ensure_vector_extension(conn: psycopg.Connection[Any],
                             on_vector_created: AdapterHook) -> None:
    row = conn.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone()
    if row and row[0]:
        return
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise MemoryStoreSchemaError(
            "vector storage needs the pgvector extension, which is not installed in this "
            "database and could not be created by this user; run CREATE EXTENSION vector "
            f"as a superuser ({exc.__class__.__name__}: {exc})"
        ) from exc
    on_vector_created(conn)


def write_registry(conn: psycopg.Connection[Any], names: StoreNames, row: RegistryRow) -> None:
    """Create the registry table if needed and insert or replace the store's row."""
    conn.execute(ddl.REGISTRY_DDL.format(q.registry(names)))
    conn.execute(
        sql.SQL(
            "INSERT INTO {} (store_key, schema_version, search_mode, vector_dim, "
            "default_ttl_days, max_ttl_days, search_index_sync) VALUES (%s, %s, %s, %s, %s, "
            "%s, %s) ON CONFLICT (store_key) DO UPDATE SET schema_version = "
            "EXCLUDED.schema_version, search_mode = EXCLUDED.search_mode, vector_dim = "
            "EXCLUDED.vector_dim, default_ttl_days = EXCLUDED.default_ttl_days, max_ttl_days = "
            "EXCLUDED.max_ttl_days, search_index_sync = EXCLUDED.search_index_sync, "
            "updated_at = now()"
        ).format(q.registry(names)),
        [names.store_key, row.schema_version, row.search_mode, row.vector_dim,
         row.default_ttl_days, row.max_ttl_days, row.search_index_sync],
    )


def drop_store(conn: psycopg.Connection[Any], names: StoreNames) -> None:
    """Drop every managed table of the store and delete its registry row."""
    for logical in reversed(MANAGED_TABLES):
        conn.execute(
            sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(q.table(names, logical))
        )
    if REGISTRY_TABLE in {
        r[0] for r in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s",
            [schema_name(conn, names), REGISTRY_TABLE],
        ).fetchall()
    }:
        conn.execute(
            sql.SQL("DELETE FROM {} WHERE store_key = %s").format(q.registry(names)),
            [names.store_key],
        )
