"""Two gateway replicas on one database: nothing a replica keeps changes an answer.

Two ``oam-gateway serve`` processes over one protected store serve a user's requests in turn
(as a round-robin load balancer would send them): what one replica writes the other reads, a
list cursor one made pages on the other, the end-user contexts and the verified-token caches of
both leave every user to their own rows, a revoked grant takes effect on both at once, and an
export or an erase on one is what the other sees. Where both replicas answer the same request,
the answers are compared whole.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from dds import GROUP, IDP, OWNER, POLICIES, DdsEnvironment
from gateway_live import VECTOR_DIM, problem
from gateway_replicas import Replica, bearer, gateway_replicas
from oracleagentmemory.core.deepsec import (
    OciGroupPrincipal,
    grant_agent_memory_policies,
    revoke_agent_memory_policies,
)


class RoundRobin:
    """A user's HTTP client that sends each request to the next replica in turn."""

    def __init__(self, replicas: list[Replica], dds: DdsEnvironment, user: str,
                 scope: str | None = None) -> None:
        headers = bearer(dds, user) if scope is None else bearer(dds, user, scope)
        self.clients = [httpx.Client(base_url=r.url, headers=headers, timeout=30)
                        for r in replicas]
        self._turn = itertools.cycle(self.clients)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """``method path`` on the next replica."""
        return next(self._turn).request(method, path, **kwargs)

    def on_each(self, method: str, path: str, **kwargs: Any) -> list[httpx.Response]:
        """``method path`` on every replica, in order."""
        return [client.request(method, path, **kwargs) for client in self.clients]

    def same_on_each(self, path: str, **params: Any) -> Any:
        """``GET path`` on every replica: the one status and JSON body they all answer."""
        answers = self.on_each("GET", path, params=params)
        assert len({(a.status_code, a.text) for a in answers}) == 1, [a.text for a in answers]
        return answers[0].json()

    def close(self) -> None:
        for client in self.clients:
            client.close()


@pytest.fixture(scope="module")
def store_id(dds: DdsEnvironment) -> str:
    return dds.new_store(vector_dim=VECTOR_DIM)


@pytest.fixture(scope="module")
def replicas(dds: DdsEnvironment, store_id: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Replica]]:
    with gateway_replicas(dds, store_id, tmp_path_factory.mktemp("replicas"),
                          limits={"rate_limit": "100000/minute"}) as running:
        yield running


def round_robin(replicas: list[Replica], dds: DdsEnvironment, user: str,
                **kwargs: Any) -> Iterator[RoundRobin]:
    http = RoundRobin(replicas, dds, user, **kwargs)
    try:
        yield http
    finally:
        http.close()


@pytest.fixture
def alice(replicas: list[Replica], dds: DdsEnvironment) -> Iterator[RoundRobin]:
    yield from round_robin(replicas, dds, "rep_alice")


@pytest.fixture
def bob(replicas: list[Replica], dds: DdsEnvironment) -> Iterator[RoundRobin]:
    yield from round_robin(replicas, dds, "rep_bob")


def test_what_one_replica_writes_the_other_reads(alice: RoundRobin) -> None:
    assert alice.request("PUT", "/v1/me/profile", json={"information": "tea"}).status_code in (
        200, 201)
    assert alice.same_on_each("/v1/me/profile")["content"] == "tea"
    thread = alice.request("POST", "/v1/threads", json={"agent_id": "helper"})
    assert thread.status_code == 201, thread.text
    thread_id = thread.json()["id"]
    for i in range(4):  # each message on the next replica, in order
        added = alice.request("POST", f"/v1/threads/{thread_id}/messages",
                              json={"messages": [{"role": "user", "content": f"m{i}"}]})
        assert added.status_code == 201, added.text
    listed = alice.same_on_each(f"/v1/threads/{thread_id}/messages")
    assert [m["content"] for m in listed["items"]] == ["m3", "m2", "m1", "m0"]
    made = alice.request("POST", "/v1/memories", json={"content": "allergic to peanuts"})
    assert made.status_code == 201, made.text
    memory_id = made.json()["id"]
    changed = alice.request("PATCH", f"/v1/memories/{memory_id}",
                            json={"content": "allergic to peanuts and almonds"})
    assert changed.status_code == 200, changed.text
    assert alice.same_on_each(f"/v1/memories/{memory_id}")["content"] == (
        "allergic to peanuts and almonds")
    searches = alice.on_each("POST", "/v1/search", json={"query": "almonds", "k": 5})
    assert searches[0].status_code == 200 and searches[0].json() == searches[1].json()
    assert searches[0].json()["results"][0]["record"]["id"] == memory_id
    assert alice.request("DELETE", f"/v1/memories/{memory_id}").status_code == 204
    for answer in alice.on_each("GET", f"/v1/memories/{memory_id}"):
        problem(answer, 404, "record-not-found")


