"""The Oracle engine: python-oracledb (thin mode) connections and pools, transactions, and the
end-user security context of each operation.

Not run against a live database: no Oracle database is reachable where it was written. Every
statement it runs is pinned by a golden file (``tests/golden/oracle_engine/``); the sequence
here is type-checked against python-oracledb's real classes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import oracledb

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import Engine, EngineCapabilities
from oracleagentmemory.engines.oracle import context as contexts
from oracleagentmemory.engines.oracle.ddl import LATEST_SCHEMA_VERSION, MAX_VECTOR_DIM
from oracleagentmemory.engines.oracle.driver_errors import is_connection_lost, translate
from oracleagentmemory.engines.oracle.names import MAX_IDENTIFIER_BYTES, OracleObjects
from oracleagentmemory.engines.oracle.open_sessions import OpenSessions
from oracleagentmemory.engines.oracle.schema_ops import scalar
from oracleagentmemory.engines.oracle.schema_sql import current_schema
from oracleagentmemory.engines.oracle.session import OracleSession
from oracleagentmemory.engines.oracle.url import is_oracle_url, parse_oracle_url
from oracleagentmemory.engines.oracle.verified_users import VerifiedUsers
from oracleagentmemory.engines.scan_choices import ScanChoices
from oracleagentmemory.engines.text_values import not_unicode
from oracleagentmemory.errors import (
    DatabaseUnavailableError,
    InvalidArgumentTypeError,
    SecurityContextError,
)

CAPABILITIES = EngineCapabilities(
    name="oracle",
    latest_schema_version=LATEST_SCHEMA_VERSION,
    identifier_fold="upper",
    max_identifier_length=MAX_IDENTIFIER_BYTES,
    max_indexed_vector_dim=MAX_VECTOR_DIM,
)


URL_POOL_MIN = 0
URL_POOL_MAX = 4
"""Size of the pool the engine opens from an ``oracle://`` URL (no connection until used)."""

SAVEPOINT = "oam_engine_session"
"""The savepoint an operation inside a caller's open transaction starts from."""


