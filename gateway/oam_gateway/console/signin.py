"""Signing a person in with their identity provider: OpenID Connect discovery, then the
authorization code flow with PKCE (S256), with Authlib's OAuth 2 client.

:class:`IdentityProvider` is one tenant's provider as the console's client sees it: it reads
the provider's metadata once (``{issuer}/.well-known/openid-configuration``, whose ``issuer``
must be the configured one exactly), builds the authorization URL for a sign-in and exchanges
the code the browser brings back for tokens. The ID token must verify with the provider's keys
(``jwks_uri``) and carry this issuer, this client as audience, a lifetime and the sign-in's
``nonce``. A confidential client (a ``client_secret``) authenticates with HTTP Basic, a public
one with PKCE alone.

Starting a sign-in builds no HTTP client: the authorization URL is composed with Authlib's
``prepare_grant_uri`` and ``create_s256_code_challenge`` (microseconds), so the open
``/console/sign-in`` costs no more than a page. The token exchange opens an Authlib client per
sign-in (it keeps the person's tokens, so none is shared between sign-ins) over one TLS context
per provider, built once: a fresh context, loading the CA bundle, took tens of milliseconds.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
from authlib.common.security import is_secure_transport  # type: ignore[import-untyped]
from authlib.integrations.base_client.errors import (  # type: ignore[import-untyped]
    OAuthError,
)
from authlib.integrations.httpx_client import AsyncOAuth2Client  # type: ignore[import-untyped]
from authlib.oauth2.rfc6749.parameters import (  # type: ignore[import-untyped]
    prepare_grant_uri,
)
from authlib.oauth2.rfc7636 import create_s256_code_challenge  # type: ignore[import-untyped]
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jwt import JWTClaimsRegistry

from oam_gateway.auth.jwks import KeysUnavailable, RemoteKeys

__all__ = ["CONSOLE_SCOPE", "DISCOVERY_PATH", "ID_TOKEN_ALGORITHMS", "IdentityProvider",
           "SignInFailed", "SignedIn"]

DISCOVERY_PATH = "/.well-known/openid-configuration"
CONSOLE_SCOPE = "openid memory:read memory:write"
"""What the console asks for: the person's identity and their memory, to read and change."""
ID_TOKEN_ALGORITHMS = ("RS256", "ES256", "EdDSA", "Ed25519")
"""The signatures an ID token may carry (never ``none`` or a shared secret)."""
_TIMEOUT_SECONDS = 10.0
_LEEWAY_SECONDS = 30


@dataclass(frozen=True)
class SignedIn:
    """What a finished sign-in yields: the access token and the verified ID token's claims."""

    access_token: str
    identity: dict[str, Any]


class SignInFailed(Exception):
    """The identity provider could not be asked, or refused the sign-in (the message says
    which, never with a token or secret)."""


