"""A route's query is checked when the request has one: a ``user_id`` naming another user
answers 403 and text the database cannot store answers 400, on a route that takes no query
parameter too; a request without a query string skips those checks and is answered."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from dds import DdsEnvironment
from gateway_live import live_gateway, problem


@pytest.fixture(scope="module")
def http(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[httpx.Client]:
    with live_gateway(dds, tmp_path_factory.mktemp("query")) as live, \
            live.client("query_user") as client:
        yield client


def _memory_id(http: httpx.Client) -> str:
    added = http.post("/v1/memories", json={"content": "query checks"})
    assert added.status_code == 201, added.text
    return str(added.json()["id"])


def test_queries_are_checked_and_requests_without_one_answered(http: httpx.Client) -> None:
    memory_id = _memory_id(http)
    # Positive controls: no query, an empty query, the caller's own user_id.
    assert http.get(f"/v1/memories/{memory_id}").status_code == 200
    assert http.get(f"/v1/memories/{memory_id}?").status_code == 200
    me = str(http.get(f"/v1/memories/{memory_id}").json()["user_id"])
    assert http.get("/v1/memories", params={"user_id": me}).status_code == 200
    for path in (f"/v1/memories/{memory_id}", "/v1/memories"):
        problem(http.get(path, params={"user_id": "someone-else"}), 403, "user-id-mismatch")
        nul = problem(http.get(f"{path}?note=a%00b"), 400, "invalid-request")
        assert "the query holds" in nul["detail"], nul
