"""The request's audit event goes straight to the batched writer when it is the audit logger's
only handler, and through the logger otherwise: either way every event reaches the stream, and
a filter on the logger still decides (served over real HTTP). The writer is configured before
uvicorn starts, as ``oam-gateway serve`` does: uvicorn's logging configuration closes every
handler, and the writer must go on writing."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator

import httpx
import pytest
from gateway_harness import live_server, wait_for
from oam_gateway.middleware.request_log import (
    RequestLogMiddleware,
    audit_log,
    configure_audit_log,
)
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route


class Recording:
    """A stream that keeps what it is given."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            self.text.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def events(self) -> list[dict[str, object]]:
        with self.lock:
            return [json.loads(line) for line in "".join(self.text).splitlines()]


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("hi", status_code=int(request.path_params["status"]))


@pytest.fixture()
def stream() -> Iterator[Recording]:
    recording = Recording()
    level, propagate = audit_log.level, audit_log.propagate
    handler = configure_audit_log(recording)  # type: ignore[arg-type]
    try:
        yield recording
    finally:
        audit_log.removeHandler(handler)
        handler.stop()  # type: ignore[attr-defined]
        audit_log.setLevel(level)
        audit_log.propagate = propagate


def served() -> Starlette:
    return Starlette(routes=[Route("/status/{status}", hello)],
                     middleware=[Middleware(RequestLogMiddleware)])


def test_every_request_leaves_its_event_in_order(stream: Recording) -> None:
    statuses = [200, 404, 201, 500, 200] * 20
    with live_server(served()) as url, httpx.Client(base_url=url) as http:
        for status in statuses:
            assert http.get(f"/status/{status}").status_code == status
        wait_for(lambda: len(stream.events()) >= len(statuses), 30)
    events = stream.events()
    assert [event["status"] for event in events] == statuses
    assert {event["method"] for event in events} == {"GET"}


def test_a_filter_on_the_audit_logger_still_decides(stream: Recording) -> None:
    """With a filter the logger's own path runs (positive control: without it, the same
    requests are written)."""
    class OnlyErrors(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return '"status":404' in record.getMessage()

    only_errors = OnlyErrors()
    audit_log.addFilter(only_errors)
    try:
        with live_server(served()) as url, httpx.Client(base_url=url) as http:
            for status in (200, 404, 200, 404):
                http.get(f"/status/{status}")
            wait_for(lambda: len(stream.events()) >= 2, 30)
    finally:
        audit_log.removeFilter(only_errors)
    assert [event["status"] for event in stream.events()] == [404, 404]
