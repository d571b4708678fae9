"""Apply, verify and clear an end-user security context on a PostgreSQL connection.

What of psycopg this uses: ``psycopg.Connection`` (``execute``, ``rollback``, ``close``,
``cancel_safe``, ``pgconn``, ``info``), ``psycopg.pq`` (the documented libpq wrapper:
``send_prepare``, ``send_query_prepared``, ``send_query_params``, ``send_query``,
``enter_pipeline_mode``, ``pipeline_sync``, ``exit_pipeline_mode``, ``flush``,
``consume_input``, ``is_busy``, ``get_result``, ``socket``, the result accessors) and
``psycopg.errors``. A round trip's waits on the socket are its own (:func:`_wait`): the running
event loop's ``add_reader``/``add_writer`` inside a bridged greenlet
(:mod:`~oracleagentmemory.engines.postgres.event_loop`), otherwise ``select.poll``; no
``psycopg.generators`` and no ``Connection.wait``. Two things beyond psycopg's API reference
remain: ``Connection.lock`` (held so that no other statement of the connection runs within a
flight) and ``psycopg.adapt.Transformer`` (dumps values and loads rows with the connection's
adapters).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import select
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.pq import TransactionStatus

from oracleagentmemory.engines.postgres.event_loop import (
    CANCEL_TIMEOUT_SECONDS,
    await_in_bridge,
    in_bridge,
)
from oracleagentmemory.engines.postgres.security_schema import ASSERTION_SETTING, SEALED_APPLY
from oracleagentmemory.engines.postgres.session_seals import SessionSeal
from oracleagentmemory.errors import SecurityContextError

_APPLY = "SELECT oam_sec.apply_assertion(%s)"
_APPLY_PARAM = _APPLY.replace("%s", "$1").encode()  # the same statement, for libpq
_APPLY_OR_FAIL = (
    "SELECT COALESCE(oam_sec.apply_assertion(%s), pg_catalog.int4div(1, pg_catalog.int4("
    "pg_catalog.statement_timestamp() IS NULL))::pg_catalog.text)")
"""The apply statement that fails (division by zero) instead of answering NULL when the
database refuses the assertion, so that in a pipeline the server skips every statement queued
after it: none of them runs on a session the database refused (one whose own SQL may have
replaced a named statement of the SDK's, which would then receive the caller's values).
COALESCE evaluates the division only when the apply answered NULL; its divisor is a zero the
planner cannot fold (``statement_timestamp()`` is not immutable), so it fails only then."""
_APPLY_OR_FAIL_PARAM = _APPLY_OR_FAIL.replace("%s", "$1").encode()
_APPLY_SEALED_OR_FAIL = _APPLY_OR_FAIL_PARAM.replace(
    b"oam_sec.apply_assertion($1)", b"oam_sec.apply_assertion($1, $2)")
"""The apply of a connection the SDK pools (:mod:`.session_seals`) whose seal is new (the
database scans the session), failing as :data:`_APPLY_OR_FAIL` does; with the seal as ``$2``.
While the seal is kept, the named :data:`~.security_schema.SEALED_APPLY` runs instead."""


@dataclass(frozen=True)
class _SealedStatements:
    """The named statements of a sealed session's flights, prepared together (one number)
    in the first flight after its clean-session scan passed: parsed once per connection."""

    begin: bytes
    apply: bytes
    commit: bytes
    show: bytes

    @classmethod
    def numbered(cls, number: int) -> _SealedStatements:
        return cls(*(f"oam_{kind}_{number}".encode()
                     for kind in ("begin", "apply", "commit", "show")))

    def prepare(self, pgconn: pq.abc.PGconn) -> int:
        """Queue their preparation; the number of results it adds."""
        pgconn.send_prepare(self.begin, b"BEGIN")
        pgconn.send_prepare(self.apply, SEALED_APPLY.encode())
        pgconn.send_prepare(self.commit, b"COMMIT")
        pgconn.send_prepare(self.show, b"SHOW " + ASSERTION_SETTING.encode())
        return 4


def _assertion(security: Any) -> str:
    if not hasattr(security, "assertion"):
        raise SecurityContextError(
            "this end-user security context is not a PostgreSQL context; create it with "
            "oracleagentmemory.core.deepsec.create_end_user_security_context"
        )
    return str(security.assertion())


def _no_security_schema() -> SecurityContextError:
    return SecurityContextError(
        "the database has no oam_sec security schema; the admin identity must install "
        "Deep Data Security policies first"
    )


def _check_seen(row: tuple[Any, ...] | None, security: Any,
                conn: psycopg.Connection[Any]) -> None:
    """Fail unless the database verified ``security``'s user; a refused connection is closed.

    The database also refuses every assertion on a session whose own SQL left objects that
    could stand in for the SDK's statements (``security_schema._PRISTINE_SESSION``): such a
    connection must not serve anyone again.
    """
    seen = row[0] if row else None
    if seen is None or not security.record_verified(seen):
        conn.close()
        raise _refused(security)


def _refused(security: Any) -> SecurityContextError:
    return SecurityContextError(
        "the database does not accept the end-user context for "
        f"{security.verified_username() or 'the token bearer'!r} "
        "(unknown or expired application credential or token, unknown local end user, an "
        "identity provider or store the application is not bound to, a login that is not "
        "the application's runtime login, or a session whose SQL left prepared statements "
        "or temporary tables)"
    )


def apply_security_context(conn: psycopg.Connection[Any], security: Any) -> None:
    """Set the signed assertion for this transaction and check the database sees the user."""
    assertion = _assertion(security)
    try:
        # Never a named prepared statement: SQL on this connection could replace it.
        row = conn.execute(_APPLY, [assertion], prepare=False).fetchone()
    except psycopg.errors.UndefinedFunction as exc:
        raise _no_security_schema() from exc
    _check_seen(row, security, conn)


class ContextTransaction:
    """The transaction of :func:`context_transaction`, opened when first needed.

    :meth:`begin` sends ``BEGIN`` and the apply statement (one round trip) unless the
    transaction is open already. :meth:`read_first` runs a session's first statements, when
    they only read, in the same round trip as ``BEGIN``, the apply, ``COMMIT`` and the end check.
    :meth:`read_open` runs statements in the transaction in one round trip, with ``BEGIN`` and
    the apply when it is not open yet (a search's first candidate round).
    """

    def __init__(self, conn: psycopg.Connection[Any], security: Any,
                 seal: SessionSeal | None = None) -> None:
        self.conn = conn
        self.security = security
        self.assertion = _assertion(security)
        self.seal = seal
        """The connection's seal when the SDK pools it (:mod:`.session_seals`), else ``None``
        (every apply scans the session)."""
        self.open = False
        """Whether a transaction of this context is open on the connection now."""
        self.used = False
        """Whether the context was applied at all (a session that ran nothing still checks
        that the database accepts it)."""
        self._deciding = threading.RLock()
        """Held while :meth:`begin` or :meth:`read_first` decides and makes its round trip:
        threads sharing a store's transaction block (the async twins' worker threads) open
        one transaction, not two on top of each other."""

    def begin(self) -> None:
        """Open the transaction and apply the context, unless it is open already."""
        with self._deciding:
            self._begin()

    def _begin(self) -> None:
        if self.open:
            return
        conn = self.conn
        for attempt in (1, 2):
            try:
                row = _begin_and_apply(conn, self.assertion, self.seal)
                break
            except psycopg.errors.UndefinedFunction as exc:
                _roll_back(conn)
                raise _no_security_schema() from exc
            except psycopg.errors.InvalidSqlStatementName:
                # A named statement is gone (a rollback through psycopg deallocates every
                # statement of the session): prepared again, once.
                _roll_back(conn)
                if attempt == 2:
                    conn.close()
                    raise
            except psycopg.errors.DivisionByZero:
                conn.close()  # the sealed apply's refusal
                raise _refused(self.security) from None
            except psycopg.Error:
                # A connection that cannot take a context (a read-only or timed-out session,
                # say) serves nobody again: left in the pool it would fail every later user.
                conn.close()
                raise
        self.open = self.used = True
        _check_seen(row, self.security, conn)
        self._sealed()

    def _sealed(self) -> None:
        """The database accepted the apply: it holds the seal now (or, if this transaction
        rolls back, an earlier one, and then scans the session again)."""
        if self.seal is not None:
            self.seal.kept = True

    def read_first(self, statements: Sequence[tuple[str, Sequence[Any]]]
                   ) -> list[list[dict[str, Any]]] | None:
        """Rows of each read-only statement (``%s`` placeholders), run as the context's first
        and only work in one round trip (``BEGIN``, the apply, the statements, ``COMMIT``, the
        end check); ``None`` when the context was applied before (the caller runs them in the
        open transaction).

        Their transaction ends with them: a later statement of the session opens another one
        (:meth:`begin`). Under READ COMMITTED (the only level the assertion works at) each
        statement reads its own snapshot either way, and these take no locks. No row reaches
        the caller before the database's answer to the apply is checked; if it refuses the
        context, the apply fails and the server runs none of the statements. On a connection
        of a pool the SDK built, the statements run as named prepared statements of this
        connection, each prepared in the flight of its first use; on an application's
        connection, unnamed (nothing the SDK cannot watch keeps them).
        """
        with self._deciding:
            if self.used:
                return None
            self.used = True
            rows = self._read_first(statements)
            self._sealed()
            return rows

    def read_open(self, statements: Sequence[tuple[bytes, Sequence[Any]]]
                  ) -> list[list[tuple[Any, ...]]]:
        """Rows of each ``$n`` statement, run in this context's transaction in one round trip:
        after ``BEGIN`` and the apply when the transaction is not open yet (it stays open for
        the session's later work, and no row reaches the caller before the database's answer
        to the apply is checked). Named as :meth:`read_first`'s statements are, so on a pool of
        the SDK's each is planned once per connection."""
        with self._deciding:
            if self.open:
                return _flight(self.conn, self.security, self.assertion, statements, self.seal,
                               begin=False, commit=False, rows_as=_tuple_maker)
            rows = _opening_flight(self.conn, self.security, self.assertion, statements,
                                   self.seal, commit=False, rows_as=_tuple_maker)
            self.open = self.used = True
            self._sealed()
            return rows

    def read_last(self, statements: Sequence[tuple[str, Sequence[Any]]]
                  ) -> list[list[dict[str, Any]]]:
        """Rows of each read-only statement (``%s`` placeholders) as the open transaction's last
        work, in one round trip with ``COMMIT`` and the end check: the transaction ends with
        them (a later statement of the session opens another one, :meth:`begin`). The
        transaction did nothing but read before (a search's rounds): when a named statement is
        gone or no longer fits its table, it is rolled back and the statements run again in
        a transaction of their own (:meth:`read_first`'s flight), once. Another failure leaves
        the transaction open for the block's rollback."""
        with self._deciding:
            if not self.open:
                raise RuntimeError("read_last needs the context's transaction open")
            numbered = [(_numbered(q), p) for q, p in statements]
            try:
                rows: list[list[dict[str, Any]]] = _flight(
                    self.conn, self.security, self.assertion, numbered, self.seal,
                    begin=False, commit=True, rows_as=_dict_maker)
            except _STALE_STATEMENT:
                self.open = False
                _roll_back(self.conn)
                _forget_names(self.conn)
                rows = _flight(self.conn, self.security, self.assertion, numbered, self.seal,
                               begin=True, commit=True, rows_as=_dict_maker)
                self._sealed()
                return rows
            self.open = False
            return rows

    def _read_first(self, statements: Sequence[tuple[str, Sequence[Any]]]
                    ) -> list[list[dict[str, Any]]]:
        return _opening_flight(self.conn, self.security, self.assertion,
                               [(_numbered(q), p) for q, p in statements], self.seal,
                               commit=True, rows_as=_dict_maker)


