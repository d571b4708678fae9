"""``OracleAgentMemory``: the agent-memory client over a store (threads, memories, profiles,
relations and search)."""

from __future__ import annotations

import builtins
import logging
from contextlib import AbstractContextManager
from typing import Any
from uuid import uuid4

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.agentmemory import IAgentMemory
from oracleagentmemory.apis.asynctwin import AsyncTwin
from oracleagentmemory.apis.keyset import OlderThan
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT
from oracleagentmemory.apis.records import (
    MEMORY_TYPES,
    AgentProfileRecord,
    MemoryRecord,
    MessageRecord,
    Record,
    ThreadRecord,
    UserProfileRecord,
)
from oracleagentmemory.apis.searchconfig import ISearchConfig
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.core._background import BackgroundWork, WorkKey
from oracleagentmemory.core._client_images import ClientImages
from oracleagentmemory.core._client_search import (
    client_scope,
    given_scope,
    search_records,
)
from oracleagentmemory.core._extraction import StoredMemory, ThreadScope, link_memories
from oracleagentmemory.core._thread_settings import (
    ThreadOverrides,
    ThreadSettings,
    parse_overrides,
    resolve_settings,
    saved_payload,
)
from oracleagentmemory.core._validation import check_required_id, parse_timestamp
from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
from oracleagentmemory.core.memoryextraction import ResolvedExtraction, resolve_extraction
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore
from oracleagentmemory.core.searchconfig import PruningMemorySearchConfig
from oracleagentmemory.core.storebase import OracleMemoryStore
from oracleagentmemory.core.thread import OracleThread
from oracleagentmemory.engines.interfaces import UNSET
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OperationTimeoutError,
    RecordKeyError,
)
from oracleagentmemory.observability._operation import AGENT_MEMORY, observed

LOG = logging.getLogger("oracleagentmemory.client")
DELETE_WAIT_SECONDS = 300.0
"""How long a delete waits for earlier background extraction of the threads it removes."""

_STORE_OPTIONS = ("schema_policy", "memory_store_id", "table_name_prefix", "schema_owner",
                  "search_strategy", "search_index_sync", "memory_retention_config")


