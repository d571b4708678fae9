"""Open, validate, create, upgrade or recreate a store's managed schema per its SchemaPolicy."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE, StoreNames
from oracleagentmemory.engines.interfaces import (
    Engine,
    EngineSession,
    RegistryRow,
    SchemaOptions,
    SchemaState,
)
from oracleagentmemory.errors import (
    EndUserContextError,
    InvalidArgumentError,
    MemoryStoreSchemaError,
)

_log = logging.getLogger(__name__)





@dataclass
class SchemaRequest:
    """What the caller asked for; ``None`` fields were omitted (keep or detect)."""

    vector_dim: int | None
    vector_dim_given: bool
    search_mode: str | None
    search_index_sync: str
    retention: tuple[int | None, int | None] | None
    latest_version: int
    max_indexed_vector_dim: int
    """The engine's vector index limit (:class:`EngineCapabilities`)."""
    in_database_model: str | None = None
    """``OracleDBEmbedder.model`` of the store's embedder (``None``: another embedder)."""
    in_database_vectorizer: dict[str, Any] | None = None
    """That embedder's vectorizer preference, parsed (``None``: another embedder)."""


def open_schema(engine: Engine, names: StoreNames, policy: SchemaPolicy, security: Any,
                request: SchemaRequest) -> RegistryRow:
    """Apply ``policy`` and return the store's effective managed metadata.

    ``security`` is the active end-user context (NO_CHECK runtime stores only).
    """
    with engine.session(names, security=security) as session:
        if policy is SchemaPolicy.NO_CHECK:
            return _unchecked(session, request)
        if policy is not SchemaPolicy.REQUIRE_EXISTING:
            session.lock_store()
        state = session.read_schema_state()
        if policy is SchemaPolicy.RECREATE:
            _log.warning("recreating memory store %r: dropping its managed objects",
                         names.store_key or "<default>")
            session.drop_store()
            return _create(session, request)
        empty = not state.existing_tables and state.registry is None
        if policy is SchemaPolicy.REQUIRE_EXISTING or (
            policy is SchemaPolicy.CREATE_IF_EMPTY and not empty
        ):
            problems = _problems(names, state, request)
            if problems:
                raise MemoryStoreSchemaError(
                    f"memory store {names.store_key or '<default>'!r} cannot be opened with "
                    f"{policy.value}: " + "; ".join(problems)
                )
            assert state.registry is not None
            return state.registry
        if empty:
            return _create(session, request)
        return _repair(session, request, state)


def _unchecked(session: EngineSession, request: SchemaRequest) -> RegistryRow:
    """NO_CHECK: no validation, no DDL; read the registry when it is readable.

    Refuses a connection that row security does not bind: through it, the end-user context
    would hide nothing.
    """
    if session.bypasses_row_security():
        raise EndUserContextError(
            "SchemaPolicy.NO_CHECK needs a connection that row security binds: this one is a "
            "superuser, bypasses row-level security, or owns the store's tables (or is a member "
            "of their owner); connect as the application's runtime login"
        )
    state = session.read_schema_state()
    if state.registry is not None:
        return state.registry
    return RegistryRow(
        schema_version=request.latest_version,
        search_mode=request.search_mode or "vector",
        vector_dim=request.vector_dim,
        default_ttl_days=request.retention[0] if request.retention else None,
        max_ttl_days=request.retention[1] if request.retention else None,
        search_index_sync=request.search_index_sync,
    )


def _options(request: SchemaRequest, registry: RegistryRow | None) -> SchemaOptions:
    default, maximum = (
        request.retention
        if request.retention is not None
        else (registry.default_ttl_days, registry.max_ttl_days) if registry else (None, None)
    )
    vector_dim = request.vector_dim if request.vector_dim_given or registry is None else (
        registry.vector_dim if registry.vector_dim is not None else request.vector_dim
    )
    limit = request.max_indexed_vector_dim
    if vector_dim is not None and vector_dim > limit:
        raise InvalidArgumentError(
            f"vector_dim={vector_dim} exceeds {limit}, the largest dimension "
            "the vector index supports"
        )
    search_mode = request.search_mode or (registry.search_mode if registry else "vector")
    if registry is not None and registry.search_mode == "hybrid" and search_mode == "keyword":
        search_mode = "hybrid"  # a keyword client uses the hybrid schema's text branch as is
    return SchemaOptions(
        vector_dim=vector_dim,
        search_mode=search_mode,
        search_index_sync=request.search_index_sync,
        default_ttl_days=default,
        max_ttl_days=maximum,
        in_database_model=request.in_database_model,
        in_database_vectorizer=request.in_database_vectorizer,
    )


