"""The end-user contexts of the sessions open on one standalone connection.

A standalone ``oracledb.Connection`` serves one session at a time (the engine's lock), but the
lock is re-entrant: an operation started from inside another on the same thread (a callback, an
embedder calling the store) opens a nested session on the same connection. Without this
record, the nested session attached its own context over the outer one and, when it ended,
cleared it: the outer session then ran its remaining statements as the connection's login,
without any end-user context (or the nested session ran as another end user inside the outer
one's transaction). So a nested session never attaches or clears a context: it runs inside the
outer session's, and is refused when it asks for another (or for none, under one).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from oracleagentmemory.errors import SecurityContextError


class OpenSessions:
    """The security contexts of the sessions open on one connection, outermost first (not
    thread-safe: the engine's lock serialises every thread but the one holding it)."""

    def __init__(self) -> None:
        self._stack: list[object | None] = []

    @property
    def depth(self) -> int:
        """How many sessions are open on the connection."""
        return len(self._stack)

    @contextmanager
    def entered(self, security: object | None) -> Iterator[bool]:
        """Record one session for ``security`` (``None``: no end-user context) while it is open;
        yields whether the session must attach (and, at its end, clear) the context itself:
        only the outermost session with a context does. A nested session whose context is not
        the outer session's (the same object) raises :class:`SecurityContextError`."""
        if self._stack:
            outer = self._stack[-1]
            if outer is not security:
                raise SecurityContextError(
                    "an operation started inside another one on the same connection runs "
                    f"with {_described(security)}, the outer one with {_described(outer)}: "
                    "one connection runs one end-user context at a time; give the store a "
                    "connection pool")
            attach = False
        else:
            attach = security is not None
        self._stack.append(security)
        try:
            yield attach
        finally:
            self._stack.pop()


def _described(security: object | None) -> str:
    return "no end-user context" if security is None else f"end-user context {id(security):#x}"
