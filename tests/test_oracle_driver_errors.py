"""python-oracledb's errors translated into the SDK's typed errors
(``engines/oracle/driver_errors.py``), without a database.

Every exception here is a real python-oracledb exception, built the way the driver builds it:
a database error as the thin driver does on a server error message
(``impl/thin/messages/base.pyx``, ``_check_and_raise_exception``: ``_Error(message, code=...)``
raised as ``error.exc_type(error)``), so the driver's own rewrites apply (ORA-03113 becomes
DPY-4011, ORA-00001 an ``IntegrityError``); a driver error through the driver's own
``errors._create_exception``. The ORA message texts are Oracle's documented ones.
"""

from __future__ import annotations

from typing import Any

import oracledb
import pytest
from oracleagentmemory.engines.oracle.driver_errors import (
    error_info,
    is_connection_lost,
    is_unique_violation,
    translate,
    unique_violation_constraint,
)
from oracleagentmemory.errors import (
    DatabaseError,
    DatabaseUnavailableError,
    InvalidArgumentError,
    MemoryStoreSchemaError,
    NotPermittedError,
    OperationTimeoutError,
    SecurityContextError,
    SecurityContextSetupError,
)
from oracledb import errors as driver


def ora(code: int, text: str) -> oracledb.Error:
    """A database error as the thin driver raises it for server error ``code``."""
    error = oracledb._Error(f"ORA-{code:05}: {text}", code=code, offset=0)
    exc = error.exc_type(error)
    assert isinstance(exc, oracledb.Error)
    return exc


def dpy(number: int, **args: Any) -> oracledb.Error:
    """A driver error as python-oracledb raises it itself."""
    exc = driver._create_exception(number, **args)
    assert isinstance(exc, oracledb.Error)
    return exc


UNIQUE_23AI = ('unique constraint (OAM.ST_MEMORY_OWNER_ID_UQ) violated on table OAM.ST_MEMORY '
               'columns (USER_ID, ID)')
UNIQUE_19C = "unique constraint (OAM.ST_MEMORY_LINK_OWNER_PAIR_UQ) violated"


# --- the driver's own shapes (what the module relies on) ---------------------------------------
def test_the_driver_rewrites_a_lost_session_as_dpy_4011_and_keeps_the_ora_number() -> None:
    exc = ora(3113, "end-of-file on communication channel")
    info = error_info(exc)
    assert (info.full_code, info.code, info.session_dead) == ("DPY-4011", 3113, True)
    assert info.first_line.startswith("DPY-4011:")


def test_error_info_of_a_foreign_exception_is_empty() -> None:
    info = error_info(ValueError("x"))
    assert (info.full_code, info.code, info.session_dead) == ("", 0, False)


# --- unique violations ---------------------------------------------------------------------
@pytest.mark.parametrize("text,constraint", [
    (UNIQUE_23AI, "OAM.ST_MEMORY_OWNER_ID_UQ"),
    (UNIQUE_19C, "OAM.ST_MEMORY_LINK_OWNER_PAIR_UQ"),
])
def test_ora_00001_names_its_constraint(text: str, constraint: str) -> None:
    exc = ora(1, text)
    assert isinstance(exc, oracledb.IntegrityError)
    assert is_unique_violation(exc)
    assert unique_violation_constraint(exc) == constraint


def test_the_constraint_filter_matches_bare_or_qualified_names_exactly() -> None:
    exc = ora(1, UNIQUE_23AI)
    assert is_unique_violation(exc, "ST_MEMORY_OWNER_ID_UQ")
    assert is_unique_violation(exc, "OAM.ST_MEMORY_OWNER_ID_UQ")
    assert not is_unique_violation(exc, "ST_MESSAGE_OWNER_SEQ_UQ")
    assert not is_unique_violation(exc, "OTHER.ST_MEMORY_OWNER_ID_UQ")
    assert not is_unique_violation(exc, "st_memory_owner_id_uq")  # stored names, not folded


@pytest.mark.parametrize("exc", [
    ora(2290, "check constraint (OAM.SYS_C0012) violated"),
    ora(1400, 'cannot insert NULL into ("OAM"."ST_MEMORY"."ID")'),
    ora(942, "table or view does not exist"),
    ValueError("unique constraint (OAM.X) violated"),
], ids=["check", "not-null", "942", "foreign"])
def test_other_errors_are_not_unique_violations(exc: BaseException) -> None:
    assert not is_unique_violation(exc)
    assert not is_unique_violation(exc, "X")
    assert unique_violation_constraint(exc) is None


