"""One request's wait for the database: a single deadline for every wait for a connection.

A request waits first for an operation slot of its tenant (one per pooled connection), then for
a connection of the pool, and its SDK work may open more than one session. Each of those waits
takes what is left of one deadline, ``pool_timeout_seconds`` after the request first asked, so
a request answers 503 within that bound however many requests queue ahead of it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar

from oracleagentmemory.errors import DatabaseUnavailableError

_DEADLINE: ContextVar[float | None] = ContextVar("oam_gateway_database_wait_deadline",
                                                 default=None)
"""When the current request stops waiting for a connection (``time.monotonic()``)."""


@asynccontextmanager
async def database_wait(slots: asyncio.Semaphore, seconds: float) -> AsyncIterator[None]:
    """Hold one of ``slots`` for the block; waiting for it and, inside the block, for pooled
    connections (:func:`remaining_wait`) takes at most ``seconds`` in all.

    Raises :class:`~oracleagentmemory.errors.DatabaseUnavailableError` (503) when no slot
    frees in time.
    """
    deadline = time.monotonic() + seconds
    try:
        await asyncio.wait_for(slots.acquire(), seconds)
    except TimeoutError:
        raise DatabaseUnavailableError(
            f"the database is unavailable: no pooled connection within {seconds:g} s") from None
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)
        slots.release()


READY_ONLY_WAIT = 0.001
"""The wait left once the deadline has passed: a connection that is ready is still taken
(psycopg_pool refuses at once with a wait of 0), none is waited for."""


def remaining_wait(timeout: float) -> float:
    """How long the current request may still wait for a pooled connection: ``timeout``, or
    less inside :func:`database_wait`."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    return max(READY_ONLY_WAIT, min(timeout, deadline - time.monotonic()))
