"""The gateway's request input boundary over real HTTP (REST and MCP).

A body must be JSON by its media type (415 otherwise; MCP keeps its transport's own rules).
One mistake answers one problem type: a blank query, id or relation type is the same
``invalid-request`` as an empty one, and an id past the stores' length the same as a longer one.
``ttl_days`` takes whole days as the spec types it (omitted: the store's default; null: never).
Text that is not valid Unicode (a lone UTF-16 surrogate, which a JSON escape can carry) is
refused at the boundary, anywhere in a body (400) or in a token's claims (401), never reaching
the database or a tokenizer. Every refusal has a positive control, and ordinary requests on the
same keep-alive client keep succeeding afterwards.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, cast

import httpx
import psycopg
import pytest
from dds import AUDIENCE, GROUP, ISSUER, OWNER, DdsEnvironment
from gateway_live import VECTOR_DIM, LiveGateway, gateway_settings, live_gateway, problem, serve
from joserfc import jws
from oam_gateway.app import create_app
from oam_gateway.errors.problems import problem_type
from oam_gateway.rest.models import MAX_ID_LENGTH, MAX_TTL_DAYS
from oracleagentmemory.core import MemoryRetentionConfig
from psycopg import sql

MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
LONE_SURROGATES = ("\ud800", "\udfff", "a\udc00\ud800b")
"""A lone high, a lone low, and a pair in the wrong order: none is a Unicode character."""


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("input")) as live:
        yield live


@pytest.fixture(scope="module")
def http(gateway: LiveGateway) -> Iterator[httpx.Client]:
    """One keep-alive client for the module (a dropped connection would show as a reconnect)."""
    with gateway.client("input_user") as client:
        yield client


@pytest.fixture(scope="module")
def thread_id(http: httpx.Client) -> str:
    created = http.post("/v1/threads", json={})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])



def raw_json(value: Any) -> bytes:
    """``value`` as JSON text with every non-ASCII character escaped (so lone surrogates
    travel as the valid JSON escapes ``\\udXXX``)."""
    return json.dumps(value, ensure_ascii=True).encode("ascii")


def send(http: httpx.Client, method: str, path: str, body: Any) -> httpx.Response:
    return http.request(method, path, content=raw_json(body),
                        headers={"Content-Type": "application/json"})


def add_memory(http: httpx.Client, content: str) -> None:
    added = http.post("/v1/memories", json={"content": content, "metadata": {"k": "v"}})
    assert added.status_code == 201, added.text


# --- media types (415) ---------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", [
    "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
    "application/octet-stream", "application/jsonx", None])
def test_a_body_that_is_not_json_by_its_media_type_answers_415(
        http: httpx.Client, thread_id: str, content_type: str | None) -> None:
    body = raw_json({"content": "typed as something else"})
    headers = {} if content_type is None else {"Content-Type": content_type}
    answer = http.post("/v1/memories", content=body, headers=headers)
    detail = problem(answer, 415, "unsupported-media-type")["detail"]
    assert "application/json" in detail
    assert answer.headers["accept"] == answer.headers["accept-post"] == "application/json"
    patched = http.patch(f"/v1/threads/{thread_id}", content=raw_json({"metadata": {}}),
                         headers=headers)
    problem(patched, 415, "unsupported-media-type")
    assert patched.headers["accept-patch"] == "application/json"
    problem(http.put("/v1/me/profile", content=raw_json({"information": "x"}), headers=headers),
            415, "unsupported-media-type")


@pytest.mark.parametrize("content_type", [
    "application/json", "application/json; charset=utf-8", "Application/JSON",
    "application/merge-patch+json"])
def test_json_media_types_are_accepted(http: httpx.Client, thread_id: str,
                                       content_type: str) -> None:
    headers = {"Content-Type": content_type}
    added = http.post("/v1/memories", content=raw_json({"content": "typed as JSON"}),
                      headers=headers)
    assert added.status_code == 201, added.text
    patched = http.patch(f"/v1/threads/{thread_id}", content=raw_json({"metadata": {"a": 1}}),
                         headers=headers)
    assert patched.status_code == 200, patched.text


def test_a_bodyless_request_needs_no_content_type(http: httpx.Client) -> None:
    memory_id = http.post("/v1/memories", json={"content": "to delete"}).json()["id"]
    assert http.get("/v1/memories").status_code == 200
    assert http.get(f"/v1/memories/{memory_id}").status_code == 200
    assert http.delete(f"/v1/memories/{memory_id}").status_code == 204
    # an operation that needs a body and got none is a 400, whatever the (absent) type
    problem(http.post("/v1/memories"), 400, "invalid-request")


def test_mcp_keeps_its_own_media_type_rules(gateway: LiveGateway, http: httpx.Client) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw-http", "version": "1"}}}
    auth = {"Authorization": http.headers["Authorization"]}
    ok = httpx.post(f"{gateway.url}/mcp", content=raw_json(initialize),
                    headers={**MCP_HEADERS, **auth}, timeout=30)
    assert ok.status_code == 200, ok.text
    refused = httpx.post(f"{gateway.url}/mcp", content=raw_json(initialize),
                         headers={**MCP_HEADERS, **auth, "Content-Type": "text/plain"},
                         timeout=30)
    assert refused.status_code in (400, 415), refused.text  # the transport's own answer


def test_the_openapi_document_names_the_415(gateway: LiveGateway) -> None:
    paths = httpx.get(f"{gateway.url}/openapi.json").json()["paths"]
    assert "415" in paths["/v1/memories"]["post"]["responses"]
    assert "415" not in paths["/v1/memories"]["get"]["responses"]


# --- one mistake, one problem type -------------------------------------------------------------

@pytest.mark.parametrize("query", ["", " ", "\t\n", "\u3000"])
def test_an_empty_or_blank_query_is_the_same_invalid_request(http: httpx.Client,
                                                             query: str) -> None:
    problem(http.post("/v1/search", json={"query": query}), 400, "invalid-request")
    assert http.post("/v1/search", json={"query": f"{query}x"}).status_code == 200


@pytest.mark.parametrize("text", ["", "   "])
def test_an_empty_or_blank_id_or_relation_type_is_the_same_invalid_request(
        http: httpx.Client, text: str) -> None:
    first = http.post("/v1/memories", json={"content": "one"}).json()["id"]
    second = http.post("/v1/memories", json={"content": "two"}).json()["id"]
    relation = {"source_record_id": first, "source_record_type": "memory",
                "target_record_id": second, "target_record_type": "memory",
                "relation_type": "inspired"}
    for method, path, body in [
            ("POST", "/v1/memories", {"content": "x", "memory_id": text}),
            ("POST", "/v1/memories", {"content": "x", "thread_id": text}),
            ("POST", "/v1/threads", {"agent_id": text}),
            ("POST", "/v1/threads", {"thread_id": text}),
            ("POST", "/v1/search", {"query": "x", "agent_id": text}),
            ("POST", "/v1/relations", {**relation, "source_record_id": text}),
            ("POST", "/v1/relations", {**relation, "relation_type": text}),
            ("POST", "/v1/relations", {**relation, "opposite_relation_type": text})]:
        problem(http.request(method, path, json=body), 400, "invalid-request")
    # Positive control: the same bodies with a real value.
    assert http.post("/v1/threads", json={"agent_id": "agent"}).status_code == 201
    made = http.post("/v1/relations", json={**relation, "opposite_relation_type": "inspired_by"})
    assert made.status_code == 201, made.text


def test_an_id_longer_than_the_stores_keep_is_an_invalid_request(http: httpx.Client) -> None:
    """Too long is one mistake too: past the stores' 128 characters, however far past."""
    for length in (MAX_ID_LENGTH + 1, 300):
        problem(http.post("/v1/memories", json={"content": "x", "memory_id": "m" * length}),
                400, "invalid-request")
        problem(http.post("/v1/threads", json={"agent_id": "a" * length}), 400,
                "invalid-request")
    longest = http.post("/v1/memories", json={"content": "x", "memory_id": "m" * MAX_ID_LENGTH})
    assert longest.status_code == 201, longest.text


