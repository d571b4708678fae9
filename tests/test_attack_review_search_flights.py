"""Attack review of acd385a and c788d41: a search's flights in an end-user context.

On a pool the SDK builds (``SealingPool``), a search's first candidate round travels with
``BEGIN`` and the context's apply (``ContextTransaction.read_open``), each round's settings and
their restoring in the same flight, and its record read with ``COMMIT`` and the end check
(``read_last``). The attacker is SQL of the runtime login on the pooled connection (checked out
between the SDK's requests), a refused or forged assertion, and failures it can cause mid-flight.

Round executions are counted by a probe the test adds to the store: a permissive row-security
policy on the chunks (``false`` for every row, so it changes no answer) whose function advances
one of two sequences, one when the row is read inside an applied context, the other outside
one. ``nextval`` survives a rollback, so a round that ran at all shows there.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from dds import OWNER, RUNTIME
from oracleagentmemory.apis import IEmbedder
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from oracleagentmemory.engines.postgres.context_sql import MAX_PREPARED_READS
from oracleagentmemory.engines.postgres.event_loop_pool import EventLoopPool
from oracleagentmemory.engines.postgres.session_seals import SealingPool
from oracleagentmemory.errors import SecurityContextError
from psycopg import pq, sql
from psycopg.abc import Query
from psycopg_pool import ConnectionPool
from test_attack_review_23 import _forgeries, content
from test_deepsec_attacks import Seeded, seed
from test_session_seals import sealing_pool

ALICE = {"a1", "a2", "a3", "g1", "g2"}
BOB = {"b1", "b2", "b3", "g1", "g2"}
QUERIES: dict[str, tuple[str | None, list[float] | None]] = {
    "vector": (None, [1.0, 0.1, 0.0]),
    "keyword": ("memory", None),
    "hybrid": ("memory", None),
}
MODES = list(QUERIES)


class FixedEmbedder(IEmbedder):
    """Every text embeds as the vector the other modes search with (hybrid needs an embedder
    for its text)."""

    @property
    def embedding_dimension(self) -> int:
        return 3

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        return np.tile(np.array([1.0, 0.1, 0.0], dtype=np.float32), (len(texts), 1))


@contextmanager
def mode_store(pool: Any, seeded: Seeded, context: Any, mode: str
               ) -> Iterator[OracleDBMemoryStore]:
    """:func:`store_as` searching in ``mode``."""
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(FixedEmbedder() if mode == "hybrid" else None, pool,
                                    schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=seeded.store_id, schema_owner=OWNER,
                                    search_strategy=mode)
        try:
            yield store
        finally:
            store.close()


def hits(store: OracleDBMemoryStore, mode: str, k: int = 20, **kwargs: Any) -> set[str]:
    text, vector = QUERIES[mode]
    return {record.id for record, _ in store.search(text, k, query_vector=vector,
                                                    record_types=["memory"], **kwargs)}


def seed_with_policy(dds: Any, setup: Sequence[Query], table: str,
                     policy: sql.SQL) -> Seeded:
    """A fresh store, after the superuser ran ``setup``, whose ``table`` gets ``policy`` (its
    ``{}`` the table) from the owner."""
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        for statement in setup:
            su.execute(statement)
    seeded = seed(dds)
    with psycopg.connect(dds.owner_url) as owner:
        owner.execute(policy.format(seeded.table(table)))
    return seeded


def probe_seed(dds: Any) -> Seeded:
    """A fresh store whose chunks carry the probe policy (see the module's docstring)."""
    setup: list[Query] = []
    for name in ("oam_rev_inside", "oam_rev_outside"):
        setup += [f"CREATE SEQUENCE IF NOT EXISTS public.{name}".encode(),
                  f"GRANT USAGE ON SEQUENCE public.{name} TO {RUNTIME}".encode()]
    setup += [
        "CREATE OR REPLACE FUNCTION public.oam_rev_probe() RETURNS boolean LANGUAGE sql "
        "VOLATILE AS $$ SELECT CASE WHEN coalesce(pg_catalog.current_setting("
        "'oam.end_user_assertion', true), '') = '' "
        "THEN pg_catalog.nextval('public.oam_rev_outside') "
        "ELSE pg_catalog.nextval('public.oam_rev_inside') END < 0 $$",
        "GRANT EXECUTE ON FUNCTION public.oam_rev_probe() TO PUBLIC"]
    return seed_with_policy(dds, setup, "record_chunks",
                            sql.SQL("CREATE POLICY aaa_oam_rev_probe ON {} AS PERMISSIVE "
                                    "FOR SELECT USING (public.oam_rev_probe())"))


@pytest.fixture(scope="module")
def probed(dds: Any) -> Seeded:
    return probe_seed(dds)


def probe_counts(dds: Any) -> tuple[int, int]:
    """Chunk rows the probe saw so far (inside an applied context, outside one)."""
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        row = su.execute(
            "SELECT (SELECT last_value + is_called::int FROM public.oam_rev_inside), "
            "(SELECT last_value + is_called::int FROM public.oam_rev_outside)").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def runtime_pids(dds: Any) -> set[int]:
    """Backends of the runtime login (read as the superuser: no checkout of the pool's)."""
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        return {int(r[0]) for r in su.execute(
            "SELECT pid FROM pg_stat_activity WHERE usename = %s", [RUNTIME]).fetchall()}


def forged_as(context: Any, assertion: str) -> Any:
    """A context naming ``context``'s user (verified already, so the search's first round
    travels with the apply) that sends ``assertion``."""
    forged = dataclasses.replace(context)
    forged._signed[:] = [(assertion, time.time() + 3600)]
    assert forged.assertion() == assertion and forged.verified_username()
    return forged


SESSION_STATE = (
    "SELECT pg_catalog.current_setting('oam.end_user_assertion', true), "
    "pg_catalog.current_setting('enable_bitmapscan'), "
    "pg_catalog.current_setting('plan_cache_mode'), "
    "pg_catalog.current_setting('hnsw.ef_search', true), "
    "pg_catalog.current_setting('hnsw.iterative_scan', true), "
    "pg_catalog.current_setting('hnsw.max_scan_tuples', true), "
    "pg_catalog.current_setting('oam_search.enable_bitmapscan', true), "
    "pg_catalog.current_setting('oam_search.plan_cache_mode', true)")


def clean_state(row: tuple[Any, ...] | None) -> bool:
    """Whether a session shows no assertion and every search setting at its default."""
    assert row is not None
    assertion, bitmap, plan_cache, ef_search, iterative, max_tuples, *placeholders = row
    return (assertion in (None, "") and bitmap == "on" and plan_cache == "auto"
            and ef_search in (None, "", "40") and iterative in (None, "", "off")
            and max_tuples in (None, "", "20000")
            and all(p in (None, "") for p in placeholders))


def session_state(pool: ConnectionPool[Any]) -> tuple[Any, ...] | None:
    with pool.connection() as conn:
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
        conn.autocommit = True
        return tuple(conn.execute(SESSION_STATE).fetchone() or ())


# --- 1. A refused or forged assertion in the search's first flight ----------------------------


@pytest.mark.parametrize("seal", ["kept", "new"])
@pytest.mark.parametrize("mode", MODES)
def test_a_forged_assertion_in_the_first_search_flight_runs_no_round(
        dds: Any, probed: Seeded, mode: str, seal: str) -> None:
    """alice's name with each assertion text the runtime login can make without the key: the
    search is refused, no round statement runs (the probe sees no chunk row, inside or outside
    a context), the connection is discarded and serves alice right afterwards. ``kept``: the
    connection's seal is kept (the named sealed apply); ``new``: the attacker checked it out
    first (the unnamed apply with the scan). Positive control: alice's genuine searches on the
    same pool reach the probe, always inside her context."""
    alice = dds.context("alice")
    with sealing_pool(dds) as pool, mode_store(pool, probed, alice, mode) as store:
        for forgery in _forgeries(dds):
            before = probe_counts(dds)
            for _ in range(2):  # sealed, the rounds named on the connection
                assert hits(store, mode) == ALICE
            inside, outside = probe_counts(dds)
            assert inside > before[0] and outside == before[1]  # positive control
            if seal == "new":
                with pool.connection() as conn:
                    conn.execute("SELECT 1")
            pids = runtime_pids(dds)
            assert len(pids) == 1
            with pytest.raises(SecurityContextError, match="does not accept"), \
                    OracleMemoryEndUserSecurityContext(forged_as(alice, forgery)):
                hits(store, mode)
            assert probe_counts(dds) == (inside, outside), forgery[:16]
            assert runtime_pids(dds).isdisjoint(pids)  # the refused connection is gone
        assert session_state(pool) is not None and clean_state(session_state(pool))



def test_another_users_genuine_assertion_under_alices_name_returns_no_round_row(
        dds: Any, probed: Seeded) -> None:
    """A context naming alice carries bob's genuine assertion: the database accepts it (as
    bob), so the first flight's round runs, but the SDK checks the apply's answer before any
    row reaches the caller: refused, no hit, the connection discarded. Positive control: the
    probe shows the round ran inside the context (what was at stake), and bob's own search
    returns his rows."""
    with sealing_pool(dds) as pool, mode_store(pool, probed, dds.context("alice"),
                                               "vector") as store:
        for _ in range(2):
            assert hits(store, "vector") == ALICE
        pids = runtime_pids(dds)
        before = probe_counts(dds)
        found: list[set[str]] = []
        with pytest.raises(SecurityContextError, match="does not accept"), \
                OracleMemoryEndUserSecurityContext(
                    forged_as(dds.context("alice"), dds.context("bob").assertion())):
            found.append(hits(store, "vector"))
        assert found == []
        assert probe_counts(dds)[0] > before[0]  # the round ran, as bob, and its rows stayed
        assert probe_counts(dds)[1] == before[1]
        assert runtime_pids(dds).isdisjoint(pids)
        with OracleMemoryEndUserSecurityContext(dds.context("bob")):
            assert hits(store, "vector") == BOB
        assert hits(store, "vector") == ALICE


# --- 2. Search rounds replaced at the protocol level between checkouts ------------------------


def _stand_in_every_named_read(conn: psycopg.Connection[Any]) -> list[str]:
    """Replace each named read and round of the engine by a Parse of the same name whose
    statement also notifies the current assertion; the replaced statements' text."""
    reads = conn.execute(
        "SELECT name, statement, array(SELECT t::oid FROM unnest(parameter_types) t) "
        "FROM pg_prepared_statements WHERE name LIKE 'oam\\_read\\_%' "
        "AND statement ~* '^\\s*(select|with)'").fetchall()
    for name, statement, types in reads:
        conn.execute(sql.SQL("DEALLOCATE {}").format(sql.Identifier(name)))
        stand_in = ("WITH leak AS MATERIALIZED (SELECT pg_catalog.pg_notify('stolen', "
                    "pg_catalog.current_setting('oam.end_user_assertion', true))) "
                    f"SELECT o.* FROM leak, ({statement}) o")
        result = conn.pgconn.prepare(str(name).encode(), stand_in.encode(),
                                     [int(t) for t in types])
        assert result.status == pq.ExecStatus.COMMAND_OK
    return [str(statement) for _, statement, _ in reads]


@pytest.mark.parametrize("scope", [{}, {"user_id": "alice", "exact_user_match": True}],
                         ids=["unscoped", "scoped-exact"])
@pytest.mark.parametrize("mode", MODES)
def test_search_rounds_replaced_at_the_protocol_level_never_run_for_the_next_user(
        dds: Any, seeded_plain: Seeded, mode: str, scope: dict[str, Any]) -> None:
    """Each search kind's rounds (HNSW with its settings, scoped exact with bitmap scans off,
    keyword with the generic plan forced, hybrid) and their settings statements are named
    reads; the attacker checks the connection out and replaces every one of them at the
    protocol level by a stand-in that notifies the assertion. bob's searches and reads answer
    his rows and no assertion is notified. Positive controls: the stand-ins include the rounds
    (they read the chunks) and are not SQL-level; the listener hears a probe."""
    bobs: dict[str, Any] = {k: ("bob" if k == "user_id" else v) for k, v in scope.items()}
    with psycopg.connect(dds.runtime_url, autocommit=True) as listener, \
            sealing_pool(dds) as pool:
        listener.execute("LISTEN stolen")
        with mode_store(pool, seeded_plain, dds.context("alice"), mode) as alice:
            for _ in range(3):
                assert hits(alice, mode, **scope) == (ALICE - {"g1", "g2"} if scope else ALICE)
        with pool.connection() as conn:
            conn.autocommit = True
            replaced = _stand_in_every_named_read(conn)
            assert any("record_chunks" in text for text in replaced)
            assert any("set_config" in text for text in replaced)  # the settings too
            assert conn.execute("SELECT count(*) FROM pg_prepared_statements WHERE from_sql"
                                ).fetchone() == (0,)
            conn.execute("SELECT pg_notify('stolen', 'probe')")
        with mode_store(pool, seeded_plain, dds.context("bob"), mode) as bob:
            for _ in range(2):
                assert hits(bob, mode, **bobs) == (BOB - {"g1", "g2"} if scope else BOB)
                assert content(bob, "a1") is None
        assert [n.payload for n in listener.notifies(timeout=0.5)] == ["probe"]


@pytest.fixture(scope="module")
def seeded_plain(dds: Any) -> Seeded:
    return seed(dds)


# --- 3. A round that fails mid-flight: cancelled while it waits on a lock ---------------------

KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "hnsw": ("vector", {}),
    "scoped-exact": ("vector", {"user_id": "alice", "exact_user_match": True}),
    "keyword": ("keyword", {}),
    "hybrid": ("hybrid", {}),
}


