"""Attacks on the gateway's data routes over real HTTP, on a protected store (embedded database).

The attacker holds a valid token of their own (user ``mallory``) and aims it at the rows of
another user (``victim``): every route and verb answers what a random id answers (404, or an
empty list), and the store, read by its owner without row security, is unchanged. Every probe
has a positive control: the same request against the attacker's own rows succeeds, so a probe
that never worked cannot pass. Also: ``user_id`` smuggling (403), SQL-injection strings in
every string field (stored and read back verbatim, or refused with 400; never executed) and
scopes (``memory:read`` cannot write; no scope cannot read).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
import pytest
from dds import IDP, OWNER, DdsEnvironment
from gateway_live import LiveGateway, live_gateway, problem
from oam_gateway.errors.problems import PROBLEM_CONTENT_TYPE, problem_type
from oam_gateway.rest.endpoints import MAX_BODY_DEPTH
from oam_gateway.rest.views import record_view, relation_view

RECORD_TYPES = ("memory", "fact", "preference", "guideline", "message", "thread",
                "user_profile")

SEARCHABLE = ["memory", "fact", "preference", "guideline", "message", "user_profile"]


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("attacks")) as live:
        yield live



def snapshot(gateway: LiveGateway) -> dict[str, Any]:
    """Every row of the store (records and relations), read by its owner."""
    with gateway.dds.owner_store(gateway.store_id) as store:
        records = {t: sorted(json.dumps(record_view(r).model_dump(mode="json"), sort_keys=True)
                             for r in store.list(t, limit=None)) for t in RECORD_TYPES}
        relations = sorted(json.dumps(relation_view(r).model_dump(mode="json"), sort_keys=True)
                           for r in store.list_relations(limit=None))
    return {"records": records, "relations": relations}


@dataclass
class Seeded:
    """One user's rows: a thread with a message, two memories, a relation between them."""

    thread: str
    message: str
    memory: str
    other_memory: str
    relation: str


def seed(http: httpx.Client, name: str) -> Seeded:
    thread = http.post("/v1/threads", json={"metadata": {"owner": name}})
    assert thread.status_code == 201, thread.text
    thread_id = thread.json()["id"]
    added = http.post(f"/v1/threads/{thread_id}/messages",
                      json={"messages": [{"role": "user", "content": f"{name} says hi"}]})
    assert added.status_code == 201, added.text
    first = http.post("/v1/memories", json={"content": f"{name} secret one",
                                            "thread_id": thread_id}).json()["id"]
    second = http.post("/v1/memories", json={"content": f"{name} secret two",
                                             "memory_type": "fact"}).json()["id"]
    relation = http.post("/v1/relations", json={
        "source_record_id": first, "source_record_type": "memory", "target_record_id": second,
        "target_record_type": "fact", "relation_type": "supports"})
    assert relation.status_code == 201, relation.text
    return Seeded(thread_id, added.json()["ids"][0], first, second, relation.json()["id"])


@pytest.fixture(scope="module")
def victim(gateway: LiveGateway) -> Seeded:
    with gateway.client("victim") as http:
        return seed(http, "victim")


@pytest.fixture(scope="module")
def mallory(gateway: LiveGateway) -> Iterator[httpx.Client]:
    with gateway.client("mallory") as http:
        yield http


# --- 1. another user's ids answer what a random id answers, and change nothing ----------------
def _probes(target: Seeded, own: Seeded) -> list[tuple[str, str, Any]]:
    """Requests naming ``target``'s rows; ``own`` supplies the attacker's side of mixed ones."""
    mem, other, thread = target.memory, target.other_memory, target.thread
    return [
        ("GET", f"/v1/threads/{thread}", None),
        ("PATCH", f"/v1/threads/{thread}", {"metadata": {"owner": "mallory"}}),
        ("DELETE", f"/v1/threads/{thread}", None),
        ("GET", f"/v1/threads/{thread}/messages", None),
        ("POST", f"/v1/threads/{thread}/messages",
         {"messages": [{"role": "user", "content": "injected"}]}),
        ("GET", f"/v1/memories/{mem}", None),
        ("PATCH", f"/v1/memories/{mem}", {"content": "overwritten"}),
        ("PATCH", f"/v1/memories/{mem}", {"status": "invalid"}),
        ("DELETE", f"/v1/memories/{mem}", None),
        ("DELETE", f"/v1/relations/{target.relation}", None),
        ("POST", "/v1/relations", {  # from the attacker's memory to the target's
            "source_record_id": own.memory, "source_record_type": "memory",
            "target_record_id": other, "target_record_type": "fact",
            "relation_type": "steals"}),
        ("POST", "/v1/relations", {  # from the target's memory to the attacker's
            "source_record_id": mem, "source_record_type": "memory",
            "target_record_id": own.other_memory, "target_record_type": "fact",
            "relation_type": "steals"}),
        ("POST", "/v1/memories:batch", {"operations": [{"op": "delete", "id": mem}]}),
        ("POST", "/v1/memories:batch", {"operations": [
            {"op": "add", "content": "rolled back"},
            {"op": "update", "id": mem, "content": "overwritten"}]}),
        ("POST", "/v1/memories:batch", {"operations": [
            {"op": "update", "id": own.memory, "content": "rolled back"},
            {"op": "delete", "id": other}]}),
    ]


