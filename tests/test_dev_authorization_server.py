"""The development authorization server over real HTTP, in front of a real gateway.

An MCP client following the MCP authorization spec (the ``mcp`` package's
``OAuthClientProvider``) finds the server from the 401 of ``/mcp``, registers, has a person
pick a demo user on the sign-in page, exchanges the code and calls tools as that user; the
database keeps alice's and bob's rows apart. Then the attacks, each beside its positive
control: PKCE (wrong or missing verifier, plain, no challenge), code replay, a code for another
client or redirect URI, unregistered redirect URIs, refresh-token reuse, a sign-in form posted
without its CSRF token or from another browser.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from dds import DdsEnvironment
from dev_authorization import (
    CALLBACK,
    Browser,
    DevGateway,
    MemoryTokenStorage,
    dev_gateway,
    mcp_session_as,
    redirect_parameters,
    sign_in_form,
)
from joserfc import jwt
from joserfc.jwk import KeySet
from mcp.client.session import ClientSession
from oam_gateway.cli import DEV_AUDIENCE
from oam_gateway.dev.authorization_server.routes import CSRF_COOKIE
from oracleagentmemory.apis.records import ScopedRecord


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[DevGateway]:
    with dev_gateway(dds, tmp_path_factory.mktemp("dev-oauth")) as live:
        yield live


@pytest.fixture
def browser(gateway: DevGateway) -> Iterator[Browser]:
    opened = Browser(gateway.url)
    yield opened
    opened.close()


# --- an OAuth client, step by step ---------------------------------------------------------------

@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def make(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).decode().rstrip("="))


def register(gateway: DevGateway, *redirect_uris: str) -> str:
    """A public client registered with ``redirect_uris``; its ``client_id``."""
    answer = httpx.post(f"{gateway.url}/oauth/register", timeout=30, json={
        "redirect_uris": list(redirect_uris or [CALLBACK]), "client_name": "attack test",
        "grant_types": ["authorization_code", "refresh_token"]})
    assert answer.status_code == 201, answer.text
    client_id: str = answer.json()["client_id"]
    return client_id


def authorization_url(gateway: DevGateway, client_id: str, pkce: Pkce | None,
                      redirect_uri: str = CALLBACK, **extra: str) -> str:
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
              "state": "the-state", "scope": "memory:read memory:write"}
    if pkce is not None:
        params.update(code_challenge=pkce.challenge, code_challenge_method="S256")
    params.update(extra)
    return f"{gateway.url}/oauth/authorize?{urlencode(params)}"


def code_for(gateway: DevGateway, browser: Browser, client_id: str, pkce: Pkce,
             user: str = "alice", redirect_uri: str = CALLBACK, **extra: str) -> str:
    """An authorization code of ``user`` for ``client_id`` (signed in on the page)."""
    answer = browser.sign_in(authorization_url(gateway, client_id, pkce, redirect_uri, **extra),
                             user)
    found = redirect_parameters(answer)
    assert answer.headers["location"].startswith(redirect_uri + "?")
    assert found["state"] == "the-state", found
    assert found["iss"] == gateway.url  # RFC 9207
    return found["code"]


def exchange(gateway: DevGateway, client_id: str, code: str, verifier: str | None,
             redirect_uri: str = CALLBACK) -> httpx.Response:
    data = {"grant_type": "authorization_code", "code": code, "client_id": client_id,
            "redirect_uri": redirect_uri}
    if verifier is not None:
        data["code_verifier"] = verifier
    return httpx.post(f"{gateway.url}/oauth/token", data=data, timeout=30)


def refresh(gateway: DevGateway, client_id: str, refresh_token: str) -> httpx.Response:
    return httpx.post(f"{gateway.url}/oauth/token", timeout=30, data={
        "grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id})


def refused(answer: httpx.Response, error: str) -> None:
    assert answer.status_code in (400, 401), answer.text
    assert answer.json()["error"] == error, answer.text


def tokens_of(gateway: DevGateway, browser: Browser, user: str = "alice") -> dict[str, Any]:
    """The token response of ``user``'s whole sign-in with a fresh client."""
    client_id, pkce = register(gateway), Pkce.make()
    answer = exchange(gateway, client_id, code_for(gateway, browser, client_id, pkce, user),
                      pkce.verifier)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return {**body, "client_id": client_id}