def _waiting_backend(dds: Any) -> tuple[int, str]:
    """The runtime login's backend that waits on a lock, and its statement."""
    deadline = time.monotonic() + 10
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        while True:
            row = su.execute("SELECT pid, query FROM pg_stat_activity WHERE usename = %s "
                             "AND wait_event_type = 'Lock'", [RUNTIME]).fetchone()
            if row is not None:
                return int(row[0]), str(row[1])
            assert time.monotonic() < deadline, "the search never waited on the lock"
            time.sleep(0.02)


def _cancel(dds: Any, pid: int) -> None:
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        assert su.execute("SELECT pg_cancel_backend(%s)", [pid]).fetchone() == (True,)


@pytest.mark.parametrize("in_block", [False, True], ids=["first-flight", "open-transaction"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_round_cancelled_mid_flight_leaves_no_context_setting_or_transaction(
        dds: Any, kind: str, in_block: bool, caplog: pytest.LogCaptureFixture) -> None:
    """On a connection whose seal is kept, alice's search round waits on a lock the owner
    holds on the chunks and the server cancels it (a cancel request, as the gateway's timeout
    or an operator sends). First flight: BEGIN, the apply and the round's settings ran before
    it; open transaction: inside a block after a write. The connection then holds no
    assertion, no transaction (the pool did not have to roll one back) and every search
    setting at its default; the block's write is undone; bob's next search answers his rows.
    Positive control: the statement that waited is the round (it reads the chunks)."""
    mode, scope = KINDS[kind]
    fresh = seed(dds)
    failures: list[BaseException] = []
    caplog.set_level(logging.WARNING, logger="psycopg.pool")
    with sealing_pool(dds) as pool, mode_store(pool, fresh, dds.context("alice"), mode) as store:
        expected = ALICE - {"g1", "g2"} if scope else ALICE
        for _ in range(2):  # the seal kept, the rounds named, the scan choice made
            assert hits(store, mode, **scope) == expected

        def search() -> None:
            try:
                if in_block:
                    with store.transaction():
                        assert store.update("memory", "a1", content="written in the block") == 1
                        hits(store, mode, **scope)
                else:
                    hits(store, mode, **scope)
            except BaseException as error:  # noqa: BLE001 - examined below
                failures.append(error)

        worker = threading.Thread(target=contextvars.copy_context().run, args=(search,))
        with psycopg.connect(dds.owner_url) as owner:
            owner.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                fresh.table("record_chunks")))
            worker.start()
            pid, query = _waiting_backend(dds)
            assert "record_chunks" in query  # positive control: the round waits
            _cancel(dds, pid)
            worker.join(10)
        assert not worker.is_alive()
        assert len(failures) == 1 and "cancel" in str(failures[0]).lower()
        state = session_state(pool)
        assert clean_state(state), state
        assert not [r for r in caplog.records if "rolling back" in r.getMessage().lower()]
        assert content(store, "a1") == "memory a1 of alice"  # the block's write undone
        with OracleMemoryEndUserSecurityContext(dds.context("bob")):
            bobs: dict[str, Any] = {k: ("bob" if k == "user_id" else v) for k, v in scope.items()}
            assert hits(store, mode, **bobs) == (BOB - {"g1", "g2"} if scope else BOB)
        assert hits(store, mode, **scope) == expected