def _strip(body: dict[str, Any], *ids: str) -> dict[str, Any]:
    text = json.dumps(body)
    for value in ids:
        text = text.replace(value, "<id>")
    stripped: dict[str, Any] = json.loads(text)
    return stripped


def _header_names(response: httpx.Response) -> set[str]:
    return {name.lower() for name in response.headers} - {"date", "content-length"}


def _random_twin(seeded: Seeded) -> Seeded:
    fresh = {name: f"nx-{uuid.uuid4().hex}" for name in ("thread", "memory", "other_memory",
                                                          "relation")}
    return Seeded(fresh["thread"], "nx-message", fresh["memory"], fresh["other_memory"],
                  fresh["relation"])


def test_another_users_ids_answer_404_like_random_ids_and_change_nothing(
        gateway: LiveGateway, victim: Seeded, mallory: httpx.Client) -> None:
    own = seed(mallory, "mallory")
    before = snapshot(gateway)
    random = _random_twin(victim)
    for (method, path, body), (_, random_path, random_body) in zip(
            _probes(victim, own), _probes(random, own), strict=True):
        attacked = mallory.request(method, path, json=body)
        answer = problem(attacked, 404, "record-not-found")
        unknown = mallory.request(method, random_path, json=random_body)
        baseline = problem(unknown, 404, "record-not-found")
        victim_ids = (victim.thread, victim.memory, victim.other_memory, victim.relation)
        random_ids = (random.thread, random.memory, random.other_memory, random.relation)
        assert _strip(answer, *victim_ids) == _strip(baseline, *random_ids), (method, path)
        assert _header_names(attacked) == _header_names(unknown), (method, path)
    assert snapshot(gateway) == before  # nothing changed, the attacker's own rows included


def test_the_same_probes_work_on_the_callers_own_rows(
        gateway: LiveGateway, mallory: httpx.Client) -> None:
    """Positive control: every probe above succeeds against the attacker's own ids."""
    own, mine = seed(mallory, "mallory"), seed(mallory, "mallory")
    before = snapshot(gateway)
    for method, path, body in _probes(own, mine):
        if method == "DELETE" or "batch" in path and "delete" in json.dumps(body):
            continue  # the deletes are checked below, last (they would remove the targets)
        answer = mallory.request(method, path, json=body)
        assert answer.status_code in (200, 201), (method, path, answer.text)
    assert snapshot(gateway) != before
    assert mallory.delete(f"/v1/relations/{own.relation}").status_code == 204
    assert mallory.delete(f"/v1/memories/{own.memory}").status_code == 204
    assert mallory.post("/v1/memories:batch", json={"operations": [
        {"op": "delete", "id": own.other_memory}]}).status_code == 200
    assert mallory.delete(f"/v1/threads/{own.thread}").status_code == 204