def test_mcp_answers_a_blank_query_as_rest_does(gateway: LiveGateway,
                                                http: httpx.Client) -> None:
    for query in ("", "  "):
        answer = mcp_call(gateway, http, "search", {"query": query})
        result = answer.json()["result"]
        assert result["isError"], result
        assert result["structuredContent"]["type"] == problem_type("invalid-request")
    fine = mcp_call(gateway, http, "search", {"query": " x "})
    assert not fine.json()["result"]["isError"], fine.text


def test_the_openapi_document_says_queries_and_ids_must_not_be_blank(
        gateway: LiveGateway) -> None:
    schemas = httpx.get(f"{gateway.url}/openapi.json").json()["components"]["schemas"]
    query = schemas["SearchIn"]["properties"]["query"]
    assert query["minLength"] == 1 and query["pattern"] == r"\S"
    [agent_id, _] = schemas["ThreadIn"]["properties"]["agent_id"]["anyOf"]
    assert agent_id["pattern"] == r"\S" and agent_id["maxLength"] == MAX_ID_LENGTH


# --- invalid Unicode: 400 anywhere in a body, 401 in a token, never 500 ---------------------------

def surrogate_places(thread: str, text: str) -> dict[str, tuple[str, str, Any]]:
    """Every kind of place a body carries a string, with ``text`` in it."""
    relation = {"source_record_id": "m-1", "source_record_type": "memory",
                "target_record_id": "m-2", "target_record_type": "memory",
                "relation_type": "supports"}
    return {
        "content": ("POST", "/v1/memories", {"content": text}),
        "query": ("POST", "/v1/search", {"query": text}),
        "metadata value": ("POST", "/v1/memories", {"content": "ok", "metadata": {"k": text}}),
        "metadata key": ("POST", "/v1/memories", {"content": "ok", "metadata": {text: 1}}),
        "metadata deep": ("POST", "/v1/memories",
                          {"content": "ok", "metadata": {"a": [{"b": [text]}]}}),
        "metadata_filter value": ("POST", "/v1/search",
                                  {"query": "x", "metadata_filter": {"k": text}}),
        "metadata_filter key": ("POST", "/v1/search",
                                {"query": "x", "metadata_filter": {text: "v"}}),
        "metadata_filter operand": ("POST", "/v1/search",
                                    {"query": "x", "metadata_filter": {"k": {"$not": text}}}),
        "message content": ("POST", f"/v1/threads/{thread}/messages",
                            {"messages": [{"role": "user", "content": text}]}),
        "message metadata": ("POST", f"/v1/threads/{thread}/messages",
                             {"messages": [{"role": "user", "content": "hi",
                                            "metadata": {"k": text}}]}),
        "new thread metadata": ("POST", "/v1/threads", {"metadata": {"k": text}}),
        "thread metadata": ("PATCH", f"/v1/threads/{thread}", {"metadata": {"k": text}}),
        "profile metadata": ("PUT", "/v1/me/profile",
                             {"information": "p", "metadata": {"k": text}}),
        "batch content": ("POST", "/v1/memories:batch",
                          {"operations": [{"op": "add", "content": "fine"},
                                          {"op": "add", "content": text}]}),
        "batch metadata": ("POST", "/v1/memories:batch",
                           {"operations": [{"op": "add", "content": "fine",
                                            "metadata": {text: text}}]}),
        "relation metadata": ("POST", "/v1/relations", {**relation, "metadata": {"k": text}}),
        "unknown field name": ("POST", "/v1/memories", {"content": "ok", text: 1}),
    }


