"""Server-side console sessions and the sign-ins under way.

The browser holds only a random session id (in an HttpOnly cookie); the access token and the
session's CSRF token stay here, keyed by a hash of the id. A session lives at most
:data:`SESSION_LIFETIME_SECONDS`, and no longer than its access token verifies
and sign-out deletes it, so a copied cookie stops working at once. A sign-in under way
(:class:`PendingSignIn`) is kept under its OAuth ``state`` for at most
:data:`SIGN_IN_SECONDS` and is taken once.

The stores are in process memory: replicas behind a load balancer need sticky sessions.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from cachetools import TTLCache

__all__ = ["MAX_SESSIONS", "SESSION_LIFETIME_SECONDS", "SIGN_IN_SECONDS", "ConsoleSession",
           "PendingSignIn", "PendingSignIns", "SessionStore"]

SESSION_LIFETIME_SECONDS = 8 * 3600
"""The longest a console session lasts, however it is used."""
SIGN_IN_SECONDS = 600
"""How long a browser has to come back from the identity provider."""
MAX_SESSIONS = 10_000
"""Sessions (and sign-ins under way) kept at most; the oldest make way for new ones."""


@dataclass(frozen=True)
class ConsoleSession:
    """A signed-in person: their tenant, access token and the CSRF token of their forms."""

    tenant: str
    access_token: str = field(repr=False)
    csrf_token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)

    def csrf_matches(self, given: str | None) -> bool:
        """Whether ``given`` (a form's hidden field) is this session's CSRF token."""
        return given is not None and hmac.compare_digest(given.encode(),
                                                         self.csrf_token.encode())


@dataclass(frozen=True)
class PendingSignIn:
    """A sign-in sent to the identity provider: what the callback needs to finish it, and the
    browser that started it (a hash of the value its sign-in cookie holds)."""

    tenant: str
    code_verifier: str = field(repr=False)
    nonce: str = field(repr=False)
    browser: str = field(repr=False)

    @classmethod
    def started(cls, tenant: str, code_verifier: str, nonce: str) -> tuple[PendingSignIn, str]:
        """A new sign-in and the value for its browser's sign-in cookie."""
        binding = secrets.token_urlsafe(32)
        return cls(tenant, code_verifier, nonce, _key(binding)), binding

    def started_in(self, binding: str | None) -> bool:
        """Whether ``binding`` (the callback's sign-in cookie) is the one this sign-in set:
        a callback opened in another browser (a victim sent an attacker's link) is not."""
        return binding is not None and hmac.compare_digest(_key(binding), self.browser)


def _key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class SessionStore:
    """Console sessions by session id (the id itself is never stored)."""

    def __init__(self, lifetime_seconds: float = SESSION_LIFETIME_SECONDS,
                 max_sessions: int = MAX_SESSIONS) -> None:
        self._sessions: TTLCache[str, ConsoleSession] = TTLCache(max_sessions, lifetime_seconds)

    def open(self, session: ConsoleSession) -> str:
        """Keep ``session``; returns its new id (for the cookie)."""
        session_id = secrets.token_urlsafe(32)
        self._sessions[_key(session_id)] = session
        return session_id

    def get(self, session_id: str | None) -> ConsoleSession | None:
        """The live session ``session_id`` names, or ``None``."""
        if not session_id or len(session_id) > 128:
            return None
        return self._sessions.get(_key(session_id))

    def close(self, session_id: str | None) -> None:
        """End the session ``session_id`` (nothing when there is none)."""
        if session_id:
            self._sessions.pop(_key(session_id), None)


class PendingSignIns:
    """Sign-ins under way by their OAuth ``state``, each taken at most once."""

    def __init__(self, seconds: float = SIGN_IN_SECONDS, max_pending: int = MAX_SESSIONS) -> None:
        self._pending: TTLCache[str, PendingSignIn] = TTLCache(max_pending, seconds)

    def start(self, pending: PendingSignIn) -> str:
        """Keep ``pending``; returns the ``state`` to send to the identity provider."""
        state = secrets.token_urlsafe(32)
        self._pending[_key(state)] = pending
        return state

    def take(self, state: str | None) -> PendingSignIn | None:
        """The sign-in ``state`` names, removed; ``None`` when unknown, used or expired."""
        if not state or len(state) > 128:
            return None
        return self._pending.pop(_key(state), None)