def test_lists_and_searches_never_show_another_users_rows(
        gateway: LiveGateway, victim: Seeded, mallory: httpx.Client) -> None:
    own = seed(mallory, "mallory")
    mine = "mallory"
    pages = [
        mallory.get("/v1/memories").json()["items"],
        mallory.get("/v1/memories", params={"thread_id": victim.thread}).json()["items"],
        mallory.get("/v1/threads").json()["items"],
        mallory.get("/v1/relations").json()["items"],
        mallory.get("/v1/relations", params={"source_record_id": victim.memory}).json()["items"],
        mallory.get("/v1/relations", params={"target_record_id": victim.other_memory}
                    ).json()["items"],
    ]
    for query in ({"query": "victim secret", "k": 50},
                  {"query": "victim secret", "k": 50, "thread_id": victim.thread},
                  {"query": "victim secret", "k": 50, "num_hops": 2,
                   "include_invalid_results": True},
                  {"query": "victim", "k": 50, "record_types": SEARCHABLE}):
        found = mallory.post("/v1/search", json=query)
        assert found.status_code == 200, found.text
        pages.append([hit["record"] for hit in found.json()["results"]])
        pages.append([linked for hit in found.json()["results"] for linked in hit["linked"]])
    export = mallory.get("/v1/me/export").text
    text = json.dumps(pages) + export
    assert "victim" not in text
    for victim_id in (victim.thread, victim.message, victim.memory, victim.other_memory,
                      victim.relation):
        assert victim_id not in text
    # Positive control: the same lists and search show the attacker's own rows.
    assert own.memory in json.dumps(mallory.get("/v1/memories").json())
    assert own.relation in json.dumps(mallory.get("/v1/relations").json())
    assert own.relation in json.dumps(mallory.get(
        "/v1/relations", params={"source_record_id": own.memory}).json())
    hits = mallory.post("/v1/search", json={"query": f"{mine} secret", "k": 50}).json()
    assert own.memory in json.dumps(hits)
    assert own.thread in export and own.memory in export


def test_a_memory_filed_under_another_users_thread_is_not_theirs(
        gateway: LiveGateway, victim: Seeded, mallory: httpx.Client) -> None:
    """Naming the victim's thread on a new memory neither reaches into it nor shows it."""
    made = mallory.post("/v1/memories", json={"content": "planted", "thread_id": victim.thread})
    if made.status_code == 201:
        assert made.json()["user_id"] == f"{IDP}:mallory"
    else:
        problem(made, 404, "record-not-found")
    with gateway.client("victim") as http:
        listed = http.get("/v1/memories", params={"thread_id": victim.thread}).json()["items"]
        hits = http.post("/v1/search", json={"query": "planted", "k": 50}).json()["results"]
    assert "planted" not in json.dumps(listed) + json.dumps(hits)


def test_an_id_another_user_holds_is_the_callers_own_and_leaves_theirs_alone(
        gateway: LiveGateway, victim: Seeded, mallory: httpx.Client) -> None:
    """Ids are keyed per owner: reusing the victim's ids makes the attacker's own rows."""
    thread = mallory.post("/v1/threads", json={"thread_id": victim.thread})
    assert thread.status_code == 201, thread.text
    made = mallory.post("/v1/memories", json={"content": "mallory's twin",
                                              "memory_id": victim.memory})
    assert made.status_code == 201, made.text
    assert made.json()["user_id"] == f"{IDP}:mallory"
    assert mallory.get(f"/v1/memories/{victim.memory}").json()["content"] == "mallory's twin"
    assert mallory.delete(f"/v1/memories/{victim.memory}").status_code == 204
    assert mallory.delete(f"/v1/threads/{victim.thread}").status_code == 204
    with gateway.client("victim") as http:  # the victim's rows of the same ids are intact
        assert http.get(f"/v1/memories/{victim.memory}").json()["content"] == "victim secret one"
        assert http.get(f"/v1/threads/{victim.thread}").status_code == 200
        messages = http.get(f"/v1/threads/{victim.thread}/messages").json()["items"]
        assert [m["content"] for m in messages] == ["victim says hi"]


# --- 2. user_id smuggling --------------------------------------------------------------------
SMUGGLING_BODIES: list[tuple[str, str, dict[str, Any]]] = [
    ("PUT", "/v1/me/profile", {"information": "x"}),
    ("POST", "/v1/threads", {}),
    ("POST", "/v1/memories", {"content": "x"}),
    ("POST", "/v1/memories:batch", {"operations": [{"op": "add", "content": "x"}]}),
    ("POST", "/v1/search", {"query": "x"}),
]


def _with_user(path: str, body: dict[str, Any], user_id: str, own: Seeded
               ) -> list[tuple[str, dict[str, Any]]]:
    """``body`` with ``user_id`` at the top, and in each nested operation it may carry."""
    variants = [(path, {**body, "user_id": user_id})]
    if path.endswith(":batch"):
        for op in ({"op": "add", "content": "x"},
                   {"op": "update", "id": own.memory, "content": "x"},
                   {"op": "delete", "id": own.other_memory}):
            variants.append((path, {"operations": [{**op, "user_id": user_id}]}))
    return variants


