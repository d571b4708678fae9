"""Overhead of Deep Data Security on PostgreSQL: ``get``, ``list`` and vector ``search``.

One store holds ``--users`` x ``--per-user`` memories (default 100 x 1,000 = 100,000), each with
one precomputed random L2-normalised ``--dim``-dimensional embedding (seeded), loaded by the
schema owner with ``store.add`` in large batches (``user_ids`` per row) and then ``ANALYZE``d. The
identities are those of ``tests/dds.py`` (owner ``oam_test_owner``, policy administrator
``oam_test_secadmin``, runtime login ``oam_test_rt`` of application ``gw``); the measured end
user is a local end user granted both shipped policies (own rows, global memories).

For that end user ``u`` every operation is timed two ways, interleaved in one loop (which side
goes first alternates):

* off: the owner's store (``SchemaPolicy.REQUIRE_EXISTING``; the table owner is not subject to
  row security);
* on: the runtime login's ``SchemaPolicy.NO_CHECK`` store inside
  ``OracleMemoryEndUserSecurityContext(create_end_user_security_context(token, (u, None)))``:
  each operation applies the signed assertion and verifies it, runs under the RLS policies, then
  clears it and verifies the clear.

Both sides run the same calls: ``get("memory", id)`` (an id of ``u``), ``list("memory",
user_id=u, limit=50)`` and ``search(None, 10, query_vector=q, user_id=u, exact_user_match=True,
record_types={"memory"})``. Each side has its own pool of one connection. Timed: the store call
(the context scope is entered outside the timer; entering it sends nothing to the database).
Besides wall-clock percentiles the bench reports the CPU time of an operation, the calling
thread's plus the server backend's (read from ``/proc/<pid>/schedstat`` when the server runs on
this machine): on a busy machine wall-clock ratios mostly measure scheduling noise, CPU ratios
measure the work the context adds.

Also printed: the round trips of each operation on each side (counted from a libpq protocol
trace in an untimed pass), what the context adds (the apply statement for an assertion the
backend verified before and for a new one, the clear check, the policies' lookup of the verified
user in the server), and ``EXPLAIN ANALYZE`` of the protected list statement as the runtime
login, showing that lookup as a once-per-statement InitPlan.

Goal: on/off at most 1.2x at p50 and p95 for each operation.

Usage::

    .venv/bin/python bench/rls_overhead.py [--users 100] [--per-user 1000] [--iterations 300]
                                           [--warmup 30] [--dim 384]
                                           [--url SUPERUSER_URL | --data-dir DIR]
                                           [--store-id ID [--keep]]

Without ``--url`` the embedded PostgreSQL is started in a temporary directory (``--data-dir``:
in that directory, kept) and stopped at the end. With ``--url`` the URL must be a superuser's
(identities are created as in the tests); the store is dropped at the end unless ``--keep`` (a
later run with the same ``--store-id`` and ``--keep`` reuses it). The embedded server requires
passwords: the bench connects as each role with the tests' password (``tests/dds.py``:
``url_as`` names a password file). The HNSW index is built after the load; loading 100k
memories takes about two minutes here.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.pq import Trace
from psycopg_pool import ConnectionPool

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _embedded import add_server_arguments, bench_server  # noqa: E402
from dds import OWNER, POLICIES, DdsEnvironment, setup_environment  # noqa: E402
from oam_policies import SHIPPED_POLICIES  # noqa: E402
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy  # noqa: E402
from oracleagentmemory.core.dbsearch import SearchStrategy  # noqa: E402
from oracleagentmemory.core.deepsec import (  # noqa: E402
    LocalEndUserPrincipal,
    OracleMemoryEndUserSecurityContext,
    add_deep_data_security_policies,
    grant_agent_memory_policies,
)
from oracleagentmemory.engines.identifiers import store_names  # noqa: E402
from oracleagentmemory.engines.postgres import deepsec_admin  # noqa: E402
from oracleagentmemory.engines.postgres.context_sql import apply_security_context  # noqa: E402

SEED = 20240612
K = 10
LIST_LIMIT = 50
BATCH = 5_000
OPS = ("get", "list", "search")
GOAL = 1.2
APPLY = "SELECT oam_sec.apply_assertion(%s)"
READ_ASSERTION = "SELECT current_setting('oam.end_user_assertion', true)"


# --- workload -----------------------------------------------------------------------------------
def unit_vectors(rng: np.random.Generator, count: int, dim: int) -> npt.NDArray[np.float32]:
    matrix = rng.standard_normal((count, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def user_name(n: int) -> str:
    return f"user-{n:03d}"


@dataclass
class Corpus:
    store_id: str
    user: str
    user_ids: list[str]
    load_seconds: float

    def data_role(self, policy: str) -> str:
        names = store_names(memory_store_id=self.store_id, table_name_prefix=None,
                            schema_owner=OWNER, fold="lower")
        return deepsec_admin.data_role_name(names, OWNER, SHIPPED_POLICIES[policy])


def create_store(env: DdsEnvironment, store_id: str, dim: int, user: str) -> None:
    """The owner creates the store; the policy administrator installs and grants both policies."""
    with psycopg.connect(env.owner_url) as conn:
        OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id, vector_dim=dim)
    with psycopg.connect(env.secadmin_url) as conn:
        with conn.transaction():
            deepsec_admin.create_end_user(conn, user)
        add_deep_data_security_policies(conn, OWNER, store_id, POLICIES)
        grant_agent_memory_policies(conn, store_id, OWNER, [LocalEndUserPrincipal(user)],
                                    POLICIES)
        with conn.transaction():
            deepsec_admin.bind_application(conn, "gw", stores=[(OWNER, store_id)])


def _hnsw_index(store_id: str) -> tuple[str, sql.Identifier, sql.Identifier]:
    """The HNSW index of the store's chunks: its name, qualified, and the qualified table."""
    names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=OWNER,
                        fold="lower")
    index = names.object_name("record_chunks_hnsw_ix")
    return (index, sql.Identifier(OWNER, index),
            sql.Identifier(OWNER, names.table("record_chunks")))


