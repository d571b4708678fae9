"""The gateway's bearer-token authentication and probes, over real HTTP.

Each test starts the app under uvicorn on a free 127.0.0.1 port and calls it with httpx. Tokens
come from the SDK's development issuer; every refused token has a positive control (the same
token with only the attacked aspect put right is accepted), so a verifier that refused
everything would fail.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_harness import live_server as harness_server
from joserfc import jwt
from joserfc.jwk import OctKey
from oam_gateway.app import create_app
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.errors.problems import PROBLEM_CONTENT_TYPE, problem_type
from oracleagentmemory.devissuer import DevIssuer
from pydantic import SecretStr, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

ISSUER = "https://issuer.gateway.test"
AUDIENCE = "oam-gateway-test"
UNREACHABLE_URL = "postgresql://nobody@127.0.0.1:1/nowhere"


@contextmanager
def live_server(app: Starlette) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread (no lifespan: these tests open no pool)."""
    with harness_server(app, lifespan="off") as url:
        yield url


def write_jwks(path: Path, *keys: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"keys": list(keys)}), encoding="utf-8")
    return path


UNUSED_APP_TOKEN = "oamapp.unused.unused"
"""These tests never open an end-user context: the application token is never used."""


def settings_for(jwks_file: Path, database_url: str, **overrides: Any) -> GatewaySettings:
    values: dict[str, Any] = {
        "database_url": SecretStr(database_url), "memory_store_id": "gw_test",
        "schema_owner": "oam_gw_test", "issuer": ISSUER, "audience": AUDIENCE,
        "jwks_file": jwks_file, "identity_provider": "testidp", "tenant": "acme",
        "app_token": SecretStr(UNUSED_APP_TOKEN), "require_scopes": False}
    values.update(overrides)
    return GatewaySettings(**values)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unsigned_token(claims: dict[str, Any]) -> str:
    """A token with ``alg: none`` and an empty signature."""
    header = b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{b64url(json.dumps(claims).encode())}."


def claims_of(issuer: DevIssuer, subject: str = "alice", **extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": issuer.issuer, "aud": AUDIENCE, "sub": subject, "groups": ["support"],
            "iat": now, "nbf": now, "exp": now + 300, **extra}


def rs256(issuer: DevIssuer, claims: dict[str, Any], kid: str | None = None) -> str:
    header = {"alg": "RS256", "typ": "JWT", "kid": kid or issuer.key.kid}
    return jwt.encode(header, claims, issuer.key, algorithms=["RS256"])


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> DevIssuer:
    return DevIssuer.create(tmp_path_factory.mktemp("issuer"), ISSUER)


@pytest.fixture(scope="module")
def other_issuer(tmp_path_factory: pytest.TempPathFactory) -> DevIssuer:
    """Same issuer name, another key (an attacker's)."""
    return DevIssuer.create(tmp_path_factory.mktemp("other"), ISSUER)


@pytest.fixture(scope="module")
def shared_secret() -> OctKey:
    key: OctKey = OctKey.generate_key(256, parameters={"kid": "shared-hs256"})
    return key


