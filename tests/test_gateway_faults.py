"""The database stopped mid-load, over real HTTP, on a private embedded server of this test.

A gateway serves a protected, write-audited store of its own embedded PostgreSQL server (never
the session's shared one) while clients write memories, alone and in batches. The server is
stopped: requests answer 503 with ``Retry-After`` within the request timeout (never 500, never
hanging); it is started again: the same gateway, not restarted, succeeds again. Afterwards
every acknowledged write is stored whole (content, metadata, all of its batch) with an audit
row naming its end user, and no refused write left anything.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from dds import IDP, OWNER, DdsEnvironment, setup_environment
from gateway_live import LiveGateway, gateway_settings, serve
from oam_gateway.app import create_app
from oracleagentmemory import embedded
from oracleagentmemory.core.deepsec.audit import enable_write_audit, list_write_audit

REQUEST_TIMEOUT = 8.0
WRITERS = 4
USERS = ("faulty_a", "faulty_b")
POOL_WAIT = 2.0
"""The pool wait (``pool_timeout_seconds``) of the bounded-wait gateway."""
CROWD = 16
"""Concurrent writes sent to the bounded-wait gateway: eight per pooled connection."""


@dataclass
class PrivateServer:
    """An embedded server this module starts, stops and restarts."""

    data_dir: Path
    dds: DdsEnvironment

    def stop(self) -> None:
        assert embedded.stop(self.data_dir)

    def start(self) -> None:
        embedded.start(self.data_dir)


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateServer]:
    parent = Path(tempfile.mkdtemp(prefix="oam-fault-"))
    data_dir = parent / "data"
    try:
        url = embedded.start(data_dir).url
        yield PrivateServer(data_dir, setup_environment(url))
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture(scope="module")
def gateway(server: PrivateServer, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    dds = server.dds
    store_id = dds.new_store(vector_dim=64)
    assert enable_write_audit(dds.secadmin_url, OWNER, store_id).enabled
    jwks = tmp_path_factory.mktemp("fault-gw") / "jwks.json"
    jwks.write_text(json.dumps(dds.issuer.jwks()), encoding="utf-8")
    settings = gateway_settings(dds, store_id, jwks, pool_max_size=4, pool_timeout_seconds=2.0,
                                limits={"request_timeout_seconds": REQUEST_TIMEOUT,
                                        "rate_limit": None})
    with serve(create_app(settings)) as url:
        yield LiveGateway(url, dds, store_id)


@pytest.fixture(scope="module")
def bounded_gateway(server: PrivateServer, tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[LiveGateway]:
    """A gateway with two pooled connections, each request waiting at most :data:`POOL_WAIT`
    for one (a request timeout well past that, so a 503 is the pool wait's)."""
    dds = server.dds
    store_id = dds.new_store(vector_dim=64)
    assert enable_write_audit(dds.secadmin_url, OWNER, store_id).enabled
    jwks = tmp_path_factory.mktemp("bounded-gw") / "jwks.json"
    jwks.write_text(json.dumps(dds.issuer.jwks()), encoding="utf-8")
    settings = gateway_settings(dds, store_id, jwks, pool_max_size=2,
                                pool_timeout_seconds=POOL_WAIT,
                                limits={"request_timeout_seconds": 30.0, "rate_limit": None})
    with serve(create_app(settings)) as url:
        yield LiveGateway(url, dds, store_id)


@dataclass
class Outcome:
    """One write request: what it sent and how it was answered."""

    user: str
    contents: list[str]
    batch: bool
    status: int
    seconds: float
    retry_after: str | None
    ids: list[str] = field(default_factory=list)


def write_memories(http: httpx.Client, user: str, contents: list[str], batch: bool) -> Outcome:
    """Write ``contents`` (one add, or a batch of adds) each tagged with itself; the outcome.
    Anything but a success is the database-unavailable problem."""
    started = time.monotonic()
    if batch:
        answer = http.post("/v1/memories:batch", json={"operations": [
            {"op": "add", "content": c, "metadata": {"tag": c}} for c in contents]})
    else:
        answer = http.post("/v1/memories", json={
            "content": contents[0], "metadata": {"tag": contents[0]}})
    outcome = Outcome(user, contents, batch, answer.status_code,
                      time.monotonic() - started, answer.headers.get("retry-after"))
    if answer.status_code == 201:
        outcome.ids = [answer.json()["id"]]
    elif answer.status_code == 200:
        outcome.ids = [r["id"] for r in answer.json()["results"]]
    else:
        assert answer.json()["type"].endswith("/database-unavailable"), answer.text
    return outcome


class Writers:
    """Threads writing memories (single adds and batches of three) until told to stop."""

    def __init__(self, gateway: LiveGateway) -> None:
        self.gateway = gateway
        self.outcomes: list[Outcome] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(n,), daemon=True)
                         for n in range(WRITERS)]

    def __enter__(self) -> Writers:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(REQUEST_TIMEOUT * 3)
            assert not thread.is_alive(), "a writer hung"

    def _run(self, number: int) -> None:
        user = USERS[number % len(USERS)]
        with httpx.Client(base_url=self.gateway.url, timeout=REQUEST_TIMEOUT * 3, headers={
                "Authorization": f"Bearer {self.gateway.token(user)}"}) as http:
            sequence = 0
            while not self._stop.is_set():
                sequence += 1
                batch = sequence % 2 == 0
                tag = f"{user}-w{number}-{sequence}"
                contents = [f"{tag}-{i}" for i in range(3 if batch else 1)]
                try:
                    outcome = write_memories(http, user, contents, batch)
                except httpx.HTTPError as error:  # the gateway itself must keep answering
                    raise AssertionError(f"no answer: {error!r}") from error
                with self._lock:
                    self.outcomes.append(outcome)
                time.sleep(0.01)

    def count(self, *statuses: int) -> int:
        with self._lock:
            return sum(1 for o in self.outcomes if o.status in statuses)

    def wait_for(self, statuses: tuple[int, ...], at_least: int, seconds: float) -> None:
        start = self.count(*statuses)
        deadline = time.monotonic() + seconds
        while self.count(*statuses) < start + at_least:
            assert time.monotonic() < deadline, (statuses, self.count(*statuses))
            time.sleep(0.05)


