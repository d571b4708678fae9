"""Issue 23's attack review: the one-flight read, the compiled search and the pooled connection.

Each attack runs on the embedded PostgreSQL through the runtime login with real end-user
contexts, after a positive control showing the attack's step does what it claims.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from dds import OWNER, POLICIES, RUNTIME
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    LocalEndUserPrincipal,
    OracleMemoryEndUserSecurityContext,
    grant_agent_memory_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.engines.postgres import deepsec_admin
from oracleagentmemory.engines.postgres.event_loop_pool import EventLoopPool
from oracleagentmemory.engines.postgres.security_schema import SEAL_SETTING
from oracleagentmemory.errors import SecurityContextError
from psycopg import errors, pq, sql
from psycopg_pool import ConnectionPool
from test_deepsec_attacks import Seeded, seed
from test_sealed_apply import sealed_apply
from test_session_seals import sealing_pool


@pytest.fixture(scope="module")
def seeded(dds: Any) -> Seeded:
    return seed(dds)


@contextmanager
def one_connection_pool(dds: Any) -> Iterator[ConnectionPool[Any]]:
    with ConnectionPool(dds.runtime_url, min_size=1, max_size=1, open=True) as pool:
        yield pool


@contextmanager
def store_as(pool: ConnectionPool[Any], seeded: Seeded, context: Any, **kwargs: Any
             ) -> Iterator[OracleDBMemoryStore]:
    """A NO_CHECK store on ``pool`` used inside ``context``."""
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(None, pool, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=seeded.store_id, schema_owner=OWNER,
                                    **kwargs)
        try:
            yield store
        finally:
            store.close()


def content(store: OracleDBMemoryStore, memory_id: str) -> str | None:
    record = store.get("memory", memory_id)
    return None if record is None else str(record.content)


def owner_user_id(dds: Any, seeded: Seeded, memory_id: str) -> tuple[Any, ...] | None:
    with psycopg.connect(dds.owner_url) as conn:
        return conn.execute(sql.SQL("SELECT user_id FROM {} WHERE id = %s").format(
            seeded.table("memory")), [memory_id]).fetchone()


def test_a_fresh_token_context_adds_its_own_record_inside_a_transaction_block(
        dds: Any) -> None:
    """A token names its end user only once the database verified it; a block's first add
    must still store the record as that user's (not a global or unowned one)."""
    fresh = seed(dds)
    with one_connection_pool(dds) as pool:
        # Positive control: outside a block, the default user id is the token's user.
        with store_as(pool, fresh, dds.token_context("alice")) as store:
            store.add(["outside a block"], "memory", record_ids=["tok-outside"])
        assert owner_user_id(dds, fresh, "tok-outside") is not None
        expected = owner_user_id(dds, fresh, "tok-outside")
        with store_as(pool, fresh, dds.token_context("alice")) as store:
            fresh_token = dds.token_context("alice")  # never used yet: names nobody so far
            with OracleMemoryEndUserSecurityContext(fresh_token), store.transaction():
                store.add(["inside a block"], "memory", record_ids=["tok-inside"])
        assert owner_user_id(dds, fresh, "tok-inside") == expected


def backend_pid(pool: ConnectionPool[Any]) -> int:
    with pool.connection() as conn:
        return int(conn.info.backend_pid)


def assertion_left(pool: ConnectionPool[Any]) -> tuple[Any, ...] | None:
    with pool.connection() as conn:
        conn.autocommit = True
        row = conn.execute("SELECT current_setting('oam.end_user_assertion', true)").fetchone()
    return None if row is None else tuple(row)


def test_another_user_on_the_same_connection_never_gets_the_prepared_reads_rows(
        dds: Any, seeded: Seeded) -> None:
    """alice's and then bob's reads on one connection of an application's pool: bob sees only
    his and global rows. The engine names no statement on such a connection (the next
    transaction would forget it, and the server would keep it: tests/test_context_round_trips.py
    shows the names a pool of the SDK's keeps)."""
    with one_connection_pool(dds) as pool:
        pid = backend_pid(pool)
        with store_as(pool, seeded, dds.context("alice")) as alice:
            for _ in range(3):
                assert content(alice, "a1") == "memory a1 of alice"  # positive control
                assert {m.id for m in alice.list("memory", limit=20)} == {
                    "a1", "a2", "a3", "g1", "g2"}
        with pool.connection() as conn:
            prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements "
                                    "WHERE name LIKE 'oam\\_read\\_%'").fetchone()
        assert prepared == (0,)
        with store_as(pool, seeded, dds.context("bob")) as bob:
            for _ in range(3):
                assert content(bob, "a1") is None
                assert content(bob, "b1") == "memory b1 of bob"
                assert {m.id for m in bob.list("memory", limit=20)} == {"b1", "b2", "b3", "g1",
                                                                          "g2"}
                assert bob.list_thread_messages("t-alice") == []
                assert [m.id for m in bob.list_thread_messages("t-bob")] == ["m-bob"]
                with bob.transaction():
                    assert content(bob, "a2") is None
                    assert content(bob, "a3") is None
        assert backend_pid(pool) == pid  # one connection served both users
        assert assertion_left(pool) in ((None,), ("",))


def test_the_same_read_on_one_connection_answers_from_each_store(dds: Any, seeded: Seeded
                                                                 ) -> None:
    """The prepared-read map is keyed by the statement text: two stores' reads of the same id
    on one connection each answer from their own table."""
    other = seed(dds)
    with psycopg.connect(dds.owner_url) as conn:
        conn.execute(sql.SQL("UPDATE {} SET content = 'other store' WHERE id = 'a1'").format(
            other.table("memory")))
    with one_connection_pool(dds) as pool:
        for _ in range(3):
            with store_as(pool, seeded, dds.context("alice")) as first:
                assert content(first, "a1") == "memory a1 of alice"
            with store_as(pool, other, dds.context("alice")) as second:
                assert content(second, "a1") == "other store"


