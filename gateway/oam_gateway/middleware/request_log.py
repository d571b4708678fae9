"""One audit event per request, as one JSON line on the logger ``oam_gateway.audit``.

:class:`RequestLogMiddleware` puts a fresh
:class:`~oam_gateway.observability.request_events.RequestEvent` in the scope before the
application runs (the route fills the operation, record ids and result count), and when the
request is over emits it with the tenant and end user of the verified principal, the response
status and outcome, the trace id, the method and the route template. Refused requests leave an
event too (a 401 has no end user). Events hold no contents, queries, tokens or user text.

An event looks like::

    {"time": "2026-01-02T03:04:05.678Z", "tenant": "acme", "end_user": "idp:alice",
     "operation": "memories.get", "record_ids": ["m1"], "result_count": 1, "status": 200,
     "outcome": "success", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "method": "GET",
     "route": "/v1/memories/{memory_id}", "duration_ms": 3.1}
"""

from __future__ import annotations

import atexit
import collections
import json
import logging
import math
import re
import sys
import threading
import time
from datetime import datetime, timezone
from json.encoder import encode_basestring_ascii as _quoted
from typing import IO

from opentelemetry import trace
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oam_gateway.middleware.bearer import PRINCIPAL_SCOPE_KEY
from oam_gateway.middleware.matched_route import matched_route
from oam_gateway.observability.request_events import EVENT_SCOPE_KEY, RequestEvent
from oam_gateway.tenancy.principal import Principal

__all__ = ["AUDIT_LOGGER_NAME", "RequestLogMiddleware", "audit_log", "configure_audit_log"]

AUDIT_LOGGER_NAME = "oam_gateway.audit"
audit_log = logging.getLogger(AUDIT_LOGGER_NAME)

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")


def _outcome_of(status: int | None) -> str:
    """``success`` (below 400), ``denied`` (401, 403), ``client-error``, ``server-error``, or
    ``incomplete`` (no response was sent: the client went away)."""
    if status is None:
        return "incomplete"
    if status < 400:
        return "success"
    if status in (401, 403):
        return "denied"
    return "client-error" if status < 500 else "server-error"


