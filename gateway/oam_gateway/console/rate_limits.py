"""The console's rate limits: each person's pages (:attr:`LimitSettings.rate_limit`, as on
``/v1``) and the sign-ins each client address starts
(:attr:`LimitSettings.sign_in_rate_limit`).

The bearer middleware's rate limit cannot see a console request's person (the session is
resolved by the console's route), so the console counts its pages itself, with the same
strategy, storage and counter key (tenant and user name, each percent-encoded): over a shared
store (``redis://...``) a person's console pages and API calls draw on one allowance; with
``memory://`` the console keeps counters of its own in each replica.

``/console/sign-in`` is open to anyone, so it is counted by the client's address (an IPv6
address by its /64 network, which one client usually holds whole), in a namespace of its own.
"""

from __future__ import annotations

import ipaddress
import math
import time
from urllib.parse import quote

import limits

from oam_gateway.config.limits import LimitSettings
from oam_gateway.middleware.rate_limit import Limiter, rate_limiter_for
from oam_gateway.tenancy.principal import Principal

__all__ = ["ConsoleLimits", "address_key"]


class ConsoleLimits:
    """Counts each person's console pages and each address's sign-ins."""

    def __init__(self, settings: LimitSettings) -> None:
        self._person_items = settings.rate_limit_items()
        self._sign_in_items = settings.sign_in_rate_limit_items()
        self._limiter = (rate_limiter_for(settings)
                         if self._person_items or self._sign_in_items else None)

    async def person(self, principal: Principal) -> int | None:
        """Count one page for ``principal``; ``None`` when allowed, else the seconds until
        their allowance comes back."""
        key = (quote(principal.tenant, safe=""), quote(principal.user_name, safe=""))
        return await _retry_after(self._limiter, self._person_items, key)

    async def sign_in(self, address: str | None) -> int | None:
        """Count one sign-in started from ``address`` (the client's IP address); ``None``
        when allowed, else the seconds until the address may start another."""
        return await _retry_after(self._limiter, self._sign_in_items, (address_key(address),))


def address_key(address: str | None) -> str:
    """The counter key of a client ``address``: an IPv4 address itself, an IPv6 address its
    /64 network (an IPv4-mapped one its IPv4 address), anything else percent-encoded."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return quote(address or "unknown", safe="")
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return quote(str(ipaddress.IPv6Network((ip, 64), strict=False)), safe="")
    return str(ip)


async def _retry_after(limiter: Limiter | None, items: list[limits.RateLimitItem],
                       key: tuple[str, ...]) -> int | None:
    if limiter is None:
        return None
    for item in items:
        if not await limiter.hit(item, *key):
            stats = await limiter.get_window_stats(item, *key)
            return max(1, math.ceil(stats.reset_time - time.time()))
    return None