PLACES = list(surrogate_places("t", "x"))


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("text", LONE_SURROGATES, ids=["high", "low", "reversed"])
def test_a_lone_surrogate_anywhere_in_a_body_answers_400(
        http: httpx.Client, thread_id: str, place: str, text: str) -> None:
    method, path, body = surrogate_places(thread_id, text)[place]
    answer = send(http, method, path, body)
    detail = problem(answer, 400, "invalid-request")["detail"]
    assert "Unicode" in detail
    assert answer.headers.get("connection") != "close"
    add_memory(http, f"after {place}")  # positive control, on the same keep-alive client


@pytest.mark.parametrize("place", PLACES)
def test_a_valid_surrogate_pair_is_an_ordinary_character(
        http: httpx.Client, thread_id: str, place: str) -> None:
    """Positive control: the same places with an emoji (a pair in the right order)."""
    method, path, body = surrogate_places(thread_id, "\U0001f600")[place]
    answer = send(http, method, path, body)
    if place == "unknown field name":
        problem(answer, 400, "invalid-request")  # refused for what it is, not for its text
    elif place == "relation metadata":
        problem(answer, 404, "record-not-found")  # the memories do not exist: it got that far
    else:
        assert answer.status_code in (200, 201), (place, answer.text)


def test_refused_bodies_never_leave_a_pooled_connection_unusable(
        http: httpx.Client, thread_id: str) -> None:
    """Rounds of every refusal, each followed by more ordinary writes than the pool holds."""
    for round_number in range(3):
        for text in LONE_SURROGATES:
            for method, path, body in surrogate_places(thread_id, text).values():
                assert send(http, method, path, body).status_code == 400
        for index in range(10):
            add_memory(http, f"round {round_number} write {index}")
        found = http.post("/v1/search", json={"query": "round write"})
        assert found.status_code == 200 and found.json()["results"], found.text


