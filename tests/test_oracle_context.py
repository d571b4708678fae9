"""The pure parts of the Oracle end-user context module (``engines/oracle/context.py``).

Only what runs without a connection is tested here: recognising python-oracledb's context
objects (real ones: ``oracledb.create_end_user_security_context`` works offline), the end-user
name rule, the reading of the verification query's value, and the refusal of a foreign context
before the connection is touched. The apply/verify/clear sequence itself is not unit-tested: a
stand-in connection would have to imitate the driver's and the database's answers, which this
project does not do; mypy checks it against python-oracledb's real ``Connection`` and
``AsyncConnection`` classes (the ``TYPE_CHECKING`` block at the end of the module), and it runs
only against a live 26ai database.
"""

from __future__ import annotations

from typing import Any, cast

import oracledb
import pytest
from oracleagentmemory.engines.oracle.context import (
    USERNAME_QUERY,
    ContextConnection,
    apply_context,
    local_end_user_name,
    recognises_context,
    seen_username,
)
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    SecurityContextError,
)


def local_context(name: str = "alice") -> oracledb.EndUserSecurityContext:
    return oracledb.create_end_user_security_context(
        "not-a-real-database-access-token", end_user_identity=(name, None))


# --- recognition -------------------------------------------------------------------------------
def test_python_oracledb_contexts_are_recognised() -> None:
    assert recognises_context(local_context())
    token_context = oracledb.create_end_user_security_context(
        "not-a-real-database-access-token", end_user_identity="not.a.jwt",
        data_roles=["reader"])
    assert recognises_context(token_context)


@pytest.mark.parametrize("obj", [None, "alice", ("alice", None), oracledb.EndUserSecurityContext,
                                 object()], ids=["none", "str", "tuple", "class", "object"])
def test_anything_else_is_not(obj: object) -> None:
    assert not recognises_context(obj)


def test_a_foreign_context_is_refused_before_the_connection_is_used() -> None:
    untouchable = cast(ContextConnection, object())  # any use would raise AttributeError
    with pytest.raises(SecurityContextError, match="create_end_user_security_context"):
        apply_context(untouchable, {"user": "alice"}, "ALICE")


# --- the end-user name rule --------------------------------------------------------------------
@pytest.mark.parametrize("written,stored", [
    ("alice", "ALICE"), ("Alice", "ALICE"), ("ALICE", "ALICE"), ("bob_2", "BOB_2"),
    ('"alice"', "alice"), ('"Mixed Case"', "Mixed Case"), ('"ALICE"', "ALICE"),
])
def test_unquoted_names_fold_upper_and_quoted_names_keep_their_case(
        written: str, stored: str) -> None:
    assert local_end_user_name(written) == stored


@pytest.mark.parametrize("bad", ["", '""', '"', 'a"b', '"a"b"', "two words", '"nul\x00"'])
def test_malformed_names_are_refused(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        local_end_user_name(bad)


def test_a_name_must_be_a_str() -> None:
    with pytest.raises(InvalidArgumentTypeError):
        local_end_user_name(cast(Any, 7))


# --- reading the verification query ------------------------------------------------------------
def test_the_query_is_the_documented_one() -> None:
    assert USERNAME_QUERY == "SELECT ORA_END_USER_CONTEXT.username FROM dual"


@pytest.mark.parametrize("value", [None, "", {}], ids=["null", "empty", "empty-json-object"])
def test_no_end_user_reads_as_none(value: object) -> None:
    assert seen_username(value) is None


def test_a_user_name_reads_as_itself_without_folding() -> None:
    assert seen_username("ALICE") == "ALICE"
    assert seen_username("alice@example.com") == "alice@example.com"


@pytest.mark.parametrize("value", [{"USERNAME": "ALICE"}, ["ALICE"], 1, b"ALICE"],
                         ids=["object", "array", "number", "bytes"])
def test_any_other_value_fails_closed(value: object) -> None:
    with pytest.raises(SecurityContextError, match="unexpected value"):
        seen_username(value)
