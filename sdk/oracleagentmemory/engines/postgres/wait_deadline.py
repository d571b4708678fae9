"""One request's deadline for waiting on pooled connections.

An asynchronous caller (the gateway) gives each request one deadline for all of its waits for a
connection: it sets the deadline with :func:`set_wait_deadline` around the request's SDK work,
and :class:`~oracleagentmemory.engines.postgres.event_loop.BridgedPool` waits no longer than
:func:`remaining_wait` allows. The deadline is a context variable, so it is the request's own.
"""

from __future__ import annotations

import time
from contextvars import ContextVar, Token

__all__ = ["READY_ONLY_WAIT", "remaining_wait", "reset_wait_deadline", "set_wait_deadline"]

_DEADLINE: ContextVar[float | None] = ContextVar("oam_database_wait_deadline", default=None)
"""When the current request stops waiting for a connection (``time.monotonic()``)."""

READY_ONLY_WAIT = 0.001
"""The wait left once the deadline has passed: a connection that is ready is still taken
(psycopg_pool refuses at once with a wait of 0), none is waited for."""


def set_wait_deadline(deadline: float) -> Token[float | None]:
    """Bound the current context's waits for a pooled connection by ``deadline``
    (``time.monotonic()``); undo with :func:`reset_wait_deadline` and the token returned."""
    return _DEADLINE.set(deadline)


def reset_wait_deadline(token: Token[float | None]) -> None:
    """Undo the :func:`set_wait_deadline` that returned ``token``."""
    _DEADLINE.reset(token)


def remaining_wait(timeout: float) -> float:
    """How long the current context may still wait for a pooled connection: ``timeout``, or
    less once a deadline is set."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    return max(READY_ONLY_WAIT, min(timeout, deadline - time.monotonic()))