# --- 4. The record read (read_last) fails: its named statement no longer fits its table ------


def _searches_after_altering_content(dds: Any) -> tuple[list[str], bool, bool]:
    """alice's three searches after the owner changed the type of a column the search's
    record read selects (prepared on the sealed connection by two earlier searches); whether
    the connection was clean and served bob right afterwards, on the same backend."""
    fresh = seed(dds)
    with sealing_pool(dds) as pool, mode_store(pool, fresh, dds.context("alice"),
                                               "vector") as store:
        for _ in range(2):
            assert hits(store, "vector") == ALICE
        pids = runtime_pids(dds)
        with psycopg.connect(dds.owner_url) as owner:
            owner.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN content TYPE varchar").format(
                fresh.table("memory")))
            changed = owner.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attname = 'content'",
                [fresh.table("memory").as_string(owner)]).fetchone()
            assert changed == ("character varying",)
        outcomes: list[str] = []
        for _ in range(3):
            try:
                outcomes.append(str(sorted(hits(store, "vector"))))
            except Exception as error:  # noqa: BLE001 - recorded, checked by the callers
                outcomes.append(type(error).__name__)
        clean = clean_state(session_state(pool))
        with OracleMemoryEndUserSecurityContext(dds.context("bob")):
            serves = hits(store, "vector") == BOB
        return outcomes, clean, serves and runtime_pids(dds) == pids


