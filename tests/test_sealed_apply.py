"""The sealed apply (``security_schema.SEALED_APPLY``): on a session the SDK alone used since its
last clean-session scan, the apply runs as plain SQL of the runtime login and hands every case
it does not answer to ``oam_sec.apply_assertion``. Attacks on it, run on one session as the
runtime login (a forged assertion, a stale or another seal on a dirty session, changed
settings, a revoke), and on the named statements of a sealed pool (``BEGIN``, ``COMMIT`` and the
end check replaced by the session's own SQL). Each with a positive control."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from dds import OWNER, POLICIES, RUNTIME
from oracleagentmemory.core.deepsec import (
    LocalEndUserPrincipal,
    grant_agent_memory_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.engines.postgres import deepsec_admin
from oracleagentmemory.engines.postgres.security_schema import (
    MIN_SEAL_CHARACTERS,
    SEAL_SETTING,
    SEALED_APPLY,
)
from oracleagentmemory.errors import SecurityContextError
from psycopg import errors, pq, sql
from test_deepsec_attacks import Seeded, seed
from test_session_seals import content, sealing_pool, store_as

SEAL = "3d" * (MIN_SEAL_CHARACTERS // 2)
Conn = psycopg.Connection[Any]


@pytest.fixture(scope="module")
def seeded(dds: Any) -> Seeded:
    return seed(dds)


def sealed_session(dds: Any, alice: str | None = None) -> Conn:
    """A runtime session whose clean-session scan passed with :data:`SEAL` (kept), applying
    ``alice`` (an assertion of alice's; a new one by default)."""
    conn = psycopg.connect(dds.runtime_url, autocommit=True)
    conn.execute("BEGIN")
    row = conn.execute("SELECT oam_sec.apply_assertion(%s, %s)",
                       [alice or dds.context("alice").assertion(), SEAL]).fetchone()
    conn.execute("COMMIT")
    assert row == ("alice",)
    return conn


def sealed_apply(conn: Conn, assertion: str, seal: str = SEAL) -> str | None:
    """Open a transaction and run the sealed apply in it: the user it answers (the transaction
    stays open), or ``None`` when it refused (the transaction is then rolled back)."""
    conn.execute("BEGIN")
    result = conn.pgconn.exec_params(SEALED_APPLY.encode(), [assertion.encode(), seal.encode()])
    if result.status != pq.ExecStatus.TUPLES_OK:
        error = errors.error_from_result(result, encoding="utf-8")
        conn.execute("ROLLBACK")
        assert isinstance(error, errors.DivisionByZero), error  # the refusal, nothing else
        return None
    value = result.get_value(0, 0)
    return None if value is None else value.decode()


def owners_seen(conn: Conn, seeded: Seeded) -> set[str | None]:
    return {r[0] for r in conn.execute(
        sql.SQL("SELECT user_id FROM {}").format(seeded.table("memory"))).fetchall()}


def test_a_verified_assertion_is_applied_for_its_transaction_only(dds: Any,
                                                                  seeded: Seeded) -> None:
    with sealed_session(dds) as conn:
        assert sealed_apply(conn, dds.context("alice").assertion()) == "alice"
        assert owners_seen(conn, seeded) == {"alice", None}
        assert conn.execute("SHOW plan_cache_mode").fetchone() == ("force_generic_plan",)
        conn.execute("COMMIT")
        assert conn.execute("SHOW oam.end_user_assertion").fetchone() == ("",)
        assert conn.execute("SHOW plan_cache_mode").fetchone() == ("auto",)
        assert owners_seen(conn, seeded) == set()


def apply_assertion_calls(conn: Conn) -> int:
    """Calls of ``oam_sec.apply_assertion`` this session counted but not yet reported (read
    inside one transaction, whose end may report them)."""
    row = conn.execute("SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions "
                       "WHERE schemaname = 'oam_sec' AND funcname = 'apply_assertion'"
                       ).fetchone()
    assert row is not None
    return int(row[0])


def test_only_a_kept_seal_and_a_verified_assertion_are_answered_without_apply_assertion(
        dds: Any) -> None:
    """The sealed apply answers from the session's verified assertions, after setting the
    assertion (else its lookup would find none); every other case goes to apply_assertion."""
    alice, bob = dds.context("alice").assertion(), dds.context("bob").assertion()
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        su.execute(sql.SQL("ALTER ROLE {} SET track_functions = 'pl'").format(
            sql.Identifier(RUNTIME)))
        try:
            conn = sealed_session(dds, alice)
        finally:
            su.execute(sql.SQL("ALTER ROLE {} RESET track_functions").format(
                sql.Identifier(RUNTIME)))
    with conn:
        for assertion, seal, user, calls in (
                (alice, SEAL, "alice", 0),  # answered by the lookup
                (alice, "7a" * (MIN_SEAL_CHARACTERS // 2), "alice", 1),  # another seal
                (bob, SEAL, "bob", 1),  # not verified on this session yet
                (bob, SEAL, "bob", 0)):  # verified now
            conn.execute("BEGIN")
            before = apply_assertion_calls(conn)
            result = conn.pgconn.exec_params(SEALED_APPLY.encode(),
                                             [assertion.encode(), seal.encode()])
            assert result.get_value(0, 0) == user.encode()
            assert apply_assertion_calls(conn) - before == calls
            conn.execute("COMMIT")


def test_an_assertion_not_verified_here_yet_is_verified_and_a_forged_one_refused(
        dds: Any, seeded: Seeded) -> None:
    with sealed_session(dds) as conn:
        bob = dds.context("bob").assertion()
        forged = bob[:-1] + ("0" if bob[-1] != "0" else "1")
        assert sealed_apply(conn, forged) is None
        assert owners_seen(conn, seeded) == set()
        assert sealed_apply(conn, bob) == "bob"  # positive control: verified on first use
        assert owners_seen(conn, seeded) == {"bob", None}
        conn.execute("COMMIT")
        assert sealed_apply(conn, bob) == "bob"  # and found verified afterwards
        conn.execute("COMMIT")


@pytest.mark.parametrize("change", [
    "SET row_security = off", "SET DateStyle = 'German'", "SET client_encoding = 'LATIN1'",
    "SET default_transaction_read_only = on"])
def test_changed_settings_are_refused_even_with_the_sessions_seal(dds: Any, seeded: Seeded,
                                                                  change: str) -> None:
    with sealed_session(dds) as conn:
        assert sealed_apply(conn, dds.context("alice").assertion()) == "alice"  # control
        conn.execute("COMMIT")
        conn.execute(change)
        assert sealed_apply(conn, dds.context("alice").assertion()) is None
        conn.execute("RESET ALL")
        assert sealed_apply(conn, dds.context("alice").assertion()) == "alice"
        assert owners_seen(conn, seeded) == {"alice", None}
        conn.execute("COMMIT")


def test_a_dirty_session_is_scanned_unless_the_seal_is_the_sessions(dds: Any) -> None:
    """The sealed apply skips the scan exactly as ``apply_assertion`` does: only for the seal
    the session kept (the SDK sends another whenever SQL not its own may have run)."""
    alice = dds.context("alice").assertion()
    with sealed_session(dds) as conn:
        conn.execute("CREATE TEMP TABLE d_memory (id text)")
        assert sealed_apply(conn, alice, "7a" * (MIN_SEAL_CHARACTERS // 2)) is None
        assert sealed_apply(conn, alice, "short") is None
        assert sealed_apply(conn, alice) == "alice"  # positive control: the kept seal
        conn.execute("COMMIT")
        conn.execute("SELECT set_config(%s, %s, false)", [SEAL_SETTING, "short"])
        assert sealed_apply(conn, alice) is None  # the setting no longer holds it


def test_a_revoke_between_two_sealed_applies_takes_effect(dds: Any) -> None:
    user = "sealed_apply_user"
    store_id = dds.new_store()
    with psycopg.connect(dds.secadmin_url) as admin:
        with admin.transaction():
            deepsec_admin.create_end_user(admin, user)
        grant_agent_memory_policies(admin, store_id, OWNER, [LocalEndUserPrincipal(user)],
                                    POLICIES)
    owner = dds.owner_store(store_id)
    try:
        owner.add(["one", "two"], "memory", user_ids=[user] * 2)
    finally:
        owner.close()
    table = sql.Identifier(OWNER, f"{store_id}_memory")
    count = sql.SQL("SELECT count(*) FROM {}").format(table)
    try:
        with sealed_session(dds) as conn:
            assert sealed_apply(conn, dds.context(user).assertion()) == user
            assert conn.execute(count).fetchone() == (2,)  # positive control
            conn.execute("COMMIT")
            with psycopg.connect(dds.secadmin_url) as admin:
                revoke_agent_memory_policies(admin, store_id, OWNER,
                                             [LocalEndUserPrincipal(user)], POLICIES)
            assert sealed_apply(conn, dds.context(user).assertion()) == user
            assert conn.execute(count).fetchone() == (0,)
            conn.execute("COMMIT")
    finally:
        with psycopg.connect(dds.secadmin_url) as admin, admin.transaction():
            deepsec_admin.drop_end_user(admin, user)


@pytest.mark.parametrize("kind", ["begin", "commit", "show"])
def test_a_replaced_named_statement_of_a_sealed_pool_never_runs(dds: Any, seeded: Seeded,
                                                               kind: str) -> None:
    """Application code checks a sealed connection out and replaces one of the SDK's named
    statements (``BEGIN``, ``COMMIT``, the end check): the SDK's next checkout gets a new
    seal, runs unnamed statements, and the database's scan refuses the session."""
    with psycopg.connect(dds.runtime_url, autocommit=True) as listener, \
            sealing_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as alice:
        listener.execute("LISTEN stolen")
        assert content(alice, "a1") == "memory a1 of alice"
        assert content(alice, "a1") == "memory a1 of alice"  # the named statements exist
        with pool.connection() as conn:
            conn.autocommit = True
            names = conn.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE %s",
                                 [f"oam_{kind}_%"]).fetchall()
            assert len(names) == 1  # what it attacks exists
            name = str(names[0][0])
            conn.execute(f"DEALLOCATE {name}; PREPARE {name} AS "
                         "SELECT pg_notify('stolen', 'ran')".encode())
            conn.execute("SELECT pg_notify('stolen', 'probe')")  # positive control
        with pytest.raises(SecurityContextError):
            content(alice, "a2")
        assert content(alice, "a2") == "memory a2 of alice"  # a fresh connection serves her
        received = [n.payload for n in listener.notifies(timeout=0.5)]
        assert received == ["probe"]


def test_users_alternating_on_one_sealed_connection_see_their_own_rows(
        dds: Any, seeded: Seeded) -> None:
    with sealing_pool(dds) as pool:
        for _ in range(3):
            for user, mine, theirs in (("alice", "a1", "b1"), ("bob", "b1", "a1")):
                with store_as(pool, seeded, dds.context(user)) as store:
                    assert content(store, mine) == f"memory {mine} of {user}"
                    assert content(store, theirs) is None
        with pool.connection() as conn:
            names = conn.execute("SELECT count(*) FROM pg_prepared_statements "
                                 "WHERE name LIKE 'oam_apply_%'").fetchone()
            assert names == (1,)  # one sealed session served both, on the named statements