@pytest.fixture(scope="module")
def one_connection(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[LiveGateway]:
    """A gateway whose pool holds a single connection: every request reuses it."""
    with live_gateway(dds, tmp_path_factory.mktemp("one-connection"), pool_max_size=1,
                      pool_min_size=1) as live:
        yield live


def test_a_refused_write_never_leaves_the_pooled_connection_unusable(
        one_connection: LiveGateway) -> None:
    """Refused writes (a duplicate id: 409, failed in the database; refused text: 400) on the
    only pooled connection, with 0 to 3 ordinary writes between them so that failures fall on
    every count of psycopg's statement preparation: the ordinary writes all succeed (the SDK's
    own regression test is tests/test_deepsec_context.py's failed-write test)."""
    with one_connection.client("pool_user") as http:
        taken = http.post("/v1/memories", json={"content": "taken", "memory_id": "taken-id",
                                                "metadata": {"k": "v"}})
        assert taken.status_code == 201, taken.text
        for round_number in range(12):  # 0 to 3 writes between two failures
            duplicate = http.post("/v1/memories", json={
                "content": "again", "memory_id": "taken-id", "metadata": {"k": "v"}})
            problem(duplicate, 409, "duplicate-record")
            for text in LONE_SURROGATES:
                refused = send(http, "POST", "/v1/memories",
                               {"content": "x", "metadata": {"k": text}})
                problem(refused, 400, "invalid-request")
            for index in range(round_number % 4):
                add_memory(http, f"round {round_number} write {index}")


def unsigned_claims_token(gateway: LiveGateway, claims: dict[str, Any]) -> str:
    """A token of the test issuer whose payload is ``claims`` as ASCII-escaped JSON (the
    issuer's own encoder refuses lone surrogates; a hostile issuer's need not)."""
    now = int(time.time())
    payload = {"iss": ISSUER, "aud": AUDIENCE, "groups": [GROUP], "scope":
               "memory:read memory:write", "iat": now, "nbf": now, "exp": now + 300, **claims}
    issuer = gateway.dds.issuer
    header = {"alg": "RS256", "typ": "JWT", "kid": issuer.key.kid}
    return jws.serialize_compact(header, raw_json(payload), issuer.key, algorithms=["RS256"])


@pytest.mark.parametrize("claims", [
    {"sub": "\ud800"}, {"sub": "alice\udfff"}, {"sub": "ok", "groups": [GROUP, "\ud800"]},
    {"sub": "ok", "scope": "memory:read \ud800"}, {"sub": "ok", "extra": {"\ud800": 1}}],
    ids=["sub", "sub-tail", "group", "scope", "other-claim"])
def test_a_token_with_a_lone_surrogate_claim_answers_401(
        gateway: LiveGateway, claims: dict[str, Any]) -> None:
    token = unsigned_claims_token(gateway, claims)
    with httpx.Client(base_url=gateway.url, timeout=30,
                      headers={"Authorization": f"Bearer {token}"}) as client:
        for _ in range(3):
            refused = client.get("/v1/me")
            problem(refused, 401, "invalid-token")
            assert "Unicode" in refused.json()["detail"]
            mcp = client.post("/mcp", content=b"{}", headers=MCP_HEADERS)
            problem(mcp, 401, "invalid-token")
    # Positive control: the same hand-made token with an ordinary subject works.
    fine = unsigned_claims_token(gateway, {"sub": "surrogate_control"})
    with httpx.Client(base_url=gateway.url, timeout=30,
                      headers={"Authorization": f"Bearer {fine}"}) as client:
        assert client.get("/v1/me").status_code == 200
        add_memory(client, "after a refused token")


def test_a_token_header_with_a_lone_surrogate_answers_401(gateway: LiveGateway) -> None:
    header = base64.urlsafe_b64encode(raw_json({"alg": "RS256", "kid": "\ud800"}))
    token = header.rstrip(b"=").decode() + ".e30.c2ln"
    answer = httpx.get(f"{gateway.url}/v1/me", headers={"Authorization": f"Bearer {token}"})
    problem(answer, 401, "invalid-token")


def mcp_call(gateway: LiveGateway, http: httpx.Client, tool: str,
             arguments: dict[str, Any]) -> httpx.Response:
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}}
    return httpx.post(f"{gateway.url}/mcp", content=raw_json(request), timeout=30,
                      headers={**MCP_HEADERS, "Authorization": http.headers["Authorization"]})


