"""Issue 23's attack review: the one-flight read, the compiled search and the pooled connection.

Each attack runs on the embedded PostgreSQL through the runtime login with real end-user
contexts, after a positive control showing the attack's step does what it claims.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from dds import OWNER
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from oracleagentmemory.engines.postgres.event_loop_pool import EventLoopPool
from oracleagentmemory.errors import SecurityContextError
from psycopg import sql
from psycopg_pool import ConnectionPool
from test_deepsec_attacks import Seeded, seed


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
    """alice's reads leave named prepared statements on the connection; bob's reads run the
    same statements (same names) and see only his and global rows."""
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
        assert prepared is not None and prepared[0] >= 2
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
    """Search rounds are psycopg's prepared statements (``_pg3_N``), first reads the engine's
    (``oam_read_N``); a failed write's rollback through psycopg deallocates them all. Both
    kinds are prepared again and answer correctly, for another user too."""
    fresh = seed(dds)
    with one_connection_pool(dds) as pool:
        for _ in range(2):
            with store_as(pool, fresh, dds.context("alice")) as alice:
                assert found_ids(alice, user_id="alice", exact_user_match=True) == {
                    "a1", "a2", "a3"}
                assert content(alice, "a1") == "memory a1 of alice"
                with pool.connection() as conn:
                    names = {str(r[0])[:4] for r in conn.execute(
                        "SELECT name FROM pg_prepared_statements").fetchall()}
                assert names == {"_pg3", "oam_"}  # positive control: both kinds are there
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