_STALE_STATEMENT = (psycopg.errors.InvalidSqlStatementName, psycopg.errors.FeatureNotSupported)
"""A named statement of the engine's is gone (a rollback through psycopg deallocates every
statement of the session; so does ``DEALLOCATE ALL``) or no longer fits its table ("cached plan
must not change result type" after the owner altered a column's type, which would fail it on
this connection for good)."""


def _opening_flight(conn: psycopg.Connection[Any], security: Any, assertion: str,
                    statements: Sequence[tuple[bytes, Sequence[Any]]], seal: SessionSeal | None,
                    *, commit: bool,
                    rows_as: Callable[[list[str]], Callable[[Sequence[Any]], Any]]
                    ) -> list[list[Any]]:
    """:func:`_flight` with ``BEGIN`` and the apply; when a named statement went stale
    (:data:`_STALE_STATEMENT`: the failed flight rolled back), its names are forgotten and the
    flight runs again under new ones, once."""
    try:
        return _flight(conn, security, assertion, statements, seal, begin=True, commit=commit,
                       rows_as=rows_as)
    except _STALE_STATEMENT:
        _forget_names(conn)
        return _flight(conn, security, assertion, statements, seal, begin=True, commit=commit,
                       rows_as=rows_as)


_PREPARED: weakref.WeakKeyDictionary[psycopg.Connection[Any],
                                      dict[tuple[bytes, tuple[int, ...] | None], bytes]] = (
    weakref.WeakKeyDictionary())
