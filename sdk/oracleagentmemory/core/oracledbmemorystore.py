"""``OracleDBMemoryStore``: the database-backed store on Oracle AI Database or PostgreSQL."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.apis.records import RECORD_TYPES
from oracleagentmemory.core._store_open import open_store
from oracleagentmemory.core._store_reads import StoreReads
from oracleagentmemory.core._store_relations import StoreRelations
from oracleagentmemory.core._store_search import StoreSearch
from oracleagentmemory.core._store_writes import DEFAULT_BATCH_SIZE, StoreWrites
from oracleagentmemory.core._writeplan import Chunker, WriteSettings
from oracleagentmemory.core.chunking import DEFAULT_CHUNKER
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.deepsec.context import active_security_context
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.storebase import OracleMemoryStore
from oracleagentmemory.engines.interfaces import UNSET, EngineSession
from oracleagentmemory.errors import EndUserContextError, MemoryStoreSchemaError


class OracleDBMemoryStore(StoreWrites, StoreReads, StoreSearch, StoreRelations,
                          OracleMemoryStore):
    """Database-backed persistence for threads, messages, memories and actor profiles.

    ``pool`` is a database connection (single-session mode: concurrent calls are serialised), a
    connection pool (concurrent calls) or a ``postgresql://`` URL. See the spec's "Oracle DB
    Store" page for every argument; ``schema_policy`` defaults to ``REQUIRE_EXISTING``.

    Raises:
        MemoryStoreSchemaError: the managed schema is missing, incomplete or outdated for the
            policy (a ``RuntimeError``).
        ValueError: an argument breaks its rule.
    """

    def __init__(
        self,
        embedder: IEmbedder | None,
        pool: Any,
        schema_policy: SchemaPolicy | str = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: int | None | _NotSetMarker = NOT_SET_MARKER,
        table_name_prefix: str | _NotSetMarker = NOT_SET_MARKER,
        search_strategy: SearchStrategy | str | _NotSetMarker = NOT_SET_MARKER,
        search_index_sync: SearchIndexSyncMode | str | _NotSetMarker = NOT_SET_MARKER,
        memory_retention_config: MemoryRetentionConfig | _NotSetMarker = NOT_SET_MARKER,
        memory_store_id: str | _NotSetMarker = NOT_SET_MARKER,
        schema_owner: str | _NotSetMarker = NOT_SET_MARKER,
        *,
        chunker: Chunker | None = DEFAULT_CHUNKER,
    ) -> None:
        opened = open_store(embedder, pool, schema_policy, vector_dim, table_name_prefix,
                            search_strategy, search_index_sync, memory_retention_config,
                            memory_store_id, schema_owner, chunker)
        self._embedder = embedder
        self._chunker: Chunker | None = chunker
        self._engine = opened.engine
        self._names = opened.names
        self._registry = opened.registry
        self._policy = opened.policy
        self._strategy = opened.strategy

    # --- properties -----------------------------------------------------------------------
    @property
    def vector_dim(self) -> int | None:
        """Dimension of the store's local vectors (``None`` without vector storage)."""
        return self._registry.vector_dim

    @property
    def search_strategy(self) -> SearchStrategy:
        """Search backend of this store object (requested, or detected from the schema)."""
        return self._strategy

    @property
    def memory_retention_config(self) -> MemoryRetentionConfig:
        """Retention settings stored with the schema."""
        return MemoryRetentionConfig(self._registry.default_ttl_days, self._registry.max_ttl_days)

    @property
    def schema_version(self) -> int:
        """Managed schema version of the store."""
        return self._registry.schema_version

    def _security(self) -> Any | None:
        """The end-user context every operation must (NO_CHECK) or must not (others) run in."""
        context = active_security_context()
        if self._policy is SchemaPolicy.NO_CHECK:
            if context is None:
                raise EndUserContextError(
                    "a SchemaPolicy.NO_CHECK store needs an active "
                    "OracleMemoryEndUserSecurityContext for every operation"
                )
        elif context is not None:
            raise EndUserContextError(
                f"SchemaPolicy.{self._policy.name} stores refuse to run inside an end-user "
                "security context; schema lifecycle and administrative work must run as the "
                "admin identity"
            )
        return context

    def _in_transaction_block(self) -> bool:
        """Whether an operation runs inside this store's :meth:`transaction` block (whose
        session outlives the operation)."""
        pinned = _ATOMIC.get()
        return pinned is not None and pinned[0] is self

    def _session(self) -> AbstractContextManager[EngineSession]:
        pinned = _ATOMIC.get()
        if pinned is not None and pinned[0] is self:
            # The context rules still hold for every operation, and the pinned session runs
            # as the block's end user: an operation in another context must not borrow it.
            if self._security() is not pinned[2]:
                raise EndUserContextError(
                    "an operation inside an atomic block must run in the end-user security "
                    "context the block started in")
            return nullcontext(pinned[1])
        return self._engine.session(self._names, security=self._security())

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A unit of work (an extension of the spec): ``with store.transaction(): ...`` runs
        every operation of this store inside the block in one database transaction.

        The block commits when it ends and rolls back when it raises: a batch of adds, updates
        and deletes stores all of them or none, and reads inside it see the block's own
        writes (at the database's default isolation level, read committed). Nested blocks join
        the outer transaction; the transaction belongs to the calling thread (and the tasks it
        starts) only. Every operation inside must run in the end-user security context the
        block started in.

        Raises:
            EndUserContextError: the block (or an operation inside it) breaks the store's
                end-user context rule (a ``RuntimeError``).
        """
        if (pinned := _ATOMIC.get()) is not None and pinned[0] is self:
            yield
            return
        context = self._security()
        with self._session() as session:
            token = _ATOMIC.set((self, session, context))
            try:
                yield
            finally:
                _ATOMIC.reset(token)

    def _default_user_id(self) -> str | _NotSetMarker:
        """In a NO_CHECK store, an omitted user id is the active end user's name."""
        if self._policy is SchemaPolicy.NO_CHECK:
            context = self._security()
            username = self._engine.verified_username(context)
            if username is None:
                # A token (or a driver's own context, which names nobody) names its user only
                # once the database has verified it: one round trip, the first time it is used.
                with self._session():
                    pass
                username = self._engine.verified_username(context)
            if isinstance(username, str) and username:
                return username
        return NOT_SET_MARKER

    def _settings(self) -> WriteSettings:
        return WriteSettings(
            vector_dim=self._registry.vector_dim,
            embedder=self._embedder,
            chunker=self._chunker,
            default_ttl_days=self._registry.default_ttl_days,
            max_ttl_days=self._registry.max_ttl_days,
            default_user_id=self._default_user_id(),
        )

    # --- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        """Close the pool the store opened from a URL (borrowed connections stay open)."""
        self._engine.close()

    def __enter__(self) -> OracleDBMemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_ATOMIC: contextvars.ContextVar[tuple[OracleDBMemoryStore, EngineSession, Any] | None] = (
    contextvars.ContextVar("oracleagentmemory_atomic_session", default=None))


__all__ = ["DEFAULT_BATCH_SIZE", "MemoryStoreSchemaError", "OracleDBMemoryStore", "RECORD_TYPES",
           "UNSET"]
