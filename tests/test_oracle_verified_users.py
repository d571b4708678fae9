"""Which end user an ``oracledb`` end-user context names, for a NO_CHECK store's omitted user id.

python-oracledb's ``EndUserSecurityContext`` names nobody publicly (its end user lives in the
driver's ``_impl``), so the Oracle engine remembers the name its ``SELECT
ORA_END_USER_CONTEXT.username FROM dual`` check saw when it attached each context
(``engines/oracle/verified_users.py``), and answers ``Engine.verified_username`` from that.
No Oracle database is reachable here: the memo is exercised directly, with the driver's real
context objects and the engine built on the driver's real (never connected) pool. The core's
use of ``Engine.verified_username`` on PostgreSQL is covered by ``tests/test_deepsec_context.py``
(omitted user ids resolve to the context user).
"""

from __future__ import annotations

import gc
import socket
from collections.abc import Iterator

import oracledb
import pytest
from oracleagentmemory.engines.interfaces import Engine
from oracleagentmemory.engines.oracle.engine import OracleEngine
from oracleagentmemory.engines.oracle.verified_users import VerifiedUsers


def context(user: str) -> oracledb.EndUserSecurityContext:
    return oracledb.create_end_user_security_context(
        "header.payload.signature", end_user_identity=(user, None))


@pytest.fixture
def engine() -> Iterator[OracleEngine]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    pool = oracledb.create_pool(user="oam_app", password="not-used",
                                dsn=f"127.0.0.1:{port}/FREEPDB1", min=0, max=1, increment=1)
    yield OracleEngine(pool)
    pool.close(force=True)


def test_the_drivers_context_names_no_user_publicly() -> None:
    """Why the engine must remember: the generic ``username`` read finds nothing."""
    ctx = context("ALICE")
    assert getattr(ctx, "username", None) is None
    assert not [name for name in dir(ctx) if "user" in name.lower()]


def test_the_engine_answers_with_the_name_its_check_saw(engine: OracleEngine) -> None:
    alice, bob = context("ALICE"), context("BOB")
    assert engine.verified_username(alice) is None  # before its first operation
    engine._verified_users().remember(alice, "ALICE")
    assert engine.verified_username(alice) == "ALICE"
    assert engine.verified_username(bob) is None
    engine._verified_users().remember(bob, "BOB")
    assert (engine.verified_username(alice), engine.verified_username(bob)) == ("ALICE", "BOB")
    # The generic default (what the engine replaces) knows neither.
    assert Engine.verified_username(engine, alice) is None


def test_each_engine_keeps_its_own_memo(engine: OracleEngine) -> None:
    other = OracleEngine(engine._pool)
    ctx = context("ALICE")
    engine._verified_users().remember(ctx, "ALICE")
    assert engine._verified_users() is engine._verified_users()
    assert other.verified_username(ctx) is None


def test_contexts_with_the_same_identity_are_different_keys() -> None:
    memo = VerifiedUsers()
    first, second = context("ALICE"), context("ALICE")
    memo.remember(first, "ALICE")
    assert memo.get(first) == "ALICE" and memo.get(second) is None


def fresh_contexts(count: int, impl_of: oracledb.EndUserSecurityContext
                   ) -> list[oracledb.EndUserSecurityContext]:
    """``count`` new context objects, made the way ``create_end_user_security_context`` makes
    one, all allocated before anything else is (the factory allocates the driver's ``_impl``
    first, which would take a just-freed address itself)."""
    made = [oracledb.EndUserSecurityContext.__new__(oracledb.EndUserSecurityContext)
            for _ in range(count)]
    for each in made:
        each.__dict__["_impl"] = impl_of.__dict__["_impl"]  # the driver types _impl privately
    return made


def test_a_dropped_context_is_forgotten_and_its_id_never_names_a_new_one() -> None:
    memo = VerifiedUsers()
    naive: dict[int, str] = {}  # positive control: a memo keyed by id() alone
    bob = context("BOB")
    reused: list[oracledb.EndUserSecurityContext] = []
    for _ in range(20):
        # A batch of dropped contexts frees many blocks of the size a new context takes, so
        # the allocator hands at least one back whatever else the process allocated between
        # (a single freed block is taken by something else about 7 times in 8).
        dropped = [context("ALICE") for _ in range(64)]
        for old in dropped:
            memo.remember(old, "ALICE")
            naive[id(old)] = "ALICE"
        del old
        dropped.clear()
        reused = [new for new in fresh_contexts(64, bob) if id(new) in naive]
        if reused:
            break
    else:  # without a reused address, this proves nothing
        raise AssertionError("the allocator never reused a dropped context's address in 20 "
                             "batches of 64: the id-reuse case was not exercised")
    gc.collect()
    assert len(memo) == 0  # weakly held: nothing leaks
    for new in reused:
        assert naive.get(id(new)) == "ALICE"  # the id really is reused...
        assert memo.get(new) is None  # ...and the memo does not take the new context for the old


class Slotted:
    """A context type that refuses weak references."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def test_a_type_without_weak_references_is_kept_alive_in_a_bounded_map() -> None:
    memo = VerifiedUsers(strong_capacity=2)
    first, second, third = Slotted("a"), Slotted("b"), Slotted("c")
    memo.remember(first, "A")
    memo.remember(second, "B")
    assert (memo.get(first), memo.get(second), memo.get(Slotted("x"))) == ("A", "B", None)
    memo.remember(third, "C")  # past the bound: the oldest is forgotten
    assert (memo.get(first), memo.get(second), memo.get(third)) == (None, "B", "C")
    assert len(memo) == 2
    memo.remember(second, "B2")  # re-verified: refreshed, and now the newest
    memo.remember(first, "A")
    assert (memo.get(first), memo.get(second), memo.get(third)) == ("A", "B2", None)
