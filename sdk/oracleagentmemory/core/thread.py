"""``OracleThread``: one conversation of the agent-memory client."""

from __future__ import annotations

import asyncio
import builtins
import functools
import logging
from typing import TYPE_CHECKING, Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.asynctwin import AsyncTwin
from oracleagentmemory.apis.message import Message
from oracleagentmemory.apis.records import ImageRecord, MessageRecord
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.thread import IThread
from oracleagentmemory.core._client_search import (
    given_scope,
    search_records,
    thread_scope,
)
from oracleagentmemory.core._extraction import ThreadScope, extract_memories, llm_shortener
from oracleagentmemory.core._messages import (
    check_image_sizes,
    message_columns,
    message_content_parts,
    to_message,
)
from oracleagentmemory.core._summaries import (
    DEFAULT_SUMMARY_TOKEN_BUDGET,
    durable_digest,
)
from oracleagentmemory.core._thread_context import ThreadContext
from oracleagentmemory.core._thread_settings import THREAD_LIMIT_DEFAULTS, ThreadSettings
from oracleagentmemory.core._validation import check_required_id
from oracleagentmemory.core.memoryextraction import (
    MemoryExtractionImageContext,
    MemoryExtractionMode,
)
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError, RecordKeyError
from oracleagentmemory.observability._operation import THREAD, observed

if TYPE_CHECKING:
    from oracleagentmemory.core.oracleagentmemory import OracleAgentMemory

__all__ = [
    "CONTEXT_CARD_TOKEN_LIMIT_DEFAULT",
    "DEFAULT_MESSAGE_HISTORY_LIMIT",
    "DEFAULT_SUMMARY_TOKEN_BUDGET",
    "MAX_MESSAGE_TOKEN_LENGTH_DEFAULT",
    "MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT",
    "OracleThread",
]

LOG = logging.getLogger("oracleagentmemory.thread")

DEFAULT_MESSAGE_HISTORY_LIMIT = 100
"""How many recent messages :meth:`OracleThread.get_messages` returns by default."""
MAX_MESSAGE_TOKEN_LENGTH_DEFAULT = THREAD_LIMIT_DEFAULTS["max_message_token_length"]
"""SDK default of ``max_message_token_length``: longer messages are shortened in prompts."""
MESSAGE_SHORTENING_INPUT_TOKEN_LIMIT_DEFAULT = THREAD_LIMIT_DEFAULTS[
    "message_shortening_input_token_limit"]
"""SDK default of ``message_shortening_input_token_limit``: the input budget of shortening."""
CONTEXT_CARD_TOKEN_LIMIT_DEFAULT = THREAD_LIMIT_DEFAULTS["context_card_token_limit"]
"""SDK default of ``context_card_token_limit``: the token budget of a context card."""


