"""Write throughput of ``OracleDBMemoryStore.add`` next to a raw binary ``COPY`` of the same rows.

Each round adds ``--records`` memories (short text, ``user_id`` spread over 100 users, one
precomputed ``--dim``-dimensional embedding each: random, seeded, float32, L2-normalised) with
one ``store.add(...)`` call into a fresh store, and, alternately, writes the same rows with
psycopg's binary ``COPY`` (pgvector registered) into the ``<id>_memory`` and
``<id>_record_chunks`` tables of another fresh store in one transaction. Both sides therefore
write into identical tables with identical indexes (primary keys, lookup indexes, HNSW on the
embeddings, the generated ``tsvector`` column and its GIN index) and commit once.

Timed: the store side is the ``store.add`` call (argument checks, planning, SQL, commit); the
COPY side is building the rows from the same inputs (ids generated as the store does), the two
COPYs and the commit. Store creation and cleanup are not timed. Each round runs both sides
back to back, and the side that goes first alternates, so neither profits from a warmer server;
on a busy machine the per-round ratio (store rate over the COPY rate of the same round) is the
steadier figure, and its median is reported next to the ratio of the median rates. Client CPU
is this process's CPU time during the timed part.

Goal (issue 9): the store reaches at least 80% of raw COPY throughput. ``--profile N`` runs one
more ``store.add`` under ``cProfile`` and prints its N most expensive functions.

Usage::

    .venv/bin/python bench/store_write.py [--records 10000] [--dim 384] [--rounds 5] [--no-hnsw]
                                          [--batch-size N] [--profile N]
                                          [--url URL | --data-dir DIR]

Without ``--url`` the embedded PostgreSQL is started (in a temporary directory unless
``--data-dir`` names one) and stopped at the end.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import itertools
import os
import pstats
import resource
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import psycopg
from _embedded import add_server_arguments, bench_server
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from pgvector.psycopg import register_vector
from psycopg import sql

USERS = 100
SEED = 20240611
_ids = itertools.count(1)

MEMORY_COLUMNS = ("id", "record_type", "thread_id", "user_id", "agent_id", "content", "metadata",
                  "event_ts", "expires_at", "status")
MEMORY_TYPES = ("text", "text", "text", "text", "text", "text", "jsonb", "timestamptz",
                "timestamptz", "text")
CHUNK_COLUMNS = ("record_type", "record_id", "chunk_no", "chunk_text", "thread_id", "user_id",
                 "agent_id", "embedding")
CHUNK_TYPES = ("text", "text", "int4", "text", "text", "text", "text", "vector")


@dataclass
class Workload:
    """The inputs both sides write."""

    contents: list[str]
    user_ids: list[str]
    embeddings: list[npt.NDArray[np.float32]]
    store_options: dict[str, int] = field(default_factory=dict)
    """Extra options of ``store.add`` (``batch_size``)."""


def make_workload(records: int, dim: int) -> Workload:
    rng = np.random.default_rng(SEED)
    matrix = rng.standard_normal((records, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    topics = ("coffee", "hiking", "python", "jazz", "tennis", "sushi", "chess", "rust")
    contents = [f"user likes {topics[n % len(topics)]} (note {n})" for n in range(records)]
    user_ids = [f"user-{n % USERS:03d}" for n in range(records)]
    return Workload(contents, user_ids, list(matrix))


def new_store(url: str, dim: int, hnsw: bool) -> OracleDBMemoryStore:
    store_id = f"bw{os.getpid() % 10000}_{next(_ids)}"
    store = OracleDBMemoryStore(None, url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                vector_dim=dim, memory_store_id=store_id)
    if not hnsw:
        index = store._names.object_name("record_chunks_hnsw_ix")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
    return store


@contextmanager
def fresh_store(url: str, dim: int, hnsw: bool) -> Iterator[OracleDBMemoryStore]:
    """A new store, dropped (tables and registry row) and closed afterwards."""
    store = new_store(url, dim, hnsw)
    try:
        yield store
    finally:
        with store._engine.session(store._names) as session:  # benchmark cleanup, not public API
            session.drop_store()
        store.close()


def settle(url: str) -> None:
    """Flush dirty pages so a round does not pay for the previous one's writes."""
    gc.collect()
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
    except psycopg.Error:
        pass  # not a superuser on an external server: skip