def test_a_body_or_query_user_id_of_another_user_answers_403(
        gateway: LiveGateway, victim: Seeded, mallory: httpx.Client) -> None:
    own = seed(mallory, "mallory")
    before = snapshot(gateway)
    others = [f"{IDP}:victim", "victim", "", f"{IDP}:mallory ", f"{IDP}:MALLORY"]
    extra: list[tuple[str, str, dict[str, Any]]] = [
        ("PATCH", f"/v1/threads/{own.thread}", {"metadata": {}}),
        ("POST", f"/v1/threads/{own.thread}/messages",
         {"messages": [{"role": "user", "content": "x"}]}),
        ("PATCH", f"/v1/memories/{own.memory}", {"content": "x"}),
        ("POST", "/v1/relations", {
            "source_record_id": own.memory, "source_record_type": "memory",
            "target_record_id": own.other_memory, "target_record_type": "fact",
            "relation_type": "r"}),
    ]
    for other in others:
        for method, path, body in [*SMUGGLING_BODIES, *extra]:
            for variant_path, variant in _with_user(path, body, other, own):
                answer = mallory.request(method, variant_path, json=variant)
                problem(answer, 403, "user-id-mismatch")
        for path in ("/v1/memories", "/v1/threads", "/v1/relations", "/v1/me",
                     "/v1/me/export", f"/v1/memories/{own.memory}",
                     f"/v1/threads/{own.thread}/messages"):
            problem(mallory.get(path, params={"user_id": other}), 403, "user-id-mismatch")
            # a second user_id after the caller's own one is caught too
            problem(mallory.get(path, params=[("user_id", f"{IDP}:mallory"),
                                              ("user_id", other)]), 403, "user-id-mismatch")
        problem(mallory.delete("/v1/me", params={"user_id": other}), 403, "user-id-mismatch")
        problem(mallory.delete(f"/v1/memories/{own.memory}", params={"user_id": other}), 403,
                "user-id-mismatch")
    assert snapshot(gateway) == before


def test_the_callers_own_user_id_passes(gateway: LiveGateway, mallory: httpx.Client) -> None:
    """Positive control: the same bodies and queries carrying the caller's own user_id."""
    own = seed(mallory, "mallory")
    me = f"{IDP}:mallory"
    for method, path, body in SMUGGLING_BODIES:
        for variant_path, variant in _with_user(path, body, me, seed(mallory, "mallory")):
            answer = mallory.request(method, variant_path, json=variant)
            assert answer.status_code in (200, 201), (path, variant, answer.text)
    for path in ("/v1/memories", "/v1/threads", "/v1/relations", "/v1/me",
                 f"/v1/memories/{own.memory}", f"/v1/threads/{own.thread}/messages"):
        assert mallory.get(path, params={"user_id": me}).status_code == 200, path


# --- 3. SQL-injection strings ----------------------------------------------------------------
NASTY = [
    "'; DROP TABLE memory; --",
    "x' OR '1'='1",
    "\"; DROP SCHEMA oam_test_owner CASCADE; --",
    "$$; DROP TABLE memory; $$",
    "$tag$ SELECT pg_sleep(5) $tag$",
    "\\'; SELECT 1; --",
    "back\\slash\\\\ and \\x00 escaped",
    "\u00e9\u4e2d\u6587 \U0001f600 \u202e rtl \ufeff bom",
    "->> '{a}' #>> '{a,b}' @> '{}' ? 'k' ?| ?& @? '$.a' @@ '$.a == 1'",
    "%s %(name)s {0} {} $1 :name ?",
    "*/ SELECT 1 /*",
    "1; COMMIT; DROP TABLE memory",
    "a" * 200,
]


def segment(value: str) -> str:
    """``value`` as one path segment (percent-encoded; ``/`` included)."""
    return quote(value, safe="")


