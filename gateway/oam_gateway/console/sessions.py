"""Server-side console sessions and the sign-ins under way, in this process or shared.

The browser holds only a random session id (in an HttpOnly cookie); the access token and the
session's CSRF token stay on the server, keyed by a hash of the id. A session lives at most
:data:`SESSION_LIFETIME_SECONDS`, and no longer than its access token verifies, and sign-out
deletes it, so a copied cookie stops working at once. A sign-in under way
(:class:`PendingSignIn`) lives in its browser's sign-in cookie, signed with the console's key
(:class:`SignIns`), for at most :data:`SIGN_IN_SECONDS`, and is taken once.

Where they are kept is a :class:`ConsoleState`: :class:`MemoryState` (this process: the
default, for one process) or :class:`RedisState` (a shared Redis, so that every replica
behind a load balancer sees each session, its sign-out and each sign-in taken). Replicas also
need one signing key (``console_cookie_secret``): without it each process signs with a random
key of its own, and a sign-in started on one replica fails at another's callback.

What a shared store holds is a hash of each session id (never the id) and the session sealed
with AES-256-GCM under a key derived (HKDF-SHA256) from the session id itself and the console
key: a copy of the store, even with the console key, opens no session without the browser's
cookie. A used sign-in is a hash of its ``state``. Every key expires with its session or
sign-in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from cachetools import TTLCache
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["MAX_SESSIONS", "SESSION_LIFETIME_SECONDS", "SIGN_IN_SECONDS", "ConsoleKeys",
           "ConsoleSession", "ConsoleState", "MemoryState", "PendingSignIn", "RedisState",
           "SessionStore", "SignIns", "StateUnavailable"]

SESSION_LIFETIME_SECONDS = 8 * 3600
"""The longest a console session lasts, however it is used."""
SIGN_IN_SECONDS = 600
"""How long a browser has to come back from the identity provider."""
MAX_SESSIONS = 10_000
"""Sessions (and sign-ins taken) kept at most in process memory; the oldest make way for new
ones (a shared store keeps every one until it expires)."""
_MAX_COOKIE_CHARS = 2048
_SESSION_PREFIX = "oam-console:session:"
_TAKEN_PREFIX = "oam-console:sign-in-taken:"


class StateUnavailable(Exception):
    """The shared session store did not answer (the console answers 503)."""


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


class ConsoleKeys:
    """The console's keys, derived (HKDF-SHA256) from one secret: the sign-in cookie's HMAC key
    and the salt of each session's sealing key. ``secret`` is the configured
    ``console_cookie_secret`` (the same in every replica); ``None`` makes a random one for this
    process (:attr:`shared` false)."""

    def __init__(self, secret: bytes | None = None) -> None:
        self.shared = secret is not None
        master = secret if secret is not None else secrets.token_bytes(32)
        self.sign_in = _hkdf(master, b"oam-console sign-in cookie v1")
        self.session_salt = _hkdf(master, b"oam-console session seal v1")

    def seal(self, session_id: str, plain: bytes) -> bytes:
        """``plain`` sealed for the session ``session_id`` (nonce and ciphertext)."""
        nonce = secrets.token_bytes(12)
        return nonce + self._aead(session_id).encrypt(nonce, plain, _AAD)

    def open(self, session_id: str, sealed: bytes) -> bytes | None:
        """What :meth:`seal` sealed for ``session_id``; ``None`` when it does not open."""
        try:
            return self._aead(session_id).decrypt(sealed[:12], sealed[12:], _AAD)
        except (InvalidTag, ValueError):
            return None

    def _aead(self, session_id: str) -> AESGCM:
        return AESGCM(HKDF(hashes.SHA256(), 32, self.session_salt,
                           b"oam-console session key v1").derive(session_id.encode()))


_AAD = b"oam-console session v1"


def _hkdf(secret: bytes, info: bytes) -> bytes:
    return HKDF(hashes.SHA256(), 32, None, info).derive(secret)


class ConsoleState(Protocol):
    """Where sessions and used sign-ins are kept (raises :class:`StateUnavailable` when it
    does not answer)."""

    async def put(self, key: str, value: bytes, seconds: int) -> None:
        """Keep ``value`` under ``key`` for ``seconds``."""

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or ``None``."""

    async def delete(self, key: str) -> None:
        """Forget ``key``."""

    async def add_once(self, key: str, seconds: int) -> bool:
        """Mark ``key`` for ``seconds``; ``False`` when it was already marked."""


class MemoryState:
    """This process's sessions and used sign-ins (at most ``max_entries`` of each)."""

    def __init__(self, max_entries: int = MAX_SESSIONS) -> None:
        self._values: TTLCache[str, bytes] = TTLCache(max_entries, SESSION_LIFETIME_SECONDS)
        self._marks: TTLCache[str, bool] = TTLCache(max_entries, SIGN_IN_SECONDS)

    async def put(self, key: str, value: bytes, seconds: int) -> None:
        self._values[key] = value

    async def get(self, key: str) -> bytes | None:
        return self._values.get(key)

    async def delete(self, key: str) -> None:
        self._values.pop(key, None)

    async def add_once(self, key: str, seconds: int) -> bool:
        if key in self._marks:
            return False
        self._marks[key] = True
        return True


