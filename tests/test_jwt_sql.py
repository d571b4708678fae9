"""In-database RS256 JWT verification (``oam_sec.jwt_rs256_claims`` and its helpers).

Tokens are made with joserfc (and, for hand-crafted headers and attacks, with the same keys'
``cryptography`` objects); every rejection has a positive control that differs only in the
property under test. The functions are installed in a private database of the session's
server, so they cannot interfere with the ``oam_sec`` schema other tests install.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc import jws, jwt
from joserfc.jwk import ECKey, RSAKey
from oracleagentmemory.engines.postgres.jwt_sql import JWT_INSTALL_STATEMENTS, MAX_TOKEN_OCTETS
from psycopg import conninfo, sql
from psycopg.types.json import Jsonb

ISS = "https://idp.example.com/"
AUD = "oam-api"
NOW = 1_800_000_000
"""The verification instant (epoch seconds) used throughout."""
VERIFY = "SELECT oam_sec.jwt_rs256_claims(%s, %s, %s, %s, %s, %s)"


def public_jwk(key: RSAKey | ECKey) -> dict[str, Any]:
    return dict(key.as_dict(private=False))


def private_key(key: RSAKey) -> rsa.RSAPrivateKey:
    private = key.private_key
    assert private is not None
    return private


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64u_json(value: Any) -> str:
    return b64u(json.dumps(value, separators=(",", ":")).encode())


def at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def base_claims(**overrides: Any) -> dict[str, Any]:
    claims: dict[str, Any] = {"iss": ISS, "aud": AUD, "sub": "alice", "iat": NOW - 60,
                              "nbf": NOW - 60, "exp": NOW + 600, "groups": ["eng"]}
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


@dataclass(frozen=True)
class Keys:
    k2048: RSAKey
    k4096: RSAKey
    other: RSAKey
    """A second 2048-bit key, also published in the JWKS."""
    imposter: RSAKey
    """Not published; carries the kid of ``k2048``."""
    small: RSAKey
    """1024 bits, kid ``small``."""
    ec: ECKey
    """A P-256 key, kid ``ec``."""

    def jwks(self, *keys: RSAKey | ECKey, **extra: Any) -> dict[str, Any]:
        """A JWKS of the public halves of ``keys`` (default: an EC key and the three RSA keys)."""
        chosen = keys or (self.ec, self.other, self.k2048, self.k4096)
        return {"keys": [{**public_jwk(k), **extra} for k in chosen]}


@pytest.fixture(scope="module")
def keys() -> Keys:
    def new(bits: int, kid: str) -> RSAKey:
        key: RSAKey = RSAKey.generate_key(bits, parameters={"kid": kid})
        return key

    with warnings.catch_warnings():  # joserfc warns about the deliberately weak 1024 bits
        warnings.simplefilter("ignore")
        small = new(1024, "small")
    return Keys(new(2048, "k2048"), new(4096, "k4096"), new(2048, "other"),
                new(2048, "k2048"), small, ECKey.generate_key("P-256", parameters={"kid": "ec"}))


@pytest.fixture(scope="module")
def db(pg_url: str) -> Iterator[psycopg.Connection[Any]]:
    """An autocommit connection to a private database with the functions installed (twice)."""
    name = f"oam_jwt_test_{os.getpid()}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                      .format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = conninfo.make_conninfo(pg_url, dbname=name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA IF NOT EXISTS oam_sec")
            for _ in range(2):
                for statement in JWT_INSTALL_STATEMENTS:
                    conn.execute(statement)
            yield conn
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                          .format(sql.Identifier(name)))


@pytest.fixture(scope="module")
def db_url(db: psycopg.Connection[Any], pg_url: str) -> str:
    return conninfo.make_conninfo(pg_url, dbname=db.info.dbname)


def verify(db: psycopg.Connection[Any], token: str | None, jwks: Any, *,
           issuer: str | None = ISS, audience: str | None = AUD, when: float | None = NOW,
           leeway: int | None = 0) -> Any:
    row = db.execute(VERIFY, [token, None if jwks is None else Jsonb(jwks), issuer, audience,
                              None if when is None else at(when), leeway]).fetchone()
    assert row is not None
    return row[0]


def sign(key: RSAKey, claims: dict[str, Any], kid: str | None = "default") -> str:
    """A token made by joserfc (header ``typ`` JWT, ``alg`` RS256, ``kid``)."""
    header: dict[str, Any] = {"alg": "RS256"}
    if kid is not None:
        header["kid"] = key.kid if kid == "default" else kid
    return jwt.encode(header, claims, key)


def raw_rs256(key: RSAKey, header: Any, claims: Any) -> str:
    """A compact JWS with exactly this header, RS256-signed by ``key`` via cryptography."""
    signing_input = f"{b64u_json(header)}.{b64u_json(claims)}"
    signature = private_key(key).sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{b64u(signature)}"


def joserfc_accepts(token: str, key: RSAKey) -> bool:
    """Whether joserfc verifies the JWS signature (a cross-check of the hand-made tokens)."""
    try:
        jws.deserialize_compact(token, key, algorithms=["RS256"])
    except Exception:
        return False
    return True


# --- valid tokens and key selection ---------------------------------------------------------

@pytest.mark.parametrize("size", [2048, 4096])
def test_valid_token_verifies_and_returns_claims(db: psycopg.Connection[Any], keys: Keys,
                                                 size: int) -> None:
    key = keys.k2048 if size == 2048 else keys.k4096
    claims = base_claims(sub=f"user-{size}")
    token = sign(key, claims)
    assert verify(db, token, keys.jwks()) == claims
    assert public_jwk(key)["kid"] in {k.get("kid") for k in keys.jwks()["keys"]}


def test_kid_selects_the_key(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims()
    assert verify(db, sign(keys.k2048, claims, kid="k2048"), keys.jwks()) == claims
    assert verify(db, sign(keys.k2048, claims, kid="other"), keys.jwks()) is None
    assert verify(db, sign(keys.k2048, claims, kid="k4096"), keys.jwks()) is None
    assert verify(db, sign(keys.k2048, claims, kid="ec"), keys.jwks()) is None
    assert verify(db, sign(keys.k2048, claims, kid="unknown"), keys.jwks()) is None
    assert verify(db, raw_rs256(keys.k2048, {"alg": "RS256", "kid": 5}, claims),
                  keys.jwks(keys.k2048)) is None


def test_without_kid_only_a_single_rsa_key_is_used(db: psycopg.Connection[Any],
                                                   keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims, kid=None)
    assert verify(db, token, keys.jwks(keys.ec, keys.k2048)) == claims
    assert verify(db, token, keys.jwks(keys.k2048, keys.other)) is None
    assert verify(db, token, keys.jwks(keys.other)) is None


def test_duplicate_kid_in_jwks_is_rejected(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims)
    assert verify(db, token, keys.jwks(keys.k2048)) == claims
    assert verify(db, token, keys.jwks(keys.k2048, keys.imposter)) is None


@pytest.mark.parametrize(("extra", "ok"), [
    ({"use": "sig"}, True), ({"alg": "RS256"}, True), ({"key_ops": ["verify"]}, True),
    ({"use": "enc"}, False), ({"alg": "RS512"}, False), ({"alg": "PS256"}, False),
    ({"key_ops": ["sign"]}, False), ({"use": None}, False), ({"kty": "rsa"}, False),
])
def test_jwk_parameters(db: psycopg.Connection[Any], keys: Keys, extra: dict[str, Any],
                        ok: bool) -> None:
    claims = base_claims()
    result = verify(db, sign(keys.k2048, claims), keys.jwks(keys.k2048, **extra))
    assert result == (claims if ok else None)


def test_modulus_outside_2048_to_8192_bits_is_rejected(db: psycopg.Connection[Any],
                                                       keys: Keys) -> None:
    claims = base_claims()
    private = rsa.generate_private_key(65537, 2047)  # 256 octets, one bit short
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        short = RSAKey.import_key(pem, parameters={"kid": "short"})
    for key in (keys.small, short):
        token = sign(key, claims)
        assert joserfc_accepts(token, key)
        assert verify(db, token, keys.jwks(key)) is None


def test_modulus_with_a_leading_zero_octet_is_accepted(db: psycopg.Connection[Any],
                                                       keys: Keys) -> None:
    claims = base_claims()
    jwk = public_jwk(keys.k2048)
    n = base64.urlsafe_b64decode(jwk["n"] + "==")
    padded = {"keys": [{**jwk, "n": b64u(b"\0" + n)}]}
    assert verify(db, sign(keys.k2048, claims), padded) == claims


# --- signatures -----------------------------------------------------------------------------

def test_tampered_payload_is_rejected(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims)
    assert verify(db, token, keys.jwks()) == claims
    header, _, signature = token.split(".")
    for forged in (base_claims(sub="mallory"), base_claims(groups=["admin"]), claims):
        payload = b64u_json(forged)
        if forged is claims:  # the same claims, serialised differently: other bytes
            payload = b64u(json.dumps(claims, indent=1).encode())
        assert verify(db, f"{header}.{payload}.{signature}", keys.jwks()) is None


def test_tampered_header_or_signature_is_rejected(db: psycopg.Connection[Any],
                                                  keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims)
    header, payload, signature = token.split(".")
    sig = bytearray(base64.urlsafe_b64decode(signature + "=="))
    sig[-1] ^= 1
    assert verify(db, f"{header}.{payload}.{b64u(bytes(sig))}", keys.jwks()) is None
    other_header = b64u_json({"alg": "RS256", "kid": "k2048", "typ": "at+jwt"})
    assert verify(db, f"{other_header}.{payload}.{signature}", keys.jwks()) is None
    short = b64u(bytes(sig[1:]))  # k - 1 octets
    assert verify(db, f"{header}.{payload}.{short}", keys.jwks()) is None


def test_signature_from_another_key_with_the_same_kid_is_rejected(
        db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims()
    forged = sign(keys.imposter, claims)
    assert joserfc_accepts(forged, keys.imposter)
    assert verify(db, forged, keys.jwks()) is None
    assert verify(db, forged, keys.jwks(keys.imposter)) == claims


def test_signature_not_less_than_modulus_is_rejected(db: psycopg.Connection[Any],
                                                     keys: Keys) -> None:
    """s + n (still k octets) is congruent to s, so only the range check rejects it."""
    found = False
    for key in (keys.k2048, keys.other, keys.imposter):
        n = key.public_key.public_numbers().n
        k = (n.bit_length() + 7) // 8
        for i in range(300):
            claims = base_claims(jti=str(i))
            token = sign(key, claims)
            header, payload, signature = token.split(".")
            s = int.from_bytes(base64.urlsafe_b64decode(signature + "=="), "big")
            if s + n < 256 ** k:
                found = True
                break
        if found:
            break
    assert found
    jwks = keys.jwks(key)
    assert verify(db, token, jwks) == claims
    assert verify(db, f"{header}.{payload}.{b64u((s + n).to_bytes(k, 'big'))}", jwks) is None
    assert verify(db, f"{header}.{payload}.{b64u(n.to_bytes(k, 'big'))}", jwks) is None


def test_signature_must_have_exactly_k_octets(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims)
    header, payload, signature = token.split(".")
    raw = base64.urlsafe_b64decode(signature + "==")
    assert verify(db, token, keys.jwks()) == claims
    padded = b64u(b"\0" + raw)  # the same integer in k + 1 octets
    assert verify(db, f"{header}.{payload}.{padded}", keys.jwks()) is None


def test_non_canonical_base64_signature_is_rejected(db: psycopg.Connection[Any],
                                                    keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims)
    assert verify(db, token, keys.jwks()) == claims
    # 256 octets leave 4 unused bits in the last character; setting one keeps the octets.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(token[-1])
    assert last % 16 == 0
    variant = token[:-1] + alphabet[last + 1]
    assert base64.urlsafe_b64decode(variant.split(".")[2] + "==") == \
        base64.urlsafe_b64decode(token.split(".")[2] + "==")
    assert verify(db, variant, keys.jwks()) is None
    assert verify(db, token + "==", keys.jwks()) is None


# --- header ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("header", "ok"), [
    ({"alg": "RS256", "kid": "k2048"}, True),
    ({"alg": "RS256", "kid": "k2048", "typ": "JWT"}, True),
    ({"alg": "RS256", "kid": "k2048", "typ": "jwt"}, True),
    ({"alg": "RS256", "kid": "k2048", "typ": "at+jwt"}, True),
    ({"alg": "RS256", "kid": "k2048", "typ": "AT+JWT"}, True),
    ({"alg": "RS256", "kid": "k2048", "typ": "JWS"}, False),
    ({"alg": "RS256", "kid": "k2048", "typ": 1}, False),
    ({"alg": "RS256", "kid": "k2048", "crit": ["exp"], "exp": 1}, False),
    ({"alg": "rs256", "kid": "k2048"}, False),
    ({"alg": "RS256 ", "kid": "k2048"}, False),
    ({"alg": "RS384", "kid": "k2048"}, False),
    ({"alg": "PS256", "kid": "k2048"}, False),
    ({"alg": "none", "kid": "k2048"}, False),
    ({"alg": ["RS256"], "kid": "k2048"}, False),
    ({"kid": "k2048"}, False),
])
def test_header_checks(db: psycopg.Connection[Any], keys: Keys, header: dict[str, Any],
                       ok: bool) -> None:
    """Each token carries a valid RS256 signature over its own header by the selected key."""
    claims = base_claims()
    token = raw_rs256(keys.k2048, header, claims)
    assert joserfc_accepts(token, keys.k2048) or not ok
    assert verify(db, token, keys.jwks()) == (claims if ok else None)


def test_header_that_is_not_an_object_is_rejected(db: psycopg.Connection[Any],
                                                  keys: Keys) -> None:
    claims = base_claims()
    for header in (["RS256"], "RS256", None):
        assert verify(db, raw_rs256(keys.k2048, header, claims), keys.jwks()) is None


def test_alg_none_is_rejected(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims()
    valid = sign(keys.k2048, claims)
    assert verify(db, valid, keys.jwks()) == claims
    payload, signature = valid.split(".")[1:]
    for alg in ("none", "None", "NONE"):
        header = b64u_json({"alg": alg, "typ": "JWT", "kid": "k2048"})
        assert verify(db, f"{header}.{payload}.", keys.jwks()) is None
        assert verify(db, f"{header}.{payload}", keys.jwks()) is None
        assert verify(db, f"{header}.{payload}.{signature}", keys.jwks()) is None


def test_hs256_with_the_public_key_as_secret_is_rejected(db: psycopg.Connection[Any],
                                                         keys: Keys) -> None:
    claims = base_claims()
    public = keys.k2048.public_key
    n = public.public_numbers().n
    secrets = [
        n.to_bytes((n.bit_length() + 7) // 8, "big"),
        public_jwk(keys.k2048)["n"].encode(),
        public.public_bytes(serialization.Encoding.PEM,
                            serialization.PublicFormat.SubjectPublicKeyInfo),
        public.public_bytes(serialization.Encoding.DER,
                            serialization.PublicFormat.SubjectPublicKeyInfo),
    ]
    for alg, digest in (("HS256", hashlib.sha256), ("HS512", hashlib.sha512)):
        for secret in secrets:
            signing_input = f"{b64u_json({'alg': alg, 'typ': 'JWT', 'kid': 'k2048'})}." \
                            f"{b64u_json(claims)}"
            mac = hmac.new(secret, signing_input.encode(), digest).digest()
            assert verify(db, f"{signing_input}.{b64u(mac)}", keys.jwks()) is None
            # The MAC even claiming RS256 is no RSA signature.
            signing_input = f"{b64u_json({'alg': 'RS256', 'kid': 'k2048'})}.{b64u_json(claims)}"
            mac = hmac.new(secret, signing_input.encode(), digest).digest()
            assert verify(db, f"{signing_input}.{b64u(mac)}", keys.jwks()) is None


# --- claims ---------------------------------------------------------------------------------

def test_expiry(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims(exp=NOW + 10)
    token = sign(keys.k2048, claims)
    jwks = keys.jwks()
    assert verify(db, token, jwks, when=NOW + 9.5) == claims
    assert verify(db, token, jwks, when=NOW + 10) is None
    assert verify(db, token, jwks, when=NOW + 3600) is None
    assert verify(db, token, jwks, when=NOW + 15, leeway=10) == claims
    assert verify(db, token, jwks, when=NOW + 20, leeway=10) is None


def test_not_before(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims(nbf=NOW + 100, iat=None)
    token = sign(keys.k2048, claims)
    jwks = keys.jwks()
    assert verify(db, token, jwks) is None
    assert verify(db, token, jwks, when=NOW + 99) is None
    assert verify(db, token, jwks, when=NOW + 100) == claims
    assert verify(db, token, jwks, leeway=100) == claims
    assert verify(db, sign(keys.k2048, base_claims(nbf="0")), jwks) is None


def test_issued_in_the_future(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims(iat=NOW + 100, nbf=None)
    token = sign(keys.k2048, claims)
    jwks = keys.jwks()
    assert verify(db, token, jwks) is None
    assert verify(db, token, jwks, leeway=100) == claims
    assert verify(db, token, jwks, when=NOW + 100) == claims
    assert verify(db, sign(keys.k2048, base_claims(iat=None, nbf=None)), jwks) is not None
    assert verify(db, sign(keys.k2048, base_claims(iat=str(NOW))), jwks) is None


def test_issuer(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims)
    jwks = keys.jwks()
    assert verify(db, token, jwks, issuer=ISS) == claims
    assert verify(db, token, jwks, issuer="https://evil.example.com/") is None
    assert verify(db, token, jwks, issuer=ISS.rstrip("/")) is None
    assert verify(db, sign(keys.k2048, base_claims(iss=None)), jwks) is None
    assert verify(db, sign(keys.k2048, base_claims(iss=[ISS])), jwks) is None


def test_audience_string(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims(aud=AUD)
    token = sign(keys.k2048, claims)
    jwks = keys.jwks()
    assert verify(db, token, jwks, audience=AUD) == claims
    assert verify(db, token, jwks, audience="other-api") is None
    assert verify(db, token, jwks, audience=AUD.upper()) is None
    assert verify(db, sign(keys.k2048, base_claims(aud=None)), jwks) is None


def test_audience_array(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims(aud=["first", AUD, "last"])
    token = sign(keys.k2048, claims)
    jwks = keys.jwks()
    assert verify(db, token, jwks, audience=AUD) == claims
    assert verify(db, token, jwks, audience="last") == claims
    assert verify(db, token, jwks, audience="other-api") is None
    assert verify(db, sign(keys.k2048, base_claims(aud=[])), jwks) is None
    assert verify(db, sign(keys.k2048, base_claims(aud=[[AUD]])), jwks) is None
    assert verify(db, sign(keys.k2048, base_claims(aud={AUD: True})), jwks) is None


def test_missing_or_non_numeric_exp(db: psycopg.Connection[Any], keys: Keys) -> None:
    jwks = keys.jwks()
    with_exp = base_claims()
    assert verify(db, sign(keys.k2048, with_exp), jwks) == with_exp
    for exp in (None, str(NOW + 600), [NOW + 600], True):
        assert verify(db, sign(keys.k2048, base_claims(exp=exp)), jwks) is None
    fractional = base_claims(exp=NOW + 0.5)
    assert verify(db, sign(keys.k2048, fractional), jwks) == fractional


def test_payload_must_be_an_object(db: psycopg.Connection[Any], keys: Keys) -> None:
    for payload in ([base_claims()], "claims", 1):
        token = raw_rs256(keys.k2048, {"alg": "RS256", "kid": "k2048"}, payload)
        assert joserfc_accepts(token, keys.k2048)
        assert verify(db, token, keys.jwks()) is None


# --- malformed input ------------------------------------------------------------------------

def test_extra_text_or_segments_are_rejected(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims)
    assert verify(db, token, keys.jwks()) == claims
    for bad in (token + ".", token + ".e30", token + "." + token.split(".")[2], token + " ",
                token + "\n", token + "x", token + "AAAA", " " + token, "." + token,
                token.replace(".", "..", 1), token.replace(".", "\n.", 1)):
        assert verify(db, bad, keys.jwks()) is None, bad[-20:]


@pytest.mark.parametrize("token", [
    "", ".", "..", "...", "a.b.c", "!!.??.**", "é.é.é", "\u2028.\u2028.\u2028",
    "A" * 20000, ".".join(["A" * 6000] * 3), "x" * 2_000_000, "e30.e30.", "e30.e30.e30",
    b64u(b"{") + ".e30.AAAA", b64u(bytes([0xFF, 0xFE])) + ".e30.AAAA",
    b64u(b'{"alg":"RS256"') + ".e30.AAAA", b64u(b'{"alg":"RS256"}') + ".e30.AAAA",
    "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjF9.@@@@",
])
def test_garbage_tokens_give_null(db: psycopg.Connection[Any], keys: Keys, token: str) -> None:
    assert verify(db, token, keys.jwks()) is None


def test_oversized_token_is_rejected_before_decoding(db: psycopg.Connection[Any],
                                                     keys: Keys) -> None:
    claims = base_claims(pad="p" * 8000)
    token = sign(keys.k2048, claims)
    assert len(token) <= MAX_TOKEN_OCTETS
    assert verify(db, token, keys.jwks()) == claims
    big = base_claims(pad="p" * 12000)
    assert verify(db, sign(keys.k2048, big), keys.jwks()) is None


@pytest.mark.parametrize("jwks", [
    {}, {"keys": "x"}, {"keys": {}}, {"keys": [1, "a", None]}, {"keys": [{"kty": "RSA"}]},
    {"keys": [{"kty": "RSA", "kid": "k2048", "n": 5, "e": "AQAB"}]},
    {"keys": [{"kty": "RSA", "kid": "k2048", "n": "!!", "e": "AQAB"}]},
    {"keys": [{"kty": "RSA", "kid": "k2048", "n": "AQAB", "e": "AQAB"}]},
    [],
])
def test_garbage_jwks_gives_null(db: psycopg.Connection[Any], keys: Keys, jwks: Any) -> None:
    assert verify(db, sign(keys.k2048, base_claims()), jwks) is None


def test_exponent_and_modulus_sanity(db: psycopg.Connection[Any], keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims)
    jwk = public_jwk(keys.k2048)
    assert verify(db, token, {"keys": [jwk]}) == claims
    for e in ("", "AA", "AQ", "Aw", "AQAA", "AQAAAAE"):  # 0, 0, 1, 3, 256, 2^32+1
        result = verify(db, token, {"keys": [{**jwk, "e": e}]})
        assert result is None, e
    n = bytearray(base64.urlsafe_b64decode(jwk["n"] + "=="))
    n[-1] &= 0xFE  # even modulus
    assert verify(db, token, {"keys": [{**jwk, "n": b64u(bytes(n))}]}) is None
    # With e = 1 anyone could "sign": the encoded message itself is the signature.
    header, payload, _ = token.split(".")
    digest = hashlib.sha256(f"{header}.{payload}".encode()).digest()
    k = len(base64.urlsafe_b64decode(jwk["n"] + "=="))
    encoded = b"\0\1" + b"\xff" * (k - 54) + bytes.fromhex(
        "003031300d060960864801650304020105000420") + digest
    forged = f"{header}.{payload}.{b64u(encoded)}"
    assert verify(db, forged, {"keys": [{**jwk, "e": "AQ"}]}) is None
    assert _int(db, MODEXP, [str(int.from_bytes(encoded, "big")), "1",
                             str(int.from_bytes(n, "big") | 1)]) == int.from_bytes(encoded, "big")


def test_null_and_out_of_range_arguments_give_null(db: psycopg.Connection[Any],
                                                   keys: Keys) -> None:
    token = sign(keys.k2048, base_claims())
    jwks = keys.jwks()
    assert verify(db, token, jwks) is not None
    assert verify(db, None, jwks) is None
    assert verify(db, token, None) is None
    assert verify(db, token, jwks, issuer=None) is None
    assert verify(db, token, jwks, audience=None) is None
    assert verify(db, token, jwks, when=None) is None
    assert verify(db, token, jwks, leeway=None) is None
    assert verify(db, token, jwks, leeway=-1) is None
    for special in ("infinity", "-infinity"):
        row = db.execute(VERIFY.replace("%s, %s)", f"'{special}'::timestamptz, 0)"),
                         [token, Jsonb(jwks), ISS, AUD]).fetchone()
        assert row == (None,)
    row = db.execute("SELECT oam_sec.jwt_rs256_claims(%s, %s, %s, %s, %s)",
                     [token, Jsonb(jwks), ISS, AUD, at(NOW)]).fetchone()
    assert row is not None and row[0] is not None  # leeway_seconds defaults to 0


# --- search_path and parallel safety --------------------------------------------------------

def test_hostile_search_path_changes_nothing(db_url: str, keys: Keys) -> None:
    """Look-alike functions and operators ahead of pg_catalog are never used."""
    claims = base_claims()
    token = sign(keys.k2048, claims)
    header, _, signature = token.split(".")
    tampered = f"{header}.{b64u_json(base_claims(sub='mallory'))}.{signature}"
    with psycopg.connect(db_url) as conn:
        conn.execute("CREATE SCHEMA evil")
        conn.execute("CREATE FUNCTION evil.sha256(bytea) RETURNS bytea LANGUAGE sql "
                     "AS $$ SELECT '\\x00'::bytea $$")
        conn.execute("CREATE FUNCTION evil.mod(numeric, numeric) RETURNS numeric "
                     "LANGUAGE sql AS $$ SELECT 0::numeric $$")
        for typ in ("numeric", "jsonb", "text"):
            conn.execute(f"CREATE FUNCTION evil.always(a {typ}, b {typ}) RETURNS boolean "
                         "LANGUAGE sql AS $$ SELECT true $$")
            for op in ("=", "<", ">=", "<="):
                conn.execute(f"CREATE OPERATOR evil.{op} (FUNCTION = evil.always, "
                             f"LEFTARG = {typ}, RIGHTARG = {typ})")
        conn.execute("SET search_path = evil, pg_catalog, public")
        assert conn.execute("SELECT mod(5::numeric, 3::numeric)").fetchone() == (0,)
        assert conn.execute("SELECT '1'::jsonb = '2'::jsonb").fetchone() == (True,)
        assert verify(conn, tampered, keys.jwks()) is None
        assert verify(conn, token, keys.jwks()) == claims
        conn.rollback()


def test_parallel_worker_verifies(db_url: str, keys: Keys) -> None:
    claims = base_claims()
    token = sign(keys.k2048, claims)
    with psycopg.connect(db_url) as conn:
        conn.execute("SET debug_parallel_query = on")
        assert verify(conn, token, keys.jwks()) == claims
        assert verify(conn, token + "x", keys.jwks()) is None
        conn.rollback()


# --- arithmetic and decoding helpers --------------------------------------------------------

def _int(db: psycopg.Connection[Any], query: str, args: list[Any]) -> int | None:
    row = db.execute(query, args).fetchone()
    assert row is not None
    return None if row[0] is None else int(row[0])


MODEXP = "SELECT oam_sec.modexp(%s::numeric, %s::numeric, %s::numeric)::text"


@settings(max_examples=60, deadline=None)
@given(base=st.integers(-(2 ** 4200), 2 ** 4200), exp=st.integers(0, 2 ** 300),
       modulus=st.integers(1, 2 ** 4096))
def test_modexp_matches_python_pow(db: psycopg.Connection[Any], base: int, exp: int,
                                   modulus: int) -> None:
    assert _int(db, MODEXP, [str(base), str(exp), str(modulus)]) == pow(base, exp, modulus)


def test_modexp_with_a_full_private_exponent(db: psycopg.Connection[Any], keys: Keys) -> None:
    numbers = private_key(keys.k2048).private_numbers()
    n, e, d = numbers.public_numbers.n, numbers.public_numbers.e, numbers.d
    message = int.from_bytes(hashlib.sha256(b"m").digest() * 8, "big") % n
    signature = _int(db, MODEXP, [str(message), str(d), str(n)])
    assert signature == pow(message, d, n)
    assert _int(db, MODEXP, [str(signature), str(e), str(n)]) == message


@pytest.mark.parametrize(("base", "exp", "modulus", "expected"), [
    ("5", "0", "7", 1), ("5", "3", "1", 0), ("0", "0", "7", 1), ("-2", "3", "7", 6),
    ("5.0", "3", "7", 6), ("5.5", "3", "7", None), ("5", "-1", "7", None),
    ("5", "3", "0", None), ("5", "3", "-7", None), ("5", "1.5", "7", None),
])
def test_modexp_edge_cases(db: psycopg.Connection[Any], base: str, exp: str, modulus: str,
                           expected: int | None) -> None:
    assert _int(db, MODEXP, [base, exp, modulus]) == expected


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=1100) | st.binary(max_size=40).map(lambda b: b"\0" * 9 + b))
def test_bytes_to_numeric_matches_int_from_bytes(db: psycopg.Connection[Any],
                                                 data: bytes) -> None:
    query = "SELECT oam_sec.bytes_to_numeric(%s)::text"
    assert _int(db, query, [data]) == int.from_bytes(data, "big")


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=700))
def test_b64url_decode_round_trips(db: psycopg.Connection[Any], data: bytes) -> None:
    row = db.execute("SELECT oam_sec.b64url_decode(%s)", [b64u(data)]).fetchone()
    assert row == (data,)


@pytest.mark.parametrize("text", ["A", "AB=", "AB==", "AQ==", "AR", "A+8", "A/8", "A 8",
                                  "A\n8", "ab.c", "é", "AAAAA"])
def test_b64url_decode_rejects_invalid_input(db: psycopg.Connection[Any], text: str) -> None:
    assert db.execute("SELECT oam_sec.b64url_decode(%s)", [text]).fetchone() == (None,)
    assert db.execute("SELECT oam_sec.b64url_decode('')").fetchone() == (b"",)
    assert db.execute("SELECT oam_sec.b64url_decode('_-8')").fetchone() == (b"\xff\xef",)


def test_time_arguments_are_exact(db: psycopg.Connection[Any], keys: Keys) -> None:
    """``at`` is compared to exp with sub-second precision."""
    claims = base_claims(exp=NOW)
    token = sign(keys.k2048, claims)
    assert verify(db, token, keys.jwks(), when=NOW - 0.001) == claims
    when = at(NOW) - timedelta(microseconds=1)
    row = db.execute(VERIFY, [token, Jsonb(keys.jwks()), ISS, AUD, when, 0]).fetchone()
    assert row == (claims,)
