"""What the development authorization server keeps: clients, codes, refresh tokens, sign-ins.

Each class implements the Authlib model mixin its grants read (``ClientMixin``,
``AuthorizationCodeMixin``, ``TokenMixin``); all of them live in memory only
(:class:`~oam_gateway.dev.authorization_server.store.MemoryStore`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from authlib.oauth2.rfc6749 import scope_to_list  # type: ignore[import-untyped]

__all__ = ["AuthorizationCode", "Client", "DemoUser", "RefreshToken", "SignIn"]


@dataclass(frozen=True)
class DemoUser:
    """A demo user of the dev state (``users.json``): the ``sub`` and ``groups`` of its tokens."""

    name: str
    groups: tuple[str, ...]


@dataclass(frozen=True)
class Client:
    """A public OAuth client (no secret; PKCE is its proof): Authlib's ``ClientMixin``."""

    client_id: str
    redirect_uris: tuple[str, ...]
    scope: str
    client_name: str = ""
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    response_types: tuple[str, ...] = ("code",)
    token_endpoint_auth_method: str = "none"
    client_id_issued_at: int = field(default_factory=lambda: int(time.time()))

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        """The only redirect URI, when there is one (else the request must name it)."""
        return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str | None:
        """The requested scopes this client may have; when none is asked, its registered ones
        but ``openid`` (an ID token is only for a client that asks for one). ``None`` (Authlib
        answers ``invalid_scope``) when that leaves nothing: an empty grant must never fall
        back to the default scopes, which a client registered for less would then get."""
        allowed = scope_to_list(self.scope)
        if not scope:
            granted = [s for s in allowed if s != "openid"]
        else:
            granted = [s for s in scope_to_list(scope) if s in allowed]
        return " ".join(granted) or None

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        """Exact match with a registered URI (OAuth 2.1: no partial or pattern matching)."""
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return False  # a public client has no secret

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.token_endpoint_auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type in self.response_types

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class AuthorizationCode:
    """An issued code: bound to its client, redirect URI, user and PKCE challenge; single use."""

    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user: DemoUser
    code_challenge: str
    code_challenge_method: str
    nonce: str | None
    auth_time: int
    expires_at: float
    used: bool = False
    family: str = ""
    """The refresh-token family its exchange started (revoked if the code is replayed)."""

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int:
        return self.auth_time

    def get_acr(self) -> None:
        return None

    def get_amr(self) -> None:
        return None

    def is_expired(self) -> bool:
        return time.time() >= self.expires_at


@dataclass
class RefreshToken:
    """A refresh token: used once (rotation); a reused one revokes its whole family."""

    token: str
    client_id: str
    scope: str
    user: DemoUser
    family: str
    expires_at: float
    revoked: bool = False

    def check_client(self, client: Client) -> bool:
        return client.client_id == self.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return max(0, int(self.expires_at - time.time()))

    def is_expired(self) -> bool:
        return time.time() >= self.expires_at

    def is_revoked(self) -> bool:
        return self.revoked


@dataclass(frozen=True)
class SignIn:
    """An authorization request shown on the sign-in page, waiting for the person's choice."""

    request_id: str
    csrf_token: str
    query: tuple[tuple[str, str], ...]
    """The validated authorization request's parameters, kept here (never re-posted)."""
    expires_at: float
