"""Observability: the events the SDK emits around its operations, and their listeners.

The API calls of the client (``agent_memory``), threads (``thread``) and the memory store
(``memory_store``), and the SDK's calls of an embedder (``embedder``) and a language model
(``llm``) each emit a started and a completed event, paired by ``started_event_id``. Register
listeners around the code to observe::

    from oracleagentmemory.observability import (
        GenericEventListener, MemoryStoreCompletedEvent, register_event_listeners)

    def report(event: MemoryStoreCompletedEvent) -> None:
        print(event.method, event.success, event.duration_seconds)

    with register_event_listeners([GenericEventListener(MemoryStoreCompletedEvent, report)]):
        store.add(["likes tea"], "memory")

Listeners see no contents unless they ask (``include_contents``); with none registered the SDK
builds no event. :class:`~oracleagentmemory.observability.otel.OpenTelemetryEventListener`
turns the events into OpenTelemetry spans.
"""

from oracleagentmemory.observability.event import (
    AgentMemoryCompletedEvent,
    AgentMemoryStartedEvent,
    ApiOperationCompletedEvent,
    ApiOperationStartedEvent,
    EmbedderCompletedEvent,
    EmbedderStartedEvent,
    Event,
    LlmGenerationCompletedEvent,
    LlmGenerationStartedEvent,
    MemoryStoreCompletedEvent,
    MemoryStoreStartedEvent,
    OperationKind,
    ThreadCompletedEvent,
    ThreadStartedEvent,
)
from oracleagentmemory.observability.eventlistener import (
    EventListener,
    GenericEventListener,
    emit_event,
    register_event_listeners,
)

__all__ = [
    "AgentMemoryCompletedEvent", "AgentMemoryStartedEvent", "ApiOperationCompletedEvent",
    "ApiOperationStartedEvent", "EmbedderCompletedEvent", "EmbedderStartedEvent", "Event",
    "EventListener", "GenericEventListener", "LlmGenerationCompletedEvent",
    "LlmGenerationStartedEvent", "MemoryStoreCompletedEvent", "MemoryStoreStartedEvent",
    "OperationKind", "ThreadCompletedEvent", "ThreadStartedEvent", "emit_event",
    "register_event_listeners",
]
