"""The conversation-thread contract, implemented by ``core.OracleThread``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from oracleagentmemory.apis.asynctwin import AsyncTwin


class IThread(ABC):
    """One conversation: its messages, summary and context card, and memories, links, images
    and search in its scope.

    Every method has an ``_async`` twin with the same signature.
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
    def add_messages(self, /, *args: Any, **kwargs: Any) -> Any:
        """Append messages."""

    @abstractmethod
    def get_context_card(self, /, *args: Any, **kwargs: Any) -> Any:
        """Prompt-ready context for the thread."""

    @abstractmethod
    def get_summary(self, /, *args: Any, **kwargs: Any) -> Any:
        """A summary of the thread."""

    @abstractmethod
    def get_messages(self, /, *args: Any, **kwargs: Any) -> Any:
        """The thread's messages in order."""

    @abstractmethod
    def get_message(self, /, *args: Any, **kwargs: Any) -> Any:
        """One message of the thread."""

    @abstractmethod
    def delete_message(self, /, *args: Any, **kwargs: Any) -> Any:
        """Delete one raw message."""

    @abstractmethod
    def update_message(self, /, *args: Any, **kwargs: Any) -> Any:
        """Change one message."""

    @abstractmethod
    def wait_for_memory_extraction(self, /, *args: Any, **kwargs: Any) -> Any:
        """Wait for accepted background extraction."""

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

    @abstractmethod
    def search(self, /, *args: Any, **kwargs: Any) -> Any:
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