def test_a_read_failing_mid_flight_leaves_no_context_and_the_next_read_works(
        dds: Any, seeded: Seeded) -> None:
    """The owner holds the memory table locked: the flight's BEGIN and apply succeed, the read
    (its preparation, or the execution of one prepared before) fails on the lock timeout. The
    connection then carries no assertion and no prepared-statement entry the server skipped."""
    with one_connection_pool(dds) as pool:
        with pool.connection() as conn:  # the pool's session-level setting, not the caller's
            conn.autocommit = True
            conn.execute("SET lock_timeout = '200ms'")
        with store_as(pool, seeded, dds.context("alice")) as alice:
            assert content(alice, "a1") == "memory a1 of alice"  # prepared on this connection
            for read in (lambda: content(alice, "a2"),  # prepared before: its execution fails
                         lambda: alice.list("memory", record_id="a3")):  # a new shape: parse
                with psycopg.connect(dds.owner_url) as owner:
                    owner.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                        seeded.table("memory")))
                    with pytest.raises(Exception, match="lock"):
                        read()
                    assert assertion_left(pool) in ((None,), ("",))
                # The lock is gone: the same reads work on the same pool.
                assert content(alice, "a2") == "memory a2 of alice"
                assert [m.id for m in alice.list("memory", record_id="a3")] == ["a3"]
            assert content(alice, "b1") is None


@pytest.mark.parametrize("setting", ["SET row_security = off",
                                     "SET default_transaction_read_only = on",
                                     "SET DateStyle = 'SQL, DMY'"])
def test_a_session_setting_left_on_the_pooled_connection_is_refused(
        dds: Any, seeded: Seeded, setting: str) -> None:
    with one_connection_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as alice:
        assert content(alice, "a1") == "memory a1 of alice"  # positive control
        pid = backend_pid(pool)
        with pool.connection() as conn:
            conn.autocommit = True
            conn.execute(setting)
        with pytest.raises(SecurityContextError):
            content(alice, "a1")
        assert backend_pid(pool) != pid  # the refused connection was discarded
        assert content(alice, "a1") == "memory a1 of alice"


def owner_memory_rows(dds: Any, seeded: Seeded, memory_id: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dds.owner_url) as conn:
        return [tuple(r) for r in conn.execute(sql.SQL(
            "SELECT user_id, content FROM {} WHERE id = %s ORDER BY user_id").format(
            seeded.table("memory")), [memory_id]).fetchall()]


def test_a_write_after_a_blocks_leading_read_never_reaches_a_row_recreated_for_another_user(
        dds: Any) -> None:
    """A block's leading read ends its own transaction; between it and the block's write the
    record is deleted and an id-equal record of bob's created: alice's update and delete in
    the block must not touch bob's row."""
    fresh = seed(dds)
    with one_connection_pool(dds) as pool, store_as(pool, fresh, dds.context("alice")) as alice:
        with alice.transaction():  # positive control: read then write, nothing in between
            assert content(alice, "a2") == "memory a2 of alice"
            assert alice.update("memory", "a2", content="alice changed a2") == 1
        assert owner_memory_rows(dds, fresh, "a2") == [("alice", "alice changed a2")]
        with alice.transaction():
            assert content(alice, "a1") == "memory a1 of alice"
            with psycopg.connect(dds.owner_url) as owner:  # another session, in between
                owner.execute(sql.SQL("UPDATE {} SET user_id = 'bob', content = 'bob''s a1' "
                                      "WHERE id = 'a1'").format(fresh.table("memory")))
            assert alice.update("memory", "a1", content="alice overwrote it") == 0
        with alice.transaction():
            assert content(alice, "a1") is None
            assert alice.delete("memory", "a1") == 0
    assert owner_memory_rows(dds, fresh, "a1") == [("bob", "bob's a1")]


def found_ids(store: OracleDBMemoryStore, **kwargs: Any) -> set[str]:
    hits = store.search(None, 20, query_vector=[1.0, 0.1, 0.0], record_types=["memory"],
                        **kwargs)
    return {record.id for record, _ in hits}


def test_compiled_search_rounds_shared_on_one_connection_answer_each_user_and_store(
        dds: Any, seeded: Seeded) -> None:
    """The round's SQL is compiled once per shape and prepared per connection; users and
    stores that share it on one connection each get only their own rows."""
    other = seed(dds)
    with psycopg.connect(dds.owner_url) as conn:
        conn.execute(sql.SQL("DELETE FROM {} WHERE id = 'a2'").format(other.table("memory")))
    mine = {"alice": {"a1", "a2", "a3"}, "bob": {"b1", "b2", "b3"}}
    with one_connection_pool(dds) as pool:
        for _ in range(3):  # the second time, every round is prepared on the connection
            for user in ("alice", "bob"):
                with store_as(pool, seeded, dds.context(user)) as store:
                    assert found_ids(store) == mine[user] | {"g1", "g2"}
                    assert found_ids(store, user_id=user, exact_user_match=True) == mine[user]
                    other_user = "bob" if user == "alice" else "alice"
                    assert found_ids(store, user_id=other_user, exact_user_match=True) == set()
            with store_as(pool, other, dds.context("alice")) as store:
                assert found_ids(store, user_id="alice", exact_user_match=True) == {"a1", "a3"}


@pytest.mark.parametrize("user_id", ["alice' OR '1'='1", "alice%s", "%s", "alice\\", "$1"])
def test_a_search_user_id_with_sql_characters_matches_nothing(
        dds: Any, seeded: Seeded, user_id: str) -> None:
    with one_connection_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as store:
        assert found_ids(store, user_id="alice", exact_user_match=True) == {"a1", "a2", "a3"}
        assert found_ids(store, user_id=user_id, exact_user_match=True) == set()
        # Not exact: the id only ranks; row security still keeps bob's rows out.
        assert found_ids(store, user_id=user_id) == {"a1", "a2", "a3", "g1", "g2"}


@pytest.mark.parametrize("metadata_filter", [
    {"k'; DROP TABLE x; --": "v"},
    {"%s": "%s"},
    {"k%%s": ["%s", "$1"]},
    {"k": {"%s": "%"}},
])
def test_a_hostile_metadata_filter_is_bound_in_search_and_lists(
        dds: Any, seeded: Seeded, metadata_filter: dict[str, Any]) -> None:
    with one_connection_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as store:
        assert found_ids(store) == {"a1", "a2", "a3", "g1", "g2"}  # positive control
        assert found_ids(store, metadata_filter=metadata_filter) == set()
        assert store.list("memory", metadata_filter=metadata_filter) == []
        assert content(store, "a1") == "memory a1 of alice"


