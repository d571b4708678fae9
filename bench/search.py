"""Latency of ``OracleDBMemoryStore.search`` with an exact user filter, next to an exact scan.

For each size in ``--sizes`` one store is filled with that many memories through ``store.add`` (one
chunk each: short text from a small Zipf-distributed vocabulary, a precomputed random L2-normalised
``--dim``-dimensional embedding, seeded (``--clusters N``: each near one of N fixed random
centroids, as embeddings of related texts are, and the query vectors alike); ``user_id`` spread over
``--users`` users, 100 by default, so a user owns 1% of the rows), then ``VACUUM ANALYZE``d. The
HNSW index is dropped before the load and rebuilt after it with the SDK's own definition
(``add_vector_index``), which is many times faster than maintaining it on every insert
(``--incremental-index`` keeps it). The same store is opened three times, with
``SearchStrategy.VECTOR``, ``KEYWORD`` and ``HYBRID``, and each mode is timed on ``--queries``
queries of ``k=10`` with ``user_id=u, exact_user_match=True`` and the default record types:

* vector: ``store.search(None, k, query_vector=v, ...)`` with a random unit vector;
* keyword: ``store.search("w1 w2", k, ...)`` with two mid-frequency vocabulary words;
* hybrid: ``store.search("w1 w2", k, ...)``; the store's embedder maps each query text to a fixed
  random unit vector (seeded by the text), like the stored vectors.

Timed: the whole ``store.search`` call (argument checks, embedding, SQL, fetching the records).

Exact baseline ("exact"): the store's exact candidate SQL for the same plan (vector order
``(embedding <=> q) + 0``, which no index can serve; parents joined before the sort) with index
and bitmap scans switched off (``SET LOCAL enable_indexscan/enable_bitmapscan/
enable_indexonlyscan = off``), so PostgreSQL reads the chunk table sequentially, filters and
sorts. It runs on its own psycopg connection and does not fetch the records, so it does less
work than the store. Also timed, for information: "planner", the same exact SQL with the
planner's choice of index, and for vector mode "scoped", the store's exact scoped statement
(what it runs when a user filter keeps few chunks), and "hnsw", the approximate statement the
store runs when a user filter keeps many chunks, each with its recall@10 (the truth being
"planner", exact too; ``--hnsw-ef`` adds the HNSW statement at other ``hnsw.ef_search`` values).
Every timed query runs the store and these ways in a rotating order, in the same loop; the slow
sequential baseline runs on ``--exact-queries`` of them, spread evenly over the loop.

Database CPU per store search ("db us"): after the timed loop, the store alone runs the timed
queries again, one after another, and the CPU the database server's processes spent meanwhile
(``/proc``, embedded or local server only) is divided by their number. The store runs as the
tables' owner here (no row-level security; ``bench/gateway.py`` measures it through the gateway).

``--partitions N`` moves the loaded store's chunks to ``N`` hash partitions by owner first
(``ddl.repartition_chunks``), to compare partition counts on the same data.

Also printed: the scans of each way's plan (``EXPLAIN ANALYZE`` of the first query; the store's
full plan with ``--explain``).

Goals (the issue), at 100k chunks: vector p95 under 10 ms and at least 10x faster than the exact
scan; hybrid p95 under 3x vector p95.

Usage::

    .venv/bin/python bench/search.py [--sizes 10000,100000] [--users 100] [--queries 200]
                                     [--url URL | --data-dir DIR] [--store-id ID --keep]
                                     [--modes vector,keyword,hybrid] [--clusters N]
                                     [--partitions N]

Without ``--url`` the embedded PostgreSQL is started in a temporary directory (``--data-dir``:
in that directory, kept) and stopped at the end. ``--keep`` keeps the loaded store (id
``--store-id``, with the size appended when several sizes are given) and a later ``--keep``
run reuses it when it holds the same number of chunks, upgrading its schema first if the SDK's
is newer: the 1M-chunk load is done once. The figures are only as quiet as the machine: run it
on an idle one.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import os
import re
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import psycopg
from _cpu import cpu_since, server_pid, tree_cpu
from _embedded import add_server_arguments, bench_server
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core._search import base_plan, check_search_arguments
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.engines.interfaces import SearchPlan
from oracleagentmemory.engines.postgres import names as pg_names
from oracleagentmemory.engines.postgres import search as pg_search
from oracleagentmemory.engines.postgres.chunk_partitions import partition_count
from oracleagentmemory.engines.postgres.ddl import add_vector_index, repartition_chunks
from pgvector.psycopg import register_vector
from psycopg import sql

USERS = 100
"""Default number of users; ``--users`` sets it."""
SEED = 20240611
K = 10
MEMORY_TYPES = ("memory", "guideline", "fact", "preference")
VOCAB_SIZE = 500
WORDS_PER_TEXT = 12
BATCH = 5_000
MODES = ("vector", "keyword", "hybrid")
STRATEGIES = {"vector": SearchStrategy.VECTOR, "keyword": SearchStrategy.KEYWORD,
              "hybrid": SearchStrategy.HYBRID}
_ids = itertools.count(1)


# --- workload -----------------------------------------------------------------------------------
def vocabulary() -> list[str]:
    """``VOCAB_SIZE`` distinct pronounceable words, the same in every run."""
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    syllables = [c + v for c in consonants for v in vowels]
    rng = np.random.default_rng(SEED)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < VOCAB_SIZE:
        word = "".join(syllables[i] for i in rng.integers(0, len(syllables), 3))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


CLUSTER_SPREAD = 0.6
"""With ``--clusters``: the length of a vector's random offset from its unit centroid."""


