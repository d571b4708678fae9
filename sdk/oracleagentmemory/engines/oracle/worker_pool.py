"""An Oracle pool for asynchronous callers: python-oracledb (thin mode) pool arguments and
creation, end-user security contexts, and the synchronous SDK's work run in worker threads.

python-oracledb's thin-mode waits block, so each SDK call runs in a worker thread
(``asyncio.to_thread`` carries the caller's context along, the end-user security context
included). This is the Oracle engine's side of the seam an asynchronous caller (the gateway)
builds a tenant on; :class:`~oracleagentmemory.engines.postgres.event_loop_pool.EventLoopPool`
is the PostgreSQL engine's: both open a pool, run a call, probe readiness and close.

The pool is homogeneous and logs in either with a password or with a database access token,
given as python-oracledb's ``access_token`` *callable* so that the pool can grow after the
first token has expired (python-oracledb calls it with ``refresh=True`` then). TLS comes from
the DSN (``tcps://``), the PEM wallet and ``config_dir``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import oracledb

from oracleagentmemory.errors import OracleAgentMemoryError

__all__ = [
    "AccessTokenCallback",
    "CallTimeout",
    "EndUserIdentity",
    "WorkerThreadPool",
    "create_pool",
    "end_user_context",
    "pool_arguments",
]

T = TypeVar("T")

_log = logging.getLogger(__name__)

AccessTokenCallback = Callable[[bool], str]
"""python-oracledb's ``access_token`` callable: ``callback(refresh) -> token``."""
EndUserIdentity = str | tuple[str, None]
"""python-oracledb's ``end_user_identity``: a bearer token, or ``(local end-user name, None)``."""


class CallTimeout:
    """A pool ``session_callback`` bounding every round trip of each new session to
    ``milliseconds`` (``Connection.call_timeout``): a call given up on (its worker thread
    cannot be cancelled) ends at its next database wait, with DPY-4024."""

    def __init__(self, milliseconds: int) -> None:
        self.milliseconds = milliseconds

    def __call__(self, connection: oracledb.Connection, requested_tag: str | None) -> None:
        connection.call_timeout = self.milliseconds


def pool_arguments(*, dsn: str, min_size: int, max_size: int, increment: int,
                   timeout_seconds: float, config_dir: Path | None = None,
                   wallet_location: Path | None = None, wallet_password: str | None = None,
                   user: str | None = None, password: str | None = None,
                   access_token: AccessTokenCallback | None = None,
                   call_timeout_seconds: float | None = None) -> dict[str, Any]:
    """The keyword arguments of ``oracledb.create_pool`` for a homogeneous thin-mode pool.

    A caller waits at most ``timeout_seconds`` for a connection, then fails (the SDK reports
    it as the database being unavailable); ``user`` logs in with ``password``, else the pool
    logs in with ``access_token``; ``call_timeout_seconds`` bounds each database round trip
    (``None``: unbounded). Holds secrets: never log the result.
    """
    arguments: dict[str, Any] = {
        "dsn": dsn,
        "min": min_size,
        "max": max_size,
        "increment": increment,
        "homogeneous": True,
        "getmode": oracledb.POOL_GETMODE_TIMEDWAIT,
        "wait_timeout": max(1, math.ceil(timeout_seconds * 1000)),
        "tcp_connect_timeout": timeout_seconds,
    }
    if config_dir is not None:
        arguments["config_dir"] = str(config_dir)
    if wallet_location is not None:
        arguments["wallet_location"] = str(wallet_location)
    if wallet_password is not None:
        arguments["wallet_password"] = wallet_password
    if user is not None:
        arguments["user"] = user
        arguments["password"] = password
    else:
        arguments["access_token"] = access_token
    if call_timeout_seconds is not None:
        arguments["session_callback"] = CallTimeout(
            max(1, math.ceil(call_timeout_seconds * 1000)))
    return arguments


def create_pool(arguments: dict[str, Any]) -> oracledb.ConnectionPool:
    """A thin-mode pool made with ``arguments`` (from :func:`pool_arguments`)."""
    return oracledb.create_pool(**arguments)


def end_user_context(database_access_token: str, identity: EndUserIdentity,
                     data_roles: list[str] | None) -> oracledb.EndUserSecurityContext:
    """The end-user security context of ``identity`` asking for ``data_roles``, presented with
    ``database_access_token`` (``oracledb.create_end_user_security_context``)."""
    return oracledb.create_end_user_security_context(
        database_access_token, end_user_identity=identity, data_roles=data_roles)


class WorkerThreadPool:
    """A python-oracledb pool, made on first use from ``arguments()`` by ``factory``, whose SDK
    calls (:meth:`run`) run in worker threads; ``name`` names it in log lines."""

    def __init__(self, arguments: Callable[[], dict[str, Any]], *, name: str = "oracle",
                 factory: Callable[[dict[str, Any]], oracledb.ConnectionPool] = create_pool,
                 ) -> None:
        self.name = name
        self._arguments = arguments
        self._factory = factory
        self._pool: oracledb.ConnectionPool | None = None
        self._lock = threading.Lock()

    @property
    def pool(self) -> oracledb.ConnectionPool:
        """The pool a store is opened on (made now if it was not)."""
        with self._lock:
            if self._pool is None:
                self._pool = self._factory(self._arguments())
            return self._pool

    def open(self) -> None:
        """Make the pool (python-oracledb opens its connections; a no-op when it exists)."""
        self.pool  # noqa: B018  (made on access)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` in a worker thread, in a copy of the current context."""
        return await asyncio.to_thread(work, *args)

    async def ready(self, timeout_seconds: float) -> bool:
        """Whether a pooled connection answers a ping within ``timeout_seconds``."""
        def probe() -> None:
            with self.pool.acquire() as connection:
                connection.ping()

        try:
            await asyncio.wait_for(asyncio.to_thread(probe), timeout_seconds)
        except (oracledb.Error, OSError, asyncio.TimeoutError,
                OracleAgentMemoryError) as error:  # the latter: no database access token
            _log.warning("readiness: %s's Oracle database unreachable (%s)", self.name,
                         type(error).__name__)
            return False
        return True

    def close(self) -> None:
        """Close the pool (its connections at once)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(force=True)