def _registry_row(options: SchemaOptions, version: int) -> RegistryRow:
    return RegistryRow(
        schema_version=version,
        search_mode=options.search_mode,
        vector_dim=options.vector_dim,
        default_ttl_days=options.default_ttl_days,
        max_ttl_days=options.max_ttl_days,
        search_index_sync=options.search_index_sync,
    )


def _create(session: EngineSession, request: SchemaRequest) -> RegistryRow:
    options = _options(request, None)
    for version in range(1, request.latest_version + 1):
        _log.info("memory store %r: applying schema version %d", session.names.store_key, version)
        session.apply_schema_version(version, options)
    row = _registry_row(options, request.latest_version)
    session.write_registry(row)
    return row


def _repair(session: EngineSession, request: SchemaRequest, state: SchemaState) -> RegistryRow:
    """CREATE_IF_NECESSARY on a non-empty store: create what is missing, upgrade, refresh."""
    registry = state.registry
    if registry is not None and registry.schema_version > request.latest_version:
        raise MemoryStoreSchemaError(
            f"schema version {registry.schema_version} of memory store "
            f"{session.names.store_key!r} is newer than this SDK supports "
            f"({request.latest_version}); upgrade the SDK"
        )
    options = _options(request, registry)
    stored_dim = state.embedding_dim
    if (
        stored_dim is not None
        and options.vector_dim is not None
        and stored_dim != options.vector_dim
    ):
        raise MemoryStoreSchemaError(
            f"vector_dim={options.vector_dim} does not match the stored embedding dimension "
            f"{stored_dim}; vectors cannot be converted, use SchemaPolicy.RECREATE for a new store"
        )
    if stored_dim is not None and options.vector_dim is None:
        options.vector_dim = stored_dim
    if (options.vector_dim is not None and stored_dim is None
            and "record_chunks" in state.existing_tables):
        session.add_embedding_storage(options.vector_dim)
    # Every version step is idempotent, so re-applying them all creates what is missing and
    # upgrades what is older, whatever state the store is in.
    for version in range(1, request.latest_version + 1):
        _log.info("memory store %r: ensuring schema version %d", session.names.store_key, version)
        session.apply_schema_version(version, options)
    row = _registry_row(options, request.latest_version)
    session.write_registry(row)
    return row


def _problems(names: StoreNames, state: SchemaState, request: SchemaRequest) -> list[str]:
    problems: list[str] = []
    missing = [names.table(t) for t in MANAGED_TABLES if t not in state.existing_tables]
    if missing:
        problems.append("missing tables: " + ", ".join(missing))
    registry = state.registry
    if registry is None:
        problems.append(
            f"no registry row for this store in {REGISTRY_TABLE}"
            if state.registry_table_exists
            else f"missing registry table {REGISTRY_TABLE}"
        )
    else:
        if registry.schema_version < request.latest_version:
            problems.append(
                f"schema version {registry.schema_version} is older than the current version "
                f"{request.latest_version}; open it once with SchemaPolicy.CREATE_IF_NECESSARY "
                "as the schema owner to upgrade"
            )
        elif registry.schema_version > request.latest_version:
            problems.append(
                f"schema version {registry.schema_version} is newer than this SDK supports "
                f"({request.latest_version})"
            )
        if request.vector_dim_given and request.vector_dim != registry.vector_dim:
            problems.append(
                f"vector_dim={request.vector_dim} does not match the stored vector dimension "
                f"{registry.vector_dim}"
            )
        if request.retention is not None and request.retention != (
            registry.default_ttl_days, registry.max_ttl_days
        ):
            problems.append(
                "memory_retention_config differs from the stored retention "
                f"(default_ttl_days={registry.default_ttl_days}, "
                f"max_ttl_days={registry.max_ttl_days}); use SchemaPolicy.CREATE_IF_NECESSARY "
                "to update it"
            )
    return problems
