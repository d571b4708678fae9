"""The PostgreSQL engine: connections, pools and URLs; transactions; vector adapters."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

from oracleagentmemory.engines.base import Engine
from oracleagentmemory.engines.postgres.context_sql import (
    apply_security_context,
    clear_security_context,
    context_transaction,
)
from oracleagentmemory.engines.postgres.search import ScanChoices
from oracleagentmemory.engines.postgres.session import PostgresSession
from oracleagentmemory.errors import DatabaseUnavailableError, InvalidArgumentTypeError

DEFAULT_POOL_MAX_SIZE = 8


def _has_vector_type(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone()
    return bool(row and row[0])


class PostgresEngine(Engine):
    """Runs store operations on PostgreSQL 18 + pgvector through psycopg 3.

    ``source`` is a ``psycopg.Connection`` (single-session mode: calls are serialised), a
    ``psycopg_pool.ConnectionPool`` (concurrent calls) or a ``postgresql://`` URL (the engine opens
    and owns a pool, closed by :meth:`close`).
    """

    fold = "lower"

    def __init__(self, source: object) -> None:
        self._pool: ConnectionPool[Any] | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._owns_pool = False
        self._lock = threading.RLock()
        self._vector_ready: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()
        self.scan_choices = ScanChoices()
        if isinstance(source, str):
            self._pool = ConnectionPool(
                source, min_size=1, max_size=DEFAULT_POOL_MAX_SIZE, open=True,
                name="oracleagentmemory",
            )
            self._owns_pool = True
        elif isinstance(source, ConnectionPool):
            self._pool = source
        elif isinstance(source, psycopg.Connection):
            self._conn = source
        else:
            raise InvalidArgumentTypeError(
                "pool must be a psycopg Connection, a psycopg_pool ConnectionPool or a "
                f"postgresql:// URL, got {type(source).__name__}"
            )

    @property
    def single_session(self) -> bool:
        """Whether the engine runs on one raw connection (calls serialised)."""
        return self._conn is not None

    @contextmanager
    def session(self, security: Any | None = None) -> Iterator[PostgresSession]:
        if self._pool is not None:
            with self._pool.connection() as conn:
                yield from self._transaction(conn, security)
        else:
            assert self._conn is not None
            with self._lock:
                yield from self._transaction(self._conn, security)

    def _transaction(self, conn: psycopg.Connection[Any],
                     security: Any | None) -> Iterator[PostgresSession]:
        """One transaction; with ``security``, applied, verified, then cleared and verified.

        The assertion lives in a transaction-local setting, so commit or rollback removes it;
        afterwards the engine checks that it is gone and discards a connection where it is not.
        On an idle connection (always, from a pool) the check shares the round trip of
        ``COMMIT``; inside a caller's open transaction each step runs on its own.
        """
        if conn.closed:
            raise DatabaseUnavailableError("the database connection is closed")
        self.ensure_vector_adapters(conn)
        if security is not None and conn.info.transaction_status == TransactionStatus.IDLE:
            with context_transaction(conn, security):
                yield PostgresSession(conn, self, security)
            return
        try:
            with conn.transaction():
                if security is not None:
                    apply_security_context(conn, security)
                yield PostgresSession(conn, self, security)
        finally:
            if security is not None:
                clear_security_context(conn)

    def ensure_vector_adapters(self, conn: psycopg.Connection[Any]) -> None:
        """Register pgvector's adapters on ``conn`` once, if the extension is installed."""
        if conn in self._vector_ready:
            return
        with conn.transaction():
            present = _has_vector_type(conn)
            if present:
                register_vector(conn)
        if present:
            self._vector_ready.add(conn)

    def close(self) -> None:
        if self._owns_pool and self._pool is not None:
            self._pool.close()
