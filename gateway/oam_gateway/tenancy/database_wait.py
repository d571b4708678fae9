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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from oracleagentmemory.engines.postgres.wait_deadline import (
    remaining_wait,
    reset_wait_deadline,
    set_wait_deadline,
)
from oracleagentmemory.errors import DatabaseUnavailableError

__all__ = ["database_wait", "remaining_wait"]


@asynccontextmanager
async def database_wait(slots: asyncio.Semaphore, seconds: float) -> AsyncIterator[None]:
    """Hold one of ``slots`` for the block; waiting for it and, inside the block, for pooled
    connections (:func:`remaining_wait`) takes at most ``seconds`` in all.

    Raises :class:`~oracleagentmemory.errors.DatabaseUnavailableError` (503) when no slot
    frees in time.
    """
    deadline = time.monotonic() + seconds
    if slots.locked():
        try:
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(seconds):  # a timer on this task, no new task
                    await slots.acquire()
            else:
                await asyncio.wait_for(slots.acquire(), seconds)
        except TimeoutError:
            raise DatabaseUnavailableError(
                f"the database is unavailable: no pooled connection within {seconds:g} s"
            ) from None
    else:  # a free slot is taken at once, without a timer
        await slots.acquire()
    token = set_wait_deadline(deadline)
    try:
        yield
    finally:
        reset_wait_deadline(token)
        slots.release()