def test_a_record_read_failing_in_the_last_flight_leaves_nothing_and_the_pool_recovers(
        dds: Any) -> None:
    """The record read fails on the server ("cached plan must not change result type") in the
    flight that also carries COMMIT and the end check, after the rounds succeeded (they select
    no such column). The transaction is rolled back and the read runs again on its own, once
    (``ContextTransaction.read_last``; before that retry the first search after the change
    failed): every search answers right, nothing of alice's context survives on the
    connection, which serves on (bob gets his rows) on the same backend. Positive control: the
    column's type did change under the prepared read."""
    outcomes, clean, serves = _searches_after_altering_content(dds)
    assert outcomes == [str(sorted(ALICE))] * 3, outcomes
    assert clean and serves


# --- 5. Worker threads sharing a transaction block (the async twins) -------------------------


def test_threads_searching_in_one_block_take_turns_and_each_get_their_rows(
        dds: Any, seeded_plain: Seeded) -> None:
    """Worker threads started inside a block share its session: an HNSW search, a scoped exact
    search (bitmap scans off and restored in its flight), a search filtered to bob (nothing)
    and a read start together, so the first flight (BEGIN and the apply) and the others'
    rounds race for one connection (ContextTransaction._deciding, the connection's lock).
    Each answers its own rows, every time; the connection then serves bob with nothing left.
    Positive control: the barrier releases the threads together, and the same operations
    answer the same outside a block."""
    jobs: dict[str, Any] = {
        "hnsw": lambda s: hits(s, "vector"),
        "scoped": lambda s: hits(s, "vector", user_id="alice", exact_user_match=True),
        "bobs": lambda s: hits(s, "vector", user_id="bob", exact_user_match=True),
        "read": lambda s: content(s, "a2"),
    }
    expected = {"hnsw": ALICE, "scoped": ALICE - {"g1", "g2"}, "bobs": set(),
                "read": "memory a2 of alice"}
    answers: list[tuple[str, Any]] = []

    def run(store: OracleDBMemoryStore, barrier: threading.Barrier, name: str) -> None:
        barrier.wait()
        answers.append((name, jobs[name](store)))

    with sealing_pool(dds) as pool, mode_store(pool, seeded_plain, dds.context("alice"),
                                               "vector") as alice:
        assert {name: job(alice) for name, job in jobs.items()} == expected  # outside a block
        for _ in range(10):
            barrier = threading.Barrier(len(jobs))
            with alice.transaction():
                threads = [threading.Thread(target=contextvars.copy_context().run,
                                            args=(run, alice, barrier, name)) for name in jobs]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(30)
        assert len(answers) == 10 * len(jobs)
        assert all(answer == expected[name] for name, answer in answers), answers
        assert clean_state(session_state(pool))
        with OracleMemoryEndUserSecurityContext(dds.context("bob")):
            assert hits(alice, "vector") == BOB