class OracleEngine(Engine):
    """Runs store operations on Oracle AI Database 26ai through python-oracledb.

    ``source`` is an ``oracledb.ConnectionPool`` (concurrent calls; a connection that fails
    mid-operation, or whose end-user context cannot be verified cleared, is dropped from the
    pool), an ``oracledb.Connection`` (single-session mode: calls are serialised) or an
    ``oracle://`` URL (:mod:`.url`), from which the engine opens a small pool of its own, closed
    by :meth:`close` (a pool the caller builds carries any other settings, e.g. access tokens).
    """

    capabilities = CAPABILITIES

    @classmethod
    def accepts(cls, source: object) -> bool:
        return isinstance(source, (oracledb.Connection, oracledb.ConnectionPool)) or \
            is_oracle_url(source)

    @classmethod
    def recognises_context(cls, security_context: object) -> bool:
        return contexts.recognises_context(security_context)

    def __init__(self, source: object) -> None:
        self._pool: oracledb.ConnectionPool | None = None
        self._conn: oracledb.Connection | None = None
        self._lock = threading.RLock()
        self._open = OpenSessions()  # the standalone connection's open (nested) sessions
        self.scan_choices = ScanChoices()
        self._poisoned = False
        self._login_schema: str | None = None
        self._owns_pool = False
        if isinstance(source, oracledb.ConnectionPool):
            self._pool = source
        elif isinstance(source, oracledb.Connection):
            self._conn = source
        elif is_oracle_url(source):
            assert isinstance(source, str)
            self._pool = oracledb.create_pool(**parse_oracle_url(source).connect_arguments(),
                                              min=URL_POOL_MIN, max=URL_POOL_MAX, increment=1)
            self._owns_pool = True
        else:
            hint = ("; the SDK's *_async methods run on a synchronous pool (in worker "
                    "threads): pass oracledb.create_pool(...)"
                    if isinstance(source, (oracledb.AsyncConnection, oracledb.AsyncConnectionPool))
                    else "")
            raise InvalidArgumentTypeError(
                "pool must be an oracledb ConnectionPool or Connection, or an oracle:// URL, "
                f"got {type(source).__name__}{hint}", argument="pool")

    @contextmanager
    def session(self, names: StoreNames, security: Any | None = None) -> Iterator[OracleSession]:
        if security is not None and not contexts.recognises_context(security):
            raise SecurityContextError(
                "this end-user security context is not python-oracledb's; create it with "
                "oracledb.create_end_user_security_context")
        try:
            if self._pool is not None:
                yield from self._pooled(self._pool, names, security)
            else:
                assert self._conn is not None
                with self._lock:
                    if self._poisoned:
                        raise SecurityContextError(
                            "this connection's end-user context could not be verified cleared; "
                            "it serves nobody any more: give the store a new connection")
                    with self._open.entered(security) as attach:
                        if attach or security is None:
                            yield from self._transaction(self._conn, names, security,
                                                         self._poison)
                        else:  # nested in a session already running in this context
                            yield from self._inside_context(self._conn, names, security)
        except oracledb.Error as exc:
            raise translate(exc) from exc
        except UnicodeEncodeError as exc:  # a lone surrogate in a bound value
            raise not_unicode(exc) from exc

    def _pooled(self, pool: oracledb.ConnectionPool, names: StoreNames,
                security: Any | None) -> Iterator[OracleSession]:
        conn = pool.acquire()
        dropped = False

        def drop(bad: oracledb.Connection) -> None:
            nonlocal dropped
            if not dropped:
                dropped = True
                pool.drop(bad)

        try:
            yield from self._transaction(conn, names, security, drop)
        except oracledb.Error as exc:
            if is_connection_lost(exc):
                drop(conn)
            raise
        finally:
            if not dropped:
                pool.release(conn)

    def _poison(self, conn: oracledb.Connection) -> None:
        """A borrowed standalone connection whose context could not be verified off: take the
        context off as far as the driver can, and refuse every later operation on it."""
        self._poisoned = True
        with contextlib.suppress(oracledb.Error):
            conn.clear_end_user_security_context()

    def _owner(self, conn: oracledb.Connection, names: StoreNames) -> str:
        """The schema holding the store: its own, else the login's current schema, resolved
        once per engine and before any end-user context is attached (an end-user session's
        current schema is not the store's)."""
        if names.schema is not None:
            return names.schema
        if self._login_schema is None:
            self._login_schema = str(scalar(conn, current_schema()))
        return self._login_schema

    # --- the end user each context was verified as (python-oracledb's names nobody) --------
    def verified_username(self, security: object) -> str | None:
        """The end user ``SELECT ORA_END_USER_CONTEXT.username FROM dual`` returned when this
        engine last attached ``security``; ``None`` before its first operation here."""
        return self._verified_users().get(security)

    def _verified_users(self) -> VerifiedUsers:
        """This engine's memo of verified end users, made on first use (``setdefault`` is
        atomic: concurrent first operations share one memo)."""
        memo: VerifiedUsers = self.__dict__.setdefault("_verified_user_memo", VerifiedUsers())
        return memo

    def _transaction(self, conn: oracledb.Connection, names: StoreNames, security: Any | None,
                     discard: Callable[[oracledb.Connection], None]) -> Iterator[OracleSession]:
        """One transaction, inside the end-user context when ``security`` is given: attached
        and verified before any work, cleared and verified after commit or rollback."""
        if not conn.is_healthy():
            discard(conn)
            raise DatabaseUnavailableError("the database connection is not usable")
        objects = OracleObjects.of(names, self._owner(conn, names))
        if security is None:
            yield from self._work(conn, objects, None, discard)
            return
        with contexts.attached_context(conn, security, None, discard=discard) as attached:
            self._verified_users().remember(security, attached.username)
            yield from self._work(conn, objects, attached.username, discard)

    def _inside_context(self, conn: oracledb.Connection, names: StoreNames,
                        security: Any) -> Iterator[OracleSession]:
        """A session nested in an outer one on the same connection and context
        (:mod:`.open_sessions`): the outer session attached the context and clears it; this one
        neither attaches nor clears, so the outer one's remaining work still runs in it."""
        objects = OracleObjects.of(names, self._owner(conn, names))
        yield from self._work(conn, objects, self._verified_users().get(security), self._poison)

    def _work(self, conn: oracledb.Connection, objects: OracleObjects, end_user: str | None,
              discard: Callable[[oracledb.Connection], None]) -> Iterator[OracleSession]:
        """The work, committed or rolled back; the store lock (which survives commits) is
        released after that. Inside a caller's own open transaction (a standalone connection)
        the work runs from a savepoint and the caller's transaction stays open."""
        nested = conn.transaction_in_progress
        if nested:
            conn.cursor().execute(f"SAVEPOINT {SAVEPOINT}")
        session = OracleSession(conn, self, objects, end_user)
        try:
            try:
                yield session
            except BaseException:
                if nested:
                    conn.cursor().execute(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")
                else:
                    conn.rollback()
                raise
            if not nested:
                conn.commit()
        finally:
            try:
                session.release_store_lock()
            except oracledb.Error:
                discard(conn)  # the lock ends with the session
                raise

    def close(self) -> None:
        """Close the pool opened from a URL; borrowed pools and connections stay open (the
        caller owns them)."""
        if self._owns_pool and self._pool is not None:
            self._owns_pool = False
            with contextlib.suppress(oracledb.Error):
                self._pool.close(force=True)