def test_a_unique_violation_left_to_translate_is_a_plain_database_error() -> None:
    typed = translate(ora(1, UNIQUE_23AI))
    assert type(typed) is DatabaseError
    assert "ST_MEMORY_OWNER_ID_UQ" in str(typed)


# --- end-user security context ---------------------------------------------------------------
@pytest.mark.parametrize("exc,phrase", [
    (dpy(driver.ERR_END_USER_SECURITY_CONTEXT_REQUIRES_TCPS), "TLS"),
    (dpy(driver.ERR_UNSUPPORTED_DEEP_DATA_SECURITY_FEATURE), "does not support"),
    (dpy(driver.ERR_INVALID_END_USER_SECURITY_CONTEXT_LENGTH), "larger"),
    (ora(52601, "Invalid end-user token in the end-user security context: Token is expired"),
     "end user's token"),
    (ora(52602, "Invalid database access token in the end-user security context: Failed to "
                "verify claims"), "database access token"),
    (ora(52600, "Invalid inputs provided for creation of end-user security context: "
                "Unauthorized data role"), "inputs"),
    (ora(52605, "Missing CREATE END USER SECURITY CONTEXT privilege"),
     "CREATE END USER SECURITY CONTEXT"),
    (ora(52607, "The end-user security context changed since the cursor was parsed."),
     "statement caching"),
], ids=["DPY-2073", "DPY-3041", "DPY-2072", "ORA-52601", "ORA-52602", "ORA-52600", "ORA-52605",
        "ORA-52607"])
def test_context_failures_are_security_context_errors(exc: oracledb.Error, phrase: str) -> None:
    typed = translate(exc)
    assert isinstance(typed, SecurityContextError)
    assert phrase in str(typed)
    assert error_info(exc).full_code in str(typed)  # the driver's code is kept for support
    assert not is_connection_lost(exc)


@pytest.mark.parametrize("exc,deployment_fault", [
    (dpy(driver.ERR_END_USER_SECURITY_CONTEXT_REQUIRES_TCPS), True),
    (dpy(driver.ERR_UNSUPPORTED_DEEP_DATA_SECURITY_FEATURE), True),
    (ora(52602, "Invalid database access token in the end-user security context"), True),
    (ora(52605, "Missing CREATE END USER SECURITY CONTEXT privilege"), True),
    (ora(52601, "Invalid end-user token in the end-user security context: Token is expired"),
     False),
], ids=["DPY-2073", "DPY-3041", "ORA-52602", "ORA-52605", "ORA-52601"])
def test_the_end_users_refusal_is_told_apart_from_the_deployments(
        exc: oracledb.Error, deployment_fault: bool) -> None:
    """Only a refused end-user token is the caller's fault (a gateway answers 401 for it); no
    TLS, no server support, the service's own token or privilege are the deployment's (500)."""
    from oam_gateway.errors.sdk_problems import STATUS_OF_CODE

    typed = translate(exc)
    assert isinstance(typed, SecurityContextError)
    assert isinstance(typed, SecurityContextSetupError) is deployment_fault
    assert STATUS_OF_CODE[typed.code] == (500 if deployment_fault else 401)


# --- logins and lost connections -----------------------------------------------------------
@pytest.mark.parametrize("exc", [
    ora(1017, "invalid credential or not authorized; logon denied"),
    ora(28000, "The account is locked."),
    ora(25707, "The token is invalid."),
    ora(25708, "The expiration time of the token has passed."),
    dpy(driver.ERR_EXPIRED_ACCESS_TOKEN),
    dpy(driver.ERR_ACCESS_TOKEN_REQUIRES_TCPS),
], ids=["ORA-01017", "ORA-28000", "ORA-25707", "ORA-25708", "DPY-2033", "DPY-2034"])
def test_a_refused_login_is_an_unavailable_database_with_a_login_hint(
        exc: oracledb.Error) -> None:
    typed = translate(exc)
    assert isinstance(typed, DatabaseUnavailableError)
    assert typed.hint is not None and "credentials" in typed.hint