# --- 6. A search inside a block with writes: atomic, in every search kind ---------------------


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_search_between_writes_in_a_block_rolls_back_with_them(dds: Any, kind: str) -> None:
    """A write, a search of each kind, a write: the block fails, both writes are undone (the
    search's record read did not commit the block's transaction). Positive control: the same
    block committed keeps both writes, and the block saw its own first write in the search."""
    mode, scope = KINDS[kind]
    fresh = seed(dds)
    mine = ALICE - {"g1", "g2"} if scope else ALICE
    with sealing_pool(dds) as pool, mode_store(pool, fresh, dds.context("alice"), mode) as store:
        for _ in range(2):
            assert hits(store, mode, **scope) == mine
        with pytest.raises(RuntimeError), store.transaction():
            store.update("memory", "a1", content="changed in the block")
            found = hits(store, mode, **scope)
            assert {"a2", "a3"} <= found <= mine  # a1's new text has no embedding here
            store.update("memory", "a2", content="changed after the search")
            assert content(store, "a1") == "changed in the block"
            raise RuntimeError("roll the block back")
        assert content(store, "a1") == "memory a1 of alice"
        assert content(store, "a2") == "memory a2 of alice"
        with store.transaction():
            store.update("memory", "a1", content="changed in the block")
            assert {"a2", "a3"} <= hits(store, mode, **scope) <= mine
            store.update("memory", "a2", content="changed after the search")
        assert content(store, "a1") == "changed in the block"
        assert content(store, "a2") == "changed after the search"
        assert clean_state(session_state(pool))


# --- 7. Metadata-filter shapes never fill the connection with named statements ---------------


def _named_reads(pool: ConnectionPool[Any]) -> list[str]:
    with pool.connection() as conn:
        return [str(r[0]) for r in conn.execute(
            "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'oam\\_read\\_%'"
        ).fetchall()]