@pytest.mark.parametrize("tool, arguments", [
    ("add_memory", {"content": "ok", "metadata": {"k": "\ud800"}}),
    ("add_memory", {"content": "ok", "metadata": {"\udfff": 1}}),
    ("search", {"query": "x", "metadata_filter": {"\ud800": "v"}}),
    ("set_profile", {"information": "p", "metadata": {"k": "\ud800"}}),
])
def test_mcp_refuses_a_lone_surrogate_never_500(gateway: LiveGateway, http: httpx.Client,
                                                 tool: str, arguments: dict[str, Any]) -> None:
    answer = mcp_call(gateway, http, tool, arguments)
    assert answer.status_code == 400, answer.text  # a JSON-RPC parse error of the transport
    assert "error" in answer.json()
    fine = mcp_call(gateway, http, tool, json.loads(
        json.dumps(arguments).replace("\\ud800", "ok").replace("\\udfff", "ok")))
    assert fine.status_code == 200 and not fine.json()["result"]["isError"], fine.text


@pytest.mark.parametrize("arguments", [
    {"content": "a\x00b"}, {"content": "ok", "metadata": {"k": "a\x00b"}}])
def test_mcp_refuses_text_the_database_cannot_store_as_rest_does(
        gateway: LiveGateway, http: httpx.Client, arguments: dict[str, Any]) -> None:
    answer = mcp_call(gateway, http, "add_memory", arguments)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["isError"] and result["structuredContent"]["status"] == 400, result
    assert result["structuredContent"]["type"] == problem_type("invalid-request")


# --- ttl_days: whole days, as the spec types it -------------------------------------------------