class OracleAgentMemory(ClientImages, IAgentMemory):
    """The agent-memory client: threads and their messages, memories, user and agent profiles,
    relations and search, over an :class:`OracleDBMemoryStore` (built from ``connection``) or a
    caller's ``store``.

    All arguments are keyword-only; see the spec's "Agent Memory" page. Store options
    (``schema_policy``, ``memory_store_id``, ...) apply only when the client builds the store.

    Raises:
        InvalidArgumentError: neither or both of ``store`` and ``connection``, or a store option
            given with ``store``.
    """

    def __init__(self, *, store: Any = NOT_SET_MARKER, connection: Any = NOT_SET_MARKER,
                 embedder: Any = NOT_SET_MARKER, llm: Any = NOT_SET_MARKER,
                 memory_extraction_config: Any = NOT_SET_MARKER,
                 image_input_limit_config: Any = NOT_SET_MARKER,
                 schema_policy: Any = NOT_SET_MARKER, memory_store_id: Any = NOT_SET_MARKER,
                 table_name_prefix: Any = NOT_SET_MARKER, schema_owner: Any = NOT_SET_MARKER,
                 search_strategy: Any = NOT_SET_MARKER, search_index_sync: Any = NOT_SET_MARKER,
                 extract_memories: Any = NOT_SET_MARKER,
                 memory_extraction_custom_instructions: Any = NOT_SET_MARKER,
                 memory_retention_config: Any = NOT_SET_MARKER,
                 search_config: Any = NOT_SET_MARKER, pruner_llm: Any = NOT_SET_MARKER) -> None:
        options = {"schema_policy": schema_policy, "memory_store_id": memory_store_id,
                   "table_name_prefix": table_name_prefix, "schema_owner": schema_owner,
                   "search_strategy": search_strategy, "search_index_sync": search_index_sync,
                   "memory_retention_config": memory_retention_config}
        given_options = {k: v for k, v in options.items() if v is not NOT_SET_MARKER}
        if store is not NOT_SET_MARKER:
            if connection is not NOT_SET_MARKER:
                raise InvalidArgumentError("pass either store or connection, not both",
                                           argument="store")
            if not isinstance(store, OracleMemoryStore):
                raise InvalidArgumentTypeError("store must be an OracleMemoryStore",
                                               argument="store")
            if given_options:
                raise InvalidArgumentError(
                    f"{sorted(given_options)[0]} applies only when the client builds its store "
                    "from connection; configure the store instead",
                    argument=sorted(given_options)[0])
            self._store: Any = store
            self._owns_store = False
        elif connection is NOT_SET_MARKER:
            raise InvalidArgumentError("pass connection (a database connection or pool) or "
                                       "store", argument="connection")
        else:
            self._store = OracleDBMemoryStore(
                None if embedder is NOT_SET_MARKER else embedder, connection, **given_options)
            self._owns_store = True
        self._llm = None if llm is NOT_SET_MARKER else llm
        self._pruner_llm = None if pruner_llm is NOT_SET_MARKER else pruner_llm
        if search_config is NOT_SET_MARKER:
            search_config = None if self._pruner_llm is None else PruningMemorySearchConfig(
                pruner=self._pruner_llm)
        elif search_config is not None and not isinstance(search_config, ISearchConfig):
            raise InvalidArgumentTypeError("search_config must be a MemorySearchConfig",
                                           argument="search_config")
        self._search_config = search_config
        self._client_layer = parse_overrides(
            memory_extraction_config, image_input_limit_config,
            extract_memories=extract_memories,
            memory_extraction_custom_instructions=memory_extraction_custom_instructions)
        self._closed = False
        self._background = BackgroundWork()

    @property
    def store(self) -> Any:
        """The store this client reads and writes."""
        return self._store

    def transaction(self) -> AbstractContextManager[None]:
        """A unit of work (an extension of the spec): every store operation of this client
        inside ``with client.transaction(): ...`` runs in one transaction of its store, which
        commits when the block ends and rolls back when it raises; nested blocks join it.

        See :meth:`OracleDBMemoryStore.transaction`. Work the client hands to its background
        queue (memory extraction) runs later, in its own transactions.
        """
        return self._store.transaction()  # type: ignore[no-any-return]

    # --- lifetime -------------------------------------------------------------------------
    def close(self, /, timeout: float | None = 300.0) -> None:
        """Stop accepting background work, wait for what was accepted (up to ``timeout``
        seconds; it returns even if some is unfinished), release the store the client built.
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._background.close(timeout):
            LOG.warning("closing with background work still running after %s s", timeout)
        if self._owns_store:
            self._store.close()

    def wait_for_memory_extraction(self, /, timeout: float | None = 300.0) -> None:
        """Wait up to ``timeout`` seconds for the background extraction this client accepted
        before the call (failed work counts as finished)."""
        self._background.wait(None, timeout)

    def _end_user(self) -> str | None:
        """The end user this call runs as (``NO_CHECK`` stores), else ``None``."""
        user = self._store._default_user_id()
        return None if user is NOT_SET_MARKER else str(user)

    def _work_key(self, thread_id: str) -> WorkKey:
        """The key of the calling end user's work on ``thread_id``."""
        return (self._end_user(), thread_id)

    def _wait_for_owner(self, what: str, **owner: str) -> None:
        """Before deleting a user or agent: wait up to 300 s for the calling end user's accepted
        work on threads of that user or agent."""
        if not self._background.wait(None, DELETE_WAIT_SECONDS, end_user=self._end_user(),
                                     **owner):
            raise OperationTimeoutError(
                f"{what} not deleted: earlier background extraction did not finish within "
                f"{DELETE_WAIT_SECONDS:g} s")

    def _wait_for_threads(self, thread_ids: builtins.list[str], what: str) -> None:
        """Before deleting: wait up to 300 s for the calling end user's accepted work on these
        threads (never for another end user's)."""
        keys = [self._work_key(t) for t in thread_ids]
        if keys and not self._background.wait(keys, DELETE_WAIT_SECONDS):
            raise OperationTimeoutError(
                f"{what} not deleted: earlier background extraction did not finish within "
                f"{DELETE_WAIT_SECONDS:g} s")

    def __enter__(self) -> OracleAgentMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- threads --------------------------------------------------------------------------
    @observed(AGENT_MEMORY)
    def create_thread(self, /, *, thread_id: Any = NOT_SET_MARKER, user_id: Any = NOT_SET_MARKER,
                      agent_id: Any = NOT_SET_MARKER, metadata: Any = NOT_SET_MARKER,
                      llm: Any = NOT_SET_MARKER, max_message_token_length: Any = NOT_SET_MARKER,
                      message_shortening_input_token_limit: Any = NOT_SET_MARKER,
                      memory_extraction_config: Any = NOT_SET_MARKER,
                      image_input_limit_config: Any = NOT_SET_MARKER,
                      search_config: Any = NOT_SET_MARKER,
                      context_card_token_limit: Any = NOT_SET_MARKER,
                      context_card_type_search_concurrency: Any = NOT_SET_MARKER,
                      extract_memories: Any = NOT_SET_MARKER,
                      memory_extraction_window: Any = NOT_SET_MARKER,
                      context_summary_update_frequency: Any = NOT_SET_MARKER,
                      memory_extraction_frequency: Any = NOT_SET_MARKER,
                      memory_extraction_token_limit: Any = NOT_SET_MARKER,
                      memory_extraction_custom_instructions: Any = NOT_SET_MARKER,
                      memory_extraction_inherit_message_metadata: Any = NOT_SET_MARKER,
                      enable_context_summary: Any = NOT_SET_MARKER,
                      **kwargs: Any) -> OracleThread:
        """Create and store a thread; the settings given here are saved with it (``kwargs``: the
        other :class:`MemoryExtractionConfig` fields, one by one).

        Omitted ids are generated (an omitted ``user_id`` is the end user of the active context
        in a ``NO_CHECK`` store).
        """
        overrides = parse_overrides(
            max_message_token_length=max_message_token_length,
            message_shortening_input_token_limit=message_shortening_input_token_limit,
            memory_extraction_config=memory_extraction_config,
            image_input_limit_config=image_input_limit_config,
            context_card_token_limit=context_card_token_limit,
            context_card_type_search_concurrency=context_card_type_search_concurrency,
            extract_memories=extract_memories, memory_extraction_window=memory_extraction_window,
            context_summary_update_frequency=context_summary_update_frequency,
            memory_extraction_frequency=memory_extraction_frequency,
            memory_extraction_token_limit=memory_extraction_token_limit,
            memory_extraction_custom_instructions=memory_extraction_custom_instructions,
            memory_extraction_inherit_message_metadata=memory_extraction_inherit_message_metadata,
            enable_context_summary=enable_context_summary, **kwargs)
        thread_id = uuid4().hex if thread_id is NOT_SET_MARKER else check_required_id(
            thread_id, "thread_id")
        if user_id is NOT_SET_MARKER:
            user_id = self._store._default_user_id()
            if user_id is NOT_SET_MARKER:
                user_id = uuid4().hex
        agent_id = uuid4().hex if agent_id is NOT_SET_MARKER else agent_id
        for name, value in (("user_id", user_id), ("agent_id", agent_id)):
            if value is not None:
                check_required_id(value, name)
        metadata = None if metadata is NOT_SET_MARKER else metadata
        thread_llm = self._llm if llm is NOT_SET_MARKER else llm
        runtime = saved_payload(None, overrides)
        settings_now = resolve_settings(overrides, runtime, self._client_layer)
        self._check_extraction(settings_now, thread_llm)
        self._store._create_thread(thread_id, user_id, agent_id, metadata, runtime or None)
        return OracleThread._open(self, thread_id, user_id, agent_id, metadata, settings_now,
                            thread_llm, self._pick_search_config(search_config))

    @observed(AGENT_MEMORY)
    def get_thread(self, /, thread_id: str, *, llm: Any = NOT_SET_MARKER,
                   max_message_token_length: Any = NOT_SET_MARKER,
                   message_shortening_input_token_limit: Any = NOT_SET_MARKER,
                   memory_extraction_config: Any = NOT_SET_MARKER,
                   image_input_limit_config: Any = NOT_SET_MARKER,
                   search_config: Any = NOT_SET_MARKER,
                   context_card_token_limit: Any = NOT_SET_MARKER,
                   context_card_type_search_concurrency: Any = NOT_SET_MARKER,
                   extract_memories: Any = NOT_SET_MARKER,
                   memory_extraction_window: Any = NOT_SET_MARKER,
                   context_summary_update_frequency: Any = NOT_SET_MARKER,
                   memory_extraction_frequency: Any = NOT_SET_MARKER,
                   memory_extraction_token_limit: Any = NOT_SET_MARKER,
                   memory_extraction_custom_instructions: Any = NOT_SET_MARKER,
                   memory_extraction_inherit_message_metadata: Any = NOT_SET_MARKER,
                   enable_context_summary: Any = NOT_SET_MARKER,
                   **settings: Any) -> OracleThread:
        """Open a stored thread; settings given here apply to the returned object only
        (``settings``: the other :class:`MemoryExtractionConfig` fields, one by one).

        Raises:
            RecordKeyError: (a ``KeyError``) no such visible thread.
        """
        record = self._thread_record(thread_id)
        overrides = parse_overrides(
            max_message_token_length=max_message_token_length,
            message_shortening_input_token_limit=message_shortening_input_token_limit,
            memory_extraction_config=memory_extraction_config,
            image_input_limit_config=image_input_limit_config,
            context_card_token_limit=context_card_token_limit,
            context_card_type_search_concurrency=context_card_type_search_concurrency,
            extract_memories=extract_memories, memory_extraction_window=memory_extraction_window,
            context_summary_update_frequency=context_summary_update_frequency,
            memory_extraction_frequency=memory_extraction_frequency,
            memory_extraction_token_limit=memory_extraction_token_limit,
            memory_extraction_custom_instructions=memory_extraction_custom_instructions,
            memory_extraction_inherit_message_metadata=memory_extraction_inherit_message_metadata,
            enable_context_summary=enable_context_summary, **settings)
        return self._open(record, overrides, llm, search_config)

    @observed(AGENT_MEMORY)
    def update_thread(self, /, thread_id: str, metadata: Any = NOT_SET_MARKER,
                      llm: Any = NOT_SET_MARKER, extract_memories: Any = NOT_SET_MARKER,
                      max_message_token_length: Any = NOT_SET_MARKER,
                      message_shortening_input_token_limit: Any = NOT_SET_MARKER,
                      memory_extraction_window: Any = NOT_SET_MARKER,
                      context_summary_update_frequency: Any = NOT_SET_MARKER,
                      memory_extraction_frequency: Any = NOT_SET_MARKER,
                      memory_extraction_token_limit: Any = NOT_SET_MARKER,
                      context_card_token_limit: Any = NOT_SET_MARKER,
                      enable_context_summary: Any = NOT_SET_MARKER,
                      memory_extraction_custom_instructions: Any = NOT_SET_MARKER,
                      memory_extraction_inherit_message_metadata: Any = NOT_SET_MARKER,
                      memory_extraction_config: Any = NOT_SET_MARKER,
                      image_input_limit_config: Any = NOT_SET_MARKER,
                      search_config: Any = NOT_SET_MARKER, **kwargs: Any) -> OracleThread:
        """Save new metadata (replaced whole) and/or runtime settings of a stored thread; the
        user and agent do not change. Returns the thread opened with the saved settings
        (``kwargs``: ``context_card_type_search_concurrency`` and the other
        :class:`MemoryExtractionConfig` fields, one by one).

        Raises:
            RecordKeyError: (a ``KeyError``) no such visible thread.
        """
        overrides = parse_overrides(
            extract_memories=extract_memories, max_message_token_length=max_message_token_length,
            message_shortening_input_token_limit=message_shortening_input_token_limit,
            memory_extraction_window=memory_extraction_window,
            context_summary_update_frequency=context_summary_update_frequency,
            memory_extraction_frequency=memory_extraction_frequency,
            memory_extraction_token_limit=memory_extraction_token_limit,
            context_card_token_limit=context_card_token_limit,
            enable_context_summary=enable_context_summary,
            memory_extraction_custom_instructions=memory_extraction_custom_instructions,
            memory_extraction_inherit_message_metadata=memory_extraction_inherit_message_metadata,
            memory_extraction_config=memory_extraction_config,
            image_input_limit_config=image_input_limit_config, **kwargs)
        record = self._thread_record(thread_id)
        runtime = saved_payload(record.runtime_config, overrides)
        changed = self._store._update_thread(
            thread_id, metadata=UNSET if metadata is NOT_SET_MARKER else metadata,
            runtime_config=runtime if runtime != (record.runtime_config or {}) else UNSET)
        if not changed:
            raise RecordKeyError(f"no thread {thread_id!r}", argument="thread_id",
                                 record_id=thread_id, record_type="thread")
        return self._open(self._thread_record(thread_id), ThreadOverrides({}, None, None), llm,
                          search_config)

    @observed(AGENT_MEMORY)
    def list_threads(self, /, user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
                     metadata_filter: Any = NOT_SET_MARKER,
                     limit: Any = NOT_SET_MARKER, *,
                     older_than: OlderThan | None = None) -> builtins.list[ThreadRecord]:
        """The most recent visible threads of a user (and agent), oldest first; ``older_than``
        (an extension, see :class:`~oracleagentmemory.apis.keyset.OlderThan`) pages them by
        ``(timestamp, id)``."""
        if user_id is NOT_SET_MARKER:
            user_id = self._store._default_user_id()
            if user_id is NOT_SET_MARKER:
                raise InvalidArgumentError("user_id is required", argument="user_id")
        records = self._store.list("thread", limit=limit, user_id=user_id, agent_id=agent_id,
                                   metadata_filter=metadata_filter, older_than=older_than)
        return [r for r in records if isinstance(r, ThreadRecord)]

    @observed(AGENT_MEMORY)
    def delete_thread(self, /, thread_id: str) -> int:
        """Delete a thread with its messages, memories, summaries and retrieval rows, after the
        thread's earlier background extraction (through this client) has finished."""
        check_required_id(thread_id, "thread_id")
        self._wait_for_threads([thread_id], f"thread {thread_id!r}")
        return int(self._store.delete_thread(thread_id))

    def _thread_record(self, thread_id: str) -> ThreadRecord:
        check_required_id(thread_id, "thread_id")
        record = self._store.get("thread", thread_id)
        if not isinstance(record, ThreadRecord):
            raise RecordKeyError(f"no thread {thread_id!r}", argument="thread_id",
                                 record_id=thread_id, record_type="thread")
        return record

    def _open(self, record: ThreadRecord, overrides: ThreadOverrides, llm: Any,
              search_config: Any) -> OracleThread:
        settings = resolve_settings(overrides, record.runtime_config, self._client_layer)
        thread_llm = self._llm if llm is NOT_SET_MARKER else llm
        self._check_extraction(settings, thread_llm)
        metadata = record.metadata if isinstance(record.metadata, dict) else None
        return OracleThread._open(self, record.id, record.user_id, record.agent_id, metadata,
                                  settings, thread_llm, self._pick_search_config(search_config))

    def _check_extraction(self, settings: ThreadSettings, llm: Any) -> None:
        if settings.extraction.extract_memories and llm is None:
            raise InvalidArgumentError(
                "automatic memory extraction needs an llm: pass llm=..., or "
                "memory_extraction_config=MemoryExtractionConfig(extract_memories=False)",
                argument="llm")

    def _pick_search_config(self, search_config: Any) -> Any:
        return self._search_config if search_config is NOT_SET_MARKER else search_config

    # --- user and agent profiles ----------------------------------------------------------
    @observed(AGENT_MEMORY)
    def add_user(self, /, user_id: str, information: str, metadata: Any = NOT_SET_MARKER) -> str:
        """Add a user profile (unscoped); returns the user id."""
        return str(self._store.add_user(user_id, information, metadata))

    @observed(AGENT_MEMORY)
    def add_agent(self, /, agent_id: str, information: str, metadata: Any = NOT_SET_MARKER) -> str:
        """Add an agent profile (unscoped); returns the agent id."""
        return str(self._store.add_agent(agent_id, information, metadata))

    @observed(AGENT_MEMORY)
    def list_users(self, /, metadata_filter: Any = NOT_SET_MARKER,
                   limit: Any = NOT_SET_MARKER) -> builtins.list[UserProfileRecord]:
        """Visible user profiles, oldest first."""
        return [r for r in self._store.list("user_profile", limit=limit,
                                            metadata_filter=metadata_filter)
                if isinstance(r, UserProfileRecord)]

    @observed(AGENT_MEMORY)
    def list_agents(self, /, metadata_filter: Any = NOT_SET_MARKER,
                    limit: Any = NOT_SET_MARKER) -> builtins.list[AgentProfileRecord]:
        """Visible agent profiles, oldest first."""
        return [r for r in self._store.list("agent_profile", limit=limit,
                                            metadata_filter=metadata_filter)
                if isinstance(r, AgentProfileRecord)]

    @observed(AGENT_MEMORY)
    def delete_user(self, /, user_id: str, cascade: bool = True) -> int:
        """Delete a user profile; ``cascade`` also deletes the user's threads, messages and
        memories, in one transaction (after the background extraction of the user's known
        threads)."""
        check_required_id(user_id, "user_id")
        self._wait_for_owner(f"user {user_id!r}", user_id=user_id)
        return int(self._store.delete("user_profile", user_id, cascade=cascade))

    @observed(AGENT_MEMORY)
    def delete_agent(self, /, agent_id: str, cascade: bool = True) -> int:
        """Delete an agent profile; ``cascade`` also deletes the agent's scoped records (after
        the background extraction of the agent's known threads)."""
        check_required_id(agent_id, "agent_id")
        self._wait_for_owner(f"agent {agent_id!r}", agent_id=agent_id)
        return int(self._store.delete("agent_profile", agent_id, cascade=cascade))

    # --- memories -------------------------------------------------------------------------
    @observed(AGENT_MEMORY)
    def add_memory(self, /, content: str, *, memory_type: Any = NOT_SET_MARKER,
                   user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
                   thread_id: Any = NOT_SET_MARKER, memory_id: Any = NOT_SET_MARKER,
                   metadata: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
                   ttl_days: Any = NOT_SET_MARKER, ttl_anchor: Any = NOT_SET_MARKER,
                   status: Any = NOT_SET_MARKER, autonomous_linking: Any = NOT_SET_MARKER,
                   memory_id_to_link: Any = NOT_SET_MARKER, link_type: Any = NOT_SET_MARKER,
                   link_id: Any = NOT_SET_MARKER, link_timestamp: Any = NOT_SET_MARKER,
                   link_metadata: Any = NOT_SET_MARKER, **store_kwargs: Any) -> str:
        """Add one memory (``memory_type``: memory, fact, guideline or preference); with
        ``memory_id_to_link`` and ``link_type`` also link it to that memory. Returns its id."""
        if not isinstance(content, str):
            raise InvalidArgumentTypeError("content must be a str", argument="content")
        record_type = "memory" if memory_type is NOT_SET_MARKER else memory_type
        if record_type not in MEMORY_TYPES:
            raise InvalidArgumentError(
                f"memory_type must be one of {sorted(MEMORY_TYPES)}, got {memory_type!r}",
                argument="memory_type")
        if (memory_id_to_link is NOT_SET_MARKER) != (link_type is NOT_SET_MARKER):
            raise InvalidArgumentError("memory_id_to_link and link_type go together",
                                       argument="memory_id_to_link")
        if autonomous_linking is not NOT_SET_MARKER and not isinstance(autonomous_linking,
                                                                       bool):
            raise InvalidArgumentTypeError("autonomous_linking must be a bool",
                                           argument="autonomous_linking")
        if autonomous_linking is True and self._llm is None:
            raise InvalidArgumentError("autonomous_linking=True needs the client's llm",
                                       argument="autonomous_linking")
        link_autonomously = self._llm is not None and autonomous_linking is not False
        target: Record | None = None
        if memory_id_to_link is not NOT_SET_MARKER:
            target = self._memory(memory_id_to_link, "memory_id_to_link")
            scoped = {"user_id": user_id, "agent_id": agent_id, "thread_id": thread_id}
            user_id, agent_id, thread_id = (
                getattr(target, k) if v is NOT_SET_MARKER else v for k, v in scoped.items())
        columns = {"record_ids": _one(memory_id), "user_ids": _one(user_id),
                   "agent_ids": _one(agent_id), "thread_ids": _one(thread_id),
                   "metadata": _one(metadata), "timestamps": _one(timestamp),
                   "ttl_days": _one(ttl_days), "ttl_anchor": _one(ttl_anchor),
                   "statuses": _one(status)}
        if target is None:
            new_id = str(self._store.add([content], record_type, **columns, **store_kwargs)[0])
        else:  # the memory and its link in one transaction: a refused link stores nothing
            if store_kwargs:
                raise InvalidArgumentTypeError(
                    f"unexpected store options with memory_id_to_link: "
                    f"{', '.join(sorted(store_kwargs))}")
            new_id = str(self._store._add_linked(content, record_type, columns, {
                "target_record_ids": target.id, "target_record_types": target.record_type,
                "relation_types": link_type, "opposite_relation_types": NOT_SET_MARKER,
                "relation_ids": _one(link_id),
                "timestamps": _one(link_timestamp), "metadata": _one(link_metadata)}))
        if link_autonomously:
            self._link_new_memory(new_id, record_type, content)
        return new_id

    def _image_limits(self) -> ImageInputLimitConfig:
        """The client's image limits (its layer over the SDK maxima)."""
        return (self._client_layer.image_limits or ImageInputLimitConfig()).resolved()

    def _client_settings(self) -> ResolvedExtraction:
        """The client's extraction settings (its layer over the SDK defaults)."""
        return resolve_extraction(self._client_layer.extraction)

    def _link_new_memory(self, memory_id: str, record_type: str, content: str) -> None:
        """Autonomous linking: best effort, the memory stays stored whatever happens."""
        if self._llm is None:
            return
        stored = self._store.get(record_type, memory_id)
        scope = ThreadScope(str(getattr(stored, "thread_id", "") or ""),
                            getattr(stored, "user_id", None), None)
        settings = resolve_extraction(self._client_layer.extraction)
        try:
            link_memories(self._store, self._llm, scope,
                          [StoredMemory(memory_id, record_type, content)],
                          settings.memory_link_extraction_token_limit,
                          settings.memory_link_extraction_custom_instructions)
        except Exception:
            LOG.warning("autonomous linking of memory %r failed", memory_id, exc_info=True)

    @observed(AGENT_MEMORY)
    def update_memory(self, /, memory_id: str, content: Any = NOT_SET_MARKER,
                      metadata: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
                      ttl_days: Any = NOT_SET_MARKER, ttl_anchor: Any = NOT_SET_MARKER,
                      status: Any = NOT_SET_MARKER, **kwargs: Any) -> str:
        """Change a memory; omitted fields are kept, metadata is replaced whole and the scope
        never changes. Returns its id.

        Raises:
            RecordKeyError: (a ``KeyError``) no such visible memory.
        """
        if kwargs:
            raise InvalidArgumentTypeError(f"unexpected arguments: {', '.join(sorted(kwargs))}")
        record = self._memory(memory_id, "memory_id")
        self._store.update(record.record_type, memory_id, content=content, metadata=metadata,
                           timestamp=timestamp, ttl_days=ttl_days, ttl_anchor=ttl_anchor,
                           status=status)
        return memory_id

    @observed(AGENT_MEMORY)
    def delete_memory(self, /, memory_id: str) -> int:
        """Delete a memory with its retrieval rows and relations; 0 when there is none."""
        try:
            record = self._memory(memory_id, "memory_id")
        except RecordKeyError:
            return 0
        thread_id = getattr(record, "thread_id", None)
        if thread_id is not None:
            self._wait_for_threads([thread_id], f"memory {memory_id!r}")
        return int(self._store.delete(record.record_type, memory_id))

    @observed(AGENT_MEMORY)
    def list_memories(self, /, user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
                      thread_id: Any = NOT_SET_MARKER, metadata_filter: Any = NOT_SET_MARKER,
                      limit: Any = NOT_SET_MARKER, *,
                      older_than: OlderThan | None = None) -> builtins.list[MemoryRecord]:
        """The most recent visible memories of every memory type, oldest first;
        ``older_than`` (an extension, see :class:`~oracleagentmemory.apis.keyset.OlderThan`)
        pages them by ``(timestamp, id)``."""
        cap = MAX_LIST_LIMIT if limit is NOT_SET_MARKER else limit
        found: list[MemoryRecord] = []
        for record_type in sorted(MEMORY_TYPES):
            found.extend(r for r in self._store.list(
                record_type, limit=cap, user_id=user_id, agent_id=agent_id,
                thread_id=thread_id, metadata_filter=metadata_filter, older_than=older_than)
                if isinstance(r, MemoryRecord))
        if older_than is None:
            found.sort(key=lambda r: (r.timestamp or "", r.id))
        else:  # the engines' keyset order: by time, then by id's code points
            found.sort(key=lambda r: (parse_timestamp(r.timestamp, "timestamp"), r.id))
        return found if cap is None else found[-cap:] if cap else []

    @observed(AGENT_MEMORY)
    def list_messages(self, /, user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
                      thread_id: Any = NOT_SET_MARKER, metadata_filter: Any = NOT_SET_MARKER,
                      limit: Any = NOT_SET_MARKER,
                      include_image_bytes: Any = NOT_SET_MARKER) -> builtins.list[MessageRecord]:
        """The most recent visible messages, oldest first."""
        return [r for r in self._store.list("message", limit=limit, user_id=user_id,
                                            agent_id=agent_id, thread_id=thread_id,
                                            metadata_filter=metadata_filter)
                if isinstance(r, MessageRecord)]

    @observed(AGENT_MEMORY)
    def get_memory(self, /, memory_id: str) -> MemoryRecord:
        """The visible memory ``memory_id``, of any memory type (an extension of the spec): the
        caller's own before a global one of the same id.

        Raises:
            RecordKeyError: (a ``KeyError``) no such visible memory.
        """
        return self._memory(memory_id, "memory_id")

    def _memory(self, memory_id: object, argument: str) -> MemoryRecord:
        check_required_id(memory_id, argument)
        record = self._store._memory_record(memory_id)
        if isinstance(record, MemoryRecord):
            return record
        raise RecordKeyError(f"no memory {memory_id!r}", argument=argument,
                             record_id=str(memory_id), record_type="memory")

    # --- relations ------------------------------------------------------------------------
    @observed(AGENT_MEMORY)
    def link_records(self, /, source_record_id: str, source_record_type: str,
                     target_record_id: str, target_record_type: str, relation_type: str,
                     opposite_relation_type: Any = NOT_SET_MARKER,
                     relation_id: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
                     metadata: Any = NOT_SET_MARKER) -> str:
        """Create one directed relation between two memories; returns its id."""
        ids = self._store.add_relations(
            source_record_id, source_record_type, target_record_id, target_record_type,
            relation_type, opposite_relation_types=opposite_relation_type,
            relation_ids=_one(relation_id), timestamps=_one(timestamp),
            metadata=_one(metadata))
        return str(ids[0])

    @observed(AGENT_MEMORY)
    def update_record_link(self, /, relation_id: str, relation_type: Any = NOT_SET_MARKER,
                           opposite_relation_type: Any = NOT_SET_MARKER,
                           timestamp: Any = NOT_SET_MARKER,
                           metadata: Any = NOT_SET_MARKER) -> int:
        """Change one relation's type, reverse label, timestamp or metadata; 1 if it exists."""
        check_required_id(relation_id, "relation_id")
        return len(self._store.update_relations(
            relation_id, relation_types=relation_type,
            opposite_relation_types=opposite_relation_type, timestamps=timestamp,
            metadata=metadata))

    @observed(AGENT_MEMORY)
    def delete_record_link(self, /, source_record_id: Any = NOT_SET_MARKER,
                           source_record_type: Any = NOT_SET_MARKER,
                           target_record_id: Any = NOT_SET_MARKER,
                           target_record_type: Any = NOT_SET_MARKER,
                           relation_type: Any = NOT_SET_MARKER,
                           relation_id: Any = NOT_SET_MARKER) -> int:
        """Delete one relation by id or by its complete endpoint tuple; 1 if it existed."""
        relation = self._store.get_relation(
            source_record_id, source_record_type, target_record_id, target_record_type,
            relation_type, relation_id)
        return 0 if relation is None else int(self._store.delete_relations(relation.id))

    # --- search ---------------------------------------------------------------------------
    @observed(AGENT_MEMORY)
    def search(self, /, query: str, *, user_id: Any = NOT_SET_MARKER,
               agent_id: Any = NOT_SET_MARKER, thread_id: Any = NOT_SET_MARKER,
               exact_user_match: Any = NOT_SET_MARKER, exact_agent_match: Any = NOT_SET_MARKER,
               exact_thread_match: Any = NOT_SET_MARKER, max_results: Any = NOT_SET_MARKER,
               token_budget: Any = NOT_SET_MARKER, soft_token_budget: Any = NOT_SET_MARKER,
               record_types: Any = NOT_SET_MARKER, metadata_filter: Any = NOT_SET_MARKER,
               num_hops: Any = NOT_SET_MARKER, max_linked_results: Any = NOT_SET_MARKER,
               include_invalid_results: Any = NOT_SET_MARKER,
               scope: Any = NOT_SET_MARKER) -> builtins.list[SearchResult]:
        """Search one user's records (``user_id`` explicit and exact; ``None``: only records
        without a user), ranked by relevance; at most ``max_results`` (default 10)."""
        given = given_scope(scope, {
            "user_id": user_id, "agent_id": agent_id, "thread_id": thread_id,
            "exact_user_match": exact_user_match, "exact_agent_match": exact_agent_match,
            "exact_thread_match": exact_thread_match})
        resolved = client_scope(given, self._store._default_user_id())
        return search_records(
            self._store.search, query, resolved, config=self._search_config,
            max_results=max_results, token_budget=token_budget,
            soft_token_budget=soft_token_budget, record_types=record_types,
            metadata_filter=metadata_filter, num_hops=num_hops,
            max_linked_results=max_linked_results,
            include_invalid_results=include_invalid_results)

    close_async = AsyncTwin(close)
    wait_for_memory_extraction_async = AsyncTwin(wait_for_memory_extraction)
    create_thread_async = AsyncTwin(create_thread)
    get_thread_async = AsyncTwin(get_thread)
    update_thread_async = AsyncTwin(update_thread)
    list_threads_async = AsyncTwin(list_threads)
    delete_thread_async = AsyncTwin(delete_thread)
    add_user_async = AsyncTwin(add_user)
    add_agent_async = AsyncTwin(add_agent)
    list_users_async = AsyncTwin(list_users)
    list_agents_async = AsyncTwin(list_agents)
    delete_user_async = AsyncTwin(delete_user)
    delete_agent_async = AsyncTwin(delete_agent)
    add_memory_async = AsyncTwin(add_memory)
    update_memory_async = AsyncTwin(update_memory)
    delete_memory_async = AsyncTwin(delete_memory)
    get_memory_async = AsyncTwin(get_memory)
    list_memories_async = AsyncTwin(list_memories)
    list_messages_async = AsyncTwin(list_messages)
    link_records_async = AsyncTwin(link_records)
    update_record_link_async = AsyncTwin(update_record_link)
    delete_record_link_async = AsyncTwin(delete_record_link)
    search_async = AsyncTwin(search)
    add_image_async = AsyncTwin(ClientImages.add_image)
    list_images_async = AsyncTwin(ClientImages.list_images)
    update_image_async = AsyncTwin(ClientImages.update_image)
    delete_image_async = AsyncTwin(ClientImages.delete_image)


def _one(value: Any) -> Any:
    """A single value as a one-element column, keeping ``NOT_SET_MARKER`` as omitted."""
    return value if isinstance(value, _NotSetMarker) else [value]
