"""Where the CPU of one ``GET /v1/memories/{id}`` goes: the database, the SDK, the thread hop,
the gateway's request handling; measured side by side in one run.

``bench/gateway.py`` measures throughput and latency; this explains them. On one protected
store (as in ``bench/gateway.py``: ``--users`` users of ``--memories`` memories each):

* **database CPU per statement group**, from the PostgreSQL processes' own CPU counters
  (``/proc``; the embedded server only): a bare ``SELECT 1`` round trip, an end-user context
  applied and cleared with nothing in it, and the SDK's memory read inside a context;
* **client CPU of the SDK's read**, called inline and through ``asyncio.to_thread`` (as the
  gateway calls it), one at a time on a uvloop loop, next to an empty ``to_thread`` hop;
* **the gateway in process**: its ASGI app (no HTTP server, no sockets) driven by
  ``--tasks`` concurrent tasks for ``GET /v1/me`` (authentication, no database),
  ``GET /v1/memories/{id}`` and ``POST /v1/search`` (three vocabulary words, ``k`` 10, as
  ``bench/gateway.py`` sends), CPU per request of this process.

The last line adds the gateway's CPU per read to the database's and divides the machine's
cores by it: the most reads per second this machine could serve with that code, were every
core busy with nothing else (the HTTP server and the load generator come on top).

Usage::

    .venv/bin/python bench/gateway_costs.py [--users 4] [--memories 1000] [--iterations 2000]
        [--seconds 5] [--tasks 16] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import psycopg
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cpu import cpu_since, own_cpu, server_pid, tree_cpu  # noqa: E402
from _embedded import bench_server  # noqa: E402
from dds import AUDIENCE, GROUP, IDP, setup_environment  # noqa: E402
from oam_gateway.app import create_app  # noqa: E402
from oam_gateway.config.settings import load_settings  # noqa: E402
from oam_gateway.rest.memories import memory  # noqa: E402
from oracleagentmemory.core import OracleAgentMemory  # noqa: E402
from oracleagentmemory.core.deepsec import (  # noqa: E402
    IdentityProviderUser,
    OracleMemoryEndUserSecurityContext,
    create_end_user_security_context,
)
from oracleagentmemory.engines.postgres.context_sql import context_transaction  # noqa: E402

from gateway import SEED, direct_client, load_store, sentence, write_settings  # noqa: E402

POSTMASTER: list[int | None] = [None]
"""The pid of the bench's server (set in :func:`main`)."""