def _tables(dds: DdsEnvironment) -> set[str]:
    with psycopg.connect(dds.owner_url) as conn:
        return {row[0] for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", [OWNER])}


def _refused_or(answer: httpx.Response, *ok: int) -> bool:
    """True when ``answer`` is one of ``ok``; else it must be a 400 problem (refused)."""
    if answer.status_code in ok:
        return True
    assert answer.status_code == 400, answer.text
    assert answer.json()["type"] in (problem_type("invalid-request"),
                                     problem_type("invalid-argument")), answer.text
    return False


def test_injection_strings_in_every_write_field_are_stored_verbatim(
        gateway: LiveGateway) -> None:
    tables = _tables(gateway.dds)
    before = snapshot(gateway)
    stored = 0
    with gateway.client("injector") as http:
        for index, text in enumerate(NASTY):
            tag = f"{index:02d}"
            metadata = {text: text, "k" + tag: [text, {text: text}]}
            thread = http.post("/v1/threads", json={
                "thread_id": f"t{tag}{text}"[:256], "agent_id": text[:256],
                "metadata": metadata})
            if _refused_or(thread, 201):
                thread_id = thread.json()["id"]
                assert thread_id == f"t{tag}{text}"[:256]
                got = http.get(f"/v1/threads/{segment(thread_id)}")
                assert got.status_code == 200, (text, got.text)
                assert got.json()["metadata"] == metadata
                assert got.json()["agent_id"] == text[:256]
                added = http.post(f"/v1/threads/{segment(thread_id)}/messages", json={"messages": [
                    {"role": "user", "content": text, "metadata": metadata}]})
                assert added.status_code == 201, added.text
                messages = http.get(f"/v1/threads/{segment(thread_id)}/messages"
                                    ).json()["items"]
                assert [(m["content"], m["metadata"]) for m in messages] == [(text, metadata)]
                stored += 1
            else:
                thread_id = None
            made = http.post("/v1/memories", json={
                "content": text, "memory_id": f"m{tag}{text}"[:256], "agent_id": text[:256],
                "metadata": metadata, "memory_type": "preference"})
            if not _refused_or(made, 201):
                continue
            memory_id = made.json()["id"]
            assert memory_id == f"m{tag}{text}"[:256]
            got = http.get(f"/v1/memories/{segment(memory_id)}")
            assert got.status_code == 200, (text, got.text)
            body = got.json()
            assert (body["content"], body["metadata"], body["agent_id"]) == (
                text, metadata, text[:256])
            patched = http.patch(f"/v1/memories/{segment(memory_id)}",
                                 json={"content": text + "!", "metadata": {text: 1}})
            assert patched.status_code == 200, patched.text
            assert patched.json()["content"] == text + "!"
            assert patched.json()["metadata"] == {text: 1}
            relation = http.post("/v1/relations", json={
                "source_record_id": memory_id, "source_record_type": "preference",
                "target_record_id": memory_id, "target_record_type": "preference",
                "relation_type": text[:256], "opposite_relation_type": text[:256],
                "metadata": metadata, "relation_id": f"r{tag}{text}"[:256]})
            if _refused_or(relation, 201):
                assert relation.json()["relation_type"] == text[:256]
                assert relation.json()["id"] == f"r{tag}{text}"[:256]
                listed = http.get("/v1/relations", params={
                    "relation_type": text[:256], "source_record_id": memory_id}).json()
                assert [r["id"] for r in listed["items"]] == [relation.json()["id"]]
            if thread_id is not None:
                listed = http.get("/v1/memories", params={"agent_id": text[:256]}).json()
                assert memory_id in [m["id"] for m in listed["items"]]
            stored += 1
        profile = http.put("/v1/me/profile", json={"information": NASTY[0],
                                                   "metadata": {NASTY[3]: NASTY[8]}})
        assert profile.status_code == 201, profile.text
        assert http.get("/v1/me/profile").json()["content"] == NASTY[0]
    assert stored >= len(NASTY), "most of the strings must be accepted, not refused"
    assert _tables(gateway.dds) == tables
    # Nothing changed but the injector's own new rows.
    after = snapshot(gateway)
    for record_type, rows in before["records"].items():
        assert set(rows) <= set(after["records"][record_type]), record_type
        for row in set(after["records"][record_type]) - set(rows):
            record = json.loads(row)
            assert (record["user_id"] or record["id"]) == f"{IDP}:injector", row
    assert set(before["relations"]) <= set(after["relations"])


def test_a_nul_character_is_refused_with_400_never_500(gateway: LiveGateway) -> None:
    """PostgreSQL text cannot hold U+0000: the gateway refuses it as a bad request."""
    before = snapshot(gateway)
    with gateway.client("nul_writer") as http:
        own = seed(http, "nul_writer")
        calls: list[tuple[str, str, Any]] = [
            ("POST", "/v1/memories", {"content": "a\x00b"}),
            ("POST", "/v1/memories", {"content": "ok", "metadata": {"k": "a\x00b"}}),
            ("POST", "/v1/memories", {"content": "ok", "metadata": {"a\x00b": 1}}),
            ("POST", "/v1/memories", {"content": "ok", "memory_id": "a\x00b"}),
            ("POST", "/v1/memories", {"content": "ok", "agent_id": "a\x00b"}),
            ("POST", "/v1/threads", {"thread_id": "a\x00b"}),
            ("POST", f"/v1/threads/{own.thread}/messages",
             {"messages": [{"role": "user", "content": "a\x00b"}]}),
            ("PATCH", f"/v1/memories/{own.memory}", {"content": "a\x00b"}),
            ("PUT", "/v1/me/profile", {"information": "a\x00b"}),
            ("POST", "/v1/memories:batch", {"operations": [
                {"op": "add", "content": "fine"}, {"op": "add", "content": "a\x00b"}]}),
            ("POST", "/v1/relations", {
                "source_record_id": own.other_memory, "source_record_type": "fact",
                "target_record_id": own.memory, "target_record_type": "memory",
                "relation_type": "a\x00b"}),
            ("POST", "/v1/search", {"query": "a\x00b"}),
            ("POST", "/v1/search", {"query": "x", "metadata_filter": {"k": "a\x00b"}}),
        ]
        seeded = snapshot(gateway)
        for method, path, body in calls:
            answer = http.request(method, path, json=body)
            assert answer.status_code == 400, (method, path, body, answer.text)
            assert answer.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
        for params in ({"agent_id": "a\x00b"}, {"thread_id": "a\x00b"}):
            assert http.get("/v1/memories", params=params).status_code == 400
        assert http.get(f"/v1/memories/{segment('a' + chr(0))}").status_code in (400, 404)
        # Positive control: the same calls without the NUL succeed.
        fine = http.post("/v1/memories", json={"content": "ab", "metadata": {"k": "ab"}})
        assert fine.status_code == 201, fine.text
    after = snapshot(gateway)
    assert seeded != before and after != seeded  # only the control's memory was added


def test_injection_strings_in_reads_and_filters_are_only_values(gateway: LiveGateway) -> None:
    tables = _tables(gateway.dds)
    with gateway.client("probe_reader") as http:
        marker = http.post("/v1/memories", json={"content": "plain marker",
                                                 "metadata": {"kind": "plain"}}).json()["id"]
        for text in NASTY:
            for path in (f"/v1/memories/{segment(text)}", f"/v1/threads/{segment(text)}",
                         f"/v1/threads/{segment(text)}/messages"):
                answer = http.get(path)
                assert answer.status_code in (404, 400), (path, answer.text)
            answer = http.delete(f"/v1/relations/{segment(text)}")
            assert answer.status_code in (404, 400), answer.text
            for params in ({"agent_id": text}, {"thread_id": text}, {"cursor": text}):
                answer = http.get("/v1/memories", params=params)
                if _refused_or(answer, 200):
                    assert answer.json()["items"] == []
            answer = http.get("/v1/relations", params={"relation_type": text,
                                                       "source_record_id": text})
            if _refused_or(answer, 200):
                assert answer.json()["items"] == []
            for search in ({"query": text}, {"query": "marker", "agent_id": text},
                           {"query": "marker", "thread_id": text[:256]},
                           {"query": "marker", "metadata_filter": {"kind": text}},
                           {"query": "marker", "metadata_filter": {text: "plain"}},
                           {"query": "marker", "metadata_filter": {"kind": {"$in": [text]}}}):
                answer = http.post("/v1/search", json=search)
                if _refused_or(answer, 200) and search["query"] == "marker":
                    assert answer.json()["results"] == [], search
        # Positive control: the same filters find the marker when they name it.
        hit = http.post("/v1/search", json={"query": "marker",
                                            "metadata_filter": {"kind": "plain"}}).json()
        assert [h["record"]["id"] for h in hit["results"]] == [marker]
        assert http.get(f"/v1/memories/{marker}").status_code == 200
    assert _tables(gateway.dds) == tables
    with gateway.client("probe_reader") as http:
        assert http.get(f"/v1/memories/{marker}").json()["content"] == "plain marker"


# --- 6. scopes -------------------------------------------------------------------------------
def _write_calls(own: Seeded) -> list[tuple[str, str, Any]]:
    return [
        ("PUT", "/v1/me/profile", {"information": "x"}),
        ("POST", "/v1/threads", {}),
        ("PATCH", f"/v1/threads/{own.thread}", {"metadata": {"a": 1}}),
        ("POST", f"/v1/threads/{own.thread}/messages",
         {"messages": [{"role": "user", "content": "x"}]}),
        ("POST", "/v1/memories", {"content": "x"}),
        ("PATCH", f"/v1/memories/{own.memory}", {"content": "x"}),
        ("POST", "/v1/memories:batch", {"operations": [{"op": "add", "content": "x"}]}),
        ("DELETE", f"/v1/relations/{own.relation}", None),
        ("POST", "/v1/relations", {
            "source_record_id": own.other_memory, "source_record_type": "fact",
            "target_record_id": own.memory, "target_record_type": "memory",
            "relation_type": "other"}),
        ("DELETE", f"/v1/memories/{own.memory}", None),
        ("DELETE", f"/v1/threads/{own.thread}", None),
        ("DELETE", "/v1/me", None),
    ]


def _read_calls(own: Seeded) -> list[tuple[str, str, Any]]:
    return [
        ("GET", "/v1/me", None), ("GET", "/v1/me/profile", None),
        ("GET", "/v1/me/export", None), ("GET", "/v1/threads", None),
        ("GET", f"/v1/threads/{own.thread}", None),
        ("GET", f"/v1/threads/{own.thread}/messages", None),
        ("GET", "/v1/memories", None), ("GET", f"/v1/memories/{own.memory}", None),
        ("GET", "/v1/relations", None), ("POST", "/v1/search", {"query": "x"}),
    ]


def test_a_read_token_cannot_write_and_a_token_without_scopes_cannot_read(
        gateway: LiveGateway) -> None:
    with gateway.client("scoped", scope="memory:read memory:write") as full:
        own = seed(full, "scoped")
        full.put("/v1/me/profile", json={"information": "p"})
    before = snapshot(gateway)
    write_calls = _write_calls(own)
    writes = {(m, p) for m, p, _ in write_calls}
    with gateway.client("scoped", scope="memory:read") as reader, \
            gateway.client("scoped", scope="") as nobody, \
            gateway.client("scoped", scope="memory:writer memory:read:all openid") as odd:
        for method, path, body in write_calls:
            for client in (reader, nobody, odd):
                answer = client.request(method, path, json=body)
                problem(answer, 403, "insufficient-scope")
                assert 'error="insufficient_scope"' in answer.headers["www-authenticate"]
        for method, path, body in _read_calls(own):
            assert (method, path) not in writes
            answer = reader.request(method, path, json=body)
            assert answer.status_code == 200, (path, answer.text)  # positive control
            problem(nobody.request(method, path, json=body), 403, "insufficient-scope")
            problem(odd.request(method, path, json=body), 403, "insufficient-scope")
    assert snapshot(gateway) == before
    with gateway.client("scoped", scope="memory:write memory:read") as writer:
        for method, path, body in write_calls:  # positive control, in an order that works
            answer = writer.request(method, path, json=body)
            assert answer.status_code in (200, 201, 204), (method, path, answer.text)


@pytest.mark.parametrize("depth", [64, 97, 98, 900, 5_000, 100_000])
def test_deeply_nested_bodies_answer_400_or_are_stored_never_500(
        gateway: LiveGateway, depth: int) -> None:
    """Up to ``MAX_BODY_DEPTH`` levels of the body are stored; deeper bodies answer 400."""
    nested = "[" * depth + "]" * depth
    body = '{"content": "deep", "metadata": {"k": ' + nested + "}}"
    with gateway.client("nester") as http:
        answer = http.post("/v1/memories", content=body.encode(),
                           headers={"content-type": "application/json"})
        assert _refused_or(answer, 201) == (depth + 2 <= MAX_BODY_DEPTH), answer.text
        if answer.status_code == 201:
            got = http.get(f"/v1/memories/{answer.json()['id']}")
            assert got.status_code == 200, got.text
            assert json.dumps(got.json()["metadata"]["k"], separators=(",", ":")) == nested
        found = http.post("/v1/search", content=(
            '{"query": "deep", "metadata_filter": {"k": ' + nested + "}}").encode(),
            headers={"content-type": "application/json"})
        _refused_or(found, 200)
        assert http.get("/v1/me").status_code == 200  # the gateway still answers