def count_rows(url: str, store: OracleDBMemoryStore) -> tuple[int, int]:
    names = store._names
    with psycopg.connect(url) as conn:
        counts = []
        for logical in ("memory", "record_chunks"):
            row = conn.execute(
                sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(names.table(logical)))
            ).fetchone()
            counts.append(int(row[0]) if row else 0)
    return counts[0], counts[1]


def run_store(url: str, work: Workload, dim: int, hnsw: bool) -> tuple[float, float]:
    """Wall and client CPU seconds for one ``store.add`` of the whole workload."""
    with fresh_store(url, dim, hnsw) as store:
        settle(url)
        start, cpu = time.perf_counter(), time.process_time()
        ids = store.add(work.contents, record_type="memory", user_ids=work.user_ids,
                        embeddings=work.embeddings, **work.store_options)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        assert len(ids) == len(work.contents)
        memories, chunks = count_rows(url, store)
        assert memories == chunks == len(work.contents), (memories, chunks)
    return elapsed, cpu


def run_copy(url: str, work: Workload, dim: int, hnsw: bool) -> tuple[float, float]:
    """Wall and client CPU seconds for a binary COPY of the same rows (identical tables)."""
    with fresh_store(url, dim, hnsw) as store:
        names = store._names
        memory_table = sql.Identifier(names.table("memory"))
        chunk_table = sql.Identifier(names.table("record_chunks"))
        copy_memory = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
            memory_table, sql.SQL(", ").join(map(sql.Identifier, MEMORY_COLUMNS)))
        copy_chunks = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
            chunk_table, sql.SQL(", ").join(map(sql.Identifier, CHUNK_COLUMNS)))
        with psycopg.connect(url) as conn:
            register_vector(conn)
            conn.commit()
            settle(url)
            start, cpu = time.perf_counter(), time.process_time()
            ids = [str(uuid.uuid4()) for _ in work.contents]
            with conn.cursor() as cur:
                with cur.copy(copy_memory) as copy:
                    copy.set_types(list(MEMORY_TYPES))
                    for record_id, content, user_id in zip(ids, work.contents, work.user_ids,
                                                           strict=True):
                        copy.write_row((record_id, "memory", None, user_id, None, content, None,
                                        None, None, "valid"))
                with cur.copy(copy_chunks) as copy:
                    copy.set_types(list(CHUNK_TYPES))
                    for record_id, content, user_id, vector in zip(
                            ids, work.contents, work.user_ids, work.embeddings, strict=True):
                        copy.write_row(("memory", record_id, 0, content, None, user_id, None,
                                        vector))
            conn.commit()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        memories, chunks = count_rows(url, store)
        assert memories == chunks == len(work.contents), (memories, chunks)
    return elapsed, cpu


def peak_rss_mib() -> float:
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return kib / 1024 if sys.platform != "darwin" else kib / 1024 / 1024


GOAL = 0.8
STORE, COPY = "store.add", "COPY (binary)"


