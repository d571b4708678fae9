"""One request's wait for the database: a single deadline for every wait for a connection.

A request waits first for an operation slot of its tenant (one per pooled connection), then for
a connection of the pool, and its SDK work may open more than one session. Each of those waits
takes what is left of one deadline, ``pool_timeout_seconds`` after the request first asked, so
a request answers 503 within that bound however many requests queue ahead of it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from contextlib import AbstractAsyncContextManager
from contextvars import Token

from oracleagentmemory.engines.postgres.wait_deadline import (
    remaining_wait,
    reset_wait_deadline,
    set_wait_deadline,
)
from oracleagentmemory.errors import DatabaseUnavailableError

__all__ = ["database_wait", "remaining_wait"]


def database_wait(slots: asyncio.Semaphore, seconds: float) -> AbstractAsyncContextManager[None]:
    """Hold one of ``slots`` for the block; waiting for it and, inside the block, for pooled
    connections (:func:`remaining_wait`) takes at most ``seconds`` in all.

    Raises :class:`~oracleagentmemory.errors.DatabaseUnavailableError` (503) when no slot
    frees in time.
    """
    return _DatabaseWait(slots, seconds)


class _DatabaseWait:
    """:func:`database_wait`'s block (a class: no generator per request)."""

    __slots__ = ("_seconds", "_slots", "_token")

    def __init__(self, slots: asyncio.Semaphore, seconds: float) -> None:
        self._slots = slots
        self._seconds = seconds
        self._token: Token[float | None] | None = None

    async def __aenter__(self) -> None:
        slots, seconds = self._slots, self._seconds
        deadline = time.monotonic() + seconds
        if slots.locked():
            try:
                if sys.version_info >= (3, 11):
                    async with asyncio.timeout(seconds):  # a timer on this task, no new task
                        await slots.acquire()
                else:
                    await asyncio.wait_for(slots.acquire(), seconds)
            except asyncio.TimeoutError:
                raise DatabaseUnavailableError(
                    f"the database is unavailable: no pooled connection within {seconds:g} s"
                ) from None
        else:  # a free slot is taken at once, without a timer
            await slots.acquire()
        self._token = set_wait_deadline(deadline)

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._token is not None
        reset_wait_deadline(self._token)
        self._slots.release()
