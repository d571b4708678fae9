"""What an agent reads from ``/mcp`` before calling a tool, over real HTTP with the ``mcp`` client.

The gateway runs with limits other than the defaults, so that a bound the tool schemas show can
only have come from the settings. Every argument is described and carries the bounds the
server enforces (and the OpenAPI document the same); tools are annotated; descriptions are
plain text; a wrong argument answers a problem naming the argument and the rule; the server
reports the package's version; and the README's MCP client runs as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from dds import DdsEnvironment
from gateway_live import LiveGateway, live_gateway
from mcp_types import InitializeResult, Tool
from oam_gateway.config.limits import LimitSettings
from test_gateway_mcp import Tools, mcp_tools, with_tools

LIMITS = LimitSettings(max_k=37, max_query_chars=999, max_page_size=77, default_page_size=7,
                       max_batch_operations=11, max_filter_depth=6)
READ_TOOLS = {"search", "get_memory", "list_memories", "list_threads", "get_thread",
              "list_messages", "get_profile", "list_relations"}
ADDING_TOOLS = {"add_memory", "create_thread", "add_messages", "add_relation"}
REPLACING_TOOLS = {"update_memory", "set_profile", "delete_memory", "delete_relation"}
LIST_TOOLS = {"list_memories", "list_threads", "list_messages", "list_relations"}
RST = re.compile(r"``|:(class|meth|func|mod|data|attr|exc|obj):`")
README = Path(__file__).resolve().parents[1] / "README.md"
README_SECTION = "An MCP client"
README_URL = "http://127.0.0.1:8080"


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("mcp-schemas"), limits=LIMITS) as live:
        yield live


@pytest.fixture(scope="module")
def listed(gateway: LiveGateway) -> dict[str, Tool]:
    """Every tool as ``tools/list`` answers it, by name."""

    async def work(tools: Tools) -> list[Tool]:
        return (await tools.session.list_tools()).tools

    return {tool.name: tool for tool in with_tools(gateway, "schema_reader", work)}


@pytest.fixture(scope="module")
def openapi(gateway: LiveGateway) -> dict[str, Any]:
    answer = httpx.get(f"{gateway.url}/openapi.json", timeout=30)
    assert answer.status_code == 200
    document: dict[str, Any] = answer.json()
    return document


def properties(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(name, schema)`` of every property of ``schema`` and of its definitions."""
    yield from schema.get("properties", {}).items()
    for definition in schema.get("$defs", {}).values():
        yield from properties(definition)


def test_every_tool_argument_is_described(listed: dict[str, Tool]) -> None:
    assert len(listed) == 16
    for tool in listed.values():
        assert tool.description, tool.name
        described = dict(properties(tool.input_schema))
        assert described or tool.name == "get_profile", tool.name
        for name, schema in described.items():
            assert schema.get("description"), f"{tool.name}.{name}"
    # Control of the check: the definitions are walked too (add_messages' message fields).
    assert "role" in dict(properties(listed["add_messages"].input_schema))


def test_tool_schemas_carry_the_limits_the_server_enforces(
        listed: dict[str, Tool], openapi: dict[str, Any]) -> None:
    search = listed["search"].input_schema["properties"]
    assert (search["k"]["minimum"], search["k"]["maximum"]) == (1, LIMITS.max_k)
    assert (search["query"]["minLength"], search["query"]["maxLength"]) == (
        1, LIMITS.max_query_chars)
    search_in = openapi["components"]["schemas"]["SearchIn"]["properties"]
    assert search["num_hops"]["maximum"] == search_in["num_hops"]["maximum"] == 5
    assert f"{LIMITS.max_filter_depth} levels" in search["metadata_filter"]["description"]
    for name in LIST_TOOLS:
        limit = listed[name].input_schema["properties"]["limit"]
        assert (limit["minimum"], limit["maximum"], limit["default"]) == (
            1, LIMITS.max_page_size, LIMITS.default_page_size), name
    messages = listed["add_messages"].input_schema["properties"]["messages"]
    assert (messages["minItems"], messages["maxItems"]) == (1, LIMITS.max_batch_operations)
    content = listed["add_memory"].input_schema["properties"]["content"]
    assert content["minLength"] == 1
    # The OpenAPI document shows the same bounds.
    assert (search_in["k"]["minimum"], search_in["k"]["maximum"]) == (1, LIMITS.max_k)
    assert search_in["query"]["maxLength"] == LIMITS.max_query_chars
    batch = openapi["components"]["schemas"]["BatchIn"]["properties"]["operations"]
    assert batch["maxItems"] == LIMITS.max_batch_operations
    limit_parameter = next(p for p in openapi["paths"]["/v1/memories"]["get"]["parameters"]
                           if p["name"] == "limit")
    assert (limit_parameter["schema"]["minimum"], limit_parameter["schema"]["maximum"]) == (
        1, LIMITS.max_page_size)


