"""``oam-gateway dev`` serves its authorization server: an MCP client signs in with OAuth.

One ``oam-gateway dev`` process (its own embedded database and state, as in
``test_gateway_cli``); the ``mcp`` package's client discovers the server from the 401 of
``/mcp``, registers, signs alice in on the sign-in page and calls tools; bob's session finds
none of alice's rows; the pasted-token path (``oam-gateway token``) keeps working beside it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from dev_authorization import MemoryTokenStorage, mcp_session_as
from mcp.client.session import ClientSession
from test_gateway_cli import GATEWAY, DevPlace, DevRun, dev_gateway


@pytest.fixture(scope="module")
def running() -> Iterator[tuple[DevRun, DevPlace]]:
    parent = Path(tempfile.mkdtemp(prefix="oam-gateway-dev-oauth-"))
    place = DevPlace(parent / "pgdata", parent / "xdg")
    try:
        with dev_gateway(place) as run:
            yield run, place
    finally:
        from oracleagentmemory import embedded

        embedded.stop(place.data_dir)
        shutil.rmtree(parent, ignore_errors=True)


async def _structured(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_dev_names_itself_as_the_authorization_server(running: tuple[DevRun, DevPlace]
                                                      ) -> None:
    run, _ = running
    resource = httpx.get(f"{run.base}/.well-known/oauth-protected-resource/mcp",
                         timeout=30).json()
    assert resource["authorization_servers"] == [run.base]
    metadata = httpx.get(f"{run.base}/.well-known/oauth-authorization-server",
                         timeout=30).json()
    assert metadata["issuer"] == run.base
    assert any("MCP clients sign in with OAuth" in line for line in run.progress())


def test_an_mcp_client_signs_in_to_dev_and_calls_tools(running: tuple[DevRun, DevPlace]
                                                       ) -> None:
    run, place = running

    async def add_and_find(session: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
        made = await _structured(session, "add_memory", content="Alice's cat is called Miso")
        return made, await _structured(session, "search", query="what is the cat called", k=5)

    made, found = mcp_session_as(run.base, "alice", MemoryTokenStorage(), add_and_find)
    assert made["user_id"] == "dev:alice"
    assert made["id"] in [hit["record"]["id"] for hit in found["results"]]

    async def search(session: ClientSession) -> dict[str, Any]:
        return await _structured(session, "search", query="what is the cat called", k=5)

    assert mcp_session_as(run.base, "bob", MemoryTokenStorage(), search)["results"] == []
    # The pasted-token path still works: oam-gateway token signs for the same issuer.
    minted = subprocess.run([GATEWAY, "token", "--user", "alice"], env=place.env(),
                            check=True, capture_output=True, text=True, timeout=60)
    me = httpx.get(f"{run.base}/v1/me", timeout=30,
                   headers={"Authorization": f"Bearer {minted.stdout.strip()}"})
    assert me.status_code == 200, me.text
    assert me.json()["user_name"] == "dev:alice"