@pytest.mark.parametrize("mode", MODES)
def test_metadata_filter_shapes_are_never_named_and_leave_room_for_the_rest(
        dds: Any, seeded_plain: Seeded, mode: str) -> None:
    """Searches with 40 metadata-filter shapes (more than MAX_PREPARED_READS): none of their
    rounds becomes a named statement of the connection, and a plain search's round is still
    named afterwards. Positive control: a plain search's round is named (it reads the
    chunks) and each filtered search did reach the database (a matching filter finds a1)."""
    with psycopg.connect(dds.owner_url) as owner:
        owner.execute(sql.SQL("UPDATE {} SET metadata = %s::jsonb WHERE id = 'a1'").format(
            seeded_plain.table("memory")), ['{"k0": 0}'])
    with sealing_pool(dds) as pool, mode_store(pool, seeded_plain, dds.context("alice"),
                                               mode) as store:
        for n in range(MAX_PREPARED_READS + 8):
            shape = {f"k{i}": i for i in range(n + 1)}
            assert hits(store, mode, metadata_filter=shape) == ({"a1"} if n == 0 else set())
        named = _named_reads(pool)
        assert len(named) <= MAX_PREPARED_READS
        assert not any("k1" in text or "metadata" in text and "@>" in text for text in named)
        assert hits(store, mode) == ALICE
        assert any("record_chunks" in text for text in _named_reads(pool))


# --- 8. read_open's retry after a named statement is gone ------------------------------------


def _deallocate_keeping_the_seal(pool: ConnectionPool[Any], statement: str) -> list[str]:
    """Deallocate the named statements of the pool's one connection that ``statement`` picks,
    and give the connection back with its seal kept: a stand-in for the SDK's own session
    losing them (psycopg's rollback sends DEALLOCATE ALL) without anyone else's SQL, the one
    case where a kept seal meets a missing name. Uses the pool's internals on purpose."""
    assert isinstance(pool, SealingPool)
    conn = pool.getconn()
    try:
        token = pool._lent_seals[conn]  # kept: the engine gave it back last time
        saved = conn.autocommit
        conn.autocommit = True
        names = [str(r[0]) for r in conn.execute(
            "SELECT name FROM pg_prepared_statements WHERE " + statement).fetchall()]
        for name in names:
            conn.execute(sql.SQL("DEALLOCATE {}").format(sql.Identifier(name)))
        conn.autocommit = saved
        pool._returned_seals[conn] = token
    finally:
        pool.putconn(conn)
    return names


@pytest.mark.parametrize("gone", ["the-rounds", "every-statement"])
@pytest.mark.parametrize("kind", ["hnsw", "scoped-exact", "keyword"])
def test_the_first_flights_retry_runs_rounds_only_inside_the_apply(
        dds: Any, probed: Seeded, kind: str, gone: str) -> None:
    """The search's first flight finds a named statement gone (its rounds, or every statement
    with BEGIN and the apply), rolls back and runs once more with them prepared again: the
    search answers alice's rows, and the probe sees chunk rows read only inside her context
    (never a round outside the apply, BEGIN or the context). Positive controls: the names
    deallocated existed, the retry prepared new ones, the seal was kept."""
    mode, scope = KINDS[kind]
    expected = ALICE - {"g1", "g2"} if scope else ALICE
    picks = {"the-rounds": "name LIKE 'oam\\_read\\_%' AND statement LIKE '%record_chunks%'",
             "every-statement": "name LIKE 'oam\\_%'"}[gone]
    with sealing_pool(dds) as pool, mode_store(pool, probed, dds.context("alice"), mode) as store:
        for _ in range(2):
            assert hits(store, mode, **scope) == expected
        deallocated = _deallocate_keeping_the_seal(pool, picks)
        assert deallocated
        assert isinstance(pool, SealingPool) and len(pool._idle_seals) == 1  # kept
        pids = runtime_pids(dds)
        before = probe_counts(dds)
        assert hits(store, mode, **scope) == expected
        inside, outside = probe_counts(dds)
        assert outside == before[1] and (inside > before[0] or bool(scope))
        assert runtime_pids(dds) == pids  # the same connection, not a fresh one
        with pool.connection() as conn:
            now = {str(r[0]) for r in conn.execute(
                "SELECT name FROM pg_prepared_statements WHERE name LIKE 'oam\\_%'").fetchall()}
        assert now.isdisjoint(deallocated) and any(n.startswith("oam_read_") for n in now)
        with OracleMemoryEndUserSecurityContext(dds.context("bob")):
            bobs: dict[str, Any] = {k: ("bob" if k == "user_id" else v) for k, v in scope.items()}
            assert hits(store, mode, **bobs) == (BOB - {"g1", "g2"} if scope else BOB)
        assert probe_counts(dds)[1] == before[1]


