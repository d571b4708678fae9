"""A rate limiter over a store shared by replicas (Redis) that keeps counting while it is down.

While the shared store does not answer (refused, reset, or silent past
:attr:`~oam_gateway.config.limits.LimitSettings.rate_limit_storage_timeout_seconds`), each
request is counted by this process instead: the limit then holds per replica (a user may reach
replicas x ``rate_limit`` until the store is back), and no request fails because of the store.
A memory gateway that stopped serving every user because its limiter's cache died would turn a
cache outage into a full outage; the per-replica counters keep the bound that protects the
database. The first failure is logged (a WARNING naming the error), the store is tried again at
most once per :data:`RETRY_SECONDS`, and its return is logged too; :attr:`degraded` says which
counters are in use.
"""

from __future__ import annotations

import asyncio
import logging
import time

import limits
from limits.aio.storage import Storage
from limits.aio.strategies import RateLimiter
from limits.errors import StorageError
from limits.util import WindowStats

__all__ = ["RETRY_SECONDS", "SharedStoreLimiter"]

RETRY_SECONDS = 1.0
"""After a failure of the shared store, the least time before a request tries it again."""

_log = logging.getLogger(__name__)


class SharedStoreLimiter:
    """``shared`` (a limiter over a shared store), or ``local`` (in this process) while the
    shared store fails with one of ``storage_errors`` (see the module docstring)."""

    def __init__(self, shared: RateLimiter, local: RateLimiter,
                 storage_errors: tuple[type[BaseException], ...], *,
                 retry_seconds: float = RETRY_SECONDS) -> None:
        self._shared = shared
        self._local = local
        self._errors: tuple[type[BaseException], ...] = (
            StorageError, OSError, asyncio.TimeoutError, *storage_errors)
        self.retry_seconds = retry_seconds
        """After a failure, how long requests count locally before the store is tried again."""
        self._down_until: float | None = None

    @property
    def storage(self) -> Storage:
        """The shared store (where the counters live while it answers)."""
        return self._shared.storage

    @property
    def degraded(self) -> bool:
        """Whether the shared store failed last time it was tried (requests count locally)."""
        return self._down_until is not None

    async def hit(self, item: limits.RateLimitItem, *identifiers: str) -> bool:
        """Count one request of ``identifiers`` against ``item``; whether it is allowed."""
        if self._is_down():
            return await self._local.hit(item, *identifiers)
        try:
            allowed = await self._shared.hit(item, *identifiers)
        except self._errors as error:
            self._went_down(error)
            return await self._local.hit(item, *identifiers)
        self._answered()
        return allowed

    async def get_window_stats(self, item: limits.RateLimitItem,
                               *identifiers: str) -> WindowStats:
        """When the window of ``identifiers`` resets and what remains of it."""
        if self._is_down():
            return await self._local.get_window_stats(item, *identifiers)
        try:
            stats = await self._shared.get_window_stats(item, *identifiers)
        except self._errors as error:
            self._went_down(error)
            return await self._local.get_window_stats(item, *identifiers)
        self._answered()
        return stats

    def _is_down(self) -> bool:
        return self._down_until is not None and time.monotonic() < self._down_until

    def _went_down(self, error: BaseException) -> None:
        if self._down_until is None:
            _log.warning("the shared rate-limit store does not answer (%s: %s); each replica "
                         "counts its own requests until it does", type(error).__name__, error)
        self._down_until = time.monotonic() + self.retry_seconds

    def _answered(self) -> None:
        if self._down_until is not None:
            self._down_until = None
            _log.warning("the shared rate-limit store answers again; the replicas share their "
                         "counters again")
