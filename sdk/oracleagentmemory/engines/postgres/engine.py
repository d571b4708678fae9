"""The PostgreSQL engine: connections, pools and URLs; transactions; vector adapters."""

from __future__ import annotations

import json
import math
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg.pq import TransactionStatus
from psycopg.types.json import set_json_dumps
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import EndUserContext, Engine, EngineCapabilities
from oracleagentmemory.engines.postgres.assertion import PostgresEndUserSecurityContext
from oracleagentmemory.engines.postgres.context_sql import (
    apply_security_context,
    clear_security_context,
    context_transaction,
)
from oracleagentmemory.engines.postgres.ddl import LATEST_SCHEMA_VERSION
from oracleagentmemory.engines.postgres.driver_errors import (
    UNAVAILABLE_HINT,
    quiet_pipeline_aborts,
    translate,
)
from oracleagentmemory.engines.postgres.session import PostgresSession
from oracleagentmemory.engines.postgres.session_seals import SealingPool, SessionSeal, claim_seal
from oracleagentmemory.engines.scan_choices import ScanChoices
from oracleagentmemory.engines.text_values import not_unicode
from oracleagentmemory.errors import (
    DatabaseUnavailableError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    SecurityContextError,
)

DEFAULT_POOL_MAX_SIZE = 8
quiet_pipeline_aborts()
DEFAULT_CONNECT_TIMEOUT = 5.0
"""Seconds to wait for the database when opening a pool from a URL (``OAM_CONNECT_TIMEOUT``)."""

CAPABILITIES = EngineCapabilities(
    name="postgresql",
    latest_schema_version=LATEST_SCHEMA_VERSION,
    identifier_fold="lower",
    max_identifier_length=63,
    max_indexed_vector_dim=2000,  # pgvector's HNSW limit for ``vector``
)


def connect_timeout() -> float:
    """The connection bound: ``OAM_CONNECT_TIMEOUT`` seconds, default 5."""
    raw = os.environ.get("OAM_CONNECT_TIMEOUT")
    if raw is None:
        return DEFAULT_CONNECT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(
            f"OAM_CONNECT_TIMEOUT must be a positive number of seconds, got {raw!r}")
    return value


def _open_pool(url: str) -> ConnectionPool[Any]:
    """A pool for ``url``, once one connection proved the database answers within the bound.

    The probe fails once, fast and quietly: a pool would retry in the background until its
    timeout, logging every attempt.
    """
    timeout = connect_timeout()
    seconds = max(1, math.ceil(timeout))  # libpq takes whole seconds
    try:
        with psycopg.connect(url, connect_timeout=seconds):
            pass
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailableError(
            f"cannot connect to the database within {timeout:g} s: {_first_line(exc)}",
            hint=UNAVAILABLE_HINT) from None
    pool: ConnectionPool[Any] = SealingPool(
        url, min_size=1, max_size=DEFAULT_POOL_MAX_SIZE, open=False, name="oracleagentmemory",
        kwargs={"connect_timeout": seconds}, reconnect_timeout=timeout,
    )
    try:
        pool.open(wait=True, timeout=timeout)
    except PoolTimeout:
        pool.close()
        raise DatabaseUnavailableError(
            f"the database did not accept a pool connection within {timeout:g} s",
            hint=UNAVAILABLE_HINT) from None
    return pool


