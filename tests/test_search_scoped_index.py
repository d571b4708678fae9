"""The chunks' scope index carries the embedding (schema version 5): a user's vectors are one
index range, read with an index-only scan by the exact scoped search, under row security too."""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from conftest import StoreFactory
from oracleagentmemory.core import OracleDBMemoryStore
from oracleagentmemory.engines.interfaces import SearchPlan
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres import search as pg_search
from oracleagentmemory.engines.postgres.ddl import SCOPED_VECTOR_MAX_DIM
from pgvector.psycopg import register_vector
from psycopg import sql

POSTGRESQL_ONLY = (
    "checks PostgreSQL's scope index and query plan (pg_indexes, EXPLAIN, VACUUM)")
"""Why the marked tests do not run on Oracle (``tests/provision/engine_marks.py``)."""

Matrix = npt.NDArray[np.float32]


def _indexes(pg_url: str, store: OracleDBMemoryStore) -> dict[str, str]:
    """Index name -> definition, of the store's chunk table."""
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s",
            [store._names.table("record_chunks")]).fetchall()
    return {str(name): str(definition) for name, definition in rows}


def _load(store: OracleDBMemoryStore, users: dict[str, int], dim: int) -> tuple[list[str], Matrix]:
    """Memories interleaved over ``users`` (a user's rows scattered over the table)."""
    owners = [user for n in range(max(users.values()))
              for user, count in users.items() if n < count]
    vectors = np.random.default_rng(11).standard_normal((len(owners), dim)).astype(np.float32)
    ids = store.add([f"m{n}" for n in range(len(owners))], "memory", user_ids=owners,
                    embeddings=list(vectors))
    return [f"{owner}/{record_id}" for owner, record_id in zip(owners, ids, strict=True)], vectors


def _exact_top(keys: list[str], vectors: Matrix, user: str, query: Matrix, k: int) -> list[str]:
    """The ``k`` nearest record ids of ``user`` by cosine distance, computed here."""
    mine = [n for n, key in enumerate(keys) if key.startswith(user + "/")]
    unit = vectors[mine] / np.linalg.norm(vectors[mine], axis=1, keepdims=True)
    distances = 1.0 - unit @ (query / np.linalg.norm(query))
    return [keys[mine[n]].split("/", 1)[1] for n in np.argsort(distances)[:k]]


def _search_ids(store: OracleDBMemoryStore, query: Matrix, user: str, k: int) -> list[str]:
    found = store.search(None, k, query_vector=query, user_id=user, exact_user_match=True,
                         record_types={"memory"})
    return [record.id for record, _ in found]


def _vacuum(pg_url: str, store: OracleDBMemoryStore) -> None:
    """VACUUM ANALYZE the store's memory and chunk tables: see :func:`_vacuum_tables`."""
    _vacuum_tables(pg_url, q.table(store._names, "memory"),
                   q.table(store._names, "record_chunks"))


def _vacuum_tables(url: str, memory: sql.Composable, chunks: sql.Composable) -> None:
    """VACUUM ANALYZE both tables until the chunk table's pages are all marked all-visible.

    A transaction another session keeps open (a previous test's connection not yet returned)
    holds the horizon back, VACUUM then leaves the visibility map unset, and the planner rightly
    prefers a sequential scan to an index-only scan that would visit the heap anyway: wait for
    the horizon (bounded) instead of asserting on such a plan.
    """
    with psycopg.connect(url, autocommit=True) as conn:
        pages = (0, 0)
        for _ in range(20):
            for table in (memory, chunks):
                conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table))
            # the chunks are partitioned (schema version 9): their pages are the partitions'
            row = conn.execute(sql.SQL("SELECT sum(relpages), sum(relallvisible) FROM pg_class "
                                       "WHERE oid IN (SELECT relid FROM pg_partition_tree("
                                       "{}::regclass))").format(
                                           sql.Literal(chunks.as_string(conn)))).fetchone()
            assert row is not None
            pages = (int(row[0]), int(row[1]))
            if pages[1] >= pages[0]:
                return
            time.sleep(0.5)
        raise AssertionError(f"VACUUM left {pages[0] - pages[1]} of {pages[0]} chunk pages "
                             "not all-visible: a session holds an old snapshot")