class RequestLogMiddleware:
    """Emits the audit event of every HTTP request when its response is over."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started_at = time.time()
        started = time.perf_counter()
        root_path = scope.get("root_path", "")
        event = RequestEvent()
        scope[EVENT_SCOPE_KEY] = event
        status: int | None = None

        async def status_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        failed = False
        try:
            await self._app(scope, receive, status_send)
        except Exception:
            failed = True  # the server answers 500 (unless it had started another response)
            raise
        finally:
            if audit_log.isEnabledFor(logging.INFO):
                if status is None and failed:
                    status = 500
                _emit(_event_line(scope, event, status, started_at,
                                  time.perf_counter() - started, root_path))


def _emit(line: str) -> None:
    """Log ``line`` on the audit logger. When the logger's one handler is the batched writer
    (:func:`configure_audit_log`, with no filter and no propagation), the line goes straight
    to it: what the logger would do, without the record it builds (the caller's frame looked
    up, a dozen attributes set) only to take its message back."""
    handlers = audit_log.handlers
    if len(handlers) == 1 and not audit_log.filters and not audit_log.propagate \
            and not audit_log.disabled:
        writer = handlers[0]
        if type(writer) is _BatchedEventWriter and not writer.filters \
                and writer.level <= logging.INFO:
            writer.write_line(line)
            return
    audit_log.info(line)


def _event_line(scope: Scope, event: RequestEvent, status: int | None, started_at: float,
                seconds: float, root_path: str) -> str:
    principal = scope.get(PRINCIPAL_SCOPE_KEY)
    tenant, end_user = event.tenant, event.end_user
    if event.status is not None:
        status = event.status
    if isinstance(principal, Principal):
        tenant = tenant or principal.tenant
        end_user = end_user or principal.user_name
    # What _EVENT_JSON.encode writes for the event's dict, field by field: the encoder sets up
    # a C encoder (its markers, its options) on every call, most of an event's JSON time.
    return (f'{{"time":{_json(_utc_milliseconds(started_at))},"tenant":{_json(tenant)},'
            f'"end_user":{_json(end_user)},"operation":{_json(event.operation)},'
            f'"record_ids":[{",".join(map(_json, event.record_ids))}],'
            f'"result_count":{_json(event.result_count)},"status":{_json(status)},'
            f'"outcome":{_json(_outcome_of(status))},"trace_id":{_json(_trace_id(scope))},'
            f'"method":{_json(scope.get("method"))},'
            f'"route":{_json(matched_route(scope, root_path))},'
            f'"duration_ms":{_json(round(seconds * 1000, 3))}}}')


def _json(value: object) -> str:
    """``value`` as :data:`_EVENT_JSON` writes it: text, integers, finite floats and ``None``
    directly (as the encoder's C parts write them), anything else through the encoder."""
    if type(value) is str:
        return _quoted(value)
    if value is None:
        return "null"
    if type(value) is int:  # not a bool, which the encoder writes as true or false
        return int.__repr__(value)
    if type(value) is float and math.isfinite(value):
        return float.__repr__(value)
    return _EVENT_JSON.encode(value)


_EVENT_JSON = json.JSONEncoder(separators=(",", ":"))
"""The event's encoder (what :func:`_json` writes is what it writes)."""

_second_text: tuple[tuple[int, int, int, int, int, int], str] = ((0, 0, 0, 0, 0, 0), "")
"""The last second written (its fields, its text up to the seconds): events share it."""


def _utc_milliseconds(timestamp: float) -> str:
    """``timestamp`` as ``2026-01-02T03:04:05.678Z``: what ``datetime.isoformat`` with
    milliseconds writes (truncated, not rounded), the second's text reused while it lasts."""
    global _second_text
    moment = datetime.fromtimestamp(timestamp, timezone.utc)
    second = (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)
    cached, text = _second_text
    if second != cached:
        text = moment.replace(microsecond=0, tzinfo=None).isoformat()
        _second_text = (second, text)
    return f"{text}.{moment.microsecond // 1000:03d}Z"


def _trace_id(scope: Scope) -> str | None:
    """The request span's trace id; untraced, the caller's ``traceparent`` trace id."""
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        return trace.format_trace_id(context.trace_id)
    for key, value in scope["headers"]:
        if key == b"traceparent":
            match = _TRACEPARENT.match(bytes(value).decode("latin-1").strip())
            if match and match.group(1) != "0" * 32:
                return match.group(1)
    return None


def configure_audit_log(stream: IO[str] | None = None) -> logging.Handler:
    """Write audit events, one JSON line each, to ``stream`` (standard output by default).

    For ``oam-gateway serve``: without a handler at level INFO, events are dropped. The request
    only appends its event's line to a buffer (:class:`_BatchedEventWriter`); a writer thread
    writes and flushes the lines gathered meanwhile in one write, so the event loop never waits
    on the stream and the thread wakes once per batch, not once per event. The writer drains
    the buffer when the process exits normally (``atexit``), so no event is lost then; a
    logging reconfiguration, which closes handlers, does not stop it.
    """
    handler = _BatchedEventWriter(stream or sys.stdout)
    atexit.register(handler.stop)
    audit_log.addHandler(handler)
    audit_log.setLevel(logging.INFO)
    audit_log.propagate = False
    return handler


class _BatchedEventWriter(logging.Handler):
    """Writes audit lines from a thread of its own, in batches.

    :meth:`emit` appends the record's line (a finished JSON line with no arguments and no
    exception: nothing to format) to a deque and wakes the writer unless it is awake already.
    The writer lingers :data:`BATCH_LINGER_SECONDS` so that the lines of a busy moment go out
    together, then writes them in order with one write and one flush. A queue handler and its
    listener (what this replaces) woke the listener thread, and so traded the interpreter lock,
    for every request.
    """

    BATCH_LINGER_SECONDS = 0.02
    """How long the writer waits after a wake-up before it takes the lines gathered."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__(logging.INFO)
        self._stream = stream
        self._lines: collections.deque[str] = collections.deque()
        self._wake = threading.Event()
        self._closing = False
        self._writer = threading.Thread(target=self._write_batches,
                                        name="oam-gateway-audit-writer", daemon=True)
        self._writer.start()

    def handle(self, record: logging.LogRecord) -> bool:
        """:meth:`emit` without the handler's lock (the deque is safe across threads)."""
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.write_line(record.getMessage())

    def write_line(self, line: str) -> None:
        """Buffer ``line`` for the writer (what :meth:`emit` does with a record's message)."""
        self._lines.append(line)
        if not self._wake.is_set():
            self._wake.set()

    def stop(self) -> None:
        """Write what is buffered and stop the writer (idempotent; at exit)."""
        if not self._closing:
            self._closing = True
            self._wake.set()
            self._writer.join()

    def close(self) -> None:
        """What :class:`logging.Handler` does: the writer keeps running. A logging
        reconfiguration (``dictConfig``, which uvicorn runs as it starts) closes every handler
        but leaves this one on the audit logger, which must go on writing: :meth:`stop` ends
        it."""
        super().close()

    def _write_batches(self) -> None:
        lines, wake = self._lines, self._wake
        while True:
            wake.wait()
            if not self._closing:
                time.sleep(self.BATCH_LINGER_SECONDS)
            wake.clear()
            batch = []
            while lines:
                batch.append(lines.popleft())
            if batch:
                try:
                    self._stream.write("\n".join(batch) + "\n")
                    self._stream.flush()
                except Exception:  # a closed or broken stream: events are dropped, not raised
                    pass
            if self._closing and not lines:
                return
