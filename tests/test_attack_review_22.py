"""Attack review of issue 22's changes (keyset cursors, the database wait, the dev record):
each test tries one attack and holds a positive control."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import pytest
from dds import DdsEnvironment
from gateway_live import LiveGateway, live_gateway
from oam_gateway.problems import PROBLEM_CONTENT_TYPE, problem_type


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("attack22")) as live:
        yield live


def encode_text(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def encode(payload: object) -> str:
    return encode_text(json.dumps(payload))


def refused(answer: httpx.Response) -> None:
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
    assert answer.json()["type"] == problem_type("invalid-request")


def test_a_deeply_nested_cursor_is_a_400_and_the_connection_keeps_serving(
        gateway: LiveGateway) -> None:
    """A cursor is JSON: one nested a few thousand levels deep made json.loads raise
    RecursionError, which nothing caught (the gateway reset the connection); it is a 400
    invalid-request like any other cursor that is not this list's, and so is one longer than
    any cursor the gateway makes."""
    with gateway.client("nested_cursor") as http:
        for n in range(3):
            assert http.post("/v1/memories", json={"content": f"m{n}"}).status_code == 201
        thread_id = http.post("/v1/threads", json={}).json()["id"]
        good = http.get("/v1/memories", params={"limit": 1}).json()["next_cursor"]
        lists = ("/v1/memories", "/v1/threads", "/v1/relations",
                 f"/v1/threads/{thread_id}/messages")
        for cursor in (encode_text("[" * 3000), encode_text('{"l":' * 3000),
                       encode({"l": "memories", "t": "x" * 6000, "i": "y"})):
            for path in lists:
                refused(http.get(path, params={"cursor": cursor}))
        # Positive control: the same keep-alive client pages on with a real cursor.
        answer = http.get("/v1/memories", params={"limit": 1, "cursor": good})
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["items"]) == 1