def existing_corpus(env: DdsEnvironment, store_id: str, users: int) -> Corpus | None:
    """A store a previous ``--keep`` run loaded, or ``None``."""
    measured = user_name(users // 2)
    with psycopg.connect(env.owner_url, autocommit=True) as conn:
        table = sql.Identifier(OWNER, f"{store_id}_memory")
        found = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                             [table.as_string(conn)]).fetchone()
        if not found or not found[0]:
            return None
        ids = [r[0] for r in conn.execute(
            sql.SQL("SELECT id FROM {} WHERE user_id = %s ORDER BY row_seq").format(table),
            [measured]).fetchall()]
    return Corpus(store_id, measured, ids, 0.0) if ids else None


def load(env: DdsEnvironment, users: int, per_user: int, dim: int,
         store_id: str | None = None) -> Corpus:
    """Create and fill a store; the HNSW index is built once after the load (much faster than
    maintaining it on every insert), then every table is ``VACUUM ANALYZE``d."""
    store_id = store_id or f"rls{os.getpid() % 100000}"
    measured = user_name(users // 2)
    create_store(env, store_id, dim, measured)
    index_name, index, chunks = _hnsw_index(store_id)
    with psycopg.connect(env.owner_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP INDEX {}").format(index))
    owner = OracleDBMemoryStore(None, env.owner_url, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                                memory_store_id=store_id)
    rng = np.random.default_rng(SEED)
    total = users * per_user
    mine: list[str] = []
    start = time.perf_counter()
    try:
        for offset in range(0, total, BATCH):
            count = min(BATCH, total - offset)
            owners = [user_name(n % users) for n in range(offset, offset + count)]
            ids = owner.add([f"memory {offset + i} of {u}" for i, u in enumerate(owners)],
                            "memory", user_ids=owners,
                            embeddings=list(unit_vectors(rng, count, dim)))
            mine.extend(i for i, u in zip(ids, owners, strict=True) if u == measured)
            done = offset + count
            print(f"\r  loading {total:,} memories: {done:,} "
                  f"({done / (time.perf_counter() - start):,.0f} rec/s)", end="", flush=True)
        print()
    finally:
        owner.close()
    with psycopg.connect(env.owner_url, autocommit=True) as conn:
        print("  building the HNSW index ...", flush=True)
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute(sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops)")
                     .format(sql.Identifier(index_name), chunks))
    seconds = time.perf_counter() - start
    with psycopg.connect(env.owner_url, autocommit=True) as conn:
        for logical in ("memory", "record_chunks", "memory_link", "actor_profile"):
            conn.execute(sql.SQL("VACUUM ANALYZE {}.{}").format(
                sql.Identifier(OWNER), sql.Identifier(f"{store_id}_{logical}")))
    return Corpus(store_id, measured, mine, seconds)


def drop(env: DdsEnvironment, corpus: Corpus) -> None:
    owner = OracleDBMemoryStore(None, env.owner_url, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                                memory_store_id=corpus.store_id)
    try:
        with owner._engine.session(owner._names) as session:  # benchmark cleanup, not public API
            session.drop_store()
    finally:
        owner.close()


# --- the two sides ------------------------------------------------------------------------------
def server_cpu_ns(pid: int) -> int | None:
    """CPU time a local server process has used, or ``None`` (remote server)."""
    try:
        with open(f"/proc/{pid}/schedstat") as stat:
            return int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Side:
    """One store on its own pool of one connection (pids of its backends, newest last)."""

    on: bool
    store: OracleDBMemoryStore
    pool: ConnectionPool[Any]
    backends: list[int]

    def backend_cpu_ns(self) -> int | None:
        return server_cpu_ns(self.backends[-1]) if self.backends else None


@dataclass
class Sides:
    off: Side
    on: Side
    scope: Callable[[], OracleMemoryEndUserSecurityContext]

    def close(self) -> None:
        self.off.store.close()
        with self.scope():
            self.on.store.close()
        self.off.pool.close()
        self.on.pool.close()


def one_connection_pool(url: str, backends: list[int], **kwargs: Any) -> ConnectionPool[Any]:
    def configure(conn: psycopg.Connection[Any]) -> None:
        backends.append(conn.info.backend_pid)

    return ConnectionPool(url, min_size=1, max_size=1, open=True, configure=configure,
                          kwargs=kwargs)


def open_sides(env: DdsEnvironment, corpus: Corpus, **connect_kwargs: Any) -> Sides:
    context = env.context(corpus.user)
    off_pids: list[int] = []
    on_pids: list[int] = []
    off_pool = one_connection_pool(env.owner_url, off_pids, **connect_kwargs)
    on_pool = one_connection_pool(env.runtime_url, on_pids, **connect_kwargs)
    off = OracleDBMemoryStore(None, off_pool, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                              memory_store_id=corpus.store_id,
                              search_strategy=SearchStrategy.VECTOR)
    with OracleMemoryEndUserSecurityContext(context):
        on = OracleDBMemoryStore(None, on_pool, schema_policy=SchemaPolicy.NO_CHECK,
                                 memory_store_id=corpus.store_id, schema_owner=OWNER,
                                 search_strategy=SearchStrategy.VECTOR)
    return Sides(Side(False, off, off_pool, off_pids), Side(True, on, on_pool, on_pids),
                 lambda: OracleMemoryEndUserSecurityContext(context))


def operation(op: str, store: OracleDBMemoryStore, user: str, record_id: str,
              vector: npt.NDArray[np.float32]) -> int:
    """Run one operation; returns how many records it produced (checked equal on both sides)."""
    if op == "get":
        return 0 if store.get("memory", record_id) is None else 1
    if op == "list":
        return len(store.list("memory", user_id=user, limit=LIST_LIMIT))
    return len(store.search(None, K, query_vector=vector, user_id=user, exact_user_match=True,
                            record_types={"memory"}))


@contextmanager
def in_scope(sides: Sides, side: Side) -> Iterator[OracleDBMemoryStore]:
    if side.on:
        with sides.scope():
            yield side.store
    else:
        yield side.store


# --- timing -------------------------------------------------------------------------------------
@dataclass
class Samples:
    wall_ms: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)  # client thread + server backend


