"""Relations in what the gateway answers, over real HTTP (REST and MCP): ``DELETE /v1/me``
counts the relations it erases, and every ``linked`` item of a search says how it is linked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from dds import DdsEnvironment
from gateway_live import LiveGateway, live_gateway
from test_gateway_mcp import Tools, with_tools


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("relations")) as live:
        yield live


def relate(http: httpx.Client, source: str, target: str, relation_type: str) -> str:
    made = http.post("/v1/relations", json={
        "source_record_id": source, "source_record_type": "memory", "target_record_id": target,
        "target_record_type": "memory", "relation_type": relation_type})
    assert made.status_code == 201, made.text
    relation_id: str = made.json()["id"]
    return relation_id


def memory(http: httpx.Client, content: str) -> str:
    made = http.post("/v1/memories", json={"content": content})
    assert made.status_code == 201, made.text
    memory_id: str = made.json()["id"]
    return memory_id


def test_the_erasure_receipt_counts_the_relations_it_erased(gateway: LiveGateway) -> None:
    with gateway.client("erase_links") as http, gateway.client("erase_bystander") as other:
        kept = relate(other, memory(other, "kept a"), memory(other, "kept b"), "supports")
        a, b, c = (memory(http, text) for text in ("first", "second", "third"))
        relate(http, a, b, "supports")
        relate(http, b, c, "refines")
        receipt = http.delete("/v1/me")
        assert receipt.status_code == 200, receipt.text
        counts = receipt.json()["counts"]
        assert counts["relation"] == 2 and counts["memory"] == 3
        assert http.get("/v1/relations").json()["items"] == []
        # Positive control: another user's relation is neither erased nor counted.
        assert [r["id"] for r in other.get("/v1/relations").json()["items"]] == [kept]
        again = http.delete("/v1/me").json()["counts"]
        assert again["relation"] == 0 and again["memory"] == 0


def linked_chain(gateway: LiveGateway, user: str) -> tuple[str, str, str, str, str]:
    """Memories ``a -supports-> b -refines-> c`` of ``user``; their ids and the relations'."""
    with gateway.client(user) as http:
        a = memory(http, "zebra crossings are painted white")
        b = memory(http, "road markings use reflective paint")
        c = memory(http, "paint reflects headlights at night")
        return a, b, c, relate(http, a, b, "supports"), relate(http, b, c, "refines")


def hit_of(results: list[dict[str, Any]], record_id: str) -> dict[str, Any]:
    [hit] = [h for h in results if h["record"]["id"] == record_id]
    return hit


def check_linked(results: list[dict[str, Any]], chain: tuple[str, str, str, str, str]) -> None:
    """Each ``linked`` item names its relation, read from the side of the record above it."""
    a, b, c, a_b, b_c = chain
    [to_b] = hit_of(results, a)["linked"]
    assert (to_b["id"], to_b["relation_type"], to_b["relation_id"]) == (b, "supports", a_b)
    [to_c] = to_b["linked"]  # the second hop hangs under the first
    assert (to_c["id"], to_c["relation_type"], to_c["relation_id"]) == (c, "refines", b_c)
    assert to_c["linked"] == []
    from_b = hit_of(results, b)["linked"]  # b is the target of one relation, the source of one
    assert sorted((x["id"], x["relation_type"]) for x in from_b) == sorted(
        [(a, "is_supported_by"), (c, "refines")])


def test_search_says_how_each_linked_item_is_linked(gateway: LiveGateway) -> None:
    chain = linked_chain(gateway, "search_links")
    with gateway.client("search_links") as http:
        found = http.post("/v1/search", json={"query": "zebra paint headlights", "k": 10,
                                              "num_hops": 2, "formatted": True})
        assert found.status_code == 200, found.text
        check_linked(found.json()["results"], chain)
        # The prompt text says the same.
        assert "<relation_type>supports</relation_type>" in found.json()["formatted"]
        # Positive control: without hops nothing is linked.
        plain = http.post("/v1/search", json={"query": "zebra paint headlights", "k": 10})
        assert all(hit["linked"] == [] for hit in plain.json()["results"])
        schema = http.get("/openapi.json").json()["components"]["schemas"]
    assert {"relation_type", "relation_id", "linked"} <= set(
        schema["LinkedRecord"]["properties"])


def test_the_mcp_search_says_how_each_linked_item_is_linked(gateway: LiveGateway) -> None:
    chain = linked_chain(gateway, "mcp_search_links")

    async def work(tools: Tools) -> dict[str, Any]:
        return await tools.ok("search", query="zebra paint headlights", k=10, num_hops=2)

    check_linked(with_tools(gateway, "mcp_search_links", work)["results"], chain)
