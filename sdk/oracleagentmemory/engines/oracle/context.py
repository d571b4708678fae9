"""Attach an end-user security context to one python-oracledb connection, verify it, and take it
off again, verified (issue 12, item 4).

The context is python-oracledb's own :class:`oracledb.EndUserSecurityContext` (made by
``oracledb.create_end_user_security_context(database_access_token, end_user_identity=...)``).
What the driver does with it (python-oracledb 26.1, thin mode; ``impl/thin/connection.pyx`` and
``impl/thin/messages/base.pyx``):

- ``Connection.set_end_user_security_context(ctx)`` raises DPY-2073 unless the transport is TLS
  and DPY-3041 unless the server advertises the capability; otherwise it only stores the
  context. The context then travels as a piggyback on *every* round trip while it is set, so a
  refused token shows on the first statement after (ORA-52601 end-user token, ORA-52602
  database access token).
- ``Connection.clear_end_user_security_context()`` stops sending it; the next round trip runs
  without it. ``Connection.close()`` and ``ConnectionPool.release()`` clear it too.

Each step here is therefore checked by a round trip: after setting, ``SELECT
ORA_END_USER_CONTEXT.username FROM dual`` must return the expected end user; after clearing, it
must return nothing (NULL, or the empty JSON object ``{}`` that Oracle's troubleshooting guide
says a session without a context shows). Statement caching is off while a context is attached
(``Connection.stmtcachesize = 0`` evicts every cached statement: a statement parsed under one
context and executed under another fails with ORA-52607, and one parsed under an end user must
never serve the pool account), and restored only once the clear is verified.

**Any failure leaves the connection unfit for reuse.** :func:`apply_context` and
:func:`release_context` raise; the caller drops the connection (``ConnectionPool.drop``, or
``close`` for a standalone one). :func:`attached_context` does that itself through its
``discard`` callback.

End-user names: ``ORA_END_USER_CONTEXT.username`` is the name as the database stores it. A
local end user created without quotes (``CREATE END USER alice``) is stored upper-case
(``ALICE``); a quoted name (``CREATE END USER "alice"``) keeps its case. The SDK's policies
create every local end user upper-case (:func:`local_end_user_name`). For an OCI IAM or Entra
ID end-user token it is the token's ``sub`` (OCI IAM) or ``upn`` (Entra ID) claim, unchanged
(Oracle Deep Data Security Guide, 18.5.1).

Not run against a live database: no Oracle database is reachable where this was written. The
logic is type-checked against python-oracledb's real ``Connection`` (see the end of this
module); its sequence is not unit-tested, because a stand-in connection
would have to imitate what the driver and the database answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import oracledb

from oracleagentmemory.engines.oracle.driver_errors import error_info, translate
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OracleAgentMemoryError,
    SecurityContextError,
)

USERNAME_QUERY = "SELECT ORA_END_USER_CONTEXT.username FROM dual"
"""The round trip that checks which end user the session runs as."""

# ORA_END_USER_CONTEXT unknown: a database without Deep Data Security (ORA-00904 invalid
# identifier, ORA-00942 no such view, ORA-00900 invalid statement).
_NO_DEEP_SEC_CODES = frozenset({900, 904, 942})


def recognises_context(obj: object) -> bool:
    """Whether ``obj`` is an end-user security context this engine applies (python-oracledb's)."""
    return isinstance(obj, oracledb.EndUserSecurityContext)


def local_end_user_name(name: str) -> str:
    """The name ``ORA_END_USER_CONTEXT.username`` returns for local end user ``name``, written
    as in ``CREATE END USER``: unquoted names fold to upper case, ``"quoted"`` ones keep theirs.
    """
    if not isinstance(name, str):
        raise InvalidArgumentTypeError(f"an end-user name must be a str, got {type(name).__name__}")
    if len(name) >= 2 and name.startswith('"') and name.endswith('"'):
        inner = name[1:-1]
        if inner and '"' not in inner and "\x00" not in inner:
            return inner
    elif name and '"' not in name and not any(c.isspace() for c in name):
        return name.upper()
    raise InvalidArgumentError(f"not an Oracle end-user name: {name!r}", argument="end_user")


def seen_username(value: object) -> str | None:
    """The end user a :data:`USERNAME_QUERY` row names, or ``None`` when it names none.

    The fetched value is a str (the attribute is a JSON string scalar), ``None``, or the empty
    JSON object ``{}`` outside any context; any other value fails closed.
    """
    if value is None or value == "" or (isinstance(value, dict) and not value):
        return None
    if isinstance(value, str):
        return value
    raise SecurityContextError(
        f"the database answered the end-user check with an unexpected value: {value!r}")


# --- what the logic needs of a connection ------------------------------------------------------
class ContextCursor(Protocol):
    def execute(self, statement: str) -> Any: ...
    def fetchone(self) -> Any: ...
    def close(self) -> None: ...


class ContextConnection(Protocol):
    """The methods of :class:`oracledb.Connection` this module uses."""

    @property
    def stmtcachesize(self) -> int: ...
    @stmtcachesize.setter
    def stmtcachesize(self, value: int) -> None: ...
    def set_end_user_security_context(self, context: oracledb.EndUserSecurityContext) -> None: ...
    def clear_end_user_security_context(self) -> None: ...
    def cursor(self) -> ContextCursor: ...


@dataclass(frozen=True)
class AttachedContext:
    """An attached, verified context: the end user the database reported, and the statement
    cache size to restore once the context is off."""

    username: str
    statement_cache_size: int


# --- the steps ------------------------------------------------------------------------------
def _check_context(context: object) -> None:
    if not recognises_context(context):
        raise SecurityContextError(
            "this end-user security context is not python-oracledb's; create it with "
            "oracledb.create_end_user_security_context")


def _failure(exc: oracledb.Error) -> OracleAgentMemoryError:
    if error_info(exc).code in _NO_DEEP_SEC_CODES:
        return SecurityContextError(
            "the database does not know ORA_END_USER_CONTEXT: it has no Oracle Deep Data "
            f"Security (26ai, Release Update 23.26.2 or later) ({error_info(exc).first_line})")
    return translate(exc)


def _accept(seen: str | None, expected: str | None, saved: int) -> AttachedContext:
    if seen is None:
        raise SecurityContextError(
            "the database does not run the session as an end user after the context was set "
            "(the context was not attached)")
    if expected is not None and seen != expected:
        raise SecurityContextError(
            f"the database runs the session as end user {seen!r}, not {expected!r}")
    return AttachedContext(username=seen, statement_cache_size=saved)


def _refuse_leftover(seen: str | None) -> None:
    if seen is not None:
        raise SecurityContextError(
            f"the end-user context of {seen!r} is still attached after it was cleared; the "
            "connection must be discarded")


def _prepare(conn: ContextConnection, context: object,
             expected: str | None) -> int:
    """Validate, turn statement caching off and set the context; the saved cache size."""
    _check_context(context)
    if expected is not None and (not isinstance(expected, str) or not expected):
        raise InvalidArgumentError("the expected end user must be a non-empty str",
                                   argument="expected_username")
    saved = conn.stmtcachesize
    conn.stmtcachesize = 0
    assert isinstance(context, oracledb.EndUserSecurityContext)
    conn.set_end_user_security_context(context)
    return saved


def _query_username(conn: ContextConnection) -> str | None:
    cursor = conn.cursor()
    try:
        cursor.execute(USERNAME_QUERY)
        row = cursor.fetchone()
    finally:
        cursor.close()
    return seen_username(row[0] if row else None)


def apply_context(conn: ContextConnection, context: object,
                  expected_username: str | None) -> AttachedContext:
    """Attach ``context`` to ``conn`` and verify the database sees ``expected_username``
    (``None``: any end user, reported in the result). Raises on any failure; the connection
    must then be discarded."""
    try:
        saved = _prepare(conn, context, expected_username)
        seen = _query_username(conn)
    except oracledb.Error as exc:
        raise _failure(exc) from exc
    return _accept(seen, expected_username, saved)


def release_context(conn: ContextConnection, attached: AttachedContext) -> None:
    """Clear the context, verify the session runs as no end user, restore statement caching.
    Raises on any failure; the connection must then be discarded."""
    try:
        conn.clear_end_user_security_context()
        _refuse_leftover(_query_username(conn))
        conn.stmtcachesize = attached.statement_cache_size
    except oracledb.Error as exc:
        raise translate(exc) from exc


C = TypeVar("C", bound=ContextConnection)


@contextmanager
def attached_context(conn: C, context: object, expected_username: str | None, *,
                     discard: Callable[[C], None]) -> Iterator[AttachedContext]:
    """The enclosed work runs on ``conn`` as the end user; ``discard(conn)`` is called (and the
    error raised) if attaching or releasing fails. When the work itself fails, the context is
    still released (the connection discarded if that fails too) and the work's error raised."""
    try:
        attached = apply_context(conn, context, expected_username)
    except BaseException:
        discard(conn)
        raise
    try:
        yield attached
    except BaseException:
        try:
            release_context(conn, attached)
        except BaseException:  # noqa: BLE001  (the work's error is the one to report)
            discard(conn)
        raise
    try:
        release_context(conn, attached)
    except BaseException:
        discard(conn)
        raise


if TYPE_CHECKING:  # mypy checks that the driver's real classes offer what the logic uses
    def _sync_driver_conforms(conn: oracledb.Connection) -> ContextConnection:
        return conn
