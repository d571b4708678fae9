"""The store contract (:class:`IMemoryStore`) and the caller-prepared batch type."""

from __future__ import annotations

import builtins
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.asynctwin import AsyncTwin
from oracleagentmemory.apis.inputs import (
    Embedding,
    EmbeddingVectorInput,
    IndexText,
    MetadataFilter,
    MetadataValue,
    Omittable,
    OneOrEach,
    PerBatchEmbeddingsInput,
    PerBatchIndexTextsInput,
    PerBatchRecordContentsInput,
    PerRecordEmbeddingsInput,
    PerRecordIndexTextInput,
    RecordContent,
    RecordContentInput,
    RecordContents,
    Vector,
)
from oracleagentmemory.apis.keyset import OlderThan
from oracleagentmemory.apis.records import MessageRecord, Record, RecordStatus
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.errors import InvalidArgumentError

__all__ = [
    "MAX_LIST_LIMIT",
    "EmbeddingVectorInput",
    "IMemoryStore",
    "PendingRecordBatch",
    "PerBatchEmbeddingsInput",
    "PerBatchIndexTextsInput",
    "PerBatchRecordContentsInput",
    "PerRecordEmbeddingsInput",
    "PerRecordIndexTextInput",
    "RecordContentInput",
]

MAX_LIST_LIMIT = 10000
"""Default cap of ``list`` and ``list_relations`` when ``limit`` is omitted."""


@dataclass
class PendingRecordBatch:
    """One logical batch of records prepared by the caller for :meth:`IMemoryStore.add_batches`.

    Fields take the same values as the arguments of :meth:`IMemoryStore.add`; fields left at
    ``NOT_SET_MARKER`` behave as omitted arguments. ``texts`` is the deprecated spelling of
    ``contents`` (it warns; giving both raises :class:`InvalidArgumentError`) and afterwards
    always equals it.
    """

    contents: Omittable[RecordContents] = NOT_SET_MARKER
    record_type: Omittable[str] = NOT_SET_MARKER
    record_ids: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER
    index_texts: Omittable[builtins.list[IndexText]] = NOT_SET_MARKER
    embeddings: Omittable[builtins.list[Embedding]] = NOT_SET_MARKER
    thread_ids: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER
    user_ids: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER
    agent_ids: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER
    roles: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER
    timestamps: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER
    metadata: Omittable[OneOrEach[MetadataValue]] = NOT_SET_MARKER
    ttl_days: Omittable[OneOrEach[int | None]] = NOT_SET_MARKER
    ttl_anchor: Omittable[OneOrEach[TimeToLiveAnchor]] = NOT_SET_MARKER
    statuses: Omittable[OneOrEach[RecordStatus]] = NOT_SET_MARKER
    texts: Omittable[RecordContents] = NOT_SET_MARKER

    def __post_init__(self) -> None:
        if self.texts is not NOT_SET_MARKER:
            if self.contents is not NOT_SET_MARKER:
                raise InvalidArgumentError(
                    "give contents or its deprecated alias texts, not both", argument="texts")
            warnings.warn("PendingRecordBatch(texts=...) is deprecated: use contents=",
                          DeprecationWarning, stacklevel=3)
            self.contents = self.texts
        self.texts = self.contents