def unit_vectors(rng: np.random.Generator, count: int, dim: int, clusters: int = 0
                 ) -> npt.NDArray[np.float32]:
    """Random unit vectors; with ``clusters``, each near one of that many fixed centroids."""
    matrix = rng.standard_normal((count, dim), dtype=np.float32)
    if clusters:
        centres = np.random.default_rng(SEED - 1).standard_normal((clusters, dim),
                                                                  dtype=np.float32)
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        matrix *= CLUSTER_SPREAD / np.sqrt(dim)
        matrix += centres[rng.integers(0, clusters, count)]
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


class TextSeededEmbedder(IEmbedder):
    """Maps each text to a fixed random unit vector (seeded by the text): the query side of a
    corpus whose stored vectors are random too."""

    def __init__(self, dim: int) -> None:
        self._dim = dim

    @property
    def embedding_dimension(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str], *, is_query: bool = False
              ) -> npt.NDArray[np.float32]:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            rows.append(unit_vectors(np.random.default_rng(seed), 1, self._dim)[0])
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self._dim)


@dataclass
class Query:
    user_id: str
    text: str
    vector: npt.NDArray[np.float32]


def make_queries(count: int, dim: int, words: list[str], users: int, clusters: int = 0
                 ) -> list[Query]:
    """Random unit vectors and two-word texts of mid-frequency words (Zipf ranks 20-200)."""
    rng = np.random.default_rng(SEED + 1)
    vectors = unit_vectors(rng, count, dim, clusters)
    queries = []
    for n in range(count):
        a, b = rng.choice(np.arange(20, 200), 2, replace=False)
        queries.append(Query(f"user-{(n * 37) % users:03d}", f"{words[a]} {words[b]}",
                             vectors[n]))
    return queries


# --- stores -------------------------------------------------------------------------------------
@dataclass
class Corpus:
    """One loaded store, opened once per search strategy."""

    size: int
    store_id: str
    stores: dict[str, OracleDBMemoryStore] = field(default_factory=dict)
    load_seconds: float = 0.0
    index_seconds: float | None = None
    reused: bool = False
    has_hnsw: bool = True


@dataclass
class LoadOptions:
    dim: int
    users: int
    incremental_index: bool
    build_memory: str
    store_id: str | None = None
    keep: bool = False
    hnsw_index: bool = True
    clusters: int = 0
    partitions: int | None = None


def chunk_count(url: str, store_id: str) -> int | None:
    """How many chunks the store ``store_id`` holds, or ``None`` when it does not exist."""
    with psycopg.connect(url, autocommit=True) as conn:
        table = sql.Identifier(f"{store_id}_record_chunks")
        found = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                             [table.as_string(conn)]).fetchone()
        if not found or not found[0]:
            return None
        row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table)).fetchone()
    return int(row[0]) if row else 0


def load_corpus(url: str, size: int, words: list[str], options: LoadOptions) -> Corpus:
    """A store holding ``size`` memories, analysed, opened once per search strategy.

    With ``options.keep`` and a store of that id and size already there, it is reused (and
    upgraded to the SDK's schema version: ``CREATE_IF_NECESSARY``).
    """
    store_id = options.store_id or f"bs{os.getpid() % 10000}_{next(_ids)}"
    reuse = options.keep and chunk_count(url, store_id) == size
    if options.keep and not reuse and chunk_count(url, store_id) is not None:
        raise SystemExit(f"store {store_id} exists with another size; drop it or pick another "
                         "--store-id")
    if reuse and not options.hnsw_index:
        add_hnsw_placeholder(url, store_id)  # else opening the store below builds the index
    start = time.perf_counter()
    creator = OracleDBMemoryStore(None, url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                  vector_dim=options.dim, memory_store_id=store_id,
                                  search_strategy=SearchStrategy.VECTOR)
    corpus = Corpus(size, store_id, reused=reuse)
    corpus.stores["creator"] = creator
    try:
        if reuse:
            print(f"  {size:,} chunks: reusing store {store_id} (schema version "
                  f"{creator.schema_version}, opened in {time.perf_counter() - start:.1f} s)",
                  flush=True)
            if options.hnsw_index and not has_hnsw_index(url, corpus):
                build_hnsw_index(url, corpus, options.build_memory)
            vacuum_analyze(url, corpus)
        else:
            fill_corpus(corpus, url, words, options)
        if options.partitions:
            repartition(url, corpus, options.partitions, options.build_memory)
        count, sharing = partition_sharing(url, corpus)
        print(f"  {size:,} chunks: {count} partitions, at most {sharing} users in one",
              flush=True)
        corpus.has_hnsw = has_hnsw_index(url, corpus)
        if not corpus.has_hnsw:
            print(f"  {size:,} chunks: no HNSW index (--no-hnsw-index): the hnsw ways are "
                  "skipped", flush=True)
        open_modes(corpus, url, options.dim)
    except BaseException:
        drop_corpus(corpus, keep=options.keep)
        raise
    return corpus