"""The statements :func:`_flight` prepared on each connection: name by query and
parameter types.
Names are never reused, so a statement forgotten here but left on the server is never
executed for another query."""
_STATEMENT_NUMBERS = itertools.count()
_SEALED: weakref.WeakKeyDictionary[psycopg.Connection[Any], _SealedStatements] = (
    weakref.WeakKeyDictionary())
"""The named statements of each sealed connection (:class:`_SealedStatements`)."""
MAX_PREPARED_READS = 32
"""Statements prepared per connection for first reads; shapes past them run unnamed (a
metadata filter's shape is the caller's, and every prepared statement adds to what the apply's
clean-session check reads)."""


_STALE: weakref.WeakKeyDictionary[psycopg.Connection[Any], set[bytes]] = (
    weakref.WeakKeyDictionary())
"""Names of statements the engine stopped using on each connection (:func:`_forget_names`)
that may still be prepared on the server."""


def _forget_names(conn: psycopg.Connection[Any], reads: bool = True) -> None:
    """Run none of the engine's named statements of ``conn`` again (the sealed flight's and,
    with ``reads``, the reads'): later flights prepare new ones under names never used before.

    The old ones are closed on the server by the next flight that applies a context, right
    after the apply (:func:`_queue_closes`), so they do not pile up there with every new seal
    or failed operation; after it, so that an SQL-level statement planted under one of these
    names still fails the apply's clean-session scan first.
    """
    stale = _STALE.setdefault(conn, set())
    prepared = _PREPARED.pop(conn, None) if reads else None
    if prepared:
        stale.update(prepared.values())
    sealed = _SEALED.pop(conn, None)
    if sealed is not None:
        stale.update((sealed.begin, sealed.apply, sealed.commit, sealed.show))


