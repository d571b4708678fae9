"""The MCP server at ``/mcp`` over real HTTP, with the ``mcp`` package's own client.

The gateway runs on a protected store of the embedded database (``gateway_live``); each test
opens a streamable-HTTP session carrying a user's bearer token and calls tools. Isolation is
checked against the database through the owner (no row security) and through the owner's
REST view, so a tool that only *answered* not-found but still changed a row would fail.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import pytest
from dds import AUDIENCE, GROUP, IDP, ISSUER, DdsEnvironment
from gateway_harness import audit_events, capture_audit, wait_for
from gateway_live import LiveGateway, live_gateway
from mcp.client.auth.utils import (
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
)
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import ProtectedResourceMetadata
from mcp_types import CallToolResult
from oam_gateway.errors.problems import problem_type

T = TypeVar("T")

TOOL_NAMES = {"search", "add_memory", "get_memory", "update_memory", "delete_memory",
              "list_memories", "create_thread", "list_threads", "get_thread", "add_messages",
              "list_messages", "get_profile", "set_profile", "add_relation", "list_relations",
              "delete_relation"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw-http", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("mcp")) as live:
        yield live


class Tools:
    """A client session's tool calls, checked."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, name: str, **arguments: Any) -> CallToolResult:
        return await self.session.call_tool(name, arguments)

    async def ok(self, name: str, **arguments: Any) -> dict[str, Any]:
        """The structured result of a tool call that must succeed."""
        result = await self.call(name, **arguments)
        assert not result.is_error, result.content
        assert isinstance(result.structured_content, dict)
        text = getattr(result.content[0], "text", None)
        assert text is not None and json.loads(text) == result.structured_content
        return result.structured_content

    async def error(self, name: str, slug: str, **arguments: Any) -> dict[str, Any]:
        """The problem document of a tool call that must fail with the problem ``slug``."""
        result = await self.call(name, **arguments)
        assert result.is_error, result.structured_content
        problem = result.structured_content
        assert isinstance(problem, dict), result.content
        assert problem["type"] == problem_type(slug), problem
        text = str(getattr(result.content[0], "text", ""))
        assert "Traceback" not in text and 'File "' not in text
        return problem


