"""A read in an end-user context on PostgreSQL: one round trip, and nothing weaker.

A store's first read of a transaction travels with ``BEGIN``, the context's apply, ``COMMIT``
and the end check in one flight; the database's answer to the apply is checked before any row
reaches the caller, and when it refuses the context the server runs none of the flight's
statements (a refused session may hold SQL that replaced the SDK's prepared statements).
Round trips are counted by a TCP relay in front of the embedded server (tests/round_trips.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from dds import OWNER
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from oracleagentmemory.engines.postgres.context_sql import MAX_PREPARED_READS
from oracleagentmemory.engines.postgres.session_seals import SealingPool
from oracleagentmemory.errors import SecurityContextError
from psycopg_pool import ConnectionPool
from round_trips import Relay, relay
from test_attack_review_23 import one_connection_pool, store_as
from test_deepsec_attacks import Seeded, seed


@pytest.fixture(scope="module")
def seeded(dds: Any) -> Seeded:
    return seed(dds)


@contextmanager
def relayed_store(dds: Any, seeded: Seeded, user: str = "alice"
                  ) -> Iterator[tuple[Relay, ConnectionPool[Any], OracleDBMemoryStore]]:
    """A NO_CHECK store on a one-connection sealing pool (the kind the SDK builds for a URL and
    the gateway runs on) through a relay, in ``user``'s context. An application's own
    ``ConnectionPool`` pays two round trips more per operation: the engine cannot tell who used
    its connections, so it forgets every named statement first (tests/test_attack_review_23.py).
    """
    with relay(dds.runtime_url) as (counter, url), \
            SealingPool(url, min_size=1, max_size=1, open=True) as pool, \
            OracleMemoryEndUserSecurityContext(dds.context(user)):
        store = OracleDBMemoryStore(None, pool, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=seeded.store_id, schema_owner=OWNER)
        try:
            yield counter, pool, store
        finally:
            store.close()


def memory_content(store: OracleDBMemoryStore, memory_id: str) -> str | None:
    record = store._memory_record(memory_id)
    return None if record is None else str(record.content)


def test_a_read_in_a_context_is_one_round_trip(dds: Any, seeded: Seeded) -> None:
    with relayed_store(dds, seeded) as (counter, _, store):
        for _ in range(8):  # past psycopg's threshold: the read runs as a prepared statement
            assert memory_content(store, "a1") == "memory a1 of alice"
        before = counter.flights
        assert memory_content(store, "a1") == "memory a1 of alice"
        assert counter.flights - before == 1
        before = counter.flights
        with store.transaction():  # the gateway's shape: a read in the request's transaction
            assert memory_content(store, "g1") == "memory g1 of everyone"
        assert counter.flights - before == 1
        assert memory_content(store, "b1") is None  # another user's row stays invisible


def test_a_read_then_a_write_in_one_block_commit_and_roll_back_together(dds: Any) -> None:
    fresh = seed(dds)
    with relayed_store(dds, fresh) as (_, _, store):
        with store.transaction():
            assert memory_content(store, "a1") == "memory a1 of alice"
            store.update("memory", "a1", content="changed in the block")
        assert memory_content(store, "a1") == "changed in the block"
        with pytest.raises(RuntimeError), store.transaction():
            assert memory_content(store, "a1") == "changed in the block"
            store.update("memory", "a1", content="never stored")
            assert memory_content(store, "a1") == "never stored"  # the block sees its write
            raise RuntimeError("the block fails")
        assert memory_content(store, "a1") == "changed in the block"


def test_a_refused_context_returns_no_rows_and_the_connection_is_dropped(
        dds: Any, seeded: Seeded) -> None:
    with relayed_store(dds, seeded) as (_, pool, store):
        assert memory_content(store, "g1") == "memory g1 of everyone"  # positive control
        with pool.connection() as conn:
            first = conn.info.backend_pid
        with OracleMemoryEndUserSecurityContext(dds.context("mallory")), \
                pytest.raises(SecurityContextError, match="does not accept"):
            store._memory_record("g1")  # an unknown end user: a global memory stays unseen
        with pool.connection() as conn:  # the refused connection serves nobody again
            assert conn.info.backend_pid != first
            assert conn.execute("SELECT current_setting('oam.end_user_assertion', true)"
                                ).fetchone() in ((None,), ("",))
        assert memory_content(store, "g1") == "memory g1 of everyone"


def spy_calls(dds: Any) -> int:
    """Calls so far of the sequence the attacker's statement advances (read as the superuser;
    nextval is not undone by a rollback, so a statement that ran at all shows here)."""
    with psycopg.connect(dds.superuser_url, autocommit=True) as conn:
        row = conn.execute("SELECT last_value + (CASE WHEN is_called THEN 1 ELSE 0 END) "
                           "FROM public.oam_test_spy").fetchone()
    assert row is not None
    return int(row[0])


def test_a_prepared_read_replaced_by_sql_on_the_connection_never_runs(
        dds: Any, seeded: Seeded) -> None:
    with psycopg.connect(dds.superuser_url, autocommit=True) as conn:
        # A channel out of the session the runtime login may have (a sequence it can use).
        conn.execute("CREATE SEQUENCE IF NOT EXISTS public.oam_test_spy")
        conn.execute("GRANT USAGE ON SEQUENCE public.oam_test_spy TO oam_test_rt")
    with relayed_store(dds, seeded) as (_, pool, store):
        for _ in range(3):
            assert memory_content(store, "a1") == "memory a1 of alice"
        with pool.connection() as conn:  # the attacker's SQL on the pooled connection
            conn.autocommit = True
            row = conn.execute(
                "SELECT name FROM pg_prepared_statements WHERE NOT from_sql "
                "AND statement LIKE 'SELECT id, record_type%'").fetchone()
            assert row is not None  # the store's read is a named prepared statement
            conn.execute(f"DEALLOCATE {row[0]}")
            conn.execute(f"PREPARE {row[0]}(text[]) AS SELECT pg_catalog.nextval("
                         "'public.oam_test_spy'), $1::text AS stolen")
            calls = spy_calls(dds)
            conn.execute(f"EXECUTE {row[0]}(ARRAY['probe'])")  # positive control: it runs
            assert spy_calls(dds) == calls + 1
        with pytest.raises(SecurityContextError, match="does not accept"):
            store._memory_record("a1")
        assert spy_calls(dds) == calls + 1  # the caller's ids never reached it
        assert memory_content(store, "a1") == "memory a1 of alice"  # on a fresh connection


def test_reads_survive_their_prepared_statements_being_deallocated(
        dds: Any, seeded: Seeded) -> None:
    with relayed_store(dds, seeded) as (_, pool, store):
        assert memory_content(store, "a1") == "memory a1 of alice"
        with pool.connection() as conn:
            conn.autocommit = True
            assert conn.execute("SELECT count(*) FROM pg_prepared_statements WHERE NOT from_sql"
                                ).fetchone() != (0,)  # positive control: the read is prepared
            conn.execute("DEALLOCATE ALL")  # as psycopg's rollback does
        assert memory_content(store, "a1") == "memory a1 of alice"  # prepared again
        assert memory_content(store, "a2") == "memory a2 of alice"


def test_lists_and_a_threads_messages_are_one_round_trip_each(dds: Any, seeded: Seeded) -> None:
    with relayed_store(dds, seeded) as (counter, _, store):
        for _ in range(2):  # the second time, every statement is prepared already
            before = counter.flights
            memories = store.list("memory", limit=10)
            assert counter.flights - before == 1
            before = counter.flights
            messages = store.list_thread_messages("t-alice")
            assert counter.flights - before == 1
            before = counter.flights
            record = store.get("memory", "a2")
            assert counter.flights - before == 1
        assert {m.id for m in memories} == {"a1", "a2", "a3", "g1", "g2"}
        with store.transaction():
            store.get("memory", "a1")  # the first read; the list then runs as a later statement
            in_transaction = store.list("memory", limit=10)
        assert [m.id for m in memories] == [m.id for m in in_transaction]  # oldest first, both
        assert [m.id for m in messages] == ["m-alice"]
        assert record is not None and record.content == "memory a2 of alice"


def named_reads(pool: ConnectionPool[Any]) -> int:
    """How many of the engine's named reads the pool's one connection holds on the server."""
    with pool.connection() as conn:
        row = conn.execute("SELECT count(*) FROM pg_prepared_statements "
                           "WHERE name LIKE 'oam\\_read\\_%'").fetchone()
    assert row is not None
    return int(row[0])


def test_an_applications_pool_keeps_no_named_reads_on_the_server(dds: Any, seeded: Seeded
                                                                  ) -> None:
    """Each transaction on an application's pool forgets the statements named before (a
    connection the SDK cannot watch); reads named there would stay on the server, one more per
    operation, and lengthen every later apply's clean-session scan."""
    with relayed_store(dds, seeded) as (_, pool, store):  # positive control: a pool of the SDK's
        for n in range(3):
            assert memory_content(store, f"a{n + 1}") == f"memory a{n + 1} of alice"
        assert named_reads(pool) >= 1
    with one_connection_pool(dds) as pool:
        with store_as(pool, seeded, dds.context("alice")) as store:
            for _ in range(10):
                for n in range(3):
                    assert memory_content(store, f"a{n + 1}") == f"memory a{n + 1} of alice"
                assert [m.id for m in store.list("memory", record_id="a1")] == ["a1"]
        assert named_reads(pool) == 0


