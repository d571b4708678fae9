"""A bounded cache of verified tokens: a token seen before skips signature verification.

Entries are keyed by the whole compact token, as text (a token differing in any byte misses;
the principal holds the token anyway, to forward it in token mode), kept until the token's
``exp`` (strictly: the verifier's leeway is not extended to cached entries) and evicted
least-recently-used beyond ``max_entries``.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from oam_gateway.tenancy.principal import Principal

__all__ = ["VerifiedTokenCache"]


class VerifiedTokenCache:
    """Principals of verified tokens, until each token expires; at most ``max_entries``."""

    def __init__(self, max_entries: int, clock: Callable[[], float] = time.time) -> None:
        self._max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, Principal] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, token: str) -> Principal | None:
        """The principal of ``token`` if it was verified and has not expired."""
        principal = self._entries.get(token)
        if principal is None:
            return None
        if self._clock() >= principal.expires_at:
            del self._entries[token]
            return None
        self._entries.move_to_end(token)
        return principal

    def put(self, token: str, principal: Principal) -> None:
        """Remember that ``token`` verified as ``principal``."""
        if self._max_entries <= 0 or self._clock() >= principal.expires_at:
            return
        self._entries[token] = principal
        self._entries.move_to_end(token)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry (the issuer's keys changed)."""
        self._entries.clear()

