"""Sealed sessions: pooled connections only the SDK has used since the database last found
them clean, so that applying an end-user context to them may skip the clean-session scan.

Before it sets an assertion, the database checks that the session holds nothing its own SQL
made that could stand in for the SDK's statements (``security_schema``: SQL-level prepared
statements, holdable cursors, temporary objects). That scan reads ``pg_prepared_statements``,
``pg_cursors`` and ``pg_depend`` and costs more than the rest of a get's apply. It only needs
to run again when SQL other than the SDK's may have reached the session since it last passed,
and on a pool this module builds the SDK knows when that is:

- every checkout goes through :meth:`SealingPool.getconn`, which takes the connection's seal
  off it; only the engine's own checkout claims it back (:meth:`SealingPool.claim_seal`), right
  after taking the connection. Anyone else's checkout (``pool.connection()`` of application
  code) leaves the connection without a seal, so the engine's next checkout gets a new,
  random token and the database scans the session;
- the engine gives the seal back (:meth:`SealingPool.reseal`) only after its own transaction
  ended cleanly; :meth:`SealingPool.putconn` keeps it for the next checkout;
- the database holds the token of the last scan that passed in the session setting
  ``oam.session_seal`` (set by ``oam_sec.apply_assertion(assertion, seal)`` only after the
  full scan), and skips the scan only when the token the SDK sends equals it. Code that ran
  SQL on the connection while someone else had it checked out may have read or set that
  setting, but the SDK never sends that token again: it sends a new one nobody has seen, so
  the scan runs. A rolled-back apply leaves the earlier token in the setting, which the SDK
  no longer sends either, so that too only costs a scan.

So the scan is skipped exactly when the only SQL the session has run since it passed the scan
is the SDK's own, which creates none of what the scan looks for. For the same reason the engine
then runs its flights on named statements of the session, prepared once after a scan passed
(``context_sql``: ``BEGIN``, the apply, ``COMMIT``, the end check), and the apply is plain SQL
(``security_schema.SEALED_APPLY``) that hands any case but a kept seal and an assertion
verified already to ``oam_sec.apply_assertion``. Connections the SDK does not
pool (an application's own connection or ``ConnectionPool``) are scanned on every apply.
What this cannot see is Python code that keeps using a connection object after returning it
to the pool (psycopg_pool forbids it); such code could equally read the application key. And it
takes a pool's connection to be its own database session: a proxy that hands one server session
to several clients in turn (PgBouncer in transaction mode) would let another client's SQL run
in between, so a pool the SDK builds must connect to the database directly.
"""

from __future__ import annotations

import secrets
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

__all__ = ["SEAL_BYTES", "SealingPool", "SessionSeal", "claim_seal"]

SEAL_BYTES = 16
"""Random bytes of a seal's token (hex in the setting: 32 characters, the least the database
accepts)."""


@dataclass
class SessionSeal:
    """The token the database will hold in ``oam.session_seal`` once this checkout's apply
    passed; ``kept``: it holds it already (the SDK alone used the connection since)."""

    token: str
    kept: bool

    @classmethod
    def new(cls) -> SessionSeal:
        """A token nobody has seen: the database scans the session before accepting it."""
        return cls(secrets.token_hex(SEAL_BYTES), kept=False)


class SealingPool(ConnectionPool[Any]):
    """A ``psycopg_pool.ConnectionPool`` that keeps, for each idle connection, the seal the
    engine gave back with it; any checkout takes the seal off, and only the engine claims it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._seal_lock = threading.Lock()
        self._idle_seals: weakref.WeakKeyDictionary[psycopg.Connection[Any], str] = (
            weakref.WeakKeyDictionary())
        self._lent_seals: weakref.WeakKeyDictionary[psycopg.Connection[Any], str] = (
            weakref.WeakKeyDictionary())
        self._returned_seals: weakref.WeakKeyDictionary[psycopg.Connection[Any], str] = (
            weakref.WeakKeyDictionary())
        super().__init__(*args, **kwargs)

    def getconn(self, timeout: float | None = None) -> Any:
        """A connection, its seal taken off it (until the engine claims it)."""
        conn = super().getconn(timeout)
        with self._seal_lock:
            token = self._idle_seals.pop(conn, None)
            if token is None:
                self._lent_seals.pop(conn, None)
            else:
                self._lent_seals[conn] = token
        return conn

    def claim_seal(self, conn: psycopg.Connection[Any]) -> SessionSeal:
        """The seal of ``conn``, just checked out by the caller: kept if the engine gave it
        back last time, else a new one. Claiming takes it: a second claim gets a new one."""
        with self._seal_lock:
            token = self._lent_seals.pop(conn, None)
        return SessionSeal.new() if token is None else SessionSeal(token, kept=True)

    def reseal(self, conn: psycopg.Connection[Any], seal: SessionSeal) -> None:
        """Give ``seal`` back with ``conn``: the database accepted a sealed apply with it in this
        checkout (``seal.kept``) and the engine's transaction ended cleanly. It stays with the
        connection when the connection returns to the pool idle and open."""
        if not seal.kept:
            return  # never applied: the database may not hold it, nor the SDK its named apply
        with self._seal_lock:
            self._returned_seals[conn] = seal.token

    def putconn(self, conn: psycopg.Connection[Any]) -> None:
        """Return ``conn``; it stays sealed only if the engine gave its seal back."""
        with self._seal_lock:
            self._lent_seals.pop(conn, None)
            token = self._returned_seals.pop(conn, None)
            if (token is not None and not conn.closed
                    and conn.info.transaction_status == TransactionStatus.IDLE):
                self._idle_seals[conn] = token  # before the pool can lend it again
        super().putconn(conn)


def claim_seal(pool: ConnectionPool[Any], conn: psycopg.Connection[Any]) -> SessionSeal | None:
    """The seal of ``conn`` if ``pool`` seals its connections (:class:`SealingPool`), else
    ``None``: the database scans the session on every apply."""
    return pool.claim_seal(conn) if isinstance(pool, SealingPool) else None
