"""Schema lifecycle statements of one store on Oracle: lock, inspect, registry, drop.

Pure functions: each returns a :class:`~.statement.Statement` and executes nothing (the session
runs them, :mod:`oracleagentmemory.engines.oracle.schema_ops`). Every object is schema-qualified
through :class:`~oracleagentmemory.engines.oracle.names.OracleObjects`; every value is bound.

Two Oracle facts shape this module:

- **DDL commits.** ``CREATE TABLE`` and ``CREATE INDEX`` end the open transaction, so the store
  lock cannot be a transaction lock as on PostgreSQL (``pg_advisory_xact_lock``): it is a
  ``DBMS_LOCK`` user lock taken with ``release_on_commit => FALSE`` and released explicitly by
  :func:`unlock_store` when the lifecycle work ends (the session does it in a ``finally``).
  Every creating statement is idempotent (``IF NOT EXISTS``, or an ``ALL_INDEXES`` check first),
  so work cut short by a failure is finished by the next open.
- **End-user sessions run as ``XS$NULL``.** Whether a connection escapes row security is
  whether it is *not* an end-user session: Deep Data Security filters end-user sessions only;
  the schema owner, a DBA or any ordinary database user reads every row its privileges reach.
"""

from __future__ import annotations

import hashlib

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE
from oracleagentmemory.engines.interfaces import RegistryRow
from oracleagentmemory.engines.oracle.ddl import registry_key
from oracleagentmemory.engines.oracle.names import OracleObjects, normalise
from oracleagentmemory.engines.oracle.statement import Statement

LOCK_ID_RANGE = 1_073_741_824
"""``DBMS_LOCK`` user lock ids run from 0 to 1073741823 (higher ids are Oracle's own)."""

LOCK_TIMEOUT_SECONDS = 60
"""How long a schema lifecycle step waits for another one on the same store."""

LOCK_FAILED_ERROR = -20101
"""The ``RAISE_APPLICATION_ERROR`` number of a store lock that was not granted."""


def lock_id(o: OracleObjects) -> int:
    """The store's ``DBMS_LOCK`` id: a stable hash of its owner and registry key."""
    key = f"oam-store:{o.owner}:{registry_key(o)}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") % LOCK_ID_RANGE


def lock_store(o: OracleObjects) -> Statement:
    """Take the store's exclusive user lock (kept across the commits DDL makes).

    ``DBMS_LOCK.REQUEST`` answers 0 (granted) or 4 (already held by this session); anything
    else (1 timeout, 2 deadlock, 3 parameter error, 5 illegal handle) raises
    :data:`LOCK_FAILED_ERROR`. Needs ``EXECUTE`` on ``SYS.DBMS_LOCK`` (``deploy/oracle``).
    """
    return Statement(
        "DECLARE r INTEGER; BEGIN r := SYS.DBMS_LOCK.REQUEST(id => :lock_id, "
        "lockmode => SYS.DBMS_LOCK.X_MODE, timeout => :timeout, release_on_commit => FALSE); "
        "IF r NOT IN (0, 4) THEN RAISE_APPLICATION_ERROR(" + str(LOCK_FAILED_ERROR) + ", "
        "'the memory store is locked by another schema change (DBMS_LOCK.REQUEST returned ' "
        "|| r || ')'); END IF; END;",
        {"lock_id": lock_id(o), "timeout": LOCK_TIMEOUT_SECONDS},
    )


def unlock_store(o: OracleObjects) -> Statement:
    """Release the store's user lock (0 released, 4 not held: both are fine)."""
    return Statement("DECLARE r INTEGER; BEGIN r := SYS.DBMS_LOCK.RELEASE(id => :lock_id); END;",
                     {"lock_id": lock_id(o)})


def current_schema() -> Statement:
    """The session's current schema: the store owner when the store names none."""
    return Statement("SELECT SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA') FROM dual")


