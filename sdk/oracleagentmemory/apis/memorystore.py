"""The store contract (:class:`IMemoryStore`) and the caller-prepared batch type."""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.records import MessageRecord, Record
from oracleagentmemory.apis.relations import RecordRelation

MAX_LIST_LIMIT = 10000
"""Default cap of ``list`` and ``list_relations`` when ``limit`` is omitted."""

MetadataFilter = dict[str, Any] | None


@dataclass
class PendingRecordBatch:
    """One logical batch of records prepared by the caller for :meth:`IMemoryStore.add_batches`.

    Fields take the same values as the arguments of :meth:`IMemoryStore.add`; fields left at
    ``NOT_SET_MARKER`` behave as omitted arguments.
    """

    contents: Any = NOT_SET_MARKER
    record_type: str | _NotSetMarker = NOT_SET_MARKER
    record_ids: Any = NOT_SET_MARKER
    index_texts: Any = NOT_SET_MARKER
    embeddings: Any = NOT_SET_MARKER
    thread_ids: Any = NOT_SET_MARKER
    user_ids: Any = NOT_SET_MARKER
    agent_ids: Any = NOT_SET_MARKER
    roles: Any = NOT_SET_MARKER
    timestamps: Any = NOT_SET_MARKER
    metadata: Any = NOT_SET_MARKER
    ttl_days: Any = NOT_SET_MARKER
    ttl_anchor: Any = NOT_SET_MARKER
    statuses: Any = NOT_SET_MARKER

    def add_arguments(self) -> dict[str, Any]:
        """The batch as keyword arguments of ``add`` (omitted fields left out)."""
        return {
            name: value
            for name, value in vars(self).items()
            if value is not NOT_SET_MARKER
        }


class IMemoryStore(ABC):
    """Persists records and finds them again."""

    @abstractmethod
    def add(self, contents: Any = NOT_SET_MARKER, record_type: Any = NOT_SET_MARKER,
            **kwargs: Any) -> builtins.list[str]:
        """Add records; returns their identifiers in input order."""

    @abstractmethod
    def add_batches(self, batches: builtins.list[PendingRecordBatch],
                    **store_kwargs: Any) -> builtins.list[str]:
        """Add caller-prepared batches in one transaction; returns identifiers in order."""

    @abstractmethod
    def add_user(self, user_id: Any = NOT_SET_MARKER, information: Any = NOT_SET_MARKER,
                 metadata: Any = NOT_SET_MARKER) -> str:
        """Add a user profile; returns the user id."""

    @abstractmethod
    def add_agent(self, agent_id: str, information: str, metadata: Any = NOT_SET_MARKER) -> str:
        """Add an agent profile; returns the agent id."""

    @abstractmethod
    def get(self, record_type: str, record_id: str, include_bytes: Any = NOT_SET_MARKER
            ) -> Record | None:
        """Return one visible record or ``None``."""

    @abstractmethod
    def list(self, record_type: str, limit: Any = NOT_SET_MARKER, thread_id: Any = NOT_SET_MARKER,
             user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
             metadata_filter: Any = NOT_SET_MARKER, include_bytes: Any = NOT_SET_MARKER,
             record_id: Any = NOT_SET_MARKER) -> builtins.list[Record]:
        """List visible records of one type, oldest first within the returned window."""

    @abstractmethod
    def list_thread_messages(self, thread_id: str, last_n: int | None = None,
                             range_start_seq_no: int | None = None,
                             range_end_seq_no: int | None = None,
                             include_bytes: Any = NOT_SET_MARKER) -> builtins.list[MessageRecord]:
        """List a thread's messages in sequence order."""

    @abstractmethod
    def update(self, record_type: str, record_id: str, content: Any = NOT_SET_MARKER,
               index_text: Any = NOT_SET_MARKER, embedding: Any = NOT_SET_MARKER,
               metadata: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
               ttl_days: Any = NOT_SET_MARKER, ttl_anchor: Any = NOT_SET_MARKER,
               status: Any = NOT_SET_MARKER, text: Any = NOT_SET_MARKER) -> int:
        """Update one record; returns 0 or 1."""

    @abstractmethod
    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete one record; returns the number of requested top-level records removed."""

    @abstractmethod
    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread and its scoped rows; returns 0 or 1."""

    @abstractmethod
    def search(self, query: str | None, k: int, query_vector: Any = None,
               thread_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, exact_user_match: bool = False,
               exact_agent_match: bool = False, exact_thread_match: bool = False,
               record_types: Any = None, metadata_filter: Any = None, num_hops: int = 0,
               max_linked_results: int = 100,
               include_invalid_results: bool = True) -> builtins.list[tuple[Record, float]]:
        """``(record, distance)`` pairs ranked by ascending distance (at most ``k``)."""

    @abstractmethod
    def add_relations(self, source_record_ids: Any, source_record_types: Any,
                      target_record_ids: Any, target_record_types: Any, relation_types: Any,
                      opposite_relation_types: Any = NOT_SET_MARKER,
                      relation_ids: Any = NOT_SET_MARKER, timestamps: Any = NOT_SET_MARKER,
                      metadata: Any = NOT_SET_MARKER) -> builtins.list[str]:
        """Store directed relations; returns their ids in input order."""

    @abstractmethod
    def get_relation(self, source_record_id: Any = NOT_SET_MARKER,
                     source_record_type: Any = NOT_SET_MARKER,
                     target_record_id: Any = NOT_SET_MARKER,
                     target_record_type: Any = NOT_SET_MARKER,
                     relation_type: Any = NOT_SET_MARKER,
                     relation_id: Any = NOT_SET_MARKER) -> RecordRelation | None:
        """One relation by id or by its complete endpoint tuple."""

    @abstractmethod
    def list_relations(self, relation_type: Any = NOT_SET_MARKER,
                       source_record_id: Any = NOT_SET_MARKER,
                       source_record_type: Any = NOT_SET_MARKER,
                       target_record_id: Any = NOT_SET_MARKER,
                       target_record_type: Any = NOT_SET_MARKER, limit: Any = NOT_SET_MARKER,
                       metadata_filter: Any = NOT_SET_MARKER,
                       relation_id: Any = NOT_SET_MARKER) -> builtins.list[RecordRelation]:
        """Relations in creation order."""

    @abstractmethod
    def update_relations(self, relation_ids: Any, relation_types: Any = NOT_SET_MARKER,
                         opposite_relation_types: Any = NOT_SET_MARKER,
                         timestamps: Any = NOT_SET_MARKER,
                         metadata: Any = NOT_SET_MARKER) -> builtins.list[str]:
        """Replace mutable relation fields; returns the updated ids."""

    @abstractmethod
    def delete_relations(self, relation_ids: Any) -> int:
        """Delete relations by id; returns how many were deleted."""
