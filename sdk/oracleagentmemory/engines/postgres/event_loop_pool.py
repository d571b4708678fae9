"""A PostgreSQL pool for asynchronous callers: the synchronous SDK's work runs on the caller's
event loop (:mod:`~oracleagentmemory.engines.postgres.event_loop`), readiness is a connection
probe.

This is the PostgreSQL engine's side of the seam an asynchronous caller (the gateway) builds a
tenant on; :class:`~oracleagentmemory.engines.oracle.worker_pool.WorkerThreadPool` is the Oracle
engine's: both open a pool, run a call, probe readiness and close.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool

from oracleagentmemory.engines.postgres.event_loop import (
    BridgedConnection,
    BridgedPool,
    run_bridged,
)
from oracleagentmemory.engines.postgres.session_seals import SealingPool

__all__ = ["EventLoopPool", "SealingBridgedPool", "database_reachable"]

T = TypeVar("T")

_log = logging.getLogger(__name__)


async def database_reachable(url: str, timeout_seconds: float) -> bool:
    """Whether a connection to ``url`` opens within ``timeout_seconds``: a successful handshake
    and authentication is the answer, so no SQL is sent (the connection is closed at once)."""
    try:
        connection = await asyncio.wait_for(
            psycopg.AsyncConnection.connect(url, connect_timeout=max(2, int(timeout_seconds))),
            timeout_seconds)
    except (psycopg.Error, OSError, asyncio.TimeoutError) as error:
        _log.warning("readiness: database unreachable (%s)", type(error).__name__)
        return False
    await connection.close()
    return True


class SealingBridgedPool(BridgedPool, SealingPool):
    """A :class:`~.event_loop.BridgedPool` that keeps the seals of its connections
    (:class:`~.session_seals.SealingPool`): the engine's applies skip the clean-session scan on
    connections only the SDK used since their last scan."""


class EventLoopPool:
    """A connection pool whose SDK calls (:meth:`run`) run on the caller's event loop, their
    database waits awaited there, and whose waits for a free connection never block the loop.

    ``url`` is the login's connection URL (a secret: never logged); ``timeout_seconds`` bounds
    the wait for a pooled connection and each connection attempt; ``transaction_timeout_seconds``
    (``None``: unbounded) makes the server end any transaction that runs longer.
    """

    def __init__(self, url: str, *, name: str, min_size: int, max_size: int,
                 timeout_seconds: float,
                 transaction_timeout_seconds: float | None = None) -> None:
        self._url = url
        options: dict[str, Any] = {"connect_timeout": max(1, math.ceil(timeout_seconds))}
        if transaction_timeout_seconds is not None:
            milliseconds = max(1, math.ceil(transaction_timeout_seconds * 1000))
            options["options"] = f"-c transaction_timeout={milliseconds}"
        self.pool: ConnectionPool[Any] = SealingBridgedPool(
            url, connection_class=BridgedConnection, min_size=min_size, max_size=max_size,
            timeout=timeout_seconds, reconnect_timeout=max(30.0, timeout_seconds), name=name,
            kwargs=options, open=False)
        """The pool a store is opened on."""

    def open(self) -> None:
        """Start the pool (connections open in the background; a no-op when it is open)."""
        self.pool.open(wait=False)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` on the loop's thread, in a copy of the current context, its database
        waits awaited on the loop."""
        return await run_bridged(work, *args)

    async def ready(self, timeout_seconds: float) -> bool:
        """Whether a connection to the pool's database opens within ``timeout_seconds``."""
        return await database_reachable(self._url, timeout_seconds)

    def close(self) -> None:
        """Close the pool."""
        self.pool.close()
