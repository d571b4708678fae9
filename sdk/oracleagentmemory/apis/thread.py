"""The conversation-thread contract, implemented by ``core.OracleThread``."""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, TypedDict

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.asynctwin import AsyncTwin
from oracleagentmemory.apis.inputs import MetadataFilter, MetadataValue, Omittable, OneOrEach
from oracleagentmemory.apis.message import ImageMimeType, Message
from oracleagentmemory.apis.records import (
    ImageRecord,
    MemoryRecordType,
    RecordStatus,
    RecordType,
)
from oracleagentmemory.apis.relations import MemoryLinkType
from oracleagentmemory.apis.scope import SearchScope
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.summary import ContextCard, Summary
from oracleagentmemory.apis.ttl import TimeToLiveAnchor

__all__ = [
    "IThread",
    "NormalizedMessageT",
    "ThreadMessageContentT",
    "ThreadMessageMappingT",
    "ThreadMessageTypedDictT",
]

ThreadMessageContentT: TypeAlias = str | list[Mapping[str, Any]]
"""A message's content given as a mapping: text, or content parts in the chat format."""

ThreadMessageMappingT: TypeAlias = Mapping[
    str, str | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None]
"""A message given as a mapping (``role``, ``content``, and optionally ``id``, ``timestamp``,
``metadata``)."""


class _ThreadMessageRequired(TypedDict):
    role: str
    content: ThreadMessageContentT | None


class ThreadMessageTypedDictT(_ThreadMessageRequired, total=False):
    """A message given as a typed dict: ``role`` and ``content``; ``id``, ``timestamp`` and
    ``metadata`` optional."""

    id: str | None
    timestamp: str | None
    metadata: dict[str, Any] | None


NormalizedMessageT: TypeAlias = ThreadMessageTypedDictT
"""Another name of :class:`ThreadMessageTypedDictT`."""