# --- 9. The COMMIT of the last flight fails after the record read ----------------------------


def _commit_failing_seed(dds: Any) -> Seeded:
    """A fresh store whose memory rows, once armed, make the reading transaction's COMMIT fail:
    a restrictive policy (``true`` for every row, so evaluated for each visible one) whose
    function, in the record read (not a round: its statement orders by owner), counts the
    call and inserts a row that breaks a deferred foreign key, checked only at COMMIT."""
    setup: list[Query] = [
        "CREATE SEQUENCE IF NOT EXISTS public.oam_rev_reads",
        "CREATE TABLE IF NOT EXISTS public.oam_rev_parent (id int PRIMARY KEY)",
        "CREATE TABLE IF NOT EXISTS public.oam_rev_child (parent int REFERENCES "
        "public.oam_rev_parent DEFERRABLE INITIALLY DEFERRED)",
        "CREATE TABLE IF NOT EXISTS public.oam_rev_switch (armed boolean)",
        "DELETE FROM public.oam_rev_switch",
        "INSERT INTO public.oam_rev_switch VALUES (false)",
        f"GRANT USAGE ON SEQUENCE public.oam_rev_reads TO {RUNTIME}".encode(),
        f"GRANT INSERT ON public.oam_rev_child TO {RUNTIME}".encode(),
        f"GRANT SELECT ON public.oam_rev_switch TO {RUNTIME}".encode(),
        "CREATE OR REPLACE FUNCTION public.oam_rev_fail_commit() RETURNS boolean "
        "LANGUAGE plpgsql VOLATILE AS $$ BEGIN "
        "IF (SELECT armed FROM public.oam_rev_switch) AND pg_catalog.current_query() "
        "LIKE '%ORDER BY user_id NULLS FIRST%' THEN "
        "PERFORM pg_catalog.nextval('public.oam_rev_reads'); "
        "INSERT INTO public.oam_rev_child VALUES (-1); END IF; RETURN true; END $$",
        "GRANT EXECUTE ON FUNCTION public.oam_rev_fail_commit() TO PUBLIC"]
    return seed_with_policy(dds, setup, "memory",
                            sql.SQL("CREATE POLICY aaa_oam_rev_fail_commit ON {} AS "
                                    "RESTRICTIVE FOR SELECT USING "
                                    "(public.oam_rev_fail_commit())"))


def _arm(dds: Any, armed: bool) -> int:
    """Arm or disarm the failing COMMIT; the record reads counted so far."""
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        su.execute("UPDATE public.oam_rev_switch SET armed = %s", [armed])
        row = su.execute("SELECT last_value + is_called::int, "
                         "(SELECT count(*) FROM public.oam_rev_child) "
                         "FROM public.oam_rev_reads").fetchone()
    assert row is not None and row[1] == 0  # nothing of a failed COMMIT was ever stored
    return int(row[0])


@pytest.mark.parametrize("kind", ["hnsw", "keyword"])
def test_a_failing_commit_in_the_last_flight_is_reported_and_leaves_nothing(
        dds: Any, kind: str) -> None:
    """The record read succeeds, then its flight's COMMIT fails (a deferred constraint): the
    search raises (never a result as if its transaction had ended well), the connection holds
    no assertion, no transaction and no search setting, and serves alice and bob right once
    disarmed. Positive control: the armed record read ran (counted) in that flight."""
    mode, scope = KINDS[kind]
    fresh = _commit_failing_seed(dds)
    try:
        with sealing_pool(dds) as pool, mode_store(pool, fresh, dds.context("alice"),
                                                   mode) as store:
            for _ in range(2):
                assert hits(store, mode, **scope) == ALICE
            before = _arm(dds, True)
            found: list[set[str]] = []
            with pytest.raises(Exception, match="foreign key"):
                found.append(hits(store, mode, **scope))
            assert found == []
            assert _arm(dds, False) > before  # positive control: the read ran, armed
            assert clean_state(session_state(pool))
            assert hits(store, mode, **scope) == ALICE
            with OracleMemoryEndUserSecurityContext(dds.context("bob")):
                assert hits(store, mode) == BOB
    finally:
        _arm(dds, False)
        with psycopg.connect(dds.superuser_url, autocommit=True) as su:
            # The runtime login holds no direct privilege on any table (another test checks).
            su.execute(f"REVOKE ALL ON public.oam_rev_child, public.oam_rev_switch "
                       f"FROM {RUNTIME}".encode())


