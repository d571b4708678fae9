"""The console's open sign-in under a flood (attack review W of issue 25), over real HTTP.

``/console/sign-in`` answers anyone, so each client address may start
``limits.sign_in_rate_limit`` sign-ins (here :data:`BUDGET` a minute) and then gets the
console's 429 page with ``Retry-After``, while other addresses, and people already signed in,
go on. A sign-in under way lives in its browser's signed sign-in cookie rather than in a
server-side cache, so a flood of sign-in starts from many addresses, each within its budget,
more than the sessions the console keeps, cannot push out a sign-in started before it. The
clients connect from several loopback addresses (127.0.0.0/8) to the gateway at 127.0.0.1.

Each refusal has its positive control.
"""

from __future__ import annotations

import http.client
import math
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from console_live import COOKIE, ConsoleGateway, console_gateway, signed_in
from oam_gateway.console.routes import SIGN_IN_COOKIE
from oam_gateway.console.sessions import MAX_SESSIONS

BUDGET = 4
"""Sign-ins each address may start a minute in these tests."""


@pytest.fixture(scope="module")
def gateway(dds: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleGateway]:
    with console_gateway(dds, tmp_path_factory.mktemp("console-sign-in-flood"),
                         limits={"sign_in_rate_limit": f"{BUDGET}/minute"}) as served:
        yield served


def _browser(gateway: ConsoleGateway, address: str) -> httpx.Client:
    """A browser connecting from ``address`` (a loopback address)."""
    return httpx.Client(base_url=gateway.url, timeout=30,
                        transport=httpx.HTTPTransport(local_address=address))


def _to_callback(browser: httpx.Client, user: str) -> str:
    """Start a sign-in in ``browser``, pick ``user`` at the provider: the callback URL."""
    started = browser.get("/console/sign-in")
    assert started.status_code == 303, started.text
    page = browser.get(started.headers["location"])
    fields = dict(re.findall(r'name="(request|csrf_token)" value="([^"]*)"', page.text))
    chosen = browser.post("/oauth/authorize", data={**fields, "user": user})
    assert chosen.status_code == 303, chosen.text
    return str(chosen.headers["location"])


def _starts(gateway: ConsoleGateway, address: str, count: int) -> list[int]:
    """The statuses of ``count`` sign-in starts from ``address`` on one connection (the
    standard library's client: no TLS context to build per address)."""
    port = urlsplit(gateway.url).port
    assert port is not None
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                            source_address=(address, 0))
    statuses = []
    try:
        for _ in range(count):
            connection.request("GET", "/console/sign-in")
            answer = connection.getresponse()
            answer.read()
            statuses.append(answer.status)
    finally:
        connection.close()
    return statuses


def test_an_address_over_its_sign_in_budget_gets_429_while_others_sign_in(
        gateway: ConsoleGateway) -> None:
    alice = signed_in(gateway, "alice", client=_browser(gateway, "127.0.0.3"))  # one start
    for _ in range(BUDGET - 1):
        assert alice.get("/console/sign-in").status_code == 303
    refused = alice.get("/console/sign-in")
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert "Too many sign-ins from your address" in refused.text  # the console's error page
    assert "frame-ancestors 'none'" in refused.headers["content-security-policy"]
    assert SIGN_IN_COOKIE not in refused.headers.get("set-cookie", "")  # no sign-in started
    spoofed = _browser(gateway, "127.0.0.3").get(
        "/console/sign-in", headers={"X-Forwarded-For": "192.0.2.1"})
    assert spoofed.status_code == 429  # a client that is no trusted proxy names no address
    assert alice.get("/console/memories").status_code == 200  # her pages are not sign-ins
    bob = signed_in(gateway, "bob", client=_browser(gateway, "127.0.0.4"))  # another address
    assert bob.get("/console/profile").status_code == 200


def test_a_flood_of_sign_ins_does_not_break_one_started_before_it(
        gateway: ConsoleGateway) -> None:
    victim = _browser(gateway, "127.0.0.5")
    started = victim.get("/console/sign-in")
    assert started.status_code == 303
    page = victim.get(started.headers["location"])  # at the provider when the flood comes
    flood = MAX_SESSIONS + 1  # more than the console keeps of anything
    addresses = [f"127.0.{10 + i // 250}.{1 + i % 250}" for i in range(math.ceil(flood / BUDGET))]
    with ThreadPoolExecutor(4) as pool:
        statuses = [status for some in pool.map(lambda a: _starts(gateway, a, BUDGET), addresses)
                    for status in some]
    assert statuses.count(303) == len(statuses) >= flood  # every one within its budget
    assert set(_starts(gateway, "127.0.0.6", BUDGET + 50)[BUDGET:]) == {429}  # one alone
    fields = dict(re.findall(r'name="(request|csrf_token)" value="([^"]*)"', page.text))
    chosen = victim.post("/oauth/authorize", data={**fields, "user": "alice"})
    back = victim.get(chosen.headers["location"])
    assert back.status_code == 303 and back.headers["location"].endswith("/console/memories")
    assert victim.cookies.get(COOKIE)
    assert victim.get("/console/memories").status_code == 200


def test_a_changed_or_swapped_sign_in_cookie_is_refused(gateway: ConsoleGateway) -> None:
    first, second = _browser(gateway, "127.0.0.7"), _browser(gateway, "127.0.0.7")
    callback = _to_callback(first, "alice")
    _to_callback(second, "alice")
    own = first.cookies[SIGN_IN_COOKIE]
    payload, mac = own.split(".")
    changed = payload[:10] + ("A" if payload[10] != "A" else "B") + payload[11:] + "." + mac
    for cookie in (changed, second.cookies[SIGN_IN_COOKIE], "forged." + mac):
        refused = httpx.Client(base_url=gateway.url, timeout=30).get(
            callback, headers={"Cookie": f"{SIGN_IN_COOKIE}={cookie}"})
        assert refused.status_code == 400 and COOKIE not in refused.cookies, cookie
    back = first.get(callback)  # positive control: its own cookie, untouched
    assert back.status_code == 303 and first.cookies.get(COOKIE)
