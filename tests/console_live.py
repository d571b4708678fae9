"""The console against a running gateway: the gateway with the development authorization
server on its own origin, signing in over HTTP, and a headless Chromium to drive the pages.

:func:`console_gateway` serves a fresh protected store of the Deep Data Security test
environment (``tests/dds.py``) with the console's client registered at the development
authorization server, whose issuer is the gateway's own base URL (so the port is bound before
the app is built). :func:`signed_in` walks the sign-in over HTTP (console, sign-in page, the
demo user's button, callback) and returns an ``httpx`` client holding the session cookie.
:func:`chromium` starts Debian's headless Chromium through its chromedriver, with downloads
into a directory and the performance log on.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from dds import AUDIENCE, GROUP, DdsEnvironment
from dev_authorization import serve_on_socket
from gateway_live import BOTH_SCOPES, VECTOR_DIM, gateway_settings
from oam_gateway.app import create_app
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.dev.authorization_server.routes import authorization_server_routes
from oam_gateway.dev.authorization_server.server import CONSOLE_CLIENT_ID, DevAuthorizationServer
from oracleagentmemory.devissuer import DevIssuer
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
DEMO_USERS = ("alice", "bob")
COOKIE = "oam_console"


@dataclass
class ConsoleAt:
    """A gateway serving the console (and the development authorization server) at :attr:`url`."""

    url: str


@dataclass
class ConsoleGateway(ConsoleAt):
    """A gateway at :attr:`url` whose console signs in the demo users of :attr:`issuer`."""

    dds: DdsEnvironment
    store_id: str
    issuer: DevIssuer

    def client(self, user: str) -> httpx.Client:
        """An HTTP client of the REST API carrying a token of ``user`` (for set-up and checks
        from outside the console)."""
        token = self.issuer.token(user, audience=AUDIENCE, groups=[GROUP], scope=BOTH_SCOPES)
        return httpx.Client(base_url=self.url, timeout=30,
                            headers={"Authorization": f"Bearer {token}"})


@dataclass(frozen=True)
class TenantIssuer(DevIssuer):
    """A development issuer whose tokens name each user's tenant (the ``tenant`` claim)."""

    user_tenants: Mapping[str, str] = field(default_factory=dict)

    def token(self, subject: str, *, audience: str, groups: Sequence[str] = (),
              lifetime_seconds: int = 300, **claims: Any) -> str:
        return super().token(subject, audience=audience, groups=groups,
                             lifetime_seconds=lifetime_seconds,
                             tenant=self.user_tenants[subject], **claims)


def _tenants_settings(dds: DdsEnvironment, store_id: str, jwks_file: Path, url: str,
                      tenants: set[str]) -> GatewaySettings:
    """Settings of a gateway whose ``tenants`` all serve the store ``store_id``, each with the
    console's client; the ``tenant`` claim picks one."""
    one = gateway_settings(dds, store_id, jwks_file).tenant_settings()["acme"]
    return GatewaySettings(
        tenants={name: one.model_copy(update={"console_client_id": CONSOLE_CLIENT_ID})
                 for name in tenants},
        tenant_claim="tenant", issuer=url, audience=AUDIENCE, jwks_file=jwks_file)


@contextmanager
def console_gateway(dds: DdsEnvironment, directory: Path, *,
                    user_tenants: Mapping[str, str] | None = None,
                    **overrides: Any) -> Iterator[ConsoleGateway]:
    """A fresh protected store served with its console and the development authorization
    server (demo users :data:`DEMO_USERS`, in the group that holds the store's roles).

    ``user_tenants`` makes a gateway of several tenants over the store, each user in the one
    it names (``overrides`` apply to one-tenant settings)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        issuer = DevIssuer.create(directory / "issuer", url)
        if user_tenants is not None:
            issuer = TenantIssuer(issuer.issuer, issuer.key, user_tenants)
        jwks_file = directory / "jwks.json"
        jwks_file.write_text(json.dumps(issuer.jwks()), encoding="utf-8")
        store_id = dds.new_store(vector_dim=VECTOR_DIM)
        if user_tenants is not None:
            settings = _tenants_settings(dds, store_id, jwks_file, url,
                                         set(user_tenants.values()))
        else:
            settings = gateway_settings(dds, store_id, jwks_file, **{
                "issuer": url, "console_client_id": CONSOLE_CLIENT_ID, **overrides})
        server = DevAuthorizationServer(issuer, AUDIENCE, {u: [GROUP] for u in DEMO_USERS})
        app = create_app(settings, extra_routes=authorization_server_routes(server))
        with serve_on_socket(app, sock):
            yield ConsoleGateway(url, dds, store_id, issuer)


def _hidden(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found, f"no hidden field {name!r} on the page"
    return found.group(1)


def sign_in_answer(gateway: ConsoleAt, user: str, tenant: str | None = None, *,
                   authorize: Callable[[str], str] = str,
                   client: httpx.Client | None = None) -> tuple[httpx.Client, httpx.Response]:
    """Walk the sign-in of ``user`` (to ``tenant``'s console when given) over HTTP: the
    client and the console's answer to the callback. ``authorize`` may change the
    authorization URL the console sent the browser to (an attacker's hand); ``client`` is
    the browser (a new one by default)."""
    client = client or httpx.Client(base_url=gateway.url, timeout=30)
    to_provider = client.get("/console/sign-in", params={"tenant": tenant} if tenant else None)
    assert to_provider.status_code == 303, to_provider.text
    page = client.get(authorize(to_provider.headers["location"]))
    assert page.status_code == 200, page.text
    chosen = client.post("/oauth/authorize", data={
        "request": _hidden(page.text, "request"),
        "csrf_token": _hidden(page.text, "csrf_token"), "user": user})
    assert chosen.status_code == 303, chosen.text
    return client, client.get(chosen.headers["location"])


def signed_in(gateway: ConsoleAt, user: str, tenant: str | None = None, *,
              client: httpx.Client | None = None) -> httpx.Client:
    """An HTTP client (no redirects followed; ``client`` when given) that signed in to the
    console as ``user``."""
    client, back = sign_in_answer(gateway, user, tenant, client=client)
    assert back.status_code == 303 and back.headers["location"].endswith("/console/memories")
    assert client.cookies.get(COOKIE)
    return client


def csrf_token(client: httpx.Client, path: str = "/console/memories") -> str:
    """The CSRF token on the console page ``path`` for ``client``'s session."""
    page = client.get(path)
    assert page.status_code == 200, page.text
    return _hidden(page.text, "csrf_token")


def chromium(download_dir: Path) -> webdriver.Chrome:
    """Headless Chromium (no sandbox: CI runs as root) downloading into ``download_dir``,
    with its performance log on."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1280,900", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--disable-default-apps"):
        options.add_argument(argument)
    options.add_experimental_option("prefs", {
        "download.default_directory": str(download_dir),
        "download.prompt_for_download": False,
        "safebrowsing.enabled": False})
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))


def performance_log(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    """The DevTools messages Chromium logged since the last call (``Network.*`` events)."""
    entries = driver.get_log("performance")  # type: ignore[no-untyped-call]
    return [json.loads(entry["message"])["message"] for entry in entries]
