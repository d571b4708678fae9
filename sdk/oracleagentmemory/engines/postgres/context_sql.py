"""Apply, verify and clear an end-user security context on a PostgreSQL connection."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from oracleagentmemory.engines.base import SecurityContextError

_APPLY = "SELECT oam_sec.apply_assertion(%s)"


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

    The steps of :func:`apply_security_context` and :func:`clear_security_context` with one
    round trip fewer: ``COMMIT`` (or ``ROLLBACK``) and the check that the assertion is gone
    travel as one simple-protocol query. Neither carries a secret: the assertion is only ever a
    bound parameter, never statement text (which other sessions of the same login could read
    in ``pg_stat_activity``). The check completes before the connection is released; a
    connection that fails it is closed.
    """
    assertion = _assertion(security)
    saved = conn.autocommit
    conn.autocommit = False  # the apply statement opens the transaction (psycopg sends BEGIN)
    try:
        try:
            try:
                row = conn.execute(_APPLY, [assertion]).fetchone()
            except psycopg.errors.UndefinedFunction as exc:
                raise _no_security_schema() from exc
            _check_seen(row, security)
            yield
        except BaseException:
            _end_and_check(conn, "ROLLBACK")
            raise
        _end_and_check(conn, "COMMIT")
    finally:
        if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
            conn.autocommit = saved


def _end_and_check(conn: psycopg.Connection[Any], command: str) -> None:
    """End the transaction and check, in the same round trip, that no assertion survived.

    The check is ``SHOW`` (a utility statement: nothing to plan), which fails only for a
    setting never defined in the session; once the apply statement has run it is defined.
    """
    try:
        cursor = conn.execute(f"{command}; SHOW oam.end_user_assertion", prepare=False)
        row = cursor.fetchone() if cursor.nextset() else ("unknown",)
    except psycopg.Error:
        # COMMIT failed (the server rolled back) or the connection broke: check on its own,
        # discarding the connection if that fails, then report the original error.
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