def _json_text(value: Any) -> str:
    """JSON as psycopg binds it on the engine's connections: UTF-8 text, no ASCII escapes."""
    return json.dumps(value, ensure_ascii=False)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _has_vector_type(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone()
    return bool(row and row[0])


class PostgresEngine(Engine):
    """Runs store operations on PostgreSQL 18 + pgvector through psycopg 3.

    ``source`` is a ``psycopg.Connection`` (single-session mode: calls are serialised), a
    ``psycopg_pool.ConnectionPool`` (concurrent calls) or a ``postgresql://`` URL (the engine opens
    and owns a pool, closed by :meth:`close`).
    """

    capabilities = CAPABILITIES

    @classmethod
    def accepts(cls, source: object) -> bool:
        return isinstance(source, (psycopg.Connection, ConnectionPool)) or (
            isinstance(source, str) and source.startswith(("postgresql://", "postgres://")))

    @classmethod
    def recognises_context(cls, security_context: object) -> bool:
        return isinstance(security_context, PostgresEndUserSecurityContext)

    def __init__(self, source: object) -> None:
        self._pool: ConnectionPool[Any] | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._owns_pool = False
        self._lock = threading.RLock()
        self._vector_ready: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()
        self.scan_choices = ScanChoices()
        if isinstance(source, str):
            self._pool = _open_pool(source)
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

    @contextmanager
    def session(self, names: StoreNames,
                security: Any | None = None) -> Iterator[PostgresSession]:
        if security is not None and not isinstance(security, EndUserContext):
            raise SecurityContextError(
                "this end-user security context is not a PostgreSQL context; create it with "
                "oracleagentmemory.core.deepsec.create_end_user_security_context")
        try:
            if self._pool is not None:
                with self._pool.connection() as conn:
                    seal = claim_seal(self._pool, conn)
                    yield from self._transaction(conn, names, security, seal)
                    if isinstance(self._pool, SealingPool) and seal is not None and seal.kept:
                        self._pool.reseal(conn, seal)  # the database accepted it: kept
            else:
                assert self._conn is not None
                with self._lock:
                    yield from self._transaction(self._conn, names, security)
        except (psycopg.Error, PoolTimeout, PoolClosed) as exc:
            raise translate(exc) from exc
        except UnicodeEncodeError as exc:  # a lone surrogate in a bound value
            raise not_unicode(exc) from exc

    def _transaction(self, conn: psycopg.Connection[Any], names: StoreNames,
                     security: Any | None, seal: SessionSeal | None = None
                     ) -> Iterator[PostgresSession]:
        """One transaction; with ``security``, applied, verified, then cleared and verified.

        The assertion lives in a transaction-local setting, so commit or rollback removes it;
        afterwards the engine checks that it is gone and discards a connection where it is not.
        On an idle connection (always, from a pool) the context is applied with the
        transaction's first statement and the check shares the round trip of ``COMMIT``; a
        session whose first work is a read runs all of it in one round trip
        (:class:`~.context_sql.ContextTransaction`). Inside a caller's open transaction each
        step runs on its own. ``seal``: the connection's seal when the engine's own pool lent
        it (:mod:`.session_seals`).
        """
        if conn.closed:
            raise DatabaseUnavailableError("the database connection is closed")
        self.ensure_vector_adapters(conn)
        if security is not None and conn.info.transaction_status == TransactionStatus.IDLE:
            with context_transaction(conn, security, deferred=True, seal=seal) as context:
                yield PostgresSession(conn, self, names, security, context)
            return
        try:
            with conn.transaction():
                if security is not None:
                    apply_security_context(conn, security)
                yield PostgresSession(conn, self, names, security)
        finally:
            if security is not None:
                clear_security_context(conn)

    def ensure_vector_adapters(self, conn: psycopg.Connection[Any]) -> None:
        """Register pgvector's adapters on ``conn`` once, if the extension is installed.

        JSON values are dumped as UTF-8 text rather than ASCII escapes, so a lone surrogate in
        metadata fails to encode here (a typed error) instead of reaching the database as an
        escape it refuses.
        """
        if conn in self._vector_ready:
            return
        set_json_dumps(_json_text, context=conn)
        with conn.transaction():
            present = _has_vector_type(conn)
            if present:
                register_vector(conn)
        if present:
            self._vector_ready.add(conn)

    def close(self) -> None:
        if self._owns_pool and self._pool is not None:
            self._pool.close()