def test_a_stopped_database_answers_503_then_recovers_without_partial_writes(
        server: PrivateServer, gateway: LiveGateway) -> None:
    with Writers(gateway) as writers:
        writers.wait_for((200, 201), at_least=20, seconds=60)  # positive control: writes work
        server.stop()
        writers.wait_for((503,), at_least=12, seconds=60)
        down = httpx.get(f"{gateway.url}/readyz", timeout=REQUEST_TIMEOUT * 2)
        assert down.status_code == 503 and down.headers["retry-after"]
        with gateway.client(USERS[0]) as http:
            read = http.get("/v1/memories")
            assert read.status_code == 503, read.text
            assert int(read.headers["retry-after"]) > 0
        server.start()
        writers.wait_for((200, 201), at_least=20, seconds=90)  # recovered, gateway not restarted
    outcomes = writers.outcomes
    assert {o.status for o in outcomes} <= {200, 201, 503}, {o.status for o in outcomes}
    refused = [o for o in outcomes if o.status == 503]
    assert refused and all(o.retry_after and int(o.retry_after) > 0 for o in refused)
    assert max(o.seconds for o in outcomes) < REQUEST_TIMEOUT + 2  # nobody hung
    assert httpx.get(f"{gateway.url}/readyz", timeout=10).status_code == 200
    _check_stored_whole(gateway, outcomes)