def _forget_new(conn: psycopg.Connection[Any],
                prepared: dict[tuple[bytes, tuple[int, ...] | None], bytes],
                new: list[tuple[bytes, tuple[int, ...] | None]]) -> None:
    """Forget the reads a failed flight was to prepare (perhaps prepared, perhaps not)."""
    for key in new:
        name = prepared.pop(key, None)
        if name is not None:
            _STALE.setdefault(conn, set()).add(name)


def _queue_closes(conn: psycopg.Connection[Any]) -> list[bytes]:
    """Queue a protocol-level close of each forgotten statement of ``conn``; the names (one
    result each). Closing a name the server does not hold is no error. Without libpq 17's
    close call the statements stay until the session ends, as before."""
    stale = _STALE.get(conn)
    if not stale:
        return []
    names = sorted(stale)
    try:
        for name in names:
            conn.pgconn.send_close_prepared(name)
    except psycopg.NotSupportedError:
        return []
    return names


def _closed(conn: psycopg.Connection[Any], names: list[bytes]) -> None:
    """The flight that closed ``names`` succeeded: they are gone from the server."""
    stale = _STALE.get(conn)
    if stale is not None and names:
        stale.difference_update(names)


_PLACEHOLDER = re.compile(r"%s|%%")


@lru_cache(maxsize=256)
def _numbered(query: str) -> bytes:
    """``query`` with its ``%s`` placeholders as libpq's ``$1``, ``$2``... (``%%`` as ``%``)."""
    numbers = itertools.count(1)
    return _PLACEHOLDER.sub(
        lambda match: "%" if match.group() == "%%" else f"${next(numbers)}", query).encode()


def _queue_begin_and_apply(conn: psycopg.Connection[Any], assertion: str,
                           seal: SessionSeal | None, or_fail: bool
                           ) -> tuple[_SealedStatements | None, int]:
    """Queue ``BEGIN`` and the apply statement in the connection's pipeline; the named
    statements the flight uses (``None``: unnamed ones) and the index of the apply's result.

    Without a seal, unnamed statements (:data:`_APPLY_OR_FAIL` with ``or_fail``, else
    :data:`_APPLY`): parsed anew with each call, so no SQL run earlier on this connection can
    stand in for them (a named one could be deallocated and replaced). With a new seal (SQL not
    the SDK's may have run on the session since the SDK last had it), the unnamed sealed apply,
    whose scan then runs; the statements named before are forgotten and never run again. With a
    kept seal, nothing but the SDK's own statements ran on the session since its last scan,
    which found no prepared statement of SQL's: the named statements are the SDK's, prepared
    in this flight if they are not yet, and the apply is
    :data:`~.security_schema.SEALED_APPLY`.
    """
    pgconn = conn.pgconn
    if seal is None or not seal.kept:
        _forget_names(conn, reads=False)
        pgconn.send_query_params(b"BEGIN", None)
        if seal is None:
            pgconn.send_query_params(_APPLY_OR_FAIL_PARAM if or_fail else _APPLY_PARAM,
                                     [assertion.encode()])
        else:
            pgconn.send_query_params(_APPLY_SEALED_OR_FAIL,
                                     [assertion.encode(), seal.token.encode()])
        return None, 1
    named = _SEALED.get(conn)
    prepared = 0
    if named is None:
        named = _SEALED[conn] = _SealedStatements.numbered(next(_STATEMENT_NUMBERS))
        prepared = named.prepare(pgconn)
    pgconn.send_query_prepared(named.begin, None)
    pgconn.send_query_prepared(named.apply, [assertion.encode(), seal.token.encode()])
    return named, prepared + 1


def _dict_maker(columns: list[str]) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """Rows as ``psycopg.rows.dict_row`` makes them: column name to value."""
    return lambda values: dict(zip(columns, values, strict=True))


