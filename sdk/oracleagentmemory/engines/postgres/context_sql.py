"""Apply, verify and clear an end-user security context on a PostgreSQL connection."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg import generators, pq
from psycopg.abc import PQGen
from psycopg.pq import TransactionStatus

from oracleagentmemory.errors import SecurityContextError

_APPLY = "SELECT oam_sec.apply_assertion(%s)"
_APPLY_PARAM = _APPLY.replace("%s", "$1").encode()  # the same statement, for libpq


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
        raise SecurityContextError(
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


@contextmanager
def context_transaction(conn: psycopg.Connection[Any], security: Any) -> Iterator[None]:
    """One transaction on an idle connection, run as ``security``'s end user.

    The steps of :func:`apply_security_context` and :func:`clear_security_context` with two
    round trips fewer: ``BEGIN`` and the apply statement are pipelined, and ``COMMIT`` and the
    check that the assertion is gone travel as one simple-protocol query. Neither carries a
    secret: the assertion is only ever a
    bound parameter, never statement text (which other sessions of the same login could read
    in ``pg_stat_activity``). A failed transaction is rolled back through psycopg
    (:func:`_roll_back`). The check completes before the connection is released; a
    connection that fails it is closed.
    """
    # The transaction is opened and ended here, through libpq, whatever the connection's
    # autocommit setting: psycopg reads the transaction status from libpq, so inside it sends
    # no BEGIN of its own and nests its transaction blocks as savepoints.
    assertion = _assertion(security)
    try:
        try:
            row = _begin_and_apply(conn, assertion)
        except psycopg.errors.UndefinedFunction as exc:
            raise _no_security_schema() from exc
        except psycopg.Error:
            # A connection that cannot take a context (a read-only or timed-out session, say)
            # serves nobody again: left in the pool it would fail every later user.
            conn.close()
            raise
        _check_seen(row, security, conn)
        yield
    except BaseException:
        _roll_back(conn)
        raise
    if conn.info.transaction_status == TransactionStatus.INERROR:
        # A statement failed and its error was caught inside the block: COMMIT would roll the
        # transaction back and answer as if it had committed (and past psycopg's cache).
        _roll_back(conn)
        raise psycopg.errors.InFailedSqlTransaction(
            "a statement of the transaction failed, so none of it was stored (rolled back)")
    _commit_and_check(conn)


def _begin_and_apply(conn: psycopg.Connection[Any], assertion: str) -> tuple[str | None]:
    """``BEGIN`` and the apply statement as one libpq pipeline: one round trip.

    libpq's pipeline directly rather than psycopg's ``Connection.pipeline()``, whose bookkeeping
    costs more than the round trip it saves. psycopg then sees the open transaction (it reads
    the status from libpq) and sends no ``BEGIN`` of its own. The apply also gives the
    transaction ``plan_cache_mode = force_generic_plan`` (a search's HNSW round, whose plan
    depends on the values, sets ``auto`` again). Raises the database
    error of the first failing statement, with the transaction left open for the caller to roll
    back.
    """
    pgconn = conn.pgconn
    pgconn.enter_pipeline_mode()
    try:
        pgconn.send_query_params(b"BEGIN", None)
        # The unnamed statement: parsed anew with each call, so no SQL run earlier on this
        # connection can stand in for it (a named one could be deallocated and replaced).
        pgconn.send_query_params(_APPLY_PARAM, [assertion.encode()])
        pgconn.pipeline_sync()
        results = _results(conn, pipeline=True)
    finally:
        if pgconn.status != pq.ConnStatus.BAD:
            pgconn.exit_pipeline_mode()
    _raise_first_error(conn, results)
    raw = results[-1].get_value(0, 0) if results[-1].ntuples else None
    return (None if raw is None else raw.decode(conn.info.encoding),)


def _roll_back(conn: psycopg.Connection[Any]) -> None:
    """Roll the failed transaction back through psycopg, then check that no assertion survived.

    psycopg forgets its prepared statements on every rollback it runs (and deallocates them on
    the server). A pipeline that failed part-way can leave its cache naming a statement whose
    preparation the server skipped: kept, that entry fails every later use of the statement
    on this connection, for every later caller of the pool (a ``ROLLBACK`` sent through libpq
    directly hid the rollback from psycopg and left the entry in place).
    """
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
    """Send what is queued and collect one result per statement.

    One wait for the whole round trip (:func:`_round_trip`), through psycopg's own non-blocking
    generators and the connection's wait loop (which releases the GIL, as a blocking libpq call
    would not while this backend waits, say, for a lock another thread's transaction holds; and
    which a gateway's connection awaits on its event loop, where every wait costs a switch).
    """
    return conn.wait(_round_trip(conn.pgconn, pipeline))


def _round_trip(pgconn: pq.abc.PGconn, pipeline: bool) -> PQGen[list[pq.abc.PGresult]]:
    """Flush what is queued, then read every result; in pipeline mode up to the sync point."""
    yield from generators.send(pgconn)
    if not pipeline:
        fetched: list[pq.abc.PGresult] = yield from generators.fetch_many(pgconn)
        return fetched
    results: list[pq.abc.PGresult] = []
    while True:
        batch: list[pq.abc.PGresult] = yield from generators.fetch_many(pgconn)
        if batch and batch[-1].status == pq.ExecStatus.PIPELINE_SYNC:
            return results
        if not batch and pgconn.status == pq.ConnStatus.BAD:
            raise psycopg.OperationalError(
                "the database connection broke while applying an end-user context")
        results.extend(batch)


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
