"""Database CPU of the gateway's search, one search at a time, and where it goes.

The store of ``bench/gateway.py``: ``--users`` identity-provider users of ``--memories`` memories
each (WordLlama 256-d embeddings of eight vocabulary words, ``tests/dds.py``'s identities and
policies), ``VACUUM ANALYZE``d. A client opened as the gateway opens it (the runtime login, a
``SchemaPolicy.NO_CHECK`` store on a pool the SDK builds, the store's default strategy) runs
``client.search`` of three vocabulary words, ``k`` 10, inside each caller's end-user context, as
``POST /v1/search`` does, callers in turn, one at a time.

Printed per run: wall time and the database server's CPU per search (``/proc`` counters of its
process tree) over ``--searches`` searches after ``--warmup``; with ``--statements`` also each
statement's calls, planning and execution time per search from ``pg_stat_statements`` (the
embedded server is given it, and restarted, on first use), and with ``--explain`` the plans of
one search as the server ran them (``auto_explain`` for the runtime login, ``ANALYZE`` and
``BUFFERS``, read from the server's log). ``--recall`` scores the searches' top ``k`` against an
exact scan of the same user's chunks.

``--state FILE`` keeps the loaded store's id and users (with ``--data-dir`` or ``--url``): a later
run with the same file reuses the store, so two SDK versions can be compared on the same data,
alternating (``PYTHONPATH=<other checkout>/sdk`` for the other one).

Usage::

    .venv/bin/python bench/search_db_cost.py [--users 4] [--memories 5000] [--searches 1000]
        [--warmup 200] [--statements] [--explain] [--recall N] [--json FILE]
        [--state FILE] [--url URL | --data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cpu import cpu_since, server_pid, tree_cpu  # noqa: E402
from _embedded import add_server_arguments, bench_server, restart_embedded  # noqa: E402
from dds import GROUP, IDP, OWNER, RUNTIME, DdsEnvironment, setup_environment  # noqa: E402
from oracleagentmemory.core import (  # noqa: E402
    OracleAgentMemory,
    OracleDBMemoryStore,
    SchemaPolicy,
    WordLlamaEmbedder,
)
from oracleagentmemory.core.deepsec import (  # noqa: E402
    IdentityProviderUser,
    OracleMemoryEndUserSecurityContext,
    create_end_user_security_context,
)
from psycopg import sql  # noqa: E402

SEED = 20261201
DIMENSION = 256
WORDS = ("alpine", "hiking", "coffee", "espresso", "garden", "tulip", "violin", "sonata",
         "python", "rust", "database", "index", "paris", "lisbon", "tokyo", "sushi", "ramen",
         "bicycle", "marathon", "chess", "opening", "novel", "poetry", "cat", "dog", "allergy",
         "peanut", "window", "seat", "aisle", "morning", "evening", "rain", "snow", "winter",
         "summer")
"""``bench/gateway.py``'s vocabulary: the same memories and queries."""
K = 10


def sentence(rng: random.Random, words: int = 8) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def load_store(env: DdsEnvironment, users: int, per_user: int) -> dict[str, Any]:
    """A protected store of ``per_user`` memories for each of ``users`` users (as
    ``bench/gateway.py`` loads it); its id and owners."""
    store_id = env.new_store(vector_dim=DIMENSION)
    rng = random.Random(SEED)
    owners = [f"{IDP}:bench{n:02d}" for n in range(users)]
    started = time.perf_counter()
    with OracleDBMemoryStore(WordLlamaEmbedder(DIMENSION), env.owner_url,
                             schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                             memory_store_id=store_id) as store:
        for owner in owners:
            for start in range(0, per_user, 2000):
                count = min(2000, per_user - start)
                store.add([sentence(rng) for _ in range(count)], "memory",
                          user_ids=[owner] * count)
    with psycopg.connect(env.owner_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    print(f"loaded {users} x {per_user} memories in {time.perf_counter() - started:.1f} s",
          flush=True)
    return {"store_id": store_id, "owners": owners}


def ensure_pg_stat_statements(url: str, data_dir: Path | None) -> bool:
    """Whether ``pg_stat_statements`` is loaded (the embedded server is given it, restarted)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT current_setting('shared_preload_libraries')").fetchone()
        if row and "pg_stat_statements" in str(row[0]):
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            return True
        if data_dir is None:
            return False
        conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        conn.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
    restart_embedded(data_dir)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    return True


def statement_costs(url: str, searches: int) -> list[tuple[float, float, float, str]]:
    """The runtime login's statements since the last reset: calls, planning and execution
    microseconds per search, and the start of the text; costliest first."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.calls, s.total_plan_time, s.total_exec_time, s.query "
            "FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid "
            "WHERE r.rolname = %s ORDER BY s.total_plan_time + s.total_exec_time DESC",
            [RUNTIME]).fetchall()
    return [(calls / searches, plan * 1000 / searches, run * 1000 / searches,
             " ".join(str(text).split())[:150]) for calls, plan, run, text in rows]


def reset_statements(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")


def set_auto_explain(url: str, on: bool) -> None:
    """``auto_explain`` (``ANALYZE``, ``BUFFERS``, nested statements) for the runtime login's
    new sessions, or not."""
    settings = {"session_preload_libraries": "auto_explain",
                "auto_explain.log_min_duration": "0", "auto_explain.log_analyze": "on",
                "auto_explain.log_buffers": "on", "auto_explain.log_nested_statements": "on"}
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in settings.items():
            if on:
                conn.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(
                    sql.Identifier(RUNTIME), sql.Identifier(*name.split(".")),
                    sql.Literal(value)))
            else:
                conn.execute(sql.SQL("ALTER ROLE {} RESET {}").format(
                    sql.Identifier(RUNTIME), sql.Identifier(*name.split("."))))