def fill_corpus(corpus: Corpus, url: str, words: list[str], options: LoadOptions) -> None:
    size, creator, dim = corpus.size, corpus.stores["creator"], options.dim
    names = creator._names
    if not options.incremental_index:  # built once after the load (below): much faster
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP INDEX {}").format(
                pg_names.index_qualified(names, "record_chunks_hnsw_ix")))
    rng = np.random.default_rng(SEED + size)
    weights = 1.0 / np.arange(1, VOCAB_SIZE + 1)
    weights /= weights.sum()
    vocab = np.asarray(words)
    start = time.perf_counter()
    for offset in range(0, size, BATCH):
        count = min(BATCH, size - offset)
        picks = rng.choice(VOCAB_SIZE, (count, WORDS_PER_TEXT), p=weights)
        contents = [" ".join(vocab[row]) for row in picks]
        users = [f"user-{n % options.users:03d}" for n in range(offset, offset + count)]
        creator.add(contents, record_type="memory", user_ids=users,
                    embeddings=list(unit_vectors(rng, count, dim, options.clusters)))
        done = offset + count
        print(f"\r  {size:,} chunks: store.add {done:,} "
              f"({done / (time.perf_counter() - start):,.0f} rec/s)", end="", flush=True)
    corpus.load_seconds = time.perf_counter() - start
    print(f" in {corpus.load_seconds:.1f} s", flush=True)
    if not options.incremental_index and options.hnsw_index:
        build_hnsw_index(url, corpus, options.build_memory)
    elif not options.hnsw_index:
        add_hnsw_placeholder(url, corpus.store_id)
    vacuum_analyze(url, corpus)