def test_the_bounds_shown_are_the_bounds_applied(gateway: LiveGateway) -> None:
    async def work(tools: Tools) -> None:
        await tools.ok("search", query="x", k=LIMITS.max_k)  # positive control: at the bound
        over = await tools.error("search", "invalid-request", query="x", k=LIMITS.max_k + 1)
        assert over["detail"].startswith("k:") and str(LIMITS.max_k) in over["detail"]
        long = await tools.error("search", "invalid-request",
                                 query="x" * (LIMITS.max_query_chars + 1))
        assert long["detail"].startswith("query:")
        await tools.ok("list_memories", limit=LIMITS.max_page_size)
        await tools.error("list_memories", "invalid-request", limit=LIMITS.max_page_size + 1)
        await tools.error("list_memories", "invalid-request", limit=0)

    with_tools(gateway, "schema_bounds", work)


def test_tools_are_annotated(listed: dict[str, Tool]) -> None:
    assert set(listed) == READ_TOOLS | ADDING_TOOLS | REPLACING_TOOLS
    for tool in listed.values():
        hints = tool.annotations
        assert hints is not None, tool.name
        assert hints.open_world_hint is False, tool.name
        assert hints.read_only_hint is (tool.name in READ_TOOLS), tool.name
        if tool.name in ADDING_TOOLS:
            assert (hints.destructive_hint, hints.idempotent_hint) == (False, False), tool.name
        if tool.name in REPLACING_TOOLS:
            assert (hints.destructive_hint, hints.idempotent_hint) == (True, True), tool.name
    assert {name for name in listed if name.startswith("delete_")} <= REPLACING_TOOLS


def test_descriptions_are_plain_text(listed: dict[str, Tool]) -> None:
    for tool in listed.values():
        texts = [tool.description or ""] + [
            str(schema.get("description", "")) for _, schema in properties(tool.input_schema)]
        for text in texts:
            assert not RST.search(text), f"{tool.name}: {text}"
            assert text == text.strip() and "\n    " not in text, f"{tool.name}: {text!r}"
    # Control of the pattern: the markup the docstrings of the code use is caught.
    assert RST.search("see :class:`Tool`") and RST.search("``k``")


def test_a_wrong_argument_names_the_argument_and_the_rule(gateway: LiveGateway) -> None:
    async def work(tools: Tools) -> None:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("add_memory", {"content": 5}, "content: Input should be a valid string"),
            ("search", {"query": "x", "k": "many"}, "k: Input should be a valid integer"),
            ("get_memory", {}, "memory_id: Field required"),
            ("add_messages", {"thread_id": "t", "messages": [{"role": "narrator",
                                                              "content": "x"}]},
             "messages.0.role: Input should be"),
        ]
        for name, arguments, expected in cases:
            problem = await tools.error(name, "invalid-request", **arguments)
            assert problem["detail"].startswith(expected), problem
            assert "validation error for" not in problem["detail"], problem
            assert "Arguments" not in problem["detail"] and problem["instance"] == "/mcp"
        await tools.ok("add_memory", content="5")  # positive control: the right type

    with_tools(gateway, "schema_types", work)


def test_the_server_reports_the_packages_version(gateway: LiveGateway) -> None:
    async def main() -> InitializeResult:
        async with mcp_tools(gateway.url, gateway.token("schema_version")) as tools:
            return await tools.session.initialize()

    server = anyio.run(main).server_info
    assert server.name == "oracle-agent-memory"
    assert server.version == metadata.version("oam-secure-gateway") != ""


def readme_client() -> str:
    """The Python block of the README's MCP client section."""
    text = README.read_text(encoding="utf-8")
    section = re.search(rf"^### {re.escape(README_SECTION)}\n(.*?)(?=^##)", text, re.M | re.S)
    assert section, f"README.md has no '### {README_SECTION}' section"
    blocks = re.findall(r"^```python\n(.*?)^```", section[1], re.M | re.S)
    assert len(blocks) == 1
    code: str = blocks[0]
    return code


def test_the_readme_mcp_client_runs_as_written(gateway: LiveGateway,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = readme_client()
    assert "httpx.AsyncClient(headers=" in code and "http_client=" in code
    assert "._" not in code, "the README's client uses no private module or name"
    assert code.count(README_URL) == 1
    monkeypatch.setenv("ALICE_TOKEN", gateway.token("alice"))
    capsys.readouterr()
    exec(compile(code.replace(README_URL, gateway.url), f"{README}:{README_SECTION}", "exec"),
         {"__name__": "__readme__"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"oracle-agent-memory {metadata.version('oam-secure-gateway')}"
    assert json.loads(printed[1].replace("'", '"'))[:3] == ["add_memory", "add_messages",
                                                            "add_relation"]
    assert printed[2:] == ["Alice is vegetarian"]