class IThread(ABC):
    """One conversation: its messages, summary and context card, and memories, links, images
    and search in its scope.

    Every method has an ``_async`` twin with the same signature. ``NOT_SET_MARKER`` marks an
    omitted argument (distinct from an explicit ``None``).
    """

    @property
    @abstractmethod
    def thread_id(self) -> Any:
        """The thread's thread id."""

    @property
    @abstractmethod
    def user_id(self) -> Any:
        """The thread's user id."""

    @property
    @abstractmethod
    def agent_id(self) -> Any:
        """The thread's agent id."""

    @property
    @abstractmethod
    def metadata(self) -> Any:
        """The thread's metadata."""

    @abstractmethod
    def add_messages(self, /, messages: Sequence[Message | Mapping[str, Any]],
                     metadata: Omittable[OneOrEach[MetadataValue]] = NOT_SET_MARKER,
                     ttl_days: Omittable[OneOrEach[int | None]] = NOT_SET_MARKER,
                     ttl_anchor: Omittable[OneOrEach[TimeToLiveAnchor]] = NOT_SET_MARKER,
                     **store_kwargs: Any) -> builtins.list[str]:
        """Append messages; returns their ids in order."""

    @abstractmethod
    def get_context_card(self, /, fallback_message_count: Omittable[int] = NOT_SET_MARKER,
                         max_relevant_results: Omittable[int] = NOT_SET_MARKER,
                         max_recent_messages: Omittable[int] = NOT_SET_MARKER,
                         except_last_messages: Omittable[int] = NOT_SET_MARKER,
                         min_relevant_results_by_type:
                             Omittable[Mapping[RecordType, int] | None] = NOT_SET_MARKER,
                         metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
                         include_invalid_results: Omittable[bool] = NOT_SET_MARKER,
                         token_budget: Omittable[int | None] = NOT_SET_MARKER,
                         soft_token_budget: Omittable[int | None] = NOT_SET_MARKER,
                         **kwargs: Any) -> ContextCard:
        """Prompt-ready context for the thread."""

    @abstractmethod
    def get_summary(self, /, except_last: Omittable[int] = NOT_SET_MARKER,
                    token_budget: Omittable[int] = NOT_SET_MARKER, **kwargs: Any) -> Summary:
        """A summary of the thread (``except_last``: of all but its newest messages)."""

    @abstractmethod
    def get_messages(self, /, *, start: Omittable[int | None] = NOT_SET_MARKER,
                     end: Omittable[int | None] = NOT_SET_MARKER,
                     include_image_bytes: Omittable[bool] = NOT_SET_MARKER
                     ) -> builtins.list[Message]:
        """The thread's messages in order (indices ``start`` to ``end``, exclusive)."""

    @abstractmethod
    def get_message(self, /, message_id: str, *,
                    included_image_ids: Omittable[builtins.list[str]] = NOT_SET_MARKER
                    ) -> Message:
        """One message of the thread."""

    @abstractmethod
    def delete_message(self, /, message_id: str) -> int:
        """Delete one raw message."""

    @abstractmethod
    def update_message(self, /, message_id: str,
                       content: Omittable[str | builtins.list[Mapping[str, Any]]]
                       = NOT_SET_MARKER,
                       metadata: Omittable[MetadataValue] = NOT_SET_MARKER,
                       ttl_days: Omittable[int | None] = NOT_SET_MARKER,
                       ttl_anchor: Omittable[TimeToLiveAnchor] = NOT_SET_MARKER,
                       **kwargs: Any) -> str:
        """Change one message."""

    @abstractmethod
    def wait_for_memory_extraction(self, /, timeout: float | None = 300.0) -> None:
        """Wait up to ``timeout`` seconds for accepted background extraction."""

    @abstractmethod
    def add_memory(self, /, content: str, *,
                   memory_type: Omittable[MemoryRecordType] = NOT_SET_MARKER,
                   user_id: Omittable[str] = NOT_SET_MARKER,
                   agent_id: Omittable[str] = NOT_SET_MARKER,
                   thread_id: Omittable[str] = NOT_SET_MARKER,
                   memory_id: Omittable[str] = NOT_SET_MARKER,
                   metadata: Omittable[MetadataValue] = NOT_SET_MARKER,
                   timestamp: Omittable[str | None] = NOT_SET_MARKER,
                   ttl_days: Omittable[int | None] = NOT_SET_MARKER,
                   ttl_anchor: Omittable[TimeToLiveAnchor] = NOT_SET_MARKER,
                   status: Omittable[RecordStatus] = NOT_SET_MARKER,
                   autonomous_linking: Omittable[bool] = NOT_SET_MARKER,
                   memory_id_to_link: Omittable[str] = NOT_SET_MARKER,
                   link_type: Omittable[MemoryLinkType] = NOT_SET_MARKER,
                   link_id: Omittable[str] = NOT_SET_MARKER,
                   link_timestamp: Omittable[str | None] = NOT_SET_MARKER,
                   link_metadata: Omittable[MetadataValue] = NOT_SET_MARKER,
                   **store_kwargs: Any) -> str:
        """Add a memory in the thread's scope."""

    @abstractmethod
    def update_memory(self, /, memory_id: str, content: Omittable[str] = NOT_SET_MARKER,
                      metadata: Omittable[MetadataValue] = NOT_SET_MARKER,
                      timestamp: Omittable[str | None] = NOT_SET_MARKER,
                      ttl_days: Omittable[int | None] = NOT_SET_MARKER,
                      ttl_anchor: Omittable[TimeToLiveAnchor] = NOT_SET_MARKER,
                      status: Omittable[RecordStatus] = NOT_SET_MARKER,
                      **kwargs: Any) -> str:
        """Change a memory."""

    @abstractmethod
    def link_records(self, /, source_record_id: str, source_record_type: str,
                     target_record_id: str, target_record_type: str, relation_type: str,
                     opposite_relation_type: Omittable[str] = NOT_SET_MARKER,
                     relation_id: Omittable[str] = NOT_SET_MARKER,
                     timestamp: Omittable[str | None] = NOT_SET_MARKER,
                     metadata: Omittable[MetadataValue] = NOT_SET_MARKER) -> str:
        """Relate two records; returns the relation's id."""

    @abstractmethod
    def update_record_link(self, /, relation_id: str,
                           relation_type: Omittable[str] = NOT_SET_MARKER,
                           opposite_relation_type: Omittable[str] = NOT_SET_MARKER,
                           timestamp: Omittable[str | None] = NOT_SET_MARKER,
                           metadata: Omittable[MetadataValue] = NOT_SET_MARKER) -> int:
        """Change a relation."""

    @abstractmethod
    def delete_record_link(self, /, source_record_id: Omittable[str] = NOT_SET_MARKER,
                           source_record_type: Omittable[str] = NOT_SET_MARKER,
                           target_record_id: Omittable[str] = NOT_SET_MARKER,
                           target_record_type: Omittable[str] = NOT_SET_MARKER,
                           relation_type: Omittable[str] = NOT_SET_MARKER,
                           relation_id: Omittable[str] = NOT_SET_MARKER) -> int:
        """Delete a relation (by its id, or by its endpoints and type)."""

    @abstractmethod
    def delete_memory(self, /, memory_id: str) -> int:
        """Delete a memory."""

    @abstractmethod
    def add_image(self, /, image: bytes, description: Omittable[str | None] = NOT_SET_MARKER,
                  mime_type: Omittable[ImageMimeType] = NOT_SET_MARKER,
                  image_id: Omittable[str] = NOT_SET_MARKER,
                  user_id: Omittable[str | None] = NOT_SET_MARKER,
                  agent_id: Omittable[str | None] = NOT_SET_MARKER,
                  thread_id: Omittable[str] = NOT_SET_MARKER,
                  metadata: Omittable[MetadataValue] = NOT_SET_MARKER,
                  timestamp: Omittable[str | None] = NOT_SET_MARKER,
                  ttl_days: Omittable[int | None] = NOT_SET_MARKER,
                  ttl_anchor: Omittable[TimeToLiveAnchor] = NOT_SET_MARKER,
                  **store_kwargs: Any) -> str:
        """Store an image in the thread's scope."""

    @abstractmethod
    def list_images(self, /, image_id: Omittable[str] = NOT_SET_MARKER,
                    metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
                    include_bytes: Omittable[bool] = NOT_SET_MARKER,
                    limit: Omittable[int | None] = NOT_SET_MARKER
                    ) -> builtins.list[ImageRecord]:
        """The thread's images."""

    @abstractmethod
    def update_image(self, /, image_id: str, image: Omittable[bytes] = NOT_SET_MARKER,
                     description: Omittable[str | None] = NOT_SET_MARKER,
                     mime_type: Omittable[ImageMimeType] = NOT_SET_MARKER,
                     metadata: Omittable[MetadataValue] = NOT_SET_MARKER,
                     timestamp: Omittable[str | None] = NOT_SET_MARKER,
                     ttl_days: Omittable[int | None] = NOT_SET_MARKER,
                     ttl_anchor: Omittable[TimeToLiveAnchor] = NOT_SET_MARKER,
                     **kwargs: Any) -> str:
        """Change an image."""

    @abstractmethod
    def delete_image(self, /, image_id: str) -> int:
        """Delete an image."""

    @abstractmethod
    def search(self, /, query: str, *, user_id: Omittable[str | None] = NOT_SET_MARKER,
               agent_id: Omittable[str | None] = NOT_SET_MARKER,
               thread_id: Omittable[str | None] = NOT_SET_MARKER,
               exact_user_match: Omittable[bool] = NOT_SET_MARKER,
               exact_agent_match: Omittable[bool] = NOT_SET_MARKER,
               exact_thread_match: Omittable[bool] = NOT_SET_MARKER,
               max_results: Omittable[int] = NOT_SET_MARKER,
               token_budget: Omittable[int] = NOT_SET_MARKER,
               soft_token_budget: Omittable[int] = NOT_SET_MARKER,
               record_types: Omittable[builtins.list[str]] = NOT_SET_MARKER,
               metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
               num_hops: Omittable[int] = NOT_SET_MARKER,
               max_linked_results: Omittable[int] = NOT_SET_MARKER,
               include_invalid_results: Omittable[bool] = NOT_SET_MARKER,
               scope: Omittable[SearchScope] = NOT_SET_MARKER) -> builtins.list[SearchResult]:
        """Search records relevant to a query."""

    add_messages_async = AsyncTwin(add_messages)
    get_context_card_async = AsyncTwin(get_context_card)
    get_summary_async = AsyncTwin(get_summary)
    get_messages_async = AsyncTwin(get_messages)
    get_message_async = AsyncTwin(get_message)
    delete_message_async = AsyncTwin(delete_message)
    update_message_async = AsyncTwin(update_message)
    wait_for_memory_extraction_async = AsyncTwin(wait_for_memory_extraction)
    add_memory_async = AsyncTwin(add_memory)
    update_memory_async = AsyncTwin(update_memory)
    link_records_async = AsyncTwin(link_records)
    update_record_link_async = AsyncTwin(update_record_link)
    delete_record_link_async = AsyncTwin(delete_record_link)
    delete_memory_async = AsyncTwin(delete_memory)
    add_image_async = AsyncTwin(add_image)
    list_images_async = AsyncTwin(list_images)
    update_image_async = AsyncTwin(update_image)
    delete_image_async = AsyncTwin(delete_image)
    search_async = AsyncTwin(search)