def add_hnsw_placeholder(url: str, store_id: str) -> None:
    """An empty HNSW index of the SDK's name (``WHERE false``: no query can use it), so that
    opening the store with ``CREATE_IF_NECESSARY`` does not build the real one."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops) "
            "WHERE false").format(sql.Identifier(f"{store_id}_record_chunks_hnsw_ix"),
                                  sql.Identifier(f"{store_id}_record_chunks")))


def build_hnsw_index(url: str, corpus: Corpus, build_memory: str) -> None:
    """The SDK's HNSW index, on a store that has none but perhaps the placeholder a
    ``--no-hnsw-index`` load left (dropped first: the SDK's ``CREATE INDEX IF NOT EXISTS``
    would keep it, as it has the same name)."""
    start = time.perf_counter()
    names = corpus.stores["creator"]._names
    with psycopg.connect(url) as conn:
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(
            pg_names.index_qualified(names, "record_chunks_hnsw_ix")))
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(build_memory)))
        add_vector_index(conn, names)  # the SDK's own definition
        conn.commit()
    corpus.index_seconds = time.perf_counter() - start
    print(f"  {corpus.size:,} chunks: HNSW index built in {corpus.index_seconds:.1f} s",
          flush=True)


def repartition(url: str, corpus: Corpus, partitions: int, build_memory: str) -> None:
    """Give the store's chunks ``partitions`` hash partitions (``ddl.repartition_chunks``, indexes
    built again)."""
    start = time.perf_counter()
    with psycopg.connect(url) as conn:
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(build_memory)))
        repartition_chunks(conn, corpus.stores["creator"]._names, partitions)
        conn.commit()
    print(f"  {corpus.size:,} chunks: moved to {partitions} partitions in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    vacuum_analyze(url, corpus)


def partition_sharing(url: str, corpus: Corpus) -> tuple[int, int]:
    """The store's chunk partition count and the most users any one partition holds (a user's
    HNSW scan steps over the chunks of the others)."""
    names = corpus.stores["creator"]._names
    with psycopg.connect(url) as conn:
        row = conn.execute(sql.SQL(
            "SELECT max(n) FROM (SELECT count(DISTINCT user_id) AS n FROM {} GROUP BY tableoid) s"
        ).format(pg_names.table(names, "record_chunks"))).fetchone()
        return partition_count(conn, names), int(row[0]) if row and row[0] is not None else 0


def has_hnsw_index(url: str, corpus: Corpus) -> bool:
    names = corpus.stores["creator"]._names
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = "
                           "to_regclass(%s) AND indpred IS NULL)", [
            pg_names.index_qualified(names, "record_chunks_hnsw_ix").as_string(conn)]).fetchone()
    return bool(row and row[0])


def vacuum_analyze(url: str, corpus: Corpus) -> None:
    names = corpus.stores["creator"]._names
    with psycopg.connect(url, autocommit=True) as conn:
        for logical in ("memory", "record_chunks", "message", "actor_profile"):
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(pg_names.table(names, logical)))


def open_modes(corpus: Corpus, url: str, dim: int) -> None:
    embedder = TextSeededEmbedder(dim)
    for mode in MODES:
        corpus.stores[mode] = OracleDBMemoryStore(
            embedder if mode == "hybrid" else None, url,
            schema_policy=SchemaPolicy.REQUIRE_EXISTING, memory_store_id=corpus.store_id,
            search_strategy=STRATEGIES[mode])


def drop_corpus(corpus: Corpus, keep: bool = False) -> None:
    store = corpus.stores["creator"]
    if not keep:
        with store._engine.session(store._names) as session:  # benchmark cleanup, not public API
            session.drop_store()
    for store in corpus.stores.values():
        store.close()


# --- one query, three ways ----------------------------------------------------------------------
def store_search(corpus: Corpus, mode: str, query: Query) -> list[tuple[Any, float]]:
    store = corpus.stores[mode]
    if mode == "vector":
        return store.search(None, K, query_vector=query.vector, user_id=query.user_id,
                            exact_user_match=True)
    return store.search(query.text, K, user_id=query.user_id, exact_user_match=True)


def engine_plan(corpus: Corpus, mode: str, query: Query, dim: int) -> SearchPlan:
    """The engine plan ``store.search`` builds for this query (one query chunk)."""
    arguments = check_search_arguments(
        STRATEGIES[mode], dim, query=None if mode == "vector" else query.text, k=K,
        query_vector=query.vector if mode == "vector" else None, thread_id=None,
        user_id=query.user_id, agent_id=None, exact_user_match=True, exact_agent_match=False,
        exact_thread_match=False, record_types=None, metadata_filter=None,
        include_invalid_results=True, num_hops=0, max_linked_results=100)
    plan = base_plan(arguments, mode)
    plan.text = None if mode == "vector" else query.text
    if mode == "vector":
        plan.vector = query.vector
    elif mode == "hybrid":
        plan.vector = corpus.stores["hybrid"]._embedder.embed([query.text])[0]  # type: ignore[union-attr]
    return plan


def _limited(arms: list[sql.Composable], budget: int, params: list[Any]) -> sql.Composed:
    """``pg_search._limited``, whose signature lost ``params`` when the search loop moved to the
    core (this bench also measures the SDK before that, for before/after figures)."""
    limited: Any = pg_search._limited
    try:
        return cast(sql.Composed, limited(arms, budget))
    except TypeError:
        return cast(sql.Composed, limited(arms, budget, params))


def _best_ids(rows: list[tuple[str, str, float]], k: int) -> list[str]:
    """The ``k`` best distinct record ids of candidate rows (the engine's dedupe)."""
    best: dict[tuple[str, str], float] = {}
    for record_type, record_id, distance in rows:
        key = (record_type, record_id)
        if key not in best or distance < best[key]:
            best[key] = distance
    ordered = sorted(best.items(), key=lambda item: (item[1], item[0][1]))
    return [record_id for (_, record_id), _ in ordered[:k]]


def candidate_sql(corpus: Corpus, plan: SearchPlan, exact: bool, scoped: bool = False
                  ) -> tuple[sql.Composed, list[Any]]:
    """The store's candidate statement for ``plan`` (the first, usually only, round)."""
    names = corpus.stores["creator"]._names
    budget = max(plan.k * 4, 40)
    params: list[Any] = []
    if plan.mode == "vector":
        statement = _limited(
            pg_search._vector_arms(names, plan, budget, exact, params, scoped), budget, params)
    elif plan.mode == "keyword":
        statement = _limited(pg_search._keyword_arms(names, plan, budget, params), budget, params)
    else:
        statement = pg_search._hybrid(names, plan, budget, exact, params, scoped)
    return statement, params


SEQUENTIAL = ("SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; "
              "SET LOCAL enable_indexonlyscan = off")
THROUGH_HNSW = ("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; "
                "SET LOCAL enable_sort = off")
"""Steers the ``hnsw`` ways onto the HNSW index even where the planner would rather scan the
user's chunks (a selective user filter): the filtered HNSW scan at its hardest. They search the
memory arm only (the corpus has no other records)."""
WAYS = ("exact", "planner", "scoped", "hnsw")
"""Raw-SQL ways of running a plan: ``exact`` = the exact statement (exact order, parents joined
before the sort), sequential scans only: the baseline; ``planner`` = the same statement with the
planner's choice of index (no HNSW can serve the order); ``scoped`` = the store's exact scoped
statement (what it runs when the user filter keeps few chunks; vector mode only); ``hnsw`` = the
approximate statement the store runs when the user filter keeps many chunks (vector mode only),
forced onto the HNSW index (:data:`THROUGH_HNSW`), ``hnsw-efN`` the same with
``hnsw.ef_search = N``; ``store-exact`` and ``store-hnsw`` = the
statement the store runs here (for EXPLAIN)."""
VECTOR_ONLY_WAYS = ("scoped", "hnsw")


def run_sql(conn: psycopg.Connection[Any], corpus: Corpus, plan: SearchPlan, way: str,
            explain: bool = False) -> list[Any]:
    """Top-k record ids of ``plan`` run ``way`` in one transaction (or its EXPLAIN ANALYZE)."""
    budget = max(plan.k * 4, 40)
    exact = way in ("exact", "planner", "scoped", "store-exact")
    if way.startswith("hnsw"):  # the corpus holds memories only: the other arms find nothing,
        # and forced onto the HNSW index they would scan it to its limits to show it
        plan = dataclasses.replace(plan, record_types=tuple(
            t for t in plan.record_types if t in MEMORY_TYPES))
    statement, params = candidate_sql(corpus, plan, exact,
                                      scoped=way in ("scoped", "store-exact"))
    if explain:
        statement = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ") + statement
    with conn.transaction():
        if way == "exact":
            conn.execute(SEQUENTIAL)
        else:
            pg_search._configure(conn, budget)
        if way.startswith("hnsw"):
            conn.execute(THROUGH_HNSW)
        if way.startswith("hnsw-ef"):
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)",
                         [way.removeprefix("hnsw-ef")])
        rows = conn.execute(statement, params, prepare=False).fetchall()  # planned per run
    if explain:
        return [_VECTOR_LITERAL.sub("'[...]'::vector", r[0]) for r in rows]
    if plan.mode == "hybrid":  # ids are not compared in hybrid mode: only the time counts
        return [r[-2] for r in rows[:plan.k]]
    return _best_ids([(r[0], r[1], float(r[2])) for r in rows], plan.k)