def test_a_request_cancelled_in_the_one_flight_read_leaves_nothing_behind(
        dds: Any, seeded: Seeded) -> None:
    """The gateway's bridge: a request whose one-flight read waits on a locked table is
    cancelled (its timeout) at that wait; the connection is closed, nothing of the context
    survives, and the next request reads on a fresh connection."""
    loop_pool = EventLoopPool(dds.runtime_url, name="attack-review-23", min_size=1, max_size=1,
                              timeout_seconds=5.0)
    loop_pool.open()
    loop_pool.pool.wait()
    try:
        with store_as(loop_pool.pool, seeded, dds.context("alice")) as alice:
            assert asyncio.run(loop_pool.run(content, alice, "a1")) == "memory a1 of alice"
            pid = backend_pid(loop_pool.pool)

            async def cancelled_read() -> None:
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(loop_pool.run(content, alice, "a2"), 0.5)

            with psycopg.connect(dds.owner_url) as owner:
                owner.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                    seeded.table("memory")))
                asyncio.run(cancelled_read())
            assert asyncio.run(loop_pool.run(content, alice, "a2")) == "memory a2 of alice"
            assert backend_pid(loop_pool.pool) != pid
            assert assertion_left(loop_pool.pool) in ((None,), ("",))
    finally:
        loop_pool.close()


def test_reads_prepared_before_the_owner_alters_a_column_type_are_prepared_again(
        dds: Any) -> None:
    """A named read prepared before the owner changed a selected column's type fails on the
    server ("cached plan must not change result type"); the connection must not keep failing
    every later read of every user (psycopg's own prepared statements recover on rollback)."""
    fresh = seed(dds)
    with one_connection_pool(dds) as pool, store_as(pool, fresh, dds.context("alice")) as alice:
        assert content(alice, "a1") == "memory a1 of alice"  # prepared on this connection
        pid = backend_pid(pool)
        with psycopg.connect(dds.owner_url) as owner:
            owner.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN content TYPE varchar").format(
                fresh.table("memory")))
        for _ in range(3):
            assert content(alice, "a1") == "memory a1 of alice"
        assert content(alice, "b1") is None
        assert backend_pid(pool) == pid


LEFTOVERS = [
    "LISTEN oam_attack_channel",
    "SET plan_cache_mode = force_custom_plan",
    "SET search_path = public, pg_catalog",
    "SET enable_indexscan = off",
    "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
    "SET default_transaction_isolation = 'repeatable read'",
    "SET hnsw.ef_search = 1",
    "SET default_text_search_config = 'simple'",
    "SET bytea_output = 'escape'",
    "SET extra_float_digits = -15",
    "SET TimeZone = 'Pacific/Kiritimati'",
    "SELECT set_config('oam.end_user_assertion', 'forged', false)",
    "DECLARE oam_attack CURSOR WITH HOLD FOR SELECT 1",
    "CREATE TEMP TABLE oam_attack (id text)",
    "PREPARE oam_read_999999 AS SELECT 1",
    "SET SESSION AUTHORIZATION DEFAULT",
]


@pytest.mark.parametrize("leftover", LEFTOVERS)
def test_state_left_on_a_pooled_connection_never_yields_wrong_rows_or_a_context(
        dds: Any, seeded: Seeded, leftover: str) -> None:
    """SQL the application ran on a pooled connection before returning it: the next end
    user's reads either are refused (and the connection discarded) or answer exactly their
    rows, and no assertion survives either way."""
    with one_connection_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as alice:
        assert content(alice, "a1") == "memory a1 of alice"  # positive control
        with pool.connection() as conn:
            conn.autocommit = True
            conn.execute(leftover)
        with psycopg.connect(dds.superuser_url, autocommit=True) as other:
            other.execute("NOTIFY oam_attack_channel, 'hello'")
        for _ in range(2):
            try:
                found = content(alice, "a2"), {m.id for m in alice.list("memory", limit=20)}
            except SecurityContextError:
                continue  # refused: the next attempt runs on a fresh connection
            assert found == ("memory a2 of alice", {"a1", "a2", "a3", "g1", "g2"})
        assert found_ids(alice, user_id="alice", exact_user_match=True) == {"a1", "a2", "a3"}
        assert content(alice, "b1") is None
        with pool.connection() as conn:
            conn.autocommit = True
            row = conn.execute("SELECT current_setting('oam.end_user_assertion', true)"
                               ).fetchone()
        assert row in ((None,), ("",), ("forged",))  # the forged value is the attacker's own


def test_a_transaction_left_open_on_a_pooled_connection_carries_nothing_into_a_read(
        dds: Any, seeded: Seeded) -> None:
    with one_connection_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as alice:
        assert content(alice, "a1") == "memory a1 of alice"
        with pool.connection() as conn:  # returned inside a transaction: the pool rolls back
            conn.execute("SELECT set_config('oam.end_user_assertion', 'forged', true)")
        assert content(alice, "a2") == "memory a2 of alice"
        assert content(alice, "b2") is None
        assert assertion_left(pool) in ((None,), ("",))


def test_search_and_named_reads_share_a_connection_through_psycopgs_deallocate_all(
        dds: Any) -> None:
    """Search rounds are psycopg's prepared statements (``_pg3_N``; first reads run unnamed on
    an application's connection); a failed write's rollback through psycopg deallocates them.
    They are prepared again and answer correctly, for another user too."""
    fresh = seed(dds)
    with one_connection_pool(dds) as pool:
        for _ in range(2):
            with store_as(pool, fresh, dds.context("alice")) as alice:
                # The read first: on an application's pool each operation starts by forgetting
                # every named statement (psycopg's through a rollback, which deallocates them),
                # so a search's rounds last until the next operation.
                assert content(alice, "a1") == "memory a1 of alice"
                assert found_ids(alice, user_id="alice", exact_user_match=True) == {
                    "a1", "a2", "a3"}
                with pool.connection() as conn:
                    names = {str(r[0])[:4] for r in conn.execute(
                        "SELECT name FROM pg_prepared_statements").fetchall()}
                # positive control: the search's rounds are there (the engine names no read on
                # an application's connection)
                assert names == {"_pg3"}
                with pytest.raises(Exception, match="a1|exist|duplicate"):
                    alice.add(["again"], "memory", record_ids=["a1"])  # fails: rolled back
                with pool.connection() as conn:
                    left = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
                assert left == (0,)  # the rollback deallocated every statement
                assert content(alice, "a2") == "memory a2 of alice"
                assert found_ids(alice, user_id="alice", exact_user_match=True) == {
                    "a1", "a2", "a3"}
            with store_as(pool, fresh, dds.context("bob")) as bob:
                assert content(bob, "a2") is None
                assert found_ids(bob) == {"b1", "b2", "b3", "g1", "g2"}


