"""Database CPU of one SDK get in an end-user context, on one connection, by kind of pool.

One protected store (the identities of ``tests/dds.py``, ``--memories`` memories of one
identity-provider user, as ``bench/gateway.py`` loads them). The same get
(``store.get("memory", id)`` inside ``OracleMemoryEndUserSecurityContext``, one round trip) runs
``--gets`` times over a pool of one connection of each kind:

* ``engine-built``: a :class:`~oracleagentmemory.engines.postgres.event_loop_pool.EventLoopPool`'s
  pool (the gateway's): a connection only the SDK has used since the database last checked it
  clean is applied without the clean-session scan, by the plain-SQL sealed apply, and its
  flight runs on named statements (``BEGIN``, the apply, the read, ``COMMIT``, the end check);
* ``application's``: a ``psycopg_pool.ConnectionPool`` the application made and passes in:
  every apply scans the session.

Database CPU is the backend's own (``utime + stime`` of ``/proc/<pid>/stat``, the pool's one
backend), per get; the runs alternate ``--rounds`` times and the spread is reported, since other
work on the machine adds noise to what a backend is charged.

Usage::

    .venv/bin/python bench/context_apply.py [--memories 1000] [--gets 4000] [--rounds 3]
        [--url URL | --data-dir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cpu import TICKS, proc_stat  # noqa: E402
from _embedded import add_server_arguments, bench_server  # noqa: E402
from dds import GROUP, IDP, OWNER, DdsEnvironment, setup_environment  # noqa: E402
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy  # noqa: E402
from oracleagentmemory.core.deepsec import (  # noqa: E402
    IdentityProviderUser,
    OracleMemoryEndUserSecurityContext,
    create_end_user_security_context,
)
from oracleagentmemory.engines.postgres.event_loop_pool import EventLoopPool  # noqa: E402

from gateway import load_store, user_of  # noqa: E402


def backend_ticks(pool: ConnectionPool[Any]) -> tuple[int, int]:
    """The pid of the pool's one backend and its CPU ticks so far (asked on a connection of
    its own, so the pool's connection is not touched)."""
    with pool.connection() as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    pid = int(row[0])
    fields = proc_stat(pid)
    assert fields is not None, "the bench needs the server on this machine"
    return pid, int(fields[11]) + int(fields[12])


def cpu_per_get(pool: ConnectionPool[Any], env: DdsEnvironment, store_id: str,
                ids: list[str], gets: int) -> float:
    """Backend CPU per get in microseconds, after a warm-up."""
    context = create_end_user_security_context(
        env.token, IdentityProviderUser(user_of(0), (GROUP,), IDP))
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(None, pool, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=store_id, schema_owner=OWNER)

        def get(n: int) -> Any:
            return store.get("memory", ids[n % len(ids)])

        for n in range(200):
            assert get(n) is not None
        pid, before = backend_ticks(pool)
        for n in range(gets):
            get(n)
        after_pid, after = backend_ticks(pool)
    assert after_pid == pid, "the pool's connection was replaced during the run"
    return (after - before) / TICKS / gets * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--gets", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    with bench_server(args.url, args.data_dir) as url:
        env = setup_environment(url)
        store_id, by_user = load_store(env, 1, args.memories, 64, "hashing")
        ids = next(iter(by_user.values()))
        engine_pool = EventLoopPool(env.runtime_url, name="bench-engine", min_size=1,
                                    max_size=1, timeout_seconds=10)
        engine_pool.open()
        application_pool: ConnectionPool[Any] = ConnectionPool(
            env.runtime_url, min_size=1, max_size=1, open=True)
        kinds: dict[str, ConnectionPool[Any]] = {"engine-built": engine_pool.pool,
                                                  "application's": application_pool}
        figures: dict[str, list[float]] = {kind: [] for kind in kinds}
        try:
            for _ in range(args.rounds):
                for kind, pool in kinds.items():
                    figures[kind].append(cpu_per_get(pool, env, store_id, ids, args.gets))
                    time.sleep(0.2)
        finally:
            engine_pool.close()
            application_pool.close()
        with psycopg.connect(url) as conn:
            version = conn.execute("SHOW server_version").fetchone()
    print(f"\nPostgreSQL {version[0] if version else '?'}; {args.gets} gets per run, "
          f"{args.rounds} runs each, one connection")
    print(f"{'pool':<16} {'median us/get':>14} {'min':>8} {'max':>8}")
    for kind, values in figures.items():
        print(f"{kind:<16} {statistics.median(values):14.1f} {min(values):8.1f} "
              f"{max(values):8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
