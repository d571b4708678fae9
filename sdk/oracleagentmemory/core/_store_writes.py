"""The write methods of the database store: add, update, delete, purge."""

from __future__ import annotations

import builtins
import warnings
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.memorystore import PendingRecordBatch
from oracleagentmemory.apis.records import PROFILE_TYPES
from oracleagentmemory.core._relations import plan_add_relations
from oracleagentmemory.core._updateplan import plan_update
from oracleagentmemory.core._validation import check_bool, check_limit, check_required_id
from oracleagentmemory.core._writeplan import (
    WriteSettings,
    check_metadata,
    check_record_type,
    plan_add,
)
from oracleagentmemory.core.retention import expiry
from oracleagentmemory.engines.interfaces import (
    UNSET,
    ChunkRow,
    EngineSession,
    OrUnset,
    RelationRow,
    RowPlan,
    UpdatePlan,
)
from oracleagentmemory.engines.layout import TABLE_OF_TYPE
from oracleagentmemory.errors import (
    DuplicateRecordError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from oracleagentmemory.observability._operation import MEMORY_STORE, observed

DEFAULT_BATCH_SIZE = 256


class StoreWrites:
    """Record writes; the store supplies :meth:`_session`, :meth:`_settings` and
    :meth:`_default_user_id`."""

    if TYPE_CHECKING:
        def _session(self) -> AbstractContextManager[EngineSession]:
            raise NotImplementedError

        def _relate(self, session: EngineSession, rows: builtins.list[RelationRow]) -> None:
            raise NotImplementedError

        def _settings(self) -> WriteSettings:
            raise NotImplementedError

        def _default_user_id(self) -> str | _NotSetMarker:
            raise NotImplementedError

    @observed(MEMORY_STORE)
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

    @observed(MEMORY_STORE)
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

    @observed(MEMORY_STORE)
    def add_user(self, user_id: Any = NOT_SET_MARKER, information: Any = NOT_SET_MARKER,
                 metadata: Any = NOT_SET_MARKER) -> str:
        """Add a user profile; the record id is the user id."""
        return self._add_profile("user_profile", "user_id", user_id, information, metadata)

    @observed(MEMORY_STORE)
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

    @observed(MEMORY_STORE)
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
            if pending.ttl_days_after_stored_event_ts is not None:
                stored = session.select_event_ts(record_type, record_id)
                if stored is None:
                    raise InvalidArgumentError(
                        "ttl_anchor=TimeToLiveAnchor.TIMESTAMP needs an event timestamp; the "
                        "record has none, so pass timestamp in the same call"
                    )
                plan.expiry = expiry(pending.ttl_days_after_stored_event_ts, stored)
            if pending.clear_existing_vectors or pending.existing_row_vectors is not None:
                existing = session.count_chunks(record_type, record_id)
                vectors = pending.existing_row_vectors
                if vectors is None:
                    plan.chunk_vectors = [None] * existing
                elif existing == 0 and len(vectors) == 1:
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

    def _add_linked(self, content: str, record_type: str, add: dict[str, Any],
                    link: dict[str, Any]) -> str:
        """Add one memory and a relation from it, in ONE transaction (the agent-memory client's
        ``add_memory(..., memory_id_to_link=...)``): a refused relation leaves no memory.
        ``add`` holds ``add`` arguments, ``link`` the relation's, without its source."""
        plans = plan_add(self._settings(), [content], record_type, **add)
        rows = plan_add_relations(plans[0].record_id, record_type, **link)
        try:
            with self._session() as session:
                session.insert_rows(plans, DEFAULT_BATCH_SIZE)
                self._relate(session, rows)
        except DuplicateRecordError as exc:
            raise DuplicateRecordError(exc.message, argument=exc.argument,
                                       record_id=exc.record_id) from None
        return plans[0].record_id

    # --- threads, for the agent-memory client ----------------------------------------------
    def _create_thread(self, thread_id: str, user_id: str | None, agent_id: str | None,
                       metadata: dict[str, Any] | None,
                       runtime_config: dict[str, Any] | None) -> str:
        """Add a thread record with its durable runtime configuration, in one transaction."""
        plans = plan_add(self._settings(), [None], "thread", record_ids=[thread_id],
                         user_ids=[user_id], agent_ids=[agent_id], metadata=[metadata])
        try:
            with self._session() as session:
                session.insert_rows(plans, DEFAULT_BATCH_SIZE)
                if runtime_config is not None:
                    session.update_record(UpdatePlan("thread", plans[0].record_id,
                                                     runtime_config=runtime_config))
        except DuplicateRecordError as exc:
            raise DuplicateRecordError(exc.message, argument="thread_id",
                                       record_id=exc.record_id) from None
        return plans[0].record_id

    def _update_thread(self, thread_id: str, *,
                       metadata: OrUnset[dict[str, Any] | None] = UNSET,
                       runtime_config: OrUnset[dict[str, Any] | None] = UNSET,
                       runtime_state: OrUnset[dict[str, Any] | None] = UNSET) -> int:
        """Replace a thread's metadata, runtime configuration and/or state; 1 if it exists."""
        check_required_id(thread_id, "thread_id")
        plan = UpdatePlan("thread", thread_id, runtime_config=runtime_config,
                          runtime_state=runtime_state)
        if metadata is not UNSET:
            plan.metadata = check_metadata(metadata, "metadata")
        with self._session() as session:
            return session.update_record(plan)

    @observed(MEMORY_STORE)
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

    @observed(MEMORY_STORE)
    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread with its messages, memories, summaries and retrieval rows."""
        check_required_id(thread_id, "thread_id")
        with self._session() as session:
            return session.delete_thread(thread_id)

    @observed(MEMORY_STORE)
    def purge_expired(self) -> int:
        """Physically delete expired messages and memories; returns how many were removed."""
        with self._session() as session:
            return session.purge_expired()


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
        table = TABLE_OF_TYPE[record_type]
        if record_type in PROFILE_TYPES:  # one table, but the id is unique per profile type
            table += ":" + record_type
        ids = [plan.record_id for plan in plans]
        taken = seen.setdefault(table, set())
        if not taken.isdisjoint(ids):
            duplicate = next(record_id for record_id in ids if record_id in taken)
            raise InvalidArgumentError(
                f"record_ids: duplicate record id {duplicate!r} across batches")
        taken.update(ids)