@pytest.mark.parametrize("text", [
    "memory of alice", "it's o'neil's memory", "C:\\Users\\alice\\memory", "a\\'b memory",
    "http://x.example/p?q=1&r=2|!:* memory", "memory' | 'b1", "%s %% $1 memory",
])
def test_keyword_search_text_is_analysed_not_parsed_as_a_query(
        dds: Any, seeded: Seeded, text: str) -> None:
    """The BM25 arm builds its tsquery from the text's lexemes (quote_literal of each): no
    text breaks the statement or widens what the caller sees."""
    with one_connection_pool(dds) as pool, store_as(pool, seeded, dds.context("alice"),
                                                     search_strategy="keyword") as alice:
        hits = alice.search(text, 20, record_types=["memory"])
        assert {record.id for record, _ in hits} <= {"a1", "a2", "a3", "g1", "g2"}
        assert {record.id for record, _ in alice.search("memory", 20, record_types=["memory"])
                } == {"a1", "a2", "a3", "g1", "g2"}  # positive control


def test_a_value_that_cannot_be_sent_leaves_no_half_queued_flight_for_the_next_user(
        dds: Any, seeded: Seeded) -> None:
    """A lone surrogate fails to encode after ``BEGIN`` and alice's apply are queued in the
    flight: they must never reach the server ahead of the next user's flight."""
    with one_connection_pool(dds) as pool:
        with store_as(pool, seeded, dds.context("alice")) as alice:
            assert content(alice, "a1") == "memory a1 of alice"  # positive control
            with pytest.raises(Exception, match="surrogate|encode|Unicode|unicode"):
                alice.get("memory", "a\ud800")
        with store_as(pool, seeded, dds.context("bob")) as bob:
            for _ in range(2):
                assert content(bob, "a1") is None
                assert content(bob, "b1") == "memory b1 of bob"
                assert {m.id for m in bob.list("memory", limit=20)} == {"b1", "b2", "b3", "g1",
                                                                          "g2"}
        assert assertion_left(pool) in ((None,), ("",))


def test_threads_sharing_a_transaction_block_read_in_turn(dds: Any, seeded: Seeded) -> None:
    """Worker threads started inside a block (the async twins' ``asyncio.to_thread``) share
    its session: their first reads and the block's BEGIN and apply went to libpq at the same
    time on one connection (the process aborted); they must take turns, each read answering its
    own rows, and the connection serve the next user."""
    answers: list[tuple[str, str | None]] = []

    def read(store: OracleDBMemoryStore, barrier: threading.Barrier, memory_id: str) -> None:
        barrier.wait()
        answers.append((memory_id, content(store, memory_id)))

    with one_connection_pool(dds) as pool:
        with store_as(pool, seeded, dds.context("alice")) as alice:
            for _ in range(20):
                barrier = threading.Barrier(3)
                with alice.transaction():
                    threads = [threading.Thread(target=contextvars.copy_context().run,
                                                args=(read, alice, barrier, memory_id))
                               for memory_id in ("a1", "a2", "b1")]
                    for thread in threads:
                        thread.start()
                    for thread in threads:
                        thread.join()
        assert len(answers) == 60
        assert {(m, c) for m, c in answers} == {("a1", "memory a1 of alice"),
                                                 ("a2", "memory a2 of alice"), ("b1", None)}
        with store_as(pool, seeded, dds.context("bob")) as bob:
            assert content(bob, "b1") == "memory b1 of bob"
            assert content(bob, "a1") is None
        assert assertion_left(pool) in ((None,), ("",))


# --- Attack review V2 of a4ce480: a sealed session's apply as plain SQL of the runtime login
# (security_schema.SEALED_APPLY) and its flight on named BEGIN, apply, COMMIT and end check.
# The attacker is SQL of the runtime login, on its own sessions and on a pooled connection it
# checks out through the pool's public API between the SDK's requests; the pool is the
# gateway's kind (an EventLoopPool's SealingBridgedPool) unless a test says otherwise.

Conn = psycopg.Connection[Any]


def _memory_owners(conn: Conn, seeded: Seeded) -> set[str | None]:
    return {r[0] for r in conn.execute(
        sql.SQL("SELECT user_id FROM {}").format(seeded.table("memory"))).fetchall()}


def _copied_owners(conn: Conn, seeded: Seeded) -> set[str | None]:
    """The owners ``COPY (query) TO STDOUT`` hands out (another statement shape)."""
    statement = sql.SQL("COPY (SELECT user_id FROM {}) TO STDOUT").format(
        seeded.table("memory"))
    with conn.cursor().copy(statement) as copy:
        return {row[0] for row in copy.rows()}


def _forgeries(dds: Any) -> list[str]:
    """Assertion texts the runtime login can make without the application key: alice's
    claims under a zero signature or under bob's, her user name, bob's assertion cut short."""
    alice = dds.context("alice").assertion()
    bob = dds.context("bob").assertion()
    body = alice.split(".", 1)[0]
    return [f"{body}.{'0' * 64}", f"{body}.{bob.split('.', 1)[1]}", "alice", bob[:-2]]


ASSERTION_SHAPES = {
    "select set_config": "SELECT set_config('oam.end_user_assertion', {value}, true)",
    "set local": "SET LOCAL oam.end_user_assertion = {value}",
    "set session": "SET oam.end_user_assertion = {value}",
    "cte": "WITH a AS MATERIALIZED (SELECT set_config('oam.end_user_assertion', {value}, true)"
           ") SELECT * FROM a",
    "do block": "DO $do$ BEGIN PERFORM set_config('oam.end_user_assertion', {value}, true); "
                "END $do$",
}
"""Ways SQL of the runtime login can set the setting the plain apply and the policies read."""


def _seen_with(conn: Conn, seeded: Seeded, shape: str, value: str
               ) -> tuple[set[str | None], set[str | None], list[str]]:
    """Owners a SELECT and a COPY see, and the verified users the session's view shows, once
    ``value`` is set as the assertion by the statement ``shape`` (undone afterwards)."""
    statement = ASSERTION_SHAPES[shape].format(value=sql.Literal(value).as_string(conn))
    session_level = shape == "set session"
    if session_level:
        conn.execute(statement.encode())
    conn.execute("BEGIN")
    if not session_level:
        conn.execute(statement.encode())
    seen = _memory_owners(conn, seeded), _copied_owners(conn, seeded), [
        str(r[0]) for r in conn.execute(
            "SELECT username FROM oam_sec.session_end_user").fetchall()]
    conn.execute("ROLLBACK")
    conn.execute("RESET oam.end_user_assertion")
    return seen