@pytest.fixture(scope="module")
def retained(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[LiveGateway]:
    """A gateway over a store whose records live 30 days unless a write says otherwise."""
    store_id = dds.new_store(vector_dim=VECTOR_DIM,
                             memory_retention_config=MemoryRetentionConfig(default_ttl_days=30))
    jwks_file = tmp_path_factory.mktemp("retained") / "jwks.json"
    jwks_file.write_text(json.dumps(dds.issuer.jwks()), encoding="utf-8")
    with serve(create_app(gateway_settings(dds, store_id, jwks_file))) as url:
        yield LiveGateway(url, dds, store_id)


def lifetime(gateway: LiveGateway, memory_id: str) -> timedelta | None:
    """How long the stored memory ``memory_id`` lives (``None``: it never expires)."""
    table = sql.Identifier(OWNER, f"{gateway.store_id}_memory")
    with psycopg.connect(gateway.dds.owner_url) as conn:
        row = conn.execute(sql.SQL("SELECT expires_at - created_at FROM {} WHERE id = %s")
                           .format(table), [memory_id]).fetchone()
    assert row is not None, memory_id
    return cast("timedelta | None", row[0])


def post_raw(http: httpx.Client, path: str, text: str) -> httpx.Response:
    return http.post(path, content=text.encode(), headers={"Content-Type": "application/json"})


@pytest.mark.parametrize("raw, days", [("2", 2), ("2.0", 2), ("1e2", 100), ("1", 1),
                                       (str(MAX_TTL_DAYS), MAX_TTL_DAYS)])
def test_ttl_days_takes_whole_days(retained: LiveGateway, raw: str, days: int) -> None:
    with retained.client("ttl_user") as http:
        added = post_raw(http, "/v1/memories", f'{{"content": "lives", "ttl_days": {raw}}}')
        assert added.status_code == 201, added.text
        assert lifetime(retained, added.json()["id"]) == timedelta(days=days)
        batch = post_raw(http, "/v1/memories:batch",
                         f'{{"operations": [{{"op": "add", "content": "x", "ttl_days": {raw}}}]}}')
        assert batch.status_code == 200, batch.text
        assert lifetime(retained, batch.json()["results"][0]["id"]) == timedelta(days=days)


def test_ttl_days_omitted_is_the_stores_default_and_null_never_expires(
        retained: LiveGateway) -> None:
    """The spec's three cases: omitted (the store's default), null (no expiry), a number."""
    with retained.client("ttl_user") as http:
        omitted = http.post("/v1/memories", json={"content": "default"}).json()["id"]
        never = http.post("/v1/memories", json={"content": "kept", "ttl_days": None}).json()["id"]
        assert lifetime(retained, omitted) == timedelta(days=30)
        assert lifetime(retained, never) is None


@pytest.mark.parametrize("raw", ["1.5", "2.000001", "0", "-1", "true", "false", '"2"', "1e400",
                                 str(MAX_TTL_DAYS + 1), "100000000000", "[2]", "{}"])
def test_ttl_days_refuses_what_is_not_a_whole_number_of_days(http: httpx.Client,
                                                             raw: str) -> None:
    answer = post_raw(http, "/v1/memories", f'{{"content": "lives", "ttl_days": {raw}}}')
    detail = problem(answer, 400, "invalid-request")["detail"]
    assert detail.startswith("ttl_days: "), detail
    batch = post_raw(http, "/v1/memories:batch",
                     f'{{"operations": [{{"op": "add", "content": "x", "ttl_days": {raw}}}]}}')
    problem(batch, 400, "invalid-request")


def test_mcp_takes_ttl_days_as_rest_does(gateway: LiveGateway, http: httpx.Client) -> None:
    added = mcp_call(gateway, http, "add_memory", {"content": "lives", "ttl_days": 2})
    result = added.json()["result"]
    assert not result["isError"], result
    assert lifetime(gateway, result["structuredContent"]["id"]) == timedelta(days=2)
    for refused in (1.5, True, "2", 0):
        answer = mcp_call(gateway, http, "add_memory", {"content": "x", "ttl_days": refused})
        result = answer.json()["result"]
        assert result["isError"], (refused, result)
        assert result["structuredContent"]["type"] == problem_type("invalid-request")


def test_the_mcp_input_schemas_say_what_the_server_checks(gateway: LiveGateway,
                                                           http: httpx.Client) -> None:
    """A blank query and a fractional ttl_days are refused by the tools' own input schemas."""
    request = {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}}
    answer = httpx.post(f"{gateway.url}/mcp", content=raw_json(request), timeout=30,
                        headers={**MCP_HEADERS, "Authorization": http.headers["Authorization"]})
    tools = {t["name"]: t["inputSchema"]["properties"] for t in answer.json()["result"]["tools"]}
    query = tools["search"]["query"]
    assert query["minLength"] == 1 and query["pattern"] == r"\S"
    [typed, null] = tools["add_memory"]["ttl_days"]["anyOf"]
    assert typed == {"type": "integer", "minimum": 1, "maximum": MAX_TTL_DAYS}
    assert null == {"type": "null"}


def test_the_openapi_document_types_ttl_days_as_whole_days(gateway: LiveGateway) -> None:
    schemas = httpx.get(f"{gateway.url}/openapi.json").json()["components"]["schemas"]
    [typed, null] = schemas["MemoryIn"]["properties"]["ttl_days"]["anyOf"]
    assert typed == {"type": "integer", "minimum": 1, "maximum": MAX_TTL_DAYS}
    assert null == {"type": "null"}
