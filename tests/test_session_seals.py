"""Sealed sessions (``engines/postgres/session_seals.py``): on pools the SDK builds, an apply
skips the clean-session scan only while nothing but the SDK has used the connection since the
scan last passed. Attacks on that: SQL run on a pooled connection checked out by application
code (state left behind, the session's seal read and set back, the SDK's named apply replaced),
a connection of the SDK's pool handed to a store as the application's own, forged and short
seals sent to the database directly. Each with a positive control."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from dds import OWNER
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from oracleagentmemory.engines.postgres.event_loop_pool import EventLoopPool
from oracleagentmemory.engines.postgres.security_schema import MIN_SEAL_CHARACTERS, SEAL_SETTING
from oracleagentmemory.engines.postgres.session_seals import SealingPool, SessionSeal
from oracleagentmemory.errors import SecurityContextError
from psycopg_pool import ConnectionPool
from test_deepsec_attacks import Seeded, seed

APPLY = "SELECT oam_sec.apply_assertion(%s, %s)"


@pytest.fixture(scope="module")
def seeded(dds: Any) -> Seeded:
    return seed(dds)


@contextmanager
def sealing_pool(dds: Any) -> Iterator[ConnectionPool[Any]]:
    """The gateway's kind of pool (an :class:`EventLoopPool`'s), of one connection."""
    loop_pool = EventLoopPool(dds.runtime_url, name="session-seals", min_size=1, max_size=1,
                              timeout_seconds=5.0)
    loop_pool.open()
    loop_pool.pool.wait()
    try:
        yield loop_pool.pool
    finally:
        loop_pool.close()


@contextmanager
def store_as(pool: ConnectionPool[Any] | psycopg.Connection[Any], seeded: Seeded,
             context: Any) -> Iterator[OracleDBMemoryStore]:
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(None, pool, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=seeded.store_id, schema_owner=OWNER)
        try:
            yield store
        finally:
            store.close()


def content(store: OracleDBMemoryStore, memory_id: str) -> str | None:
    record = store.get("memory", memory_id)
    return None if record is None else str(record.content)


def session_state(pool: ConnectionPool[Any]) -> tuple[int, str | None, list[str]]:
    """Backend pid, seal and the SDK's named applies of the pool's connection (checked out as
    application code would, which takes the connection's seal off)."""
    with pool.connection() as conn:
        conn.autocommit = True
        seal = conn.execute("SELECT current_setting(%s, true)", [SEAL_SETTING]).fetchone()
        names = conn.execute("SELECT name FROM pg_prepared_statements "
                             "WHERE name LIKE 'oam_apply_%' ORDER BY name").fetchall()
        return int(conn.info.backend_pid), None if seal is None else seal[0], [
            str(n[0]) for n in names]


def test_an_sdk_pool_keeps_its_seal_and_named_apply_until_someone_else_checks_out(
        dds: Any, seeded: Seeded) -> None:
    with sealing_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as alice:
        for _ in range(4):
            assert content(alice, "a1") == "memory a1 of alice"
        pid, first_seal, first_names = session_state(pool)
        assert first_seal is not None and len(first_seal) >= MIN_SEAL_CHARACTERS
        assert len(first_names) == 1  # one named apply, prepared once, reused since
        for _ in range(4):
            assert content(alice, "a2") == "memory a2 of alice"
        assert content(alice, "b1") is None
        again_pid, second_seal, second_names = session_state(pool)
        # The inspection above was someone else's checkout: a new seal, a new named apply
        # (the old one is never run again, and the new seal's first flight closed it).
        assert again_pid == pid
        assert second_seal not in (None, first_seal)
        assert len(second_names) == 1 and first_names[0] not in second_names


def test_an_application_pool_never_gets_a_seal(dds: Any, seeded: Seeded) -> None:
    with ConnectionPool(dds.runtime_url, min_size=1, max_size=1, open=True) as pool, \
            store_as(pool, seeded, dds.context("alice")) as alice:
        for _ in range(3):
            assert content(alice, "a1") == "memory a1 of alice"
        _, seal, names = session_state(pool)
        assert seal is None and names == []


def _notify_stolen_apply(name: str) -> str:
    return (f"DEALLOCATE {name}; PREPARE {name}(text, text) AS SELECT 'alice'::text "
            "FROM (SELECT pg_catalog.pg_notify('stolen', $1)) n")


PRIMINGS = [
    "CREATE TEMP TABLE d_memory (id text)",
    "CREATE FUNCTION pg_temp.spy(x anyelement) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN "
    "PERFORM pg_notify('stolen', current_setting('oam.end_user_assertion', true)); "
    "RETURN true; END $$; CREATE DOMAIN pg_temp.jsonb AS pg_catalog.jsonb "
    "CHECK (pg_temp.spy(VALUE))",
    "DECLARE held CURSOR WITH HOLD FOR SELECT 1",
    "PREPARE _pg3_0(text) AS SELECT pg_notify('stolen', $1)",
    "SET row_security = off",
    "SET default_transaction_read_only = on",
    "REPLACE THE NAMED APPLY",
]


@pytest.mark.parametrize("priming", PRIMINGS)
@pytest.mark.parametrize("seal_put_back", [True, False])
def test_a_connection_handed_back_dirty_is_scanned_and_refused(
        dds: Any, seeded: Seeded, priming: str, seal_put_back: bool) -> None:
    """Application code checks a connection of the SDK's pool out, leaves state on it and,
    knowing the session's seal, sets it back (a stale marker): the SDK's next apply sends a
    new seal, the database scans and refuses, the connection is closed, nothing leaks."""
    with psycopg.connect(dds.runtime_url, autocommit=True) as listener, \
            sealing_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as alice:
        listener.execute("LISTEN stolen")
        assert content(alice, "a1") == "memory a1 of alice"  # positive control
        assert content(alice, "a1") == "memory a1 of alice"  # the named apply is prepared
        with pool.connection() as conn:  # the attacker's SQL on the pooled connection
            conn.autocommit = True
            seal = conn.execute("SELECT current_setting(%s, true)", [SEAL_SETTING]).fetchone()
            names = conn.execute("SELECT name FROM pg_prepared_statements "
                                 "WHERE name LIKE 'oam_apply_%'").fetchall()
            assert seal is not None and seal[0] and len(names) == 1  # what it attacks exists
            conn.execute(_notify_stolen_apply(str(names[0][0])) if priming.startswith(
                "REPLACE") else priming)
            if seal_put_back:
                conn.execute("SELECT set_config(%s, %s, false)", [SEAL_SETTING, seal[0]])
            conn.execute("SELECT pg_notify('stolen', 'probe')")  # positive control
        with pytest.raises(SecurityContextError):
            content(alice, "a2")  # refused on the primed connection, which is closed
        assert content(alice, "a2") == "memory a2 of alice"  # a fresh connection serves her
        assert content(alice, "b1") is None
        received = [n.payload for n in listener.notifies(timeout=0.5)]
        assert received == ["probe"]


def test_a_clean_checkout_by_someone_else_costs_only_a_scan(dds: Any, seeded: Seeded) -> None:
    """Positive control of the test above: the same checkout without leftovers (the seal read
    and set back) keeps the connection serving; the scan passed, so a new seal was kept."""
    with sealing_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as alice:
        assert content(alice, "a1") == "memory a1 of alice"
        assert content(alice, "a1") == "memory a1 of alice"
        with pool.connection() as conn:
            conn.autocommit = True
            pid = conn.info.backend_pid
            seal = conn.execute("SELECT current_setting(%s, true)", [SEAL_SETTING]).fetchone()
            assert seal is not None
            conn.execute("SELECT set_config(%s, %s, false)", [SEAL_SETTING, seal[0]])
        assert content(alice, "a2") == "memory a2 of alice"
        now_pid, now_seal, _ = session_state(pool)
        assert now_pid == pid and now_seal not in (None, seal[0])


def test_a_connection_of_an_sdk_pool_handed_in_by_the_application_is_scanned(
        dds: Any, seeded: Seeded) -> None:
    """A connection checked out of the SDK's pool while sealed, then given to a store as the
    application's own connection: its seal is never claimed, so the apply scans."""
    with sealing_pool(dds) as pool:
        with store_as(pool, seeded, dds.context("alice")) as alice:
            assert content(alice, "a1") == "memory a1 of alice"
            assert content(alice, "a1") == "memory a1 of alice"  # sealed, named apply ready
        with pool.connection() as conn:
            with store_as(conn, seeded, dds.context("alice")) as alice:
                assert content(alice, "a2") == "memory a2 of alice"  # positive control
            conn.execute("CREATE TEMP TABLE d_memory (id text)")
            conn.commit()
            with pytest.raises(SecurityContextError), \
                    store_as(conn, seeded, dds.context("alice")) as alice:
                content(alice, "a2")  # (or refused already when the store opens)
            assert conn.closed


def test_a_failed_write_leaves_the_connection_serving_with_a_new_seal(
        dds: Any, seeded: Seeded) -> None:
    """A write that fails rolls back through psycopg (which may deallocate every statement
    of the session, the named apply included): the next reads on the same connection work."""
    fresh = seed(dds)
    with sealing_pool(dds) as pool, store_as(pool, fresh, dds.context("alice")) as alice:
        assert content(alice, "a1") == "memory a1 of alice"
        hits = alice.search(None, 5, query_vector=[1.0, 0.0, 0.0], record_types=["memory"])
        assert hits  # psycopg's own prepared statements exist now
        assert content(alice, "a1") == "memory a1 of alice"
        pid, _, _ = session_state(pool)
        assert content(alice, "a1") == "memory a1 of alice"
        with pytest.raises(ValueError, match="already exists"):
            alice.add(["again"], "memory", record_ids=["a1"])
        for memory_id in ("a2", "a3", "a2"):
            assert content(alice, memory_id) == f"memory {memory_id} of alice"
        assert content(alice, "b1") is None
        assert session_state(pool)[0] == pid


def _apply(conn: psycopg.Connection[Any], assertion: str, seal: str | None) -> str | None:
    row = conn.execute(APPLY, [assertion, seal]).fetchone()
    conn.rollback()  # the transaction-local assertion goes; a session-level seal set stays
    return None if row is None else row[0]


def test_the_database_skips_the_scan_only_for_the_seal_it_passed_with(dds: Any) -> None:
    """On one session: a scan that passes keeps the caller's seal (committed); afterwards the
    same seal skips the scan (the positive control that it is skipped: a temp table is there),
    and any other seal, none, or a short one set by the session's own SQL, scans and refuses."""
    assertion = dds.context("alice").assertion()
    seal = "5e" * (MIN_SEAL_CHARACTERS // 2)
    with psycopg.connect(dds.runtime_url) as conn:
        assert conn.execute(APPLY, [assertion, seal]).fetchone() == ("alice",)
        conn.commit()
        assert conn.execute("SELECT current_setting(%s)", [SEAL_SETTING]).fetchone() == (seal,)
        conn.execute("CREATE TEMP TABLE d_memory (id text)")
        conn.commit()
        assert _apply(conn, assertion, seal) == "alice"
        assert _apply(conn, assertion, None) is None
        assert _apply(conn, assertion, "7a" * (MIN_SEAL_CHARACTERS // 2)) is None
        conn.execute("SELECT set_config(%s, 'short', false)", [SEAL_SETTING])
        conn.commit()
        assert _apply(conn, assertion, "short") is None
        assert _apply(conn, assertion, seal) is None  # the setting no longer holds it


def test_a_refused_scan_keeps_no_seal(dds: Any) -> None:
    assertion = dds.context("alice").assertion()
    seal = "c4" * (MIN_SEAL_CHARACTERS // 2)
    with psycopg.connect(dds.runtime_url) as conn:
        conn.execute("CREATE TEMP TABLE d_memory (id text)")
        conn.commit()
        assert conn.execute(APPLY, [assertion, seal]).fetchone() == (None,)
        conn.commit()
        assert conn.execute("SELECT current_setting(%s, true)", [SEAL_SETTING]).fetchone() in (
            (None,), ("",))
        assert _apply(conn, assertion, seal) is None
    with psycopg.connect(dds.runtime_url) as conn:  # positive control: a clean session
        assert conn.execute(APPLY, [assertion, seal]).fetchone() == ("alice",)


def test_a_sealing_pool_gives_the_seal_only_to_the_claim_after_the_engines_return(
        dds: Any) -> None:
    with SealingPool(dds.runtime_url, min_size=1, max_size=1, open=True) as pool:
        conn = pool.getconn()
        first = pool.claim_seal(conn)
        assert not first.kept
        pool.reseal(conn, first)  # never applied: not kept
        pool.putconn(conn)
        conn = pool.getconn()
        assert pool.claim_seal(conn).token != first.token
        first.kept = True
        pool.reseal(conn, first)
        pool.putconn(conn)
        conn = pool.getconn()  # the engine's checkout, claimed at once
        claimed = pool.claim_seal(conn)
        assert claimed == SessionSeal(first.token, kept=True)
        assert pool.claim_seal(conn).token != first.token  # claimed once only
        pool.reseal(conn, claimed)
        pool.putconn(conn)
        with pool.connection() as other:  # someone else's checkout takes it off
            assert other is conn
        conn = pool.getconn()
        assert pool.claim_seal(conn).kept is False
        pool.putconn(conn)
