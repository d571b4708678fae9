"""A search's HNSW round stays on the HNSW index from its first execution on a connection.

Under row-level security a custom plan (``plan_cache_mode = auto`` plans the first five
executions with their values) can scan the user's chunks exactly instead (measured at 4 users x
5k 256-d chunks); the round is prepared at once and planned generically, and each value, the
query vector included, is bound once.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import psycopg
import pytest
from oracleagentmemory.engines.postgres import search as pg_search
from oracleagentmemory.engines.postgres.chunk_partitions import CHUNK_PARTITIONS
from pgvector.psycopg import register_vector
from psycopg import sql

DIM = 8
ALICE_ROWS = 3000
"""More than the store searches exactly (``EXACT_SCAN_MIN_ROWS``, and the square-root bound
at this table size), so the first round is an HNSW round."""


def _load(dds: Any) -> tuple[str, np.ndarray]:
    """A store where alice owns half of 6,000 chunks (interleaved with bob's), analysed."""
    from dds import OWNER

    store_id = dds.new_store(vector_dim=DIM)
    vectors = np.random.default_rng(23).standard_normal((2 * ALICE_ROWS, DIM)).astype(np.float32)
    users = ["alice" if n % 2 else "bob" for n in range(2 * ALICE_ROWS)]
    with dds.owner_store(store_id) as owner:
        owner.add([f"m{n}" for n in range(len(users))], "memory", user_ids=users,
                  record_ids=[f"m{n}" for n in range(len(users))], embeddings=list(vectors))
    with psycopg.connect(dds.owner_url, autocommit=True) as conn:
        for table in ("memory", "record_chunks"):
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(
                sql.Identifier(OWNER, f"{store_id}_{table}")))
    return store_id, vectors


def _hnsw_statements(conn: psycopg.Connection[Any]) -> list[tuple[str, str, int, int]]:
    """The session's prepared HNSW rounds: name, text, generic and custom plans so far."""
    rows = conn.execute(
        "SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements "
        "WHERE statement LIKE '%<=> $1::vector LIMIT%' AND NOT from_sql").fetchall()
    return [(str(a), str(b), int(c), int(d)) for a, b, c, d in rows]


def test_an_end_users_first_search_on_a_connection_scans_the_hnsw_index(dds: Any) -> None:
    store_id, vectors = _load(dds)
    query = vectors[1] + 0.01
    mine = np.arange(1, 2 * ALICE_ROWS, 2)
    unit = vectors[mine] / np.linalg.norm(vectors[mine], axis=1, keepdims=True)
    nearest = {f"m{mine[n]}" for n in np.argsort(-(unit @ (query / np.linalg.norm(query))))[:5]}
    with psycopg.connect(dds.runtime_url) as conn:  # a fresh session: nothing prepared yet
        with dds.runtime_store(store_id, "alice", pool=conn, vector_dim=DIM) as store:
            found = store.search(None, 5, query_vector=query, user_id="alice",
                                 exact_user_match=True)
        assert {record.id for record, _ in found} == nearest  # HNSW finds them at this size
        # Without the round's own settings it would not be prepared before its sixth
        # execution, and planned with its values (a custom plan) for the first five.
        [(name, statement, generic, custom)] = _hnsw_statements(conn)
        assert (generic, custom) == (1, 0)  # its one execution ran the generic plan
        assert statement.count("$1::vector") == 8 and "$4" not in statement  # bound once
        # The plan that execution used, shown for the same values in alice's context.
        register_vector(conn)
        with conn.transaction():
            conn.execute("SELECT oam_sec.apply_assertion(%s)", [dds.context("alice").assertion()],
                         prepare=False)
            pg_search._configure(conn, 40)
            values = [str(query.tolist()), "alice", 40]
            explained = psycopg.ClientCursor(conn).execute(
                sql.SQL("EXPLAIN (ANALYZE, COSTS OFF) EXECUTE {}({})").format(
                    sql.Identifier(name), sql.SQL(", ").join(sql.Literal(v) for v in values)),
            ).fetchall()
        plan = "\n".join(str(row[0]) for row in explained)
        # The chunks are partitioned by owner (schema version 9): the executor prunes the
        # partitions that cannot hold alice's rows and scans her partition's HNSW index.
        assert re.search(rf"Index Scan using {store_id}_chunks_p\d\d_embedding_idx "
                         rf"on {store_id}_chunks_p\d\d ", plan), plan
        assert f"Subplans Removed: {CHUNK_PARTITIONS - 1}" in plan, plan


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_round_binds_each_value_once(mode: str) -> None:
    """The compiled round references the query vector, the text and the user id as one
    parameter each, in every arm."""
    from oracleagentmemory.engines.identifiers import store_names
    from oracleagentmemory.engines.interfaces import SearchPlan
    from oracleagentmemory.engines.layout import SEARCHABLE_TYPES

    names = store_names(memory_store_id="plans", table_name_prefix=None, schema_owner=None,
                        fold="lower")
    plan = SearchPlan(mode=mode, k=10, record_types=tuple(sorted(SEARCHABLE_TYPES)),
                      scope={"user_id": "alice", "agent_id": None})
    plan.vector = np.ones(DIM, dtype=np.float32)
    plan.text = "words" if mode == "hybrid" else None
    statement, params = pg_search.round_statement(names, plan, 40, False, False)
    assert sum(isinstance(p, np.ndarray) for p in params) == 1
    assert sum(isinstance(p, str) and p == "alice" for p in params) == 1
    assert statement.count("$1::vector") == 8  # four arms, each orders and returns by it
    again, _ = pg_search.round_statement(names, plan, 40, False, False)
    assert again is statement  # compiled once per shape