def store_way(conn: psycopg.Connection[Any], corpus: Corpus, plan: SearchPlan) -> str:
    """How the store runs ``plan``'s first round: ``store-exact`` or ``store-hnsw``."""
    if plan.mode == "keyword":
        return "store-exact"
    with conn.transaction():
        few = pg_search._few_scoped_chunks(conn, corpus.stores["creator"]._names, plan,
                                           max(plan.k * 4, 40))
    return "store-exact" if few else "store-hnsw"


# --- plans --------------------------------------------------------------------------------------
_VECTOR_LITERAL = re.compile(r"'\[[^']*\]'::vector")
_SCAN = re.compile(r"(Seq Scan|Index Scan|Index Only Scan|Bitmap Index Scan|Bitmap Heap Scan)"
                   r"( using \S+)? on (\S+)")


def scan_summary(lines: list[str], store_id: str) -> str:
    """The scans a plan executed (``never executed`` ones left out), and its execution time."""
    found: dict[str, int] = {}
    for line in lines:
        match = _SCAN.search(line)
        if match is None or "never executed" in line:
            continue
        kind, index, table = match.groups()
        label = (kind + (index or "") + " on " + table).replace(store_id + "_", "")
        found[label] = found.get(label, 0) + 1
    parts = [f"{label} x{n}" if n > 1 else label for label, n in found.items()]
    time_line = next((ln.strip() for ln in lines if ln.startswith("Execution Time")), "")
    return ", ".join(parts) + (f"  [{time_line}]" if time_line else "")


# --- measurement --------------------------------------------------------------------------------
@dataclass
class Result:
    size: int
    mode: str
    store_way: str
    store_ms: list[float] = field(default_factory=list)
    way_ms: dict[str, list[float]] = field(default_factory=dict)
    recall: dict[str, float] = field(default_factory=dict)
    hits: float = 0.0
    users: int = USERS
    db_us: float | None = None
    """Database server CPU per store search, in microseconds (None: server not visible)."""


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