def _check_stored_whole(gateway: LiveGateway, outcomes: list[Outcome]) -> None:
    with gateway.dds.owner_store(gateway.store_id) as store:
        rows = store.list("memory", limit=None)
    stored: dict[str, list[tuple[str, object, object]]] = {}
    for row in rows:
        stored.setdefault(str(row.content), []).append(
            (row.id, row.metadata, getattr(row, "user_id", None)))
    acknowledged = [o for o in outcomes if o.status in (200, 201)]
    for outcome in acknowledged:  # stored whole: every memory of it, once, as its caller's
        found = [stored.get(content, []) for content in outcome.contents]
        assert all(len(copies) == 1 for copies in found), (outcome, found)
        assert [copies[0][0] for copies in found] == outcome.ids
        for content, copies in zip(outcome.contents, found, strict=True):
            assert copies[0][1:] == ({"tag": content}, f"{IDP}:{outcome.user}")
    for outcome in outcomes:
        if outcome.status == 503:  # refused: nothing of it, not one memory of a batch
            assert not any(content in stored for content in outcome.contents), outcome
    sent = {c for o in outcomes for c in o.contents}
    assert set(stored) <= sent  # nothing but what was sent
    # The database's own audit holds an insert by the verified end user for every stored one.
    audit = list_write_audit(gateway.dds.owner_url, OWNER, gateway.store_id, limit=100_000)
    inserts = {(r.record_id, r.end_user) for r in audit if r.operation == "insert"}
    for outcome in acknowledged:
        for memory_id in outcome.ids:
            assert (memory_id, f"{IDP}:{outcome.user}") in inserts, memory_id
    # ... and none for what is not stored (an audit row commits with its write, or not at all).
    assert {r.record_id for r in audit if r.operation == "insert"
            and r.record_type == "memory"} == {copy[0] for copies in stored.values()
                                               for copy in copies}


def _crowd(gateway: LiveGateway, wave: str) -> list[Outcome]:
    """:data:`CROWD` writes sent at once (alternately single adds and batches of three)."""
    start = threading.Barrier(CROWD)
    outcomes: list[Outcome] = []
    lock = threading.Lock()

    def write(number: int) -> None:
        user = USERS[number % len(USERS)]
        batch = number % 2 == 1
        contents = [f"{wave}-{number}-{i}" for i in range(3 if batch else 1)]
        with httpx.Client(base_url=gateway.url, timeout=60, headers={
                "Authorization": f"Bearer {gateway.token(user)}"}) as http:
            start.wait(30)
            outcome = write_memories(http, user, contents, batch)
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(CROWD)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert len(outcomes) == CROWD, "a write got no answer"
    return outcomes


def test_one_request_waits_for_the_database_at_most_the_pool_wait(
        server: PrivateServer, bounded_gateway: LiveGateway) -> None:
    """However many requests queue for its two connections, and whatever a write does with the
    database (a single add, a batch, the audit), each request waits for a pooled connection at
    most ``pool_timeout_seconds`` in all, then answers 503: never one pool wait per queued
    request ahead of it (a crowd of 16 on 2 connections waited up to 8 pool waits)."""
    outcomes = _crowd(bounded_gateway, "before")  # positive control: the crowd is served
    assert {o.status for o in outcomes} <= {200, 201}, [o.status for o in outcomes]
    server.stop()
    try:
        for wave in ("down-1", "down-2"):  # the pool's connections broken, then none left
            refused = _crowd(bounded_gateway, wave)
            outcomes += refused
            assert {o.status for o in refused} == {503}, [o.status for o in refused]
            assert all(o.retry_after and int(o.retry_after) > 0 for o in refused)
            # The bound plus a generous margin for a loaded machine, under two bounds.
            slowest = max(o.seconds for o in refused)
            assert slowest < POOL_WAIT * 1.9, sorted(round(o.seconds, 2) for o in refused)
    finally:
        server.start()
    deadline = time.monotonic() + 90
    with bounded_gateway.client(USERS[0]) as http:
        while http.post("/v1/memories", json={
                "content": "after-probe", "metadata": {"tag": "after-probe"}}).status_code != 201:
            assert time.monotonic() < deadline, "the gateway did not recover"
            time.sleep(0.2)
    after = _crowd(bounded_gateway, "after")  # positive control: served again
    assert {o.status for o in after} <= {200, 201}, [o.status for o in after]
    probe = Outcome(USERS[0], ["after-probe"], False, 201, 0.0, None)
    with bounded_gateway.dds.owner_store(bounded_gateway.store_id) as store:
        probe.ids = [r.id for r in store.list("memory", limit=None) if r.content == "after-probe"]
    _check_stored_whole(bounded_gateway, outcomes + after + [probe])