class OracleThread(ThreadContext, IThread):
    """A conversation thread: its messages, and memories, links and search in its scope.

    Threads come from :meth:`OracleAgentMemory.create_thread` and
    :meth:`OracleAgentMemory.get_thread`.
    """

    def __init__(self, store: Any, client: OracleAgentMemory | None = None,
                 thread_id: Any = NOT_SET_MARKER, user_id: Any = NOT_SET_MARKER,
                 agent_id: Any = NOT_SET_MARKER, metadata: Any = NOT_SET_MARKER,
                 persist_messages_in_config: bool = False, llm: Any = NOT_SET_MARKER,
                 memory_extraction_config: Any = NOT_SET_MARKER,
                 image_input_limit_config: Any = NOT_SET_MARKER,
                 max_message_token_length: int = 15_000,
                 message_shortening_input_token_limit: int = 30_000,
                 memory_extraction_window: Any = NOT_SET_MARKER,
                 context_summary_update_frequency: Any = NOT_SET_MARKER,
                 memory_extraction_frequency: Any = NOT_SET_MARKER,
                 memory_extraction_token_limit: Any = NOT_SET_MARKER,
                 context_card_token_limit: int = 100_000,
                 context_card_type_search_concurrency: int = 5,
                 enable_context_summary: Any = NOT_SET_MARKER,
                 memory_extraction_custom_instructions: Any = NOT_SET_MARKER,
                 memory_extraction_inherit_message_metadata: Any = NOT_SET_MARKER,
                 search_config: Any = NOT_SET_MARKER) -> None:
        """A thread over ``store``: the stored thread ``thread_id`` when it exists, else a new
        one (ids generated when omitted). Without ``client`` the thread has a private one:
        extraction runs only when an ``llm`` is given, and summaries are kept by default.

        ``persist_messages_in_config`` is accepted for compatibility; a database store never
        copies messages into the thread's configuration.
        """
        from oracleagentmemory.core.memoryextraction import MemoryExtractionConfig
        from oracleagentmemory.core.oracleagentmemory import OracleAgentMemory

        thread_llm = None if llm is NOT_SET_MARKER else llm
        if client is None:
            defaults = MemoryExtractionConfig(extract_memories=thread_llm is not None,
                                              enable_context_summary=thread_llm is not None)
            client = OracleAgentMemory(store=store, llm=NOT_SET_MARKER if thread_llm is None
                                       else thread_llm, memory_extraction_config=defaults)
        elif client.store is not store:
            raise InvalidArgumentError("client must be the agent-memory client of store",
                                       argument="client")
        settings = {
            "max_message_token_length": max_message_token_length,
            "message_shortening_input_token_limit": message_shortening_input_token_limit,
            "context_card_token_limit": context_card_token_limit,
            "context_card_type_search_concurrency": context_card_type_search_concurrency,
            "memory_extraction_window": memory_extraction_window,
            "context_summary_update_frequency": context_summary_update_frequency,
            "memory_extraction_frequency": memory_extraction_frequency,
            "memory_extraction_token_limit": memory_extraction_token_limit,
            "enable_context_summary": enable_context_summary,
            "memory_extraction_custom_instructions": memory_extraction_custom_instructions,
            "memory_extraction_inherit_message_metadata":
                memory_extraction_inherit_message_metadata,
            "memory_extraction_config": memory_extraction_config,
            "image_input_limit_config": image_input_limit_config,
        }
        # The signature's defaults stand for "omitted": they never hide a thread's saved value.
        for name, default in THREAD_LIMIT_DEFAULTS.items():
            if settings[name] == default:
                settings[name] = NOT_SET_MARKER
        existing = None if thread_id is NOT_SET_MARKER else client._store.get(
            "thread", check_required_id(thread_id, "thread_id"))
        opened = client.get_thread(thread_id, llm=llm, search_config=search_config,
                                   **settings) if existing is not None else \
            client.create_thread(thread_id=thread_id, user_id=user_id, agent_id=agent_id,
                                 metadata=metadata, llm=llm, search_config=search_config,
                                 **settings)
        self._bind(client, opened._thread_id, opened._user_id, opened._agent_id,
                   opened._metadata, opened._settings, opened._llm, opened._search_config)

    @classmethod
    def _open(cls, client: OracleAgentMemory, thread_id: str, user_id: str | None,
              agent_id: str | None, metadata: dict[str, Any] | None, settings: ThreadSettings,
              llm: Any = None, search_config: Any = None) -> OracleThread:
        """The thread object of a stored thread (what the client's create/get return)."""
        thread = cls.__new__(cls)
        thread._bind(client, thread_id, user_id, agent_id, metadata, settings, llm,
                     search_config)
        return thread

    def _bind(self, client: OracleAgentMemory, thread_id: str, user_id: str | None,
              agent_id: str | None, metadata: dict[str, Any] | None, settings: ThreadSettings,
              llm: Any, search_config: Any) -> None:
        self._client = client
        self._store = client._store
        self._thread_id = thread_id
        self._user_id = user_id
        self._agent_id = agent_id
        self._metadata = metadata
        self._settings = settings
        self._llm = llm
        self._search_config = search_config

    def __repr__(self) -> str:
        return (f"OracleThread(thread_id={self._thread_id!r}, user_id={self._user_id!r}, "
                f"agent_id={self._agent_id!r})")

    # --- identity and settings ------------------------------------------------------------
    @property
    def thread_id(self) -> str:
        """The thread's identifier."""
        return self._thread_id

    @property
    def user_id(self) -> str | None:
        """The user the thread belongs to."""
        return self._user_id

    @property
    def agent_id(self) -> str | None:
        """The agent the thread belongs to."""
        return self._agent_id

    @property
    def metadata(self) -> dict[str, Any] | None:
        """The thread's metadata as loaded or created."""
        return self._metadata

    @property
    def max_message_token_length(self) -> int:
        """Largest prompt-time copy of one message, in tokens (stored content is unchanged)."""
        return self._settings.max_message_token_length

    @property
    def message_shortening_input_token_limit(self) -> int:
        """Largest message excerpt sent to the LLM when shortening one, in tokens."""
        return self._settings.message_shortening_input_token_limit

    @property
    def context_card_token_limit(self) -> int:
        """Input token budget of the context-card prompt."""
        return self._settings.context_card_token_limit

    @property
    def settings(self) -> ThreadSettings:
        """Every resolved runtime setting of this thread object."""
        return self._settings

    # --- messages -------------------------------------------------------------------------
    @observed(THREAD)
    def add_messages(self, /, messages: Any, metadata: Any = NOT_SET_MARKER,
                     ttl_days: Any = NOT_SET_MARKER, ttl_anchor: Any = NOT_SET_MARKER,
                     **store_kwargs: Any) -> builtins.list[str]:
        """Append messages (``Message`` objects or ``{"role", "content"}`` mappings) to the thread;
        returns their ids in order. The raw messages are stored first, in one transaction."""
        columns = message_columns(messages, metadata)
        check_image_sizes(columns.contents, self._settings.image_limits.max_raw_image_bytes)
        ids = [None if i is None else check_required_id(i, "messages.id")
               for i in columns.record_ids]
        added = [str(i) for i in self._store.add(
            columns.contents, "message", record_ids=ids, thread_ids=self._thread_id,
            user_ids=self._user_id, agent_ids=self._agent_id, roles=columns.roles,
            timestamps=columns.timestamps, metadata=columns.metadata, ttl_days=ttl_days,
            ttl_anchor=ttl_anchor, **store_kwargs)]
        self._extract_after(added)
        return added

    # --- automatic memory extraction ------------------------------------------------------
    def _extract_after(self, message_ids: builtins.list[str]) -> None:
        """Run (inline) or queue (background) the extraction that these new messages make due.

        Raises:
            OperationTimeoutError: the background queue stayed full under ``WAIT_THEN_RAISE``
                (the messages are stored).
        """
        extraction = self._settings.extraction
        if self._llm is None or not (extraction.extract_memories
                                     or extraction.enable_context_summary):
            return
        sources = self._due_sources(message_ids, extraction.memory_extraction_frequency) \
            if extraction.extract_memories else []
        # With extraction on, the summary is checked after each due extraction only.
        check_summary = extraction.enable_context_summary and (
            bool(sources) or not extraction.extract_memories)
        if not sources and not check_summary:
            return
        description = f"memory extraction for thread {self._thread_id!r}"
        job = functools.partial(self._derive, sources, check_summary)
        if extraction.extraction_mode is MemoryExtractionMode.INLINE:
            try:
                job()
            except Exception:  # the raw messages are stored; only derived memories are lost
                LOG.warning("%s failed", description, exc_info=True)
            return
        self._client._background.submit(
            self._client._work_key(self._thread_id), job, description,
            extraction.background_extraction_queue_full_behavior,
            extraction.background_extraction_queue_put_timeout_seconds,
            owners=(self._user_id, self._agent_id))

    def _due_sources(self, message_ids: builtins.list[str],
                     frequency: int) -> builtins.list[str]:
        """The messages an extraction pass covers now (none when it is not due yet).

        With a positive ``frequency``, messages accumulate in the thread's runtime state until
        that many are waiting; otherwise every append is one pass over its new messages.
        """
        if frequency <= 0:
            return message_ids
        record = self._store.get("thread", self._thread_id)
        state = dict(getattr(record, "runtime_state", None) or {})
        pending = [*state.get("extraction_pending", []), *message_ids]
        due = len(pending) >= frequency
        state["extraction_pending"] = [] if due else pending
        self._store._update_thread(self._thread_id, runtime_state=state)
        return pending if due else []

    def _derive(self, source_ids: builtins.list[str], check_summary: bool) -> None:
        """The derived work of one append: extraction, then the summary check."""
        if source_ids:
            self._extract(source_ids)
        if check_summary:
            self._summary_due()

    def _extract(self, source_ids: builtins.list[str]) -> None:
        """One extraction pass over ``source_ids`` (runs as the user who added them)."""
        settings = self._settings.extraction
        newest = self._store.get("message", source_ids[-1])
        if not isinstance(newest, MessageRecord):
            return  # deleted before the pass ran
        # The conversation ends at the newest source: later messages belong to later passes.
        window = max(settings.memory_extraction_window, len(source_ids))
        with_images = settings.memory_extraction_image_context is MemoryExtractionImageContext.IMAGE
        conversation = self._store.list_thread_messages(
            self._thread_id, last_n=window, range_end_seq_no=newest.seq_no + 1,
            include_bytes=with_images)
        wanted = set(source_ids)
        sources = [m for m in conversation if m.id in wanted]
        if not sources:
            return  # deleted before the pass ran
        if settings.memory_extraction_window < 0:
            conversation = sources
        assert self._llm is not None
        earlier = durable_digest(self._store, self._thread_id) \
            if settings.enable_context_summary else None
        extract_memories(self._store, self._llm, self._scope(), conversation, sources, settings,
                         self._settings.max_message_token_length,
                         earlier.summary if earlier is not None else None,
                         llm_shortener(self._llm, self._settings.max_message_token_length,
                                       self._settings.message_shortening_input_token_limit))

    def wait_for_memory_extraction(self, /, timeout: float | None = 300.0) -> None:
        """Wait up to ``timeout`` seconds for this thread's accepted background extraction."""
        self._client._background.wait([self._client._work_key(self._thread_id)], timeout)

    @observed(THREAD)
    def get_messages(self, /, *, start: Any = NOT_SET_MARKER, end: Any = NOT_SET_MARKER,
                     include_image_bytes: Any = NOT_SET_MARKER) -> builtins.list[Message]:
        """The thread's messages in order: indices ``start`` (0-based) to ``end`` (exclusive;
        ``None`` or -1: to the last). Neither given: the most recent 100."""
        for name, value in (("start", start), ("end", end)):
            if value is not NOT_SET_MARKER and value is not None and (
                    isinstance(value, bool) or not isinstance(value, int)):
                raise InvalidArgumentTypeError(f"{name} must be an int or None", argument=name)
        if start is NOT_SET_MARKER and end is NOT_SET_MARKER:
            records = self._store.list_thread_messages(self._thread_id,
                                                       last_n=DEFAULT_MESSAGE_HISTORY_LIMIT)
        else:
            records = self._store.list_thread_messages(self._thread_id)
            first = 0 if start in (NOT_SET_MARKER, None) else start
            last = None if end in (NOT_SET_MARKER, None, -1) else end
            records = records[first:last]
        return [to_message(r) for r in records]

    @observed(THREAD)
    def get_message(self, /, message_id: str, *,
                    included_image_ids: Any = NOT_SET_MARKER) -> Message:
        """One message of this thread.

        Raises:
            RecordKeyError: (a ``KeyError``) no such visible message in this thread.
        """
        return to_message(self._own_message(message_id))

    @observed(THREAD)
    def update_message(self, /, message_id: str, content: Any = NOT_SET_MARKER,
                       metadata: Any = NOT_SET_MARKER, ttl_days: Any = NOT_SET_MARKER,
                       ttl_anchor: Any = NOT_SET_MARKER, **kwargs: Any) -> str:
        """Replace a message's content and/or metadata, or refresh its expiry; returns its id.

        Role and timestamp are unchanged. ``ttl_anchor`` without ``ttl_days`` uses the store's
        default lifetime.

        Raises:
            RecordKeyError: (a ``KeyError``) no such visible message in this thread.
        """
        if kwargs:
            raise InvalidArgumentTypeError(
                f"unexpected arguments: {', '.join(sorted(kwargs))}")
        self._own_message(message_id)
        if content is not NOT_SET_MARKER and not isinstance(content, str):
            content = message_content_parts(content, "content")
        self._store.update("message", message_id, content=content, metadata=metadata,
                           ttl_days=ttl_days, ttl_anchor=ttl_anchor)
        return message_id

    @observed(THREAD)
    def delete_message(self, /, message_id: str) -> int:
        """Delete one raw message of this thread (derived memories stay); 0 if it is not one.

        Waits first for this thread's earlier background extraction (up to 300 s).

        Raises:
            OperationTimeoutError: that extraction did not finish in time (nothing deleted).
        """
        self._client._wait_for_threads([self._thread_id], f"message {message_id!r}")
        try:
            self._own_message(message_id)
        except RecordKeyError:
            return 0
        return int(self._store.delete("message", message_id))

    def _own_message(self, message_id: str) -> MessageRecord:
        check_required_id(message_id, "message_id")
        record = self._store.get("message", message_id)
        if not isinstance(record, MessageRecord) or record.thread_id != self._thread_id:
            raise RecordKeyError(f"no message {message_id!r} in thread {self._thread_id!r}",
                                 argument="message_id", record_id=message_id,
                                 record_type="message")
        return record

    # --- search ---------------------------------------------------------------------------
    @observed(THREAD)
    def search(self, /, query: str, *, user_id: Any = NOT_SET_MARKER,
               agent_id: Any = NOT_SET_MARKER, thread_id: Any = NOT_SET_MARKER,
               exact_user_match: Any = NOT_SET_MARKER, exact_agent_match: Any = NOT_SET_MARKER,
               exact_thread_match: Any = NOT_SET_MARKER, max_results: Any = NOT_SET_MARKER,
               token_budget: Any = NOT_SET_MARKER, soft_token_budget: Any = NOT_SET_MARKER,
               record_types: Any = NOT_SET_MARKER, metadata_filter: Any = NOT_SET_MARKER,
               num_hops: Any = NOT_SET_MARKER, max_linked_results: Any = NOT_SET_MARKER,
               include_invalid_results: Any = NOT_SET_MARKER,
               scope: Any = NOT_SET_MARKER) -> builtins.list[SearchResult]:
        """Search with the thread's defaults: its user and agent exactly, this thread ranked
        first but not required."""
        given = given_scope(scope, {
            "user_id": user_id, "agent_id": agent_id, "thread_id": thread_id,
            "exact_user_match": exact_user_match, "exact_agent_match": exact_agent_match,
            "exact_thread_match": exact_thread_match})
        resolved = thread_scope(given, self._user_id, self._agent_id, self._thread_id)
        return search_records(
            self._store.search, query, resolved, config=self._search_config,
            max_results=max_results, token_budget=token_budget,
            soft_token_budget=soft_token_budget, record_types=record_types,
            metadata_filter=metadata_filter, num_hops=num_hops,
            max_linked_results=max_linked_results,
            include_invalid_results=include_invalid_results)

    def _scope(self) -> ThreadScope:
        return ThreadScope(self._thread_id, self._user_id, self._agent_id)

    # --- memories and links in the thread's scope -----------------------------------------
    @observed(THREAD)
    def add_memory(self, /, content: str, *, memory_type: Any = NOT_SET_MARKER,
                   user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
                   thread_id: Any = NOT_SET_MARKER, memory_id: Any = NOT_SET_MARKER,
                   metadata: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
                   ttl_days: Any = NOT_SET_MARKER, ttl_anchor: Any = NOT_SET_MARKER,
                   status: Any = NOT_SET_MARKER, autonomous_linking: Any = NOT_SET_MARKER,
                   memory_id_to_link: Any = NOT_SET_MARKER, link_type: Any = NOT_SET_MARKER,
                   link_id: Any = NOT_SET_MARKER, link_timestamp: Any = NOT_SET_MARKER,
                   link_metadata: Any = NOT_SET_MARKER, **store_kwargs: Any) -> str:
        """Add a memory scoped to this thread, its user and its agent unless told otherwise
        (see :meth:`OracleAgentMemory.add_memory`)."""
        return self._client.add_memory(
            content, memory_type=memory_type, user_id=self._own(user_id, self._user_id),
            agent_id=self._own(agent_id, self._agent_id),
            thread_id=self._own(thread_id, self._thread_id), memory_id=memory_id,
            metadata=metadata, timestamp=timestamp, ttl_days=ttl_days, ttl_anchor=ttl_anchor,
            status=status, autonomous_linking=autonomous_linking,
            memory_id_to_link=memory_id_to_link, link_type=link_type, link_id=link_id,
            link_timestamp=link_timestamp, link_metadata=link_metadata, **store_kwargs)

    @staticmethod
    def _own(given: Any, default: str | None) -> Any:
        """``given``, or the thread's own ``default`` when it was omitted."""
        return default if given is NOT_SET_MARKER else given

    @observed(THREAD)
    def update_memory(self, /, memory_id: str, content: Any = NOT_SET_MARKER,
                      metadata: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
                      ttl_days: Any = NOT_SET_MARKER, ttl_anchor: Any = NOT_SET_MARKER,
                      status: Any = NOT_SET_MARKER, **kwargs: Any) -> str:
        """See :meth:`OracleAgentMemory.update_memory`."""
        return self._client.update_memory(memory_id, content=content, metadata=metadata,
                                          timestamp=timestamp, ttl_days=ttl_days,
                                          ttl_anchor=ttl_anchor, status=status, **kwargs)

    @observed(THREAD)
    def delete_memory(self, /, memory_id: str) -> int:
        """See :meth:`OracleAgentMemory.delete_memory`."""
        return self._client.delete_memory(memory_id)

    @observed(THREAD)
    def link_records(self, /, source_record_id: str, source_record_type: str,
                     target_record_id: str, target_record_type: str, relation_type: str,
                     opposite_relation_type: Any = NOT_SET_MARKER,
                     relation_id: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
                     metadata: Any = NOT_SET_MARKER) -> str:
        """See :meth:`OracleAgentMemory.link_records`."""
        return self._client.link_records(
            source_record_id, source_record_type, target_record_id, target_record_type,
            relation_type, opposite_relation_type=opposite_relation_type,
            relation_id=relation_id, timestamp=timestamp, metadata=metadata)

    @observed(THREAD)
    def update_record_link(self, /, relation_id: str, relation_type: Any = NOT_SET_MARKER,
                           opposite_relation_type: Any = NOT_SET_MARKER,
                           timestamp: Any = NOT_SET_MARKER,
                           metadata: Any = NOT_SET_MARKER) -> int:
        """See :meth:`OracleAgentMemory.update_record_link`."""
        return self._client.update_record_link(
            relation_id, relation_type=relation_type,
            opposite_relation_type=opposite_relation_type, timestamp=timestamp,
            metadata=metadata)

    @observed(THREAD)
    def delete_record_link(self, /, source_record_id: Any = NOT_SET_MARKER,
                           source_record_type: Any = NOT_SET_MARKER,
                           target_record_id: Any = NOT_SET_MARKER,
                           target_record_type: Any = NOT_SET_MARKER,
                           relation_type: Any = NOT_SET_MARKER,
                           relation_id: Any = NOT_SET_MARKER) -> int:
        """See :meth:`OracleAgentMemory.delete_record_link`."""
        return self._client.delete_record_link(
            source_record_id=source_record_id, source_record_type=source_record_type,
            target_record_id=target_record_id, target_record_type=target_record_type,
            relation_type=relation_type, relation_id=relation_id)

    # --- images in the thread's scope --------------------------------------------------------
    @observed(THREAD)
    def add_image(self, /, image: bytes, description: Any = NOT_SET_MARKER,
                  mime_type: Any = NOT_SET_MARKER, image_id: Any = NOT_SET_MARKER,
                  user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
                  thread_id: Any = NOT_SET_MARKER, metadata: Any = NOT_SET_MARKER,
                  timestamp: Any = NOT_SET_MARKER, ttl_days: Any = NOT_SET_MARKER,
                  ttl_anchor: Any = NOT_SET_MARKER, **store_kwargs: Any) -> str:
        """Store an image scoped to this thread, its user and its agent unless told otherwise
        (see :meth:`OracleAgentMemory.add_image`)."""
        return self._client.add_image(
            image, description=description, mime_type=mime_type, image_id=image_id,
            user_id=self._own(user_id, self._user_id),
            agent_id=self._own(agent_id, self._agent_id),
            thread_id=self._own(thread_id, self._thread_id), metadata=metadata,
            timestamp=timestamp, ttl_days=ttl_days, ttl_anchor=ttl_anchor, **store_kwargs)

    @observed(THREAD)
    def list_images(self, /, image_id: Any = NOT_SET_MARKER,
                    metadata_filter: Any = NOT_SET_MARKER, include_bytes: Any = NOT_SET_MARKER,
                    limit: Any = NOT_SET_MARKER) -> builtins.list[ImageRecord]:
        """This thread's images (standalone and message parts), oldest first."""
        return self._client.list_images(image_id=image_id, thread_id=self._thread_id,
                                        user_id=self._user_id, metadata_filter=metadata_filter,
                                        include_bytes=include_bytes, limit=limit)

    @observed(THREAD)
    def update_image(self, /, image_id: str, image: Any = NOT_SET_MARKER,
                     description: Any = NOT_SET_MARKER, mime_type: Any = NOT_SET_MARKER,
                     metadata: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
                     ttl_days: Any = NOT_SET_MARKER, ttl_anchor: Any = NOT_SET_MARKER,
                     **kwargs: Any) -> str:
        """See :meth:`OracleAgentMemory.update_image`."""
        return self._client.update_image(image_id, image=image, description=description,
                                         mime_type=mime_type, metadata=metadata,
                                         timestamp=timestamp, ttl_days=ttl_days,
                                         ttl_anchor=ttl_anchor, **kwargs)

    @observed(THREAD)
    def delete_image(self, /, image_id: str) -> int:
        """See :meth:`OracleAgentMemory.delete_image`."""
        return self._client.delete_image(image_id)

    add_messages_async = AsyncTwin(add_messages)
    add_image_async = AsyncTwin(add_image)
    list_images_async = AsyncTwin(list_images)
    update_image_async = AsyncTwin(update_image)
    delete_image_async = AsyncTwin(delete_image)
    wait_for_memory_extraction_async = AsyncTwin(wait_for_memory_extraction)

    async def get_messages_async(self, start: Any = NOT_SET_MARKER, end: Any = NOT_SET_MARKER,
                                 include_image_bytes: Any = NOT_SET_MARKER
                                 ) -> builtins.list[Message]:
        """Asynchronous :meth:`get_messages` (runs it in a worker thread). Here ``start``,
        ``end`` and ``include_image_bytes`` may also come by position, as Oracle's package
        takes them in its twin (``await thread.get_messages_async(0, 10)``)."""
        return await asyncio.to_thread(functools.partial(
            self.get_messages, start=start, end=end, include_image_bytes=include_image_bytes))

    get_message_async = AsyncTwin(get_message)
    update_message_async = AsyncTwin(update_message)
    delete_message_async = AsyncTwin(delete_message)
    search_async = AsyncTwin(search)
    add_memory_async = AsyncTwin(add_memory)
    update_memory_async = AsyncTwin(update_memory)
    delete_memory_async = AsyncTwin(delete_memory)
    link_records_async = AsyncTwin(link_records)
    update_record_link_async = AsyncTwin(update_record_link)
    delete_record_link_async = AsyncTwin(delete_record_link)

