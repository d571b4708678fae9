"""Bearer-token authentication: a JWT verified with joserfc becomes a :class:`Principal`.

The verifier accepts only the configured algorithms (``none`` and unlisted ones are refused by
joserfc before any key is used), checks the signature against the issuer's JWKS (a file, or a
URL refetched once on an unknown ``kid``: :mod:`oam_gateway.auth.jwks`), and requires ``iss``,
``aud``, ``exp`` and ``sub`` (essential: a token without ``exp`` is refused) with ``nbf`` and
``iat`` checked under a small leeway; no claim may hold text the database cannot store (a lone
UTF-16 surrogate, U+0000). Every failure is a :class:`TokenRejected`, which the app answers
with 401. Verified tokens are remembered until they expire
(:class:`~oam_gateway.auth.token_cache.VerifiedTokenCache`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jwt import JWTClaimsRegistry
from oracleagentmemory.errors import InvalidArgumentError

from oam_gateway.auth.jwks import FileKeys, KeySource, RemoteKeys
from oam_gateway.auth.token_cache import VerifiedTokenCache
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.tenancy.oracle_tenant import database_user_name
from oam_gateway.tenancy.principal import Principal
from oam_gateway.tenancy.unstorable_text import describe, unstorable_character

__all__ = ["BEARER_PREFIX", "TokenRejected", "TokenVerifier", "UnknownSigningKey"]

BEARER_PREFIX = "bearer "


class TokenRejected(Exception):
    """The request carries no acceptable bearer token.

    ``error`` is the RFC 6750 error code for ``WWW-Authenticate`` (``None`` when the request
    carried no credentials at all); ``description`` says why, without echoing the token.
    """

    def __init__(self, description: str, *, error: str | None = "invalid_token") -> None:
        super().__init__(description)
        self.description = description
        self.error = error


class UnknownSigningKey(TokenRejected):
    """The token names (or needs) a key the verifier does not hold: worth one key refetch."""


def _key_source(settings: GatewaySettings) -> KeySource:
    """The key source the settings name: the JWKS file, else the JWKS URL."""
    if settings.jwks_file is not None:
        return FileKeys(settings.jwks_file)
    assert settings.jwks_url is not None  # the settings require one of them
    return RemoteKeys(settings.jwks_url, min_refetch_seconds=settings.jwks_refetch_seconds)


class TokenVerifier:
    """Verifies bearer tokens for one issuer and audience."""

    def __init__(self, keys: KeySource, settings: GatewaySettings) -> None:
        self._keys = keys
        self._algorithms: Sequence[str] = settings.effective_algorithms
        self._max_bytes = settings.max_token_bytes
        self._tenants = settings.tenant_settings()
        self._tenant_claim = settings.tenant_claim
        self._scope_claim = settings.scope_claim
        self._user_claim = settings.user_claim
        self._groups_claim = settings.groups_claim
        self._token_type = _media_type(settings.required_token_type)
        self._cache = VerifiedTokenCache(settings.token_cache_size)
        self._registry = JWTClaimsRegistry(
            leeway=settings.leeway_seconds,
            iss={"essential": True, "value": settings.issuer},
            aud={"essential": True, "value": settings.audience},
            exp={"essential": True},
            sub={"essential": True},
        )

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> TokenVerifier:
        """A verifier with the keys the settings name."""
        return cls(_key_source(settings), settings)

    async def verify_header(self, authorization: str | None) -> Principal:
        """The principal of an ``Authorization`` header value; :class:`TokenRejected` if none."""
        if authorization is None or not authorization.strip():
            raise TokenRejected("a bearer token is required", error=None)
        if not authorization[: len(BEARER_PREFIX)].lower() == BEARER_PREFIX:
            raise TokenRejected("the Authorization header must use the Bearer scheme")
        token = authorization[len(BEARER_PREFIX):].strip()
        if not token or " " in token:
            raise TokenRejected("the Authorization header is malformed")
        return await self.verify(token)

    async def verify(self, token: str) -> Principal:
        """The principal of a compact JWS ``token``; :class:`TokenRejected` when it fails."""
        if len(token) > self._max_bytes:
            raise TokenRejected("the token is too large")
        cached = self._cache.get(token)
        if cached is not None:
            return cached
        try:
            principal = self._verify_with(await self._keys.current(), token)
        except UnknownSigningKey:
            fresher = await self._keys.refreshed()
            if fresher is None:
                raise
            self._cache.clear()  # keys may have been withdrawn: verify everything again
            principal = self._verify_with(fresher, token)
        self._cache.put(token, principal)
        return principal

    def _verify_with(self, keys: KeySet, token: str) -> Principal:
        try:
            decoded = jwt.decode(token, keys, algorithms=self._algorithms)
            self._registry.validate(decoded.claims)
            self._check_type(decoded.header.get("typ"))
        except InvalidKeyIdError as error:
            raise UnknownSigningKey(_describe(error)) from error
        except JoseError as error:
            raise TokenRejected(_describe(error)) from error
        except (ValueError, TypeError, KeyError) as error:
            raise TokenRejected("the token is malformed") from error
        character = unstorable_character(decoded.claims)
        if character is not None:  # a claim becomes a key: of the rate limit, of the database
            raise TokenRejected(f"the token's claims hold {describe(character)}")
        return self._principal(decoded.claims, token)

    def _check_type(self, typ: object) -> None:
        if self._token_type is None:
            return
        if not isinstance(typ, str) or _media_type(typ) != self._token_type:
            raise TokenRejected(f"the token is not an access token (typ must be "
                                f"{self._token_type.removeprefix('application/')!r})")

    def _principal(self, claims: dict[str, Any], token: str) -> Principal:
        user = claims.get(self._user_claim)
        if not isinstance(user, str) or not user:
            raise TokenRejected(f"the {self._user_claim!r} claim must be a non-empty string")
        groups = claims.get(self._groups_claim, [])
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise TokenRejected(f"the {self._groups_claim!r} claim must be a list of strings")
        expires_at = claims["exp"]
        if not isinstance(expires_at, int):
            raise TokenRejected("the 'exp' claim must be an integer")
        tenant = self._tenant_of(claims)
        namespace = self._tenants[tenant].identity_provider
        vouched = self._tenants[tenant].end_user_mode != "local"
        name = f"{namespace}:{user}" if namespace and vouched else user
        if self._tenants[tenant].oracle is not None:  # the name the Oracle database gives
            try:
                name = database_user_name(self._tenants[tenant], user)
            except InvalidArgumentError as error:
                raise TokenRejected(f"the {self._user_claim!r} claim names no Oracle end "
                                    "user") from error
        return Principal(user_name=name, groups=tuple(groups), tenant=tenant,
                         expires_at=expires_at, subject=user,
                         scopes=self._scopes(claims.get(self._scope_claim)), token=token)

    def _tenant_of(self, claims: dict[str, Any]) -> str:
        if self._tenant_claim is None:
            [only] = self._tenants
            return only
        tenant = claims.get(self._tenant_claim)
        if not isinstance(tenant, str) or tenant not in self._tenants:
            raise TokenRejected(f"the {self._tenant_claim!r} claim must name a tenant of this "
                                "gateway")
        return tenant

    def _scopes(self, value: object) -> frozenset[str]:
        if value is None:
            return frozenset()
        if isinstance(value, str):
            return frozenset(value.split())
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return frozenset(value)
        raise TokenRejected(f"the {self._scope_claim!r} claim must be a string or a list of "
                            "strings")


def _media_type(typ: str | None) -> str | None:
    """``typ`` as a full media type in lower case (RFC 7515 §4.1.9: ``application/`` may be
    omitted)."""
    if typ is None:
        return None
    lowered = typ.strip().lower()
    return lowered if "/" in lowered else f"application/{lowered}"


def _describe(error: JoseError) -> str:
    """A short reason for ``WWW-Authenticate``: the error's class of failure, no token text."""
    name = type(error).__name__
    reasons = {
        "ExpiredTokenError": "the token has expired",
        "MissingClaimError": "the token lacks a required claim",
        "BadSignatureError": "the token's signature does not verify",
        "UnsupportedAlgorithmError": "the token's algorithm is not allowed",
        "InvalidKeyIdError": "the token's signing key is unknown",
    }
    if name in reasons:
        return reasons[name]
    if name == "InvalidClaimError":  # joserfc names the claim ("Invalid claim: 'aud'"), no value
        return str(getattr(error, "description", "")) or "a claim of the token is invalid"
    return "the token is not acceptable"
