"""Overhead of the database write audit: ``store.add`` (single and batch), ``update``, ``delete``.

Two protected stores with identical tables (``--dim``-dimensional vectors, HNSW), created as in
``tests/dds.py`` (owner ``oam_test_owner``, policy administrator ``oam_test_secadmin``, runtime
login ``oam_test_rt`` of application ``gw``, local end user ``alice`` granted both shipped
policies); the write audit is enabled on one of them (``enable_write_audit``). Both are opened by
the runtime login with ``SchemaPolicy.NO_CHECK`` inside alice's end-user context, each with its
own connection pool, and every operation is timed on both sides in one loop, the side that goes
first alternating:

* ``add 1``: ``store.add`` of one memory with its precomputed embedding (one transaction: the
  memory row and its chunk row, so two audit rows written by two statement triggers);
* ``add N``: ``store.add`` of ``--batch`` memories (one multi-row statement per table: one
  ``INSERT ... SELECT`` from the transition table per statement, however many rows);
* ``update``: ``store.update`` of a memory's content and embedding (the row updated, its chunk
  replaced);
* ``delete``: ``store.delete`` of a memory added by ``add 1`` (the row and its chunk).

Reported: p50 and p95 wall-clock per operation on each side and their on/off ratios, and the
audit rows written. Goal (issue 11): audit on/off at most 1.15x. Finally the audit is sealed
and verified once (timed, as an indication of the admin's cost per row).

Usage::

    .venv/bin/python bench/audit_overhead.py [--iterations 200] [--warmup 20] [--batch 100]
                                             [--dim 384] [--url SUPERUSER_URL | --data-dir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _embedded import add_server_arguments, bench_server  # noqa: E402
from dds import OWNER, RUNTIME, DdsEnvironment, setup_environment  # noqa: E402
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy  # noqa: E402
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext  # noqa: E402
from oracleagentmemory.core.deepsec.audit import (  # noqa: E402
    enable_write_audit,
    list_write_audit,
    seal_write_audit,
    verify_write_audit,
    write_audit_status,
)
from oracleagentmemory.core.deepsec.audit_chain import (  # noqa: E402
    generate_signing_key,
    public_jwk,
)

SEED = 20240613
USER = "alice"
OPS = ("add 1", "add N", "update", "delete")
GOAL = 1.15


class Side:
    """One store and the ids it holds, with a counter for fresh ids."""

    def __init__(self, name: str, store: OracleDBMemoryStore) -> None:
        self.name, self.store = name, store
        self.next = 0
        self.singles: list[str] = []
        self.times: dict[str, list[float]] = {op: [] for op in OPS}

    def fresh(self, count: int) -> list[str]:
        ids = [f"{self.name}-{self.next + n}" for n in range(count)]
        self.next += count
        return ids


def unit_vectors(rng: np.random.Generator, count: int, dim: int) -> npt.NDArray[np.float32]:
    matrix = rng.standard_normal((count, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def operations(batch: int, dim: int, rng: np.random.Generator
               ) -> dict[str, Callable[[Side], None]]:
    vectors = unit_vectors(rng, 4096, dim)
    pick = iter(range(10**9))

    def vector() -> list[float]:
        return [float(x) for x in vectors[next(pick) % len(vectors)]]

    def add_one(side: Side) -> None:
        ids = side.fresh(1)
        side.store.add(["a short memory about the user"], "memory", record_ids=ids,
                       embeddings=[vector()])
        side.singles.extend(ids)

    batch_vectors = [vector() for _ in range(batch)]

    def add_batch(side: Side) -> None:
        side.store.add([f"memory {n} of a batch" for n in range(batch)], "memory",
                       record_ids=side.fresh(batch), embeddings=batch_vectors)

    def update(side: Side) -> None:
        side.store.update("memory", side.singles[-1], content="updated content",
                          embedding=vector())

    def delete(side: Side) -> None:
        side.store.delete("memory", side.singles.pop(0))

    return {"add 1": add_one, "add N": add_batch, "update": update, "delete": delete}


def open_store(env: DdsEnvironment, store_id: str) -> OracleDBMemoryStore:
    return OracleDBMemoryStore(None, env.runtime_url, schema_policy=SchemaPolicy.NO_CHECK,
                               memory_store_id=store_id, schema_owner=OWNER)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(env: DdsEnvironment, iterations: int, warmup: int, batch: int, dim: int) -> int:
    off_id, on_id = env.new_store(vector_dim=dim), env.new_store(vector_dim=dim)
    enable_write_audit(env.secadmin_url, OWNER, on_id)
    rng = np.random.default_rng(SEED)
    ops = operations(batch, dim, rng)
    with OracleMemoryEndUserSecurityContext(env.context(USER)):
        sides = [Side("off", open_store(env, off_id)), Side("on", open_store(env, on_id))]
        try:
            for n in range(warmup + iterations):
                order = sides if n % 2 == 0 else sides[::-1]
                for op in OPS:
                    for side in order:
                        started = time.perf_counter()
                        ops[op](side)
                        elapsed = time.perf_counter() - started
                        if n >= warmup:
                            side.times[op].append(elapsed)
        finally:
            for side in sides:
                side.store.close()
    off, on = sides
    print(f"\n{iterations} iterations (+{warmup} warm-up) per operation, batch {batch}, "
          f"dim {dim}, end user {USER!r} via runtime login {RUNTIME!r}")
    print(f"{'operation':<10}{'off p50':>10}{'on p50':>10}{'ratio':>8}"
          f"{'off p95':>10}{'on p95':>10}{'ratio':>8}   (ms)")
    worst = 0.0
    for op in OPS:
        p50 = (statistics.median(off.times[op]), statistics.median(on.times[op]))
        p95 = (percentile(off.times[op], 0.95), percentile(on.times[op], 0.95))
        worst = max(worst, p50[1] / p50[0])
        print(f"{op:<10}{p50[0] * 1e3:>10.2f}{p50[1] * 1e3:>10.2f}{p50[1] / p50[0]:>7.2f}x"
              f"{p95[0] * 1e3:>10.2f}{p95[1] * 1e3:>10.2f}{p95[1] / p95[0]:>7.2f}x")
    status = write_audit_status(env.owner_url, OWNER, on_id)
    rows = list_write_audit(env.owner_url, OWNER, on_id, limit=100_000)
    named = sum(1 for r in rows if r.end_user == USER)
    print(f"audit rows written: {status.records} ({named} naming {USER!r})")
    print(f"worst p50 ratio {worst:.2f}x: {'meets' if worst <= GOAL else 'above'} the goal "
          f"of {GOAL:.2f}x")
    key = generate_signing_key()
    started = time.perf_counter()
    sealed = seal_write_audit(env.owner_url, OWNER, on_id, key)
    seal_seconds = time.perf_counter() - started
    started = time.perf_counter()
    verdict = verify_write_audit(env.owner_url, OWNER, on_id, public_jwk(key))
    verify_seconds = time.perf_counter() - started
    outcome = "ok" if verdict.ok else str(verdict.problem)
    print(f"seal: {sum(c.row_count for c in sealed)} rows in {seal_seconds:.2f} s; verify: "
          f"{verdict.records_checked} rows in {verify_seconds:.2f} s ({outcome})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--dim", type=int, default=384)
    add_server_arguments(parser, "a superuser's PostgreSQL URL (default: an embedded server)")
    args = parser.parse_args(argv)
    with bench_server(args.url, args.data_dir) as url:
        env = setup_environment(url)
        return run(env, args.iterations, args.warmup, args.batch, args.dim)


if __name__ == "__main__":
    sys.exit(main())
