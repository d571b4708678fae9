"""The REST API under ``/v1`` over real HTTP, on a protected store of the embedded database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from dds import IDP, DdsEnvironment
from gateway_live import LiveGateway, live_gateway, problem


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("rest")) as live:
        yield live



def test_me_names_the_verified_caller(gateway: LiveGateway) -> None:
    with gateway.client("rest_me") as http:
        me = http.get("/v1/me").json()
    assert me["user_name"] == f"{IDP}:rest_me"
    assert me["subject"] == "rest_me" and me["tenant"] == "acme"
    assert me["scopes"] == ["memory:read", "memory:write"]


def test_the_profile_is_created_then_replaced(gateway: LiveGateway) -> None:
    with gateway.client("rest_profile") as http:
        problem(http.get("/v1/me/profile"), 404, "record-not-found")
        created = http.put("/v1/me/profile", json={"information": "likes tea"})
        assert created.status_code == 201
        assert created.json()["content"] == "likes tea"
        replaced = http.put("/v1/me/profile", json={"information": "likes coffee",
                                                    "metadata": {"tz": "UTC"}})
        assert replaced.status_code == 200
        got = http.get("/v1/me/profile").json()
    assert got["content"] == "likes coffee" and got["metadata"] == {"tz": "UTC"}
    assert got["id"] == f"{IDP}:rest_profile"


def test_threads_and_messages_round_trip(gateway: LiveGateway) -> None:
    with gateway.client("rest_threads") as http:
        thread = http.post("/v1/threads", json={"agent_id": "helper",
                                                "metadata": {"topic": "trip"}})
        assert thread.status_code == 201, thread.text
        thread_id = thread.json()["id"]
        assert thread.json()["user_id"] == f"{IDP}:rest_threads"
        added = http.post(f"/v1/threads/{thread_id}/messages", json={"messages": [
            {"role": "user", "content": f"message {i}", "metadata": {"i": i}}
            for i in range(5)]})
        assert added.status_code == 201, added.text
        assert len(added.json()["ids"]) == 5
        first = http.get(f"/v1/threads/{thread_id}/messages", params={"limit": 3}).json()
        assert [m["content"] for m in first["items"]] == ["message 4", "message 3",
                                                          "message 2"]
        rest = http.get(f"/v1/threads/{thread_id}/messages",
                        params={"limit": 3, "cursor": first["next_cursor"]}).json()
        assert [m["content"] for m in rest["items"]] == ["message 1", "message 0"]
        assert rest.get("next_cursor") is None
        assert rest["items"][0]["metadata"] == {"i": 1}
        patched = http.patch(f"/v1/threads/{thread_id}", json={"metadata": {"topic": "x"}})
        assert patched.json()["metadata"] == {"topic": "x"}
        listed = http.get("/v1/threads").json()["items"]
        assert [t["id"] for t in listed] == [thread_id]
        assert http.delete(f"/v1/threads/{thread_id}").status_code == 204
        problem(http.get(f"/v1/threads/{thread_id}"), 404, "record-not-found")
        problem(http.get(f"/v1/threads/{thread_id}/messages"), 404, "record-not-found")


def test_memories_round_trip_and_search_finds_them(gateway: LiveGateway) -> None:
    with gateway.client("rest_memories") as http:
        made = http.post("/v1/memories", json={"content": "the user is allergic to peanuts",
                                               "memory_type": "fact",
                                               "metadata": {"source": "chat"}})
        assert made.status_code == 201, made.text
        memory = made.json()
        assert memory["record_type"] == "fact"
        assert memory["user_id"] == f"{IDP}:rest_memories"
        other = http.post("/v1/memories", json={"content": "prefers window seats"}).json()
        got = http.get(f"/v1/memories/{memory['id']}").json()
        assert got["content"] == "the user is allergic to peanuts"
        changed = http.patch(f"/v1/memories/{memory['id']}",
                             json={"content": "the user is allergic to tree nuts"})
        assert changed.json()["content"] == "the user is allergic to tree nuts"
        assert changed.json()["metadata"] == {"source": "chat"}
        found = http.post("/v1/search", json={"query": "allergic to nuts", "k": 5,
                                              "formatted": True}).json()
        assert found["results"][0]["record"]["id"] == memory["id"]
        assert "tree nuts" in found["formatted"]
        listed = http.get("/v1/memories").json()["items"]
        assert {m["id"] for m in listed} == {memory["id"], other["id"]}
        assert http.delete(f"/v1/memories/{memory['id']}").status_code == 204
        problem(http.get(f"/v1/memories/{memory['id']}"), 404, "record-not-found")
        problem(http.delete(f"/v1/memories/{memory['id']}"), 404, "record-not-found")


def test_a_batch_applies_every_operation_or_none(gateway: LiveGateway) -> None:
    with gateway.client("rest_batch") as http:
        kept = http.post("/v1/memories", json={"content": "kept"}).json()
        failing = http.post("/v1/memories:batch", json={"operations": [
            {"op": "add", "content": "never stored"},
            {"op": "update", "id": kept["id"], "content": "never changed"},
            {"op": "delete", "id": "no-such-memory"}]})
        body = problem(failing, 404, "record-not-found")
        assert body["detail"].startswith("operations[2]")
        contents = {m["content"] for m in http.get("/v1/memories").json()["items"]}
        assert contents == {"kept"}  # the add and the update rolled back
        applied = http.post("/v1/memories:batch", json={"operations": [
            {"op": "add", "content": "added in a batch"},
            {"op": "update", "id": kept["id"], "content": "changed in a batch"}]})
        assert applied.status_code == 200, applied.text
        assert [r["op"] for r in applied.json()["results"]] == ["add", "update"]
        contents = {m["content"] for m in http.get("/v1/memories").json()["items"]}
        assert contents == {"added in a batch", "changed in a batch"}


def test_relations_link_the_callers_memories(gateway: LiveGateway) -> None:
    with gateway.client("rest_relations") as http:
        a = http.post("/v1/memories", json={"content": "a"}).json()["id"]
        b = http.post("/v1/memories", json={"content": "b"}).json()["id"]
        made = http.post("/v1/relations", json={
            "source_record_id": a, "source_record_type": "memory", "target_record_id": b,
            "target_record_type": "memory", "relation_type": "supports"})
        assert made.status_code == 201, made.text
        again = problem(http.post("/v1/relations", json={
            "source_record_id": a, "source_record_type": "memory", "target_record_id": b,
            "target_record_type": "memory", "relation_type": "contradicts"}), 409,
            "duplicate-relation")
        assert "_uq" not in again["detail"] and "Key (" not in again["detail"]  # no internals
        reused = problem(http.post("/v1/relations", json={
            "source_record_id": b, "source_record_type": "memory", "target_record_id": a,
            "target_record_type": "memory", "relation_type": "x",
            "relation_id": made.json()["id"]}), 409, "duplicate-relation")
        assert "_uq" not in reused["detail"] and "Key (" not in reused["detail"]
        listed = http.get("/v1/relations").json()["items"]
        assert [r["id"] for r in listed] == [made.json()["id"]]
        assert http.delete(f"/v1/relations/{made.json()['id']}").status_code == 204
        assert http.get("/v1/relations").json()["items"] == []
        problem(http.delete(f"/v1/relations/{made.json()['id']}"), 404, "record-not-found")


def test_export_then_erase_everything_of_the_caller(gateway: LiveGateway) -> None:
    with gateway.client("rest_erase") as http, gateway.client("rest_bystander") as other:
        other.post("/v1/memories", json={"content": "not erased"})
        http.put("/v1/me/profile", json={"information": "profile"})
        thread_id = http.post("/v1/threads", json={}).json()["id"]
        http.post(f"/v1/threads/{thread_id}/messages",
                  json={"messages": [{"role": "user", "content": "hi"}]})
        http.post("/v1/memories", json={"content": "fact", "memory_type": "fact",
                                        "thread_id": thread_id})
        http.post("/v1/memories", json={"content": "free memory"})
        export = http.get("/v1/me/export")
        assert export.headers["content-type"].startswith("application/jsonl")
        kinds = sorted(json.loads(line)["kind"] for line in export.text.splitlines())
        assert kinds == ["fact", "memory", "message", "thread", "user_profile"]
        receipt = http.delete("/v1/me")
        assert receipt.status_code == 200, receipt.text
        counts = receipt.json()["counts"]
        assert {k: v for k, v in counts.items() if v} == {
            "user_profile": 1, "thread": 1, "message": 1, "fact": 1, "memory": 1}
        assert http.get("/v1/me/export").text == ""
        assert [m["content"] for m in other.get("/v1/memories").json()["items"]] == [
            "not erased"]


def test_bodies_are_validated_with_problem_details(gateway: LiveGateway) -> None:
    with gateway.client("rest_invalid") as http:
        problem(http.post("/v1/memories", json={"content": ""}), 400, "invalid-request")
        problem(http.post("/v1/memories", json={"content": "x", "colour": "red"}), 400,
                "invalid-request")
        problem(http.post("/v1/memories", content=b"{not json",
                          headers={"content-type": "application/json"}), 400, "invalid-request")
        problem(http.post("/v1/search", json={"query": "x", "k": 100000}), 400,
                "invalid-request")
        deep: dict[str, Any] = {"a": 1}
        for _ in range(12):
            deep = {"$and": [deep]}
        problem(http.post("/v1/search", json={"query": "x", "metadata_filter": deep}), 400,
                "invalid-request")
        problem(http.get("/v1/memories", params={"cursor": "garbage!"}), 400,
                "invalid-request")
        problem(http.get("/v1/memories", params={"limit": 0}), 400, "invalid-request")


def test_the_openapi_document_describes_every_route(gateway: LiveGateway) -> None:
    document = httpx.get(f"{gateway.url}/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    operations = {(method.upper(), path) for path, ops in document["paths"].items()
                  for method in ops}
    assert ("POST", "/v1/memories:batch") in operations
    assert ("GET", "/v1/memories/{memory_id}") in operations
    assert ("DELETE", "/v1/me") in operations
    assert "MemoryIn" in document["components"]["schemas"]
    docs = httpx.get(f"{gateway.url}/docs")
    assert docs.headers["content-type"].startswith("text/html")
    assert "/v1/search" in docs.text and "<script" not in docs.text
