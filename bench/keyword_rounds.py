"""Server CPU of keyword searches over LoCoMo messages, and their rankings, for A/B comparisons.

The conversations of a LoCoMo file (``bench/locomo.py``'s loader and writer: one user per
conversation, one thread per session, each turn a message) are written through the client; then
every eligible question is asked through ``client.search(question, user_id=..., max_results=10)``
on a client opened with ``SearchStrategy.KEYWORD``, ``--passes`` times over. Printed: the
database server's CPU per search (``/proc`` counters of its process tree; best pass and median)
and, with ``--statements``, how often the server planned the keyword statement
(``pg_stat_statements``: plans per call, planning and execution time per search; the embedded
server is given it and restarted on first use, so pass ``--data-dir``). ``--rankings FILE``
writes every question's ranked record ids and distances (dialogue ids, as JSON) so two SDK
versions can be compared (``PYTHONPATH=<other checkout>/sdk`` for the other one).

Usage::

    .venv/bin/python bench/keyword_rounds.py [--data FILE] [--conversations N] [--questions N]
        [--passes 3] [--statements] [--rankings FILE] [--json FILE] [--url URL | --data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cpu import cpu_since, server_pid, tree_cpu  # noqa: E402
from _embedded import add_server_arguments, bench_server  # noqa: E402
from locomo import (  # noqa: E402
    DEFAULT_DATA,
    Models,
    load_conversations,
    open_client,
    write_conversation,
)
from oracleagentmemory.core import SchemaPolicy, SearchStrategy, WordLlamaEmbedder  # noqa: E402
from search_db_cost import ensure_pg_stat_statements  # noqa: E402

K = 10


def keyword_statements(url: str) -> list[tuple[int, int, float, float]]:
    """Calls, plans and total planning / execution milliseconds of the keyword statements
    (the statements that rank by BM25) since the last reset."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT calls, plans, total_plan_time, total_exec_time FROM pg_stat_statements "
            "WHERE query LIKE '%%WITH tq AS MATERIALIZED%%'").fetchall()
    return [(int(r[0]), int(r[1]), float(r[2]), float(r[3])) for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", type=int, help="only the first N conversations")
    parser.add_argument("--questions", type=int, help="only the first N questions of each")
    parser.add_argument("--passes", type=int, default=3, help="timed passes over the questions")
    parser.add_argument("--statements", action="store_true",
                        help="plans and times of the keyword statement (pg_stat_statements)")
    parser.add_argument("--rankings", type=Path, help="write every question's ranking (JSON)")
    parser.add_argument("--json", type=Path, help="write the figures (JSON)")
    add_server_arguments(parser)
    args = parser.parse_args()

    conversations = load_conversations(args.data, args.conversations, args.questions)
    models = Models(WordLlamaEmbedder(256), "WordLlama 256-d (local)")
    with bench_server(args.url, args.data_dir) as url:
        statements = args.statements and ensure_pg_stat_statements(url, args.data_dir)
        with psycopg.connect(url, autocommit=True) as conn:
            postmaster = server_pid(conn)
        store_id = f"kw_{int(time.time()) % 1_000_000}"
        writer = open_client(url, store_id, models, SchemaPolicy.CREATE_IF_NECESSARY,
                             SearchStrategy.KEYWORD)
        try:
            for conversation in conversations:
                write_conversation(writer, conversation)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
            asked = [(c.user_id, q.question) for c in conversations for q in c.questions]
            rankings: list[list[tuple[str, float]]] = []
            for user_id, question in asked:  # the warm-up pass, whose rankings are kept
                rankings.append([(str((r.record.metadata or {}).get("dia_id", r.record.id)),
                                  float(getattr(r, "distance", 0.0) or 0.0))
                                 for r in writer.search(question, user_id=user_id,
                                                        max_results=K)])
            if statements:
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("SELECT pg_stat_statements_reset()")
            per_search: list[float] = []
            for _ in range(args.passes):
                before = tree_cpu(postmaster)
                for user_id, question in asked:
                    writer.search(question, user_id=user_id, max_results=K)
                spent = cpu_since(before, tree_cpu(postmaster))
                if spent is not None:
                    per_search.append(spent * 1e6 / len(asked))
        finally:
            for conversation in conversations:
                writer.delete_user(conversation.user_id, cascade=True)
            writer.close()
        figures: dict[str, Any] = {"questions": len(asked), "passes": args.passes}
        if per_search:
            figures["server_cpu_us_best"] = min(per_search)
            figures["server_cpu_us_median"] = statistics.median(per_search)
            print(f"{len(asked)} questions x {args.passes} passes: server CPU per keyword search "
                  f"{min(per_search):.0f} us best, {statistics.median(per_search):.0f} us median "
                  f"({', '.join(f'{v:.0f}' for v in per_search)})")
        if statements:
            rows = keyword_statements(url)
            calls = sum(r[0] for r in rows)
            plans = sum(r[1] for r in rows)
            searches = len(asked) * args.passes
            figures.update(calls=calls, plans=plans,
                           plan_us=sum(r[2] for r in rows) * 1000 / searches,
                           exec_us=sum(r[3] for r in rows) * 1000 / searches)
            print(f"keyword statements: {calls} calls, {plans} plans; per search "
                  f"{figures['plan_us']:.0f} us planning, {figures['exec_us']:.0f} us executing")
        if args.rankings is not None:
            args.rankings.write_text(json.dumps(rankings), encoding="utf-8")
        if args.json is not None:
            args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
