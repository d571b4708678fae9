"""What building one SDK record from an engine row costs (``record_from_row``), in microseconds.

A search returns ten records and a read one or more; each is built in Python from the row the
driver returned. This times that step alone, with no database: the rows are shaped as the
PostgreSQL engine's SELECT lists and psycopg return them (``ts`` a ``datetime`` in the server's
``TimeZone``, ``metadata`` a fresh ``dict`` from ``jsonb``, ``status`` text), one kind per line:
a memory with metadata, a memory without, a text message, a message of content parts, a thread
summary and a user profile. Each line is the best of ``--repeats`` runs of
``--iterations`` builds (the least disturbed by the rest of the machine).

Usage::

    .venv/bin/python bench/record_building.py [--iterations 20000] [--repeats 7] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from oracleagentmemory.core._records import record_from_row

TS = datetime(2026, 11, 30, 14, 5, 17, 123456, tzinfo=ZoneInfo("Etc/UTC"))
"""A stored timestamp as psycopg returns a ``timestamptz`` when the server's ``TimeZone`` is
``Etc/UTC`` (what ``initdb`` sets for the embedded server on a machine in UTC)."""


def _scope(record_type: str) -> dict[str, Any]:
    return {"id": f"{record_type}-7f3c9a1e2b4d4e6f8a0b1c2d3e4f5a6b", "record_type": record_type,
            "thread_id": "thread-0042", "user_id": "alice", "agent_id": "assistant",
            "ts": TS, "event_ts": TS, "status": "valid", "role": None, "seq_no": None,
            "content_parts": None}


def rows() -> dict[str, dict[str, Any]]:
    """One representative row of each kind, by the name the table prints."""
    memory = _scope("memory") | {
        "content": "Alice prefers window seats on morning flights to Lisbon.",
        "metadata": {"source": "chat", "topic": "travel", "confidence": 0.92,
                     "tags": ["flights", "seating"], "extracted_from": {"seq_no": 12}}}
    bare = _scope("fact") | {"content": "Alice's badge number is 4711.", "metadata": None}
    message = _scope("message") | {
        "content": "Can you book me a window seat for the 8:05 to Lisbon?",
        "metadata": {"client": "web"}, "role": "user", "seq_no": 12}
    parts = _scope("message") | {
        "content": "Here is the plan.\nAnd the alternative.", "metadata": None,
        "role": "assistant", "seq_no": 13,
        "content_parts": [{"type": "text", "id": "p1", "text": "Here is the plan.",
                           "timestamp": "2026-11-30T14:05:17+00:00"},
                          {"type": "text", "id": "p2", "text": "And the alternative."}]}
    summary = _scope("thread_summary") | {
        "content": {"summary": "Travel planning", "open_questions": ["return date"]},
        "metadata": {"covered": 40}, "seq_no": 40}
    profile = _scope("user_profile") | {
        "content": "Frequent flyer, vegetarian.", "metadata": {"tier": "gold"},
        "thread_id": None, "user_id": None, "agent_id": None}
    return {"memory + metadata": memory, "fact, no metadata": bare, "text message": message,
            "message of parts": parts, "thread summary": summary, "user profile": profile}


def per_record(row: dict[str, Any], iterations: int, repeats: int) -> float:
    """Microseconds per ``record_from_row(row)``, the best of ``repeats`` timed runs.

    Each build gets its own shallow copy of the row, as each hit is a fresh row from the driver;
    the copies are made outside the timed loop."""
    best = float("inf")
    for _ in range(repeats):
        batch = [dict(row) for _ in range(iterations)]
        started = time.perf_counter()
        for item in batch:
            record_from_row(item)
        best = min(best, time.perf_counter() - started)
    return best * 1e6 / iterations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="also write {kind: microseconds per record} here")
    args = parser.parse_args(argv)
    results = {name: per_record(row, args.iterations, args.repeats)
               for name, row in rows().items()}
    print(f"{'row kind':<20} {'µs/record':>10}")
    for name, micros in results.items():
        print(f"{name:<20} {micros:>10.2f}")
    print(f"{'mean':<20} {sum(results.values()) / len(results):>10.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
