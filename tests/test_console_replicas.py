"""The console on two replicas behind one address: nothing kept per replica changes an answer.

Two gateways (each its own app, as each ``oam-gateway serve`` process builds one: its own
console, sessions and sign-in key) serve one protected store, and a browser reaches them
through one public address (the ``Host`` both are sent, as a load balancer keeps it); replica
A also serves the development authorization server, the issuer at that address. With one
``console_cookie_secret`` and one real ``redis-server`` as ``console_session_store_uri``,
alice signed in on A is signed in on B, her sign-out on B ends her session on A, and a
sign-in started on A finishes at B's callback (once). The control is the default (no key, no
shared store): B refuses A's session and A's sign-in cleanly (a sign-in page, never a 500),
while A accepts both. With Redis stopped the console answers a 503 page with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import coredis
import httpx
import pytest
from console_live import COOKIE, DEMO_USERS, _hidden
from dds import AUDIENCE, GROUP, DdsEnvironment
from dev_authorization import serve_on_socket
from gateway_live import VECTOR_DIM, gateway_settings
from gateway_replicas import gateway_replicas
from oam_gateway.app import create_app
from oam_gateway.console.sessions import SESSION_LIFETIME_SECONDS
from oam_gateway.dev.authorization_server.routes import authorization_server_routes
from oam_gateway.dev.authorization_server.server import CONSOLE_CLIENT_ID, DevAuthorizationServer
from oracleagentmemory.devissuer import DevIssuer
from redis_server import RedisServer, redis_server

SECRET = "a-console-key-shared-by-every-replica-0123456789"


@dataclass
class Replicas:
    """Replicas ``a`` and ``b`` (their own URLs) behind the public address ``host``."""

    a: str
    b: str
    host: str

    def browser(self) -> httpx.Client:
        """A browser of the public address (no redirects followed; one cookie jar)."""
        return httpx.Client(timeout=30, headers={"Host": self.host})


@contextmanager
def _replicas(dds: DdsEnvironment, directory: Path, **overrides: Any) -> Iterator[Replicas]:
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                 for _ in range(2)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        a, b = (f"http://127.0.0.1:{sock.getsockname()[1]}" for sock in socks)
        issuer = DevIssuer.create(directory / "issuer", a)
        jwks_file = directory / "jwks.json"
        jwks_file.write_text(json.dumps(issuer.jwks()), encoding="utf-8")
        settings = gateway_settings(dds, dds.new_store(vector_dim=VECTOR_DIM), jwks_file,
                                    issuer=a, console_client_id=CONSOLE_CLIENT_ID, **overrides)
        server = DevAuthorizationServer(issuer, AUDIENCE, {u: [GROUP] for u in DEMO_USERS})
        stack.enter_context(serve_on_socket(create_app(
            settings, extra_routes=authorization_server_routes(server)), socks[0]))
        stack.enter_context(serve_on_socket(create_app(settings), socks[1]))
        yield Replicas(a, b, urlsplit(a).netloc)


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("console-redis")) as server:
        yield server


@pytest.fixture(scope="module")
def shared(dds: DdsEnvironment, redis: RedisServer,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    with _replicas(dds, tmp_path_factory.mktemp("console-shared"),
                   console_cookie_secret=SECRET, console_session_store_uri=redis.url,
                   limits={"rate_limit_storage_uri": redis.url}) as replicas:
        yield replicas


@pytest.fixture(scope="module")
def unshared(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Replicas]:
    with _replicas(dds, tmp_path_factory.mktemp("console-unshared")) as replicas:
        yield replicas


def _to_callback(replicas: Replicas, browser: httpx.Client, user: str = "alice") -> str:
    """Start a sign-in of ``user`` on replica A and choose them at the provider: the
    callback URL the provider sends the browser to (not yet opened)."""
    to_provider = browser.get(replicas.a + "/console/sign-in")
    assert to_provider.status_code == 303, to_provider.text
    page = browser.get(to_provider.headers["location"])
    assert page.status_code == 200, page.text
    chosen = browser.post(replicas.a + "/oauth/authorize", data={
        "request": _hidden(page.text, "request"),
        "csrf_token": _hidden(page.text, "csrf_token"), "user": user})
    assert chosen.status_code == 303, chosen.text
    location: str = chosen.headers["location"]
    assert location.startswith(replicas.a + "/console/callback?")
    return location


def _on(replica: str, url: str) -> str:
    """``url`` (of the public address) sent to ``replica``."""
    parts = urlsplit(url)
    return f"{replica}{parts.path}?{parts.query}" if parts.query else replica + parts.path


def _signed_in_on_a(replicas: Replicas, browser: httpx.Client, user: str = "alice") -> None:
    back = browser.get(_to_callback(replicas, browser, user))
    assert back.status_code == 303 and back.headers["location"].endswith("/console/memories")
    assert browser.cookies.get(COOKIE)


def _sessions_kept(redis: RedisServer) -> dict[bytes, tuple[int, bytes]]:
    """The console's session keys in ``redis``: the seconds each has left and its value."""

    async def read() -> dict[bytes, tuple[int, bytes]]:
        client = coredis.Redis.from_url(redis.url)
        keys = await client.keys("oam-console:session:*")
        return {key: (await client.ttl(key), await client.get(key) or b"") for key in keys}

    return asyncio.run(read())