def test_first_reads_past_the_prepared_limit_run_unnamed(dds: Any, seeded: Seeded) -> None:
    with relayed_store(dds, seeded) as (_, pool, store):
        for n in range(MAX_PREPARED_READS + 5):  # a new statement shape each time
            shape = {f"k{i}": i for i in range(n + 1)}  # n + 1 predicates
            assert store.list("memory", metadata_filter=shape) == []
        assert [r.id for r in store.list("memory", record_id="a1")] == ["a1"]
        assert named_reads(pool) == MAX_PREPARED_READS


@pytest.mark.parametrize("scope", [{}, {"user_id": "alice", "exact_user_match": True}],
                         ids=["hnsw-or-exact", "scoped-exact"])
def test_a_search_in_a_context_is_two_round_trips(dds: Any, seeded: Seeded,
                                                    scope: dict[str, Any]) -> None:
    """A search's first round travels with ``BEGIN`` and the apply (its settings and their
    restoring in the same flight), and its record read with ``COMMIT`` and the end check.
    Inside a transaction block the read leaves the transaction open: three then, the block's
    ``COMMIT`` the third.
    (Two results, so that one round fills them: a round that comes up short is repeated.)
    Each user gets only their rows (and the everyone rows); a user filter naming another user
    finds nothing."""
    def ids(store: OracleDBMemoryStore, *, k: int = 20, **kwargs: Any) -> set[str]:
        return {r.id for r, _ in store.search(None, k, query_vector=[1.0, 0.1, 0.0],
                                              record_types=["memory"], **kwargs)}

    expected = {"a1", "a2", "a3"} | (set() if scope else {"g1", "g2"})
    with relayed_store(dds, seeded) as (counter, _, store):
        assert ids(store, **scope) == expected
        assert len(ids(store, k=2, **scope)) == 2  # the store's scan choice for two is made here
        for _ in range(2):
            before = counter.flights
            found = ids(store, k=2, **scope)
            assert counter.flights - before == 2
            assert len(found) == 2 and found <= expected
        before = counter.flights
        with store.transaction():
            assert len(ids(store, k=2, **scope)) == 2
        assert counter.flights - before == 3
        assert ids(store, user_id="bob", exact_user_match=True) == set()
    with relayed_store(dds, seeded, "bob") as (counter, _, store):
        bobs: dict[str, Any] = {key: ("bob" if key == "user_id" else value)
                                for key, value in scope.items()}
        assert ids(store, **bobs) == {"b1", "b2", "b3"} | (set() if scope else {"g1", "g2"})