def profile_store(url: str, work: Workload, dim: int, hnsw: bool, top: int) -> None:
    """One more ``store.add`` under ``cProfile``: its ``top`` functions by own time."""
    with fresh_store(url, dim, hnsw) as store:
        settle(url)
        profiler = cProfile.Profile()
        profiler.enable()
        store.add(work.contents, record_type="memory", user_ids=work.user_ids,
                  embeddings=work.embeddings, **work.store_options)
        profiler.disable()
    print(f"\nprofile of one store.add (own time, top {top}):")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000, help="memories per round")
    parser.add_argument("--dim", type=int, default=384, help="embedding dimension")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (each runs both sides)")
    add_server_arguments(parser)
    parser.add_argument("--no-hnsw", action="store_true",
                        help="diagnostic: drop the HNSW index on both sides, so the figures show "
                             "the client and protocol path instead of vector index maintenance")
    parser.add_argument("--batch-size", type=int,
                        help="store.add's batch_size (default: the store's, 256); at least "
                             "--records, the store writes with INSERT ... unnest, not COPY")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="after the rounds, profile one store.add and print its N most "
                             "expensive functions")
    args = parser.parse_args(argv)
    if args.records < 1 or args.dim < 1 or args.rounds < 1 or args.profile < 0 or (
            args.batch_size is not None and args.batch_size < 1):
        parser.error("--records, --dim, --rounds and --batch-size must be positive, --profile "
                     "not negative")

    with bench_server(args.url, args.data_dir) as url:
        work = make_workload(args.records, args.dim)
        if args.batch_size is not None:
            work.store_options["batch_size"] = args.batch_size
        path = "INSERT" if args.records <= (args.batch_size or 256) else "COPY"
        print(f"{args.records} memories, {args.dim}-d float32 embeddings, {USERS} users, "
              f"{args.rounds} rounds, {os.cpu_count()} CPUs, HNSW index "
              f"{'dropped' if args.no_hnsw else 'present'}, store writes with {path}",
              flush=True)
        times: dict[str, list[float]] = {STORE: [], COPY: []}
        cpu: dict[str, list[float]] = {STORE: [], COPY: []}
        sides = [(STORE, run_store), (COPY, run_copy)]
        for round_no in range(args.rounds):
            order = sides if round_no % 2 == 0 else list(reversed(sides))
            for label, run in order:
                seconds, cpu_seconds = run(url, work, args.dim, not args.no_hnsw)
                times[label].append(seconds)
                cpu[label].append(cpu_seconds)
                print(f"  round {round_no + 1}: {label:<14} {seconds:7.3f} s  "
                      f"{args.records / seconds:10,.0f} rec/s  (client CPU {cpu_seconds:.3f} s)",
                      flush=True)
            print(f"  round {round_no + 1}: store / COPY "
                  f"{times[COPY][-1] / times[STORE][-1]:.1%}", flush=True)
        print_table(args.records, times, cpu)
        if args.profile:
            profile_store(url, work, args.dim, not args.no_hnsw, args.profile)
    return 0


def print_table(records: int, times: dict[str, list[float]], cpu: dict[str, list[float]]
                ) -> None:
    rates = {label: [records / s for s in secs] for label, secs in times.items()}
    medians = {label: statistics.median(r) for label, r in rates.items()}
    print()
    header = f"{'side':<14} {'median rec/s':>13} {'min rec/s':>11} {'max rec/s':>11} " \
             f"{'median s':>9} {'client CPU s':>13}"
    print(header)
    print("-" * len(header))
    for label, r in rates.items():
        print(f"{label:<14} {medians[label]:>13,.0f} {min(r):>11,.0f} {max(r):>11,.0f} "
              f"{statistics.median(times[label]):>9.3f} {statistics.median(cpu[label]):>13.3f}")
    print("-" * len(header))
    ratio = medians[STORE] / medians[COPY]
    paired = statistics.median(c / s for s, c in zip(times[STORE], times[COPY], strict=True))
    cpu_ratio = statistics.median(cpu[STORE]) / statistics.median(cpu[COPY])
    verdict = "meets" if min(ratio, paired) >= GOAL else "below"
    print(f"store / COPY ratio: {ratio:.1%} of median rates, {paired:.1%} median per round "
          f"({verdict} the {GOAL:.0%} goal)")
    print(f"client CPU store / COPY: {cpu_ratio:.2f}x")
    print(f"peak RSS of this process: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    raise SystemExit(main())
