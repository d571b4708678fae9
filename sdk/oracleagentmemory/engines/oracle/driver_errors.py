"""Translate python-oracledb's errors into the SDK's typed errors (no raw driver error leaves
the SDK), as :mod:`oracleagentmemory.engines.postgres.driver_errors` does for psycopg.

A python-oracledb exception carries one ``_Error`` object as ``exc.args[0]`` (documented in
python-oracledb's "Exception Handling" section): ``full_code`` is ``"ORA-00942"`` for a database
error, ``"DPY-2073"`` for one the driver raises itself, and ``code`` is the Oracle error number
(0 for a driver error). The driver rewrites some database errors as its own (a lost session,
ORA-03113 and some twenty more, becomes ``DPY-4011`` with ``code`` still the ORA number):
``src/oracledb/errors.py``, ``ERR_ORACLE_ERROR_XREF``.

Sources for the codes: python-oracledb 26.1 ``src/oracledb/errors.py`` (the DPY numbers) and
``impl/thin/connection.pyx`` (DPY-2073 when the transport is not TLS, DPY-3041 when the server
does not advertise the end-user security context capability); the driver's Deep Data Security
tests ``tests/ext/test_ext_3000_deep_data_security.py`` (ORA-52601 for a bad end-user token,
ORA-52602 for a bad database access token, both raised by the first round trip after the
context is set); Oracle's error reference (docs.oracle.com/en/error-help/db/ora-NNNNN) for
ORA-52600/52605/52606/52607 (end-user security context), ORA-25707/25708 (a token login) and
the 23ai text of ORA-00001.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import oracledb

from oracleagentmemory.errors import (
    DatabaseError,
    DatabaseUnavailableError,
    InvalidArgumentError,
    MemoryStoreSchemaError,
    NotPermittedError,
    OperationTimeoutError,
    OracleAgentMemoryError,
    SecurityContextError,
    SecurityContextSetupError,
)

UNAVAILABLE_HINT = ("check that the database is running, that the DSN (host, port, service "
                    "name) is right and that the listener accepts the protocol it names (TCPS "
                    "for end-user contexts)")
LOGIN_HINT = ("check the pool account's credentials; a database access token used to log in "
              "must be current (refresh it before it expires)")


@dataclass(frozen=True)
class OracleErrorInfo:
    """What identifies a python-oracledb error: ``full_code`` (``"ORA-00001"``,
    ``"DPY-4011"``, ``""`` if none), the Oracle error number ``code`` (0 for a driver error),
    the first line of its message and whether the driver deemed the session dead."""

    full_code: str
    code: int
    first_line: str
    session_dead: bool


def error_info(exc: BaseException) -> OracleErrorInfo:
    """The identifying parts of ``exc`` (empty ones for an exception not from the driver)."""
    error = exc.args[0] if exc.args else None
    full_code = getattr(error, "full_code", "")
    code = getattr(error, "code", 0)
    message = getattr(error, "message", None)
    text = (message if isinstance(message, str) else str(exc)).strip()
    return OracleErrorInfo(
        full_code=full_code if isinstance(full_code, str) else "",
        code=code if isinstance(code, int) else 0,
        first_line=text.splitlines()[0] if text else type(exc).__name__,
        session_dead=bool(getattr(error, "is_session_dead", False)),
    )


# --- unique violations (callers raise DuplicateRecordError / DuplicateRelationError) ---------
UNIQUE_VIOLATION = 1
"""ORA-00001."""

# 23ai and later: "unique constraint (OWNER.NAME) violated on table OWNER.TABLE columns (...)";
# earlier releases end after "violated". A unique index reports its own name.
_UNIQUE_CONSTRAINT = re.compile(r"unique constraint \((?P<owner>[^.()]+)\.(?P<name>[^()]+)\)")


def unique_violation_constraint(exc: BaseException) -> str | None:
    """``"OWNER.NAME"`` of the constraint or unique index an ORA-00001 names, else ``None``."""
    if not isinstance(exc, oracledb.Error) or error_info(exc).code != UNIQUE_VIOLATION:
        return None
    match = _UNIQUE_CONSTRAINT.search(error_info(exc).first_line)
    return f"{match['owner']}.{match['name']}" if match else None


def is_unique_violation(exc: BaseException, constraint_name: str | None = None) -> bool:
    """Whether ``exc`` is ORA-00001, and (when ``constraint_name`` is given) on that constraint.

    ``constraint_name`` is the name as the dictionary stores it (upper case for every managed
    object: :meth:`OracleObjects.object_name`), bare (``"ST_MEMORY_OWNER_ID_UQ"``, any owner) or
    qualified (``"OAM.ST_MEMORY_OWNER_ID_UQ"``); it is compared exactly, not folded.
    """
    if not isinstance(exc, oracledb.Error) or error_info(exc).code != UNIQUE_VIOLATION:
        return False
    if constraint_name is None:
        return True
    named = unique_violation_constraint(exc)
    if named is None:
        return False
    return named == constraint_name if "." in constraint_name \
        else named.split(".", 1)[1] == constraint_name


# --- classification ---------------------------------------------------------------------------
_CONTEXT_ERRORS: dict[str, str] = {
    "DPY-2073": "an end-user security context needs a TLS (TCPS) connection: connect the pool "
                "through a TCPS listener (a tcps:// DSN or a wallet)",
    "DPY-3041": "the database does not support Oracle Deep Data Security end-user security "
                "contexts (Oracle AI Database 26ai, Release Update 23.26.2 or later, is needed)",
    "DPY-2072": "the end-user security context is larger than the database accepts (its "
                "attributes or data roles are too large)",
    "ORA-52600": "the database refused the end-user security context's inputs (its identity "
                 "provider configuration, or a data role the application may not enable)",
    "ORA-52601": "the database rejected the end user's token (malformed, expired, badly "
                 "signed, or without a user name)",
    "ORA-52602": "the database rejected the database access token (malformed, expired, badly "
                 "signed, or issued for another audience or application)",
    "ORA-52605": "the pool account lacks the CREATE END USER SECURITY CONTEXT privilege",
    "ORA-52606": "the database does not know the end-user security context's id",
    "ORA-52607": "the end-user security context changed after a statement was parsed (statement "
                 "caching must stay off while a context is attached)",
}

_END_USER_FAULTS = frozenset({"ORA-52601"})
"""Context refusals caused by the end user's own credentials (a gateway answers 401); every
other entry of :data:`_CONTEXT_ERRORS` is the deployment's (no end user could get in)."""