def _partition_mates(url: str, table: sql.Composable, user: str, count: int) -> list[str]:
    """``count`` user names whose chunks fall in ``user``'s partition of the chunks ``table``."""
    from oracleagentmemory.engines.postgres.chunk_partitions import CHUNK_PARTITIONS

    with psycopg.connect(url) as conn:
        rows = conn.execute(sql.SQL(
            "SELECT n.name FROM generate_series(0, {parts} - 1) r, "
            "LATERAL (SELECT 'm' || i AS name FROM generate_series(1, 500) i) n "
            "WHERE satisfies_hash_partition({t}::regclass, {parts}, r, %s::text) "
            "AND satisfies_hash_partition({t}::regclass, {parts}, r, n.name) "
            "ORDER BY length(n.name), n.name LIMIT %s").format(
                t=sql.Literal(table.as_string(conn)), parts=sql.Literal(CHUNK_PARTITIONS)),
            [user, count]).fetchall()
    assert len(rows) == count
    return [str(r[0]) for r in rows]


def _explain_scoped(pg_url: str, store: OracleDBMemoryStore, user: str, query: Matrix) -> str:
    """EXPLAIN ANALYZE of the store's exact scoped statement for ``user``."""
    plan = SearchPlan(mode="vector", k=10, record_types=("memory",), scope={"user_id": user})
    plan.vector = query
    params: list[Any] = []
    statement = pg_search._limited(
        pg_search._vector_arms(store._names, plan, 40, True, params, True), 40)
    with psycopg.connect(pg_url) as conn:
        register_vector(conn)
        rows = conn.execute(sql.SQL("EXPLAIN (ANALYZE, COSTS OFF) ") + statement,
                            params).fetchall()
    return "\n".join(str(r[0]) for r in rows)


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_small_dimension_store_carries_the_embedding_in_its_scope_index(
        make_store: StoreFactory, pg_url: str) -> None:
    store = make_store(vector_dim=3)
    indexes = _indexes(pg_url, store)
    scoped = store._names.object_name("record_chunks_vector_scope_ix")
    assert "INCLUDE (record_id, embedding)" in indexes[scoped]
    assert "(user_id, record_type)" in indexes[scoped]
    # it replaces the version-3 scope index (same keys, fewer columns): one index to maintain
    assert store._names.object_name("record_chunks_scope_ix") not in indexes


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_large_dimension_store_keeps_the_version_3_scope_index(
        make_store: StoreFactory, pg_url: str) -> None:
    dim = SCOPED_VECTOR_MAX_DIM + 1  # does not fit a B-tree entry with the largest ids
    store = make_store(vector_dim=dim)
    indexes = _indexes(pg_url, store)
    assert store._names.object_name("record_chunks_vector_scope_ix") not in indexes
    assert "INCLUDE (record_id)" in indexes[store._names.object_name("record_chunks_scope_ix")]
    keys, vectors = _load(store, {"u1": 30, "u2": 30}, dim)
    query = vectors[7]
    assert _search_ids(store, query, "u1", 5) == _exact_top(keys, vectors, "u1", query, 5)


def test_the_largest_ids_fit_the_scope_index_at_the_largest_dimension(
        make_store: StoreFactory) -> None:
    store = make_store(vector_dim=SCOPED_VECTOR_MAX_DIM)
    rng = np.random.default_rng(3)
    # 128 random characters of 4 bytes each in UTF-8: an index entry compresses nothing
    user, record_id = ("".join(chr(c) for c in rng.integers(0x10000, 0x10FFFF, 128))
                       for _ in range(2))
    vector = rng.standard_normal(SCOPED_VECTOR_MAX_DIM).astype(np.float32)
    store.add(["long ids"], "memory", user_ids=user, record_ids=record_id, embeddings=[vector])
    assert _search_ids(store, vector, user, 1) == [record_id]


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_the_scoped_search_reads_a_users_vectors_from_the_index_alone(
        make_store: StoreFactory, pg_url: str) -> None:
    dim = 16
    store = make_store(vector_dim=dim)
    # u2 shares its chunk partition (schema version 9) with two other users, as it shared the
    # table with u1 and u3 before: its chunks are a third of what a scan of it would read
    mates = _partition_mates(pg_url, q.table(store._names, "record_chunks"), "u2", 2)
    keys, vectors = _load(store, {mates[0]: 300, "u2": 300, mates[1]: 300}, dim)
    query = np.random.default_rng(5).standard_normal(dim).astype(np.float32)
    expected = _exact_top(keys, vectors, "u2", query, 10)
    # right after the load the visibility map is not set: the index-only scan visits the heap
    # for the rows it cannot prove visible, and the results are the same
    assert _search_ids(store, query, "u2", 10) == expected
    _vacuum(pg_url, store)
    plan = _explain_scoped(pg_url, store, "u2", query)
    # PostgreSQL names a partition's index after its columns, cut to 63 bytes with a long prefix
    index = store._names.object_name("chunks_p") + r"\d\d_user_id_record_type_record_id_\w*idx"
    assert re.search(rf"Index Only Scan using {index} on \S+ c ", plan), plan
    assert re.search(r"Heap Fetches: 0\b", plan), plan
    assert _search_ids(store, query, "u2", 10) == expected


