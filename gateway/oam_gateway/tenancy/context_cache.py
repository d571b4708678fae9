"""The end-user security contexts a tenant reuses: one per caller, for a bounded time and count.

A caller's context is reused for :data:`CONTEXT_REUSE_SECONDS` (its signed assertion is then
one the database has verified before, which saves the verification on every request); at most
:data:`CONTEXT_CACHE_SIZE` are kept, the least recently used dropped first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from cachetools import TTLCache

__all__ = ["CONTEXT_CACHE_SIZE", "CONTEXT_REUSE_SECONDS", "ContextCache"]

CONTEXT_CACHE_SIZE = 10_000
"""How many callers' end-user contexts a tenant keeps (least recently used dropped first)."""
CONTEXT_REUSE_SECONDS = 300.0
"""How long a caller's context is reused (its assertion renews itself at half its lifetime;
an Oracle context never outlives the database access token it holds: see its key)."""


class ContextCache:
    """Callers' end-user contexts by key (a ``cachetools.TTLCache`` behind a lock: the event
    loop and worker threads both ask)."""

    def __init__(self, maxsize: int = CONTEXT_CACHE_SIZE,
                 ttl: float = CONTEXT_REUSE_SECONDS,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self._contexts: TTLCache[Hashable, Any] = TTLCache(maxsize, ttl, timer)
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The context kept for ``key``, or a new one from ``make()`` (called outside the
        lock), kept from now on."""
        with self._lock:
            try:
                context = self._contexts[key]  # TTLCache.get asks twice (contains, then item)
            except KeyError:
                context = None
        if context is None:
            context = make()
            with self._lock:
                self._contexts[key] = context
        return context

    def clear(self) -> None:
        """Drop every context."""
        with self._lock:
            self._contexts.clear()
