"""Rate limits shared by gateway replicas through a real Redis, and what happens while it is away.

Two ``oam-gateway serve`` processes over one protected store and one ``redis-server`` (started by
the test on a free loopback port) enforce one per-user limit together; with ``memory://`` each
would count alone (the control). With Redis stopped mid-run every replica keeps answering and
counts its own requests (the documented fallback: the limit holds per replica, never a 500),
logs that it does, and shares its counters again once Redis is back.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import limits
import pytest
from dds import DdsEnvironment
from gateway_live import VECTOR_DIM, problem
from gateway_replicas import Replica, bearer, gateway_replicas
from limits.aio.storage import RedisStorage
from oam_gateway.config.limits import LimitSettings
from oam_gateway.middleware.rate_limit import rate_limiter_for
from oam_gateway.middleware.rate_limit_shared import SharedStoreLimiter
from redis_server import RedisServer, redis_server

DOWN_LINE = "the shared rate-limit store does not answer"
BACK_LINE = "the shared rate-limit store answers again"
_probes = itertools.count(1)


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as server:
        yield server


@pytest.fixture(scope="module")
def store_id(dds: DdsEnvironment) -> str:
    return dds.new_store(vector_dim=VECTOR_DIM)


def me(replica: Replica, dds: DdsEnvironment, user: str) -> httpx.Response:
    return httpx.get(f"{replica.url}/v1/me", headers=bearer(dds, user), timeout=30)


def refused(response: httpx.Response) -> dict[str, Any]:
    """The 429 problem of a used-up limit, with its ``Retry-After``."""
    body = problem(response, 429, "rate-limited")
    assert int(response.headers["Retry-After"]) >= 1
    return body


def test_two_replicas_on_one_redis_enforce_one_limit(
        dds: DdsEnvironment, store_id: str, redis: RedisServer, tmp_path: Path) -> None:
    settings = {"rate_limit": "5/minute", "rate_limit_storage_uri": redis.url}
    with gateway_replicas(dds, store_id, tmp_path / "shared", limits=settings) as (a, b):
        for replica in (a, b, a, b, a):  # the budget of five, used on both replicas
            assert me(replica, dds, "lim_alice").status_code == 200
        refused(me(b, dds, "lim_alice"))  # the second replica knows what the first counted
        refused(me(a, dds, "lim_alice"))
        assert me(b, dds, "lim_bob").status_code == 200  # another user is not limited
        assert DOWN_LINE not in a.log() + b.log()


def test_without_a_shared_store_each_replica_counts_alone(
        dds: DdsEnvironment, store_id: str, tmp_path: Path) -> None:
    """The control: with ``memory://`` the same requests are not refused."""
    settings = {"rate_limit": "5/minute", "rate_limit_storage_uri": "memory://"}
    with gateway_replicas(dds, store_id, tmp_path / "alone", limits=settings) as (a, b):
        for replica in (a, b) * 5:  # twice the limit, five on each replica
            assert me(replica, dds, "lim_carol").status_code == 200
        refused(me(a, dds, "lim_carol"))  # a's own five, used up


def wait_until_logged(replicas: tuple[Replica, ...], line: str, dds: DdsEnvironment) -> None:
    """Send requests of fresh users to ``replicas`` until each has logged ``line``."""
    deadline = time.monotonic() + 30
    for replica in replicas:
        while line not in replica.log():
            assert time.monotonic() < deadline, f"{replica.url} did not log {line!r}"
            assert me(replica, dds, f"lim_probe{next(_probes)}").status_code == 200
            time.sleep(0.05)


def test_replicas_count_alone_while_redis_is_down_and_share_again_after(
        dds: DdsEnvironment, store_id: str, redis: RedisServer, tmp_path: Path) -> None:
    settings = {"rate_limit": "4/minute", "rate_limit_storage_uri": redis.url}
    with gateway_replicas(dds, store_id, tmp_path / "outage", limits=settings) as (a, b):
        assert me(a, dds, "lim_dave").status_code == 200
        assert me(b, dds, "lim_dave").status_code == 200
        redis.stop()
        # Down: no request fails for it; each replica counts dave alone, from zero.
        for _ in range(4):
            assert me(a, dds, "lim_dave").status_code == 200
        refused(me(a, dds, "lim_dave"))  # the limit still holds, per replica
        assert me(b, dds, "lim_dave").status_code == 200
        assert DOWN_LINE in a.log() and DOWN_LINE in b.log()
        assert "Traceback" not in a.log() + b.log()

        redis.start()  # empty: it keeps nothing on disk
        wait_until_logged((a, b), BACK_LINE, dds)
        for replica in (a, b, a, b):  # shared again: erin's four, on both replicas
            assert me(replica, dds, "lim_erin").status_code == 200
        refused(me(b, dds, "lim_erin"))
        refused(me(a, dds, "lim_erin"))
        assert me(a, dds, "lim_frank").status_code == 200


def test_the_limiter_falls_back_while_redis_is_down_and_returns_to_it(
        redis: RedisServer) -> None:
    """In process: which counters a hit uses as Redis goes and comes back (no retry delay)."""
    limiter = rate_limiter_for(LimitSettings(rate_limit_storage_uri=redis.url))
    assert isinstance(limiter, SharedStoreLimiter)
    assert isinstance(limiter.storage, RedisStorage)  # the counters live in Redis
    limiter.retry_seconds = 0.0
    item = limits.parse("2/minute")

    async def three_hits() -> list[bool]:
        return [await limiter.hit(item, "acme", "gina") for _ in range(3)]

    assert asyncio.run(three_hits()) == [True, True, False]
    assert not limiter.degraded
    redis.stop()
    assert asyncio.run(three_hits()) == [True, True, False]  # this process's counters
    assert limiter.degraded
    assert asyncio.run(limiter.get_window_stats(item, "acme", "gina")).remaining == 0
    redis.start()
    assert asyncio.run(three_hits()) == [True, True, False]  # Redis again, empty after restart
    assert not limiter.degraded


def test_a_store_that_never_answers_is_given_up_after_the_timeout() -> None:
    """A store that accepts connections and never answers: the hit is counted locally (without
    the timeout it would wait for ever)."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        limiter = rate_limiter_for(LimitSettings(rate_limit_storage_uri=url,
                                                 rate_limit_storage_timeout_seconds=0.2))
        assert isinstance(limiter, SharedStoreLimiter)

        async def hit() -> bool:
            return await asyncio.wait_for(limiter.hit(limits.parse("1/minute"), "a", "b"), 60)

        assert asyncio.run(hit())
        assert limiter.degraded
