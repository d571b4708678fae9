"""Many users at once over few connections: every response holds only its caller's rows.

200 concurrent requests from 20 users (reads by id, lists, searches, writes, and reads of
another user's ids) over a gateway whose tenant pool has 4 connections, over real HTTP. Each
user's rows carry their name; every response is checked: it is not empty (positive control:
the caller's own rows are there) and nothing in it names another user.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from dds import IDP, DdsEnvironment
from gateway_live import LiveGateway, live_gateway

USERS = [f"crowd{index:02d}" for index in range(20)]
REQUESTS = 200
SEEDED_MEMORIES = 3


@dataclass
class Crowd:
    """Each user's token, thread and memory ids."""

    tokens: dict[str, str]
    threads: dict[str, str] = field(default_factory=dict)
    memories: dict[str, list[str]] = field(default_factory=dict)


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    # 200 requests queue for 4 connections: the slowest waits seconds on a loaded machine, and
    # this test is about keeping users apart, not about the pool's wait limit (default 5 s)
    with live_gateway(dds, tmp_path_factory.mktemp("crowd"), pool_max_size=4,
                      pool_min_size=1, pool_timeout_seconds=60.0) as live:
        yield live


@pytest.fixture(scope="module")
def crowd(gateway: LiveGateway) -> Crowd:
    seeded = Crowd({user: gateway.token(user) for user in USERS})
    for user in USERS:
        with gateway.client(user) as http:
            thread = http.post("/v1/threads", json={"metadata": {"owner": user}}).json()["id"]
            http.post(f"/v1/threads/{thread}/messages", json={"messages": [
                {"role": "user", "content": f"{user} message {i}"} for i in range(2)]})
            seeded.threads[user] = thread
            seeded.memories[user] = [
                http.post("/v1/memories", json={"content": f"{user} note {i} about travel",
                                                "metadata": {"owner": user}}).json()["id"]
                for i in range(SEEDED_MEMORIES)]
    return seeded


def _request(crowd: Crowd, user: str, number: int, other: str) -> tuple[str, str, Any]:
    kind = number % 7
    mine = crowd.memories[user]
    if kind == 0:
        return "GET", f"/v1/memories/{mine[number % len(mine)]}", None
    if kind == 1:
        return "GET", "/v1/memories", None
    if kind == 2:
        return "POST", "/v1/search", {"query": "note about travel", "k": 20}
    if kind == 3:
        return "POST", "/v1/memories", {"content": f"{user} wrote {number}",
                                        "metadata": {"owner": user}}
    if kind == 4:
        return "GET", f"/v1/threads/{crowd.threads[user]}/messages", None
    if kind == 5:
        return "GET", f"/v1/memories/{crowd.memories[other][0]}", None  # another user's
    return "GET", f"/v1/threads/{crowd.threads[other]}", None  # another user's


def _check(user: str, method: str, path: str, answer: httpx.Response, crowd: Crowd) -> None:
    """The answer is the caller's and only the caller's."""
    others = [u for u in USERS if u != user]
    text = answer.text
    assert not any(other in text for other in others), (user, path, text[:300])
    other_ids = [i for u in others for i in (crowd.threads[u], *crowd.memories[u])]
    if any(i in path for i in other_ids):
        assert answer.status_code == 404, (user, path, text)
        return
    assert answer.status_code in (200, 201), (user, path, text)
    body = answer.json()
    if "items" in body:
        rows = body["items"]
    elif "results" in body:
        rows = [hit["record"] for hit in body["results"]]
    else:
        rows = [body]
    assert rows, (user, path)  # positive control: the caller's own rows are there
    for row in rows:
        assert row["user_id"] == f"{IDP}:{user}", (user, path, row)
        assert str(row["content"]).startswith(user), (user, path, row)


def test_200_concurrent_requests_of_20_users_over_4_connections_stay_apart(
        gateway: LiveGateway, crowd: Crowd) -> None:
    rng = random.Random(11)
    plan = []
    for number in range(REQUESTS):
        user = USERS[number % len(USERS)]
        other = rng.choice([u for u in USERS if u != user])
        plan.append((user, *_request(crowd, user, number + number // len(USERS), other)))
    rng.shuffle(plan)

    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=REQUESTS, max_keepalive_connections=REQUESTS)
        async with httpx.AsyncClient(base_url=gateway.url, timeout=60, limits=limits) as http:
            return await asyncio.gather(*(
                http.request(method, path, json=body,
                             headers={"Authorization": f"Bearer {crowd.tokens[user]}"})
                for user, method, path, body in plan))

    answers = asyncio.run(run())
    for (user, method, path, _), answer in zip(plan, answers, strict=True):
        _check(user, method, path, answer, crowd)
    kinds = {(method, path.split("/")[2]) for _, method, path, _ in plan}
    assert {("GET", "memories"), ("POST", "search"), ("POST", "memories"),
            ("GET", "threads")} <= kinds
    # The writes landed, each as its caller's.
    with gateway.dds.owner_store(gateway.store_id) as store:
        written = [r for r in store.list("memory", limit=None) if " wrote " in str(r.content)]
    assert len(written) == sum(1 for _, m, p, _ in plan if m == "POST" and p == "/v1/memories")
    for record in written:
        assert getattr(record, "user_id", None) == f"{IDP}:{str(record.content).split(' ')[0]}"
    assert json.dumps([a.status_code for a in answers]).count("500") == 0