@pytest.mark.parametrize("shape", list(ASSERTION_SHAPES))
def test_v2_a_pooled_backends_verified_assertions_answer_only_to_their_exact_text(
        dds: Any, seeded: Seeded, shape: str) -> None:
    """alice and bob were verified on the pooled backend (their rows in
    ``oam_sec.session_cache``, which the plain apply and every policy look up). The runtime
    login, on that same backend, sets the assertion setting itself (each statement shape) to
    what it can make without the application key: SELECT and COPY see no row, the view no
    verified user; the cache and the verifier are closed to it. Positive control: the same
    statement with a genuine text verified on this backend reaches alice's rows (the lookup the
    plain apply trusts answers the text, which only the key can make, and nothing else)."""
    with sealing_pool(dds) as pool:
        for user in ("alice", "bob"):
            with store_as(pool, seeded, dds.context(user)) as store:
                for _ in range(2):
                    assert content(store, "a1") == (
                        "memory a1 of alice" if user == "alice" else None)
        pid = backend_pid(pool)
        with pool.connection() as conn:
            conn.autocommit = True
            assert conn.info.backend_pid == pid  # the backend that verified them
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute("SELECT count(*) FROM oam_sec.session_cache")
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute("SELECT oam_sec.verify_assertion()")
            assert conn.execute("SELECT count(*) FROM oam_sec.session_end_user").fetchone() == (
                0,)
            for value in _forgeries(dds):
                assert _seen_with(conn, seeded, shape, value) == (set(), set(), []), value[:16]
            alice = dds.context("alice").assertion()
            conn.execute("BEGIN")
            assert conn.execute("SELECT oam_sec.apply_assertion(%s)", [alice]).fetchone() == (
                "alice",)
            conn.execute("COMMIT")
            assert _seen_with(conn, seeded, shape, alice) == (
                {"alice", None}, {"alice", None}, ["alice"])
        with store_as(pool, seeded, dds.context("bob")) as bob:  # the pool serves on
            assert content(bob, "b1") == "memory b1 of bob"
            assert content(bob, "a1") is None


def _named_statements(conn: Conn) -> dict[str, str]:
    """The SDK's named statements of a sealed flight on ``conn``'s session, by kind."""
    rows = conn.execute("SELECT name FROM pg_prepared_statements "
                        "WHERE name ~ '^oam_(begin|apply|commit|show)_[0-9]+$'").fetchall()
    return {str(name).split("_")[1]: str(name) for (name,) in rows}


def _execute(conn: Conn, name: str, *values: str) -> psycopg.Cursor[Any]:
    """SQL ``EXECUTE`` of the prepared statement ``name`` with literal ``values``."""
    return conn.execute(sql.SQL("EXECUTE {}({})").format(
        sql.Identifier(name), sql.SQL(", ").join(sql.Literal(v) for v in values)))


def test_v2_the_sdks_named_apply_run_by_the_attacker_with_the_sessions_seal_refuses_forgeries(
        dds: Any, seeded: Seeded) -> None:
    """The attacker checks a sealed connection out, reads the seal the session kept and runs
    the SDK's own named BEGIN and apply (SQL EXECUTE reaches protocol-level statements) and the
    SEALED_APPLY text, with that seal and each forgery: every one is refused (division by zero,
    the transaction aborted, no row). Positive control: the same statements with a genuine
    assertion answer alice and show her rows; the SDK serves alice and bob afterwards."""
    with sealing_pool(dds) as pool:
        with store_as(pool, seeded, dds.context("alice")) as alice:
            for _ in range(3):
                assert content(alice, "a1") == "memory a1 of alice"
        with pool.connection() as conn:
            conn.autocommit = True
            seal = conn.execute("SELECT current_setting(%s)", [SEAL_SETTING]).fetchone()
            assert seal is not None and len(str(seal[0])) >= 32
            named = _named_statements(conn)
            assert set(named) == {"begin", "apply", "commit", "show"}  # what it attacks exists
            for forged in _forgeries(dds):
                conn.execute(sql.SQL("EXECUTE {}").format(sql.Identifier(named["begin"])))
                with pytest.raises(errors.DivisionByZero):
                    _execute(conn, named["apply"], forged, str(seal[0]))
                conn.execute("ROLLBACK")
                assert sealed_apply(conn, forged, str(seal[0])) is None
                assert _memory_owners(conn, seeded) == set()
            genuine = dds.context("alice").assertion()
            conn.execute(sql.SQL("EXECUTE {}").format(sql.Identifier(named["begin"])))
            assert _execute(conn, named["apply"], genuine, str(seal[0])).fetchone() == ("alice",)
            assert _memory_owners(conn, seeded) == {"alice", None}
            conn.execute(sql.SQL("EXECUTE {}").format(sql.Identifier(named["commit"])))
            assert conn.execute(sql.SQL("EXECUTE {}").format(sql.Identifier(named["show"]))
                                ).fetchone() == ("",)
            assert sealed_apply(conn, genuine, str(seal[0])) == "alice"
            assert _memory_owners(conn, seeded) == {"alice", None}
            conn.execute("COMMIT")
            assert _memory_owners(conn, seeded) == set()
        for user, mine, theirs in (("alice", "a2", "b2"), ("bob", "b2", "a2")):
            with store_as(pool, seeded, dds.context(user)) as store:
                for _ in range(2):
                    assert content(store, mine) == f"memory {mine} of {user}"
                    assert content(store, theirs) is None


def _notify_statement(kind: str) -> tuple[bytes, list[int]]:
    """A stand-in for a named statement of ``kind``: notifies the listener of what it gets."""
    if kind == "apply":
        return (b"SELECT $1::text FROM (SELECT pg_catalog.pg_notify('stolen', $1)) n",
                [25, 25])
    return (b"SELECT pg_catalog.pg_notify('stolen', "
            b"pg_catalog.current_setting('oam.end_user_assertion', true))", [])


