"""Run the synchronous SDK on the event loop, its database waits awaited there.

The SDK is synchronous; an asynchronous caller (the gateway) is not. Handing every call to a
worker thread (``asyncio.to_thread``) costs a thread wake-up each way and contention for the GIL
between the loop and the workers. Instead, :func:`run_bridged` runs the SDK call in a greenlet on
the loop's own thread, over connections of :class:`BridgedConnection`: psycopg's synchronous
connection performs all of its I/O through ``Connection.wait(generator)``, and inside a
bridged greenlet that wait switches back to the loop, which awaits the same generator with
psycopg's own asynchronous waiting (``psycopg.waiting.wait_async``) and resumes the greenlet
with the result. Other requests run meanwhile; the SDK code itself is unchanged.

What this relies on, and how each is kept:

- **Context isolation.** Each greenlet runs in a copy of the calling task's context, so the
  end-user security context (a context variable) and the store's atomic transaction are the
  request's own, exactly as in a worker thread.
- **One pooled connection per greenlet at a time, never shared.** A pooled connection is held by
  one request until it is returned; psycopg's per-connection lock is therefore never contended.
- **The loop never blocks on the pool.** :class:`BridgedPool` hands out a ready connection at
  once; when none is ready it waits for one in a worker thread, never on the loop (which is
  what returns connections). Callers also admit at most ``max_size`` operations per pool.
- **No thread lock is held across a database wait** in the SDK's code paths an asynchronous
  caller runs (a greenlet holding one while another greenlet of the same thread asks for it would
  deadlock the loop).
- **Cancellation ends the statement.** A request cancelled while it waits on the database (its
  timeout) gets ``CancelledError`` inside the SDK at that wait; first the statement is
  cancelled on the server and the connection closed, so the transaction rolls back, nothing of
  it can commit later, and its locks are released at once.

Outside a bridged greenlet (the pool's own threads, a client opened in a worker thread)
:class:`BridgedConnection` is an ordinary blocking psycopg connection.

What of psycopg this uses beyond its documented API: ``Connection.wait`` (overridden; not in
psycopg's API reference) and ``psycopg.waiting.wait_async`` (a module the reference does not
list). psycopg's maintainers have discussed replacing the generators-and-wait design (psycopg
issue 415), so an upgrade of psycopg must pass ``tests/test_gateway_bridge.py``, whose first
check names these two.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import greenlet
import psycopg
from psycopg import pq, waiting
from psycopg.abc import PQGen
from psycopg_pool import ConnectionPool

from oracleagentmemory.engines.postgres.wait_deadline import remaining_wait

__all__ = [
    "CANCEL_TIMEOUT_SECONDS",
    "BridgedConnection",
    "BridgedPool",
    "await_in_bridge",
    "in_bridge",
    "run_bridged",
]

T = TypeVar("T")
RV = TypeVar("RV")

CANCEL_TIMEOUT_SECONDS = 5.0
"""How long a cancelled request's statement cancellation may take (in a worker thread)."""


class _BridgedGreenlet(greenlet.greenlet):
    """A greenlet started by :func:`run_bridged`; its parent runs the event loop."""


async def run_bridged(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` on this thread, in a greenlet whose database waits await on the loop.

    Runs in a copy of the current context. An exception of ``work`` propagates; a
    cancellation of the awaiting task is raised inside ``work`` at its pending wait.
    """
    child = _BridgedGreenlet(work, greenlet.getcurrent())
    child.gr_context = contextvars.copy_context()
    pending = child.switch(*args)
    while not child.dead:
        try:
            value = await pending
        except BaseException as error:  # the wait failed, or this task was cancelled
            pending = child.throw(error)
        else:
            pending = child.switch(value)
    result: T = pending
    return result


def in_bridge() -> bool:
    """Whether the caller runs inside :func:`run_bridged`."""
    return isinstance(greenlet.getcurrent(), _BridgedGreenlet)


def await_in_bridge(awaitable: Awaitable[RV]) -> RV:
    """Await ``awaitable`` on the loop from inside a bridged greenlet, and return its result."""
    current = greenlet.getcurrent()
    if not isinstance(current, _BridgedGreenlet) or current.parent is None:
        raise RuntimeError("await_in_bridge called outside run_bridged")
    result: RV = current.parent.switch(awaitable)
    return result


class BridgedConnection(psycopg.Connection[Any]):
    """A psycopg connection whose waits, inside :func:`run_bridged`, await on the loop."""

    def wait(self, gen: PQGen[RV], interval: float = 0.1,
             timeout: float | None = None) -> RV:
        if not in_bridge():
            return super().wait(gen, interval, timeout)
        try:
            # A generator that needs no I/O (a commit with no transaction open, as the pool's
            # connection block ends) finishes here, without two switches to the loop and back.
            first = next(gen)
        except StopIteration as done:
            finished: RV = done.value
            return finished
        except OSError as error:  # as the wait reports a closed socket
            raise psycopg.OperationalError("connection socket closed") from error
        try:
            return await_in_bridge(waiting.wait_async(
                _resumed(first, gen), self.pgconn.socket, interval=interval, timeout=timeout))
        except BaseException as error:
            if not isinstance(error, Exception):
                self._abandon()
            raise

    def _abandon(self) -> None:
        """Cancelled mid-statement: stop the statement on the server (from a worker thread,
        never blocking the loop), then close the session, which rolls its transaction back.
        The protocol state is unknown, so the connection cannot serve again."""
        try:
            if self.pgconn.transaction_status == pq.TransactionStatus.ACTIVE:
                await_in_bridge(asyncio.to_thread(self.cancel_safe,
                                                  timeout=CANCEL_TIMEOUT_SECONDS))
        except BaseException:  # closing below ends the session in any case
            pass
        finally:
            self.pgconn.finish()


def _resumed(first: waiting.Wait, gen: PQGen[RV]) -> PQGen[RV]:
    """``gen`` after its first step, which asked for ``first``: what the wait resumes."""
    state = first
    while True:
        ready = yield state
        try:
            state = gen.send(ready)
        except StopIteration as done:
            result: RV = done.value
            return result


class BridgedPool(ConnectionPool[Any]):
    """A pool whose ``getconn`` never blocks the loop from inside :func:`run_bridged`, and
    waits no longer than what is left of the request's wait for the database
    (:func:`~oracleagentmemory.engines.postgres.wait_deadline.remaining_wait`)."""

    def getconn(self, timeout: float | None = None) -> Any:
        timeout = remaining_wait(self.timeout if timeout is None else timeout)
        if in_bridge() and self.get_stats().get("pool_available", 0) == 0:
            # None ready: wait in a worker thread while the loop (which returns connections)
            # goes on.
            return await_in_bridge(self._wait_in_thread(timeout))
        return super().getconn(timeout)

    async def _wait_in_thread(self, timeout: float) -> Any:
        """``getconn(timeout)`` in a worker thread. The thread cannot be stopped: when the
        request is cancelled meanwhile (its timeout), the connection the thread gets later goes
        back to the pool instead of to nobody (which would shrink the pool for good)."""
        waiting = asyncio.ensure_future(asyncio.to_thread(super().getconn, timeout))
        try:
            return await asyncio.shield(waiting)
        except asyncio.CancelledError:
            waiting.add_done_callback(self._return_abandoned)
            raise

    def _return_abandoned(self, waiting: asyncio.Future[Any]) -> None:
        """Return the connection an abandoned wait got, if it got one (from a worker thread:
        the loop never blocks on the pool)."""
        if not waiting.cancelled() and waiting.exception() is None:
            asyncio.get_running_loop().run_in_executor(None, self.putconn, waiting.result())
