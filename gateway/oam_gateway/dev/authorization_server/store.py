"""The development authorization server's memory: clients, codes, refresh tokens, sign-ins.

Everything lives in this process only (dev mode): a restart forgets every registered client
and refresh token, and clients register again (the console's client is built in). Each map is
bounded (``cachetools``), and codes and sign-ins expire on their own.
"""

from __future__ import annotations

from cachetools import LRUCache, TTLCache

from oam_gateway.dev.authorization_server.models import (
    AuthorizationCode,
    Client,
    RefreshToken,
    SignIn,
)

__all__ = ["CODE_SECONDS", "REFRESH_TOKEN_SECONDS", "SIGN_IN_SECONDS", "MemoryStore"]

CODE_SECONDS = 300
"""How long an authorization code can be exchanged (RFC 6749 recommends at most 10 minutes)."""
SIGN_IN_SECONDS = 600
"""How long the sign-in page's form can be answered."""
REFRESH_TOKEN_SECONDS = 86_400
"""How long a refresh token can be used (once)."""
_MAX_ENTRIES = 10_000


class MemoryStore:
    """Clients (the built-in ones never evicted), codes, refresh tokens and pending sign-ins."""

    def __init__(self, built_in: list[Client]) -> None:
        self._built_in = {c.client_id: c for c in built_in}
        self._registered: LRUCache[str, Client] = LRUCache(maxsize=1_000)
        self._codes: TTLCache[str, AuthorizationCode] = TTLCache(_MAX_ENTRIES, CODE_SECONDS)
        self._refresh: TTLCache[str, RefreshToken] = TTLCache(_MAX_ENTRIES,
                                                               REFRESH_TOKEN_SECONDS)
        self._sign_ins: TTLCache[str, SignIn] = TTLCache(_MAX_ENTRIES, SIGN_IN_SECONDS)

    def client(self, client_id: str) -> Client | None:
        """The client ``client_id``, or ``None``."""
        return self._built_in.get(client_id) or self._registered.get(client_id)

    def register(self, client: Client) -> None:
        """Keep a dynamically registered client."""
        self._registered[client.client_id] = client

    def save_code(self, code: AuthorizationCode) -> None:
        self._codes[code.code] = code

    def code(self, code: str) -> AuthorizationCode | None:
        """An issued code (also one already used: the grant refuses it and revokes its tokens)."""
        return self._codes.get(code)

    def nonce_seen(self, client_id: str, nonce: str) -> bool:
        """Whether a live code of ``client_id`` already carries ``nonce`` (a replayed request)."""
        return any(c.client_id == client_id and c.nonce == nonce for c in self._codes.values())

    def save_refresh_token(self, token: RefreshToken) -> None:
        self._refresh[token.token] = token

    def refresh_token(self, token: str) -> RefreshToken | None:
        return self._refresh.get(token)

    def revoke_family(self, family: str) -> None:
        """Revoke every refresh token descended from one code exchange."""
        for token in list(self._refresh.values()):
            if token.family == family:
                token.revoked = True

    def add_sign_in(self, sign_in: SignIn) -> None:
        self._sign_ins[sign_in.request_id] = sign_in

    def take_sign_in(self, request_id: str) -> SignIn | None:
        """The pending sign-in ``request_id``, removed (each form is answered once)."""
        return self._sign_ins.pop(request_id, None)