def test_v2_sealed_statement_names_taken_ahead_at_the_protocol_level_never_run(
        dds: Any, seeded: Seeded) -> None:
    """Names of the sealed flight are numbered; the attacker prepares the next 300 numbers of
    every kind at the protocol level (``from_sql`` false: the clean-session scan does not see
    them) with statements that would hand it the assertion. The SDK's next checkout gets a new
    seal (the scan passes); the flight that then prepares its named statements collides with a
    name taken, fails as a whole (the server runs nothing after the failed preparation) and
    its connection is closed: no stand-in ever runs, and the reads stay right. Positive
    controls: the stand-ins exist and are not SQL-level, the listener hears a probe."""
    with psycopg.connect(dds.runtime_url, autocommit=True) as listener, \
            sealing_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as alice:
        listener.execute("LISTEN stolen")
        for _ in range(2):
            assert content(alice, "a1") == "memory a1 of alice"
        with pool.connection() as conn:
            conn.autocommit = True
            numbers = [int(str(name).rsplit("_", 1)[1]) for (name,) in conn.execute(
                "SELECT name FROM pg_prepared_statements "
                "WHERE name ~ '^oam_[a-z]+_[0-9]+$'").fetchall()]
            assert numbers
            start = max(numbers) + 1
            for number in range(start, start + 300):
                for kind in ("begin", "apply", "commit", "show"):
                    query, types = _notify_statement(kind)
                    result = conn.pgconn.prepare(f"oam_{kind}_{number}".encode(), query, types)
                    assert result.status == pq.ExecStatus.COMMAND_OK
            assert conn.execute("SELECT count(*) FILTER (WHERE NOT from_sql), "
                                "count(*) FILTER (WHERE from_sql) FROM pg_prepared_statements"
                                ).fetchone() == (1200 + len(numbers), 0)
            conn.execute("SELECT pg_notify('stolen', 'probe')")
        answers: list[str | None] = []
        for _ in range(4):
            try:
                answers.append(content(alice, "a2"))
            except Exception:  # the collision: refused, its connection closed
                continue
        assert answers and set(answers) == {"memory a2 of alice"}
        assert content(alice, "b2") is None
        assert [n.payload for n in listener.notifies(timeout=0.5)] == ["probe"]


@pytest.mark.parametrize("kind", ["begin", "apply", "commit", "show"])
def test_v2_a_sealed_statement_replaced_at_the_protocol_level_is_forgotten_never_run(
        dds: Any, seeded: Seeded, kind: str) -> None:
    """The attacker replaces one of the sealed flight's named statements by a Parse of the same
    name (``from_sql`` false: the scan passes it). Its checkout took the seal off, so the SDK
    forgets every name of the flight and prepares new ones after its next scan: the stand-in
    never runs, and the reads stay right. Positive controls: the stand-in is in place and not
    SQL-level, the listener hears a probe, and afterwards one statement of that kind exists
    under a new name (the one the SDK runs now: the stand-in was closed on the server by the
    first flight after the scan, as every forgotten name is)."""
    with psycopg.connect(dds.runtime_url, autocommit=True) as listener, \
            sealing_pool(dds) as pool, store_as(pool, seeded, dds.context("alice")) as alice:
        listener.execute("LISTEN stolen")
        for _ in range(2):
            assert content(alice, "a1") == "memory a1 of alice"
        with pool.connection() as conn:
            conn.autocommit = True
            name = _named_statements(conn)[kind]
            conn.execute(sql.SQL("DEALLOCATE {}").format(sql.Identifier(name)))
            query, types = _notify_statement(kind)
            assert conn.pgconn.prepare(name.encode(), query, types).status == (
                pq.ExecStatus.COMMAND_OK)
            assert conn.execute("SELECT from_sql FROM pg_prepared_statements WHERE name = %s",
                                [name]).fetchone() == (False,)
            conn.execute("SELECT pg_notify('stolen', 'probe')")
        for _ in range(3):
            assert content(alice, "a2") == "memory a2 of alice"
            assert content(alice, "b2") is None
        with pool.connection() as conn:
            names = [str(r[0]) for r in conn.execute(
                "SELECT name FROM pg_prepared_statements WHERE name ~ %s",
                [f"^oam_{kind}_[0-9]+$"]).fetchall()]
        assert name not in names and len(names) == 1
        assert [n.payload for n in listener.notifies(timeout=0.5)] == ["probe"]


@pytest.mark.parametrize(("pool_kind", "family"), [
    ("sealing", "oam_read"), ("application", "_pg3")])
def test_v2_a_named_read_replaced_at_the_protocol_level_never_runs_for_the_next_user(
        dds: Any, seeded: Seeded, pool_kind: str, family: str) -> None:
    """The attacker checks a connection out (the gateway's sealing pool, or an application's
    ``ConnectionPool``), replaces each named read of ``family`` (the engine's one-flight reads
    and, on a sealing pool, search rounds; or psycopg's prepared search rounds) by a Parse of
    the same name at the protocol level (``psycopg.Connection.pgconn``: the same parameters and
    columns, plus a notify of the current assertion) and returns it. Secure outcome: the next
    user's request does not run it and no assertion reaches the listener (before the fix bob got
    his right answer while his assertion was notified, and the attacker's own session, replaying
    it, read bob's rows: a connection without a kept seal now runs no statement named before,
    ``context_sql._forget_named_statements``). On an application's pool the engine names no
    read, so a search's prepared rounds, left on the connection until the next operation forgets
    them, are what there is to replace.
    Positive controls: the replaced statements exist, none is SQL-level, the probe is heard,
    bob's answers are right."""
    pools = {"sealing": sealing_pool, "application": one_connection_pool}
    pattern = {"oam_read": "oam\\_read\\_%", "_pg3": "\\_pg3\\_%"}[family]
    with psycopg.connect(dds.runtime_url, autocommit=True) as listener, \
            pools[pool_kind](dds) as pool:
        listener.execute("LISTEN stolen")
        with store_as(pool, seeded, dds.context("alice")) as alice:
            for _ in range(2):
                assert content(alice, "a1") == "memory a1 of alice"
                assert found_ids(alice) == {"a1", "a2", "a3", "g1", "g2"}
        with pool.connection() as conn:
            conn.autocommit = True
            reads = conn.execute(
                "SELECT name, statement, array(SELECT t::oid FROM unnest(parameter_types) t) "
                "FROM pg_prepared_statements WHERE name LIKE %s "
                "AND statement ~* '^\\s*(select|with)'", [pattern]).fetchall()
            assert reads  # what it attacks exists
            # the search's rounds too (on a sealing pool the engine names them as its reads)
            assert any("record_chunks" in str(statement) for _, statement, _ in reads)
            for name, statement, types in reads:
                conn.execute(sql.SQL("DEALLOCATE {}").format(sql.Identifier(name)))
                stand_in = (
                    "WITH leak AS MATERIALIZED (SELECT pg_catalog.pg_notify('stolen', "
                    "pg_catalog.current_setting('oam.end_user_assertion', true))) "
                    f"SELECT o.* FROM leak, ({statement}) o")
                result = conn.pgconn.prepare(str(name).encode(), stand_in.encode(),
                                             [int(t) for t in types])
                assert result.status == pq.ExecStatus.COMMAND_OK
            assert conn.execute("SELECT count(*) FROM pg_prepared_statements WHERE from_sql"
                                ).fetchone() == (0,)  # nothing the scan refuses
            conn.execute("SELECT pg_notify('stolen', 'probe')")
        with store_as(pool, seeded, dds.context("bob")) as bob:
            try:
                answers = (content(bob, "b2"), content(bob, "a2"), found_ids(bob))
            except SecurityContextError:
                answers = ("refused", None, set())
        assert answers in (("memory b2 of bob", None, {"b1", "b2", "b3", "g1", "g2"}),
                           ("refused", None, set()))
        payloads = [n.payload for n in listener.notifies(timeout=0.5)]
        assert payloads[:1] == ["probe"]
        stolen = sorted({p for p in payloads[1:] if p})
        replayed: set[str | None] = set()
        for assertion in stolen:  # the attacker's own session: no application key needed
            with psycopg.connect(dds.runtime_url) as own:
                user = own.execute("SELECT oam_sec.apply_assertion(%s)", [assertion]).fetchone()
                if user is not None and user[0] is not None:
                    replayed |= _memory_owners(own, seeded)
        assert (stolen, replayed) == ([], set()), (
            f"{len(stolen)} assertion(s) of the next user notified; replayed, they read the "
            f"rows of {sorted(str(u) for u in replayed)}")


