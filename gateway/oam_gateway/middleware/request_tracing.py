"""The request span: OpenTelemetry's ASGI middleware, named by the route it matched.

One ``SERVER`` span per HTTP request (stable conventions: ``http.request.method``,
``url.path``, ``http.response.status_code``, ``http.route``; the span is named
``GET /v1/memories/{memory_id}``), with the caller's W3C ``traceparent`` followed. While the
request runs its provider is the active one, so the SDK-operation and database spans are
its children. Probes are not traced. No headers are captured.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util.http import ExcludeList
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oam_gateway.middleware.matched_route import matched_route
from oam_gateway.observability import telemetry

__all__ = ["UNTRACED_URLS", "RequestTracingMiddleware"]

UNTRACED_URLS = ExcludeList([r"^[a-z]+://[^/]+/(healthz|readyz)(?:[?#]|$)"])
"""Probes make no spans."""


class RequestTracingMiddleware:
    """A server span around each HTTP request, in ``tracer_provider``."""

    def __init__(self, app: ASGIApp, tracer_provider: TracerProvider) -> None:
        telemetry.use_stable_conventions()
        self._traced = OpenTelemetryMiddleware(
            _RequestInProvider(app, tracer_provider), excluded_urls=UNTRACED_URLS,
            default_span_details=_method_only, tracer_provider=tracer_provider,
            exclude_spans=["receive", "send"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._traced(scope, receive, send)


def _method_only(scope: Scope) -> tuple[str, dict[str, Any]]:
    """The span's first name: the method (the route is known once the router ran)."""
    return str(scope.get("method") or "HTTP"), {}


class _RequestInProvider:
    """Runs the request with its provider active; names the span by its route as the
    response starts (the instrumentation ends the span with the response)."""

    def __init__(self, app: ASGIApp, tracer_provider: TracerProvider) -> None:
        self._app = app
        self._provider = tracer_provider

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        root_path = scope.get("root_path", "")
        span = trace.get_current_span()
        started = False

        async def naming_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                self._name(span, scope, root_path)
            await send(message)

        token = telemetry.activate(self._provider)
        try:
            await self._app(scope, receive, naming_send)
        except Exception as error:
            if not started and span.is_recording():  # the server answers 500 after the span
                self._name(span, scope, root_path)
                span.set_attribute("http.response.status_code", 500)
                span.set_attribute("error.type", type(error).__qualname__)
            raise
        finally:
            telemetry.deactivate(token)

    @staticmethod
    def _name(span: trace.Span, scope: Scope, root_path: str) -> None:
        if span.is_recording():
            route = matched_route(scope, root_path)
            if route is not None:
                span.set_attribute("http.route", route)
                span.update_name(f"{scope.get('method', 'HTTP')} {route}")