@dataclass
class Timings:
    off: dict[str, Samples] = field(default_factory=lambda: {op: Samples() for op in OPS})
    on: dict[str, Samples] = field(default_factory=lambda: {op: Samples() for op in OPS})


def measure(sides: Sides, corpus: Corpus, iterations: int, warmup: int, dim: int) -> Timings:
    rng = np.random.default_rng(SEED + 1)
    vectors = unit_vectors(rng, warmup + iterations, dim)
    ids = [corpus.user_ids[int(i)] for i in rng.integers(0, len(corpus.user_ids),
                                                         warmup + iterations)]
    timings = Timings()
    for n in range(warmup + iterations):
        for op in OPS:
            counts = {}
            for side in ((sides.off, sides.on) if n % 2 == 0 else (sides.on, sides.off)):
                with in_scope(sides, side) as store:
                    server0 = side.backend_cpu_ns()
                    client0 = time.thread_time_ns()
                    start = time.perf_counter_ns()
                    counts[side.on] = operation(op, store, corpus.user, ids[n], vectors[n])
                    wall = time.perf_counter_ns() - start
                    client = time.thread_time_ns() - client0
                    server1 = side.backend_cpu_ns()
                if n >= warmup:
                    samples = (timings.on if side.on else timings.off)[op]
                    samples.wall_ms.append(wall / 1e6)
                    if server0 is not None and server1 is not None:
                        samples.cpu_us.append((client + server1 - server0) / 1e3)
            if counts[True] != counts[False]:
                raise AssertionError(f"{op}: {counts[False]} records off, {counts[True]} on")
    return timings


