"""Schema lifecycle of one store on Oracle, run on a python-oracledb connection.

The statements come from :mod:`.schema_sql` and :mod:`.ddl` (pinned by golden files); this
module only runs them in order and reads their answers. It has not been run against a live
Oracle database (none is reachable where it was written): see ``deploy/oracle/README.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import oracledb

from oracleagentmemory.engines.interfaces import RegistryRow, SchemaOptions, SchemaState
from oracleagentmemory.engines.oracle import ddl, hybrid, schema_sql
from oracleagentmemory.engines.oracle.names import OracleObjects
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import MemoryStoreSchemaError


def run(conn: oracledb.Connection, statement: Statement) -> oracledb.Cursor:
    """Execute one statement (text and binds); returns its cursor."""
    cursor = conn.cursor()
    cursor.execute(statement.sql, dict(statement.binds))
    return cursor


def scalar(conn: oracledb.Connection, statement: Statement) -> Any:
    """The first column of the first row (``None`` without rows)."""
    row = run(conn, statement).fetchone()
    return None if row is None else row[0]


def read_schema_state(conn: oracledb.Connection, o: OracleObjects) -> SchemaState:
    """Which managed tables exist, the registry row and the embedding dimension."""
    statement, lookup = schema_sql.existing_tables(o)
    present = {lookup[row[0]] for row in run(conn, statement).fetchall() if row[0] in lookup}
    registry_exists = "" in present
    existing = frozenset(name for name in present if name)
    registry: RegistryRow | None = None
    if registry_exists:
        row = run(conn, schema_sql.read_registry(o)).fetchone()
        if row is not None:
            registry = RegistryRow(int(row[0]), str(row[1]),
                                   None if row[2] is None else int(row[2]),
                                   None if row[3] is None else int(row[3]),
                                   None if row[4] is None else int(row[4]), str(row[5]))
    embedding_dim: int | None = None
    if "record_chunks" in existing:
        embedding_dim = _embedding_dimension(conn, o)
    return SchemaState(registry=registry, registry_table_exists=registry_exists,
                       existing_tables=existing, embedding_dim=embedding_dim)


def _embedding_dimension(conn: oracledb.Connection, o: OracleObjects) -> int | None:
    """The chunk table's ``VECTOR`` dimension, from the cursor description; ``None`` when the
    table has no embedding column (ORA-00904, invalid identifier)."""
    try:
        cursor = run(conn, schema_sql.embedding_probe(o))
    except oracledb.DatabaseError as exc:
        if _ora_code(exc) == 904:
            return None
        raise
    description = cursor.description
    if not description:
        return None
    dimensions = getattr(description[0], "vector_dimensions", None)
    return None if dimensions is None else int(dimensions)


def _ora_code(exc: oracledb.DatabaseError) -> int | None:
    error = exc.args[0] if exc.args else None
    code = getattr(error, "code", None)
    return code if isinstance(code, int) else None


def bypasses_row_security(conn: oracledb.Connection) -> bool:
    """Whether row security does not bind this connection (not an end-user session)."""
    return bool(scalar(conn, schema_sql.outside_end_user_session()))


def apply_schema_version(conn: oracledb.Connection, o: OracleObjects, version: int,
                         options: SchemaOptions) -> None:
    """Create the store at Oracle's only schema version (1); later versions do not exist.

    A ``hybrid`` store gets the hybrid vector index on the chunk text (:mod:`.hybrid`) instead
    of the CONTEXT index; creating it needs the in-database model of an ``OracleDBEmbedder``,
    and is refused without one before any DDL runs. A store that already has the hybrid index
    keeps it whatever the mode (its text part serves keyword search; Oracle lets no CONTEXT
    index own the column beside it), so a keyword client repairing a hybrid store needs no
    model.
    """
    if version != ddl.LATEST_SCHEMA_VERSION:
        raise MemoryStoreSchemaError(
            f"the Oracle engine has no schema step to version {version} (its latest is "
            f"{ddl.LATEST_SCHEMA_VERSION})")
    has_hybrid = bool(scalar(conn, schema_sql.index_exists(o, hybrid.HYBRID_INDEX_SUFFIX)))
    model = hybrid.require_vectorizer(options) \
        if options.search_mode == "hybrid" and not has_hybrid else None
    run(conn, Statement(ddl.registry_table(o)))
    for statement in ddl.create_store(o, options):
        suffix = _once_only_index(statement, o)
        if suffix == hybrid.TEXT_INDEX_SUFFIX and has_hybrid:
            continue
        if suffix is not None and scalar(conn, schema_sql.index_exists(o, suffix)):
            continue
        run(conn, Statement(statement))
    if model is not None:
        _create_hybrid_index(conn, o, model, options.search_index_sync)


def _create_hybrid_index(conn: oracledb.Connection, o: OracleObjects,
                         model: Mapping[str, Any], search_index_sync: str) -> None:
    """Replace the CONTEXT index, if any, by the vectorizer preference and the hybrid index.

    Each step commits (DDL); a failure part-way leaves a store without a text index, which the
    next open as the owner completes (the hybrid index is created while it does not exist).
    """
    if scalar(conn, schema_sql.index_exists(o, hybrid.TEXT_INDEX_SUFFIX)):
        run(conn, Statement(hybrid.drop_text_index(o)))
    run(conn, hybrid.create_preference(o, model))
    run(conn, Statement(hybrid.hybrid_index(o, search_index_sync)))


def _once_only_index(statement: str, o: OracleObjects) -> str | None:
    """The suffix of a vector or text index (no ``IF NOT EXISTS``) that ``statement``
    creates, else ``None``."""
    for suffix in ("record_chunks_hnsw_ix", "record_chunks_text_ix"):
        if statement.startswith(("CREATE VECTOR INDEX ", "CREATE INDEX ")) \
                and f" {o.index(suffix)} " in statement:
            return suffix
    return None


def add_embedding_storage(conn: oracledb.Connection, o: OracleObjects, dim: int) -> None:
    """Add the embedding column and its HNSW index to a store created without them."""
    column, index = ddl.add_embedding_column(o, dim)
    if _embedding_dimension(conn, o) is None:
        run(conn, Statement(column))
    if not scalar(conn, schema_sql.index_exists(o, "record_chunks_hnsw_ix")):
        run(conn, Statement(index))


def write_registry(conn: oracledb.Connection, o: OracleObjects, row: RegistryRow) -> None:
    """Create the registry table if needed and insert or replace the store's row."""
    run(conn, Statement(ddl.registry_table(o)))
    run(conn, schema_sql.write_registry(o, row))


def drop_store(conn: oracledb.Connection, o: OracleObjects) -> None:
    """Drop every managed table of the store and delete its registry row."""
    statement, lookup = schema_sql.existing_tables(o)
    for table in schema_sql.drop_tables(o):
        run(conn, table)
    run(conn, hybrid.drop_preference(o))  # the hybrid index went with its table
    if "" in {lookup[row[0]] for row in run(conn, statement).fetchall() if row[0] in lookup}:
        run(conn, schema_sql.delete_registry_row(o))
