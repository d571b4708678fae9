"""Apply, verify and clear an end-user security context on a PostgreSQL connection."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from oracleagentmemory.engines.base import SecurityContextError


def apply_security_context(conn: psycopg.Connection[Any], security: Any) -> None:
    """Set the signed assertion for this transaction and check the database sees the user."""
    if not hasattr(security, "assertion"):
        raise SecurityContextError(
            "this end-user security context is not a PostgreSQL context; create it with "
            "oracleagentmemory.core.deepsec.create_end_user_security_context"
        )
    try:
        row = conn.execute("SELECT oam_sec.apply_assertion(%s)",
                           [security.assertion()]).fetchone()
    except psycopg.errors.UndefinedFunction as exc:
        raise SecurityContextError(
            "the database has no oam_sec security schema; the admin identity must install "
            "Deep Data Security policies first"
        ) from exc
    seen = row[0] if row else None
    if seen != security.username:
        raise SecurityContextError(
            f"the database does not accept the end-user context for {security.username!r} "
            "(unknown or expired application credential, unknown local end user, or a login "
            "that is not the application's runtime login)"
        )


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
    if row is not None and row[0] not in (None, ""):
        conn.close()
        raise SecurityContextError(
            "an end-user context could not be cleared from a connection; the connection was "
            "discarded"
        )
