"""A gateway with the development authorization server, as ``oam-gateway dev`` serves it.

:func:`dev_gateway` binds a free loopback port first (the issuer identifier is the gateway's
base URL, as in ``dev``), makes a development issuer of that name, registers it with the
database as a fresh identity provider (its group ``team`` holds both policies on a fresh
protected store of the Deep Data Security test environment, ``tests/dds.py``), and serves the
gateway over that store with the authorization server's routes on the same origin, the demo
users ``alice`` and ``bob`` in group ``team``.

:class:`Browser` answers the sign-in page as a person would: it loads the page, picks a
user and follows nothing (it returns the redirect to the client's redirect URI).
:func:`mcp_session_as` is an MCP session whose client signs in with the ``mcp`` package's
OAuth support.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
import uvicorn
from dds import GROUP, OWNER, POLICIES, DdsEnvironment
from gateway_live import VECTOR_DIM, gateway_settings
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from oam_gateway.app import create_app
from oam_gateway.cli import DEV_AUDIENCE
from oam_gateway.dev.authorization_server import (
    DevAuthorizationServer,
    authorization_server_routes,
)
from oracleagentmemory.core.deepsec import (
    OciGroupPrincipal,
    grant_agent_memory_policies,
    identities,
)
from oracleagentmemory.devissuer import DevIssuer
from pydantic import AnyUrl
from starlette.types import ASGIApp

DEMO_USERS = {"alice": [GROUP], "bob": [GROUP]}
CALLBACK = "http://127.0.0.1:33418/callback"
"""The redirect URI the test clients register (never served: the code is read from the
redirect's ``Location``)."""
_ids = itertools.count(1)


@dataclass
class DevGateway:
    """A gateway at :attr:`url` whose authorization server is :attr:`server`."""

    url: str
    server: DevAuthorizationServer
    dds: DdsEnvironment
    store_id: str
    identity_provider: str

    def user_id(self, user: str) -> str:
        """What the rows of ``user`` carry (the provider's namespace)."""
        return f"{self.identity_provider}:{user}"


@contextmanager
def serve_on_socket(app: ASGIApp, sock: socket.socket) -> Iterator[None]:
    """Serve ``app`` with uvicorn (lifespan on) in a thread on the bound ``sock``."""
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(15)


@contextmanager
def dev_gateway(dds: DdsEnvironment, tmp_path: Path, **overrides: Any) -> Iterator[DevGateway]:
    """A fresh protected store served with the development authorization server."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    issuer = DevIssuer.create(tempfile.mkdtemp(dir=tmp_path, prefix="issuer-"), base)
    provider = f"devas{next(_ids)}"
    store_id = dds.new_store(vector_dim=VECTOR_DIM)
    identities.add_identity_provider(dds.secadmin_url, provider, issuer=base,
                                     audience=DEV_AUDIENCE, jwks=issuer.jwks())
    grant_agent_memory_policies(dds.secadmin_url, store_id, OWNER,
                                [OciGroupPrincipal(GROUP, provider)], POLICIES)
    identities.bind_application(dds.secadmin_url, "gw", identity_providers=[provider])
    jwks_file = tmp_path / f"{provider}-jwks.json"
    jwks_file.write_text(json.dumps(issuer.jwks()), encoding="utf-8")
    server = DevAuthorizationServer(issuer, DEV_AUDIENCE, DEMO_USERS)
    settings = gateway_settings(dds, store_id, jwks_file, issuer=base, audience=DEV_AUDIENCE,
                                identity_provider=provider, **overrides)
    app = create_app(settings, extra_routes=authorization_server_routes(server))
    try:
        with sock, serve_on_socket(app, sock):
            yield DevGateway(base, server, dds, store_id, provider)
    finally:
        identities.remove_identity_provider(dds.secadmin_url, provider)


@dataclass(frozen=True)
class SignInForm:
    """The sign-in page's form: where it posts and its hidden fields."""

    action: str
    fields: dict[str, str]
    users: list[str]


def sign_in_form(page: httpx.Response) -> SignInForm:
    """The form of a sign-in page (checked to be one)."""
    assert page.status_code == 200, page.text
    html = page.text
    action = re.search(r'<form method="post" action="([^"]+)"', html)
    assert action, html
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))
    users = re.findall(r'<button type="submit" name="user" value="([^"]+)">', html)
    return SignInForm(action[1], fields, users)


class Browser:
    """An HTTP client with a cookie jar that answers the sign-in page as a person would."""

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=30, follow_redirects=False)

    def open(self, authorization_url: str) -> httpx.Response:
        """Load the authorization URL (the sign-in page, or a redirect or error)."""
        return self.http.get(authorization_url)

    def sign_in(self, authorization_url: str, user: str) -> httpx.Response:
        """Open the page and pick ``user``: the answer (a redirect to the client)."""
        form = sign_in_form(self.open(authorization_url))
        return self.http.post(form.action, data={**form.fields, "user": user})

    def close(self) -> None:
        self.http.close()


def redirect_parameters(response: httpx.Response) -> dict[str, str]:
    """The query parameters of a redirect (``code`` and ``state``, or ``error``)."""
    assert response.status_code == 303, (response.status_code, response.text)
    query = parse_qs(urlsplit(response.headers["location"]).query)
    return {key: values[0] for key, values in query.items()}


class MemoryTokenStorage:
    """The MCP client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def mcp_session_as(url: str, user: str, storage: MemoryTokenStorage, work: Any) -> Any:
    """Run ``work(session)`` in an MCP session of the gateway at ``url``, as the ``mcp``
    package's ``OAuthClientProvider`` signs in (discovery, registration, the sign-in page
    answered by picking ``user``, the code exchange)."""
    browser = Browser(url)
    answers: list[httpx.Response] = []

    async def redirect_handler(authorization_url: str) -> None:
        answers.append(browser.sign_in(authorization_url, user))

    async def callback_handler() -> AuthorizationCodeResult:
        found = redirect_parameters(answers[-1])
        return AuthorizationCodeResult(code=found["code"], state=found["state"],
                                       iss=found.get("iss"))

    auth = OAuthClientProvider(
        f"{url}/mcp",
        OAuthClientMetadata(redirect_uris=[AnyUrl(CALLBACK)], client_name="mcp test client",
                            grant_types=["authorization_code", "refresh_token"]),
        storage, redirect_handler=redirect_handler, callback_handler=callback_handler)

    async def main() -> Any:
        async with (httpx2.AsyncClient(auth=auth, timeout=30) as http,
                    streamable_http_client(f"{url}/mcp", http_client=http)
                    as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            return await work(session)

    try:
        return anyio.run(main)
    finally:
        browser.close()