@asynccontextmanager
async def mcp_tools(url: str, token: str | None) -> AsyncIterator[Tools]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (httpx2.AsyncClient(headers=headers, timeout=30) as http,
                streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        yield Tools(session)


def with_tools(gateway: LiveGateway, user: str, work: Callable[[Tools], Awaitable[T]],
               scope: str = "memory:read memory:write") -> T:
    """Run ``work`` in an MCP session of ``user`` (a token with ``scope``)."""

    async def main() -> T:
        async with mcp_tools(gateway.url, gateway.token(user, scope)) as tools:
            return await work(tools)

    return anyio.run(main)


def metadata_pointer(gateway: LiveGateway) -> str:
    return f'resource_metadata="{gateway.url}/.well-known/oauth-protected-resource/mcp"'


def post_initialize(gateway: LiveGateway, token: str | None) -> httpx.Response:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(f"{gateway.url}/mcp", json=INITIALIZE, headers=headers, timeout=30)


# --- authentication ---------------------------------------------------------------------------

def test_mcp_without_a_token_answers_401_pointing_at_the_metadata(gateway: LiveGateway) -> None:
    refused = post_initialize(gateway, None)
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and metadata_pointer(gateway) in challenge
    # Positive control: the same request with a valid token is served.
    served = post_initialize(gateway, gateway.token("mcp_auth"))
    assert served.status_code == 200, served.text
    assert served.json()["result"]["serverInfo"]["name"] == "oracle-agent-memory"
    # A stateless server offers no event stream to GET: refused, never a 500.
    stream = httpx.get(f"{gateway.url}/mcp", timeout=30, headers={
        "Accept": "text/event-stream", "Authorization": f"Bearer {gateway.token('mcp_auth')}"})
    assert stream.status_code == 405, stream.text
    assert stream.headers["allow"] == "POST"
    # REST keeps its own challenge (no MCP pointer there).
    rest = httpx.get(f"{gateway.url}/v1/me", timeout=30)
    assert rest.status_code == 401 and "resource_metadata" not in rest.headers["www-authenticate"]


def test_the_mcp_clients_discovery_follows_the_pointer(gateway: LiveGateway) -> None:
    """The ``mcp`` package's own OAuth discovery reads the 401 and the metadata it points at."""

    async def main() -> ProtectedResourceMetadata | None:
        async with httpx2.AsyncClient(timeout=30) as http:
            refused = await http.post(f"{gateway.url}/mcp", json=INITIALIZE,
                                      headers=MCP_HEADERS)
            pointer = extract_resource_metadata_from_www_auth(refused)
            assert pointer == f"{gateway.url}/.well-known/oauth-protected-resource/mcp"
            return await handle_protected_resource_response(await http.get(pointer))

    metadata = anyio.run(main)
    assert metadata is not None
    assert str(metadata.resource) == f"{gateway.url}/mcp"
    assert [str(s) for s in metadata.authorization_servers] == [ISSUER]

    async def session_without_token() -> None:
        async with mcp_tools(gateway.url, None):
            pass

    with pytest.raises(Exception):  # noqa: B017, PT011 (the client's error group)
        anyio.run(session_without_token)


@pytest.mark.parametrize("kind", ["expired", "wrong audience", "tampered"])
def test_an_unacceptable_token_answers_401(gateway: LiveGateway, kind: str) -> None:
    now = int(time.time())
    if kind == "expired":
        token = gateway.token("mcp_bad", iat=now - 600, nbf=now - 600, exp=now - 120)
    elif kind == "wrong audience":
        token = gateway.dds.issuer.token("mcp_bad", audience=AUDIENCE + "-other",
                                         groups=[GROUP], scope="memory:read memory:write")
    else:
        header, payload, signature = gateway.token("mcp_bad").split(".")
        token = f"{header}.{payload}.{signature[:-4]}AAAA"
    refused = post_initialize(gateway, token)
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge and metadata_pointer(gateway) in challenge


def test_the_protected_resource_metadata(gateway: LiveGateway) -> None:
    for path, resource in (("/.well-known/oauth-protected-resource/mcp", f"{gateway.url}/mcp"),
                           ("/.well-known/oauth-protected-resource", gateway.url)):
        answer = httpx.get(gateway.url + path, timeout=30)
        assert answer.status_code == 200, path
        document = answer.json()
        assert document["resource"] == resource
        assert document["authorization_servers"] == [ISSUER]
        assert document["bearer_methods_supported"] == ["header"]
        assert document["scopes_supported"] == ["memory:read", "memory:write"]


# --- the tools ----------------------------------------------------------------------------------

def _holds_user_id(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "user_id" in schema.get("properties", {}) or any(
            _holds_user_id(value) for value in schema.values())
    if isinstance(schema, list):
        return any(_holds_user_id(value) for value in schema)
    return False


def test_every_tool_is_listed_and_none_takes_a_user_id(gateway: LiveGateway) -> None:
    async def work(tools: Tools) -> Any:
        return (await tools.session.list_tools()).tools

    listed = with_tools(gateway, "mcp_list", work)
    assert {tool.name for tool in listed} == TOOL_NAMES
    for tool in listed:
        assert tool.input_schema["type"] == "object"
        assert not _holds_user_id(tool.input_schema), tool.name
        assert "user_id" not in json.dumps(tool.input_schema), tool.name
        assert tool.output_schema is not None, tool.name
        assert tool.description, tool.name
    # The control of the check itself: a schema with user_id is caught.
    assert _holds_user_id({"$defs": {"X": {"properties": {"user_id": {}}}}})


def test_memories_round_trip_through_the_tools(gateway: LiveGateway) -> None:
    async def work(tools: Tools) -> None:
        made = await tools.ok("add_memory", content="the user is allergic to peanuts",
                              memory_type="fact", metadata={"source": "chat"})
        assert made["record_type"] == "fact" and made["user_id"] == f"{IDP}:mcp_alice"
        other = await tools.ok("add_memory", content="prefers window seats")
        got = await tools.ok("get_memory", memory_id=made["id"])
        assert got["content"] == "the user is allergic to peanuts"
        changed = await tools.ok("update_memory", memory_id=made["id"],
                                 content="the user is allergic to tree nuts")
        assert changed["content"] == "the user is allergic to tree nuts"
        assert changed["metadata"] == {"source": "chat"}
        found = await tools.ok("search", query="allergic to nuts", k=5, formatted=True)
        assert found["results"][0]["record"]["id"] == made["id"]
        assert "tree nuts" in found["formatted"]
        listed = await tools.ok("list_memories")
        assert {m["id"] for m in listed["items"]} == {made["id"], other["id"]}
        first = await tools.ok("list_memories", limit=1)
        assert len(first["items"]) == 1 and first["next_cursor"]
        rest = await tools.ok("list_memories", limit=1, cursor=first["next_cursor"])
        assert {first["items"][0]["id"], rest["items"][0]["id"]} == {made["id"], other["id"]}
        assert await tools.ok("delete_memory", memory_id=made["id"]) == {"deleted": 1}
        await tools.error("get_memory", "record-not-found", memory_id=made["id"])
        await tools.error("delete_memory", "record-not-found", memory_id=made["id"])
        await tools.error("update_memory", "invalid-request", memory_id=other["id"])

    with_tools(gateway, "mcp_alice", work)


def test_threads_and_messages_through_the_tools(gateway: LiveGateway) -> None:
    async def work(tools: Tools) -> None:
        thread = await tools.ok("create_thread", agent_id="helper", metadata={"topic": "trip"})
        assert thread["record_type"] == "thread"
        assert thread["user_id"] == f"{IDP}:mcp_threads"
        added = await tools.ok("add_messages", thread_id=thread["id"], messages=[
            {"role": "user", "content": f"message {i}", "metadata": {"i": i}}
            for i in range(3)])
        assert len(added["ids"]) == 3
        listed = await tools.ok("list_messages", thread_id=thread["id"], limit=2)
        assert [m["content"] for m in listed["items"]] == ["message 2", "message 1"]
        assert listed["items"][1]["metadata"] == {"i": 1}
        got = await tools.ok("get_thread", thread_id=thread["id"])
        assert got["metadata"] == {"topic": "trip"}
        threads = await tools.ok("list_threads")
        assert [t["id"] for t in threads["items"]] == [thread["id"]]
        await tools.error("add_messages", "invalid-request", thread_id=thread["id"],
                          messages=[{"role": "narrator", "content": "x"}])

    with_tools(gateway, "mcp_threads", work)


def test_the_profile_through_the_tools(gateway: LiveGateway) -> None:
    async def work(tools: Tools) -> None:
        await tools.error("get_profile", "record-not-found")
        made = await tools.ok("set_profile", information="likes tea")
        assert made["content"] == "likes tea" and made["id"] == f"{IDP}:mcp_profile"
        await tools.ok("set_profile", information="likes coffee", metadata={"tz": "UTC"})
        got = await tools.ok("get_profile")
        assert got["content"] == "likes coffee" and got["metadata"] == {"tz": "UTC"}

    with_tools(gateway, "mcp_profile", work)


def test_relations_through_the_tools(gateway: LiveGateway) -> None:
    async def work(tools: Tools) -> None:
        a = await tools.ok("add_memory", content="flies to Lisbon in May")
        b = await tools.ok("add_memory", content="books aisle seats", memory_type="preference")
        relation = await tools.ok("add_relation", source_record_id=a["id"],
                                  source_record_type="memory", target_record_id=b["id"],
                                  target_record_type="preference", relation_type="about")
        assert relation["relation_type"] == "about"
        listed = await tools.ok("list_relations", source_record_id=a["id"])
        assert [r["id"] for r in listed["items"]] == [relation["id"]]
        assert await tools.ok("delete_relation", relation_id=relation["id"]) == {"deleted": 1}
        assert (await tools.ok("list_relations"))["items"] == []
        await tools.error("delete_relation", "record-not-found", relation_id=relation["id"])

    with_tools(gateway, "mcp_relations", work)


def test_arguments_outside_the_input_schema_are_an_invalid_request(gateway: LiveGateway) -> None:
    async def work(tools: Tools) -> None:
        await tools.error("search", "invalid-request", query="x", k="many")
        await tools.error("add_memory", "invalid-request", content="")  # the body model's rule
        await tools.error("no_such_tool", "invalid-request")
        await tools.ok("search", query="x", k=2)  # positive control

    with_tools(gateway, "mcp_invalid", work)


# --- isolation and scopes -----------------------------------------------------------------------

def test_another_users_token_never_reaches_alices_rows(gateway: LiveGateway) -> None:
    async def alice_setup(tools: Tools) -> dict[str, Any]:
        memory = await tools.ok("add_memory", content="alice's secret plan")
        other = await tools.ok("add_memory", content="alice's other note")
        thread = await tools.ok("create_thread")
        await tools.ok("add_messages", thread_id=thread["id"],
                       messages=[{"role": "user", "content": "hello"}])
        relation = await tools.ok("add_relation", source_record_id=memory["id"],
                                  source_record_type="memory", target_record_id=other["id"],
                                  target_record_type="memory", relation_type="related")
        return {"memory": memory["id"], "other": other["id"], "thread": thread["id"],
                "relation": relation["id"]}

    ids = with_tools(gateway, "mcp_owner", alice_setup)

    async def bob_attacks(tools: Tools) -> None:
        memory, thread = ids["memory"], ids["thread"]
        await tools.error("get_memory", "record-not-found", memory_id=memory)
        await tools.error("update_memory", "record-not-found", memory_id=memory,
                          content="bob was here")
        await tools.error("delete_memory", "record-not-found", memory_id=memory)
        await tools.error("get_thread", "record-not-found", thread_id=thread)
        await tools.error("list_messages", "record-not-found", thread_id=thread)
        await tools.error("add_messages", "record-not-found", thread_id=thread,
                          messages=[{"role": "user", "content": "injected"}])
        await tools.error("delete_relation", "record-not-found", relation_id=ids["relation"])
        await tools.error("add_relation", "record-not-found", source_record_id=memory,
                          source_record_type="memory", target_record_id=ids["other"],
                          target_record_type="memory", relation_type="stolen")
        assert (await tools.ok("list_memories"))["items"] == []
        assert (await tools.ok("list_relations"))["items"] == []
        found = await tools.ok("search", query="alice's secret plan", k=10)
        assert all(hit["record"]["id"] not in ids.values() for hit in found["results"])

    with_tools(gateway, "mcp_intruder", bob_attacks)

    # Nothing changed: alice (REST and MCP) and the owner still see every row as it was.
    with gateway.client("mcp_owner") as http:
        got = http.get(f"/v1/memories/{ids['memory']}")
        assert got.status_code == 200 and got.json()["content"] == "alice's secret plan"
        messages = http.get(f"/v1/threads/{ids['thread']}/messages").json()["items"]
        assert [m["content"] for m in messages] == ["hello"]
        relations = http.get("/v1/relations").json()["items"]
        assert [r["id"] for r in relations] == [ids["relation"]]
    owner_memories = {r.id: r.content for r in gateway.owner_rows("memory")}
    assert owner_memories[ids["memory"]] == "alice's secret plan"
    assert "injected" not in {r.content for r in gateway.owner_rows("message")}

    async def alice_reads(tools: Tools) -> None:  # positive control: the owner's own call works
        got = await tools.ok("get_memory", memory_id=ids["memory"])
        assert got["content"] == "alice's secret plan"
        assert (await tools.ok("get_thread", thread_id=ids["thread"]))["id"] == ids["thread"]

    with_tools(gateway, "mcp_owner", alice_reads)


def test_a_read_only_token_can_search_but_not_add(gateway: LiveGateway) -> None:
    async def seed(tools: Tools) -> str:
        return str((await tools.ok("add_memory", content="reads the news at breakfast"))["id"])

    seeded = with_tools(gateway, "mcp_reader", seed)

    async def read_only(tools: Tools) -> None:
        problem = await tools.error("add_memory", "insufficient-scope",
                                    content="written with a read-only token")
        assert "memory:write" in problem["detail"]
        await tools.error("delete_memory", "insufficient-scope", memory_id=seeded)
        found = await tools.ok("search", query="news at breakfast", k=3)  # positive control
        assert found["results"][0]["record"]["id"] == seeded

    with_tools(gateway, "mcp_reader", read_only, scope="memory:read")
    contents = {r.content for r in gateway.owner_rows("memory")}
    assert "reads the news at breakfast" in contents
    assert "written with a read-only token" not in contents


# --- audit ----------------------------------------------------------------------------------------

def test_every_tool_call_leaves_one_audit_event(gateway: LiveGateway,
                                                caplog: pytest.LogCaptureFixture) -> None:
    capture_audit(caplog)

    async def work(tools: Tools) -> str:
        made = await tools.ok("add_memory", content="audited memory")
        await tools.ok("get_memory", memory_id=made["id"])
        await tools.error("get_memory", "record-not-found", memory_id="no-such-memory")
        return str(made["id"])

    memory_id = with_tools(gateway, "mcp_audited", work)

    def tool_events() -> list[dict[str, Any]]:
        return [e for e in audit_events(caplog)
                if e["end_user"] == f"{IDP}:mcp_audited"
                and e["operation"] in ("mcp.add_memory", "mcp.get_memory")]

    wait_for(lambda: len(tool_events()) == 3)
    added, got, missing = tool_events()
    assert added["operation"] == "mcp.add_memory" and added["record_ids"] == [memory_id]
    assert got["operation"] == "mcp.get_memory" and got["result_count"] == 1
    assert missing["record_ids"] == ["no-such-memory"] and missing["result_count"] is None
    for event in (added, got, missing):
        assert event["tenant"] == "acme" and event["route"] == "/mcp"
        assert event["method"] == "POST"
    # A tool error rides on HTTP 200: the event tells the tool's own outcome.
    assert (added["status"], added["outcome"]) == (200, "success")
    assert (missing["status"], missing["outcome"]) == (404, "client-error")
    assert any(e["operation"] == "mcp.initialize" for e in audit_events(caplog))
