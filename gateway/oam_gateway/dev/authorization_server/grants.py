"""Authlib's grants and extensions, configured for the development authorization server.

- :class:`AuthorizationCodeGrant`: public clients only (``none``), codes single-use and bound
  to their client, redirect URI and user; a replayed code revokes the refresh tokens its
  exchange started (RFC 9700 §4.5);
- :class:`S256CodeChallenge`: PKCE required, ``S256`` only (a missing challenge, a missing
  method, whose RFC 7636 default is ``plain``, and ``plain`` are ``invalid_request``);
- :class:`RefreshTokenGrant`: every refresh rotates the token; a reused one is refused and
  revokes its family;
- :class:`OpenIDCode`: with scope ``openid``, an ID token for the client (``aud``), ``nonce``
  echoed;
- :class:`IssuerInRedirect`: every redirect to the client names the issuer (RFC 9207 ``iss``),
  so a client talking to several servers cannot be mixed up.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from authlib.common.urls import add_params_to_uri  # type: ignore[import-untyped]
from authlib.oauth2.rfc6749 import InvalidRequestError, grants  # type: ignore[import-untyped]
from authlib.oauth2.rfc7636 import CodeChallenge  # type: ignore[import-untyped]
from authlib.oauth2.rfc9207 import IssuerParameter  # type: ignore[import-untyped]
from authlib.oidc.core import UserInfo  # type: ignore[import-untyped]
from authlib.oidc.core import grants as oidc_grants
from joserfc.jwk import RSAKey
from starlette.responses import Response

from oam_gateway.dev.authorization_server.models import (
    AuthorizationCode,
    Client,
    DemoUser,
    RefreshToken,
)
from oam_gateway.dev.authorization_server.store import CODE_SECONDS, MemoryStore

if TYPE_CHECKING:
    from oam_gateway.dev.authorization_server.server import DevAuthorizationServer

__all__ = ["AuthorizationCodeGrant", "IssuerInRedirect", "OpenIDCode", "RefreshTokenGrant",
           "S256CodeChallenge"]

_PUBLIC = ["none"]


def _store(grant: Any) -> MemoryStore:
    server: DevAuthorizationServer = grant.server
    return server.store


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    """Authorization code for public clients (PKCE is added by :class:`S256CodeChallenge`)."""

    TOKEN_ENDPOINT_AUTH_METHODS = _PUBLIC

    def save_authorization_code(self, code: str, request: Any) -> None:
        data = request.payload.data
        now = time.time()
        _store(self).save_code(AuthorizationCode(
            code=code, client_id=request.client.client_id,
            redirect_uri=request.payload.redirect_uri or "", scope=request.scope,
            user=request.user, code_challenge=data["code_challenge"],
            code_challenge_method=data["code_challenge_method"], nonce=data.get("nonce"),
            auth_time=int(now), expires_at=now + CODE_SECONDS))

    def query_authorization_code(self, code: str, client: Client) -> AuthorizationCode | None:
        found = _store(self).code(code)
        if found is None or found.client_id != client.client_id or found.is_expired():
            return None
        if found.used:  # replayed: whatever its first exchange got is withdrawn too
            if found.family:
                _store(self).revoke_family(found.family)
            return None
        return found

    def delete_authorization_code(self, authorization_code: AuthorizationCode) -> None:
        authorization_code.used = True  # kept until it expires, to recognise a replay

    def authenticate_user(self, authorization_code: AuthorizationCode) -> DemoUser:
        return authorization_code.user


class S256CodeChallenge(CodeChallenge):  # type: ignore[misc]
    """PKCE, required, with the ``S256`` method only."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def __init__(self) -> None:
        super().__init__(required=True)

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send a 'code_challenge' (method S256)")
        if not data.get("code_challenge_method"):
            raise InvalidRequestError("'code_challenge_method' is required and must be S256 "
                                      "(its default, plain, is not supported)")
        super().validate_code_challenge(grant, redirect_uri)


class RefreshTokenGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
    """Refresh with rotation: each refresh token works once."""

    TOKEN_ENDPOINT_AUTH_METHODS = _PUBLIC
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> RefreshToken | None:
        found = _store(self).refresh_token(refresh_token)
        if found is None or found.is_expired():
            return None
        if found.revoked:  # reused: someone else may hold the family's newer token
            _store(self).revoke_family(found.family)
            return None
        return found

    def authenticate_user(self, refresh_token: RefreshToken) -> DemoUser:
        return refresh_token.user

    def revoke_old_credential(self, refresh_token: RefreshToken) -> None:
        refresh_token.revoked = True


class OpenIDCode(oidc_grants.OpenIDCode):  # type: ignore[misc]
    """The ID token of a code exchange with scope ``openid``: signed by the issuer's key."""

    def __init__(self, issuer: str, key: RSAKey, store: MemoryStore) -> None:
        super().__init__(require_nonce=False)
        self._issuer = issuer
        self._key = key
        self._store = store

    def exists_nonce(self, nonce: str, request: Any) -> bool:
        return self._store.nonce_seen(request.payload.client_id, nonce)

    def resolve_client_private_key(self, client: Client) -> RSAKey:
        return self._key

    def get_client_algorithm(self, client: Client) -> str:
        return "RS256"

    def get_encode_header(self, client: Client) -> dict[str, str]:
        return {"alg": "RS256", "typ": "JWT", "kid": str(self._key.kid)}

    def get_client_claims(self, client: Client) -> dict[str, Any]:
        return {"iss": self._issuer, "aud": client.client_id}

    def generate_user_info(self, user: DemoUser, scope: str) -> Any:
        return UserInfo(sub=user.name, preferred_username=user.name, groups=list(user.groups))


class IssuerInRedirect(IssuerParameter):  # type: ignore[misc]
    """Authlib's RFC 9207 extension, for Starlette's responses (Authlib's reads a Flask
    response's ``location``)."""

    def __init__(self, issuer: str) -> None:
        self._issuer = issuer

    def get_issuer(self) -> str:
        return self._issuer

    def add_issuer_parameter(self, authorization_server: Any, response: Response) -> None:
        location = response.headers.get("location")
        if location:
            response.headers["location"] = add_params_to_uri(location, {"iss": self._issuer})