def test_row_security_still_applies_to_the_scoped_index_search(dds: Any) -> None:
    """An end user's scoped search never returns another user's nearer chunk."""
    from dds import OWNER

    store_id = dds.new_store(vector_dim=3)
    owner = dds.owner_store(store_id)
    try:
        owner.add(["bob's", "alice's"], "memory", user_ids=["bob", "alice"],
                  record_ids=["b1", "a1"], embeddings=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        with psycopg.connect(dds.owner_url, autocommit=True) as conn:
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(
                sql.Identifier(OWNER, f"{store_id}_record_chunks")))
        query = [1.0, 0.0, 0.0]
        # positive control: without row security, bob's chunk is found for user bob
        [(hit, _)] = owner.search(None, 1, query_vector=query, user_id="bob",
                                  exact_user_match=True, record_types={"memory"})
        assert hit.id == "b1"
    finally:
        owner.close()
    with dds.runtime_store(store_id, "alice") as store:
        assert store.search(None, 5, query_vector=query, user_id="bob", exact_user_match=True,
                            record_types={"memory"}) == []
        mine = store.search(None, 5, query_vector=query, user_id="alice",
                            exact_user_match=True, record_types={"memory"})
        assert [record.id for record, _ in mine] == ["a1"]


def test_an_end_users_scoped_search_reads_the_scope_index_alone(dds: Any) -> None:
    """Under row-level security too, the scoped exact statement is an index-only scan."""
    from dds import OWNER
    from oracleagentmemory.engines.identifiers import store_names

    store_id = dds.new_store(vector_dim=8)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((4000, 8)).astype(np.float32)
    # the others share alice's chunk partition (schema version 9), as they shared the table
    mates = _partition_mates(dds.owner_url, sql.Identifier(OWNER, f"{store_id}_record_chunks"),
                             "alice", 9)
    users = ["alice" if n < 400 else mates[n % 9] for n in range(4000)]
    with dds.owner_store(store_id) as owner:
        owner.add([f"m{n}" for n in range(4000)], "memory", user_ids=users,
                  embeddings=list(vectors))
    _vacuum_tables(dds.owner_url, sql.Identifier(OWNER, f"{store_id}_memory"),
                   sql.Identifier(OWNER, f"{store_id}_record_chunks"))
    names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=OWNER,
                        fold="lower")
    plan = SearchPlan(mode="vector", k=10, record_types=("memory",), scope={"user_id": "alice"})
    plan.vector = vectors[0]
    params: list[Any] = []
    statement = sql.SQL("EXPLAIN (ANALYZE, COSTS OFF) ") + pg_search._limited(
        pg_search._vector_arms(names, plan, 40, True, params, True), 40)

    def explain(without_bitmaps: bool) -> str:
        with psycopg.connect(dds.runtime_url) as conn, conn.transaction():
            register_vector(conn)
            conn.execute("SELECT oam_sec.apply_assertion(%s)", [dds.context("alice").assertion()])
            rows = (pg_search._without_bitmap_scans(conn, statement, params) if without_bitmaps
                    else conn.execute(statement, params).fetchall())
            assert conn.execute("SHOW enable_bitmapscan").fetchone() == ("on",)  # restored
        return "\n".join(str(r[0]) for r in rows)

    assert "Index Only Scan" in explain(True)
    assert "Bitmap" not in explain(True)
    # The statement itself runs without bitmap scans; the caller's setting holds around it.
    with psycopg.connect(dds.runtime_url) as conn, conn.transaction():
        show = sql.SQL("SHOW enable_bitmapscan")
        assert pg_search._without_bitmap_scans(conn, show, []) == [("off",)]
        assert conn.execute(show).fetchone() == ("on",)
        conn.execute("SET LOCAL enable_bitmapscan = off")
        pg_search._without_bitmap_scans(conn, show, [])
        assert conn.execute(show).fetchone() == ("off",)  # a caller's own value is kept
