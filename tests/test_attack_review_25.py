"""Attack review of issue 25's changes (reviewer V): the development authorization server, the
memory console, schema version 9's chunk partitions, the sealed context apply of the SDK's
pools and the shared rate limit, each attacked over real HTTP against a real gateway on the
embedded database, or with real SQL as the runtime login, beside a positive control.

Holes this review fixed (in the development authorization server):

- a client registered for fewer scopes than the default that asked for one it may not have
  (or for ``openid`` alone, or for nothing when registered with ``openid`` alone) was granted
  ``memory:read memory:write`` anyway: the allowed scope came out empty and the token
  generator widened an empty scope to the default; now such a request is ``invalid_scope``;
- the server answered any ``Host``: a web page that rebinds its own name to the gateway's
  loopback address (DNS rebinding) could register a client, pick alice on the sign-in page and
  read the code and tokens as its own origin; now every route answers only at the issuer's
  host (421 otherwise).

Holes in files this review may not edit are reported to their authors with their
reproductions, not committed here as failing tests.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import psycopg
import pytest
from console_live import COOKIE, ConsoleGateway, console_gateway, csrf_token, signed_in
from dds import OWNER, DdsEnvironment
from dev_authorization import CALLBACK, Browser, DevGateway, dev_gateway, sign_in_form
from gateway_live import live_gateway
from joserfc import jwt
from joserfc.jwk import OctKey
from oam_gateway.console.signin import IdentityProvider, SignInFailed
from oam_gateway.dev.authorization_server import CONSOLE_CLIENT_ID
from psycopg import sql
from test_dev_authorization_server import Pkce, authorization_url, code_for, exchange, register


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[DevGateway]:
    with dev_gateway(dds, tmp_path_factory.mktemp("review25")) as live:
        yield live


@pytest.fixture
def browser(gateway: DevGateway) -> Iterator[Browser]:
    opened = Browser(gateway.url)
    yield opened
    opened.close()


def claims_of(token: str) -> dict[str, Any]:
    """The (unverified) claims of a JWT, to read what was granted."""
    part = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def register_for(gateway: DevGateway, scope: str) -> str:
    answer = httpx.post(f"{gateway.url}/oauth/register", timeout=30, json={
        "redirect_uris": [CALLBACK], "scope": scope,
        "grant_types": ["authorization_code", "refresh_token"]})
    assert answer.status_code == 201, answer.text
    client_id: str = answer.json()["client_id"]
    return client_id


def signed_in_redirect(gateway: DevGateway, browser: Browser, client_id: str, pkce: Pkce,
                       **extra: str) -> dict[str, str]:
    """The query of where the authorization request sends the browser (after alice signs in,
    when it gets as far as the sign-in page)."""
    page = browser.open(authorization_url(gateway, client_id, pkce, **extra))
    if page.status_code == 200:
        form = sign_in_form(page)
        page = browser.http.post(form.action, data={**form.fields, "user": "alice"})
    assert page.status_code == 303, (page.status_code, page.text)
    location = page.headers["location"]
    assert location.startswith(CALLBACK + "?"), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


# --- 1. the development authorization server ---------------------------------------------------

@pytest.mark.parametrize(("registered", "asked"), [
    ("memory:read", "memory:write"),          # a scope the client was not registered for
    ("memory:read", "openid"),                # openid alone, which it was not registered for
    ("openid", ""),                           # nothing asked, nothing but openid allowed
])
def test_a_client_never_gets_scopes_it_was_not_registered_for(
        gateway: DevGateway, browser: Browser, registered: str, asked: str) -> None:
    client_id, pkce = register_for(gateway, registered), Pkce.make()
    # the positive control: what it was registered for is granted, exactly
    control = Pkce.make()
    granted = exchange(gateway, client_id,
                       code_for(gateway, browser, client_id, control, scope=registered),
                       control.verifier)
    assert granted.status_code == 200, granted.text
    assert granted.json()["scope"] == registered
    assert claims_of(granted.json()["access_token"])["scope"] == registered
    # before the fix: a code, and a token of scope "memory:read memory:write"
    found = signed_in_redirect(gateway, browser, client_id, pkce, scope=asked)
    assert found.get("error") == "invalid_scope", found
    assert "code" not in found


def test_a_narrower_request_is_narrowed_not_refused(gateway: DevGateway,
                                                    browser: Browser) -> None:
    """RFC 6749 §3.3: asking for more than registered grants what is allowed of it."""
    client_id, pkce = register_for(gateway, "memory:read"), Pkce.make()
    code = code_for(gateway, browser, client_id, pkce, scope="memory:read memory:write")
    token = exchange(gateway, client_id, code, pkce.verifier).json()
    assert token["scope"] == "memory:read"
    assert claims_of(token["access_token"])["scope"] == "memory:read"
    with httpx.Client(base_url=gateway.url, timeout=30, headers={
            "Authorization": f"Bearer {token['access_token']}"}) as api:
        assert api.get("/v1/memories").status_code == 200
        refused = api.post("/v1/memories", json={"content": "written with a read token"})
        assert refused.status_code == 403, refused.text


REBOUND = "rebound.attacker.example"
APPLY = "SELECT oam_sec.apply_assertion(%s)"


def test_a_rebound_host_name_is_refused_on_every_route(gateway: DevGateway) -> None:
    """DNS rebinding: a page of attacker.example whose name now resolves to this loopback
    address talks to the server as its own origin, with its own Host header."""
    port = urlsplit(gateway.url).port
    client_id, pkce = register(gateway), Pkce.make()
    for host in (f"{REBOUND}:{port}", REBOUND, f"localhost.{REBOUND}:{port}"):
        headers = {"Host": host}
        with httpx.Client(base_url=gateway.url, timeout=30, headers=headers) as rebound:
            answers = [
                rebound.post("/oauth/register", json={"redirect_uris": [CALLBACK]}),
                rebound.get("/.well-known/oauth-authorization-server"),
                rebound.get("/.well-known/openid-configuration"),
                rebound.get("/oauth/jwks"),
                rebound.get(authorization_url(gateway, client_id, pkce)[len(gateway.url):]),
                rebound.post("/oauth/authorize", data={"request": "x", "csrf_token": "y"}),
                rebound.post("/oauth/token", data={"grant_type": "authorization_code",
                                                   "code": "x", "client_id": client_id}),
            ]
        for answer in answers:
            assert answer.status_code == 421, (host, answer.request.url, answer.text)
            assert "code" not in answer.text and "client_id" not in answer.text
    # the positive control: the same requests at the issuer's host work
    assert httpx.post(f"{gateway.url}/oauth/register", timeout=30,
                      json={"redirect_uris": [CALLBACK]}).status_code == 201
    assert httpx.get(f"{gateway.url}/oauth/jwks", timeout=30).status_code == 200
    assert Browser(gateway.url).open(
        authorization_url(gateway, client_id, pkce)).status_code == 200


@pytest.mark.parametrize("uri", [
    "javascript:alert(1)//", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd",
    "http://evil.example/cb", "http://localhost.evil.example/cb", "http://127.0.0.1@evil.example/",
    "http://localhost\\@evil.example/", "http://evil.example\\@localhost/", "http://0.0.0.0/cb",
    "http://127.1/cb", "https:evil.example", "https:///evil.example", "http://127.0.0.1/cb#x",
    "https://user:pass@good.example/cb",
])
def test_registration_refuses_unsafe_redirect_uris(gateway: DevGateway, uri: str) -> None:
    answer = httpx.post(f"{gateway.url}/oauth/register", timeout=30,
                        json={"redirect_uris": [CALLBACK, uri]})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_redirect_uri"
    # the control: the same body with the safe URI alone registers
    assert httpx.post(f"{gateway.url}/oauth/register", timeout=30,
                      json={"redirect_uris": [CALLBACK]}).status_code == 201


@pytest.mark.parametrize("body", [
    {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "client_secret_basic"},
    {"redirect_uris": [CALLBACK], "scope": "openid memory:read admin"},
    {"redirect_uris": [CALLBACK], "response_types": ["token"]},
])
def test_registration_refuses_confidential_unknown_scope_or_implicit(gateway: DevGateway,
                                                                      body: dict[str, Any]
                                                                      ) -> None:
    answer = httpx.post(f"{gateway.url}/oauth/register", timeout=30, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_client_metadata"


def test_a_huge_registration_is_refused_before_it_is_read(gateway: DevGateway) -> None:
    body = b'{"redirect_uris":["' + b"a" * 12_000_000 + b'"]}'
    answer = httpx.post(f"{gateway.url}/oauth/register", timeout=60, content=body,
                        headers={"Content-Type": "application/json"})
    assert answer.status_code == 413


@pytest.mark.parametrize("variant", [
    CALLBACK + "/", CALLBACK.upper(), CALLBACK.replace("127.0.0.1", "localhost"),
    CALLBACK.replace("127.0.0.1", "[::1]"), CALLBACK + "?next=https://evil.example",
    CALLBACK + "#x", CALLBACK.replace(":33418", ":33419"), CALLBACK[:-1],
    "http://127.0.0.1:33418@evil.example/callback", "https://evil.example/callback",
])
def test_only_the_registered_redirect_uri_is_ever_followed(gateway: DevGateway,
                                                           browser: Browser,
                                                           variant: str) -> None:
    client_id = register(gateway)
    answer = browser.open(authorization_url(gateway, client_id, Pkce.make(),
                                            redirect_uri=variant))
    assert answer.status_code == 400, answer.text
    assert "location" not in answer.headers
    assert browser.open(authorization_url(gateway, client_id, Pkce.make())).status_code == 200


def test_no_token_for_a_user_that_does_not_exist(gateway: DevGateway,
                                                 browser: Browser) -> None:
    client_id = register(gateway)
    form = sign_in_form(browser.open(authorization_url(gateway, client_id, Pkce.make())))
    assert "mallory" not in form.users and "alice" in form.users
    answer = browser.http.post(form.action, data={**form.fields, "user": "mallory"})
    assert answer.status_code == 400 and "location" not in answer.headers
    # the form was used up: the same form for alice is refused too (each form answers once)
    again = browser.http.post(form.action, data={**form.fields, "user": "alice"})
    assert again.status_code == 403 and "location" not in again.headers


def test_client_name_and_state_are_escaped_on_the_sign_in_page(gateway: DevGateway,
                                                               browser: Browser) -> None:
    evil = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    answer = httpx.post(f"{gateway.url}/oauth/register", timeout=30,
                        json={"redirect_uris": [CALLBACK], "client_name": evil})
    client_id = answer.json()["client_id"]
    page = browser.open(authorization_url(gateway, client_id, Pkce.make(), state=evil))
    assert page.status_code == 200
    assert "<script>" not in page.text and "<img" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text  # shown, as text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


def test_a_challenge_sent_as_the_verifier_is_no_downgrade(gateway: DevGateway,
                                                          browser: Browser) -> None:
    client_id, pkce = register(gateway), Pkce.make()
    code = code_for(gateway, browser, client_id, pkce)
    assert exchange(gateway, client_id, code, None).status_code == 400
    assert exchange(gateway, client_id, code, pkce.challenge).status_code == 400
    assert exchange(gateway, client_id, code, pkce.verifier).status_code == 200


def test_serve_mounts_no_authorization_server(dds: DdsEnvironment, tmp_path: Path) -> None:
    """Only ``oam-gateway dev`` passes the server's routes to create_app; ``serve``'s app has
    none of them (the control: its API answers)."""
    with live_gateway(dds, tmp_path) as live:
        for path in ("/.well-known/oauth-authorization-server", "/oauth/jwks",
                     "/oauth/authorize?response_type=code&client_id=oam-console"):
            assert httpx.get(live.url + path, timeout=30).status_code == 404, path
        for path in ("/oauth/register", "/oauth/token"):
            assert httpx.post(live.url + path, timeout=30, json={}).status_code in (404, 405)
        with live.client("alice") as api:
            assert api.get("/v1/memories").status_code == 200


# --- 2. the memory console ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def console(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[ConsoleGateway]:
    with console_gateway(dds, tmp_path_factory.mktemp("review25-console")) as live:
        yield live


HOSTILE = '</text><script>alert(1)</script><svg onload="alert(2)"><a href="javascript:x">'


def test_stored_markup_in_the_relation_graph_is_text(console: ConsoleGateway) -> None:
    """Memory content and relation names reach the page's SVG graph escaped (no element, no
    handler, no javascript: link); the control shows the relation was drawn."""
    with console.client("alice") as api:
        centre = api.post("/v1/memories", json={"content": "centre " + HOSTILE}).json()["id"]
        other = api.post("/v1/memories", json={"content": "other " + HOSTILE}).json()["id"]
        answer = api.post("/v1/relations", json={
            "source_record_id": centre, "source_record_type": "memory",
            "target_record_id": other, "target_record_type": "memory",
            "relation_type": "rel" + HOSTILE, "opposite_relation_type": "opp" + HOSTILE})
        assert answer.status_code == 201, answer.text
    alice = signed_in(console, "alice")
    page = alice.get(f"/console/memories/{centre}")
    assert page.status_code == 200, page.text
    assert "<svg class=\"graph\"" in page.text and "<line class=\"edge\"" in page.text
    assert f'href="/console/memories/{other}"' in page.text  # the neighbour is drawn
    assert "<script" not in page.text and "onload=" not in page.text.replace("onload=&quot;", "")
    assert "javascript:" not in page.text.replace('href=&quot;javascript:', "")
    assert "&lt;/text&gt;&lt;script&gt;" in page.text  # shown, as text
    assert "script-src 'none'" in page.headers["content-security-policy"]


def test_a_session_id_planted_before_sign_in_is_never_adopted(console: ConsoleGateway) -> None:
    """Session fixation: the cookie an attacker planted is replaced at sign-in by a new id,
    and the planted value opens nothing."""
    planted = "attacker-chosen-session-id-0123456789abcdef"
    client, back = sign_in_answer_with_cookie(console, "alice", planted)
    assert back.status_code == 303 and back.headers["location"].endswith("/console/memories")
    issued = client.cookies.get(COOKIE)
    assert issued and issued != planted
    assert client.get("/console/memories").status_code == 200  # the control: the new id works
    with httpx.Client(base_url=console.url, timeout=30, cookies={COOKIE: planted}) as attacker:
        assert attacker.get("/console/memories").status_code == 401


def sign_in_answer_with_cookie(console: ConsoleGateway, user: str,
                               planted: str) -> tuple[httpx.Client, httpx.Response]:
    client = httpx.Client(base_url=console.url, timeout=30)
    client.cookies.set(COOKIE, planted)
    to_provider = client.get("/console/sign-in")
    page = sign_in_form(client.get(to_provider.headers["location"]))
    chosen = client.post(page.action, data={**page.fields, "user": user})
    assert chosen.status_code == 303, chosen.text
    answer = client.get(chosen.headers["location"])
    client.cookies.delete(COOKIE)
    for cookie in answer.cookies.jar:
        client.cookies.set(cookie.name, cookie.value or "")
    return client, answer


def test_bobs_ids_at_alices_console_read_and_change_nothing(console: ConsoleGateway) -> None:
    with console.client("bob") as bob_api:
        memory = bob_api.post("/v1/memories", json={"content": "bob's secret"}).json()["id"]
        thread = bob_api.post("/v1/threads", json={}).json()["id"]
    alice = signed_in(console, "alice")
    token = csrf_token(alice)
    assert alice.get(f"/console/memories/{memory}").status_code == 404
    assert alice.get(f"/console/threads/{thread}").status_code == 404
    for path, data in ((f"/console/memories/{memory}", {"content": "alice was here"}),
                       (f"/console/memories/{memory}/delete", {})):
        answer = alice.post(path, data={**data, "csrf_token": token})
        assert answer.status_code == 404, (path, answer.status_code)
    with console.client("bob") as bob_api:
        kept = bob_api.get(f"/v1/memories/{memory}")
        assert kept.status_code == 200 and kept.json()["content"] == "bob's secret"
    # the control: the same routes work on alice's own memory
    mine = alice.post("/console/memories", data={"content": "mine", "csrf_token": token})
    assert mine.status_code == 303
    own = mine.headers["location"]
    assert alice.get(own).status_code == 200
    assert alice.post(own, data={"content": "mine, edited", "csrf_token": token}
                      ).status_code == 303
    assert "mine, edited" in alice.get(own).text


# --- 3 and 4. the runtime login's SQL: partitions and sealed sessions ---------------------------

def test_the_runtime_login_has_nowhere_to_plant_a_shadowing_object_but_its_temp_schema(
        dds: DdsEnvironment) -> None:
    """The apply checks settings every time but not ``search_path``: that is safe only while
    the runtime login can create objects in no schema (so a search path can lead only to
    pg_catalog, the owner's schema and its temporary schema, which the scan checks), is no
    member of a role that bypasses row security and cannot create a database's schema."""
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        assert conn.execute("SELECT nspname FROM pg_namespace "
                            "WHERE has_schema_privilege(oid, 'CREATE')").fetchall() == []
        assert conn.execute("SELECT has_database_privilege(current_database(), 'CREATE')"
                            ).fetchone() == (False,)
        assert conn.execute(
            "SELECT rolname FROM pg_roles WHERE pg_has_role(current_user, oid, 'MEMBER') "
            "AND (rolsuper OR rolbypassrls)").fetchall() == []
        # the control: it can make temporary objects, which is what the scan is for
        assert conn.execute("SELECT has_database_privilege(current_database(), 'TEMP')"
                            ).fetchone() == (True,)


def test_a_shadowing_temp_table_and_search_path_get_no_assertion(dds: DdsEnvironment) -> None:
    """State a pooled connection could carry to another user's request: a temp table named as a
    store table with pg_temp first in search_path, and a session-level assertion. The apply,
    without a seal or with one the database did not keep, refuses the dirty session."""
    store_id = dds.new_store(vector_dim=3)
    table = f"{store_id}_memory"
    alice = dds.context("alice").assertion()
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        with conn.transaction():  # the control: a clean session gets alice
            assert conn.execute(APPLY, [alice], prepare=False).fetchone() == ("alice",)
        conn.execute(sql.SQL("CREATE TEMP TABLE {} (id text, user_id text)").format(
            sql.Identifier(table)))
        conn.execute(f"SET search_path = pg_temp, {OWNER}")
        with conn.transaction():
            assert conn.execute(APPLY, [alice], prepare=False).fetchone() == (None,)
            # a seal the database never kept for this session: scanned, refused
            assert conn.execute("SELECT oam_sec.apply_assertion(%s, %s)",
                                [alice, "f" * 32], prepare=False).fetchone() == (None,)
            assert conn.execute("SELECT oam_sec.end_user()").fetchone() == (None,)
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        # an assertion set for the session (it would outlive a transaction) verifies only if
        # signed with the application's key: a forged one names nobody
        conn.execute("SELECT set_config('oam.end_user_assertion', 'forged.assertion', false)")
        assert conn.execute("SELECT oam_sec.end_user()").fetchone() == (None,)
        with conn.transaction():
            assert conn.execute(APPLY, ["forged.assertion"], prepare=False
                                ).fetchone() == (None,)


def test_a_refresh_never_widens_the_scope(gateway: DevGateway, browser: Browser) -> None:
    client_id, pkce = register(gateway), Pkce.make()
    code = code_for(gateway, browser, client_id, pkce, scope="memory:read")
    first = exchange(gateway, client_id, code, pkce.verifier).json()
    assert first["scope"] == "memory:read"
    wider = httpx.post(f"{gateway.url}/oauth/token", timeout=30, data={
        "grant_type": "refresh_token", "refresh_token": first["refresh_token"],
        "client_id": client_id, "scope": "memory:read memory:write"})
    assert wider.status_code == 400 and wider.json()["error"] == "invalid_scope", wider.text
    # the control: the same refresh without widening is granted, at the first scope
    same = httpx.post(f"{gateway.url}/oauth/token", timeout=30, data={
        "grant_type": "refresh_token", "refresh_token": first["refresh_token"],
        "client_id": client_id})
    assert same.status_code == 200, same.text
    assert claims_of(same.json()["access_token"])["scope"] == "memory:read"


def _id_token(gateway: DevGateway, expected_nonce: str, *, alg: str = "RS256",
              **overrides: Any) -> str:
    now = int(time.time())
    claims = {"iss": gateway.url, "aud": CONSOLE_CLIENT_ID, "sub": "alice", "iat": now,
              "exp": now + 300, "nonce": expected_nonce, **overrides}
    claims = {k: v for k, v in claims.items() if v is not None}
    key = gateway.server.issuer.key
    if alg == "none":
        header = {"alg": "none", "typ": "JWT"}
        return ".".join(base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")
                        for part in (header, claims)) + "."
    if alg == "HS256":  # the public key as an HMAC secret (algorithm confusion)
        secret = OctKey.import_key(json.dumps(key.as_dict(private=False)).encode())
        return jwt.encode({"alg": "HS256", "kid": key.kid}, claims, secret,
                          algorithms=["HS256"])
    return jwt.encode({"alg": alg, "kid": key.kid}, claims, key)


@pytest.mark.parametrize("forged", [
    {"alg": "none"}, {"alg": "HS256"}, {"aud": "another-client"}, {"iss": "http://evil.example"},
    {"exp": 1}, {"nonce": "another sign-in's nonce"}, {"nonce": None}, {"sub": None},
])
def test_the_console_refuses_every_forged_id_token(gateway: DevGateway,
                                                   forged: dict[str, Any]) -> None:
    """The console's ID-token check, against the development issuer's real JWKS over HTTP."""
    provider = IdentityProvider(gateway.url, CONSOLE_CLIENT_ID)
    nonce = "the sign-in's nonce"
    good = anyio.run(provider._identity, _id_token(gateway, nonce), nonce)
    assert good["sub"] == "alice"  # the control
    alg = forged.pop("alg", "RS256")
    with pytest.raises(SignInFailed):
        anyio.run(provider._identity, _id_token(gateway, nonce, alg=alg, **forged), nonce)
