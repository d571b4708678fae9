"""The gateway's database access token: OAuth 2.0 client credentials against OCI IAM or
Microsoft Entra ID, with Authlib's OAuth 2 client, cached until shortly before it expires.

Oracle Deep Data Security authorises the application that attaches end-user security contexts
by a database access token its identity provider issued (Deep Data Security Guide, 10.1
"Understand Authentication Flow and Prerequisites": by the on-behalf-of or the client
credentials flow; this module does client credentials). The same token may also log the pool
in (python-oracledb's ``access_token`` callable,
:meth:`ClientCredentialsTokenProvider.pool_callback`).

- **Cached**: a token is reused until ``refresh_margin_seconds`` before it expires (its
  ``expires_in``; else its JWT ``exp``; else :data:`FALLBACK_LIFETIME_SECONDS`).
- **Single flight, thread-safe**: one fetch at a time; callers that wait get its token.
- **Refetched once on failure**: a fetch that fails for a transient reason (network, timeout,
  an HTTP 5xx, a reply that is not a token) is tried once more before it raises
  :class:`DatabaseAccessTokenUnavailable`. Refused credentials raise
  :class:`DatabaseAccessTokenRejected` at once (asking again would not change the answer).
- **Secret-free errors and logs**: messages name the provider, the client id and the OAuth
  error code, never the client secret or a token; any provider text is scrubbed of the secret.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2
from authlib.integrations.base_client.errors import (  # type: ignore[import-untyped]
    OAuthError,
)
from authlib.integrations.httpx_client import OAuth2Client  # type: ignore[import-untyped]
from oracleagentmemory.errors import DatabaseUnavailableError

from oam_gateway.config.oracle_settings import DatabaseAccessTokenSettings

__all__ = ["FALLBACK_LIFETIME_SECONDS", "ClientCredentialsTokenProvider",
           "DatabaseAccessTokenError", "DatabaseAccessTokenRejected",
           "DatabaseAccessTokenUnavailable"]

_log = logging.getLogger(__name__)

FALLBACK_LIFETIME_SECONDS = 300.0
"""How long a token that states no lifetime (no ``expires_in``, no JWT ``exp``) is used."""

_MAX_CODE_CHARS = 64


class DatabaseAccessTokenError(DatabaseUnavailableError):
    """The gateway cannot get its database access token (the request answers 503: the caller
    is not at fault). Messages never hold the client secret or a token."""

    def __init__(self, message: str, *, provider: str, client_id: str,
                 oauth_error: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.client_id = client_id
        self.oauth_error = oauth_error
        """The provider's OAuth error code (``invalid_client``...), when it gave one."""
        self.status = status
        """The token endpoint's HTTP status, when it answered."""


class DatabaseAccessTokenRejected(DatabaseAccessTokenError):
    """The provider refused the gateway's client credentials or its request (wrong secret,
    unknown client, scope not granted): fix the settings or the registration."""


class DatabaseAccessTokenUnavailable(DatabaseAccessTokenError):
    """The provider could not be asked or gave no usable token (network, timeout, 5xx)."""


@dataclass(frozen=True)
class _Cached:
    token: str
    refresh_at: float
    """Clock time after which the token is fetched again."""
    jwt_exp: float | None
    """The token's own ``exp`` (seconds since the epoch), when it is a JWT."""