@contextmanager
def raw_connection(url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.commit()
        yield conn


def measure(url: str, corpus: Corpus, mode: str, queries: list[Query], warmup: int,
            exact_queries: int, dim: int, show_plans: bool, hnsw_efs: Sequence[int] = ()
            ) -> Result:
    """Time ``store.search`` and the raw-SQL ways on every query, rotating their order."""
    ways = [w for w in WAYS if w not in VECTOR_ONLY_WAYS or mode == "vector"]
    if mode == "vector":
        ways += [f"hnsw-ef{ef}" for ef in hnsw_efs]
    if not corpus.has_hnsw:
        ways = [w for w in ways if not w.startswith("hnsw")]
    with raw_connection(url) as conn:
        plans = [engine_plan(corpus, mode, q, dim) for q in queries]
        result = Result(corpus.size, mode, store_way(conn, corpus, plans[0]))
        result.way_ms = {w: [] for w in ways}
        for n, (query, plan) in enumerate(zip(queries[:warmup], plans[:warmup], strict=True)):
            store_search(corpus, mode, query)
            for way in ways:
                if way != "exact" or n < 2:
                    run_sql(conn, corpus, plan, way)
        for way in ["store", *[w for w in ways if not w.startswith("hnsw-ef")]]:
            lines = run_sql(conn, corpus, plans[0], result.store_way if way == "store" else way,
                            explain=True)
            print(f"    {mode:<7} {way:<7} plan: {scan_summary(lines, corpus.store_id)}")
            if show_plans and way == "store":
                print("\n".join("        " + ln for ln in lines))
        overlaps: dict[str, list[float]] = {
            w: [] for w in ["store", *ways] if w not in ("exact", "planner")}
        hit_counts = []
        timed = len(queries) - warmup
        stride = max(1, -(-timed // exact_queries))  # the slow baseline runs on every stride-th
        for n, (query, plan) in enumerate(zip(queries[warmup:], plans[warmup:], strict=True)):
            order = ["store", *[w for w in ways if w != "exact" or n % stride == 0]]
            order = order[n % len(order):] + order[:n % len(order)]
            ids: dict[str, list[str]] = {}
            for way in order:
                start = time.perf_counter()
                if way == "store":
                    found = store_search(corpus, mode, query)
                    result.store_ms.append((time.perf_counter() - start) * 1000)
                    ids[way] = [record.id for record, _ in found]
                else:
                    ids[way] = run_sql(conn, corpus, plan, way)
                    result.way_ms[way].append((time.perf_counter() - start) * 1000)
            hit_counts.append(len(ids["store"]))
            if mode == "vector" and ids["planner"]:
                truth = set(ids["planner"])  # exact too, and run on every query
                for way in overlaps:
                    overlaps[way].append(len(truth & set(ids[way])) / len(truth))
        result.hits = statistics.mean(hit_counts)
        result.recall = {way: statistics.mean(v) for way, v in overlaps.items() if v}
        result.db_us = store_db_us(conn, corpus, mode, queries[warmup:])
    return result


def store_db_us(conn: psycopg.Connection[Any], corpus: Corpus, mode: str,
                queries: list[Query]) -> float | None:
    """Database server CPU (microseconds) per ``store.search`` of ``queries``, run alone."""
    postmaster = server_pid(conn)
    before = tree_cpu(postmaster)
    for query in queries:
        store_search(corpus, mode, query)
    spent = cpu_since(before, tree_cpu(postmaster))
    return None if spent is None else spent * 1e6 / len(queries)


def keyword_match_fraction(url: str, corpus: Corpus, queries: list[Query]) -> float:
    """Mean fraction of a user's rows that contain at least one query word."""
    table = pg_names.table(corpus.stores["creator"]._names, "record_chunks")
    fractions = []
    with psycopg.connect(url) as conn:
        for query in queries[:20]:
            row = conn.execute(sql.SQL(
                "SELECT avg((search_tsv @@ to_tsquery('english', %s))::int) FROM {} "
                "WHERE user_id = %s").format(table),
                [" | ".join(query.text.split()), query.user_id]).fetchone()
            fractions.append(float(row[0]) if row and row[0] is not None else 0.0)
    return statistics.mean(fractions)


def server_facts(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT current_setting('server_version'), current_setting('shared_buffers'), "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector')").fetchone()
    assert row is not None
    return f"PostgreSQL {row[0]}, pgvector {row[2]}, shared_buffers {row[1]}"


# --- report -------------------------------------------------------------------------------------
def print_table(results: list[Result]) -> None:
    print()
    print("store   = store.search(..., user_id=u, exact_user_match=True), whole call, k=10")
    print("exact   = the store's exact SQL, sequential scans only (the baseline)")
    print("planner = the same exact SQL, planner's choice of index (what the store ran for "
          "a user filter before its scoped exact path)")
    print("speedup = exact / store at the same percentile; ms are milliseconds")
    header = (f"{'chunks':>8} {'mode':<8} {'store runs':<10} {'p50':>7} {'p95':>7} "
              f"{'exact p50':>9} {'exact p95':>9} {'speedup p50':>11} {'speedup p95':>11} "
              f"{'planner p50':>11} {'planner p95':>11} {'hits':>5}")
    print(header)
    print("-" * len(header))
    for r in results:
        p50, p95 = pct(r.store_ms, 50), pct(r.store_ms, 95)
        e50, e95 = pct(r.way_ms["exact"], 50), pct(r.way_ms["exact"], 95)
        runs = "exact" if r.store_way == "store-exact" else "HNSW"
        print(f"{r.size:>8,} {r.mode:<8} {runs:<10} {p50:>7.2f} {p95:>7.2f} {e50:>9.2f} "
              f"{e95:>9.2f} {e50 / p50:>10.1f}x {e95 / p95:>10.1f}x "
              f"{pct(r.way_ms['planner'], 50):>11.2f} {pct(r.way_ms['planner'], 95):>11.2f} "
              f"{r.hits:>5.1f}")
    print("-" * len(header))
    vectors = [r for r in results if r.mode == "vector"]
    if vectors:
        print()
        print("vector recall@10 against the exact top 10, and the HNSW statement on its own "
              "(what the store runs when a user filter keeps many chunks; raw SQL, no record "
              "fetch):")
        for r in vectors:
            hnsw = r.way_ms.get("hnsw", [])
            line = f"  {r.size:>8,} chunks: store recall {r.recall.get('store', 0):.3f}"
            if hnsw:
                line += (f"; HNSW recall {r.recall.get('hnsw', 0):.3f}, p50 {pct(hnsw, 50):.2f} "
                         f"ms, p95 {pct(hnsw, 95):.2f} ms")
            print(line)
    print()
    by_key = {(r.size, r.mode): r for r in results}
    for size in sorted({r.size for r in results}):
        vector, hybrid = by_key.get((size, "vector")), by_key.get((size, "hybrid"))
        if vector is None:
            continue
        v95 = pct(vector.store_ms, 95)
        speedup = pct(vector.way_ms["exact"], 95) / v95
        line = (f"goals at {size:,} chunks: vector p95 {v95:.2f} ms "
                f"({'meets' if v95 < 10 else 'misses'} < 10 ms), {speedup:.1f}x the exact scan "
                f"({'meets' if speedup >= 10 else 'misses'} >= 10x)")
        if hybrid is not None:
            ratio = pct(hybrid.store_ms, 95) / v95
            line += (f"; hybrid p95 {ratio:.2f}x vector p95 "
                     f"({'meets' if ratio < 3 else 'misses'} < 3x)")
        print(line)


def print_compact(results: list[Result]) -> None:
    """One line per mode (and per raw vector statement): p50, p95, recall@10."""
    print()
    print("compact (ms; recall@10 against the exact top 10; vector/scoped-sql and "
          "vector/hnsw-sql: the raw statements, no record fetch):")
    header = (f"{'chunks':>9} {'users':>5}  {'mode':<22} {'p50':>7} {'p95':>7} {'recall@10':>9} "
              f"{'db us':>7}")
    print(header)
    print("-" * len(header))
    for r in results:
        recall = f"{r.recall['store']:.3f}" if "store" in r.recall else "-"
        runs = "exact" if r.store_way == "store-exact" else "HNSW"
        db_us = "-" if r.db_us is None else f"{r.db_us:.0f}"
        print(f"{r.size:>9,} {r.users:>5}  {r.mode + ' (store, ' + runs + ')':<22} "
              f"{pct(r.store_ms, 50):>7.2f} {pct(r.store_ms, 95):>7.2f} {recall:>9} "
              f"{db_us:>7}")
        for way, times in r.way_ms.items():
            if way in ("exact", "planner") or not times:
                continue
            print(f"{r.size:>9,} {r.users:>5}  {r.mode + '/' + way + '-sql':<22} "
                  f"{pct(times, 50):>7.2f} {pct(times, 95):>7.2f} "
                  f"{r.recall.get(way, float('nan')):>9.3f}")
    print("-" * len(header))


def reproduce_command(args: argparse.Namespace) -> str:
    parts = [".venv/bin/python bench/search.py", f"--sizes {args.sizes}", f"--users {args.users}",
             f"--queries {args.queries}", f"--exact-queries {args.exact_queries}",
             f"--dim {args.dim}"]
    if args.warmup_given:
        parts.append(f"--warmup {args.warmup}")
    if args.hnsw_ef:
        parts.append(f"--hnsw-ef {args.hnsw_ef}")
    if args.clusters:
        parts.append(f"--clusters {args.clusters}")
    if args.modes != ",".join(MODES):
        parts.append(f"--modes {args.modes}")
    if args.data_dir:
        parts.append(f"--data-dir {args.data_dir}")
    if args.store_id:
        parts.append(f"--store-id {args.store_id}")
    if args.keep:
        parts.append("--keep")
    if args.shared_buffers:
        parts.append(f"--shared-buffers {args.shared_buffers}")
    if args.no_hnsw_index:
        parts.append("--no-hnsw-index")
    if args.partitions:
        parts.append(f"--partitions {args.partitions}")
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000",
                        help="comma-separated chunk counts (default 10000,100000)")
    parser.add_argument("--users", type=int, default=USERS,
                        help=f"users the chunks are spread over (default {USERS})")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per mode")
    parser.add_argument("--warmup", type=int,
                        help="untimed queries per mode first (default: one per user, at most "
                             "100)")
    parser.add_argument("--exact-queries", type=int, default=40,
                        help="timed queries per mode that also run the (slow) sequential exact "
                             "baseline, spread evenly over the run (default 40)")
    parser.add_argument("--dim", type=int, default=384, help="embedding dimension")
    parser.add_argument("--hnsw-ef", default="",
                        help="comma-separated hnsw.ef_search values: also time the HNSW "
                             "statement at each, with its recall (vector mode)")
    parser.add_argument("--clusters", type=int, default=0,
                        help="stored and query vectors near this many fixed random centroids "
                             "(as embeddings of related texts are) instead of uniformly random")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated search modes to measure (default "
                             f"{','.join(MODES)})")
    add_server_arguments(parser)
    parser.add_argument("--store-id", help="memory store id (with several sizes, the size is "
                                           "appended)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the loaded store, and reuse one of the same id and size")
    parser.add_argument("--explain", action="store_true", help="print the store's full plans")
    parser.add_argument("--incremental-index", action="store_true",
                        help="keep the HNSW index while loading (every insert maintains it; "
                             "much slower) instead of building it once after the load")
    parser.add_argument("--shared-buffers",
                        help="diagnostic, embedded server only: restart it with this "
                             "shared_buffers (e.g. 1GB) instead of its default")
    parser.add_argument("--no-hnsw-index", action="store_true",
                        help="load without the HNSW index (a 1M-chunk build takes most of an "
                             "hour on 2 busy cores; the scoped exact path does not use it): "
                             "the hnsw ways are skipped")
    parser.add_argument("--partitions", type=int,
                        help="move the store's chunks to this many hash partitions by owner "
                             "after the load (ddl.repartition_chunks; default: the SDK's, "
                             "CHUNK_PARTITIONS)")
    parser.add_argument("--build-memory", default="1GB",
                        help="maintenance_work_mem for the HNSW build (default 1GB)")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        hnsw_efs = [int(s) for s in args.hnsw_ef.split(",") if s.strip()]
    except ValueError:
        parser.error("--sizes and --hnsw-ef must be comma-separated integers")
    modes = [m for m in args.modes.split(",") if m]
    if not modes or set(modes) - set(MODES):
        parser.error(f"--modes takes a comma-separated list of {', '.join(MODES)}")
    args.warmup_given = args.warmup is not None
    if args.warmup is None:
        args.warmup = min(args.users, 100)
    if (not sizes or args.users < 1 or min(sizes) < args.users or args.queries < 1
            or args.warmup < 0 or args.dim < 1 or args.exact_queries < 1 or args.clusters < 0
            or any(ef < 1 for ef in hnsw_efs)):
        parser.error("sizes must be at least --users; --users, --queries, --exact-queries, "
                     "--dim and --hnsw-ef positive")
    if args.shared_buffers and args.url:
        parser.error("--shared-buffers applies to the embedded server only (not with --url)")
    began = time.perf_counter()
    with bench_server(args.url, args.data_dir, args.shared_buffers) as url:
        words = vocabulary()
        queries = make_queries(args.warmup + args.queries, args.dim, words, args.users,
                               args.clusters)
        shape = f"near {args.clusters} centroids" if args.clusters else "random"
        print(f"{args.dim}-d {shape} unit embeddings, {args.users} users "
              f"({100 / args.users:g}% of rows each), k={K}, {args.queries} timed queries per "
              f"mode after {args.warmup} warm-up, {os.cpu_count()} CPUs; {server_facts(url)}",
              flush=True)
        results: list[Result] = []
        for size in sizes:
            store_id = args.store_id
            if store_id and len(sizes) > 1:
                store_id = f"{store_id}_{size}"
            options = LoadOptions(args.dim, args.users, args.incremental_index,
                                  args.build_memory, store_id, args.keep,
                                  not args.no_hnsw_index, args.clusters, args.partitions)
            corpus = load_corpus(url, size, words, options)
            try:
                print(f"  {size:,} chunks: a keyword query matches "
                      f"{keyword_match_fraction(url, corpus, queries):.1%} of its user's rows",
                      flush=True)
                for mode in modes:
                    result = measure(url, corpus, mode, queries, args.warmup,
                                     args.exact_queries, args.dim, args.explain, hnsw_efs)
                    result.users = args.users
                    results.append(result)
            finally:
                drop_corpus(corpus, keep=args.keep)
        print_table(results)
        print_compact(results)
        print(f"\ntotal run time {time.perf_counter() - began:.0f} s")
        print(f"reproduce: {reproduce_command(args)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