def _csrf(page: httpx.Response) -> str:
    assert page.status_code == 200, page.text
    return _hidden(page.text, "csrf_token")


def test_a_session_opened_on_one_replica_is_served_and_ended_by_the_other(
        shared: Replicas, redis: RedisServer) -> None:
    before = _sessions_kept(redis)
    with shared.browser() as browser:
        _signed_in_on_a(shared, browser)
        opened = {key: kept for key, kept in _sessions_kept(redis).items() if key not in before}
        [(key, (ttl, value))] = opened.items()  # one key, a hash of the id, expiring with it
        assert 0 < ttl <= SESSION_LIFETIME_SECONDS
        assert browser.cookies[COOKIE].encode() not in key
        assert b"eyJ" not in value and b"acme" not in value  # the token is sealed, not kept
        cookie = browser.cookies[COOKIE]
        on_a = browser.get(shared.a + "/console/memories")
        on_b = browser.get(shared.b + "/console/memories")
        assert on_a.status_code == on_b.status_code == 200, on_b.text
        assert ":alice</dd>" in browser.get(shared.b + "/console/profile").text  # hers
        assert _csrf(on_a) == _csrf(on_b)  # one session, the same CSRF token on both

        out = browser.post(shared.b + "/console/sign-out", data={"csrf_token": _csrf(on_b)})
        assert out.status_code == 200 and "You are signed out" in out.text
        assert key not in _sessions_kept(redis)  # sign-out deleted it
    with httpx.Client(timeout=30, headers={"Host": shared.host}) as replay:
        replay.cookies.set(COOKIE, cookie)
        for replica in (shared.a, shared.b):
            refused = replay.get(replica + "/console/memories")
            assert refused.status_code == 401 and "Sign in" in refused.text


def test_a_sign_in_started_on_one_replica_finishes_on_the_other_once(shared: Replicas) -> None:
    with shared.browser() as browser:
        callback = _to_callback(shared, browser)
        back = browser.get(_on(shared.b, callback))
        assert back.status_code == 303, back.text
        assert back.headers["location"].endswith("/console/memories")
        for replica in (shared.a, shared.b):
            assert browser.get(replica + "/console/memories").status_code == 200
        browser.cookies.delete(COOKIE)
        again = browser.get(_on(shared.a, callback))  # its state was taken at B
        assert again.status_code == 400 and "already used" in again.text
        assert not browser.cookies.get(COOKIE)


def test_without_a_shared_key_and_store_another_replica_refuses_cleanly(
        unshared: Replicas) -> None:
    with unshared.browser() as browser:
        _signed_in_on_a(unshared, browser)
        assert browser.get(unshared.a + "/console/memories").status_code == 200
        on_b = browser.get(unshared.b + "/console/memories")
        assert on_b.status_code == 401 and "Sign in" in on_b.text

    with unshared.browser() as browser:
        callback = _to_callback(unshared, browser)
        at_b = browser.get(_on(unshared.b, callback))
        assert at_b.status_code == 400 and "sign in again" in at_b.text
        at_a = browser.get(_on(unshared.a, callback))  # the control: its own replica takes it
        assert at_a.status_code == 303 and at_a.headers["location"].endswith("/console/memories")