def test_caller_chosen_round_shapes_stay_within_the_prepared_limit(
        dds: Any, seeded_plain: Seeded) -> None:
    """Shapes a caller chooses without a metadata filter (k, hence the budget, and the record
    types) each compile to another round: past MAX_PREPARED_READS they run unnamed, so the
    connection holds no more named reads than that, and answers stay right (counted once, at
    the end: a checkout takes the seal off). Positive control: the shapes were named."""
    types = [["memory"], ["memory", "fact"], ["memory", "preference"], ["memory", "guideline"]]
    with sealing_pool(dds) as pool, mode_store(pool, seeded_plain, dds.context("alice"),
                                               "vector") as store:
        for k in range(1, 41):
            for record_types in types:
                found = {r.id for r, _ in store.search(None, k, query_vector=[1.0, 0.1, 0.0],
                                                       record_types=record_types)}
                assert len(found) == min(k, 5) and found <= ALICE
        named = _named_reads(pool)
        assert len(named) > MAX_PREPARED_READS // 2  # positive control
        assert len(named) <= MAX_PREPARED_READS


def _engine_statements_after(dds: Any, failing: str, cycles: int) -> int:
    """The SDK's named statements on a sealing pool's one connection after ``cycles`` of one
    of alice's operations failing (``add``: her add of an id she already has; ``checkout``:
    a checkout of the pool's by other code) then 40 searches of distinct k. Counted once, at
    the end."""
    fresh = seed(dds)
    with sealing_pool(dds) as pool, mode_store(pool, fresh, dds.context("alice"),
                                               "vector") as store:
        for _ in range(cycles):
            if failing == "add":
                with pytest.raises(Exception, match="a1|exist|duplicate"):
                    store.add(["again"], "memory", record_ids=["a1"])
            else:
                with pool.connection() as conn:
                    conn.execute("SELECT 1")
            for k in range(1, 41):
                found = {r.id for r, _ in store.search(None, k, query_vector=[1.0, 0.1, 0.0],
                                                       record_types=["memory"])}
                assert len(found) == min(k, 5) and found <= ALICE
        with pool.connection() as conn:
            row = conn.execute("SELECT count(*) FROM pg_prepared_statements "
                               "WHERE name ~ '^oam_[a-z]+_[0-9]+$'").fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("failing", ["add", "checkout"])
def test_named_statements_on_the_server_stay_bounded_across_failed_operations(
        dds: Any, failing: str) -> None:
    """MAX_PREPARED_READS bounds what the engine names per connection; the server must not
    hold more of the engine's statements after four failed operations than after one.
    Positive control: after one, the searches' shapes are named (the limit is reached)."""
    once = _engine_statements_after(dds, failing, 1)
    assert once >= MAX_PREPARED_READS
    four_times = _engine_statements_after(dds, failing, 4)
    assert four_times <= once, (once, four_times)


# --- 10. The gateway's bridge cancels a request in the search's first flight -----------------


def test_a_bridged_search_cancelled_in_its_first_flight_leaves_nothing_behind(
        dds: Any) -> None:
    """A request's search waits (its first flight: BEGIN, the apply, the round's settings and
    round) on a lock the owner holds on the chunks; the request times out at that wait. The
    connection is closed (its transaction with it), nothing of the context survives, and the
    next request searches on a fresh connection. Positive control: the waiting statement is
    the round."""
    fresh = seed(dds)
    loop_pool = EventLoopPool(dds.runtime_url, name="attack-review-flights", min_size=1,
                              max_size=1, timeout_seconds=5.0)
    loop_pool.open()
    loop_pool.pool.wait()
    try:
        with mode_store(loop_pool.pool, fresh, dds.context("alice"), "vector") as alice:
            for _ in range(2):
                assert asyncio.run(loop_pool.run(hits, alice, "vector")) == ALICE
            pids = runtime_pids(dds)
            waited: list[str] = []

            async def cancelled() -> None:
                task = asyncio.ensure_future(loop_pool.run(hits, alice, "vector"))
                await asyncio.sleep(0)
                while not waited:
                    await asyncio.sleep(0.02)
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(task, 0.2)

            with psycopg.connect(dds.owner_url) as owner:
                owner.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                    fresh.table("record_chunks")))
                watcher = threading.Thread(
                    target=lambda: waited.append(_waiting_backend(dds)[1]))
                watcher.start()
                asyncio.run(cancelled())
                watcher.join(10)
            assert waited and "record_chunks" in waited[0]  # positive control
            assert asyncio.run(loop_pool.run(hits, alice, "vector")) == ALICE
            assert runtime_pids(dds).isdisjoint(pids)
            assert clean_state(session_state(loop_pool.pool))
            with OracleMemoryEndUserSecurityContext(dds.context("bob")):
                assert asyncio.run(loop_pool.run(hits, alice, "vector")) == BOB
    finally:
        loop_pool.close()