def _tuple_maker(columns: list[str]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """Rows as tuples."""
    return tuple


def _flight(conn: psycopg.Connection[Any], security: Any, assertion: str,
            statements: Sequence[tuple[bytes, Sequence[Any]]], seal: SessionSeal | None, *,
            begin: bool, commit: bool,
            rows_as: Callable[[list[str]], Callable[[Sequence[Any]], Any]]) -> list[list[Any]]:
    """``statements`` (``$n`` form) as one libpq pipeline: one round trip; with ``begin``,
    after ``BEGIN`` and the apply; with ``commit``, followed by ``COMMIT`` and the end check.

    libpq's pipeline directly, as :func:`_begin_and_apply`: one wait for the whole flight,
    where psycopg's ``Connection.pipeline()`` waits once per statement. Values are dumped and
    rows loaded by psycopg's adapters of ``conn`` (a :class:`~psycopg.adapt.Transformer`),
    each made by ``rows_as(column names)``. On a sealed connection each statement is named
    (``oam_read_N``, prepared in the flight of its first use, up to
    :data:`MAX_PREPARED_READS` per connection); otherwise unnamed.

    A failure of ``BEGIN`` or the apply closes the connection (or, for a named statement that
    is gone, rolls back and raises it for the caller to run again); a later failure rolls the
    transaction back when ``begin`` opened it, and otherwise leaves it to the caller's
    rollback.
    """
    pgconn = conn.pgconn
    prepared = _PREPARED.setdefault(conn, {})
    # On a connection of an application's pool (no seal) the engine names nothing: the next
    # transaction forgets every name first (_forget_named_statements), and names forgotten
    # here but left on the server would pile up there with every operation.
    limit = MAX_PREPARED_READS if seal is not None else 0
    transformer = Transformer(conn)
    reads: list[int] = []
    new: list[tuple[bytes, tuple[int, ...] | None]] = []
    named: _SealedStatements | None = None
    applied = -1
    with conn.lock:  # psycopg's own lock: no other statement of the connection between
        pgconn.enter_pipeline_mode()
        try:
            closing: list[bytes] = []
            if begin:
                # Nothing named of a session SQL may have reached runs before the database
                # checked the session (_queue_begin_and_apply).
                named, applied = _queue_begin_and_apply(conn, assertion, seal, or_fail=True)
                closing = _queue_closes(conn)
            elif seal is not None and seal.kept:
                named = _SEALED.get(conn)
            position = applied + 1 + len(closing)
            for query, params in statements:
                values = transformer.dump_sequence(params, [PyFormat.AUTO] * len(params))
                key = (query, transformer.types)
                name = prepared.get(key)
                if name is None and len(prepared) >= limit:
                    pgconn.send_query_params(query, values, transformer.types,
                                             transformer.formats)
                else:
                    if name is None:
                        name = prepared[key] = f"oam_read_{next(_STATEMENT_NUMBERS)}".encode()
                        new.append(key)
                        pgconn.send_prepare(name, query, transformer.types)
                        position += 1
                    pgconn.send_query_prepared(name, values, transformer.formats)
                reads.append(position)
                position += 1
            if commit and named is None:
                pgconn.send_query_params(b"COMMIT", None)
                pgconn.send_query_params(b"SHOW " + ASSERTION_SETTING.encode(), None)
            elif commit and named is not None:
                pgconn.send_query_prepared(named.commit, None)
                pgconn.send_query_prepared(named.show, None)
            pgconn.pipeline_sync()
            results = _results(conn, pipeline=True)
        except BaseException:
            _forget_new(conn, prepared, new)
            _forget_names(conn, reads=False)  # perhaps never prepared either
            raise
        finally:
            if pgconn.status != pq.ConnStatus.BAD:
                try:
                    pgconn.exit_pipeline_mode()
                except psycopg.OperationalError:
                    conn.close()  # results left unread: the session serves nobody again
    failed = next((n for n, r in enumerate(results) if r.status in _FAILED), None)
    if failed is not None:
        # perhaps never prepared: the server skips what follows an error
        _forget_new(conn, prepared, new)
        error = _error(conn, results[failed])
        if failed <= applied:  # BEGIN or the apply: the server ran none of the statements
            _forget_names(conn, reads=False)
            if isinstance(error, psycopg.errors.InvalidSqlStatementName):
                _roll_back(conn)  # a named statement is gone: the caller prepares them again
                raise error
            conn.close()
            if isinstance(error, psycopg.errors.UndefinedFunction):
                raise _no_security_schema() from error
            if isinstance(error, psycopg.errors.DivisionByZero):
                raise _refused(security) from None
            raise error
        if begin:
            _roll_back(conn)
            _check_seen(_text_row(conn, results[applied]), security, conn)
        raise error
    if begin:
        _check_seen(_text_row(conn, results[applied]), security, conn)
        _closed(conn, closing)
    if commit:
        _discard_unless_cleared(conn, _text_row(conn, results[-1]))
    found = []
    for index in reads:
        result = results[index]
        columns = [(result.fname(i) or b"").decode() for i in range(result.nfields)]
        transformer.set_pgresult(result)
        found.append(transformer.load_rows(0, result.ntuples, rows_as(columns)))
    return found


_FAILED = (pq.ExecStatus.FATAL_ERROR, pq.ExecStatus.PIPELINE_ABORTED)


def _error(conn: psycopg.Connection[Any], result: pq.abc.PGresult) -> psycopg.Error:
    if result.status == pq.ExecStatus.PIPELINE_ABORTED:
        return psycopg.OperationalError("the pipeline was aborted")
    return psycopg.errors.error_from_result(result, encoding=conn.info.encoding)


def _text_row(conn: psycopg.Connection[Any], result: pq.abc.PGresult) -> tuple[str | None]:
    raw = result.get_value(0, 0) if result.ntuples else None
    return (None if raw is None else raw.decode(conn.info.encoding),)


@contextmanager
def context_transaction(conn: psycopg.Connection[Any], security: Any,
                        deferred: bool = False, seal: SessionSeal | None = None
                        ) -> Iterator[ContextTransaction]:
    """One transaction on an idle connection, run as ``security``'s end user.

    The steps of :func:`apply_security_context` and :func:`clear_security_context` with two
    round trips fewer: ``BEGIN`` and the apply statement are pipelined, and ``COMMIT`` and the
    check that the assertion is gone travel as one simple-protocol query. Neither carries a
    secret: the assertion is only ever a
    bound parameter, never statement text (which other sessions of the same login could read
    in ``pg_stat_activity``). A failed transaction is rolled back through psycopg
    (:func:`_roll_back`). The check completes before the connection is released; a
    connection that fails it is closed.

    With ``deferred``, nothing is sent until the block asks (:class:`ContextTransaction`): its
    first reads may then travel with ``BEGIN``, the apply and ``COMMIT`` in one round trip.
    A context whose user the database has not verified yet is applied at once all the same.
    A block that ran nothing still applies the context once, so the database verifies it.

    ``seal``: the connection's seal, when a pool of the SDK's lent it to the engine
    (:mod:`.session_seals`); the apply then skips the clean-session scan while the seal is kept.
    """
    # The transaction is opened and ended here, through libpq, whatever the connection's
    # autocommit setting: psycopg reads the transaction status from libpq, so inside it sends
    # no BEGIN of its own and nests its transaction blocks as savepoints.
    if seal is None or not seal.kept:
        # Nothing vouches that only the SDK used the session since: run no statement named
        # before (an application's pool or connection, every time; a sealing pool's, on a
        # new seal).
        _forget_named_statements(conn)
    transaction = ContextTransaction(conn, security, seal)
    if not deferred or security.verified_username() is None:
        # A context whose user the database has not named yet (a token's first use) is applied
        # at once: code inside the block asks for that name (a record's default owner) before
        # its first statement, and must not find none.
        transaction.begin()
    try:
        yield transaction
        if not transaction.used:
            transaction.begin()
    except BaseException:
        if transaction.open:
            transaction.open = False
            _roll_back(conn)
        raise
    if not transaction.open:
        return  # the block's only work ended its own transaction (read_first)
    transaction.open = False
    if conn.info.transaction_status == TransactionStatus.INERROR:
        # A statement failed and its error was caught inside the block: COMMIT would roll the
        # transaction back and answer as if it had committed (and past psycopg's cache).
        _roll_back(conn)
        raise psycopg.errors.InFailedSqlTransaction(
            "a statement of the transaction failed, so none of it was stored (rolled back)")
    _commit_and_check(conn)


def _forget_named_statements(conn: psycopg.Connection[Any]) -> None:
    """Run no named statement prepared before: the engine forgets its own (later flights
    prepare them again under names never used before) and psycopg forgets its own (a rollback
    through psycopg clears its cache and deallocates every statement of the session).

    Run on every connection without a kept seal (an application's pool or connection each
    time, a sealing pool's when it comes back with a new seal): code that held the connection
    may have replaced a named statement at the protocol level (a ``Parse`` of the same name),
    which the clean-session scan cannot tell from the SDK's (it refuses only SQL-level
    ``PREPARE``). A name planted ahead collides with the SDK's ``Parse`` and fails the flight.
    Two round trips, and the reads of such a transaction are planned again: the price of a
    pool the SDK cannot watch (a pool it builds keeps its seals). The engine's forgotten
    statements are closed on the server by the next apply's flight (:func:`_forget_names`).
    """
    _forget_names(conn)
    saved = conn.autocommit
    conn.autocommit = False
    try:
        conn.execute("SELECT 1", prepare=False)
        conn.rollback()
    finally:
        conn.autocommit = saved


def _begin_and_apply(conn: psycopg.Connection[Any], assertion: str,
                     seal: SessionSeal | None = None) -> tuple[str | None]:
    """``BEGIN`` and the apply statement as one libpq pipeline: one round trip.

    libpq's pipeline directly rather than psycopg's ``Connection.pipeline()``, whose bookkeeping
    costs more than the round trip it saves. psycopg then sees the open transaction (it reads
    the status from libpq) and sends no ``BEGIN`` of its own. Both are queued by
    :func:`_queue_begin_and_apply` (the sealed apply when ``seal`` is given). The apply also
    gives the transaction ``plan_cache_mode = force_generic_plan`` (a search's HNSW round, whose
    plan depends on the values, sets ``auto`` again). Raises the database
    error of the first failing statement, with the transaction left open for the caller to roll
    back.
    """
    pgconn = conn.pgconn
    with conn.lock:
        pgconn.enter_pipeline_mode()
        try:
            _, applied = _queue_begin_and_apply(conn, assertion, seal, or_fail=False)
            closing = _queue_closes(conn)
            pgconn.pipeline_sync()
            results = _results(conn, pipeline=True)
        finally:
            if pgconn.status != pq.ConnStatus.BAD:
                pgconn.exit_pipeline_mode()
    _raise_first_error(conn, results)
    _closed(conn, closing)
    raw = results[applied].get_value(0, 0) if results[applied].ntuples else None
    return (None if raw is None else raw.decode(conn.info.encoding),)


def _roll_back(conn: psycopg.Connection[Any]) -> None:
    """Roll the failed transaction back through psycopg, then check that no assertion survived.

    psycopg forgets its prepared statements on every rollback it runs (and deallocates them on
    the server). A pipeline that failed part-way can leave its cache naming a statement whose
    preparation the server skipped: kept, that entry fails every later use of the statement
    on this connection, for every later caller of the pool (a ``ROLLBACK`` sent through libpq
    directly hid the rollback from psycopg and left the entry in place).
    """
    _forget_names(conn, reads=False)  # psycopg's rollback may deallocate them
    with suppress(psycopg.Error):  # a broken session: the check finds it closed or discards it
        conn.rollback()
    clear_security_context(conn)


def _commit_and_check(conn: psycopg.Connection[Any]) -> None:
    """Commit and check, in the same round trip, that no assertion survived.

    One simple-protocol query (``COMMIT; SHOW oam.end_user_assertion``), sent through libpq
    directly. ``SHOW`` is a utility statement (nothing to plan) that fails only for a setting
    never defined in the session; once the apply statement has run it is defined.
    """
    pgconn = conn.pgconn
    results: list[pq.abc.PGresult] = []
    try:
        with conn.lock:
            pgconn.send_query(b"COMMIT; SHOW oam.end_user_assertion")
            results = _results(conn, pipeline=False)
        _raise_first_error(conn, results)
        shown = results[-1]
        raw = shown.get_value(0, 0) if len(results) == 2 and shown.ntuples else b"unknown"
        row = (None if raw is None else raw.decode(conn.info.encoding),)
    except psycopg.Error:
        # COMMIT failed (the server rolled back) or the connection broke: check on its own,
        # discarding the connection if that fails, then report the original error.
        clear_security_context(conn)
        if not (conn.closed and _committed(results)):
            raise
        # Committed, and the session then ended (the server shutting down, say): the
        # assertion ended with it; the work is done and must be reported so.
        return
    if conn.closed and _committed(results):
        return  # the session ended after the COMMIT: nothing of it survives
    _discard_unless_cleared(conn, row)


def _committed(results: list[pq.abc.PGresult]) -> bool:
    """Whether the first result says COMMIT completed (a COMMIT of an aborted transaction
    answers ROLLBACK)."""
    return (bool(results) and results[0].status == pq.ExecStatus.COMMAND_OK
            and results[0].command_status == b"COMMIT")


def _results(conn: psycopg.Connection[Any], pipeline: bool) -> list[pq.abc.PGresult]:
    """Send what is queued and collect one result per statement; in pipeline mode up to the
    sync point.

    libpq's non-blocking calls (``psycopg.pq``: ``flush``, ``consume_input``, ``is_busy``,
    ``get_result``) with a wait on the connection's socket between them (:func:`_wait`): on
    the event loop inside a bridged greenlet, where other requests run meanwhile, and otherwise
    a blocking ``poll`` that releases the GIL (as a blocking libpq call would not while this
    backend waits, say, for a lock another thread's transaction holds). Interrupted during a
    wait (a bridged request cancelled, ``KeyboardInterrupt``), the statement is cancelled on
    the server and the connection closed, so that its transaction rolls back and nothing of
    it can commit later.
    """
    pgconn = conn.pgconn
    try:
        while pgconn.flush() != 0:
            if _wait(pgconn.socket, write=True):
                pgconn.consume_input()  # reads notices the server sent meanwhile
        results: list[pq.abc.PGresult] = []
        while True:
            try:
                while pgconn.is_busy():
                    _wait(pgconn.socket, write=False)
                    pgconn.consume_input()
            except psycopg.DatabaseError:
                # The session ended after an error it reported (an idle-in-transaction
                # timeout, say): the caller raises that error.
                if any(r.status == pq.ExecStatus.FATAL_ERROR for r in results):
                    return results
                raise
            result = pgconn.get_result()
            if result is None:
                if not pipeline:
                    return results
                if pgconn.status == pq.ConnStatus.BAD:
                    raise psycopg.OperationalError(
                        "the database connection broke while applying an end-user context")
                continue
            if result.status == pq.ExecStatus.PIPELINE_SYNC:
                return results
            results.append(result)
    except OSError as error:  # the socket closed under the wait
        raise psycopg.OperationalError("connection socket closed") from error
    except Exception:
        raise
    except BaseException:
        _abandon(conn)
        raise


def _wait(fileno: int, write: bool) -> bool:
    """Wait until the socket is readable (or, with ``write``, writable); whether it is readable.

    Inside a bridged greenlet the wait is a future of the running event loop, resolved by
    ``loop.add_reader`` / ``add_writer`` callbacks, which the greenlet awaits on the loop
    (:func:`~.event_loop.await_in_bridge`); elsewhere a blocking ``select.poll``.
    """
    if in_bridge():
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[bool] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(True)

        def writable() -> None:
            if not ready.done():
                ready.set_result(False)

        loop.add_reader(fileno, readable)
        if write:
            loop.add_writer(fileno, writable)
        try:
            return await_in_bridge(ready)
        finally:
            loop.remove_reader(fileno)
            if write:
                loop.remove_writer(fileno)
    poller = select.poll()
    poller.register(fileno, _POLL_WRITE if write else _POLL_READ)
    events = poller.poll()
    return any(mask & _POLL_READ_OR_FAILED for _, mask in events)


_POLL_READ = select.POLLIN | select.POLLPRI
_POLL_WRITE = _POLL_READ | select.POLLOUT
_POLL_READ_OR_FAILED = _POLL_READ | select.POLLERR | select.POLLHUP


def _abandon(conn: psycopg.Connection[Any]) -> None:
    """Interrupted mid-round-trip: stop the statement on the server (from a worker thread
    inside a bridged greenlet, never blocking the loop), then close the session, which rolls
    its transaction back. The protocol state is unknown, so the connection cannot serve
    again."""
    try:
        if conn.pgconn.transaction_status == pq.TransactionStatus.ACTIVE:
            if in_bridge():
                await_in_bridge(asyncio.to_thread(conn.cancel_safe,
                                                  timeout=CANCEL_TIMEOUT_SECONDS))
            else:
                conn.cancel_safe(timeout=CANCEL_TIMEOUT_SECONDS)
    except BaseException:  # closing below ends the session in any case
        pass
    finally:
        conn.close()


def _raise_first_error(conn: psycopg.Connection[Any], results: list[pq.abc.PGresult]) -> None:
    for result in results:
        if result.status == pq.ExecStatus.FATAL_ERROR:
            raise psycopg.errors.error_from_result(result, encoding=conn.info.encoding)
        if result.status == pq.ExecStatus.PIPELINE_ABORTED:
            break


def clear_security_context(conn: psycopg.Connection[Any]) -> None:
    """Make sure no assertion survives the transaction; discard the connection otherwise."""
    if conn.closed:
        return
    try:
        status = conn.info.transaction_status
        if status == TransactionStatus.INTRANS:
            # The caller's own transaction is still open: the setting would outlive us.
            conn.execute("SELECT set_config('oam.end_user_assertion', '', true)", prepare=False)
            row = conn.execute("SELECT current_setting('oam.end_user_assertion', true)",
                               prepare=False).fetchone()
        elif status == TransactionStatus.IDLE:
            saved = conn.autocommit
            conn.autocommit = True
            try:
                row = conn.execute("SELECT current_setting('oam.end_user_assertion', true)",
                                   prepare=False).fetchone()
            finally:
                conn.autocommit = saved
        else:
            row = ("unknown",)
    except psycopg.Error:
        if conn.closed:
            return  # the session ended: its settings, the assertion included, ended with it
        row = ("unknown",)
    _discard_unless_cleared(conn, row)


def _discard_unless_cleared(conn: psycopg.Connection[Any], row: tuple[Any, ...] | None) -> None:
    if row is not None and row[0] not in (None, ""):
        conn.close()
        raise SecurityContextError(
            "an end-user context could not be cleared from a connection; the connection was "
            "discarded"
        )
