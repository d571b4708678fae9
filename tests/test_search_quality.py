"""Search quality on 20,000 stored vectors: HNSW recall and filtered searches that never
silently under-return.

The data set is 20,000 seeded random unit vectors of dimension 384 added through ``store.add``
with explicit embeddings. The exact answers are computed independently in numpy (cosine distance)
from the vectors the test inserted, never through the store.

Bulk load: inserting into a live HNSW index costs far more than building the index once, so
the module drops the store's HNSW index, adds the rows in large ``add()`` batches, then reopens
the store with ``SchemaPolicy.CREATE_IF_NECESSARY``, whose repair recreates the index with the
store's own DDL. ``ANALYZE`` then gives the planner real statistics, as autovacuum would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from conftest import new_store_id
from oracleagentmemory.apis import ScopedRecord
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy, SearchStrategy
from pgvector.psycopg import register_vector
from psycopg import sql

N_ROWS = 20_000
DIM = 384
N_USERS = 50
RARE_USER = "rare-user"
RARE_USER_ROWS = 20  # 0.1% of the rows
N_QUERIES = 40
BATCH = 5_000
SEED = 20240611

Matrix = npt.NDArray[np.float32]


@dataclass
class Corpus:
    """What the test inserted: one row per record, in record-id order ``r0 .. r19999``."""

    vectors: Matrix
    users: list[str]
    metadata: list[dict[str, Any]]
    store: OracleDBMemoryStore
    url: str

    @property
    def ids(self) -> list[str]:
        return [f"r{i}" for i in range(len(self.users))]

    def exact_top(self, query: Matrix, rows: npt.NDArray[np.int64], k: int) -> list[str]:
        """Ids of the ``k`` rows (among ``rows``) nearest to ``query`` by cosine distance."""
        distances = cosine_distances(self.vectors[rows], query)
        order = np.argsort(distances, kind="stable")[:k]
        return [f"r{int(rows[i])}" for i in order]

    def rows_where(self, user: str | None = None, **wanted: Any) -> npt.NDArray[np.int64]:
        return np.array([
            i for i in range(len(self.users))
            if (user is None or self.users[i] == user)
            and all(self.metadata[i].get(key) == value for key, value in wanted.items())
        ], dtype=np.int64)


def cosine_distances(vectors: Matrix, query: Matrix) -> npt.NDArray[np.float64]:
    v = vectors.astype(np.float64)
    q = query.astype(np.float64)
    norms = np.linalg.norm(v, axis=1) * np.linalg.norm(q)
    distances: npt.NDArray[np.float64] = 1.0 - (v @ q) / norms
    return distances


def unit_vectors(rng: np.random.Generator, count: int) -> Matrix:
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def build_scopes(rng: np.random.Generator) -> tuple[list[str], list[dict[str, Any]]]:
    """Users and metadata of every row (scattered at random positions)."""
    positions = rng.permutation(N_ROWS)
    users = [f"u{i % N_USERS}" for i in range(N_ROWS)]
    for position in positions[:RARE_USER_ROWS]:
        users[int(position)] = RARE_USER
    metadata: list[dict[str, Any]] = [{"group": "common", "n": i} for i in range(N_ROWS)]
    cursor = RARE_USER_ROWS
    for group, size in (("fifteen", 15), ("five", 5)):
        for position in positions[cursor: cursor + size]:
            metadata[int(position)]["group"] = group
        cursor += size
    # "blue" rows: 12 of user u7 and 30 scattered over other users.
    u7_rows = [i for i in range(N_ROWS) if users[i] == "u7" and metadata[i]["group"] == "common"]
    others = [i for i in range(N_ROWS) if users[i] not in ("u7", RARE_USER)
              and metadata[i]["group"] == "common"]
    for i in rng.choice(u7_rows, 12, replace=False).tolist() + rng.choice(
            others, 30, replace=False).tolist():
        metadata[i]["team"] = "blue"
    return users, metadata


def table(store: OracleDBMemoryStore, logical: str) -> sql.Identifier:
    return sql.Identifier(store._names.table(logical))


def hnsw_index_name(store: OracleDBMemoryStore) -> str:
    return store._names.object_name("record_chunks_hnsw_ix")


@pytest.fixture(scope="module")
def corpus(pg_url: str) -> Iterator[Corpus]:
    rng = np.random.default_rng(SEED)
    vectors = unit_vectors(rng, N_ROWS)
    users, metadata = build_scopes(rng)
    store_id = new_store_id()
    loader = OracleDBMemoryStore(None, pg_url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                 vector_dim=DIM, memory_store_id=store_id,
                                 search_strategy=SearchStrategy.VECTOR)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(hnsw_index_name(loader))))
    for start in range(0, N_ROWS, BATCH):
        rows = range(start, min(start + BATCH, N_ROWS))
        loader.add([f"memory number {i}" for i in rows], "memory",
                   record_ids=[f"r{i}" for i in rows], user_ids=[users[i] for i in rows],
                   metadata=[metadata[i] for i in rows], embeddings=[vectors[i] for i in rows])
    loader.close()
    store = OracleDBMemoryStore(None, pg_url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                vector_dim=DIM, memory_store_id=store_id,
                                search_strategy=SearchStrategy.VECTOR)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for logical in ("record_chunks", "memory"):
            conn.execute(sql.SQL("ANALYZE {}").format(table(store, logical)))
    try:
        yield Corpus(vectors, users, metadata, store, pg_url)
    finally:
        store.close()


@pytest.fixture(scope="module")
def queries() -> Matrix:
    return unit_vectors(np.random.default_rng(SEED + 1), N_QUERIES)


def result_ids(results: list[tuple[Any, float]]) -> list[str]:
    return [record.id for record, _ in results]


# --- the data set is what the test meant to insert ---------------------------------------

def test_every_row_and_vector_is_stored(corpus: Corpus) -> None:
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        register_vector(conn)
        count = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
            table(corpus.store, "record_chunks"))).fetchone()
        assert count == (N_ROWS,)
        sample = conn.execute(sql.SQL(
            "SELECT record_id, embedding, user_id FROM {} WHERE record_id = ANY(%s)"
        ).format(table(corpus.store, "record_chunks")), [["r0", "r12345", "r19999"]]).fetchall()
    for record_id, embedding, user in sample:
        i = int(record_id[1:])
        assert np.allclose(embedding.to_numpy(), corpus.vectors[i], atol=1e-6)
        assert user == corpus.users[i]
    indexes = index_names(corpus)
    assert hnsw_index_name(corpus.store) in indexes  # recreated by the store's repair


def index_names(corpus: Corpus) -> set[str]:
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s",
                            [corpus.store._names.table("record_chunks")]).fetchall()
    return {r[0] for r in rows}


# --- (a) recall -----------------------------------------------------------------------------

def test_user_scoped_search_recall_at_10(corpus: Corpus, queries: Matrix) -> None:
    recalls = []
    for n, query in enumerate(queries):
        user = f"u{n % N_USERS}"
        truth = corpus.exact_top(query, corpus.rows_where(user), 10)
        results = corpus.store.search(None, 10, query_vector=query, user_id=user,
                                      exact_user_match=True, record_types={"memory"})
        assert len(results) == 10
        assert all(isinstance(record, ScopedRecord) and record.user_id == user
                   for record, _ in results)
        recalls.append(len(set(truth) & set(result_ids(results))) / 10)
    assert len(recalls) >= 30
    assert float(np.mean(recalls)) >= 0.95


def test_returned_distances_are_the_cosine_distances(corpus: Corpus, queries: Matrix) -> None:
    query = queries[0]
    results = corpus.store.search(None, 10, query_vector=query, user_id="u3",
                                  exact_user_match=True, record_types={"memory"})
    rows = np.array([int(record.id[1:]) for record, _ in results], dtype=np.int64)
    expected = cosine_distances(corpus.vectors[rows], query)
    assert [d for _, d in results] == pytest.approx(expected.tolist(), abs=1e-5)
    assert [d for _, d in results] == sorted(d for _, d in results)


def test_unfiltered_searches_find_the_exact_top_10(corpus: Corpus, queries: Matrix) -> None:
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        probe = OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                                    memory_store_id=corpus.store._names.store_key)
        for query in queries[:3]:
            truth = corpus.exact_top(query, np.arange(N_ROWS), 10)
            results = probe.search(None, 10, query_vector=query, record_types={"memory"})
            assert len(results) == 10
            assert len(set(truth) & set(result_ids(results))) >= 9
        probe.close()


# --- (b) filtered searches return k whenever k visible records match -----------------------

@pytest.mark.parametrize("k", [10, 20])
def test_rare_user_gets_k_results(corpus: Corpus, queries: Matrix, k: int) -> None:
    rows = corpus.rows_where(RARE_USER)
    assert len(rows) == RARE_USER_ROWS
    results = corpus.store.search(None, k, query_vector=queries[1], user_id=RARE_USER,
                                  exact_user_match=True, record_types={"memory"})
    assert len(results) == k
    assert all(isinstance(record, ScopedRecord) and record.user_id == RARE_USER
               for record, _ in results)
    assert result_ids(results) == corpus.exact_top(queries[1], rows, k)


def test_rare_user_with_k_above_its_row_count_gets_all_its_rows(
        corpus: Corpus, queries: Matrix) -> None:
    results = corpus.store.search(None, 50, query_vector=queries[2], user_id=RARE_USER,
                                  exact_user_match=True)
    assert sorted(result_ids(results)) == sorted(f"r{i}" for i in corpus.rows_where(RARE_USER))


def test_restrictive_metadata_filter_gets_k_results(corpus: Corpus, queries: Matrix) -> None:
    rows = corpus.rows_where(group="fifteen")
    assert len(rows) == 15
    results = corpus.store.search(None, 10, query_vector=queries[3],
                                  metadata_filter={"group": "fifteen"})
    assert len(results) == 10
    assert all(record.metadata is not None and record.metadata["group"] == "fifteen"
               for record, _ in results)
    assert result_ids(results) == corpus.exact_top(queries[3], rows, 10)


def test_filter_with_fewer_matches_than_k_returns_all_matches(
        corpus: Corpus, queries: Matrix) -> None:
    rows = corpus.rows_where(group="five")
    results = corpus.store.search(None, 10, query_vector=queries[4],
                                  metadata_filter={"group": "five"})
    assert result_ids(results) == corpus.exact_top(queries[4], rows, 5)


@pytest.mark.parametrize("k", [10, 20])
def test_user_and_metadata_filters_combined(corpus: Corpus, queries: Matrix, k: int) -> None:
    rows = corpus.rows_where("u7", team="blue")
    assert len(rows) == 12
    results = corpus.store.search(None, k, query_vector=queries[5], user_id="u7",
                                  exact_user_match=True, metadata_filter={"team": "blue"},
                                  record_types={"memory"})
    assert len(results) == min(k, 12)
    assert all(isinstance(record, ScopedRecord) and record.user_id == "u7"
               and record.metadata is not None and record.metadata["team"] == "blue"
               for record, _ in results)
    assert result_ids(results) == corpus.exact_top(queries[5], rows, min(k, 12))


def test_metadata_filter_spread_over_users_without_user_scope(
        corpus: Corpus, queries: Matrix) -> None:
    rows = corpus.rows_where(team="blue")
    assert len(rows) == 42
    results = corpus.store.search(None, 20, query_vector=queries[6],
                                  metadata_filter={"team": "blue"})
    assert len(results) == 20
    assert all(record.metadata is not None and record.metadata["team"] == "blue"
               for record, _ in results)
    truth = corpus.exact_top(queries[6], rows, 20)
    assert len(set(truth) & set(result_ids(results))) >= 19