@pytest.fixture(scope="module")
def jwks_file(issuer: DevIssuer, shared_secret: OctKey,
              tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The issuer's public key and a shared HS256 secret (usable only when HS256 is enabled)."""
    return write_jwks(tmp_path_factory.mktemp("jwks") / "jwks.json",
                      issuer.key.as_dict(private=False), shared_secret.as_dict(private=True))


@pytest.fixture(scope="module")
def gateway(jwks_file: Path, pg_url: str) -> Iterator[str]:
    """The gateway (RS256/ES256/EdDSA only) over the test database."""
    with live_server(create_app(settings_for(jwks_file, pg_url))) as base:
        yield base


def call_me(base: str, token: str | None = None, *,
            authorization: str | None = None) -> httpx.Response:
    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if authorization is not None:
        headers["Authorization"] = authorization
    return httpx.get(f"{base}/v1/me", headers=headers, timeout=10)


def assert_refused(response: httpx.Response, *, error: str | None = "invalid_token") -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    if error is None:
        assert "error=" not in challenge
    else:
        assert f'error="{error}"' in challenge
    assert response.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
    assert response.json()["type"] == problem_type("invalid-token")
    assert response.json()["status"] == 401


def assert_accepted(response: httpx.Response, user: str = "alice") -> None:
    assert response.status_code == 200, response.text
    assert response.json()["user_name"] == f"testidp:{user}"


def test_a_valid_token_reaches_me_with_the_verified_principal(
        gateway: str, issuer: DevIssuer) -> None:
    token = issuer.token("bob", audience=AUDIENCE, groups=["support", "billing"])
    response = call_me(gateway, token)
    assert response.status_code == 200
    assert response.json() == {"user_name": "testidp:bob", "groups": ["support", "billing"],
                               "tenant": "acme", "subject": "bob", "scopes": []}
    # A different user's token names that user: the principal comes from the token.
    assert call_me(gateway, issuer.token("carol", audience=AUDIENCE)).json()["user_name"] == (
        "testidp:carol")


Forge = Callable[[DevIssuer, DevIssuer], tuple[str, str]]
"""Makes (refused token, accepted control token) from the issuer and another key."""


def _expired(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    now = int(time.time())
    return (rs256(issuer, claims_of(issuer, iat=now - 600, nbf=now - 600, exp=now - 120)),
            rs256(issuer, claims_of(issuer, iat=now - 600, nbf=now - 600, exp=now + 120)))


def _not_yet_valid(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    now = int(time.time())
    return (rs256(issuer, claims_of(issuer, nbf=now + 120)),
            rs256(issuer, claims_of(issuer, nbf=now - 5)))


def _wrong_issuer(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    return (rs256(issuer, claims_of(issuer, iss="https://evil.example")),
            rs256(issuer, claims_of(issuer)))


def _wrong_audience(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    return (rs256(issuer, claims_of(issuer, aud="another-service")),
            rs256(issuer, claims_of(issuer, aud=[AUDIENCE, "another-service"])))


def _another_key(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    return rs256(other, claims_of(other)), rs256(issuer, claims_of(issuer))


def _another_key_claiming_our_kid(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    return (rs256(other, claims_of(other), kid=issuer.key.kid),
            rs256(issuer, claims_of(issuer), kid=issuer.key.kid))


def _unknown_kid(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    return rs256(issuer, claims_of(issuer), kid="no-such-key"), rs256(issuer, claims_of(issuer))


def _alg_none(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    return unsigned_token(claims_of(issuer)), rs256(issuer, claims_of(issuer))


def _missing_exp(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    claims = claims_of(issuer)
    del claims["exp"]
    return rs256(issuer, claims), rs256(issuer, claims_of(issuer))


def _missing_sub(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    claims = claims_of(issuer)
    del claims["sub"]
    return rs256(issuer, claims), rs256(issuer, claims_of(issuer))


def _tampered_payload(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    good = rs256(issuer, claims_of(issuer))
    header, _, signature = good.split(".")
    forged = b64url(json.dumps(claims_of(issuer, subject="mallory")).encode())
    return f"{header}.{forged}.{signature}", good


def _oversized(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    return (rs256(issuer, claims_of(issuer, padding="x" * 10_000)),
            rs256(issuer, claims_of(issuer, padding="x" * 1_000)))


def _groups_not_a_list(issuer: DevIssuer, other: DevIssuer) -> tuple[str, str]:
    return (rs256(issuer, claims_of(issuer, groups="admin")),
            rs256(issuer, claims_of(issuer, groups=["admin"])))


FORGERIES: dict[str, Forge] = {
    "expired": _expired, "not yet valid": _not_yet_valid, "wrong issuer": _wrong_issuer,
    "wrong audience": _wrong_audience, "another key": _another_key,
    "another key claiming our kid": _another_key_claiming_our_kid, "unknown kid": _unknown_kid,
    "alg none": _alg_none, "missing exp": _missing_exp, "missing sub": _missing_sub,
    "tampered payload": _tampered_payload, "oversized": _oversized,
    "groups not a list": _groups_not_a_list,
}


@pytest.mark.parametrize("case", list(FORGERIES))
def test_a_bad_token_is_refused_and_its_corrected_twin_accepted(
        gateway: str, issuer: DevIssuer, other_issuer: DevIssuer, case: str) -> None:
    refused, control = FORGERIES[case](issuer, other_issuer)
    assert_refused(call_me(gateway, refused))
    assert_accepted(call_me(gateway, control))


def _hs256(secret: OctKey, issuer: DevIssuer) -> str:
    return jwt.encode({"alg": "HS256", "kid": secret.kid}, claims_of(issuer), secret,
                      algorithms=["HS256"])


def test_hs256_is_refused_unless_enabled(
        jwks_file: Path, pg_url: str, issuer: DevIssuer, shared_secret: OctKey) -> None:
    token = _hs256(shared_secret, issuer)
    with live_server(create_app(settings_for(jwks_file, pg_url))) as base:
        assert_refused(call_me(base, token))
        assert_accepted(call_me(base, rs256(issuer, claims_of(issuer))))
    enabled = settings_for(jwks_file, pg_url, allow_hs256=True)
    with live_server(create_app(enabled)) as base:
        assert_accepted(call_me(base, token))  # positive control: the same token, HS256 enabled


def test_hs256_signed_with_the_rsa_public_key_is_refused_even_when_enabled(
        jwks_file: Path, pg_url: str, issuer: DevIssuer, shared_secret: OctKey) -> None:
    """Algorithm confusion: the RSA public key used as an HMAC secret."""
    claims = claims_of(issuer)
    header = b64url(json.dumps({"alg": "HS256", "kid": issuer.key.kid}).encode())
    payload = b64url(json.dumps(claims).encode())
    pem = issuer.key.as_pem(private=False)
    mac = hmac.new(pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    confused = f"{header}.{payload}.{b64url(mac)}"
    with live_server(create_app(settings_for(jwks_file, pg_url, allow_hs256=True))) as base:
        assert_refused(call_me(base, confused))
        assert_accepted(call_me(base, _hs256(shared_secret, issuer)))


@pytest.mark.parametrize("authorization", [
    "Bearer", "Bearer .", "Basic YWxpY2U6cGFzcw==", "Token abc", "Bearer a b", "Bearer not-a-jwt",
    "Bearer a.b.c", "Bearer ....",
])
def test_a_malformed_authorization_header_is_refused(
        gateway: str, issuer: DevIssuer, authorization: str) -> None:
    assert_refused(call_me(gateway, authorization=authorization))
    # Positive control: a well-formed header, the scheme in any case (RFC 9110: case-insensitive).
    assert_accepted(call_me(gateway, authorization=f"bEaReR {rs256(issuer, claims_of(issuer))}"))


def test_two_authorization_headers_are_refused(gateway: str, issuer: DevIssuer) -> None:
    token = rs256(issuer, claims_of(issuer))
    response = httpx.get(f"{gateway}/v1/me", timeout=10,
                         headers=[("Authorization", f"Bearer {token}"),
                                  ("Authorization", f"Bearer {token}")])
    assert_refused(response)
    assert_accepted(call_me(gateway, token))


def test_no_authorization_header_gets_a_challenge_without_an_error_code(
        gateway: str, issuer: DevIssuer) -> None:
    response = call_me(gateway)
    assert_refused(response, error=None)
    assert 'realm="oam-gateway"' in response.headers["www-authenticate"]
    assert_accepted(call_me(gateway, rs256(issuer, claims_of(issuer))))


def test_unknown_v1_paths_are_refused_before_routing_without_a_token(
        gateway: str, issuer: DevIssuer) -> None:
    assert_refused(httpx.get(f"{gateway}/v1/no-such-collection", timeout=10), error=None)
    token = rs256(issuer, claims_of(issuer))
    found = httpx.get(f"{gateway}/v1/no-such-collection", timeout=10,
                      headers={"Authorization": f"Bearer {token}"})
    assert found.status_code == 404
    assert found.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
    assert found.json()["type"] == problem_type("not-found")


def test_healthz_answers_without_a_token(gateway: str) -> None:
    response = httpx.get(f"{gateway}/healthz", timeout=10)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_is_ready_with_the_test_database(gateway: str) -> None:
    response = httpx.get(f"{gateway}/readyz", timeout=10)
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}


def test_readyz_answers_503_with_retry_after_when_the_database_is_unreachable(
        jwks_file: Path) -> None:
    with live_server(create_app(settings_for(jwks_file, UNREACHABLE_URL))) as base:
        response = httpx.get(f"{base}/readyz", timeout=10)
        assert response.status_code == 503
        assert int(response.headers["retry-after"]) > 0
        assert response.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
        assert response.json()["type"] == problem_type("database-unavailable")
        assert UNREACHABLE_URL not in response.text
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200  # alive, not ready


def _segment(value: object) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return b64url(raw)


GARBAGE_TOKENS = [
    f"{_segment([])}.{_segment({})}.AAAA",
    f"{_segment('RS256')}.{_segment({})}.",
    f"{_segment({'alg': ['RS256']})}.{_segment({})}.AAAA",
    f"{_segment({'alg': 'RS256', 'kid': 1})}.{_segment({})}.AAAA",
    f"{_segment({'alg': 'RS256', 'crit': ['exp']})}.{_segment({})}.AAAA",
    f"{_segment({'alg': 'RS256', 'b64': False, 'crit': ['b64']})}.{_segment({})}.AAAA",
    f"{_segment({'alg': 'RS256', 'jku': 'http://127.0.0.1:1/jwks'})}.{_segment({})}.AAAA",
    _segment(bytes([0xFF, 0xFE])) + "." + _segment(bytes([0xFF])) + ".!!!",
    "x.y.z.w", ".", "a" * 300,
]


@pytest.mark.parametrize("token", GARBAGE_TOKENS)
def test_garbage_tokens_answer_401_never_500(gateway: str, issuer: DevIssuer,
                                             token: str) -> None:
    assert_refused(call_me(gateway, token))
    assert_accepted(call_me(gateway, rs256(issuer, claims_of(issuer))))


@pytest.mark.parametrize("claims", [
    {"exp": "soon"}, {"exp": 2**40, "sub": 7}, {"exp": 2**40, "nbf": "later"},
    {"exp": 2**40, "iss": [ISSUER]}, {"exp": 2**40, "aud": {"a": 1}},
])
def test_signed_tokens_with_ill_typed_claims_answer_401(gateway: str, issuer: DevIssuer,
                                                        claims: dict[str, Any]) -> None:
    base = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", **claims}
    assert_refused(call_me(gateway, rs256(issuer, base)))
    assert_accepted(call_me(gateway, rs256(issuer, {**base, **claims_of(issuer)})))


class JwksServer:
    """A stand-in identity provider's JWKS endpoint: its served keys can be changed."""

    def __init__(self, *keys: dict[str, Any]) -> None:
        self.keys = list(keys)
        self.fetches = 0

    def app(self) -> Starlette:
        async def jwks(request: Request) -> Response:
            self.fetches += 1
            return JSONResponse({"keys": self.keys})

        return Starlette(routes=[Route("/jwks", jwks)])


def url_settings(pg_url: str, jwks_url: str, **overrides: Any) -> GatewaySettings:
    values: dict[str, Any] = {
        "database_url": SecretStr(pg_url), "memory_store_id": "gw_test",
        "schema_owner": "oam_gw_test", "issuer": ISSUER, "audience": AUDIENCE,
        "jwks_url": jwks_url, "identity_provider": "testidp",
        "app_token": SecretStr(UNUSED_APP_TOKEN), "require_scopes": False}
    values.update(overrides)
    return GatewaySettings(**values)


REFETCH = 2.0
"""The JWKS refetch interval of the rotation test, in seconds."""


def test_keys_come_from_a_jwks_url_and_a_rotation_is_picked_up_once(
        pg_url: str, issuer: DevIssuer, other_issuer: DevIssuer) -> None:
    """A new key (unknown kid) causes one refetch; more unknown kids within the interval none."""
    provider = JwksServer(issuer.key.as_dict(private=False))
    with live_server(provider.app()) as idp:
        # the interval must outlast the six calls after the refetch (about 0.3 s, more on a
        # loaded machine): a shorter one would let a random kid refetch legitimately
        settings = url_settings(pg_url, f"{idp}/jwks", jwks_refetch_seconds=REFETCH)
        with live_server(create_app(settings)) as base:
            first = rs256(issuer, claims_of(issuer))
            assert_accepted(call_me(base, first))
            assert provider.fetches == 1
            time.sleep(REFETCH + 0.1)
            provider.keys.append(other_issuer.key.as_dict(private=False))  # the rotation
            assert_accepted(call_me(base, rs256(other_issuer, claims_of(other_issuer))))
            assert provider.fetches == 2
            for attempt in range(5):  # random kids cannot make the gateway refetch again
                assert_refused(call_me(base, rs256(issuer, claims_of(issuer),
                                                   kid=f"random-{attempt}")))
            assert provider.fetches == 2  # within the interval of the last fetch: none at all
            provider.keys = [other_issuer.key.as_dict(private=False)]  # the old key withdrawn
            time.sleep(REFETCH + 0.1)
            old_kid_unknown = rs256(issuer, claims_of(issuer), kid="withdrawn-now")
            assert_refused(call_me(base, old_kid_unknown))
            assert provider.fetches == 3  # the interval passed: one refetch; keys now lack it
            assert_refused(call_me(base, first))  # verified before, but not kept past the refetch
            assert_refused(call_me(base, rs256(issuer, claims_of(issuer))))
            assert_accepted(call_me(base, rs256(other_issuer, claims_of(other_issuer))))


def test_an_unreachable_jwks_url_answers_503_not_500(
        pg_url: str, issuer: DevIssuer) -> None:
    settings = url_settings(pg_url, "http://127.0.0.1:1/jwks")
    token = rs256(issuer, claims_of(issuer))
    with live_server(create_app(settings)) as base:
        response = call_me(base, token)
        assert response.status_code == 503
        assert int(response.headers["retry-after"]) > 0
        assert response.json()["type"] == problem_type("identity-provider-unavailable")
    provider = JwksServer(issuer.key.as_dict(private=False))
    with live_server(provider.app()) as idp, \
            live_server(create_app(url_settings(pg_url, f"{idp}/jwks"))) as base:
        assert_accepted(call_me(base, token))  # positive control: the same token, keys served


def test_a_jwks_url_must_be_https_unless_loopback(pg_url: str) -> None:
    with pytest.raises(ValidationError, match="https"):
        url_settings(pg_url, "http://idp.example/jwks")
    assert url_settings(pg_url, "https://idp.example/jwks").jwks_url
    assert url_settings(pg_url, "http://127.0.0.1:9/jwks").jwks_url


def _typed(issuer: DevIssuer, typ: str | None) -> str:
    header: dict[str, Any] = {"alg": "RS256", "kid": issuer.key.kid}
    if typ is not None:
        header["typ"] = typ
    return jwt.encode(header, claims_of(issuer), issuer.key, algorithms=["RS256"])


def test_only_access_tokens_pass_when_a_token_type_is_required(
        jwks_file: Path, pg_url: str, issuer: DevIssuer) -> None:
    settings = settings_for(jwks_file, pg_url, required_token_type="at+jwt")
    with live_server(create_app(settings)) as base:
        for refused in ("JWT", None, "id+jwt", "at+jwt+x"):  # an ID token says JWT, or nothing
            assert_refused(call_me(base, _typed(issuer, refused)))
        for accepted in ("at+jwt", "AT+JWT", "application/at+jwt"):
            assert_accepted(call_me(base, _typed(issuer, accepted)))


def test_any_token_type_passes_when_none_is_required(gateway: str, issuer: DevIssuer) -> None:
    for typ in ("JWT", None, "at+jwt"):
        assert_accepted(call_me(gateway, _typed(issuer, typ)))


def test_a_verified_token_is_not_served_from_the_cache_after_it_expires(
        jwks_file: Path, pg_url: str, issuer: DevIssuer) -> None:
    settings = settings_for(jwks_file, pg_url, leeway_seconds=0)
    short = rs256(issuer, claims_of(issuer, exp=int(time.time()) + 5))  # 4-5 s to use it
    with live_server(create_app(settings)) as base:
        assert_accepted(call_me(base, short))
        assert_accepted(call_me(base, short))  # served again (from the cache)
        time.sleep(max(0.0, json.loads(base64.urlsafe_b64decode(
            short.split(".")[1] + "==="))["exp"] - time.time()) + 1.1)
        assert_refused(call_me(base, short))
        assert_accepted(call_me(base, rs256(issuer, claims_of(issuer))))