def per_call(work: Callable[[], Any], iterations: int) -> tuple[float, float, float | None]:
    """Wall, client CPU and database CPU per call of ``work`` (microseconds), after a warm-up."""
    for _ in range(max(1, iterations // 10)):
        work()
    pg_before, cpu_before, started = tree_cpu(POSTMASTER[0]), own_cpu(), \
        time.perf_counter()
    for _ in range(iterations):
        work()
    wall = time.perf_counter() - started
    cpu = own_cpu() - cpu_before
    pg = cpu_since(pg_before, tree_cpu(POSTMASTER[0]))
    scale = 1e6 / iterations
    return wall * scale, cpu * scale, None if pg is None else pg * scale


def async_per_call(make: Callable[[int], Awaitable[Any]], iterations: int
                   ) -> tuple[float, float]:
    """Wall and client CPU per awaited call (microseconds), one at a time on uvloop."""
    async def main() -> tuple[float, float]:
        for n in range(max(1, iterations // 10)):
            await make(n)
        cpu_before, started = own_cpu(), time.perf_counter()
        for n in range(iterations):
            await make(n)
        scale = 1e6 / iterations
        return (time.perf_counter() - started) * scale, (own_cpu() - cpu_before) * scale

    return uvloop.run(main())


def _row(label: str, wall: float, cpu: float, pg: float | None) -> str:
    database = "n/a" if pg is None else f"{pg:8.0f}"
    return f"  {label:<48} {wall:8.0f} {cpu:8.0f} {database:>8}"


def database_costs(env: Any, client: OracleAgentMemory, context: Any, ids: list[str],
                   iterations: int) -> dict[str, tuple[float, float, float | None]]:
    """Per-call costs of a round trip, a bare context and the SDK's read in a context."""
    results: dict[str, tuple[float, float, float | None]] = {}
    with psycopg.connect(env.runtime_url, autocommit=True) as conn:
        results["SELECT 1 (one round trip)"] = per_call(
            lambda: conn.execute("SELECT 1").fetchone(), iterations)

        def bare_context() -> None:
            with context_transaction(conn, context):
                pass
        results["context applied and cleared, nothing in it"] = per_call(bare_context,
                                                                         iterations)
    n = iter(range(10**9))

    def sdk_read() -> None:
        with OracleMemoryEndUserSecurityContext(context), client.transaction():
            memory(client, ids[next(n) % len(ids)])
    results["SDK memory read in a context (the route's work)"] = per_call(sdk_read, iterations)
    return results


def hop_costs(client: OracleAgentMemory, context: Any, ids: list[str],
              iterations: int) -> dict[str, tuple[float, float]]:
    """The SDK read inline and through ``asyncio.to_thread``; an empty hop."""
    def read(n: int) -> None:
        with client.transaction():
            memory(client, ids[n % len(ids)])

    async def inline(n: int) -> None:
        async with OracleMemoryEndUserSecurityContext(context):
            read(n)

    async def threaded(n: int) -> None:
        async with OracleMemoryEndUserSecurityContext(context):
            await asyncio.to_thread(read, n)

    async def empty_hop(n: int) -> None:
        await asyncio.to_thread(int, n)

    return {"SDK read, inline on the loop": async_per_call(inline, iterations),
            "SDK read, through asyncio.to_thread": async_per_call(threaded, iterations),
            "asyncio.to_thread of nothing": async_per_call(empty_hop, iterations)}


def gateway_costs(settings_file: Path, database_url: str, tokens: dict[str, str],
                  ids: dict[str, list[str]], tasks: int, seconds: float
                  ) -> dict[str, tuple[float, float, int]]:
    """Requests/s and CPU per request of the gateway's ASGI app, ``tasks`` at a time."""
    app = create_app(_settings_with_database(settings_file, database_url))
    users = list(tokens)
    rng = random.Random(SEED)
    searches = [json.dumps({"query": sentence(rng, 3), "k": 10}).encode() for _ in range(400)]
    paths: dict[str, Callable[[str, int], tuple[str, str, bytes]]] = {
        "GET /v1/me (no database)": lambda user, n: ("GET", "/v1/me", b""),
        "GET /v1/memories/{id}": lambda user, n: (
            "GET", f"/v1/memories/{ids[user][n % len(ids[user])]}", b""),
        "POST /v1/search (k 10)": lambda user, n: ("POST", "/v1/search",
                                                   searches[n % len(searches)]),
    }

    async def request(target: tuple[str, str, bytes], token: str) -> int:
        method, path, body = target
        headers = [(b"host", b"bench"), (b"authorization", f"Bearer {token}".encode())]
        if body:
            headers += [(b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode())]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
                 "server": ("127.0.0.1", 80), "headers": headers}
        statuses: list[int] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(int(message["status"]))

        await app(scope, receive, send)
        return statuses[0]

    async def drive(route: Callable[[str, int], tuple[str, str, bytes]], run_seconds: float
                    ) -> tuple[int, int]:
        done, failed, deadline = 0, 0, time.perf_counter() + run_seconds

        async def one(start: int) -> None:
            nonlocal done, failed
            n = start
            while time.perf_counter() < deadline:
                n += tasks
                user = users[n % len(users)]
                failed += await request(route(user, n), tokens[user]) != 200
                done += 1
        await asyncio.gather(*(one(i) for i in range(tasks)))
        return done, failed

    async def main() -> dict[str, tuple[float, float, int]]:
        results: dict[str, tuple[float, float, int]] = {}
        async with app.router.lifespan_context(app):
            for label, route in paths.items():
                await drive(route, min(1.0, seconds))  # warm: pool, caches, plans
                cpu_before, started = own_cpu(), time.perf_counter()
                done, failed = await drive(route, seconds)
                elapsed = time.perf_counter() - started
                results[label] = (done / elapsed, (own_cpu() - cpu_before) / done * 1e6,
                                  failed)
        return results

    return uvloop.run(main())


def _settings_with_database(settings_file: Path, database_url: str) -> Any:
    """The settings of ``settings_file`` with the runtime login's URL (as ``bench/gateway.py``
    passes it, by environment), leaving the environment as it was."""
    name = "OAM_GATEWAY_DATABASE_URL"
    saved = os.environ.get(name)
    os.environ[name] = database_url
    try:
        return load_settings(settings_file)
    finally:
        if saved is None:
            del os.environ[name]
        else:
            os.environ[name] = saved


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--memories", type=int, default=1000, help="memories per user")
    parser.add_argument("--iterations", type=int, default=2000,
                        help="calls per measured database and SDK row")
    parser.add_argument("--seconds", type=float, default=5.0, help="each gateway run")
    parser.add_argument("--tasks", type=int, default=16, help="concurrent gateway requests")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="the embedded server's data directory (default: a temporary one)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with bench_server(None, args.data_dir) as url, \
            tempfile.TemporaryDirectory(prefix="oam-bench-costs-") as tmp:
        env = setup_environment(url)
        with psycopg.connect(url) as conn:
            POSTMASTER[0] = server_pid(conn)
        store_id, ids = load_store(env, args.users, args.memories, 64, "hashing")
        user = next(iter(ids))
        context = create_end_user_security_context(
            env.token, IdentityProviderUser(user.split(":", 1)[1], (GROUP,), IDP))
        with direct_client(env, store_id, 2, "hashing", 64) as client:
            database = database_costs(env, client, context, ids[user], args.iterations)
            hops = hop_costs(client, context, ids[user], args.iterations)
        tokens = {u: env.issuer.token(u.split(":", 1)[1], audience=AUDIENCE, groups=[GROUP],
                                      scope="memory:read memory:write", lifetime_seconds=3600)
                  for u in ids}
        settings = write_settings(env, store_id, Path(tmp), 8, "hashing", 64)
        gateway = gateway_costs(settings, env.runtime_url, tokens, ids, args.tasks,
                                args.seconds)
    print(f"\n{'per call, microseconds':<50} {'wall':>8} {'client':>8} {'database':>8}")
    print("database and SDK (one connection, one call at a time):")
    for label, (wall, cpu, pg) in database.items():
        print(_row(label, wall, cpu, pg))
    print("the gateway's thread hop (uvloop, one call at a time):")
    for label, (wall, cpu) in hops.items():
        print(_row(label, wall, cpu, None))
    print(f"the gateway in process ({args.tasks} concurrent requests, no HTTP server):")
    print(f"  {'route':<36} {'req/s':>8} {'CPU/request':>12} {'failed':>7}")
    for label, (rps, cpu, failed) in gateway.items():
        print(f"  {label:<36} {rps:8.0f} {cpu:12.0f} {failed:7d}")
    read_pg = database["SDK memory read in a context (the route's work)"][2]
    read_gateway = gateway["GET /v1/memories/{id}"][1]
    cores = os.cpu_count() or 1
    if read_pg is not None:
        ceiling = cores / ((read_gateway + read_pg) / 1e6)
        print(f"\nceiling for GET /v1/memories/{{id}} on {cores} cores: {ceiling:.0f}/s "
              f"({read_gateway:.0f} us gateway + {read_pg:.0f} us database CPU per read; "
              "HTTP server and load generator not counted)")
    return 1 if any(failed for *_, failed in gateway.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