def _waiting_queries(dds: Any) -> list[str]:
    """What the runtime login's own session reads of its backends that wait on a lock: their
    statement text (which must never carry an assertion)."""
    with psycopg.connect(dds.runtime_url, autocommit=True) as spy:
        return [str(r[0]) for r in spy.execute(
            "SELECT query FROM pg_stat_activity WHERE usename = %s "
            "AND wait_event_type = 'Lock'", [RUNTIME]).fetchall()]


def _revoke(dds: Any, store_id: str, user: str) -> None:
    with psycopg.connect(dds.secadmin_url) as admin:
        revoke_agent_memory_policies(admin, store_id, OWNER, [LocalEndUserPrincipal(user)],
                                     POLICIES)


@pytest.mark.parametrize("revoke", [False, True])
def test_v2_a_revoke_committed_while_a_sealed_flight_waits_reaches_its_read(
        dds: Any, revoke: bool) -> None:
    """Race of the plain apply against a revoke: the sealed flight's BEGIN and named apply
    pass (the user's grants still stand), its read then waits on a lock the owner holds; the
    policy administrator revokes the user's roles and commits; the owner lets go. The read
    looks the assertion up again under its own snapshot, so the revoke reaches it: no row.
    Positive control (``revoke`` false): the same interleaving returns the row. Meanwhile the
    runtime login's own session sees the waiting statement's text, never the assertion."""
    user = f"v2_race_{'revoked' if revoke else 'kept'}"
    store_id = dds.new_store()
    fresh = Seeded(store_id)
    with psycopg.connect(dds.secadmin_url) as admin:
        with admin.transaction():
            deepsec_admin.create_end_user(admin, user)
        grant_agent_memory_policies(admin, store_id, OWNER, [LocalEndUserPrincipal(user)],
                                    POLICIES)
    owner_store = dds.owner_store(store_id)
    try:
        owner_store.add(["first", "second"], "memory", record_ids=["r1", "r2"],
                        user_ids=[user] * 2)
    finally:
        owner_store.close()
    try:
        context = dds.context(user)
        with sealing_pool(dds) as pool, store_as(pool, fresh, context) as store:
            for _ in range(2):  # sealed, the named statements prepared
                assert content(store, "r1") == "first"
            with pool.connection() as conn:
                assert set(_named_statements(conn)) == {"begin", "apply", "commit", "show"}
            for _ in range(2):  # kept again: the next flight is the named one
                assert content(store, "r1") == "first"
            answer: list[str | None] = []
            reader = threading.Thread(target=contextvars.copy_context().run,
                                      args=(lambda: answer.append(content(store, "r2")),))
            with psycopg.connect(dds.owner_url) as owner:
                owner.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                    fresh.table("memory")))
                reader.start()
                deadline = time.monotonic() + 10
                while not (waiting := _waiting_queries(dds)):
                    assert time.monotonic() < deadline, "the read never waited on the lock"
                    time.sleep(0.02)
                assert any("FROM" in query for query in waiting)  # the read's text is shown
                assert not any(context.assertion() in query for query in waiting)
                if revoke:  # the policy administrator's own thread, outside any context
                    revoker = threading.Thread(target=_revoke, args=(dds, store_id, user))
                    revoker.start()
                    revoker.join(10)
                    assert not revoker.is_alive()
            reader.join(10)
            assert answer == [None if revoke else "second"]
            assert content(store, "r1") == (None if revoke else "first")
    finally:
        with psycopg.connect(dds.secadmin_url) as admin, admin.transaction():
            deepsec_admin.drop_end_user(admin, user)


SEALED_LEFTOVERS = [
    "DISCARD ALL",
    "DEALLOCATE ALL",
    "RESET ALL",
    "SET plan_cache_mode = force_custom_plan",
    "SET search_path = pg_temp, oam_sec, pg_catalog",
    "SET default_transaction_isolation = 'serializable'",
    "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ",
    "SELECT set_config('oam.session_seal', current_setting('oam.session_seal'), false)",
    "SELECT set_config('oam.end_user_assertion', 'forged', false)",
    "SELECT pg_advisory_lock(23)",
    "LISTEN stolen",
    "SHADOW THE PLAIN APPLY'S VIEW",
    "REPLACE THE FIRST READS BY SQL",
]
"""State the attacker leaves on a sealed connection (the last two: a temp view named as what
the plain apply reads, found first for unqualified names; the engine's named first reads
replaced by SQL PREPARE with stand-ins that notify the assertion; each with the session's seal
set back)."""
REFUSED_LEFTOVERS = {
    "SET default_transaction_isolation = 'serializable'",
    "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ",
    "SELECT set_config('oam.end_user_assertion', 'forged', false)",
    "SHADOW THE PLAIN APPLY'S VIEW",
    "REPLACE THE FIRST READS BY SQL",
}
"""Of those, the ones whose connection must be refused (and discarded) at the next read."""