def test_a_scoped_exact_round_is_prepared_on_its_first_execution(dds: Any) -> None:
    """A user with few chunks is searched exactly (the scoped form), prepared at once too."""
    store_id = dds.new_store(vector_dim=DIM)
    vectors = np.random.default_rng(5).standard_normal((60, DIM)).astype(np.float32)
    with dds.owner_store(store_id) as owner:
        owner.add([f"m{n}" for n in range(60)], "memory", user_ids="alice",
                  embeddings=list(vectors))
    with psycopg.connect(dds.runtime_url) as conn:
        with dds.runtime_store(store_id, "alice", pool=conn, vector_dim=DIM) as store:
            found = store.search(None, 3, query_vector=vectors[7], user_id="alice",
                                 exact_user_match=True, record_types={"memory"})
        assert found[0][0].content == "m7"
        rows = conn.execute(
            "SELECT generic_plans + custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE '%<=> $1::vector) + 0 AS d%' AND NOT from_sql").fetchall()
        assert rows == [(1,)]


def test_rounds_with_a_metadata_filter_leave_nothing_prepared(dds: Any) -> None:
    """A filter is the caller's own shape: preparing each would let one caller fill a pooled
    connection with prepared statements, which every later context apply on it reads."""
    store_id = dds.new_store(vector_dim=DIM)
    vectors = np.random.default_rng(9).standard_normal((60, DIM)).astype(np.float32)
    with dds.owner_store(store_id) as owner:
        owner.add([f"m{n}" for n in range(60)], "memory", user_ids="alice",
                  embeddings=list(vectors), metadata=[{"k0": n % 3} for n in range(60)])

    def search_rounds(conn: psycopg.Connection[Any]) -> int:
        row = conn.execute("SELECT count(*) FROM pg_prepared_statements "
                           "WHERE statement LIKE '%$1::vector%' AND NOT from_sql").fetchone()
        assert row is not None
        return int(row[0])

    with psycopg.connect(dds.runtime_url) as conn:
        with dds.runtime_store(store_id, "alice", pool=conn, vector_dim=DIM) as store:
            for size in range(1, 7):  # six filter shapes: one to six keys
                store.search(None, 3, query_vector=vectors[size], user_id="alice",
                             exact_user_match=True,
                             metadata_filter={f"k{key}": 1 for key in range(size)})
            filtered = search_rounds(conn)
            found = store.search(None, 3, query_vector=vectors[7], user_id="alice",
                                 exact_user_match=True)
        assert filtered == 0
        assert found[0][0].content == "m7"
        assert search_rounds(conn) == 1  # positive control: the unfiltered round is prepared
