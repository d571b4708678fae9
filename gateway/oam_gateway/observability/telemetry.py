"""OpenTelemetry: spans for the request, the SDK operation and the database call.

:func:`tracer_provider_for` makes the tracer provider of one gateway (``None`` when
:attr:`TelemetrySettings.exporter` is ``"none"``: nothing is traced, nothing costs). Each app
keeps its own provider (no process-wide provider is set): the request middleware
(:mod:`oam_gateway.middleware.request_tracing`) makes it the request's *active* provider, which
:func:`operation_span` and the database spans use. Inside an operation span the SDK's own
observability events (:mod:`oracleagentmemory.observability`) become its child spans
(``agent_memory.add_memory``, ``memory_store.add``, ``embedder.embed``...) through the SDK's
:class:`~oracleagentmemory.observability.otel.OpenTelemetryEventListener`, registered for the
operation: the SDK emits its events where its operations start, and one listener makes the spans.

Spans carry the stable semantic conventions (``http.request.method``, ``url.path``,
``http.route``, ``http.response.status_code``; ``db.system.name``, ``db.query.text``...) and
never contents: no bound parameters (psycopg instrumentation without parameter capture and
without SQL commenter), no query strings, no exception messages or stack traces (they may
quote values), no headers, tokens or bodies. :class:`RedactingSpanProcessor` enforces this on
every span before any exporter sees it.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar, Token
from typing import Any, Literal

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import Attributes
from oracleagentmemory.observability import register_event_listeners
from oracleagentmemory.observability.otel import OpenTelemetryEventListener
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["REDACTED_ATTRIBUTES", "REDACTED_PREFIXES", "SEMCONV_OPT_IN", "TRACER_NAME",
           "RedactingSpanProcessor", "TelemetrySettings", "activate", "deactivate",
           "instrument_database", "operation_span", "tracer_provider_for", "uninstrument_database",
           "use_stable_conventions"]

SEMCONV_OPT_IN = "OTEL_SEMCONV_STABILITY_OPT_IN"
"""The environment variable that selects the stable HTTP and database conventions."""

TRACER_NAME = "oam_gateway"

REDACTED_ATTRIBUTES = frozenset({
    "url.query", "url.full", "http.url", "http.target", "db.statement.parameters",
    "exception.message", "exception.stacktrace",
})
"""Attributes no exported span or span event keeps (they may hold values or user text)."""
REDACTED_PREFIXES = ("db.query.parameter.", "http.request.header.", "http.response.header.")


class TelemetrySettings(BaseModel):
    """Tracing (``[telemetry]`` in the settings file, ``OAM_GATEWAY_TELEMETRY__*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exporter: Literal["none", "console", "otlp"] = "none"
    """``none`` (no spans), ``console`` (spans as JSON on standard output) or ``otlp`` (OTLP
    over HTTP to :attr:`otlp_endpoint`)."""
    otlp_endpoint: str | None = None
    """The collector's traces URL (``http://collector:4318/v1/traces``); unset, the exporter's
    own default or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``. Headers (credentials for the
    collector) come from ``OTEL_EXPORTER_OTLP_HEADERS``."""
    service_name: str = Field(default="oam-gateway", min_length=1)
    sample_ratio: float = Field(default=1.0, ge=0.0, le=1.0)
    """The share of new traces recorded (a sampled caller's trace is always followed)."""
    trace_database: bool = True
    """Database calls get their own spans (psycopg instrumentation)."""


def tracer_provider_for(settings: TelemetrySettings,
                        exporter: SpanExporter | None = None) -> TracerProvider | None:
    """The tracer provider of ``settings`` (``None`` when the exporter is ``none``).

    ``exporter`` replaces the settings' exporter (a test's in-memory exporter); its spans are
    handed over synchronously. Every exporter sees spans through :class:`RedactingSpanProcessor`.
    """
    processor: SpanProcessor
    if exporter is not None:
        processor = SimpleSpanProcessor(exporter)
    elif settings.exporter == "none":
        return None
    elif settings.exporter == "console":
        processor = SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stdout))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.otlp_endpoint))
    use_stable_conventions()
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.service_name}),
                              sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)))
    provider.add_span_processor(RedactingSpanProcessor(processor))
    if settings.trace_database:
        instrument_database()
    return provider