def existing_tables(o: OracleObjects) -> tuple[Statement, dict[str, str]]:
    """Which managed tables (and the registry) exist, and the logical name of each table name.

    The registry maps to ``""`` in the returned lookup.
    """
    lookup = {normalise(o.names.table(t), what="table name"): t for t in MANAGED_TABLES}
    lookup[normalise(REGISTRY_TABLE, what="table name")] = ""
    binds = {f"t{i}": name for i, name in enumerate(lookup)}
    placeholders = ", ".join(f":{key}" for key in binds)
    return (Statement(f"SELECT table_name FROM all_tables WHERE owner = :owner "
                      f"AND table_name IN ({placeholders})", {"owner": o.owner, **binds}), lookup)


def read_registry(o: OracleObjects) -> Statement:
    """The store's registry row (its columns in :class:`RegistryRow` order)."""
    return Statement(
        f"SELECT schema_version, search_mode, vector_dim, default_ttl_days, max_ttl_days, "
        f"search_index_sync FROM {o.registry()} WHERE store_key = :store_key",
        {"store_key": registry_key(o)})


def embedding_probe(o: OracleObjects) -> Statement:
    """A statement whose cursor description names the embedding column's dimension
    (python-oracledb's ``FetchInfo.vector_dimensions``); it returns no rows."""
    return Statement(f"SELECT embedding FROM {o.table('record_chunks')} WHERE 1 = 0")


def outside_end_user_session() -> Statement:
    """1 when the connection is not an end-user session (row security does not bind it)."""
    return Statement("SELECT CASE WHEN ORA_END_USER_CONTEXT.username IS NULL THEN 1 ELSE 0 END "
                     "FROM dual")


def index_exists(o: OracleObjects, suffix: str) -> Statement:
    """1 when the managed index ``suffix`` exists (vector and text indexes have no
    ``IF NOT EXISTS``)."""
    return Statement("SELECT COUNT(*) FROM all_indexes WHERE owner = :owner AND index_name = :name",
                     {"owner": o.owner, "name": o.object_name(suffix)})


def write_registry(o: OracleObjects, row: RegistryRow) -> Statement:
    """Insert or replace the store's registry row (``MERGE``: Oracle has no ON CONFLICT)."""
    return Statement(
        f"MERGE INTO {o.registry()} r USING (SELECT :store_key AS store_key FROM dual) s "
        "ON (r.store_key = s.store_key) WHEN MATCHED THEN UPDATE SET "
        "r.schema_version = :schema_version, r.search_mode = :search_mode, "
        "r.vector_dim = :vector_dim, r.default_ttl_days = :default_ttl_days, "
        "r.max_ttl_days = :max_ttl_days, r.search_index_sync = :search_index_sync, "
        "r.updated_at = SYSTIMESTAMP WHEN NOT MATCHED THEN INSERT (store_key, schema_version, "
        "search_mode, vector_dim, default_ttl_days, max_ttl_days, search_index_sync) VALUES "
        "(s.store_key, :schema_version, :search_mode, :vector_dim, :default_ttl_days, "
        ":max_ttl_days, :search_index_sync)",
        {"store_key": registry_key(o), "schema_version": row.schema_version,
         "search_mode": row.search_mode, "vector_dim": row.vector_dim,
         "default_ttl_days": row.default_ttl_days, "max_ttl_days": row.max_ttl_days,
         "search_index_sync": row.search_index_sync},
    )


def drop_tables(o: OracleObjects) -> list[Statement]:
    """Drop every managed table (their indexes, Oracle Text and vector indexes go with them).

    ``PURGE`` skips the recycle bin: a dropped store's rows must not stay recoverable by
    ``FLASHBACK TABLE``, which would bring them back without their data grants.
    """
    return [Statement(f"DROP TABLE IF EXISTS {o.table(t)} CASCADE CONSTRAINTS PURGE")
            for t in reversed(MANAGED_TABLES)]


def delete_registry_row(o: OracleObjects) -> Statement:
    """Remove the store's registry row."""
    return Statement(f"DELETE FROM {o.registry()} WHERE store_key = :store_key",
                     {"store_key": registry_key(o)})
