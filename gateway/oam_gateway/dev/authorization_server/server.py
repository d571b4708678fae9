"""The development authorization server: Authlib's ``AuthorizationServer`` over Starlette.

It signs in the demo users of ``oam-gateway dev`` (no passwords: the person picks one on the
sign-in page) and issues what ``oam-gateway token`` mints: RS256 access tokens of the dev
issuer's key with ``iss``, ``aud``, ``sub``, ``groups``, ``scope``, ``iat``, ``nbf`` and
``exp``, so the gateway and the database verify them as any other. Development only.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from authlib.oauth2 import AuthorizationServer  # type: ignore[import-untyped]
from authlib.oauth2.rfc6749 import InvalidScopeError  # type: ignore[import-untyped]
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata  # type: ignore[import-untyped]
from authlib.oauth2.rfc9207 import (  # type: ignore[import-untyped]
    AuthorizationServerMetadata as IssuerParameterMetadata,
)
from authlib.oidc.discovery import OpenIDProviderMetadata  # type: ignore[import-untyped]
from oracleagentmemory.devissuer import DevIssuer
from starlette.responses import JSONResponse, RedirectResponse, Response

from oam_gateway.dev.authorization_server.grants import (
    AuthorizationCodeGrant,
    IssuerInRedirect,
    OpenIDCode,
    RefreshTokenGrant,
    S256CodeChallenge,
)
from oam_gateway.dev.authorization_server.models import Client, DemoUser, RefreshToken
from oam_gateway.dev.authorization_server.registration import ClientRegistration
from oam_gateway.dev.authorization_server.store import REFRESH_TOKEN_SECONDS, MemoryStore

__all__ = ["ACCESS_TOKEN_SECONDS", "AUTHORIZE_PATH", "CONSOLE_CLIENT_ID", "CONSOLE_REDIRECT_PATH",
           "DEFAULT_SCOPE", "JWKS_PATH", "REGISTER_PATH", "SCOPES_SUPPORTED", "TOKEN_PATH",
           "DevAuthorizationServer"]

AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/oauth/token"
REGISTER_PATH = "/oauth/register"
JWKS_PATH = "/oauth/jwks"
CONSOLE_CLIENT_ID = "oam-console"
CONSOLE_REDIRECT_PATH = "/console/callback"
SCOPES_SUPPORTED = ("openid", "memory:read", "memory:write")
DEFAULT_SCOPE = "memory:read memory:write"
"""The scopes ``oam-gateway token`` grants, and so the built-in client's when a request names
none (its registered scopes but ``openid``)."""
ACCESS_TOKEN_SECONDS = 900


class DevAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    """OAuth 2.1 for the demo users: authorization code with PKCE (S256), refresh tokens
    with rotation, RFC 7591 registration, RFC 8414 and OpenID Connect discovery.

    ``issuer.issuer`` is the gateway's base URL; ``users`` maps each demo user to its groups.
    """

    def __init__(self, issuer: DevIssuer, audience: str,
                 users: Mapping[str, Sequence[str]]) -> None:
        super().__init__(scopes_supported=list(SCOPES_SUPPORTED))
        self.issuer = issuer
        self.audience = audience
        self.users = {name: DemoUser(name, tuple(groups)) for name, groups in users.items()}
        self.default_client_scope = " ".join(SCOPES_SUPPORTED)
        self.store = MemoryStore([Client(
            client_id=CONSOLE_CLIENT_ID, client_name="Oracle Agent Memory console",
            redirect_uris=(self.base + CONSOLE_REDIRECT_PATH,),
            scope=self.default_client_scope)])
        self.metadata = _metadata(self.base)
        self.openid_configuration = _openid_configuration(self.metadata)
        self.register_token_generator("default", self._generate_token)
        self.register_grant(AuthorizationCodeGrant, [
            S256CodeChallenge(), OpenIDCode(self.base, issuer.key, self.store)])
        self.register_grant(RefreshTokenGrant)
        self.register_endpoint(ClientRegistration)
        self.register_extension(IssuerInRedirect(self.base))

    @property
    def base(self) -> str:
        """The issuer identifier: the gateway's base URL (no trailing slash)."""
        return self.issuer.issuer

    def query_client(self, client_id: str) -> Client | None:
        return self.store.client(client_id)

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        """Keep the refresh token, in the family of the code or refresh token it came from."""
        if "refresh_token" not in token:
            return
        if request.refresh_token is not None:
            family = request.refresh_token.family
        else:
            family = secrets.token_urlsafe(16)
            request.authorization_code.family = family
        self.store.save_refresh_token(RefreshToken(
            token=token["refresh_token"], client_id=request.client.client_id,
            scope=token["scope"], user=request.user, family=family,
            expires_at=time.time() + REFRESH_TOKEN_SECONDS))

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No signals: nothing listens."""

    def create_oauth2_request(self, request: Any) -> Any:
        return request  # built by the endpoint (oauth2_request), which read the body

    def create_json_request(self, request: Any) -> Any:
        return request  # built by the endpoint (json_request)

    def handle_response(self, status: int, body: Any, headers: Sequence[tuple[str, str]]
                        ) -> Response:
        """A Starlette response; a redirect is a 303 (OAuth 2.1 §4.1.2: after a POST)."""
        values = dict(headers)
        if status in (302, 303):
            return RedirectResponse(values.pop("Location"), status_code=303, headers=values)
        if isinstance(body, dict):
            values.pop("Content-Type", None)
            return JSONResponse(body, status_code=status, headers=values)
        return Response(body, status_code=status, headers=values)

    def _generate_token(self, grant_type: str, client: Client, user: DemoUser,
                        scope: str | None = None, expires_in: int | None = None,
                        include_refresh_token: bool = True) -> dict[str, Any]:
        if not scope:  # the grants resolve a scope first; never widen an empty one
            raise InvalidScopeError()
        granted = scope
        token: dict[str, Any] = {
            "token_type": "Bearer", "expires_in": ACCESS_TOKEN_SECONDS, "scope": granted,
            "access_token": self.issuer.token(
                user.name, audience=self.audience, groups=user.groups,
                lifetime_seconds=ACCESS_TOKEN_SECONDS, scope=granted)}
        if include_refresh_token:
            token["refresh_token"] = secrets.token_urlsafe(48)
        return token


def _metadata(base: str) -> dict[str, Any]:
    """The RFC 8414 document (validated by Authlib)."""
    document = AuthorizationServerMetadata({
        "issuer": base,
        "authorization_endpoint": base + AUTHORIZE_PATH,
        "token_endpoint": base + TOKEN_PATH,
        "registration_endpoint": base + REGISTER_PATH,
        "jwks_uri": base + JWKS_PATH,
        "scopes_supported": list(SCOPES_SUPPORTED),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
        "service_documentation": base + "/docs",
    })
    document.validate(metadata_classes=[IssuerParameterMetadata])
    return dict(document)


def _openid_configuration(metadata: dict[str, Any]) -> dict[str, Any]:
    """The OpenID Connect discovery document: the RFC 8414 one and the OIDC fields."""
    document = OpenIDProviderMetadata({
        **metadata,
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "claims_supported": ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce",
                             "preferred_username", "groups"],
    })
    document.validate()
    return dict(document)
