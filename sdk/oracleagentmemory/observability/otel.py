"""``OpenTelemetryEventListener``: the SDK's events as OpenTelemetry spans (an extension).

Register it as any listener; each started event opens an ``INTERNAL`` span, made current so
the spans of nested operations (the store's ``add`` inside the client's ``add_memory``, the
embedder inside the store, the database calls of an instrumented driver) become its children,
and the matching completed event ends it. Spans are named ``<component>.<method>``
(``memory_store.add``, ``embedder.embed``, ``llm.generate``) and carry only its structure:
``oam.component``, ``oam.api_class``, ``oam.concrete_class``, ``oam.method``,
``oam.operation_kind``, ``oam.operation_id`` (the started event's id), and on failure
the error status and ``error.type`` (the exception's class, never its message). It never
asks for contents.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from oracleagentmemory.observability.event import (
    ApiOperationCompletedEvent,
    ApiOperationStartedEvent,
    Event,
)
from oracleagentmemory.observability.eventlistener import EventListener

__all__ = ["TRACER_NAME", "OpenTelemetryEventListener"]

TRACER_NAME = "oracleagentmemory"


class OpenTelemetryEventListener(EventListener):
    """Turns started/completed event pairs into spans of ``tracer_provider`` (the global one
    when ``None``)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider)
        self._open: dict[str, tuple[trace.Span, object]] = {}
        self._lock = threading.Lock()

    def subscribed_event_types(self) -> Sequence[type[Event]] | None:
        return (ApiOperationStartedEvent, ApiOperationCompletedEvent)

    def on_event(self, event: Event) -> None:
        if isinstance(event, ApiOperationStartedEvent):
            self._start(event)
        elif isinstance(event, ApiOperationCompletedEvent):
            self._end(event)

    def _start(self, event: ApiOperationStartedEvent) -> None:
        name = f"{event.component}.{event.method}"
        span = self._tracer.start_span(name, kind=SpanKind.INTERNAL, attributes={
            "oam.component": event.component, "oam.api_class": event.api_class,
            "oam.concrete_class": event.concrete_class, "oam.method": event.method,
            "oam.operation_kind": event.operation_kind.value,
            "oam.operation_id": event.event_id})
        token = otel_context.attach(trace.set_span_in_context(span))
        with self._lock:
            self._open[event.event_id] = (span, token)

    def _end(self, event: ApiOperationCompletedEvent) -> None:
        with self._lock:
            opened = self._open.pop(event.started_event_id, None)
        if opened is None:  # registered after the operation started
            return
        span, token = opened
        otel_context.detach(token)  # type: ignore[arg-type]
        if not event.success:
            span.set_attribute("error.type", event.error_type or "Exception")
            span.set_status(Status(StatusCode.ERROR))
        span.end()
