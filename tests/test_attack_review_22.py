"""Attack review of issue 22's changes (keyset cursors, the database wait, the dev record):
each test tries one attack and holds a positive control."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from dds import RUNTIME, DdsEnvironment
from gateway_live import LiveGateway, live_gateway
from oam_gateway.problems import PROBLEM_CONTENT_TYPE, problem_type
from psycopg import sql


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


@contextmanager
def runtime_logins_refused(dds: DdsEnvironment) -> Iterator[None]:
    """The gateway's runtime login cannot connect (its sessions are ended and its connection
    limit is 0) until the block ends."""
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        su.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT 0").format(sql.Identifier(RUNTIME)))
        try:
            su.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE usename = %s", [RUNTIME])
            yield
        finally:
            su.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT -1").format(
                sql.Identifier(RUNTIME)))


def test_a_request_timed_out_while_waiting_for_a_connection_does_not_take_it_for_good(
        dds: DdsEnvironment, tmp_path: Path) -> None:
    """A request that finds no ready pooled connection waits for one in a worker thread. When
    the request timeout (504) cancelled it there, the thread went on waiting, and the
    connection it was then given went to nobody: the pool never got it back. With one pooled
    connection, an outage longer than the request timeout left every later request a 503 or
    504 for good. A connection handed to a cancelled wait goes back to the pool."""
    with live_gateway(dds, tmp_path, pool_max_size=1, pool_min_size=1,
                      pool_timeout_seconds=60.0,
                      limits={"request_timeout_seconds": 1.0, "rate_limit": None}) as gateway, \
            gateway.client("waiting_writer") as http:
        # Positive control: the gateway writes before the outage.
        assert http.post("/v1/memories", json={"content": "before"}).status_code == 201
        with runtime_logins_refused(dds):
            statuses = [http.post("/v1/memories", json={"content": f"during {n}"}).status_code
                        for n in range(3)]
            assert 504 in statuses, statuses  # cancelled while waiting for a connection
            assert set(statuses) <= {503, 504}, statuses
        # The outage is over: the pool reconnects, and a write succeeds again.
        deadline = time.monotonic() + 90
        status = 0
        while status != 201 and time.monotonic() < deadline:
            status = http.post("/v1/memories", json={"content": "after"}).status_code
            assert status in {201, 503, 504}, status
            if status != 201:
                time.sleep(0.5)
        assert status == 201, "the pool never got its connection back"