def use_stable_conventions() -> None:
    """Select the stable HTTP and database conventions, unless the environment chose already.

    The instrumentations read this once, when the first of them is built.
    """
    os.environ.setdefault(SEMCONV_OPT_IN, "http,database")


class RedactingSpanProcessor(SpanProcessor):
    """Hands ``processor`` each ended span without the attributes that may hold contents."""

    def __init__(self, processor: SpanProcessor) -> None:
        self._processor = processor

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self._processor.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        self._processor.on_end(_redacted(span))

    def shutdown(self) -> None:
        self._processor.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._processor.force_flush(timeout_millis)


def _redacted(span: ReadableSpan) -> ReadableSpan:
    """``span`` without :data:`REDACTED_ATTRIBUTES` (itself when it holds none)."""
    events = span.events
    if not (_needs_redaction(span.attributes) or span.status.description
            or any(_needs_redaction(event.attributes) for event in events)):
        return span
    return ReadableSpan(
        name=span.name, context=span.context, parent=span.parent, resource=span.resource,
        attributes=_kept(span.attributes),
        events=[Event(event.name, _kept(event.attributes), event.timestamp) for event in events],
        links=span.links, kind=span.kind, status=Status(span.status.status_code),
        start_time=span.start_time, end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope)


def _redacted_key(key: str) -> bool:
    return key in REDACTED_ATTRIBUTES or key.startswith(REDACTED_PREFIXES)


def _needs_redaction(attributes: Attributes) -> bool:
    return bool(attributes) and any(_redacted_key(key) for key in attributes or ())


def _kept(attributes: Attributes) -> dict[str, Any]:
    return {key: value for key, value in (attributes or {}).items() if not _redacted_key(key)}


# The active provider of the current request ---------------------------------------------

_active_provider: ContextVar[TracerProvider | None] = ContextVar("oam_tracer_provider",
                                                                 default=None)
_tracers: weakref.WeakKeyDictionary[TracerProvider, dict[str, trace.Tracer]] = (
    weakref.WeakKeyDictionary())
_sdk_listeners: weakref.WeakKeyDictionary[TracerProvider, OpenTelemetryEventListener] = (
    weakref.WeakKeyDictionary())


def activate(provider: TracerProvider | None) -> Token[TracerProvider | None]:
    """Make ``provider`` the active one in this context (undo with :func:`deactivate`)."""
    return _active_provider.set(provider)


def deactivate(token: Token[TracerProvider | None]) -> None:
    """Restore the provider that was active before :func:`activate` returned ``token``."""
    _active_provider.reset(token)


def _active_tracer(name: str = TRACER_NAME) -> trace.Tracer | None:
    """The tracer ``name`` of the active provider (``None`` outside a traced request)."""
    provider = _active_provider.get()
    if provider is None:
        return None
    by_name = _tracers.setdefault(provider, {})
    tracer = by_name.get(name)
    if tracer is None:
        tracer = by_name[name] = provider.get_tracer(name)
    return tracer


def operation_span(operation: str) -> AbstractContextManager[None]:
    """A span ``oam <operation>`` around one SDK operation (``memories.get``...).

    Its only attribute is ``oam.operation``: never the operation's parameters. A failure sets
    the span's status to error and ``error.type`` to the exception's class, not its message.
    The SDK calls made inside it are its child spans (the SDK's events, through one
    :class:`~oracleagentmemory.observability.otel.OpenTelemetryEventListener` per provider).
    Outside a traced request it is one shared empty block: nothing is made per request, and
    the SDK, with no listener, builds no event.
    """
    provider = _active_provider.get()
    tracer = _active_tracer()
    if provider is None or tracer is None:
        return _NO_SPAN
    listener = _sdk_listeners.get(provider)
    if listener is None:
        listener = _sdk_listeners[provider] = OpenTelemetryEventListener(provider)
    return _operation_span(tracer, operation, listener)