def test_a_search_inside_a_transaction_block_leaves_the_block_atomic(dds: Any) -> None:
    """The search's record read ends the transaction only when the search is the session's
    whole work: inside a block, a write before the search and one after it roll back
    together, and the block's reads see its own writes until then."""
    fresh = seed(dds)
    with relayed_store(dds, fresh) as (_, _, store):
        with pytest.raises(RuntimeError), store.transaction():
            store.update("memory", "a1", content="changed in the block")
            hits = store.search(None, 3, query_vector=[1.0, 0.1, 0.0], record_types=["memory"])
            assert len(hits) == 3 and {r.id for r, _ in hits} <= {"a1", "a2", "a3", "g1", "g2"}
            store.update("memory", "a2", content="changed after the search")
            assert memory_content(store, "a2") == "changed after the search"
            raise RuntimeError("roll the block back")
        assert memory_content(store, "a1") == "memory a1 of alice"
        assert memory_content(store, "a2") == "memory a2 of alice"
        with store.transaction():  # positive control: the same block, committed
            store.update("memory", "a1", content="changed in the block")
            store.search(None, 3, query_vector=[1.0, 0.1, 0.0], record_types=["memory"])
            store.update("memory", "a2", content="changed after the search")
        assert memory_content(store, "a1") == "changed in the block"
        assert memory_content(store, "a2") == "changed after the search"
