"""``OracleDBMemoryStore``: the database-backed store on Oracle AI Database or PostgreSQL."""

from __future__ import annotations

import builtins
import warnings
from contextlib import AbstractContextManager
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT, PendingRecordBatch
from oracleagentmemory.apis.records import PROFILE_TYPES, RECORD_TYPES, MessageRecord, Record
from oracleagentmemory.core._records import record_from_row
from oracleagentmemory.core._store_open import open_store
from oracleagentmemory.core._store_relations import StoreRelations
from oracleagentmemory.core._store_search import StoreSearch
from oracleagentmemory.core._updateplan import plan_update
from oracleagentmemory.core._validation import (
    check_bool,
    check_limit,
    check_required_id,
    check_seq_no,
)
from oracleagentmemory.core._writeplan import Chunker, WriteSettings, check_record_type, plan_add
from oracleagentmemory.core.chunking import DEFAULT_CHUNKER
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.deepsec.context import active_security_context
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.storebase import OracleMemoryStore
from oracleagentmemory.engines.interfaces import (
    UNSET,
    EndUserContext,
    EngineSession,
    MessageQuery,
    RecordQuery,
    RowPlan,
)
from oracleagentmemory.errors import (
    DuplicateRecordError,
    EndUserContextError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MemoryStoreSchemaError,
)
from oracleagentmemory.filtertree import parse_metadata_filter

DEFAULT_BATCH_SIZE = 256