class IMemoryStore(ABC):
    """Persists records and finds them again.

    Every method has an asynchronous twin (``add`` / ``add_async``...) with the same signature
    that runs the synchronous method in a worker thread; context variables follow the call.
    """

    # --- writes ---------------------------------------------------------------------------
    @abstractmethod
    def add(self, /, contents: Omittable[RecordContents] = NOT_SET_MARKER,
            record_type: Omittable[str] = NOT_SET_MARKER,
            index_texts: Omittable[builtins.list[IndexText]] = NOT_SET_MARKER,
            embeddings: Omittable[builtins.list[Embedding]] = NOT_SET_MARKER,
            record_ids: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER,
            thread_ids: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER,
            user_ids: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER,
            agent_ids: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER,
            roles: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER,
            timestamps: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER,
            metadata: Omittable[OneOrEach[MetadataValue]] = NOT_SET_MARKER,
            ttl_days: Omittable[OneOrEach[int | None]] = NOT_SET_MARKER,
            ttl_anchor: Omittable[OneOrEach[TimeToLiveAnchor]] = NOT_SET_MARKER,
            statuses: Omittable[OneOrEach[RecordStatus]] = NOT_SET_MARKER,
            **store_kwargs: Any) -> builtins.list[str]:
        """Add records; returns their identifiers in input order."""

    @abstractmethod
    def add_batches(self, /, batches: builtins.list[PendingRecordBatch],
                    **store_kwargs: Any) -> builtins.list[str]:
        """Add caller-prepared batches in one transaction; returns identifiers in order."""

    @abstractmethod
    def add_user(self, /, user_id: Omittable[str | None] = NOT_SET_MARKER,
                 information: Omittable[str] = NOT_SET_MARKER,
                 metadata: Omittable[MetadataValue] = NOT_SET_MARKER) -> str:
        """Add a user profile; returns the user id."""

    @abstractmethod
    def add_agent(self, /, agent_id: str, information: str,
                  metadata: Omittable[MetadataValue] = NOT_SET_MARKER) -> str:
        """Add an agent profile; returns the agent id."""

    @abstractmethod
    def update(self, /, record_type: str, record_id: str,
               content: Omittable[RecordContent] = NOT_SET_MARKER,
               index_text: Omittable[IndexText] = NOT_SET_MARKER,
               embedding: Omittable[Embedding | None] = NOT_SET_MARKER,
               metadata: Omittable[MetadataValue] = NOT_SET_MARKER,
               timestamp: Omittable[str | None] = NOT_SET_MARKER,
               ttl_days: Omittable[int | None] = NOT_SET_MARKER,
               ttl_anchor: Omittable[TimeToLiveAnchor] = NOT_SET_MARKER,
               status: Omittable[RecordStatus] = NOT_SET_MARKER,
               text: Omittable[str | None] = NOT_SET_MARKER) -> int:
        """Update one record; returns 0 or 1 (``text`` is a deprecated alias of ``content``)."""

    @abstractmethod
    def delete(self, /, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete one record; returns the number of requested top-level records removed."""

    @abstractmethod
    def delete_thread(self, /, thread_id: str) -> int:
        """Delete a thread and its scoped rows; returns 0 or 1."""

    # --- reads ----------------------------------------------------------------------------
    @abstractmethod
    def get(self, /, record_type: str, record_id: str,
            include_bytes: Omittable[bool] = NOT_SET_MARKER) -> Record | None:
        """Return one visible record or ``None``."""

    @abstractmethod
    def list(self, /, record_type: str, limit: Omittable[int | None] = NOT_SET_MARKER,
             thread_id: Omittable[str | None] = NOT_SET_MARKER,
             user_id: Omittable[str | None] = NOT_SET_MARKER,
             agent_id: Omittable[str | None] = NOT_SET_MARKER,
             metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
             include_bytes: Omittable[bool] = NOT_SET_MARKER,
             record_id: Omittable[str] = NOT_SET_MARKER, *,
             older_than: OlderThan | None = None) -> builtins.list[Record]:
        """List visible records of one type, oldest first within the returned window.

        ``older_than`` (keyword-only, an extension of the spec) pages the list by
        ``(timestamp, id)``: see :class:`~oracleagentmemory.apis.keyset.OlderThan`.
        """

    @abstractmethod
    def list_thread_messages(self, /, thread_id: str, last_n: int | None = None,
                             range_start_seq_no: int | None = None,
                             range_end_seq_no: int | None = None,
                             include_bytes: Omittable[bool] = NOT_SET_MARKER,
                             ) -> builtins.list[MessageRecord]:
        """List a thread's messages in sequence order."""

    @abstractmethod
    def search(self, /, query: str | None, k: int, query_vector: Vector | None = None,
               thread_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, exact_user_match: bool = False,
               exact_agent_match: bool = False, exact_thread_match: bool = False,
               record_types: set[str] | None = None, metadata_filter: MetadataFilter = None,
               num_hops: int = 0, max_linked_results: int = 100,
               include_invalid_results: bool = True) -> builtins.list[tuple[Record, float]]:
        """``(record, distance)`` pairs ranked by ascending distance (at most ``k``)."""

    # --- relations ------------------------------------------------------------------------
    @abstractmethod
    def add_relations(self, /, source_record_ids: OneOrEach[str],
                      source_record_types: OneOrEach[str],
                      target_record_ids: OneOrEach[str], target_record_types: OneOrEach[str],
                      relation_types: OneOrEach[str],
                      opposite_relation_types: Omittable[OneOrEach[str]] = NOT_SET_MARKER,
                      relation_ids: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER,
                      timestamps: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER,
                      metadata: Omittable[OneOrEach[MetadataValue]] = NOT_SET_MARKER,
                      ) -> builtins.list[str]:
        """Store directed relations; returns their ids in input order."""

    @abstractmethod
    def get_relation(self, /, source_record_id: Omittable[str] = NOT_SET_MARKER,
                     source_record_type: Omittable[str] = NOT_SET_MARKER,
                     target_record_id: Omittable[str] = NOT_SET_MARKER,
                     target_record_type: Omittable[str] = NOT_SET_MARKER,
                     relation_type: Omittable[str] = NOT_SET_MARKER,
                     relation_id: Omittable[str] = NOT_SET_MARKER) -> RecordRelation | None:
        """One relation by id or by its complete endpoint tuple."""

    @abstractmethod
    def list_relations(self, /, relation_type: Omittable[str] = NOT_SET_MARKER,
                       source_record_id: Omittable[str] = NOT_SET_MARKER,
                       source_record_type: Omittable[str] = NOT_SET_MARKER,
                       target_record_id: Omittable[str] = NOT_SET_MARKER,
                       target_record_type: Omittable[str] = NOT_SET_MARKER,
                       limit: Omittable[int | None] = NOT_SET_MARKER,
                       metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
                       relation_id: Omittable[str] = NOT_SET_MARKER, *,
                       older_than: OlderThan | None = None,
                       ) -> builtins.list[RecordRelation]:
        """Relations in creation order.

        ``older_than`` (keyword-only, an extension of the spec) pages the relations by
        ``(created_at, id)``: see :class:`~oracleagentmemory.apis.keyset.OlderThan`.
        """

    @abstractmethod
    def update_relations(self, /, relation_ids: OneOrEach[str],
                         relation_types: Omittable[OneOrEach[str]] = NOT_SET_MARKER,
                         opposite_relation_types: Omittable[OneOrEach[str]] = NOT_SET_MARKER,
                         timestamps: Omittable[OneOrEach[str | None]] = NOT_SET_MARKER,
                         metadata: Omittable[OneOrEach[MetadataValue]] = NOT_SET_MARKER,
                         ) -> builtins.list[str]:
        """Replace mutable relation fields; returns the updated ids."""

    @abstractmethod
    def delete_relations(self, /, relation_ids: OneOrEach[str]) -> int:
        """Delete relations by id; returns how many were deleted."""

    # --- asynchronous twins: each runs its synchronous method in a worker thread ----------
    add_async = AsyncTwin(add)
    add_batches_async = AsyncTwin(add_batches)
    add_user_async = AsyncTwin(add_user)
    add_agent_async = AsyncTwin(add_agent)
    update_async = AsyncTwin(update)
    delete_async = AsyncTwin(delete)
    delete_thread_async = AsyncTwin(delete_thread)
    get_async = AsyncTwin(get)
    list_async = AsyncTwin(list)
    list_thread_messages_async = AsyncTwin(list_thread_messages)
    search_async = AsyncTwin(search)
    add_relations_async = AsyncTwin(add_relations)
    get_relation_async = AsyncTwin(get_relation)
    list_relations_async = AsyncTwin(list_relations)
    update_relations_async = AsyncTwin(update_relations)
    delete_relations_async = AsyncTwin(delete_relations)