_NO_SPAN: AbstractContextManager[None] = nullcontext()


@contextmanager
def _operation_span(tracer: trace.Tracer, operation: str,
                    sdk_listener: OpenTelemetryEventListener) -> Iterator[None]:
    with tracer.start_as_current_span(f"oam {operation}", kind=SpanKind.INTERNAL,
                                      attributes={"oam.operation": operation},
                                      record_exception=False,
                                      set_status_on_exception=False) as span, \
            register_event_listeners([sdk_listener]):
        try:
            yield
        except Exception as error:
            span.set_attribute("error.type", type(error).__qualname__)
            span.set_status(Status(StatusCode.ERROR))
            raise


# Database spans ---------------------------------------------------------------------------

_instrument_lock = threading.Lock()
_database_instrumented = False
_connect_descriptors: dict[type, Any] = {}
"""``connect`` of psycopg's connection classes as they were before instrumenting: the
instrumentor's undo leaves a method bound to the base class, so a subclass's ``connect``
(the PostgreSQL engine's ``BridgedConnection``'s) would open base-class connections."""


def instrument_database() -> None:
    """Trace psycopg's statements (once per process) into each request's active provider.

    No bound parameters are captured and no SQL comment is added to the statements. Only
    connections opened after this call are traced.
    """
    global _database_instrumented
    with _instrument_lock:
        if _database_instrumented:
            return
        use_stable_conventions()
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
        from oracleagentmemory.engines.postgres.driver_classes import connection_classes
        for cls in connection_classes():
            _connect_descriptors[cls] = cls.__dict__["connect"]
        PsycopgInstrumentor().instrument(tracer_provider=_ActiveTracerProvider(),
                                         enable_commenter=False, capture_parameters=False,
                                         skip_dep_check=True)
        _database_instrumented = True


class _ActiveTracerProvider(trace.TracerProvider):
    """Hands out tracers that start their spans in the provider active at that moment."""

    def get_tracer(self, instrumenting_module_name: str,
                   instrumenting_library_version: str | None = None,
                   schema_url: str | None = None,
                   attributes: Attributes | None = None) -> trace.Tracer:
        return _ActiveTracer(instrumenting_module_name)


class _ActiveTracer(trace.Tracer):
    """A tracer whose spans go to the active provider (none, outside a traced request)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _tracer(self) -> trace.Tracer:
        return _active_tracer(self._name) or trace.NoOpTracer()

    def start_span(self, name: str, context: Context | None = None,
                   kind: SpanKind = SpanKind.INTERNAL, attributes: Attributes = None,
                   links: Sequence[trace.Link] | None = None, start_time: int | None = None,
                   record_exception: bool = True,
                   set_status_on_exception: bool = True) -> trace.Span:
        return self._tracer().start_span(name, context, kind, attributes, links, start_time,
                                         record_exception, set_status_on_exception)

    @contextmanager  # the API's own (async-agnostic) decorator is private
    def start_as_current_span(  # type: ignore[override]
            self, name: str, context: Context | None = None,
            kind: SpanKind = SpanKind.INTERNAL, attributes: Attributes = None,
            links: Sequence[trace.Link] | None = None, start_time: int | None = None,
            record_exception: bool = True, set_status_on_exception: bool = True,
            end_on_exit: bool = True) -> Iterator[trace.Span]:
        with self._tracer().start_as_current_span(
                name, context, kind, attributes, links, start_time, record_exception,
                set_status_on_exception, end_on_exit) as span:
            yield span



def uninstrument_database() -> None:
    """Undo :func:`instrument_database` (connections opened since stay traced)."""
    global _database_instrumented
    with _instrument_lock:
        if not _database_instrumented:
            return
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
        PsycopgInstrumentor().uninstrument()
        for cls, descriptor in _connect_descriptors.items():
            type.__setattr__(cls, "connect", descriptor)  # the classmethod itself, as before
        _connect_descriptors.clear()
        _database_instrumented = False
