"""A thread created without an agent gets a generated ``agent_id``, and a search scoped to the
thread by it leaves out the caller's memories stored without an agent: the spec's behaviour,
which ``/openapi.json`` and the MCP tool list must say (read over real HTTP, with the ``mcp``
client for the tools).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from dds import DdsEnvironment
from gateway_live import LiveGateway, live_gateway
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

GENERATED = "generated agent_id"
"""The words every place that must tell about the generated agent says."""
WITHOUT_AN_AGENT = "without an agent"


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("agent-scope")) as live:
        yield live


def tool_descriptions(gateway: LiveGateway) -> dict[str, str]:
    """Each MCP tool's description, as ``tools/list`` answers it."""

    async def main() -> dict[str, str]:
        headers = {"Authorization": f"Bearer {gateway.token('scope_reader')}"}
        async with (httpx2.AsyncClient(headers=headers, timeout=30) as http,
                    streamable_http_client(f"{gateway.url}/mcp", http_client=http) as streams,
                    ClientSession(*streams) as session):
            await session.initialize()
            return {t.name: t.description or "" for t in (await session.list_tools()).tools}

    return anyio.run(main)


def test_the_generated_agent_and_its_scope_are_documented(gateway: LiveGateway) -> None:
    document = httpx.get(f"{gateway.url}/openapi.json", timeout=30).json()
    create = document["paths"]["/v1/threads"]["post"]
    search = document["paths"]["/v1/search"]["post"]
    for operation in (create, search):
        text = operation.get("description", "")
        assert GENERATED in text and WITHOUT_AN_AGENT in text, operation["operationId"]
    search_in = document["components"]["schemas"]["SearchIn"]["properties"]
    assert WITHOUT_AN_AGENT in search_in["agent_id"]["description"]
    thread_in = document["components"]["schemas"]["ThreadIn"]["properties"]
    assert GENERATED in thread_in["agent_id"]["description"]

    tools = tool_descriptions(gateway)
    for name in ("create_thread", "search"):
        assert GENERATED in tools[name] and WITHOUT_AN_AGENT in tools[name], name
    # Control of the check: a tool that does not concern threads does not carry the note.
    assert GENERATED not in tools["get_memory"]


def found(http: httpx.Client, **scope: Any) -> set[str]:
    """The contents a search for green tea finds in ``scope``."""
    answer = http.post("/v1/search", json={"query": "green tea", "k": 20, **scope})
    assert answer.status_code == 200, answer.text
    return {hit["record"]["content"] for hit in answer.json()["results"]}


def test_a_search_in_the_threads_scope_leaves_out_memories_without_an_agent(
        gateway: LiveGateway) -> None:
    with gateway.client("scope_user") as http:
        thread = http.post("/v1/threads", json={}).json()
        assert re.fullmatch(r"[0-9a-f]{32}", thread["agent_id"]), thread  # generated
        posted = http.post(f"/v1/threads/{thread['id']}/messages", json={"messages": [
            {"role": "user", "content": "green tea message in the thread"}]})
        assert posted.status_code == 201, posted.text
        for body in ({"content": "green tea memory without an agent"},
                     {"content": "green tea memory of the thread", "thread_id": thread["id"]}):
            assert http.post("/v1/memories", json=body).status_code == 201
        message = http.get(f"/v1/threads/{thread['id']}/messages").json()["items"][0]
        assert message["agent_id"] == thread["agent_id"]  # the thread's messages carry it

        in_thread_scope = found(http, thread_id=thread["id"], agent_id=thread["agent_id"])
        at_client_scope = found(http)
        by_thread_only = found(http, thread_id=thread["id"])

    assert in_thread_scope == {"green tea message in the thread"}
    assert at_client_scope == {"green tea message in the thread",
                               "green tea memory without an agent",
                               "green tea memory of the thread"}
    assert by_thread_only == {"green tea message in the thread",
                              "green tea memory of the thread"}