class OracleDBMemoryStore(StoreSearch, StoreRelations, OracleMemoryStore):
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

    def _session(self) -> AbstractContextManager[EngineSession]:
        return self._engine.session(self._names, security=self._security())

    def _default_user_id(self) -> str | _NotSetMarker:
        """In a NO_CHECK store, an omitted user id is the active end user's name."""
        if self._policy is SchemaPolicy.NO_CHECK:
            context = self._security()
            if isinstance(context, EndUserContext):
                username = context.verified_username()
                if username is None:
                    # An identity provider's token names its user only once the database has
                    # verified it: one round trip, the first time this context is used.
                    with self._session():
                        pass
                    username = context.verified_username()
            else:  # a driver's own context type (oracledb) names its user
                username = getattr(context, "username", None)
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

    # --- writes ---------------------------------------------------------------------------
    def add(self, contents: Any = NOT_SET_MARKER, record_type: Any = NOT_SET_MARKER,
            index_texts: Any = NOT_SET_MARKER, embeddings: Any = NOT_SET_MARKER,
            record_ids: Any = NOT_SET_MARKER, thread_ids: Any = NOT_SET_MARKER,
            user_ids: Any = NOT_SET_MARKER, agent_ids: Any = NOT_SET_MARKER,
            roles: Any = NOT_SET_MARKER, timestamps: Any = NOT_SET_MARKER,
            metadata: Any = NOT_SET_MARKER, ttl_days: Any = NOT_SET_MARKER,
            ttl_anchor: Any = NOT_SET_MARKER, statuses: Any = NOT_SET_MARKER,
            **store_kwargs: Any) -> list[str]:
        """Add records of one type in one transaction; returns their ids in input order."""
        batch_size = _batch_size(store_kwargs)
        if contents is NOT_SET_MARKER or record_type is NOT_SET_MARKER:
            raise InvalidArgumentError("contents and record_type are required")
        plans = plan_add(
            self._settings(), contents, record_type, record_ids=record_ids,
            index_texts=index_texts, embeddings=embeddings, thread_ids=thread_ids,
            user_ids=user_ids, agent_ids=agent_ids, roles=roles, timestamps=timestamps,
            metadata=metadata, ttl_days=ttl_days, ttl_anchor=ttl_anchor, statuses=statuses)
        if plans:
            self._insert(plans, batch_size)
        return [p.record_id for p in plans]

    def add_batches(self, batches: builtins.list[PendingRecordBatch],
                    **store_kwargs: Any) -> builtins.list[str]:
        """Add caller-prepared batches in one transaction; returns ids in batch and row order."""
        batch_size = _batch_size(store_kwargs)
        if not isinstance(batches, (builtins.list, tuple)):
            raise InvalidArgumentTypeError("batches must be a list of PendingRecordBatch")
        settings = self._settings()
        planned: builtins.list[builtins.list[RowPlan]] = []
        for n, batch in enumerate(batches):
            if not isinstance(batch, PendingRecordBatch):
                raise InvalidArgumentTypeError(f"batches[{n}] must be a PendingRecordBatch")
            if batch.contents is NOT_SET_MARKER or batch.record_type is NOT_SET_MARKER:
                raise InvalidArgumentError(f"batches[{n}]: contents and record_type are required")
            planned.append(plan_add(
                settings, batch.contents, batch.record_type, record_ids=batch.record_ids,
                index_texts=batch.index_texts, embeddings=batch.embeddings,
                thread_ids=batch.thread_ids, user_ids=batch.user_ids, agent_ids=batch.agent_ids,
                roles=batch.roles, timestamps=batch.timestamps, metadata=batch.metadata,
                ttl_days=batch.ttl_days, ttl_anchor=batch.ttl_anchor, statuses=batch.statuses))
        _reject_duplicates(planned)
        plans = [plan for batch_plans in planned for plan in batch_plans]
        if plans:
            self._insert(plans, batch_size)
        return [p.record_id for p in plans]

    def _insert(self, plans: builtins.list[RowPlan], batch_size: int) -> None:
        try:
            with self._session() as session:
                session.insert_rows(plans, batch_size)
        except DuplicateRecordError as exc:
            raise DuplicateRecordError(exc.message, argument=exc.argument,
                                       record_id=exc.record_id) from None

    def add_user(self, user_id: Any = NOT_SET_MARKER, information: Any = NOT_SET_MARKER,
                 metadata: Any = NOT_SET_MARKER) -> str:
        """Add a user profile; the record id is the user id."""
        return self._add_profile("user_profile", "user_id", user_id, information, metadata)

    def add_agent(self, agent_id: str, information: str, metadata: Any = NOT_SET_MARKER) -> str:
        """Add an agent profile; the record id is the agent id."""
        return self._add_profile("agent_profile", "agent_id", agent_id, information, metadata)

    def _add_profile(self, record_type: str, argument: str, actor_id: Any, information: Any,
                     metadata: Any) -> str:
        if actor_id is NOT_SET_MARKER and record_type == "user_profile":
            actor_id = self._default_user_id()
        if actor_id is NOT_SET_MARKER:
            raise InvalidArgumentError(f"{argument} is required")
        check_required_id(actor_id, argument)
        if information is NOT_SET_MARKER or not isinstance(information, str):
            raise InvalidArgumentTypeError("information must be a str")
        ids = self.add([information], record_type, record_ids=[actor_id],
                       metadata=None if metadata is NOT_SET_MARKER else metadata)
        return ids[0]

    def update(self, record_type: str, record_id: str, content: Any = NOT_SET_MARKER,
               index_text: Any = NOT_SET_MARKER, embedding: Any = NOT_SET_MARKER,
               metadata: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
               ttl_days: Any = NOT_SET_MARKER, ttl_anchor: Any = NOT_SET_MARKER,
               status: Any = NOT_SET_MARKER, text: Any = NOT_SET_MARKER) -> int:
        """Update one record's content, retrieval rows, metadata, timestamp, expiry or status.

        Returns 1 when the record exists (expired or not), else 0.
        """
        record_type = check_record_type(record_type)
        check_required_id(record_id, "record_id")
        if text is not NOT_SET_MARKER:
            warnings.warn("update(text=...) is deprecated since 26.8.0 and will be removed in "
                          "27.1; use content=...", DeprecationWarning, stacklevel=2)
            if content is not NOT_SET_MARKER:
                raise InvalidArgumentError("pass either content or the deprecated text, not both")
            content = text
        pending = plan_update(
            self._settings(), record_type, record_id, content=content, index_text=index_text,
            embedding=embedding, metadata=metadata, timestamp=timestamp, ttl_days=ttl_days,
            ttl_anchor=ttl_anchor, status=status,
        )
        plan = pending.plan
        with self._session() as session:
            if not session.record_exists(record_type, record_id):
                return 0
            if pending.needs_stored_event_ts:
                stored = session.select_event_ts(record_type, record_id)
                if stored is None:
                    raise InvalidArgumentError(
                        "ttl_anchor=TimeToLiveAnchor.TIMESTAMP needs an event timestamp; the "
                        "record has none, so pass timestamp in the same call"
                    )
            if pending.clear_existing_vectors or pending.existing_row_vectors is not None:
                existing = session.count_chunks(record_type, record_id)
                vectors = pending.existing_row_vectors
                if vectors is None:
                    plan.chunk_vectors = [None] * existing
                elif existing == 0 and len(vectors) == 1:
                    from oracleagentmemory.engines.interfaces import ChunkRow

                    plan.chunks = [ChunkRow(None, vectors[0])]
                elif len(vectors) != existing:
                    raise InvalidArgumentError(
                        f"embedding: {len(vectors)} vectors were given but the record has "
                        f"{existing} retrieval rows; an embedding-only update needs one vector "
                        "per existing row"
                    )
                else:
                    plan.chunk_vectors = vectors
            return session.update_record(plan)

    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete one record with its retrieval rows; ``cascade`` expands actor profiles."""
        record_type = check_record_type(record_type)
        check_required_id(record_id, "record_id")
        check_bool(cascade, "cascade")
        with self._session() as session:
            deleted = session.delete_record(record_type, record_id)
            if cascade and record_type in PROFILE_TYPES:
                column = "user_id" if record_type == "user_profile" else "agent_id"
                session.delete_actor_scope(column, record_id)
            return deleted

    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread with its messages, memories, summaries and retrieval rows."""
        check_required_id(thread_id, "thread_id")
        with self._session() as session:
            return session.delete_thread(thread_id)

    def purge_expired(self) -> int:
        """Physically delete expired messages and memories; returns how many were removed."""
        with self._session() as session:
            return session.purge_expired()

    # --- reads ----------------------------------------------------------------------------
    def get(self, record_type: str, record_id: str,
            include_bytes: Any = NOT_SET_MARKER) -> Record | None:
        """Return the visible record ``record_id`` of ``record_type``, or ``None``."""
        record_type = check_record_type(record_type)
        check_required_id(record_id, "record_id")
        if include_bytes is not NOT_SET_MARKER:
            check_bool(include_bytes, "include_bytes")
        with self._session() as session:
            rows = session.select_records(
                RecordQuery(record_type=record_type, record_id=record_id, limit=1))
        return record_from_row(rows[0]) if rows else None

    def list(self, record_type: str, limit: Any = NOT_SET_MARKER, thread_id: Any = NOT_SET_MARKER,
             user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
             metadata_filter: Any = NOT_SET_MARKER, include_bytes: Any = NOT_SET_MARKER,
             record_id: Any = NOT_SET_MARKER) -> builtins.list[Record]:
        """List the most recent visible records of one type, oldest first."""
        record_type = check_record_type(record_type)
        effective_limit = MAX_LIST_LIMIT if limit is NOT_SET_MARKER else check_limit(limit, "limit")
        if record_type == "thread" and thread_id is not NOT_SET_MARKER:
            raise InvalidArgumentError(
                "thread_id must not be set when listing threads; use record_id")
        query = RecordQuery(record_type=record_type, limit=effective_limit)
        if record_type not in PROFILE_TYPES:
            for argument, value in (("thread_id", thread_id), ("user_id", user_id),
                                    ("agent_id", agent_id)):
                if value is not NOT_SET_MARKER:
                    if value is not None:
                        check_required_id(value, argument)
                    setattr(query, argument, value)
        if record_id is not NOT_SET_MARKER:
            query.record_id = check_required_id(record_id, "record_id")
        if metadata_filter is None:
            query.metadata_filter = None
        elif metadata_filter is not NOT_SET_MARKER:
            query.metadata_filter = parse_metadata_filter(metadata_filter)
        if include_bytes is not NOT_SET_MARKER:
            check_bool(include_bytes, "include_bytes")
        with self._session() as session:
            rows = session.select_records(query)
        return [record_from_row(r) for r in rows]

    def list_thread_messages(self, thread_id: str, last_n: int | None = None,
                             range_start_seq_no: int | None = None,
                             range_end_seq_no: int | None = None,
                             include_bytes: Any = NOT_SET_MARKER) -> builtins.list[MessageRecord]:
        """A thread's visible messages in sequence order (``last_n`` within the range)."""
        query = MessageQuery(
            thread_id=check_required_id(thread_id, "thread_id"),
            last_n=check_limit(last_n, "last_n"),
            range_start_seq_no=check_seq_no(range_start_seq_no, "range_start_seq_no"),
            range_end_seq_no=check_seq_no(range_end_seq_no, "range_end_seq_no"),
        )
        if include_bytes is not NOT_SET_MARKER:
            check_bool(include_bytes, "include_bytes")
        with self._session() as session:
            rows = session.select_thread_messages(query)
        records = [record_from_row(r) for r in rows]
        return [r for r in records if isinstance(r, MessageRecord)]

    # --- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        """Close the pool the store opened from a URL (borrowed connections stay open)."""
        self._engine.close()

    def __enter__(self) -> OracleDBMemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _batch_size(store_kwargs: dict[str, Any]) -> int:
    unknown = set(store_kwargs) - {"batch_size"}
    if unknown:
        raise InvalidArgumentTypeError(f"unexpected store options: {', '.join(sorted(unknown))}")
    size = store_kwargs.get("batch_size", DEFAULT_BATCH_SIZE)
    checked = check_limit(size, "batch_size")
    return DEFAULT_BATCH_SIZE if checked is None else checked


def _reject_duplicates(batches: builtins.list[builtins.list[RowPlan]]) -> None:
    """Refuse an id that two batches give to records of one table (ids within a batch are unique,
    and every record of a batch has the batch's type)."""
    seen: dict[str, set[str]] = {}
    for plans in batches if len(batches) > 1 else ():
        if not plans:
            continue
        record_type = plans[0].record_type
        table = "profile:" + record_type if record_type in PROFILE_TYPES else (
            "memory" if record_type in {"memory", "fact", "guideline", "preference"}
            else record_type)
        ids = [plan.record_id for plan in plans]
        taken = seen.setdefault(table, set())
        if not taken.isdisjoint(ids):
            duplicate = next(record_id for record_id in ids if record_id in taken)
            raise InvalidArgumentError(
                f"record_ids: duplicate record id {duplicate!r} across batches")
        taken.update(ids)


__all__ = ["MemoryStoreSchemaError", "OracleDBMemoryStore", "RECORD_TYPES", "UNSET"]
