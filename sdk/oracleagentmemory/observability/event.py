"""The events the SDK emits around its operations (``oracleagentmemory.observability.event``).

Every observed operation emits one *started* event as it begins and one *completed* event as it
ends, successful or not; the completed event names its started event (``started_event_id``),
which pairs them whatever else runs at the same time. The event types and fields are those of
Oracle's ``oracleagentmemory`` 26.8; ``duration_seconds`` on completed events is ours.

Fields that may hold contents (texts, queries, prompts, vectors, metadata, raw arguments and
results) are listed in each type's ``_SENSITIVE_FIELDS``. A listener receives them empty unless
it asks for them (:attr:`~oracleagentmemory.observability.EventListener.include_contents`);
``argument_summary`` and ``result_summary`` only ever hold structure (counts, lengths, kinds).
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

__all__ = [
    "AgentMemoryCompletedEvent", "AgentMemoryStartedEvent", "ApiOperationCompletedEvent",
    "ApiOperationStartedEvent", "EmbedderCompletedEvent", "EmbedderStartedEvent", "Event",
    "LlmGenerationCompletedEvent", "LlmGenerationStartedEvent", "MemoryStoreCompletedEvent",
    "MemoryStoreStartedEvent", "OperationKind", "ThreadCompletedEvent", "ThreadStartedEvent",
]


class OperationKind(str, Enum):
    """What an observed operation does to the data it touches."""

    CREATE = "create"
    READ = "read"
    UPDATE = "update"
    DELETE = "delete"
    UNKNOWN = "unknown"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class Event(BaseModel):
    """One observability event: its id, when it happened (ISO 8601, UTC), the component that
    emitted it (``memory_store``, ``thread``...) and its name (``memory_store.add.started``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", frozen=True)

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = frozenset({"metadata"})

    event_id: str
    timestamp: str = Field(default_factory=_now)
    component: str
    event_name: str
    metadata: dict[str, Any] | None = None

    def without_contents(self) -> Event:
        """This event with every field that may hold contents emptied (``None``)."""
        emptied = {name: None for name in self._SENSITIVE_FIELDS
                   if getattr(self, name, None) is not None}
        return self.model_copy(update=emptied) if emptied else self


_Kind = Annotated[OperationKind, Strict()]


class ApiOperationStartedEvent(Event):
    """An SDK API call started: ``api_class.method`` on an instance of ``concrete_class``."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = frozenset({"metadata", "arguments"})

    api_class: str
    concrete_class: str
    method: str
    operation_kind: _Kind
    arguments: dict[str, Any] | None = None
    """The call's arguments as passed (contents: for listeners that ask for them)."""
    argument_summary: dict[str, Any] | None = None
    """The arguments' structure: scalars that name no content, else kinds, counts, lengths."""


class ApiOperationCompletedEvent(Event):
    """An SDK API call ended: ``success``, else ``error_type`` (the exception's class name)."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = frozenset({"metadata", "result"})

    started_event_id: str
    api_class: str
    concrete_class: str
    method: str
    operation_kind: _Kind
    success: bool
    result: dict[str, Any] | None = None
    """The value returned, as ``{"value": ...}`` (contents: for listeners that ask for them)."""
    result_summary: dict[str, Any] | None = None
    error_type: str | None = None
    duration_seconds: float | None = None
    """Time from the started event to this one, on a monotonic clock (an extension)."""


class AgentMemoryStartedEvent(ApiOperationStartedEvent):
    """An ``IAgentMemory`` call started."""

    component: Literal["agent_memory"] = "agent_memory"
    api_class: Literal["IAgentMemory"] = "IAgentMemory"


class AgentMemoryCompletedEvent(ApiOperationCompletedEvent):
    """An ``IAgentMemory`` call ended."""

    component: Literal["agent_memory"] = "agent_memory"
    api_class: Literal["IAgentMemory"] = "IAgentMemory"


class ThreadStartedEvent(ApiOperationStartedEvent):
    """An ``IThread`` call started, on thread ``thread_id``."""

    component: Literal["thread"] = "thread"
    api_class: Literal["IThread"] = "IThread"
    thread_id: str
    user_id: str | None = None
    agent_id: str | None = None


class ThreadCompletedEvent(ApiOperationCompletedEvent):
    """An ``IThread`` call ended."""

    component: Literal["thread"] = "thread"
    api_class: Literal["IThread"] = "IThread"
    thread_id: str
    user_id: str | None = None
    agent_id: str | None = None


class MemoryStoreStartedEvent(ApiOperationStartedEvent):
    """An ``IMemoryStore`` call started."""

    component: Literal["memory_store"] = "memory_store"
    api_class: Literal["IMemoryStore"] = "IMemoryStore"


class MemoryStoreCompletedEvent(ApiOperationCompletedEvent):
    """An ``IMemoryStore`` call ended."""

    component: Literal["memory_store"] = "memory_store"
    api_class: Literal["IMemoryStore"] = "IMemoryStore"


class EmbedderStartedEvent(ApiOperationStartedEvent):
    """An embedding request started: ``input_count`` texts (``input`` holds them, for listeners
    that ask for contents), as queries or as documents."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = frozenset({"metadata", "arguments", "input"})

    component: Literal["embedder"] = "embedder"
    event_name: Literal["embedder.started"] = "embedder.started"
    api_class: Literal["IEmbedder"] = "IEmbedder"
    method: Literal["embed"] = "embed"
    operation_kind: Literal[OperationKind.CREATE] = OperationKind.CREATE
    model: str
    input: str | list[str] | None = None
    input_count: int
    text_lengths: list[int] | None = None
    is_query: bool


class EmbedderCompletedEvent(ApiOperationCompletedEvent):
    """An embedding request ended: ``vector_count`` vectors of ``embedding_dimension``."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"metadata", "result", "embedding_vector"})

    component: Literal["embedder"] = "embedder"
    event_name: Literal["embedder.completed"] = "embedder.completed"
    api_class: Literal["IEmbedder"] = "IEmbedder"
    method: Literal["embed"] = "embed"
    operation_kind: Literal[OperationKind.CREATE] = OperationKind.CREATE
    model: str
    input_count: int
    is_query: bool
    vector_count: int | None = None
    embedding_dimension: int | None = None
    embedding_vector: list[float] | list[list[float]] | None = None


class LlmGenerationStartedEvent(ApiOperationStartedEvent):
    """A language-model generation started (``prompt``: for listeners that ask for contents)."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"metadata", "arguments", "prompt", "llm_generation_config", "response_json_schema",
         "tools"})

    component: Literal["llm"] = "llm"
    event_name: Literal["llm.generation.started"] = "llm.generation.started"
    api_class: Literal["ILlm"] = "ILlm"
    method: Literal["generate"] = "generate"
    operation_kind: Literal[OperationKind.CREATE] = OperationKind.CREATE
    llm_config: dict[str, Any] | None = None
    llm_generation_config: dict[str, Any] | None = None
    model: str
    api_type: str
    prompt: Any
    response_json_schema: dict[str, Any] | None = None
    tools: list[Any] | None = None


class LlmGenerationCompletedEvent(ApiOperationCompletedEvent):
    """A language-model generation ended (``content``: for listeners that ask for contents)."""

    _SENSITIVE_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"metadata", "result", "content", "tool_calls"})

    component: Literal["llm"] = "llm"
    event_name: Literal["llm.generation.completed"] = "llm.generation.completed"
    api_class: Literal["ILlm"] = "ILlm"
    method: Literal["generate"] = "generate"
    operation_kind: Literal[OperationKind.CREATE] = OperationKind.CREATE
    llm_config: dict[str, Any] | None = None
    model: str
    api_type: str
    content: str | None = None
    completion_id: str | None = None
    tool_calls: list[Any] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    thinking_tokens: int | None = None
    total_tokens: int | None = None