# --- round trips (untimed pass, libpq protocol trace) -------------------------------------------
class Recorder(psycopg.Cursor[Any]):
    """Keeps the statements sent through cursors (to EXPLAIN the protected list statement)."""

    sent: list[tuple[Any, Any]] = []

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        Recorder.sent.append((query, params))
        return super().execute(query, params, **kwargs)


@dataclass
class Trip:
    """One round trip: the statements sent before the client waited for the server."""

    statements: list[str]


def traced_round_trips(side: Side, run: Callable[[], Any]) -> list[Trip]:
    """The round trips ``run`` makes on ``side``'s pooled connection."""
    with tempfile.TemporaryFile(mode="w+") as trace:
        with side.pool.connection() as conn:
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
        try:
            run()
        finally:
            with side.pool.connection() as conn:
                conn.pgconn.untrace()  # flushes the trace
        trace.seek(0)
        trips: list[Trip] = []
        pending: list[str] = []
        for line in trace:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 3:
                continue
            direction, kind = fields[0], fields[2]
            if direction == "F" and kind in ("Query", "Parse"):
                text = fields[3].strip() if len(fields) > 3 else ""
                if kind == "Parse":  # ' "" "SELECT ..." 1 NNNN': the statement is the 2nd string
                    text = text.split('" "', 1)[-1].rsplit('"', 1)[0]
                pending.append(" ".join(text.strip('"').split()))
            elif direction == "F" and kind == "Bind" and len(fields) > 3:
                # ' "" "name" ...': a statement the engine prepared earlier on the connection
                # (psycopg's own, "_pg3_*", are off in this pass)
                name = fields[3].strip().split('"')[3] if fields[3].count('"') >= 4 else ""
                if name and not name.startswith("_pg3_"):
                    pending.append(f"EXECUTE {name}")
            elif direction == "B" and kind == "ReadyForQuery":
                trips.append(Trip(pending))
                pending = []
        return trips


@dataclass
class RoundTrips:
    by_op: dict[str, dict[bool, list[Trip]]]
    list_query: tuple[Any, Any]


def round_trips(env: DdsEnvironment, corpus: Corpus, dim: int) -> RoundTrips:
    # No server-side prepared statements: every statement then shows its text in the trace
    # (preparing saves parsing, not round trips).
    sides = open_sides(env, corpus, cursor_factory=Recorder, prepare_threshold=None)
    vector = unit_vectors(np.random.default_rng(SEED + 2), 1, dim)[0]
    found: dict[str, dict[bool, list[Trip]]] = {}
    try:
        for op in OPS:
            found[op] = {}
            for side in (sides.off, sides.on):
                with in_scope(sides, side) as store:
                    def run() -> None:
                        operation(op, store, corpus.user, corpus.user_ids[0], vector)  # noqa: B023

                    run()  # warm
                    found[op][side.on] = traced_round_trips(side, run)
        Recorder.sent.clear()
        with in_scope(sides, sides.on) as store:
            operation("list", store, corpus.user, corpus.user_ids[0], vector)
        list_query = next((q, p) for q, p in Recorder.sent
                          if "row_seq" in _text(q) and "ORDER BY" in _text(q))
    finally:
        sides.close()
    return RoundTrips(found, list_query)


def _text(query: Any) -> str:
    if isinstance(query, sql.Composable):
        return query.as_string(None)
    return query.decode() if isinstance(query, bytes) else str(query)


