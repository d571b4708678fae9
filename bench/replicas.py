"""Gets across two gateway replicas on one database: requests/s and CPU per request of each
replica and of the database.

One protected store (``bench/gateway.py``'s: ``--memories`` memories for each of ``--users``
identity-provider users, the hashing embedder) is served by two ``oam-gateway serve`` processes
(one uvicorn worker each, a pool of ``--pool`` connections each). The Python load generator
(``http_load``: ``--connections`` keep-alive connections, callers in turn) sends ``GET
/v1/memories/{id}`` of random memories of the callers for ``--seconds``: first every connection
to replica A, then the connections spread over both (connection ``i`` to replica ``i mod 2``, as
a load balancer spreads connections). For each run the bench prints requests/s, p50 and p99,
and per request the CPU of replica A, of replica B, of the database server and of the load
generator (``/proc`` counters of those process trees), with how busy the machine was.

On one machine the replicas share its cores with the database and the load generator, so two
replicas cannot double the requests/s here; what the run shows is that spreading the load adds
no CPU per request anywhere (nothing is coordinated between replicas: each request costs its
replica and the database what it costs with one replica).

Usage::

    .venv/bin/python bench/replicas.py [--users 4] [--memories 2000] [--seconds 5]
        [--connections 16] [--pool 4] [--json FILE] [--url URL | --data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cpu import cpu_since, machine_ticks, own_cpu, server_pid, tree_cpu  # noqa: E402
from _embedded import add_server_arguments, bench_server  # noqa: E402
from dds import AUDIENCE, GROUP, setup_environment  # noqa: E402
from http_load import request_bytes, run_load  # noqa: E402

from gateway import gateway_process, load_store, run_of  # noqa: E402

SEED = 20261203
EMBEDDER = "hashing"
DIMENSION = 64
WARM_SECONDS = 2.0


@dataclass(frozen=True)
class ReplicaRun:
    """One measured run: throughput, latency, and CPU per request (microseconds) by process
    tree (``None``: not visible from here)."""

    label: str
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    replica_a_us: float | None
    replica_b_us: float | None
    database_us: float | None
    load_us: float
    machine_busy: float

    def row(self) -> str:
        def us(value: float | None) -> str:
            return "       -" if value is None else f"{value:8.0f}"
        return (f"{self.label:<13} {self.rps:7.0f} {self.p50_ms:7.2f} {self.p99_ms:7.2f} "
                f"{self.errors:6d} {us(self.replica_a_us)} {us(self.replica_b_us)} "
                f"{us(self.database_us)} {self.load_us:8.0f} {self.machine_busy:5.0%}")


HEADER = ("gets over       req/s  p50 ms  p99 ms errors  A us/req B us/req  db us/req "
          "load us  busy")


def get_requests(ids: dict[str, list[str]], tokens: dict[str, str], count: int = 400
                 ) -> list[bytes]:
    """``count`` prepared gets of random memories of each caller, callers in turn."""
    rng = random.Random(SEED)
    users = list(ids)
    return [request_bytes("GET", f"/v1/memories/{rng.choice(ids[user])}", tokens[user])
            for user in (users[n % len(users)] for n in range(count))]


def measure(label: str, bases: Sequence[str], requests: list[bytes], connections: int,
            seconds: float, replica_pids: tuple[int, int], postmaster: int | None
            ) -> ReplicaRun:
    """Drive ``bases`` for ``seconds`` after a warm-up; the run and its CPU per request."""
    run_load(bases, requests, connections, min(WARM_SECONDS, seconds))
    trees = (replica_pids[0], replica_pids[1], postmaster)
    before = [tree_cpu(pid) for pid in trees]
    own_before, (busy_before, total_before) = own_cpu(), machine_ticks()
    latencies, errors, elapsed = run_load(bases, requests, connections, seconds)
    busy, total = machine_ticks()
    run = run_of(latencies, errors, elapsed)
    per_request = 1e6 / max(1, run.requests)
    spent = [cpu_since(b, tree_cpu(pid)) for b, pid in zip(before, trees, strict=True)]
    a_us, b_us, db_us = (None if s is None else s * per_request for s in spent)
    return ReplicaRun(label, run.rps, run.p50, run.p99, run.errors, a_us, b_us, db_us,
                      (own_cpu() - own_before) * per_request,
                      (busy - busy_before) / max(1, total - total_before))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--memories", type=int, default=2000, help="memories per user")
    parser.add_argument("--seconds", type=float, default=5.0, help="each measured run")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--pool", type=int, default=4, help="each replica's pool size")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the runs as JSON")
    add_server_arguments(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print("load generator: Python (raw HTTP/1.1 on uvloop), on the same cores", flush=True)
    with bench_server(args.url, args.data_dir) as url, \
            tempfile.TemporaryDirectory(prefix="oam-bench-replicas-") as tmp:
        env = setup_environment(url)
        store_id, ids = load_store(env, args.users, args.memories, DIMENSION, EMBEDDER)
        tokens = {user: env.issuer.token(user.split(":", 1)[1], audience=AUDIENCE,
                                         groups=[GROUP], scope="memory:read memory:write",
                                         lifetime_seconds=3600) for user in ids}
        requests = get_requests(ids, tokens)
        with psycopg.connect(url) as conn:
            postmaster = server_pid(conn)
        directories = [Path(tmp) / name for name in ("a", "b")]
        for directory in directories:
            directory.mkdir()
        with gateway_process(env, store_id, directories[0], args.pool, EMBEDDER,
                             DIMENSION) as a, \
                gateway_process(env, store_id, directories[1], args.pool, EMBEDDER,
                                DIMENSION) as b:
            pids = (a.pid, b.pid)
            runs = [measure("one replica", [a.base], requests, args.connections,
                            args.seconds, pids, postmaster),
                    measure("two replicas", [a.base, b.base], requests, args.connections,
                            args.seconds, pids, postmaster)]
    print(f"\n{args.users} users x {args.memories} memories, {args.connections} connections, "
          f"pool {args.pool} per replica, {args.seconds:g} s runs")
    print(HEADER)
    for run in runs:
        print(run.row())
    if args.json:
        args.json.write_text(json.dumps([asdict(run) for run in runs], indent=2) + "\n",
                             encoding="utf-8")
    return 0 if all(run.errors == 0 for run in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