class IdentityProvider:
    """One tenant's OpenID provider and the console's client there."""

    def __init__(self, issuer: str, client_id: str, client_secret: str | None = None,
                 scope: str = CONSOLE_SCOPE) -> None:
        self.issuer = issuer
        self.client_id = client_id
        self._client_secret = client_secret
        self._scope = scope
        self._metadata: dict[str, Any] | None = None
        self._keys: RemoteKeys | None = None
        self._tls: ssl.SSLContext | None = None

    def _client(self, redirect_uri: str) -> Any:
        if self._tls is None:  # httpx's own default trust, built once rather than per client
            self._tls = httpx.create_ssl_context()
        return AsyncOAuth2Client(
            client_id=self.client_id, client_secret=self._client_secret,
            token_endpoint_auth_method="client_secret_basic" if self._client_secret else "none",
            code_challenge_method="S256", scope=self._scope, redirect_uri=redirect_uri,
            timeout=_TIMEOUT_SECONDS, verify=self._tls)

    async def metadata(self) -> dict[str, Any]:
        """The provider's metadata (fetched once, then kept)."""
        if self._metadata is None:
            url = self.issuer.rstrip("/") + DISCOVERY_PATH
            try:
                async with httpx2.AsyncClient(timeout=_TIMEOUT_SECONDS) as client:
                    response = await client.get(url)
                response.raise_for_status()
                document = response.json()
            except (httpx2.HTTPError, ValueError) as error:
                raise SignInFailed(f"the identity provider's metadata at {url} could not be "
                                   f"read ({type(error).__name__})") from None
            self._metadata = _checked(document, self.issuer)
        return self._metadata

    async def answered_by_issuer(self, iss: str | None) -> bool:
        """Whether an authorization response's ``iss`` parameter (RFC 9207) names this
        provider: it must when the provider's metadata says it sends one, and may not name
        another (an answer mixed up with another provider's)."""
        if iss is None:
            return not (await self.metadata()).get(
                "authorization_response_iss_parameter_supported", False)
        return iss == self.issuer

    async def authorization_url(self, redirect_uri: str, state: str, code_verifier: str,
                                nonce: str) -> str:
        """Where to send the browser to sign in (the code's challenge derived from
        ``code_verifier``)."""
        endpoint = (await self.metadata())["authorization_endpoint"]
        return str(prepare_grant_uri(
            endpoint, self.client_id, "code", redirect_uri=redirect_uri, scope=self._scope,
            state=state, code_challenge=create_s256_code_challenge(code_verifier),
            code_challenge_method="S256", nonce=nonce))

    async def exchange(self, redirect_uri: str, code: str, code_verifier: str,
                       nonce: str) -> SignedIn:
        """The tokens for the authorization ``code`` the browser brought back to the sign-in
        that sent ``nonce``."""
        endpoint = (await self.metadata())["token_endpoint"]
        try:
            async with self._client(redirect_uri) as client:
                token = await client.fetch_token(endpoint, grant_type="authorization_code",
                                                 code=code, code_verifier=code_verifier)
        except OAuthError as error:
            raise SignInFailed(f"the identity provider refused the sign-in "
                               f"({error.error})") from None
        except (httpx.HTTPError, httpx2.HTTPError, ValueError) as error:
            raise SignInFailed(f"the identity provider's token endpoint could not be asked "
                               f"({type(error).__name__})") from None
        access_token = token.get("access_token")
        if not isinstance(access_token, str) or not access_token:
            raise SignInFailed("the identity provider answered no access token")
        id_token = token.get("id_token")
        if not isinstance(id_token, str) or not id_token:
            raise SignInFailed("the identity provider answered no ID token")
        return SignedIn(access_token, await self._identity(id_token, nonce))

    async def _identity(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The claims of ``id_token`` once it verified (signature, issuer, audience, lifetime,
        ``nonce``)."""
        if self._keys is None:
            jwks_uri = (await self.metadata()).get("jwks_uri")
            if not isinstance(jwks_uri, str) or not is_secure_transport(jwks_uri):
                raise SignInFailed("the identity provider's jwks_uri is missing or not https")
            self._keys = RemoteKeys(jwks_uri)
        registry = JWTClaimsRegistry(
            leeway=_LEEWAY_SECONDS, iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.client_id}, exp={"essential": True},
            sub={"essential": True}, nonce={"essential": True, "value": nonce})
        try:
            try:
                claims = _verified(id_token, await self._keys.current(), registry)
            except InvalidKeyIdError:
                fresher = await self._keys.refreshed()
                if fresher is None:
                    raise
                claims = _verified(id_token, fresher, registry)
        except KeysUnavailable as unavailable:
            raise SignInFailed(f"the identity provider's keys: {unavailable}") from None
        except (JoseError, ValueError) as error:
            raise SignInFailed(f"the ID token did not verify "
                               f"({getattr(error, 'error', type(error).__name__)})") from None
        return claims


def _verified(id_token: str, keys: KeySet, registry: JWTClaimsRegistry) -> dict[str, Any]:
    decoded = jwt.decode(id_token, keys, algorithms=list(ID_TOKEN_ALGORITHMS))
    registry.validate(decoded.claims)
    return dict(decoded.claims)


def _checked(document: Any, issuer: str) -> dict[str, Any]:
    """The discovery ``document`` when it is the configured issuer's and its endpoints are
    safe to send a person's browser and codes to."""
    if not isinstance(document, dict) or document.get("issuer") != issuer:
        raise SignInFailed(f"the identity provider's metadata does not name the issuer "
                           f"{issuer!r}")
    for name in ("authorization_endpoint", "token_endpoint"):
        endpoint = document.get(name)
        if not isinstance(endpoint, str) or not is_secure_transport(endpoint):
            raise SignInFailed(f"the identity provider's {name} is missing or not https")
    return document