class RedisState:
    """Sessions and used sign-ins in a shared Redis (``redis://`` or ``rediss://``), through
    ``coredis``: each key expires with what it holds, a used sign-in is ``SET NX`` (taken once
    across every replica). A command that fails or waits past ``timeout_seconds`` raises
    :class:`StateUnavailable`."""

    def __init__(self, uri: str, timeout_seconds: float) -> None:
        try:
            import coredis
            from coredis.exceptions import RedisError
        except ImportError as missing:  # pragma: no cover - the redis extra is not installed
            raise RuntimeError("console_session_store_uri names Redis, which needs coredis "
                               "(install the gateway's redis extra)") from missing
        self._none = coredis.PureToken.NX
        self._errors: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)
        self._redis: Any = coredis.Redis.from_url(
            uri, connect_timeout=timeout_seconds, stream_timeout=timeout_seconds,
            retry_policy=coredis.retry.NoRetryPolicy())

    async def _run(self, command: Any) -> Any:
        try:
            return await command
        except self._errors as error:
            raise StateUnavailable(f"the console's session store did not answer "
                                   f"({type(error).__name__})") from None

    async def put(self, key: str, value: bytes, seconds: int) -> None:
        await self._run(self._redis.set(key, value, ex=seconds))

    async def get(self, key: str) -> bytes | None:
        value = await self._run(self._redis.get(key))
        return value if isinstance(value, bytes) else None

    async def delete(self, key: str) -> None:
        await self._run(self._redis.delete([key]))

    async def add_once(self, key: str, seconds: int) -> bool:
        return bool(await self._run(self._redis.set(key, b"1", ex=seconds,
                                                    condition=self._none)))


def _key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class SessionStore:
    """Console sessions by session id (the id itself is never stored; each session is sealed
    with a key derived from its id, :meth:`ConsoleKeys.seal`)."""

    def __init__(self, state: ConsoleState, keys: ConsoleKeys,
                 lifetime_seconds: int = SESSION_LIFETIME_SECONDS) -> None:
        self._state = state
        self._keys = keys
        self._lifetime = lifetime_seconds

    async def open(self, session: ConsoleSession) -> str:
        """Keep ``session``; returns its new id (for the cookie)."""
        session_id = secrets.token_urlsafe(32)
        plain = json.dumps([session.tenant, session.access_token, session.csrf_token],
                           separators=(",", ":")).encode()
        await self._state.put(_SESSION_PREFIX + _key(session_id),
                              self._keys.seal(session_id, plain), self._lifetime)
        return session_id

    async def get(self, session_id: str | None) -> ConsoleSession | None:
        """The live session ``session_id`` names, or ``None``."""
        if not session_id or len(session_id) > 128:
            return None
        sealed = await self._state.get(_SESSION_PREFIX + _key(session_id))
        plain = None if sealed is None else self._keys.open(session_id, sealed)
        if plain is None:
            return None
        try:
            tenant, access_token, csrf_token = json.loads(plain)
        except (ValueError, TypeError):
            return None
        return ConsoleSession(str(tenant), str(access_token), str(csrf_token))

    async def close(self, session_id: str | None) -> None:
        """End the session ``session_id`` (nothing when there is none)."""
        if session_id and len(session_id) <= 128:
            await self._state.delete(_SESSION_PREFIX + _key(session_id))


class SignIns:
    """Sign-ins under way, kept by the browser that started each: the sign-in cookie holds the
    :class:`PendingSignIn` itself, signed with the console's key (HMAC-SHA256), so the server
    stores nothing when a sign-in starts and no number of starts can push out another
    browser's. The callback takes a sign-in only with its cookie and the ``state`` it holds (a
    callback opened in another browser has neither: login CSRF), before it expires, and once:
    the states taken are kept in ``state`` until they expire (in process memory at most
    :data:`MAX_SESSIONS`, the oldest forgotten first, and then a replayed code still meets the
    provider's single use)."""

    def __init__(self, state: ConsoleState, keys: ConsoleKeys,
                 seconds: int = SIGN_IN_SECONDS) -> None:
        self._seconds = seconds
        self._key = keys.sign_in
        self._state = state

    def start(self, tenant: str, code_verifier: str, nonce: str) -> tuple[PendingSignIn, str]:
        """A new sign-in (its ``state`` to send to the identity provider) and the value for
        its browser's sign-in cookie."""
        pending = PendingSignIn(tenant, secrets.token_urlsafe(32), code_verifier, nonce,
                                int(time.time()) + self._seconds)
        payload = _b64(json.dumps([pending.tenant, pending.state, pending.code_verifier,
                                   pending.nonce, pending.expires],
                                  separators=(",", ":")).encode())
        return pending, f"{payload}.{self._mac(payload)}"

    async def take(self, state: str | None, cookie: str | None) -> PendingSignIn | None:
        """The sign-in ``cookie`` holds when it is signed with the console's key, unexpired,
        untaken and sent ``state``; ``None`` otherwise."""
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
        if not await self._state.add_once(_TAKEN_PREFIX + _key(pending.state), self._seconds):
            return None
        return pending

    def _mac(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
