"""The console's sign-in, session and forms over real HTTP (no browser): the session cookie,
CSRF on every form that changes something, single-use sign-ins, sign-out that ends the
session, and the security headers of every answer.

Each refusal has its positive control: the same request with what was missing answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from console_live import (
    COOKIE,
    ConsoleGateway,
    console_gateway,
    csrf_token,
    sign_in_answer,
    signed_in,
)


@pytest.fixture(scope="module")
def gateway(dds: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleGateway]:
    with console_gateway(dds, tmp_path_factory.mktemp("console-sessions")) as served:
        yield served


def _memory_ids(client: httpx.Client) -> list[str]:
    page = client.get("/console/memories")
    assert page.status_code == 200, page.text
    return re.findall(r'href="/console/memories/([^"?/]+)"', page.text)


def test_sign_in_sets_a_bounded_http_only_same_site_cookie(gateway: ConsoleGateway) -> None:
    client = httpx.Client(base_url=gateway.url, timeout=30)
    to_provider = client.get("/console/sign-in")
    assert to_provider.status_code == 303
    location = to_provider.headers["location"]
    assert location.startswith(gateway.url + "/oauth/authorize?")
    assert "code_challenge_method=S256" in location and "code_challenge=" in location
    alice = signed_in(gateway, "alice")
    cookie = _set_cookie_of_sign_in(gateway)
    assert cookie.startswith(f"{COOKIE}=")
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "max-age", "path", "samesite"} <= attributes
    assert "samesite=lax" in cookie.lower()
    assert "secure" not in attributes  # plain HTTP on loopback (dev); Secure elsewhere
    assert alice.cookies.get(COOKIE)


def _set_cookie_of_sign_in(gateway: ConsoleGateway) -> str:
    """The ``Set-Cookie`` header of a callback (a sign-in walked by hand)."""
    client = httpx.Client(base_url=gateway.url, timeout=30)
    page = client.get(client.get("/console/sign-in").headers["location"])
    fields = dict(re.findall(r'name="(request|csrf_token)" value="([^"]*)"', page.text))
    chosen = client.post("/oauth/authorize", data={**fields, "user": "alice"})
    back = client.get(chosen.headers["location"])
    assert back.status_code == 303
    return str(back.headers["set-cookie"])


def test_a_page_without_a_session_asks_to_sign_in(gateway: ConsoleGateway) -> None:
    anonymous = httpx.Client(base_url=gateway.url, timeout=30)
    page = anonymous.get("/console/memories")
    assert page.status_code == 401
    assert 'href="/console/sign-in?tenant=acme"' in page.text
    forged = httpx.Client(base_url=gateway.url, timeout=30, cookies={COOKIE: "not-a-session"})
    assert forged.get("/console/memories").status_code == 401
    assert forged.post("/console/memories", data={"content": "x"}).status_code == 403


def test_a_callback_state_works_once(gateway: ConsoleGateway) -> None:
    client = httpx.Client(base_url=gateway.url, timeout=30)
    page = client.get(client.get("/console/sign-in").headers["location"])
    fields = dict(re.findall(r'name="(request|csrf_token)" value="([^"]*)"', page.text))
    callback = client.post("/oauth/authorize", data={**fields, "user": "alice"}
                           ).headers["location"]
    binding = client.cookies["oam_console_sign_in"]
    assert client.get(callback).status_code == 303  # positive control: the first use
    again = httpx.Client(base_url=gateway.url, timeout=30).get(
        callback, headers={"Cookie": f"oam_console_sign_in={binding}"})
    assert again.status_code == 400  # the same browser, the same state: used
    assert COOKIE not in again.cookies
    unknown = re.sub(r"state=[^&]+", "state=forged", callback)
    assert httpx.Client(base_url=gateway.url, timeout=30).get(unknown).status_code == 400


def test_every_form_needs_the_sessions_csrf_token(gateway: ConsoleGateway) -> None:
    alice = signed_in(gateway, "alice")
    token = csrf_token(alice)
    added = alice.post("/console/memories", data={"content": "my csrf probe", "csrf_token":
                                                  token})
    assert added.status_code == 303  # positive control
    memory_id = added.headers["location"].rsplit("/", 1)[1]
    forms = [("/console/memories", {"content": "forged"}),
             (f"/console/memories/{memory_id}", {"content": "forged"}),
             (f"/console/memories/{memory_id}/delete", {}),
             ("/console/erase", {"confirm": "yes"}),
             ("/console/sign-out", {})]
    for path, data in forms:
        for forged in ({}, {"csrf_token": "wrong"}, {"csrf_token": csrf_token(
                signed_in(gateway, "bob"))}):
            refused = alice.post(path, data={**data, **forged})
            assert refused.status_code == 403, (path, forged)
    page = alice.get(f"/console/memories/{memory_id}")
    assert page.status_code == 200 and "my csrf probe" in page.text  # nothing changed
    assert len(_memory_ids(alice)) >= 1
    edited = alice.post(f"/console/memories/{memory_id}",
                        data={"content": "my edited probe", "csrf_token": token})
    assert edited.status_code == 303  # positive control: with the token it changes
    assert "my edited probe" in alice.get(f"/console/memories/{memory_id}").text


def test_sign_out_ends_the_session_for_a_replayed_cookie(gateway: ConsoleGateway) -> None:
    alice = signed_in(gateway, "alice")
    token = csrf_token(alice)
    alice.post("/console/memories", data={"content": "replay probe", "csrf_token": token})
    cookie = alice.cookies[COOKIE]
    replay = httpx.Client(base_url=gateway.url, timeout=30, cookies={COOKIE: cookie})
    assert "replay probe" in replay.get("/console/memories").text  # positive control
    out = alice.post("/console/sign-out", data={"csrf_token": token})
    assert out.status_code == 200
    refused = replay.get("/console/memories")
    assert refused.status_code == 401 and "replay probe" not in refused.text
    assert replay.post("/console/memories", data={"content": "after", "csrf_token": token}
                       ).status_code == 403
    assert replay.get("/console/export").status_code == 401


def test_every_answer_carries_the_security_headers(gateway: ConsoleGateway) -> None:
    alice = signed_in(gateway, "alice")
    answers = [alice.get(path) for path in (
        "/console", "/console/memories", "/console/timeline", "/console/threads",
        "/console/profile", "/console/data", "/console/static/console.css",
        "/console/memories/no-such-memory")]
    answers.append(httpx.get(gateway.url + "/console/memories"))
    for answer in answers:
        policy = answer.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "script-src 'none'" in policy and "http" not in policy
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert answers[-2].status_code == 404


def test_a_person_without_a_console_client_gets_no_sign_in(
        dds: Any, tmp_path: Path) -> None:
    with console_gateway(dds, tmp_path, console_client_id=None) as served:
        page = httpx.get(served.url + "/console")
        assert page.status_code == 200 and "not set up" in page.text
        assert httpx.get(served.url + "/console/sign-in").status_code == 404


def test_a_token_for_one_tenant_does_not_open_another_tenants_console(
        dds: Any, tmp_path: Path) -> None:
    with console_gateway(dds, tmp_path, user_tenants={"alice": "acme", "bob": "globex"}
                         ) as served:
        page = httpx.get(served.url + "/console")
        assert "Sign in to acme" in page.text and "Sign in to globex" in page.text
        alice = signed_in(served, "alice", tenant="acme")  # positive controls
        assert alice.get("/console/memories").status_code == 200
        bob = signed_in(served, "bob", tenant="globex")
        assert bob.get("/console/profile").text.count("globex") >= 1
        client, refused = sign_in_answer(served, "bob", tenant="acme")
        assert refused.status_code == 403 and "another tenant" in refused.text
        assert COOKIE not in client.cookies
        assert client.get("/console/memories").status_code == 401


def _replaced(name: str, value: str) -> Callable[[str], str]:
    def replace(url: str) -> str:
        changed = re.sub(rf"([?&]{name}=)[^&]+", rf"\g<1>{value}", url)
        assert changed != url, f"no {name} in {url}"
        return changed
    return replace


def test_a_sign_in_is_bound_to_its_nonce_and_its_pkce_verifier(gateway: ConsoleGateway) -> None:
    client, control = sign_in_answer(gateway, "alice")
    assert control.status_code == 303 and COOKIE in client.cookies  # positive control
    client, answer = sign_in_answer(gateway, "alice", authorize=_replaced("nonce", "forged"))
    assert answer.status_code == 502 and COOKIE not in client.cookies  # the ID token's nonce
    other_challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    client, answer = sign_in_answer(gateway, "alice",
                                    authorize=_replaced("code_challenge", other_challenge))
    assert answer.status_code == 502 and COOKIE not in client.cookies  # PKCE refused the code
    assert client.get("/console/memories").status_code == 401


def test_a_callback_opened_in_another_browser_signs_no_one_in(gateway: ConsoleGateway) -> None:
    # The attacker signs in as bob but stops before the callback, and sends its link to alice
    # (login CSRF: alice would then keep her memories in bob's console).
    attacker = httpx.Client(base_url=gateway.url, timeout=30)
    page = attacker.get(attacker.get("/console/sign-in").headers["location"])
    fields = dict(re.findall(r'name="(request|csrf_token)" value="([^"]*)"', page.text))
    callback = attacker.post("/oauth/authorize", data={**fields, "user": "bob"}
                             ).headers["location"]
    victim = httpx.Client(base_url=gateway.url, timeout=30)
    refused = victim.get(callback)
    assert refused.status_code == 400 and "another browser" in refused.text
    assert COOKIE not in victim.cookies
    assert victim.get("/console/memories").status_code == 401
    _, control = sign_in_answer(gateway, "bob")  # positive control: in its own browser
    assert control.status_code == 303


def test_an_answer_naming_another_issuer_is_refused(gateway: ConsoleGateway) -> None:
    for iss in ("https://attacker.example", None):  # RFC 9207: named, and must be
        client = httpx.Client(base_url=gateway.url, timeout=30)
        page = client.get(client.get("/console/sign-in").headers["location"])
        fields = dict(re.findall(r'name="(request|csrf_token)" value="([^"]*)"', page.text))
        callback = client.post("/oauth/authorize", data={**fields, "user": "alice"}
                               ).headers["location"]
        assert f"iss={quote(gateway.url, safe='')}" in callback  # the server names itself
        changed = re.sub(r"[?&]iss=[^&]+", "", callback)
        if iss is not None:
            changed += ("&" if "?" in changed else "?") + f"iss={quote(iss, safe='')}"
        refused = client.get(changed)
        assert refused.status_code == 400 and COOKIE not in client.cookies, iss
    _, control = sign_in_answer(gateway, "alice")  # positive control: its own iss
    assert control.status_code == 303