class ClientCredentialsTokenProvider:
    """The database access token of one tenant, fetched by client credentials and cached."""

    def __init__(self, settings: DatabaseAccessTokenSettings, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        self._secret = settings.client_secret_value()
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: _Cached | None = None
        self.fetches = 0
        """How many token requests were sent (for tests and metrics)."""

    @property
    def provider(self) -> str:
        """``oci_iam`` or ``entra_id``."""
        return self._settings.provider

    def token(self, *, refresh: bool = False) -> str:
        """The current token: the cached one, or a new one when it is due (or ``refresh``)."""
        with self._lock:
            cached = self._cached
            if not refresh and cached is not None and self._clock() < cached.refresh_at:
                return cached.token
            self._cached = self._fetch_with_retry()
            return self._cached.token

    def peek(self) -> str | None:
        """The cached token when it is not yet due, else ``None``; never waits or fetches."""
        cached = self._cached
        if cached is not None and self._clock() < cached.refresh_at:
            return cached.token
        return None

    def fresh(self) -> bool:
        """Whether :meth:`token` would answer from the cache (no request)."""
        return self.peek() is not None

    def invalidate(self, token: str) -> None:
        """Forget ``token`` (the database refused it): the next :meth:`token` fetches anew."""
        with self._lock:
            if self._cached is not None and self._cached.token == token:
                self._cached = None

    def pool_callback(self, refresh: bool) -> str:
        """python-oracledb's ``access_token`` callable: called with ``refresh=False`` for a
        token, and with ``True`` when the one it was given has expired by its JWT ``exp``.

        A refresh fetches anew only when the cached token is due or its own ``exp`` has passed
        (the provider's clock runs ahead): a token fetched since is handed out as it is, so
        pool threads growing the pool at once do not each fetch one.
        """
        if refresh:
            with self._lock:
                cached = self._cached
                if cached is not None and cached.jwt_exp is not None and (
                        cached.jwt_exp <= time.time()):
                    self._cached = None
        return self.token()

    # --- fetching --------------------------------------------------------------------------
    def _fetch_with_retry(self) -> _Cached:
        try:
            try:
                return self._fetch()
            except DatabaseAccessTokenUnavailable as first:
                _log.warning("database access token for client %s: %s; asking once more",
                             self._settings.client_id, first)
                return self._fetch()
        except DatabaseAccessTokenError as error:
            _log.error("database access token for client %s: %s", self._settings.client_id,
                       error)
            raise

    def _fetch(self) -> _Cached:
        settings = self._settings
        self.fetches += 1
        started = self._clock()
        where = f"the {settings.provider} token endpoint"
        details: dict[str, Any] = {"provider": settings.provider, "client_id": settings.client_id}
        try:
            with OAuth2Client(client_id=settings.client_id, client_secret=self._secret,
                              scope=settings.scope, timeout=settings.timeout_seconds,
                              token_endpoint_auth_method="client_secret_basic") as client:
                reply: dict[str, Any] = dict(client.fetch_token(
                    settings.token_url, grant_type="client_credentials"))
        except OAuthError as error:
            code = self._scrub(str(getattr(error, "error", "") or "error"))[:_MAX_CODE_CHARS]
            raise DatabaseAccessTokenRejected(
                f"{where} refused the gateway's database access token request ({code})",
                oauth_error=code, **details) from None
        except httpx2.HTTPStatusError as error:
            status = error.response.status_code
            kind = DatabaseAccessTokenUnavailable if status >= 500 or status == 429 else (
                DatabaseAccessTokenRejected)
            raise kind(f"{where} answered the gateway's database access token request with "
                       f"HTTP {status}", status=status, **details) from None
        except (httpx2.HTTPError, ValueError) as error:
            raise DatabaseAccessTokenUnavailable(
                f"{where} could not be asked for the gateway's database access token "
                f"({type(error).__name__})", **details) from None
        token = reply.get("access_token")
        if not isinstance(token, str) or not token:
            raise DatabaseAccessTokenUnavailable(
                f"{where} answered the gateway's database access token request without an "
                "access token", **details)
        lifetime = _lifetime_seconds(reply, token)
        margin = settings.refresh_margin_seconds
        usable = lifetime - margin if lifetime > margin else lifetime / 2
        _log.info("database access token fetched from %s for client %s (valid %.0f s)",
                  settings.provider, settings.client_id, lifetime)
        return _Cached(token=token, refresh_at=started + max(0.0, usable),
                       jwt_exp=_jwt_expiry(token))

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def _lifetime_seconds(reply: dict[str, Any], token: str) -> float:
    """Seconds the token stays valid: ``expires_in``, else the JWT's ``exp``, else a fallback."""
    expires_in = reply.get("expires_in")
    try:
        if expires_in is not None and float(expires_in) > 0:
            return float(expires_in)
    except (TypeError, ValueError):
        pass
    exp = _jwt_expiry(token)
    if exp is not None:
        return max(0.0, exp - time.time())
    return FALLBACK_LIFETIME_SECONDS


def _jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (not verified: the database verifies the token)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None
