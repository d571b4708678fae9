"""Apply, verify and clear an end-user security context on a PostgreSQL connection."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from oracleagentmemory.engines.base import SecurityContextError

_APPLY = "SELECT oam_sec.apply_assertion(%s)"
_READ_ASSERTION = "SELECT current_setting('oam.end_user_assertion', true)"


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


def _check_seen(row: tuple[Any, ...] | None, security: Any) -> None:
    seen = row[0] if row else None
    if seen != security.username:
        raise SecurityContextError(
            f"the database does not accept the end-user context for {security.username!r} "
            "(unknown or expired application credential, unknown local end user, or a login "
            "that is not the application's runtime login)"
        )


def apply_security_context(conn: psycopg.Connection[Any], security: Any) -> None:
    """Set the signed assertion for this transaction and check the database sees the user."""
    assertion = _assertion(security)
    try:
        row = conn.execute(_APPLY, [assertion]).fetchone()
    except psycopg.errors.UndefinedFunction as exc:
        raise _no_security_schema() from exc
    _check_seen(row, security)


@contextmanager
def context_transaction(conn: psycopg.Connection[Any], security: Any) -> Iterator[None]:
    """One transaction on an idle connection, run as ``security``'s end user.

    Same steps as :func:`apply_security_context` then :func:`clear_security_context`, without
    their two extra round trips: ``BEGIN`` travels with the apply-and-verify statement, and
    ``COMMIT`` (or ``ROLLBACK``) with the check that the assertion is gone, each pair in one
    pipeline. The check still completes before the connection is released; a connection that
    fails it is closed. The assertion stays a bound parameter (never statement text, which
    other sessions of the same login could read in ``pg_stat_activity``).
    """
    assertion = _assertion(security)
    saved = conn.autocommit
    conn.autocommit = True  # the transaction is delimited by the explicit statements below
    try:
        try:
            try:
                with conn.pipeline():
                    conn.execute(_begin_statement(conn), prepare=False)
                    cursor = conn.execute(_APPLY, [assertion])
            except psycopg.errors.UndefinedFunction as exc:
                raise _no_security_schema() from exc
            _check_seen(cursor.fetchone(), security)
            yield
        except BaseException:
            _end_and_check(conn, "ROLLBACK")
            raise
        _end_and_check(conn, "COMMIT")
    finally:
        if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
            conn.autocommit = saved


def _begin_statement(conn: psycopg.Connection[Any]) -> str:
    """``BEGIN`` with the connection's transaction characteristics (as psycopg would send)."""
    parts = ["BEGIN"]
    if conn.isolation_level is not None:
        parts.append("ISOLATION LEVEL " + conn.isolation_level.name.replace("_", " "))
    if conn.read_only is not None:
        parts.append("READ ONLY" if conn.read_only else "READ WRITE")
    if conn.deferrable is not None:
        parts.append("DEFERRABLE" if conn.deferrable else "NOT DEFERRABLE")
    return " ".join(parts)


def _end_and_check(conn: psycopg.Connection[Any], command: str) -> None:
    """End the transaction and verify, in the same round trip, that no assertion survived."""
    try:
        with conn.pipeline():
            conn.execute(command, prepare=False)
            cursor = conn.execute(_READ_ASSERTION)
        row = cursor.fetchone()
    except psycopg.Error:
        # COMMIT failed (the server rolled back) or the connection broke: verify on its own,
        # discarding the connection if that fails, then report the original error.
        if not conn.closed and conn.info.transaction_status in (
                TransactionStatus.INTRANS, TransactionStatus.INERROR):
            try:
                conn.execute("ROLLBACK", prepare=False)
            except psycopg.Error:
                pass
        clear_security_context(conn)
        if command == "COMMIT":
            raise
        return
    _discard_unless_cleared(conn, row)


def clear_security_context(conn: psycopg.Connection[Any]) -> None:
    """Make sure no assertion survives the transaction; discard the connection otherwise."""
    if conn.closed:
        return
    try:
        status = conn.info.transaction_status
        if status == TransactionStatus.INTRANS:
            # The caller's own transaction is still open: the setting would outlive us.
            conn.execute("SELECT set_config('oam.end_user_assertion', '', true)")
            row = conn.execute("SELECT current_setting('oam.end_user_assertion', true)").fetchone()
        elif status == TransactionStatus.IDLE:
            saved = conn.autocommit
            conn.autocommit = True
            try:
                row = conn.execute(
                    "SELECT current_setting('oam.end_user_assertion', true)").fetchone()
            finally:
                conn.autocommit = saved
        else:
            row = ("unknown",)
    except psycopg.Error:
        row = ("unknown",)
    _discard_unless_cleared(conn, row)


def _discard_unless_cleared(conn: psycopg.Connection[Any], row: tuple[Any, ...] | None) -> None:
    if row is not None and row[0] not in (None, ""):
        conn.close()
        raise SecurityContextError(
            "an end-user context could not be cleared from a connection; the connection was "
            "discarded"
        )