_LOGIN_CODES = frozenset({
    1005,   # null password given; logon denied (the driver's DPY-4001)
    1017,   # invalid credential or not authorized; logon denied
    28000,  # the account is locked
    28001,  # the password has expired
    25704,  # token-based authentication requires SSL_SERVER_DN_MATCH=TRUE
    25707,  # the token is invalid
    25708,  # the token has expired
})
_LOGIN_DRIVER_CODES = frozenset({"DPY-2033", "DPY-2034", "DPY-4001"})
"""Expired access token, an access token over plain TCP, no credentials."""

_CONNECTION_DRIVER_CODES = frozenset({
    "DPY-1001",  # not connected (the connection was closed)
    "DPY-4000",  # no TNS entry for the DSN's alias
    "DPY-4005",  # timed out waiting for a pooled connection
    "DPY-4011",  # the database or network closed the connection (and the ORA codes mapped to it)
    "DPY-4017", "DPY-4018",  # the connect string cannot be parsed
    "DPY-4033",  # the database closed the connection after its idle time
})

_CANCELLED = 1013  # ORA-01013: user requested cancel of current operation
_STORE_LOCKED = 20101  # schema_sql.LOCK_FAILED_ERROR: DBMS_LOCK.REQUEST did not grant the lock
_RECURSIVE_SQL = 604  # ORA-00604 wraps an error of recursive SQL: not a connection problem

_MISSING_OBJECT_CODES = frozenset({
    942,   # table or view does not exist (also: no data grant under SET USE DATA GRANTS ONLY)
    904,   # invalid identifier (a missing column)
    4043,  # object does not exist
})
_INSUFFICIENT_PRIVILEGES = 1031
_VALUE_TOO_LARGE = 12899  # value too large for column


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection (or the pool's supply of them) is gone: the caller
    must not reuse the connection."""
    if not isinstance(exc, oracledb.Error):
        return False
    info = error_info(exc)
    if info.session_dead or info.full_code in _CONNECTION_DRIVER_CODES:
        return True
    return isinstance(exc, oracledb.OperationalError) and info.code not in (
        _CANCELLED, _RECURSIVE_SQL)


def translate(exc: oracledb.Error) -> OracleAgentMemoryError:
    """The typed error for a driver error (the caller raises it ``from exc``).

    ORA-00001 becomes a plain :class:`DatabaseError` here: the caller knows which record or
    relation clashed and raises its own error first (:func:`is_unique_violation`).
    """
    info = error_info(exc)
    detail = info.first_line
    if info.full_code in _CONTEXT_ERRORS:
        message = f"{_CONTEXT_ERRORS[info.full_code]} ({detail})"
        if info.full_code in _END_USER_FAULTS:
            return SecurityContextError(message)
        return SecurityContextSetupError(message)
    if info.full_code == "DPY-1002":
        return DatabaseError(f"the connection pool is closed (was the store closed?): {detail}")
    if info.code == _STORE_LOCKED:
        return OperationTimeoutError(
            f"another schema change holds the memory store's lock; try again ({detail})")
    if info.full_code == "DPY-4024" or info.code == _CANCELLED:
        return OperationTimeoutError(f"the database call was cancelled ({detail})")
    if info.code in _LOGIN_CODES or info.full_code in _LOGIN_DRIVER_CODES:
        return DatabaseUnavailableError(f"the database refused the login: {detail}",
                                        hint=LOGIN_HINT)
    if is_connection_lost(exc):
        return DatabaseUnavailableError(f"the database is unavailable: {detail}",
                                        hint=UNAVAILABLE_HINT)
    if info.code == _INSUFFICIENT_PRIVILEGES:
        return NotPermittedError(f"the database refused this operation ({detail})")
    if info.code in _MISSING_OBJECT_CODES:
        return MemoryStoreSchemaError(
            f"the store's managed objects are missing or not visible to this database user or "
            f"end user (check memory_store_id and schema_owner, that the store was created, "
            f"and the end user's data grants): {detail}")
    if info.code == _VALUE_TOO_LARGE:
        return InvalidArgumentError(f"a value is longer than its column allows ({detail})")
    return DatabaseError(f"database error: {detail}")