def test_replicas_without_a_shared_console_key_say_so_at_start_up(
        dds: DdsEnvironment, redis: RedisServer, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps(dds.issuer.jwks()), encoding="utf-8")
    store_id = dds.new_store(vector_dim=VECTOR_DIM)
    limits = {"rate_limit_storage_uri": redis.url}
    with caplog.at_level(logging.WARNING, logger="oam_gateway.console.routes"):
        create_app(gateway_settings(dds, store_id, jwks_file, limits=limits,
                                    console_client_id=CONSOLE_CLIENT_ID))
    warned = [r.getMessage() for r in caplog.records if "console" in r.getMessage()]
    assert len(warned) == 1 and "console_cookie_secret" in warned[0], warned
    assert "console_session_store_uri" in warned[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="oam_gateway.console.routes"):
        create_app(gateway_settings(dds, store_id, jwks_file, limits=limits,
                                    console_client_id=CONSOLE_CLIENT_ID,
                                    console_cookie_secret=SECRET,
                                    console_session_store_uri=redis.url))
    assert not [r for r in caplog.records if "console" in r.getMessage()]


def test_workers_without_a_shared_console_key_say_so_at_start_up(
        dds: DdsEnvironment, redis: RedisServer, tmp_path: Path) -> None:
    store_id = dds.new_store(vector_dim=VECTOR_DIM)
    console = {"console_client_id": CONSOLE_CLIENT_ID}
    with gateway_replicas(dds, store_id, tmp_path / "alone", count=1, workers=2,
                          settings=console) as [alone]:
        assert "2 workers serve the console, but its sign-in key is made per process " \
               "(set console_cookie_secret) and its sessions are kept per process" in alone.log()
    shared_state = {**console, "console_cookie_secret": SECRET,
                    "console_session_store_uri": redis.url}
    with gateway_replicas(dds, store_id, tmp_path / "shared", count=1, workers=2,
                          settings=shared_state) as [shared]:
        assert httpx.get(shared.url + "/console").status_code == 200
        assert "workers serve the console" not in shared.log()


def test_with_redis_stopped_the_console_answers_a_503_page(
        shared: Replicas, redis: RedisServer) -> None:
    with shared.browser() as browser, shared.browser() as other:
        _signed_in_on_a(shared, browser)
        assert browser.get(shared.b + "/console/memories").status_code == 200
        callback = _to_callback(shared, other, "bob")  # a sign-in under way
        redis.stop()
        try:
            for path in ("/console/memories", "/console", "/console/profile"):
                for replica in (shared.a, shared.b):
                    away = browser.get(replica + path)
                    assert away.status_code == 503, (path, away.text)
                    assert away.headers["retry-after"] == "5"
                    assert "session store" in away.text
            assert browser.post(shared.b + "/console/sign-out",
                                data={"csrf_token": "x"}).status_code == 503
            assert other.get(_on(shared.b, callback)).status_code == 503
            started = browser.get(shared.a + "/console/sign-in")  # stores nothing: it starts
            assert started.status_code == 303
        finally:
            redis.start()
        signed_out = browser.get(shared.b + "/console/memories")  # Redis came back empty
        assert signed_out.status_code == 401
        back = other.get(_on(shared.b, callback))  # the sign-in was not used: it finishes
        assert back.status_code == 303 and back.headers["location"].endswith("/console/memories")
        assert other.get(shared.a + "/console/memories").status_code == 200


def test_the_settings_refuse_a_shared_store_without_a_shared_key(
        dds: DdsEnvironment, tmp_path: Path) -> None:
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps(dds.issuer.jwks()), encoding="utf-8")
    with pytest.raises(ValueError, match="needs console_cookie_secret"):
        gateway_settings(dds, "s", jwks_file, console_session_store_uri="redis://127.0.0.1/0")
    with pytest.raises(ValueError, match="at least 32"):
        gateway_settings(dds, "s", jwks_file, console_cookie_secret="short")
    key_file = tmp_path / "console.key"
    key_file.write_text(SECRET + "\n", encoding="utf-8")
    from_file = gateway_settings(dds, "s", jwks_file, console_cookie_secret_file=key_file,
                                 console_session_store_uri="redis://127.0.0.1/0")
    assert from_file.console_key() == SECRET.encode()
    assert SECRET not in repr(gateway_settings(dds, "s", jwks_file,
                                               console_cookie_secret=SECRET))
    assert re.fullmatch(r"memory://", gateway_settings(dds, "s", jwks_file)
                        .console_session_store_uri)