# --- the pieces the context adds ----------------------------------------------------------------
def interleaved_medians(variants: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Median wall-clock ms of each variant, run round-robin so drift affects all alike."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, fn in variants.items():
            start = time.perf_counter_ns()
            fn()
            samples[name].append((time.perf_counter_ns() - start) / 1e6)
    return {name: float(np.median(values)) for name, values in samples.items()}


def context_pieces(env: DdsEnvironment, corpus: Corpus, repeat: int = 300) -> dict[str, float]:
    """Median wall-clock ms of what an operation adds, on one runtime connection.

    Measured against an empty ``BEGIN`` / ``COMMIT``: the apply statement with an assertion this
    backend already verified (the steady state: the context reuses its signed assertion) and
    with a fresh one (verified in full and cached), each as its own round trip (the engine
    pipelines it with ``BEGIN``); the clear check, as a ``SELECT`` round trip of its own or as
    ``SHOW`` in the same simple query as ``COMMIT`` (what the engine does). The policies' lookup
    of the verified user is timed in the server, once per statement.
    """
    context = env.context(corpus.user)
    pieces: dict[str, float] = {}
    with psycopg.connect(env.runtime_url, autocommit=True) as conn:
        def round_trip() -> None:
            conn.execute("SELECT 1").fetchone()

        def empty() -> None:
            conn.execute("BEGIN")
            conn.execute("COMMIT")

        def apply_cached() -> None:
            conn.execute("BEGIN")
            conn.execute(APPLY, [context.assertion()]).fetchone()
            conn.execute("COMMIT")

        def apply_fresh() -> None:
            conn.execute("BEGIN")
            conn.execute(APPLY, [context.assertion(now=time.time())]).fetchone()
            conn.execute("COMMIT")

        def check_after_commit() -> None:
            conn.execute("BEGIN")
            conn.execute(APPLY, [context.assertion()]).fetchone()
            conn.execute("COMMIT")
            conn.execute(READ_ASSERTION).fetchone()

        def check_with_commit() -> None:
            conn.execute("BEGIN")
            conn.execute(APPLY, [context.assertion()]).fetchone()
            cursor = conn.execute("COMMIT; SHOW oam.end_user_assertion", prepare=False)
            cursor.nextset()
            cursor.fetchone()

        # Token mode: the context carries the identity provider's RS256 token, which the
        # database verifies in full (signature over numeric) the first time it sees it.
        token_contexts = iter([env.token_context(corpus.user) for _ in range(repeat + 10)])
        token_cached = env.token_context(corpus.user)

        def apply_token_fresh() -> None:
            assertion = next(token_contexts).assertion()
            conn.execute("BEGIN")
            conn.execute(APPLY, [assertion]).fetchone()
            conn.execute("COMMIT")

        def apply_token_cached() -> None:
            conn.execute("BEGIN")
            conn.execute(APPLY, [token_cached.assertion()]).fetchone()
            conn.execute("COMMIT")

        ms = interleaved_medians({"trip": round_trip, "empty": empty, "apply": apply_cached,
                                  "fresh": apply_fresh, "after": check_after_commit,
                                  "with": check_with_commit, "token_fresh": apply_token_fresh,
                                  "token_cached": apply_token_cached}, repeat)
        pieces["one round trip (SELECT 1)"] = ms["trip"]
        pieces["apply, assertion verified before (own round trip)"] = ms["apply"] - ms["empty"]
        pieces["apply, new assertion: full verification"] = ms["fresh"] - ms["empty"]
        pieces["apply, token mode, new token: RS256 + full verification"] = (
            ms["token_fresh"] - ms["empty"])
        pieces["apply, token mode, assertion verified before"] = ms["token_cached"] - ms["empty"]
        pieces["clear check, own round trip"] = ms["after"] - ms["apply"]
        pieces["clear check, with COMMIT (the engine)"] = ms["with"] - ms["apply"]
        conn.execute("BEGIN")
        apply_security_context(conn, context)
        times = []
        for _ in range(repeat):
            rows = conn.execute(
                "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) SELECT (SELECT "
                "oam_sec.verified_user(%s))", [corpus.data_role("own_user_rows")]).fetchall()
            text = " ".join(r[0] for r in rows)
            times.append(float(text.split("Execution Time:")[1].split("ms")[0]))
        conn.execute("ROLLBACK")
        pieces["policy lookup of the verified user, in the server"] = float(np.median(times))
    return pieces


def explain_list(env: DdsEnvironment, corpus: Corpus, query: Any, params: Any) -> list[str]:
    context = env.context(corpus.user)
    with psycopg.connect(env.runtime_url) as conn, conn.transaction(force_rollback=True):
        apply_security_context(conn, context)
        statement = sql.SQL("EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) ") + (
            query if isinstance(query, sql.Composable) else sql.SQL(query))
        return [r[0] for r in conn.execute(statement, params).fetchall()]


# --- report -------------------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def print_table(timings: Timings) -> bool:
    header = (f"{'op':<7} {'off p50':>8} {'off p95':>8} {'on p50':>8} {'on p95':>8} "
              f"{'ratio p50':>10} {'ratio p95':>10}   {'cpu off':>8} {'cpu on':>8} {'ratio':>6}")
    print()
    print("wall-clock ms per store call (off = owner, explicit scope; on = runtime login, "
          "NO_CHECK, end-user context);")
    print("cpu = median CPU us per call, calling thread + server backend")
    print(header)
    print("-" * len(header))
    met = True
    for op in OPS:
        off, on = timings.off[op], timings.on[op]
        r50 = pct(on.wall_ms, 50) / pct(off.wall_ms, 50)
        r95 = pct(on.wall_ms, 95) / pct(off.wall_ms, 95)
        met = met and r50 <= GOAL and r95 <= GOAL
        line = (f"{op:<7} {pct(off.wall_ms, 50):>8.3f} {pct(off.wall_ms, 95):>8.3f} "
                f"{pct(on.wall_ms, 50):>8.3f} {pct(on.wall_ms, 95):>8.3f} {r50:>9.2f}x "
                f"{r95:>9.2f}x")
        if off.cpu_us and on.cpu_us:
            c_off, c_on = pct(off.cpu_us, 50), pct(on.cpu_us, 50)
            line += f"   {c_off:>8.0f} {c_on:>8.0f} {c_on / c_off:>5.2f}x"
        print(line)
    print("-" * len(header))
    print(f"goal: wall-clock ratio <= {GOAL}x at p50 and p95 for every operation: "
          f"{'met' if met else 'NOT met'}")
    return met


def print_overhead(trips: RoundTrips, pieces: dict[str, float]) -> None:
    print()
    print("round trips per operation (libpq trace; a round trip = statements sent before one "
          "wait for the server):")
    for op in OPS:
        off, on = trips.by_op[op][False], trips.by_op[op][True]
        print(f"  {op:<7} off {len(off)}, on {len(on)} (+{len(on) - len(off)})")
        for n, trip in enumerate(on, 1):
            print(f"      on {n}: " + " + ".join(s[:70] for s in trip.statements))
    print("what the context adds, median on one runtime connection:")
    for name, ms in pieces.items():
        print(f"  {name:<52} {ms:8.3f} ms")
    print("  the lookup runs once per statement and protected table (an InitPlan of each "
          "policy that applies; the global-memories one only when a row with no user is met)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100, help="end users in the store")
    parser.add_argument("--per-user", type=int, default=1000, help="memories per user")
    parser.add_argument("--iterations", type=int, default=300,
                        help="timed calls per operation per side")
    parser.add_argument("--warmup", type=int, default=30, help="untimed calls first")
    parser.add_argument("--dim", type=int, default=384, help="embedding dimension")
    parser.add_argument("--store-id", help="memory store id; with --keep, a store loaded by "
                                           "an earlier --keep run is reused")
    parser.add_argument("--keep", action="store_true",
                        help="keep the store (and reuse it when it exists)")
    add_server_arguments(parser, "a superuser's PostgreSQL URL (default: an embedded server)")
    args = parser.parse_args(argv)
    if min(args.users, args.per_user, args.iterations, args.dim) < 1 or args.warmup < 0:
        parser.error("--users, --per-user, --iterations and --dim must be positive")

    with bench_server(args.url, args.data_dir) as url:
        env = setup_environment(url)
        print(f"{args.users} users x {args.per_user:,} memories, {args.dim}-d random unit "
              f"embeddings, {args.iterations} timed calls per operation per side after "
              f"{args.warmup} warm-up, {os.cpu_count()} CPUs", flush=True)
        corpus = (existing_corpus(env, args.store_id, args.users)
                  if args.keep and args.store_id else None)
        if corpus is None:
            corpus = load(env, args.users, args.per_user, args.dim, args.store_id)
        try:
            print(f"  loaded in {corpus.load_seconds:.1f} s; measured end user {corpus.user} "
                  f"({len(corpus.user_ids):,} memories)", flush=True)
            sides = open_sides(env, corpus)
            try:
                timings = measure(sides, corpus, args.iterations, args.warmup, args.dim)
            finally:
                sides.close()
            print_table(timings)
            trips = round_trips(env, corpus, args.dim)
            print_overhead(trips, context_pieces(env, corpus))
            print()
            print("EXPLAIN ANALYZE of the protected list statement (runtime login, context "
                  "applied):")
            for line in explain_list(env, corpus, *trips.list_query):
                print("  " + line)
        finally:
            if not args.keep:
                drop(env, corpus)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