def issuer_keys(gateway: DevGateway) -> KeySet:
    keys: KeySet = KeySet.import_key_set(
        httpx.get(f"{gateway.url}/oauth/jwks", timeout=30).json())
    return keys


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# --- discovery -----------------------------------------------------------------------------------

def test_the_metadata_names_the_gateway_as_authorization_server(gateway: DevGateway) -> None:
    base = gateway.url
    challenge = httpx.post(f"{base}/mcp", json={}, timeout=30).headers["www-authenticate"]
    pointer = f"{base}/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{pointer}"' in challenge
    resource = httpx.get(pointer, timeout=30).json()
    assert resource["authorization_servers"] == [base]  # no trailing slash: the issuer as is
    metadata = httpx.get(f"{base}/.well-known/oauth-authorization-server", timeout=30).json()
    assert metadata["issuer"] == base
    assert metadata["authorization_endpoint"] == f"{base}/oauth/authorize"
    assert metadata["token_endpoint"] == f"{base}/oauth/token"
    assert metadata["registration_endpoint"] == f"{base}/oauth/register"
    assert metadata["jwks_uri"] == f"{base}/oauth/jwks"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert metadata["token_endpoint_auth_methods_supported"] == ["none"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    openid = httpx.get(f"{base}/.well-known/openid-configuration", timeout=30).json()
    assert {k: openid[k] for k in metadata} == metadata
    assert openid["id_token_signing_alg_values_supported"] == ["RS256"]
    assert openid["subject_types_supported"] == ["public"]
    keys = httpx.get(metadata["jwks_uri"], timeout=30).json()
    assert keys == gateway.server.issuer.jwks() and "d" not in keys["keys"][0]
    preflight = httpx.options(f"{base}/oauth/token", timeout=30, headers={
        "Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST"})
    assert preflight.headers["access-control-allow-origin"] == "*"


# --- the MCP client's whole dance ----------------------------------------------------------------

async def _structured(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_an_mcp_client_signs_in_with_oauth_and_calls_tools(gateway: DevGateway) -> None:
    alice_storage, bob_storage = MemoryTokenStorage(), MemoryTokenStorage()

    async def alice_work(session: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
        made = await _structured(session, "add_memory",
                                 content="Alice keeps her bees on the roof")
        found = await _structured(session, "search", query="where are the bees", k=5)
        return made, found

    made, found = mcp_session_as(gateway.url, "alice", alice_storage, alice_work)
    assert made["user_id"] == gateway.user_id("alice")  # the signed-in user, by the database
    assert made["id"] in [hit["record"]["id"] for hit in found["results"]]
    assert alice_storage.client is not None  # registered dynamically
    assert alice_storage.tokens is not None and alice_storage.tokens.refresh_token
    claims = jwt.decode(alice_storage.tokens.access_token,
                        issuer_keys(gateway)).claims
    assert claims["iss"] == gateway.url and claims["aud"] == DEV_AUDIENCE
    assert claims["sub"] == "alice" and claims["groups"] == ["team"]
    assert claims["scope"] == "memory:read memory:write"

    async def bob_work(session: ClientSession) -> tuple[dict[str, Any], bool]:
        found = await _structured(session, "search", query="where are the bees", k=5)
        other = await session.call_tool("get_memory", {"memory_id": made["id"]})
        return found, other.is_error

    bob_found, bob_refused = mcp_session_as(gateway.url, "bob", bob_storage, bob_work)
    assert bob_found["results"] == []  # none of alice's rows
    assert bob_refused
    with gateway.dds.owner_store(gateway.store_id) as owner:  # no row security
        stored = [m for m in owner.list("memory", limit=None) if m.id == made["id"]]
    assert [m.user_id for m in stored if isinstance(m, ScopedRecord)] == [
        gateway.user_id("alice")]


# --- tokens the gateway verifies unchanged -------------------------------------------------------

def test_the_console_client_gets_an_id_token_and_a_token_the_gateway_accepts(
        gateway: DevGateway, browser: Browser) -> None:
    pkce = Pkce.make()
    callback = f"{gateway.url}/console/callback"
    code = code_for(gateway, browser, "oam-console", pkce, "bob", callback,
                    scope="openid memory:read memory:write", nonce="the-nonce")
    answer = exchange(gateway, "oam-console", code, pkce.verifier, callback)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    tokens = answer.json()
    keys = issuer_keys(gateway)
    id_token = jwt.decode(tokens["id_token"], keys).claims
    assert id_token["aud"] == "oam-console" and id_token["nonce"] == "the-nonce"
    assert id_token["iss"] == gateway.url and id_token["sub"] == "bob"
    me = httpx.get(f"{gateway.url}/v1/me", headers=bearer(tokens["access_token"]), timeout=30)
    assert me.status_code == 200, me.text
    assert me.json()["user_name"] == gateway.user_id("bob")
    # Another redirect URI is not the console's.
    page = browser.open(authorization_url(gateway, "oam-console", Pkce.make(),
                                          f"{gateway.url}/elsewhere"))
    assert page.status_code == 400 and "location" not in page.headers


def test_a_request_without_scope_gets_the_memory_scopes_and_no_id_token(
        gateway: DevGateway, browser: Browser) -> None:
    client_id, pkce = register(gateway), Pkce.make()
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": CALLBACK,
              "state": "the-state", "code_challenge": pkce.challenge,
              "code_challenge_method": "S256"}
    answer = browser.sign_in(f"{gateway.url}/oauth/authorize?{urlencode(params)}", "alice")
    code = redirect_parameters(answer)["code"]
    tokens = exchange(gateway, client_id, code, pkce.verifier).json()
    assert tokens["scope"] == "memory:read memory:write" and "id_token" not in tokens
    assert jwt.decode(tokens["access_token"], issuer_keys(gateway)).claims["scope"] == (
        "memory:read memory:write")


def test_alices_token_never_reads_bobs_rows(gateway: DevGateway, browser: Browser) -> None:
    alice, bob = tokens_of(gateway, browser, "alice"), tokens_of(gateway, browser, "bob")
    made = httpx.post(f"{gateway.url}/v1/memories", headers=bearer(bob["access_token"]),
                      json={"content": "Bob's locker code is 7301"}, timeout=30)
    assert made.status_code in (200, 201), made.text
    memory_id = made.json()["id"]
    mine = httpx.get(f"{gateway.url}/v1/memories/{memory_id}",
                     headers=bearer(bob["access_token"]), timeout=30)
    assert mine.status_code == 200  # positive control: bob reads his row
    theirs = httpx.get(f"{gateway.url}/v1/memories/{memory_id}",
                       headers=bearer(alice["access_token"]), timeout=30)
    assert theirs.status_code == 404
    found = httpx.post(f"{gateway.url}/v1/search", headers=bearer(alice["access_token"]),
                       json={"query": "locker code", "k": 10}, timeout=30)
    assert found.status_code == 200
    assert memory_id not in json.dumps(found.json())


# --- attacks --------------------------------------------------------------------------------------

def test_the_code_is_bound_to_its_pkce_verifier(gateway: DevGateway, browser: Browser) -> None:
    client_id, pkce = register(gateway), Pkce.make()
    code = code_for(gateway, browser, client_id, pkce)
    refused(exchange(gateway, client_id, code, Pkce.make().verifier), "invalid_grant")
    refused(exchange(gateway, client_id, code, None), "invalid_request")
    answer = exchange(gateway, client_id, code, pkce.verifier)  # positive control
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("pkce_params", [
    {"code_challenge_method": "plain"}, {"method": "missing"}, {"challenge": "missing"}],
    ids=["plain", "no method", "no challenge"])
def test_pkce_is_required_and_s256_only(gateway: DevGateway, browser: Browser,
                                        pkce_params: dict[str, str]) -> None:
    client_id, pkce = register(gateway), Pkce.make()
    params: dict[str, str] = {"response_type": "code", "client_id": client_id,
                              "redirect_uri": CALLBACK, "state": "s1"}
    if pkce_params.get("challenge") != "missing":
        params["code_challenge"] = pkce.verifier if "code_challenge_method" in pkce_params \
            else pkce.challenge
    if "code_challenge_method" in pkce_params:
        params["code_challenge_method"] = pkce_params["code_challenge_method"]
    answer = browser.open(f"{gateway.url}/oauth/authorize?{urlencode(params)}")
    found = redirect_parameters(answer)  # the redirect URI is verified: the error goes back
    assert found["error"] == "invalid_request" and found["state"] == "s1", found
    assert found["iss"] == gateway.url
    assert "code" not in found
    # Positive control: the same request with an S256 challenge shows the sign-in page.
    shown = sign_in_form(browser.open(authorization_url(gateway, client_id, pkce)))
    assert shown.users == ["alice", "bob"]


def test_a_code_works_once_and_its_replay_revokes_its_tokens(gateway: DevGateway,
                                                             browser: Browser) -> None:
    client_id, pkce = register(gateway), Pkce.make()
    code = code_for(gateway, browser, client_id, pkce)
    first = exchange(gateway, client_id, code, pkce.verifier)
    assert first.status_code == 200, first.text
    refused(exchange(gateway, client_id, code, pkce.verifier), "invalid_grant")
    # The refresh token the first exchange got is revoked with the replay.
    refused(refresh(gateway, client_id, first.json()["refresh_token"]), "invalid_grant")


def test_a_code_is_bound_to_its_client_and_redirect_uri(gateway: DevGateway,
                                                        browser: Browser) -> None:
    other_uri = "http://127.0.0.1:33419/other"
    client_id, pkce = register(gateway, CALLBACK, other_uri), Pkce.make()
    thief = register(gateway)
    code = code_for(gateway, browser, client_id, pkce)
    refused(exchange(gateway, thief, code, pkce.verifier), "invalid_grant")
    refused(exchange(gateway, client_id, code, pkce.verifier, other_uri), "invalid_grant")
    answer = exchange(gateway, client_id, code, pkce.verifier)  # positive control
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("redirect_uri", [
    "http://attacker.example/cb", "http://127.0.0.1:33418/callback/../evil",
    "http://127.0.0.1:33418/callback#frag", 'http://127.0.0.1:1/"quote'])
def test_an_unregistered_redirect_uri_is_never_followed(gateway: DevGateway, browser: Browser,
                                                        redirect_uri: str) -> None:
    client_id = register(gateway)
    page = browser.open(authorization_url(gateway, client_id, Pkce.make(), redirect_uri))
    assert page.status_code == 400, page.text
    assert "location" not in page.headers  # an error page, no open redirect
    # Positive control: the registered URI shows the sign-in page.
    sign_in_form(browser.open(authorization_url(gateway, client_id, Pkce.make())))


@pytest.mark.parametrize("redirect_uri", [
    "http://attacker.example/cb", "javascript:alert(1)", "myapp:/callback",
    "http://127.0.0.1:5/cb#fragment", "https://user@example.com/cb"])
def test_registration_takes_loopback_http_or_https_redirects_only(gateway: DevGateway,
                                                                  redirect_uri: str) -> None:
    answer = httpx.post(f"{gateway.url}/oauth/register", timeout=30,
                        json={"redirect_uris": [redirect_uri]})
    refused(answer, "invalid_redirect_uri")
    for good in ("https://client.example/cb", "http://localhost:7/cb", "http://[::1]:7/cb"):
        accepted = httpx.post(f"{gateway.url}/oauth/register", timeout=30,
                              json={"redirect_uris": [good]})
        assert accepted.status_code == 201, accepted.text
        assert accepted.json()["token_endpoint_auth_method"] == "none"
        assert "client_secret" not in accepted.json()


@pytest.mark.parametrize("body", [b"not json", b"[]", b"{}"])
def test_a_malformed_registration_is_a_client_error(gateway: DevGateway, body: bytes) -> None:
    answer = httpx.post(f"{gateway.url}/oauth/register", content=body, timeout=30,
                        headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] in ("invalid_client_metadata", "invalid_redirect_uri")


def test_a_refresh_token_rotates_and_its_reuse_is_refused(gateway: DevGateway,
                                                          browser: Browser) -> None:
    tokens = tokens_of(gateway, browser)
    client_id, first = tokens["client_id"], tokens["refresh_token"]
    rotated = refresh(gateway, client_id, first)  # positive control
    assert rotated.status_code == 200, rotated.text
    second = rotated.json()["refresh_token"]
    assert second != first
    me = httpx.get(f"{gateway.url}/v1/me", headers=bearer(rotated.json()["access_token"]),
                   timeout=30)
    assert me.status_code == 200 and me.json()["user_name"] == gateway.user_id("alice")
    refused(refresh(gateway, client_id, first), "invalid_grant")  # reused
    refused(refresh(gateway, client_id, second), "invalid_grant")  # its family is revoked
    refused(refresh(gateway, register(gateway), tokens_of(gateway, browser)["refresh_token"]),
            "invalid_grant")  # another client's refresh token


def test_the_sign_in_form_needs_its_csrf_token_and_browser(gateway: DevGateway,
                                                           browser: Browser) -> None:
    client_id = register(gateway)
    url = authorization_url(gateway, client_id, Pkce.make())
    form = sign_in_form(browser.open(url))
    without_token = {k: v for k, v in form.fields.items() if k != "csrf_token"}
    forged = browser.http.post(form.action, data={**without_token, "user": "alice"})
    assert forged.status_code == 403 and "location" not in forged.headers
    form = sign_in_form(browser.open(url))
    with httpx.Client(base_url=gateway.url, timeout=30) as other_browser:  # no cookie
        stolen = other_browser.post(form.action, data={**form.fields, "user": "alice"})
    assert stolen.status_code == 403 and "location" not in stolen.headers
    # Positive control: the page's own form in its own browser signs in, once.
    fresh = sign_in_form(browser.open(url))
    assert browser.http.cookies.get(CSRF_COOKIE)
    signed_in = browser.http.post(fresh.action, data={**fresh.fields, "user": "alice"})
    assert "code" in redirect_parameters(signed_in)
    again = browser.http.post(fresh.action, data={**fresh.fields, "user": "alice"})
    assert again.status_code == 403


def test_the_sign_in_page_is_strict_and_a_refusal_goes_back(gateway: DevGateway,
                                                            browser: Browser) -> None:
    client_id = register(gateway)
    url = authorization_url(gateway, client_id, Pkce.make())
    page = browser.open(url)
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert "form-action 'self' http://127.0.0.1:33418" in csp
    assert "script" not in page.text.lower()
    assert page.headers["x-frame-options"] == "DENY"
    form = sign_in_form(page)
    unknown = browser.http.post(form.action, data={**form.fields, "user": "mallory"})
    assert unknown.status_code == 400
    form = sign_in_form(browser.open(url))
    denied = browser.http.post(form.action, data={**form.fields, "decision": "deny"})
    found = redirect_parameters(denied)
    assert (found["error"], found["state"], found["iss"]) == ("access_denied", "the-state",
                                                              gateway.url)
    assert "code" not in found
