"""The agent-memory client contract, implemented by ``core.OracleAgentMemory``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from oracleagentmemory.apis.asynctwin import AsyncTwin


class IAgentMemory(ABC):
    """An agent-memory client: threads, messages, memories, profiles, relations, search and
    images of end users.

    Every method has an ``_async`` twin with the same signature.
    """

    @abstractmethod
    def create_thread(self, /, *args: Any, **kwargs: Any) -> Any:
        """Create and store a thread."""

    @abstractmethod
    def get_thread(self, /, *args: Any, **kwargs: Any) -> Any:
        """Open a stored thread."""

    @abstractmethod
    def update_thread(self, /, *args: Any, **kwargs: Any) -> Any:
        """Save new thread metadata and runtime settings."""

    @abstractmethod
    def wait_for_memory_extraction(self, /, *args: Any, **kwargs: Any) -> Any:
        """Wait for accepted background extraction."""

    @abstractmethod
    def delete_thread(self, /, *args: Any, **kwargs: Any) -> Any:
        """Delete a thread with everything scoped to it."""

    @abstractmethod
    def list_threads(self, /, *args: Any, **kwargs: Any) -> Any:
        """List threads."""

    @abstractmethod
    def list_messages(self, /, *args: Any, **kwargs: Any) -> Any:
        """List messages."""

    @abstractmethod
    def add_user(self, /, *args: Any, **kwargs: Any) -> Any:
        """Add a user profile."""

    @abstractmethod
    def list_users(self, /, *args: Any, **kwargs: Any) -> Any:
        """List user profiles."""

    @abstractmethod
    def add_agent(self, /, *args: Any, **kwargs: Any) -> Any:
        """Add an agent profile."""

    @abstractmethod
    def list_agents(self, /, *args: Any, **kwargs: Any) -> Any:
        """List agent profiles."""

    @abstractmethod
    def delete_user(self, /, *args: Any, **kwargs: Any) -> Any:
        """Delete a user profile (and, with cascade, its records)."""

    @abstractmethod
    def delete_agent(self, /, *args: Any, **kwargs: Any) -> Any:
        """Delete an agent profile (and, with cascade, its records)."""

    @abstractmethod
    def add_memory(self, /, *args: Any, **kwargs: Any) -> Any:
        """Add a memory."""

    @abstractmethod
    def update_memory(self, /, *args: Any, **kwargs: Any) -> Any:
        """Change a memory."""

    @abstractmethod
    def link_records(self, /, *args: Any, **kwargs: Any) -> Any:
        """Relate two memories."""

    @abstractmethod
    def update_record_link(self, /, *args: Any, **kwargs: Any) -> Any:
        """Change a relation."""

    @abstractmethod
    def delete_record_link(self, /, *args: Any, **kwargs: Any) -> Any:
        """Delete a relation."""

    @abstractmethod
    def delete_memory(self, /, *args: Any, **kwargs: Any) -> Any:
        """Delete a memory."""

    @abstractmethod
    def list_memories(self, /, *args: Any, **kwargs: Any) -> Any:
        """List memories."""

    @abstractmethod
    def search(self, /, *args: Any, **kwargs: Any) -> Any:
        """Search records relevant to a query."""

    @abstractmethod
    def add_image(self, /, *args: Any, **kwargs: Any) -> Any:
        """Store an image."""

    @abstractmethod
    def list_images(self, /, *args: Any, **kwargs: Any) -> Any:
        """List images."""

    @abstractmethod
    def update_image(self, /, *args: Any, **kwargs: Any) -> Any:
        """Change an image."""

    @abstractmethod
    def delete_image(self, /, *args: Any, **kwargs: Any) -> Any:
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
