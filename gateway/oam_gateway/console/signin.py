"""Signing a person in with their identity provider: OpenID Connect discovery, then the
authorization code flow with PKCE (S256), with Authlib's OAuth 2 client.

:class:`IdentityProvider` is one tenant's provider as the console's client sees it: it reads
the provider's metadata once (``{issuer}/.well-known/openid-configuration``, whose ``issuer``
must be the configured one exactly), builds the authorization URL for a sign-in and exchanges
the code the browser brings back for tokens. A confidential client (a ``client_secret``)
authenticates with HTTP Basic, a public one with PKCE alone.
"""

from __future__ import annotations

from typing import Any

import httpx2
from authlib.common.security import is_secure_transport  # type: ignore[import-untyped]
from authlib.integrations.base_client.errors import (  # type: ignore[import-untyped]
    OAuthError,
)
from authlib.integrations.httpx_client import AsyncOAuth2Client  # type: ignore[import-untyped]

__all__ = ["CONSOLE_SCOPE", "DISCOVERY_PATH", "IdentityProvider", "SignInFailed"]

DISCOVERY_PATH = "/.well-known/openid-configuration"
CONSOLE_SCOPE = "openid memory:read memory:write"
"""What the console asks for: the person's identity and their memory, to read and change."""
_TIMEOUT_SECONDS = 10.0


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

    def _client(self, redirect_uri: str) -> Any:
        return AsyncOAuth2Client(
            client_id=self.client_id, client_secret=self._client_secret,
            token_endpoint_auth_method="client_secret_basic" if self._client_secret else "none",
            code_challenge_method="S256", scope=self._scope, redirect_uri=redirect_uri,
            timeout=_TIMEOUT_SECONDS)

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

    async def authorization_url(self, redirect_uri: str, state: str, code_verifier: str,
                                nonce: str) -> str:
        """Where to send the browser to sign in (the code's challenge derived from
        ``code_verifier``)."""
        endpoint = (await self.metadata())["authorization_endpoint"]
        async with self._client(redirect_uri) as client:
            url, _ = client.create_authorization_url(endpoint, state=state,
                                                     code_verifier=code_verifier, nonce=nonce)
        return str(url)

    async def exchange(self, redirect_uri: str, code: str, code_verifier: str) -> str:
        """The access token for the authorization ``code`` the browser brought back."""
        endpoint = (await self.metadata())["token_endpoint"]
        try:
            async with self._client(redirect_uri) as client:
                token = await client.fetch_token(endpoint, grant_type="authorization_code",
                                                 code=code, code_verifier=code_verifier)
        except OAuthError as error:
            raise SignInFailed(f"the identity provider refused the sign-in "
                               f"({error.error})") from None
        except (httpx2.HTTPError, ValueError) as error:
            raise SignInFailed(f"the identity provider's token endpoint could not be asked "
                               f"({type(error).__name__})") from None
        access_token = token.get("access_token")
        if not isinstance(access_token, str) or not access_token:
            raise SignInFailed("the identity provider answered no access token")
        return access_token


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