@pytest.mark.parametrize("exc", [
    ora(3113, "end-of-file on communication channel"),
    ora(3135, "connection lost contact"),
    ora(28, "your session has been killed"),
    ora(1034, "The Oracle instance is not available for use. Start the instance."),
    ora(1089, "Immediate shutdown or close in progress - no operations are permitted"),
    dpy(driver.ERR_CONNECTION_CLOSED),
    dpy(driver.ERR_EXCEEDED_IDLE_TIME),
    dpy(driver.ERR_NOT_CONNECTED),
    dpy(driver.ERR_CONNECTION_FAILED, connection_id="abc"),
    dpy(driver.ERR_LISTENER_REFUSED_CONNECTION, error_code="12514"),
    dpy(driver.ERR_POOL_NO_CONNECTION_AVAILABLE),
], ids=["ORA-03113", "ORA-03135", "ORA-00028", "ORA-01034", "ORA-01089", "DPY-4011",
        "DPY-4033", "DPY-1001", "DPY-6005", "DPY-6000", "DPY-4005"])
def test_a_lost_or_unreachable_database_is_unavailable(exc: oracledb.Error) -> None:
    assert is_connection_lost(exc)
    typed = translate(exc)
    assert isinstance(typed, DatabaseUnavailableError)
    assert typed.hint is not None and "DSN" in typed.hint


def test_a_closed_pool_is_a_database_error_not_an_outage() -> None:
    typed = translate(dpy(driver.ERR_POOL_NOT_OPEN))
    assert type(typed) is DatabaseError and "pool is closed" in str(typed)


@pytest.mark.parametrize("exc", [
    ora(1013, "user requested cancel of current operation"),
    dpy(driver.ERR_CALL_TIMEOUT_EXCEEDED, timeout=5000),
], ids=["ORA-01013", "DPY-4024"])
def test_a_cancelled_call_is_a_timeout_and_keeps_the_connection(exc: oracledb.Error) -> None:
    assert isinstance(translate(exc), OperationTimeoutError)
    assert not is_connection_lost(exc)


def test_recursive_sql_errors_are_not_outages() -> None:
    exc = ora(604, "error occurred at recursive SQL level 1")
    assert isinstance(exc, oracledb.OperationalError)  # the driver's class for ORA-00604
    assert not is_connection_lost(exc)
    assert type(translate(exc)) is DatabaseError


# --- privileges, visibility, values ------------------------------------------------------------
def test_insufficient_privileges_is_not_permitted() -> None:
    assert isinstance(translate(ora(1031, "insufficient privileges")), NotPermittedError)


@pytest.mark.parametrize("exc", [
    ora(942, "table or view \"OAM\".\"ST_MEMORY\" does not exist"),
    ora(904, '"EMBEDDING": invalid identifier'),
    ora(4043, "Object OAM.ST_MEMORY does not exist."),
], ids=["ORA-00942", "ORA-00904", "ORA-04043"])
def test_missing_or_invisible_objects_are_schema_errors(exc: oracledb.Error) -> None:
    typed = translate(exc)
    assert isinstance(typed, MemoryStoreSchemaError)
    assert "data grants" in str(typed)


def test_a_value_too_long_for_its_column_is_the_callers_error() -> None:
    exc = ora(12899, 'value too large for column "OAM"."ST_MEMORY"."ID" (actual: 300, '
                     'maximum: 255)')
    assert isinstance(translate(exc), InvalidArgumentError)


def test_anything_else_is_a_database_error_with_the_first_line_only() -> None:
    exc = ora(1722, "invalid number")
    typed = translate(exc)
    assert type(typed) is DatabaseError
    assert "ORA-01722: invalid number" in str(typed)
    assert "Help:" not in str(typed)  # the driver's second line (a help URL) is dropped


def test_a_store_lock_not_granted_is_a_timeout_to_retry() -> None:
    from oracleagentmemory.engines.oracle.schema_sql import LOCK_FAILED_ERROR

    locked = translate(ora(-LOCK_FAILED_ERROR, "the memory store is locked by another schema "
                                              "change (DBMS_LOCK.REQUEST returned 1)"))
    assert isinstance(locked, OperationTimeoutError)
    assert "lock" in str(locked)
    other = translate(ora(20001, "some other application error"))  # control
    assert not isinstance(other, OperationTimeoutError)
