"""Opening a database store: argument checks, the engine and the managed schema's metadata."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.core._schema import SchemaRequest, open_schema
from oracleagentmemory.core._writeplan import Chunker
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy, parse_schema_policy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy, parse_enum
from oracleagentmemory.core.deepsec.context import active_security_context
from oracleagentmemory.core.embedders.oracle_db import OracleDBEmbedder
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.engines import make_engine
from oracleagentmemory.engines.identifiers import (
    StoreNames,
    store_names,
    validate_memory_store_id,
    validate_schema_owner,
    validate_table_name_prefix,
)
from oracleagentmemory.engines.interfaces import Engine, RegistryRow
from oracleagentmemory.errors import (
    EndUserContextError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MemoryStoreSchemaError,
)


@dataclass(frozen=True)
class OpenedStore:
    """What an open store works with: its engine, names, schema metadata, policy, strategy."""

    engine: Engine
    names: StoreNames
    registry: RegistryRow
    policy: SchemaPolicy
    strategy: SearchStrategy


def open_store(
    embedder: IEmbedder | None,
    pool: Any,
    schema_policy: SchemaPolicy | str,
    vector_dim: int | None | _NotSetMarker,
    table_name_prefix: str | _NotSetMarker,
    search_strategy: SearchStrategy | str | _NotSetMarker,
    search_index_sync: SearchIndexSyncMode | str | _NotSetMarker,
    memory_retention_config: MemoryRetentionConfig | _NotSetMarker,
    memory_store_id: str | _NotSetMarker,
    schema_owner: str | _NotSetMarker,
    chunker: Chunker | None,
) -> OpenedStore:
    """Check the store's arguments, make its engine and open its schema per the policy.

    Checks run in the order the store always ran them; a failure after the engine is made
    closes the engine before the error propagates.
    """
    if embedder is not None and not isinstance(embedder, IEmbedder):
        raise InvalidArgumentTypeError(
            f"embedder must be an IEmbedder or None, got {type(embedder).__name__}")
    policy = parse_schema_policy(schema_policy)
    store_id = None if memory_store_id is NOT_SET_MARKER else validate_memory_store_id(
        memory_store_id)
    prefix = None
    if table_name_prefix is not NOT_SET_MARKER:
        warnings.warn(
            "table_name_prefix is deprecated since 26.6.0 and will be removed in 27.1; "
            "use memory_store_id",
            DeprecationWarning,
            stacklevel=3,  # the caller of OracleDBMemoryStore(...)
        )
        if store_id is not None:
            raise InvalidArgumentError(
                "pass either memory_store_id or table_name_prefix, not both")
        prefix = validate_table_name_prefix(table_name_prefix)
    owner = None if schema_owner is NOT_SET_MARKER else validate_schema_owner(schema_owner)
    if owner is not None and policy not in (
        SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.NO_CHECK
    ):
        raise InvalidArgumentError(
            "schema_owner gives runtime access to an existing store only: use "
            "SchemaPolicy.REQUIRE_EXISTING or SchemaPolicy.NO_CHECK, and create, upgrade or "
            f"recreate the store as its owner without schema_owner (got {policy.value})"
        )
    strategy = None if search_strategy is NOT_SET_MARKER else parse_enum(
        SearchStrategy, search_strategy, "search_strategy")
    sync = SearchIndexSyncMode.ON_COMMIT if search_index_sync is NOT_SET_MARKER else parse_enum(
        SearchIndexSyncMode, search_index_sync, "search_index_sync")
    if sync is SearchIndexSyncMode.AUTO and strategy is not SearchStrategy.HYBRID:
        raise InvalidArgumentError(
            "search_index_sync=SearchIndexSyncMode.AUTO is supported only with "
            "SearchStrategy.HYBRID")
    dim_given = isinstance(vector_dim, int) and not isinstance(vector_dim, bool)
    if dim_given:
        assert isinstance(vector_dim, int)
        if vector_dim < 1:
            raise InvalidArgumentError(
                f"vector_dim must be a positive integer, got {vector_dim}")
        if embedder is not None and embedder.embedding_dimension != vector_dim:
            raise InvalidArgumentError(
                f"vector_dim={vector_dim} does not match the embedder's dimension "
                f"{embedder.embedding_dimension}"
            )
        requested_dim: int | None = vector_dim
    elif vector_dim is None or vector_dim is NOT_SET_MARKER:
        wants_vectors = strategy in (None, SearchStrategy.VECTOR, SearchStrategy.HYBRID)
        requested_dim = embedder.embedding_dimension if embedder and wants_vectors else None
    else:
        raise InvalidArgumentTypeError(
            f"vector_dim must be an int or None, got {type(vector_dim).__name__}")
    if memory_retention_config is NOT_SET_MARKER:
        retention = None
    elif isinstance(memory_retention_config, MemoryRetentionConfig):
        retention = memory_retention_config.resolved()
    else:
        raise InvalidArgumentTypeError(
            "memory_retention_config must be a MemoryRetentionConfig")

    context = active_security_context()
    if policy is SchemaPolicy.NO_CHECK and context is None:
        raise EndUserContextError(
            "SchemaPolicy.NO_CHECK opens a Deep Data Security runtime store: open it inside "
            "an active OracleMemoryEndUserSecurityContext"
        )
    if policy is not SchemaPolicy.NO_CHECK and context is not None:
        raise EndUserContextError(
            f"SchemaPolicy.{policy.name} cannot run inside an end-user security context; "
            "create, validate or upgrade the store as the admin identity"
        )
    if chunker is not None and not callable(chunker):
        raise InvalidArgumentTypeError("chunker must be a TextChunker, a callable or None")
    engine = make_engine(pool)
    capabilities = engine.capabilities
    try:
        names = store_names(
            memory_store_id=store_id, table_name_prefix=prefix, schema_owner=owner,
            fold=capabilities.identifier_fold,
            max_identifier_length=capabilities.max_identifier_length)
        registry = open_schema(
            engine,
            names,
            policy,
            context,
            SchemaRequest(
                vector_dim=requested_dim,
                vector_dim_given=dim_given,
                search_mode=strategy.value if strategy else None,
                search_index_sync=sync.value,
                retention=retention,
                latest_version=capabilities.latest_schema_version,
                max_indexed_vector_dim=capabilities.max_indexed_vector_dim,
                in_database_model=embedder.model
                if isinstance(embedder, OracleDBEmbedder) else None,
                in_database_vectorizer=json.loads(embedder.get_vectorizer_config_json())
                if isinstance(embedder, OracleDBEmbedder) else None,
            ),
        )
    except BaseException:
        engine.close()
        raise
    if embedder is not None and registry.vector_dim is not None and (
        embedder.embedding_dimension != registry.vector_dim
    ):
        engine.close()
        raise MemoryStoreSchemaError(
            f"the embedder produces {embedder.embedding_dimension}-dimensional vectors but "
            f"the store holds {registry.vector_dim}-dimensional vectors"
        )
    if (
        strategy in (SearchStrategy.VECTOR, SearchStrategy.HYBRID)
        and registry.vector_dim is None
    ):
        engine.close()
        raise MemoryStoreSchemaError(
            f"SearchStrategy.{strategy.name} needs local vector storage, which this store "
            "does not have; pass vector_dim or an embedder when creating it (or use "
            "SchemaPolicy.CREATE_IF_NECESSARY with vector_dim to add it)"
        )
    return OpenedStore(engine=engine, names=names, registry=registry, policy=policy,
                       strategy=strategy or SearchStrategy(registry.search_mode))
