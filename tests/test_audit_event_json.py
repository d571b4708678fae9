"""The audit event's line is written field by field (``request_log._json``); it must be, byte
for byte, what the JSON encoder it replaced writes for the same values: text with quotes,
backslashes, control characters and characters beyond ASCII, absent values, integers, floats
and values of other types."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from oam_gateway.middleware.request_log import _event_line
from oam_gateway.observability.request_events import RequestEvent
from oam_gateway.tenancy.principal import Principal

TEXTS = ["plain", 'quote " and \\ backslash', "tab\tnew\nline\x00\x1f", "café ☕ 𝄞", "",
         "\u2028\u2029", "/v1/memories/{memory_id}"]


class _Route:
    def __init__(self, path: str) -> None:
        self.path = path


def scope_of(user: str, tenant: str, route: str, method: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": "/x", "headers": [],
            "oam.principal": Principal(user, (), tenant, 0), "route": _Route(route)}


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("status", [200, 404, None])
def test_the_line_is_what_the_encoder_writes(text: str, status: int | None) -> None:
    event = RequestEvent(operation=text, record_ids=[text, "m1", text[::-1]],
                         result_count=None if status is None else len(text))
    line = _event_line(scope_of(text, text, text, text), event, status, time.time(),
                       0.0012345, "")
    values = json.loads(line)
    assert line == json.dumps(values, separators=(",", ":"))
    assert values["operation"] == text and values["record_ids"][0] == text
    assert values["end_user"] == text and values["tenant"] == text
    assert values["route"] == text and values["method"] == text


def test_values_of_other_types_are_written_as_the_encoder_writes_them() -> None:
    others: Any = [7, True, None, 1.5]
    event = RequestEvent(operation="op", record_ids=others, result_count=True)
    line = _event_line(scope_of("u", "t", "/r", "GET"), event, 200, time.time(), 2.0, "")
    values = json.loads(line)
    assert line == json.dumps(values, separators=(",", ":"))
    assert values["record_ids"] == [7, True, None, 1.5] and values["result_count"] is True
    assert values["duration_ms"] == 2000.0 and values["trace_id"] is None