def test_a_cursor_made_by_one_replica_pages_on_the_other(alice: RoundRobin) -> None:
    ids = [alice.request("POST", "/v1/memories", json={"content": f"page fact {i}"}).json()["id"]
           for i in range(7)]
    one_replica = []
    params: dict[str, Any] = {"limit": 2}
    while True:  # every page from the first replica
        page = alice.clients[0].get("/v1/memories", params=params).json()
        one_replica += [m["id"] for m in page["items"]]
        if page.get("next_cursor") is None:
            break
        params = {"limit": 2, "cursor": page["next_cursor"]}
    alternated = []
    params = {"limit": 2}
    while True:  # each page from the other replica than the last
        page = alice.request("GET", "/v1/memories", params=params).json()
        alternated += [m["id"] for m in page["items"]]
        if page.get("next_cursor") is None:
            break
        params = {"limit": 2, "cursor": page["next_cursor"]}
    assert alternated == one_replica
    assert set(ids) <= set(alternated)


def test_each_user_sees_only_their_own_rows_on_either_replica(
        alice: RoundRobin, bob: RoundRobin) -> None:
    secret = alice.request("POST", "/v1/memories", json={"content": "alice's secret"})
    assert secret.status_code == 201, secret.text
    secret_id = secret.json()["id"]
    for _ in range(3):  # interleaved: each replica serves alice, then bob, then alice again
        assert alice.same_on_each(f"/v1/memories/{secret_id}")["content"] == "alice's secret"
        for answer in bob.on_each("GET", f"/v1/memories/{secret_id}"):
            problem(answer, 404, "record-not-found")
        assert secret_id not in {m["id"] for m in
                                 bob.same_on_each("/v1/memories", limit=500)["items"]}
    assert alice.same_on_each("/v1/me")["user_name"] == f"{IDP}:rep_alice"
    assert bob.same_on_each("/v1/me")["user_name"] == f"{IDP}:rep_bob"


def test_a_cached_token_grants_no_more_than_its_scope_on_either_replica(
        replicas: list[Replica], dds: DdsEnvironment, alice: RoundRobin) -> None:
    assert alice.same_on_each("/v1/me")["scopes"] == ["memory:read", "memory:write"]
    for reader in round_robin(replicas, dds, "rep_alice", scope="memory:read"):
        assert reader.same_on_each("/v1/me")["scopes"] == ["memory:read"]
        for answer in reader.on_each("POST", "/v1/memories", json={"content": "no"}):
            problem(answer, 403, "insufficient-scope")


def test_a_revoked_grant_takes_effect_on_both_replicas_at_once(
        dds: DdsEnvironment, store_id: str, alice: RoundRobin) -> None:
    made = alice.request("POST", "/v1/memories", json={"content": "granted while it lasts"})
    memory_id = made.json()["id"]
    assert alice.same_on_each(f"/v1/memories/{memory_id}")["id"] == memory_id  # both warm
    group = [OciGroupPrincipal(GROUP, IDP)]
    with psycopg.connect(dds.secadmin_url) as admin:
        revoke_agent_memory_policies(admin, store_id, OWNER, group, POLICIES)
    try:
        for answer in alice.on_each("GET", f"/v1/memories/{memory_id}"):
            problem(answer, 404, "record-not-found")
    finally:
        with psycopg.connect(dds.secadmin_url) as admin:
            grant_agent_memory_policies(admin, store_id, OWNER, group, POLICIES)
    assert alice.same_on_each(f"/v1/memories/{memory_id}")["id"] == memory_id


def test_an_export_and_an_erase_on_one_replica_are_what_the_other_sees(
        replicas: list[Replica], dds: DdsEnvironment, bob: RoundRobin) -> None:
    for carol in round_robin(replicas, dds, "rep_carol"):
        carol.request("PUT", "/v1/me/profile", json={"information": "carol"})
        thread_id = carol.request("POST", "/v1/threads", json={}).json()["id"]
        carol.request("POST", f"/v1/threads/{thread_id}/messages",
                      json={"messages": [{"role": "user", "content": "hi"}]})
        carol.request("POST", "/v1/memories", json={"content": "carol's memory"})
        kept = bob.request("POST", "/v1/memories", json={"content": "bob's, kept"}).json()["id"]
        exports = carol.on_each("GET", "/v1/me/export")
        assert exports[0].status_code == 200 and exports[0].text == exports[1].text
        kinds = sorted(json.loads(line)["kind"] for line in exports[0].text.splitlines())
        assert kinds == ["memory", "message", "thread", "user_profile"]
        erased = carol.clients[1].delete("/v1/me")
        assert erased.status_code == 200, erased.text
        assert [a.text for a in carol.on_each("GET", "/v1/me/export")] == ["", ""]
        assert carol.same_on_each("/v1/memories")["items"] == []
        assert bob.same_on_each(f"/v1/memories/{kept}")["content"] == "bob's, kept"


def test_the_replicas_are_two_processes(replicas: list[Replica]) -> None:
    """What the tests above rely on: two servers, each its own process (own caches)."""
    assert len({r.pid for r in replicas}) == 2 and len({r.url for r in replicas}) == 2
    assert all(Path(f"/proc/{r.pid}").exists() for r in replicas)