def server_log(url: str) -> Path | None:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_logfile()").fetchone()
        directory = conn.execute("SELECT current_setting('data_directory')").fetchone()
    if not row or not row[0] or not directory:
        return None
    path = Path(str(row[0]))
    return path if path.is_absolute() else Path(str(directory[0])) / path


def exact_top(env: DdsEnvironment, store_id: str, owner: str, vector: Any) -> list[str]:
    """The ``K`` nearest memories of ``owner`` by an exact scan (as the owner, no index)."""
    table = sql.Identifier(OWNER, f"{store_id}_record_chunks")
    with psycopg.connect(env.owner_url) as conn:
        conn.execute("SET LOCAL enable_indexscan = off")
        conn.execute("SET LOCAL enable_bitmapscan = off")
        rows = conn.execute(sql.SQL(
            "SELECT record_id::text FROM {} WHERE user_id = %s ORDER BY "
            "embedding <=> %s::vector LIMIT %s").format(table),
            [owner, "[" + ",".join(f"{x:.9g}" for x in vector) + "]", K]).fetchall()
    return [str(r[0]) for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--memories", type=int, default=5000, help="memories per user")
    parser.add_argument("--searches", type=int, default=1000, help="timed searches")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--statements", action="store_true",
                        help="per-statement costs from pg_stat_statements")
    parser.add_argument("--explain", action="store_true",
                        help="the plans of one search (auto_explain, the server's log)")
    parser.add_argument("--recall", type=int, default=0,
                        help="score N searches' top k against an exact scan")
    parser.add_argument("--state", type=Path, help="keep / reuse the loaded store (JSON)")
    parser.add_argument("--json", type=Path, help="write the figures as JSON")
    add_server_arguments(parser)
    args = parser.parse_args()

    with bench_server(args.url, args.data_dir) as url:
        statements = args.statements and ensure_pg_stat_statements(url, args.data_dir)
        env = setup_environment(url)
        if args.state is not None and args.state.is_file():
            state = json.loads(args.state.read_text(encoding="utf-8"))
            env.bind(state["store_id"])  # setup_environment made the application anew
        else:
            state = load_store(env, args.users, args.memories)
            if args.state is not None:
                args.state.write_text(json.dumps(state), encoding="utf-8")
        with psycopg.connect(url, autocommit=True) as conn:
            postmaster = server_pid(conn)
        figures = run(env, url, state, args, statements, postmaster)
        if args.json is not None:
            args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


def run(env: DdsEnvironment, url: str, state: dict[str, Any], args: argparse.Namespace,
        statements: bool, postmaster: int | None) -> dict[str, Any]:
    rng = random.Random(SEED + 1)
    owners: list[str] = state["owners"]
    contexts = {owner: create_end_user_security_context(
        env.token, IdentityProviderUser(owner.split(":", 1)[1], (GROUP,), IDP))
        for owner in owners}
    queries = [sentence(rng, 3) for _ in range(400)]
    embedder = WordLlamaEmbedder(DIMENSION)
    if args.explain:
        set_auto_explain(url, True)
    try:
        with OracleMemoryEndUserSecurityContext(contexts[owners[0]]):
            store = OracleDBMemoryStore(embedder, env.runtime_url,
                                        schema_policy=SchemaPolicy.NO_CHECK,
                                        memory_store_id=state["store_id"], schema_owner=OWNER)
        client = OracleAgentMemory(store=store, extract_memories=False)
    finally:
        if args.explain:
            set_auto_explain(url, False)

    def search(n: int) -> list[str]:
        owner = owners[n % len(owners)]
        with OracleMemoryEndUserSecurityContext(contexts[owner]):
            results = client.search(queries[n % len(queries)], user_id=owner, max_results=K)
        return [str(r.record.id) for r in results]

    figures: dict[str, Any] = {}
    try:
        if args.explain:
            log = server_log(url)
            start = log.stat().st_size if log is not None else 0
            search(0)
            if log is not None:
                with log.open(encoding="utf-8", errors="replace") as handle:
                    handle.seek(start)
                    print(handle.read())
        for n in range(args.warmup):
            if len(search(n)) != K:
                raise SystemExit(f"a search found fewer than {K} memories: is the store bound?")
        if statements:
            reset_statements(url)
        before, started = tree_cpu(postmaster), time.perf_counter()
        for n in range(args.searches):
            search(n)
        wall = time.perf_counter() - started
        db = cpu_since(before, tree_cpu(postmaster))
        figures["wall_us"] = wall * 1e6 / args.searches
        figures["db_cpu_us"] = None if db is None else db * 1e6 / args.searches
        print(f"{args.searches} searches: {figures['wall_us']:.0f} us wall, "
              f"{figures['db_cpu_us'] or float('nan'):.0f} us database CPU per search")
        if statements:
            rows = statement_costs(url, args.searches)
            figures["statements"] = rows
            print(f"{'calls':>6} {'plan us':>8} {'exec us':>8}  statement (per search)")
            for calls, plan, execute, text in rows[:12]:
                print(f"{calls:6.2f} {plan:8.1f} {execute:8.1f}  {text}")
        if args.recall:
            found = 0
            for n in range(args.recall):
                owner = owners[n % len(owners)]
                vector = np.asarray(embedder.embed([queries[n % len(queries)]], is_query=True)[0])
                truth = set(exact_top(env, state["store_id"], owner, vector))
                found += len(truth & set(search(n)))
            figures["recall"] = found / (K * args.recall)
            print(f"recall@{K} against an exact scan: {figures['recall']:.3f}")
    finally:
        client.close(timeout=5)
        store.close()
    return figures


if __name__ == "__main__":
    main()
