"""The per-end-user rate limit: each tenant's user gets :attr:`LimitSettings.rate_limit`.

Counted with the ``limits`` package's async API, keyed by the verified principal's tenant and
user name, so it runs after :class:`~oam_gateway.middleware.bearer.BearerAuthMiddleware`. A
request without a principal (a probe, an unauthenticated request the authentication already
refused) is not counted. Over the limit the answer is 429 ``rate-limited`` with
``Retry-After`` and the IETF ``RateLimit`` / ``RateLimit-Policy`` headers.

With ``memory://`` the counters live in this process; with a shared store (``redis://...``)
every replica counts in it, and while it does not answer each replica counts its own requests
(:class:`~oam_gateway.middleware.rate_limit_shared.SharedStoreLimiter`).
"""

from __future__ import annotations

import functools
import math
import time
from typing import Protocol
from urllib.parse import quote

import limits
from limits.aio.storage import Storage
from limits.aio.strategies import (
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    RateLimiter,
    SlidingWindowCounterRateLimiter,
)
from limits.storage import storage_from_string
from limits.util import WindowStats
from starlette.types import ASGIApp, Receive, Scope, Send

from oam_gateway.config.limits import LimitSettings, RateLimitStrategy
from oam_gateway.errors.problems import problem_response
from oam_gateway.middleware.bearer import PRINCIPAL_SCOPE_KEY
from oam_gateway.middleware.rate_limit_memory import PacedMemoryStorage
from oam_gateway.middleware.rate_limit_shared import SharedStoreLimiter
from oam_gateway.tenancy.principal import Principal

__all__ = ["UNLIMITED_PATHS", "Limiter", "RateLimitMiddleware", "rate_limiter_for"]

UNLIMITED_PATHS = frozenset({"/healthz", "/readyz"})
"""Probes are never rate limited."""

_STRATEGIES: dict[RateLimitStrategy, type[RateLimiter]] = {
    "fixed-window": FixedWindowRateLimiter,
    "moving-window": MovingWindowRateLimiter,
    "sliding-window-counter": SlidingWindowCounterRateLimiter,
}


_COREDIS_SCHEMES = frozenset({"redis", "rediss", "redis+unix", "redis+sentinel",
                              "redis+cluster"})
"""The storage schemes ``limits`` serves with ``coredis`` (which takes the timeouts below)."""


class Limiter(Protocol):
    """What the middleware asks of a limiter (``limits``' async strategies answer it)."""

    @property
    def storage(self) -> Storage:
        """Where the counters live (a shared store's, when this process keeps a reserve)."""

    async def hit(self, item: limits.RateLimitItem, *identifiers: str) -> bool: ...

    async def get_window_stats(self, item: limits.RateLimitItem,
                               *identifiers: str) -> WindowStats: ...


def rate_limiter_for(settings: LimitSettings) -> Limiter:
    """The limiter of ``settings``: its strategy over its (async) storage; over a shared store,
    with this process's counters in reserve for while the store does not answer."""
    strategy = _STRATEGIES[settings.rate_limit_strategy]
    uri = settings.rate_limit_storage_uri
    scheme = uri.removeprefix("async+").split("://", 1)[0]
    if scheme == "memory":
        return strategy(PacedMemoryStorage())
    timeout = settings.rate_limit_storage_timeout_seconds
    options = ({"connect_timeout": timeout, "stream_timeout": timeout}
               if scheme in _COREDIS_SCHEMES else {})
    storage = storage_from_string(f"async+{uri.removeprefix('async+')}", **options)
    errors = storage.base_exceptions
    return SharedStoreLimiter(strategy(storage), strategy(PacedMemoryStorage()),
                              errors if isinstance(errors, tuple) else (errors,))


class RateLimitMiddleware:
    """Answers 429 when the request's end user has used up one of ``items``."""

    def __init__(self, app: ASGIApp, items: list[limits.RateLimitItem],
                 limiter: Limiter) -> None:
        self._app = app
        self._items = items
        self._limiter = limiter
        self._policy = ", ".join(f'"{_policy_name(item)}";q={item.amount};'
                                 f"w={item.get_expiry()}" for item in items)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = scope.get(PRINCIPAL_SCOPE_KEY)
        if (scope["type"] != "http" or not isinstance(principal, Principal)
                or scope["path"] in UNLIMITED_PATHS):
            await self._app(scope, receive, send)
            return
        key = _limit_key(principal.tenant, principal.user_name)
        for item in self._items:
            if not await self._limiter.hit(item, *key):
                await self._refuse(item, key, scope, receive, send)
                return
        await self._app(scope, receive, send)

    async def _refuse(self, item: limits.RateLimitItem, key: tuple[str, str], scope: Scope,
                      receive: Receive, send: Send) -> None:
        stats = await self._limiter.get_window_stats(item, *key)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        headers = {"Retry-After": str(retry_after),
                   "RateLimit-Policy": self._policy,
                   "RateLimit": f'"{_policy_name(item)}";r={stats.remaining};t={retry_after}'}
        response = problem_response(429, "rate-limited",
                                    f"the rate limit of {item} per user is used up; retry "
                                    f"in {retry_after} seconds", headers=headers)
        await response(scope, receive, send)


@functools.lru_cache(maxsize=4096)
def _limit_key(tenant: str, user_name: str) -> tuple[str, str]:
    """The end user's counter key: tenant and user name, each percent-encoded (quoted once
    per recent user rather than on every request)."""
    return quote(tenant, safe=""), quote(user_name, safe="")


def _policy_name(item: limits.RateLimitItem) -> str:
    return f"{item.amount}-per-{item.get_expiry()}s"
