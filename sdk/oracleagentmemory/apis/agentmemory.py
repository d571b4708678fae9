"""The agent-memory client contract, implemented by ``core.OracleAgentMemory``."""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.asynctwin import AsyncTwin
from oracleagentmemory.apis.inputs import MetadataFilter, MetadataValue, Omittable
from oracleagentmemory.apis.message import ImageMimeType
from oracleagentmemory.apis.records import (
    AgentProfileRecord,
    ImageRecord,
    MemoryRecord,
    MemoryRecordType,
    MessageRecord,
    RecordStatus,
    ThreadRecord,
    UserProfileRecord,
)
from oracleagentmemory.apis.relations import MemoryLinkType
from oracleagentmemory.apis.scope import SearchScope
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.ttl import TimeToLiveAnchor

if TYPE_CHECKING:
    from oracleagentmemory.apis.thread import IThread

__all__ = ["IAgentMemory"]


class IAgentMemory(ABC):
    """An agent-memory client: threads, messages, memories, profiles, relations, search and
    images of end users.

    Every method has an ``_async`` twin with the same signature. ``NOT_SET_MARKER`` marks an
    omitted argument (distinct from an explicit ``None``).
    """

    @abstractmethod
    def create_thread(self, /, *, thread_id: Omittable[str] = NOT_SET_MARKER,
                      user_id: Omittable[str] = NOT_SET_MARKER,
                      agent_id: Omittable[str] = NOT_SET_MARKER,
                      metadata: Omittable[MetadataValue] = NOT_SET_MARKER,
                      **kwargs: Any) -> IThread:
        """Create and store a thread (``kwargs``: the implementation's runtime settings)."""

    @abstractmethod
    def get_thread(self, /, thread_id: str) -> IThread:
        """Open a stored thread."""

    @abstractmethod
    def update_thread(self, /, thread_id: str,
                      metadata: Omittable[MetadataValue] = NOT_SET_MARKER,
                      **kwargs: Any) -> IThread:
        """Save new thread metadata and runtime settings."""

    @abstractmethod
    def wait_for_memory_extraction(self, /, timeout: float | None = 300.0) -> None:
        """Wait up to ``timeout`` seconds for accepted background extraction."""

    @abstractmethod
    def delete_thread(self, /, thread_id: str) -> int:
        """Delete a thread with everything scoped to it."""

    @abstractmethod
    def list_threads(self, /, user_id: str | None,
                     agent_id: Omittable[str | None] = NOT_SET_MARKER,
                     metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
                     limit: Omittable[int | None] = NOT_SET_MARKER
                     ) -> builtins.list[ThreadRecord]:
        """List threads."""

    @abstractmethod
    def list_messages(self, /, user_id: Omittable[str | None] = NOT_SET_MARKER,
                      agent_id: Omittable[str | None] = NOT_SET_MARKER,
                      thread_id: Omittable[str | None] = NOT_SET_MARKER,
                      metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
                      limit: Omittable[int | None] = NOT_SET_MARKER,
                      include_image_bytes: Omittable[bool] = NOT_SET_MARKER
                      ) -> builtins.list[MessageRecord]:
        """List messages."""

    @abstractmethod
    def add_user(self, /, user_id: str, information: str,
                 metadata: Omittable[MetadataValue] = NOT_SET_MARKER) -> str:
        """Add a user profile."""

    @abstractmethod
    def list_users(self, /, metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
                   limit: Omittable[int | None] = NOT_SET_MARKER
                   ) -> builtins.list[UserProfileRecord]:
        """List user profiles."""

    @abstractmethod
    def add_agent(self, /, agent_id: str, information: str,
                  metadata: Omittable[MetadataValue] = NOT_SET_MARKER) -> str:
        """Add an agent profile."""

    @abstractmethod
    def list_agents(self, /, metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
                    limit: Omittable[int | None] = NOT_SET_MARKER
                    ) -> builtins.list[AgentProfileRecord]:
        """List agent profiles."""

    @abstractmethod
    def delete_user(self, /, user_id: str, cascade: bool = True) -> int:
        """Delete a user profile (and, with cascade, its records)."""

    @abstractmethod
    def delete_agent(self, /, agent_id: str, cascade: bool = True) -> int:
        """Delete an agent profile (and, with cascade, its records)."""

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
        """Add a memory."""

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
    def list_memories(self, /, user_id: Omittable[str | None] = NOT_SET_MARKER,
                      agent_id: Omittable[str | None] = NOT_SET_MARKER,
                      thread_id: Omittable[str | None] = NOT_SET_MARKER,
                      metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
                      limit: Omittable[int | None] = NOT_SET_MARKER
                      ) -> builtins.list[MemoryRecord]:
        """List memories."""

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
        """Store an image."""

    @abstractmethod
    def list_images(self, /, image_id: Omittable[str] = NOT_SET_MARKER,
                    user_id: Omittable[str | None] = NOT_SET_MARKER,
                    agent_id: Omittable[str | None] = NOT_SET_MARKER,
                    thread_id: Omittable[str | None] = NOT_SET_MARKER,
                    metadata_filter: Omittable[MetadataFilter] = NOT_SET_MARKER,
                    include_bytes: Omittable[bool] = NOT_SET_MARKER,
                    limit: Omittable[int | None] = NOT_SET_MARKER
                    ) -> builtins.list[ImageRecord]:
        """List images."""

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

    create_thread_async = AsyncTwin(create_thread)
    get_thread_async = AsyncTwin(get_thread)
    update_thread_async = AsyncTwin(update_thread)
    wait_for_memory_extraction_async = AsyncTwin(wait_for_memory_extraction)
    delete_thread_async = AsyncTwin(delete_thread)
    list_threads_async = AsyncTwin(list_threads)
    list_messages_async = AsyncTwin(list_messages)
    add_user_async = AsyncTwin(add_user)
    list_users_async = AsyncTwin(list_users)
    add_agent_async = AsyncTwin(add_agent)
    list_agents_async = AsyncTwin(list_agents)
    delete_user_async = AsyncTwin(delete_user)
    delete_agent_async = AsyncTwin(delete_agent)
    add_memory_async = AsyncTwin(add_memory)
    update_memory_async = AsyncTwin(update_memory)
    link_records_async = AsyncTwin(link_records)
    update_record_link_async = AsyncTwin(update_record_link)
    delete_record_link_async = AsyncTwin(delete_record_link)
    delete_memory_async = AsyncTwin(delete_memory)
    list_memories_async = AsyncTwin(list_memories)
    search_async = AsyncTwin(search)
    add_image_async = AsyncTwin(add_image)
    list_images_async = AsyncTwin(list_images)
    update_image_async = AsyncTwin(update_image)
    delete_image_async = AsyncTwin(delete_image)
