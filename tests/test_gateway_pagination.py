"""Keyset pages over real HTTP: items added or deleted between two page fetches are neither
repeated nor skipped, on every list (memories, threads, messages, relations); a malformed or
foreign cursor is a 400; a cursor is a position in the caller's own list only (another user's
cursor shows the caller nothing of that user)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from dds import IDP, DdsEnvironment
from gateway_live import LiveGateway, live_gateway
from oam_gateway.errors.problems import PROBLEM_CONTENT_TYPE, problem_type

Between = Callable[[], None]


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("pages")) as live:
        yield live


def page_through(http: httpx.Client, path: str, limit: int,
                 between: list[Between]) -> list[list[str]]:
    """The ids of every page of ``path``, running ``between[n]`` after page ``n``."""
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        answer = http.get(path, params=params)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        pages.append([item["id"] for item in body["items"]])
        cursor = body.get("next_cursor")
        if cursor is None:
            return pages
        if len(pages) <= len(between):
            between[len(pages) - 1]()


def assert_each_once(pages: list[list[str]], stable: list[str], gone: set[str]) -> None:
    """No id twice; every id that existed throughout (``stable``, newest first) on the pages,
    in order; none of ``gone`` (deleted before its page was fetched)."""
    seen = [item for page in pages for item in page]
    assert len(seen) == len(set(seen)), f"repeated: {pages}"
    assert [item for item in seen if item in stable] == stable, f"skipped: {pages}"
    assert not gone & set(seen)


def add_memories(http: httpx.Client, contents: list[str]) -> list[str]:
    """Memories added one request each (newest last)."""
    ids = []
    for content in contents:
        answer = http.post("/v1/memories", json={"content": content})
        assert answer.status_code == 201, answer.text
        ids.append(answer.json()["id"])
    return ids


def test_memory_pages_neither_repeat_nor_skip_while_another_request_writes(
        gateway: LiveGateway) -> None:
    with gateway.client("pager") as http, gateway.client("pager") as writer:
        singles = add_memories(http, [f"single {n}" for n in range(5)])
        batch = http.post("/v1/memories:batch", json={"operations": [
            {"op": "add", "content": f"batched {n}"} for n in range(4)]})  # one created time
        assert batch.status_code == 200, batch.text
        batched = [r["id"] for r in batch.json()["results"]]
        first = http.get("/v1/memories", params={"limit": 3}).json()["items"]
        newest_first = [item["id"] for item in http.get("/v1/memories").json()["items"]]
        assert set(newest_first) == set(singles + batched)
        later = newest_first[3:]
        added: list[str] = []

        def add_two() -> None:  # newer than every page: they shift an offset by two
            added.extend(add_memories(writer, ["newer 1", "newer 2"]))

        def delete_seen_and_unseen() -> None:
            for memory_id in (newest_first[0], newest_first[1], later[-1]):
                assert writer.delete(f"/v1/memories/{memory_id}").status_code == 204

        pages = page_through(http, "/v1/memories", 3, [add_two, delete_seen_and_unseen])
    assert pages[0] == [item["id"] for item in first]
    assert_each_once(pages, newest_first[:-1], {later[-1], *added})


def test_thread_pages_neither_repeat_nor_skip(gateway: LiveGateway) -> None:
    with gateway.client("thread_pager") as http:
        ids = [http.post("/v1/threads", json={}).json()["id"] for _ in range(7)]
        newest_first = [item["id"] for item in http.get("/v1/threads").json()["items"]]
        assert sorted(newest_first) == sorted(ids)

        def add_and_delete() -> None:
            http.post("/v1/threads", json={})
            assert http.delete(f"/v1/threads/{newest_first[0]}").status_code == 204
            assert http.delete(f"/v1/threads/{newest_first[1]}").status_code == 204
            assert http.delete(f"/v1/threads/{newest_first[1]}").status_code == 404

        pages = page_through(http, "/v1/threads", 2, [add_and_delete])
    assert_each_once(pages, newest_first, set())


def test_message_pages_neither_repeat_nor_skip_while_messages_are_added(
        gateway: LiveGateway) -> None:
    with gateway.client("message_pager") as http:
        thread_id = http.post("/v1/threads", json={}).json()["id"]
        path = f"/v1/threads/{thread_id}/messages"

        def add(n: int) -> list[str]:
            answer = http.post(path, json={"messages": [
                {"role": "user", "content": f"message {i}"} for i in range(n)]})
            assert answer.status_code == 201, answer.text
            ids: list[str] = answer.json()["ids"]
            return ids

        def add_later() -> None:  # newer than every page: they shift an offset
            add(2)

        ids = add(7)
        pages = page_through(http, path, 3, [add_later, add_later])
    assert_each_once(pages, list(reversed(ids)), set())


def test_relation_pages_neither_repeat_nor_skip(gateway: LiveGateway) -> None:
    with gateway.client("relation_pager") as http:
        hub, *others = add_memories(http, [f"memory {n}" for n in range(9)])

        def relate(target: str) -> str:
            answer = http.post("/v1/relations", json={
                "source_record_id": hub, "source_record_type": "memory",
                "target_record_id": target, "target_record_type": "memory",
                "relation_type": "supports"})
            assert answer.status_code == 201, answer.text
            relation_id: str = answer.json()["id"]
            return relation_id

        for target in others[:6]:
            relate(target)
        newest_first = [item["id"] for item in http.get("/v1/relations").json()["items"]]

        def add_two() -> None:
            relate(others[6])
            relate(others[7])

        def delete_seen() -> None:
            for relation_id in newest_first[:2]:
                assert http.delete(f"/v1/relations/{relation_id}").status_code == 204

        pages = page_through(http, "/v1/relations", 2, [add_two, delete_seen])
    assert_each_once(pages, newest_first, set())


def encode(payload: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def refused(answer: httpx.Response) -> None:
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
    assert answer.json()["type"] == problem_type("invalid-request")


def test_a_malformed_tampered_or_foreign_cursor_is_a_400(gateway: LiveGateway) -> None:
    with gateway.client("cursor_tamperer") as http:
        add_memories(http, ["a", "b", "c"])
        thread_id = http.post("/v1/threads", json={}).json()["id"]
        http.post(f"/v1/threads/{thread_id}/messages", json={"messages": [
            {"role": "user", "content": "hi"}, {"role": "user", "content": "there"}]})
        good = http.get("/v1/memories", params={"limit": 1}).json()["next_cursor"]
        assert http.get("/v1/memories", params={"cursor": good}).status_code == 200  # control
        payload = json.loads(base64.urlsafe_b64decode(good + "=" * (-len(good) % 4)))
        messages = f"/v1/threads/{thread_id}/messages"
        message_cursor = http.get(messages, params={"limit": 1}).json()["next_cursor"]
        assert http.get(messages, params={"cursor": message_cursor}).status_code == 200
        bad = [
            "garbage!", good[:-3], good[::-1], encode({"o": 3}), encode([1, 2]),
            encode({**payload, "l": "threads"}), encode({**payload, "extra": 1}),
            encode({**payload, "t": "yesterday"}), encode({**payload, "t": "2026-01-01T00:00"}),
            encode({**payload, "i": ""}), encode({**payload, "i": "x" * 129}),
            encode({**payload, "i": 7}), encode({**payload, "t": None}),
            '{"l":"memories"}',
        ]
        for cursor in bad:
            refused(http.get("/v1/memories", params={"cursor": cursor}))
        # A lone surrogate (valid JSON, not valid Unicode) and a NUL are refused, not a 500.
        for text in ("\ud800", "a\x00b"):
            refused(http.get("/v1/memories", params={"cursor": encode({**payload, "i": text})}))
        refused(http.get("/v1/threads", params={"cursor": good}))
        refused(http.get("/v1/relations", params={"cursor": good}))
        refused(http.get(messages, params={"cursor": good}))
        refused(http.get("/v1/memories", params={"cursor": message_cursor}))
        for seq_no in (-1, True, 2 ** 63, "1"):
            refused(http.get(messages, params={"cursor": encode({"l": "messages",
                                                                  "s": seq_no})}))


def test_another_users_cursor_shows_nothing_of_that_user(gateway: LiveGateway) -> None:
    with gateway.client("cursor_owner_b") as bob:
        bobs = set(add_memories(bob, ["bob 1", "bob 2"]))  # older than every one of alice's
    with gateway.client("cursor_owner_a") as alice:
        alices = add_memories(alice, [f"alice {n}" for n in range(4)])
        first = alice.get("/v1/memories", params={"limit": 2}).json()
        cursor = first["next_cursor"]
        control = alice.get("/v1/memories", params={"limit": 2, "cursor": cursor}).json()
    assert [m["id"] for m in first["items"] + control["items"]] == list(reversed(alices))
    with gateway.client("cursor_owner_b") as bob:
        taken = bob.get("/v1/memories", params={"cursor": cursor})
        assert taken.status_code == 200, taken.text
        items = taken.json()["items"]
        # A forged position far in the future lists only bob's own memories too.
        forged = bob.get("/v1/memories", params={"cursor": encode({
            "l": "memories", "t": "9999-01-01T00:00:00+00:00", "i": alices[0]})}).json()
    assert {m["id"] for m in items} == bobs
    assert {m["user_id"] for m in items} == {f"{IDP}:cursor_owner_b"}
    assert {m["id"] for m in forged["items"]} == bobs