def _pair_read(pool: ConnectionPool[Any], seeded: Seeded, context: Any, mine: str,
               theirs: str) -> tuple[str | None, str | None] | None:
    """A user's read of their memory and another's, or ``None`` when the database refused the
    context (then the connection is discarded and the next read runs on a fresh one)."""
    try:
        with store_as(pool, seeded, context) as store:
            return content(store, mine), content(store, theirs)
    except SecurityContextError:
        return None


@pytest.mark.parametrize("leftover", SEALED_LEFTOVERS)
def test_v2_state_left_on_a_sealed_connection_never_yields_a_context_or_wrong_rows(
        dds: Any, seeded: Seeded, leftover: str) -> None:
    """After the SDK sealed a connection, the attacker checks it out, leaves ``leftover`` and
    returns it. alice's and bob's next reads are refused (the connection discarded) or answer
    exactly their rows; no assertion survives or is notified; and the connection that serves
    them afterwards runs the sealed flight again (its named statements exist)."""
    with psycopg.connect(dds.runtime_url, autocommit=True) as listener, \
            sealing_pool(dds) as pool:
        listener.execute("LISTEN stolen")
        with store_as(pool, seeded, dds.context("alice")) as alice:
            for _ in range(2):
                assert content(alice, "a1") == "memory a1 of alice"  # positive control
        with pool.connection() as conn:
            conn.autocommit = True
            assert set(_named_statements(conn)) == {"begin", "apply", "commit", "show"}
            if leftover.startswith("SHADOW"):
                seal = conn.execute("SELECT current_setting(%s)", [SEAL_SETTING]).fetchone()
                assert seal is not None
                conn.execute("SET search_path = pg_temp, oam_sec, pg_catalog")
                conn.execute("CREATE TEMP VIEW session_end_user AS SELECT "
                             "'\\x00'::bytea AS digest, 'alice'::text AS username, "
                             "ARRAY['own']::text[] AS data_roles, now() + interval '1 hour' "
                             "AS expires_at, 0::bigint AS grants_version")
                # Positive control: unqualified, the name now means the attacker's view.
                assert conn.execute("SELECT username FROM session_end_user").fetchone() == (
                    "alice",)
                conn.execute("SELECT set_config(%s, %s, false)", [SEAL_SETTING, seal[0]])
            elif leftover.startswith("REPLACE"):
                seal = conn.execute("SELECT current_setting(%s)", [SEAL_SETTING]).fetchone()
                assert seal is not None
                reads = conn.execute(
                    "SELECT name, statement, parameter_types::text[] FROM pg_prepared_statements "
                    "WHERE name LIKE 'oam\\_read\\_%'").fetchall()
                assert reads  # what it attacks exists
                for name, statement, types in reads:
                    conn.execute(sql.SQL(
                        "DEALLOCATE {name}; PREPARE {name}({types}) AS WITH leak AS MATERIALIZED "
                        "(SELECT pg_catalog.pg_notify('stolen', pg_catalog.current_setting("
                        "'oam.end_user_assertion', true))) SELECT o.* FROM leak, ({read}) o"
                    ).format(name=sql.Identifier(name),
                             types=sql.SQL(", ").join(sql.SQL(t) for t in types),
                             read=sql.SQL(statement)))
                conn.execute("SELECT set_config(%s, %s, false)", [SEAL_SETTING, seal[0]])
            else:
                conn.execute(leftover.encode())
        rounds = [[_pair_read(pool, seeded, dds.context(user), mine, theirs)
                   for user, mine, theirs in (("alice", "a2", "b2"), ("bob", "b2", "a2"))]
                  for _ in range(3)]
        right = [("memory a2 of alice", None), ("memory b2 of bob", None)]
        assert all(found in (None, expected) for answers in rounds
                   for found, expected in zip(answers, right, strict=True)), rounds
        assert rounds[-1] == right  # positive control: the pool serves both again
        if leftover in REFUSED_LEFTOVERS:
            assert rounds[0][0] is None  # the primed connection served nobody
        with pool.connection() as conn:
            conn.autocommit = True
            row = conn.execute("SELECT current_setting('oam.end_user_assertion', true)"
                               ).fetchone()
            named = _named_statements(conn)
        assert row in ((None,), ("",))
        assert set(named) == {"begin", "apply", "commit", "show"}
        assert list(listener.notifies(timeout=0.2)) == []


def test_v2_the_runtime_login_cannot_become_another_role_on_a_pooled_connection(
        dds: Any, seeded: Seeded) -> None:
    """SET ROLE and SET SESSION AUTHORIZATION: the runtime login is a member of its runtime
    role (that is how it reaches the tables) but may not SET to it, nor to the owner, the
    policy administrator or a superuser; the session stays the runtime login's and serves."""
    with sealing_pool(dds) as pool:
        with store_as(pool, seeded, dds.context("alice")) as alice:
            assert content(alice, "a1") == "memory a1 of alice"
        with pool.connection() as conn:
            conn.autocommit = True
            memberships = [str(r[0]) for r in conn.execute(
                "SELECT roleid::regrole::text FROM pg_auth_members "
                "WHERE member = current_user::regrole").fetchall()]
            assert memberships  # positive control: it holds a role
            superuser = conn.execute("SELECT rolname FROM pg_roles WHERE rolsuper LIMIT 1"
                                     ).fetchone()
            assert superuser is not None
            for role in [*memberships, OWNER, "oam_test_secadmin", str(superuser[0])]:
                for statement in ("SET ROLE {}", "SET SESSION AUTHORIZATION {}"):
                    with pytest.raises(errors.InsufficientPrivilege):
                        conn.execute(sql.SQL(statement).format(sql.Identifier(role)))
            assert conn.execute("SELECT current_user, session_user").fetchone() == (
                RUNTIME, RUNTIME)
        with store_as(pool, seeded, dds.context("bob")) as bob:
            assert content(bob, "b1") == "memory b1 of bob"
            assert content(bob, "a1") is None
