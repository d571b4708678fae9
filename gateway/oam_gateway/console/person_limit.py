"""The per-person rate limit of the console's pages: :attr:`LimitSettings.rate_limit`, as on
``/v1``.

The bearer middleware's rate limit cannot see a console request's person (the session is
resolved by the console's route), so the console counts its pages itself, with the same
strategy, storage and counter key (tenant and user name, each percent-encoded): over a shared
store (``redis://...``) a person's console pages and API calls draw on one allowance; with
``memory://`` the console keeps counters of its own in each replica.
"""

from __future__ import annotations

import math
import time
from urllib.parse import quote

from oam_gateway.config.limits import LimitSettings
from oam_gateway.middleware.rate_limit import rate_limiter_for
from oam_gateway.tenancy.principal import Principal

__all__ = ["PersonLimit"]


class PersonLimit:
    """Counts each person's console pages against the configured rate limit."""

    def __init__(self, settings: LimitSettings) -> None:
        self._items = settings.rate_limit_items()
        self._limiter = rate_limiter_for(settings) if self._items else None

    async def retry_after(self, principal: Principal) -> int | None:
        """Count one page for ``principal``; ``None`` when allowed, else the seconds until
        their allowance comes back."""
        if self._limiter is None:
            return None
        key = (quote(principal.tenant, safe=""), quote(principal.user_name, safe=""))
        for item in self._items:
            if not await self._limiter.hit(item, *key):
                stats = await self._limiter.get_window_stats(item, *key)
                return max(1, math.ceil(stats.reset_time - time.time()))
        return None
