"""Server-side console sessions and the sign-ins under way.

The browser holds only a random session id (in an HttpOnly cookie); the access token and the
session's CSRF token stay here, keyed by a hash of the id. A session lives at most
:data:`SESSION_LIFETIME_SECONDS`, and no longer than its access token verifies
and sign-out deletes it, so a copied cookie stops working at once. A sign-in under way
(:class:`PendingSignIn`) lives in its browser's sign-in cookie, signed by this process
(:class:`SignIns`), for at most :data:`SIGN_IN_SECONDS`, and is taken once.

The stores are in process memory: replicas behind a load balancer need sticky sessions.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field

from cachetools import TTLCache

__all__ = ["MAX_SESSIONS", "SESSION_LIFETIME_SECONDS", "SIGN_IN_SECONDS", "ConsoleSession",
           "PendingSignIn", "SessionStore", "SignIns"]

SESSION_LIFETIME_SECONDS = 8 * 3600
"""The longest a console session lasts, however it is used."""
SIGN_IN_SECONDS = 600
"""How long a browser has to come back from the identity provider."""
MAX_SESSIONS = 10_000
"""Sessions (and sign-ins taken) kept at most; the oldest make way for new ones."""
_MAX_COOKIE_CHARS = 2048


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
    """A sign-in sent to the identity provider: its tenant, the OAuth ``state`` it sent, what
    the callback needs to finish it, and when it expires (seconds since the epoch)."""

    tenant: str
    state: str
    code_verifier: str = field(repr=False)
    nonce: str = field(repr=False)
    expires: int


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


class SignIns:
    """Sign-ins under way, kept by the browser that started each: the sign-in cookie holds the
    :class:`PendingSignIn` itself, signed with this process's key (HMAC-SHA256), so the server
    stores nothing when a sign-in starts and no number of starts can push out another
    browser's. The callback takes a sign-in only with its cookie and the ``state`` it holds (a
    callback opened in another browser has neither: login CSRF), before it expires, and once:
    the states taken are remembered until they expire (at most ``max_taken``, the oldest
    forgotten first, and then a replayed code still meets the provider's single use)."""

    def __init__(self, seconds: int = SIGN_IN_SECONDS, max_taken: int = MAX_SESSIONS,
                 key: bytes | None = None) -> None:
        self._seconds = seconds
        self._key = key or secrets.token_bytes(32)
        self._taken: TTLCache[str, bool] = TTLCache(max_taken, seconds)

    def start(self, tenant: str, code_verifier: str, nonce: str) -> tuple[PendingSignIn, str]:
        """A new sign-in (its ``state`` to send to the identity provider) and the value for
        its browser's sign-in cookie."""
        pending = PendingSignIn(tenant, secrets.token_urlsafe(32), code_verifier, nonce,
                                int(time.time()) + self._seconds)
        payload = _b64(json.dumps([pending.tenant, pending.state, pending.code_verifier,
                                   pending.nonce, pending.expires],
                                  separators=(",", ":")).encode())
        return pending, f"{payload}.{self._mac(payload)}"

    def take(self, state: str | None, cookie: str | None) -> PendingSignIn | None:
        """The sign-in ``cookie`` holds when it is this process's, unexpired, untaken and sent
        ``state``; ``None`` otherwise."""
        if not state or not cookie or len(state) > 128 or len(cookie) > _MAX_COOKIE_CHARS:
            return None
        payload, _, mac = cookie.partition(".")
        if not hmac.compare_digest(mac.encode(), self._mac(payload).encode()):
            return None
        try:
            tenant, sent, code_verifier, nonce, expires = json.loads(
                base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            pending = PendingSignIn(str(tenant), str(sent), str(code_verifier), str(nonce),
                                    int(expires))
        except (ValueError, TypeError):
            return None
        if (pending.expires < time.time()
                or not hmac.compare_digest(state.encode(), pending.state.encode())):
            return None
        taken = _key(pending.state)
        if taken in self._taken:
            return None
        self._taken[taken] = True
        return pending

    def _mac(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
