"""Throughput and latency of the gateway over loopback HTTP, next to the same SDK calls direct.

One protected store (the identities of ``tests/dds.py``; own-rows and global policies granted
to the test identity provider's group) holds ``--memories`` memories for each of ``--users``
identity-provider users, loaded by the schema owner and ``VACUUM ANALYZE``d. The gateway runs
as its own process (``oam-gateway serve``, one uvicorn worker, the tenant pool of ``--pool``
connections), vouching for those users. Then, for each operation:

* ``get``: ``GET /v1/memories/{id}`` of a random memory of the caller;
* ``search``: ``POST /v1/search`` of three vocabulary words, ``k`` 10;
* ``add``: ``POST /v1/memories`` of a short sentence (answers the stored record);

the load generator (``wrk``, C, one thread, ``--connections`` keep-alive connections, callers'
tokens in turn; without ``wrk`` a lean Python one, ``http_load``, which may itself be the
bottleneck and is reported as such) drives the gateway for ``--seconds``, then the same work
runs in this process through the SDK directly (the routes' work functions inside
``OracleMemoryEndUserSecurityContext`` on a client over an equal pool, ``--connections``
threads). Then both at one connection, for the per-call latency the gateway adds (p50 gateway
- p50 direct). With ``--audit``, ``add`` is measured with the store's write audit off and on,
alternating.

For each run at ``--connections`` the bench also says where the CPU went, per request: the
gateway's processes, the database server's and the load generator's (``/proc`` counters of
those process trees only), next to the direct run's (this process and the server), with how busy
the machine was and the requests/s that CPU per request allows were every core busy with it.

**The floor** (issue 23), for ``get`` and ``search``: a bare Starlette app (``floor_app``: no
token verification, no middleware) under the same uvicorn settings as ``oam-gateway serve``,
with a psycopg ``AsyncConnectionPool`` of ``--pool`` connections as the same runtime login,
sending the statements the gateway itself sent for the same operation (``floor_program``:
captured on the wire from a gateway run through ``pg_relay``, the request's values in their
slots; ``BEGIN``, the context apply with an assertion made once per end user as the SDK makes
it, the statements, ``COMMIT``) in one pipeline per stage: one round trip for a get, two for a
search (its record read needs the candidate round's rows); the pipeline is libpq's, through
``psycopg.pq`` (``--floor-pipeline psycopg``: ``AsyncConnection.pipeline()``). It is driven
right after the gateway, by the same load generator at the same connections; the bench reports
both
requests/s, their ratio, CPU per request of each process and the database's CPU per gateway
request. Round trips per get: the client flights a relay between a gateway (pool of one
connection) and the database counts over ``--round-trip-gets`` sequential gets after a
warm-up (a flight: the client sending after having received; the floor's likewise); round
trips per search likewise, over as many sequential searches.

``--quick`` (within 5 minutes on 2 cores): get and search only, 5,000 memories per user, 5 s
runs, no direct or one-connection runs. ``--json FILE`` writes ``{"get": {"gateway_rps",
"floor_rps", "ratio", "gateway_cpu_us", "floor_cpu_us", "db_cpu_us"}, "search": {...},
"round_trips_per_get": N, "round_trips_per_search": N}`` besides the tables.

Goals (issue 11), this 2-core machine, 10k memories per user: at least 1,200 ``get``/s, at least
300 ``search``/s, gateway p50 overhead at most 1 ms over the direct call, audit on/off at most
1.15x. Goals (issue 23, same-run ratios): gateway at least 0.8x the floor's requests/s for get
and search; database CPU at most 110 us per get and 1.5 ms per search (4 users x 5k); one round
trip per get.

Usage::

    .venv/bin/python bench/gateway.py [--users 4] [--memories 10000] [--seconds 10]
        [--connections 16] [--pool 8] [--embedder wordllama] [--audit] [--quick]
        [--json FILE] [--answers FILE] [--round-trip-gets 50] [--floor-pipeline libpq]
        [--url URL | --data-dir DIR]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cpu import cpu_since, machine_ticks, own_cpu, server_pid, tree_cpu  # noqa: E402
from _embedded import add_server_arguments, bench_server  # noqa: E402
from dds import AUDIENCE, GROUP, IDP, ISSUER, OWNER, DdsEnvironment, setup_environment  # noqa: E402
from floor import FloorSettings, FloorStudy, floor_process, study_floor  # noqa: E402
from floor_app import PIPELINES  # noqa: E402
from http_load import request_bytes, run_load  # noqa: E402
from oam_gateway.rest.memories import memory  # noqa: E402
from oam_gateway.tenancy.tenants import shared_embedder  # noqa: E402
from oracleagentmemory.core import OracleAgentMemory, OracleDBMemoryStore, SchemaPolicy  # noqa: E402
from oracleagentmemory.core.deepsec import (  # noqa: E402
    IdentityProviderUser,
    OracleMemoryEndUserSecurityContext,
    create_end_user_security_context,
)
from psycopg_pool import ConnectionPool  # noqa: E402
from served import free_port, served_process  # noqa: E402

SEED = 20261201
OPS = ("get", "search", "add")
WORDS = ("alpine", "hiking", "coffee", "espresso", "garden", "tulip", "violin", "sonata",
         "python", "rust", "database", "index", "paris", "lisbon", "tokyo", "sushi", "ramen",
         "bicycle", "marathon", "chess", "opening", "novel", "poetry", "cat", "dog", "allergy",
         "peanut", "window", "seat", "aisle", "morning", "evening", "rain", "snow", "winter",
         "summer")
GOALS = {"get_rps": 1200.0, "search_rps": 300.0, "overhead_ms": 1.0, "audit_ratio": 1.15,
         "floor_ratio": 0.8, "db_get_us": 110.0, "db_search_us": 1500.0, "round_trips": 1.0}
FLOOR_OPS = ("get", "search")
"""The operations the floor answers."""
QUICK = {"memories": 5000, "seconds": 5.0, "ops": "get,search"}
"""``--quick``'s defaults (each overridden when given)."""


def sentence(rng: random.Random, words: int = 8) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def user_of(n: int) -> str:
    return f"bench{n:02d}"


# --- the store ---------------------------------------------------------------------------------
def load_store(env: DdsEnvironment, users: int, per_user: int, dimension: int,
               embedder_name: str) -> tuple[str, dict[str, list[str]]]:
    """A protected store with ``per_user`` memories of each user; their ids by user."""
    store_id = env.new_store(vector_dim=dimension)
    rng = random.Random(SEED)
    embedder = shared_embedder(embedder_name, dimension)
    ids: dict[str, list[str]] = {}
    started = time.perf_counter()
    with OracleDBMemoryStore(embedder, env.owner_url, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                             memory_store_id=store_id) as store:
        for n in range(users):
            owner = f"{IDP}:{user_of(n)}"
            ids[owner] = []
            for start in range(0, per_user, 2000):
                count = min(2000, per_user - start)
                ids[owner] += [str(i) for i in store.add(
                    [sentence(rng) for _ in range(count)], "memory",
                    user_ids=[owner] * count)]
    with psycopg.connect(env.owner_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    print(f"loaded {users} x {per_user} memories in {time.perf_counter() - started:.1f} s",
          flush=True)
    return store_id, ids


# --- the gateway process ----------------------------------------------------------------------
def write_settings(env: DdsEnvironment, store_id: str, directory: Path, pool: int,
                   embedder: str, dimension: int) -> Path:
    """The gateway's settings file for the store (keys and application token beside it)."""
    jwks = directory / "jwks.json"
    jwks.write_text(json.dumps(env.issuer.jwks()), encoding="utf-8")
    token_file = directory / "app-token"
    token_file.write_text(env.token, encoding="utf-8")
    token_file.chmod(0o600)
    settings = directory / "gateway.toml"
    settings.write_text("\n".join([
        f'memory_store_id = "{store_id}"', f'schema_owner = "{OWNER}"',
        f'issuer = "{ISSUER}"', f'audience = "{AUDIENCE}"', f'jwks_file = "{jwks}"',
        f'identity_provider = "{IDP}"', f'app_token_file = "{token_file}"',
        f'embedder = "{embedder}"', f"embedding_dimension = {dimension}",
        f"pool_min_size = {pool}", f"pool_max_size = {pool}", "tenant = \"bench\"",
        "[limits]", 'rate_limit = "100000000/minute"', "max_k = 100", ""]), encoding="utf-8")
    return settings


@dataclass(frozen=True)
class GatewayProcess:
    """A running ``oam-gateway serve``: its base URL and its process id."""

    base: str
    pid: int


@contextmanager
def gateway_process(env: DdsEnvironment, store_id: str, directory: Path, pool: int,
                    embedder: str, dimension: int, workers: int = 1,
                    database_url: str | None = None) -> Iterator[GatewayProcess]:
    """``oam-gateway serve`` for the store, on a free port (connecting to ``database_url``,
    by default the runtime login's URL)."""
    settings = write_settings(env, store_id, directory, pool, embedder, dimension)
    port = free_port()
    command = [str(Path(sys.executable).with_name("oam-gateway")), "serve", "--settings",
               str(settings), "--port", str(port), "--workers", str(workers)]
    env_vars = {**os.environ, "OAM_GATEWAY_DATABASE_URL": database_url or env.runtime_url}
    with served_process("gateway", command, port, directory / f"gateway-{port}.log",
                        env_vars) as served:
        yield GatewayProcess(served.base, served.pid)


# --- results ----------------------------------------------------------------------------------
@dataclass
class Run:
    """Requests per second and latency percentiles (ms) of one measured run."""

    rps: float
    p50: float
    p95: float
    p99: float
    errors: int
    requests: int

    def row(self) -> str:
        return (f"{self.rps:9.0f} {self.p50:8.2f} {self.p95:8.2f} {self.p99:8.2f} "
                f"{self.errors:6d}")


def _percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, int(round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


def run_of(latencies: list[float], errors: int, seconds: float) -> Run:
    values = sorted(latencies)
    return Run(len(values) / seconds, _percentile(values, 0.50) * 1e3,
               _percentile(values, 0.95) * 1e3, _percentile(values, 0.99) * 1e3, errors,
               len(values))


@dataclass(frozen=True)
class CpuSplit:
    """Where the machine's CPU went during one gateway run, per request (microseconds)."""

    gateway_us: float | None
    """The gateway's processes (every worker); None when not visible."""
    database_us: float | None
    """The database server's processes; None when the server is not on this machine."""
    load_us: float
    """The load generator (``wrk``, or this process when it drives the load)."""
    machine_busy: float
    """How busy the machine's cores were, 0 to 1."""

    def total_us(self) -> float | None:
        if self.gateway_us is None or self.database_us is None:
            return None
        return self.gateway_us + self.database_us + self.load_us


def with_cpu(run: Callable[[], Run], gateway_pid: int | None, postmaster: int | None
             ) -> tuple[Run, CpuSplit]:
    """``run()`` and the CPU each side spent on its requests meanwhile (``gateway_pid`` None:
    a direct run, whose SDK calls are this process's own CPU, reported as the load's)."""
    gateway_before, database_before = tree_cpu(gateway_pid), tree_cpu(postmaster)
    own_before, (busy_before, total_before) = own_cpu(children=True), machine_ticks()
    result = run()
    busy, total = machine_ticks()
    per_request = 1e6 / max(1, result.requests)
    gateway = cpu_since(gateway_before, tree_cpu(gateway_pid))
    database = cpu_since(database_before, tree_cpu(postmaster))
    return result, CpuSplit(
        None if gateway is None else gateway * per_request,
        None if database is None else database * per_request,
        (own_cpu(children=True) - own_before) * per_request,
        (busy - busy_before) / max(1, total - total_before))


# --- the requests -------------------------------------------------------------------------------
@dataclass
class Workload:
    """Tokens, ids and request bodies of each caller, in turn."""

    tokens: dict[str, str]
    ids: dict[str, list[str]]
    rng: random.Random

    def users(self) -> list[str]:
        return list(self.tokens)

    def search_body(self) -> dict[str, Any]:
        return {"query": sentence(self.rng, 3), "k": 10}

    def add_body(self) -> dict[str, Any]:
        return {"content": sentence(self.rng)}


def wrk_script(op: str, work: Workload, count: int = 400) -> str:
    """A ``wrk`` Lua script that sends ``op`` requests, callers in turn."""
    users = work.users()
    tokens = ",".join(json.dumps(work.tokens[u]) for u in users)
    if op == "get":
        table = ",".join("{" + ",".join(json.dumps(i) for i in work.rng.sample(
            work.ids[u], min(count, len(work.ids[u])))) + "}" for u in users)
        build = ('local list = items[u]; local id = list[(n % #list) + 1]\n'
                 '  return wrk.format("GET", "/v1/memories/" .. id, '
                 '{["Authorization"] = "Bearer " .. tokens[u]})')
    else:
        make = work.search_body if op == "search" else work.add_body
        path = "/v1/search" if op == "search" else "/v1/memories"
        bodies = ",".join(json.dumps(json.dumps(make())) for _ in range(count))
        table = bodies
        build = (f'local body = items[(n % #items) + 1]\n'
                 f'  return wrk.format("POST", "{path}", {{["Authorization"] = "Bearer " .. '
                 'tokens[u], ["Content-Type"] = "application/json"}, body)')
    return (f"tokens = {{{tokens}}}\nitems = {{{table}}}\nn = 0\n"
            "request = function()\n  n = n + 1\n  local u = (n % #tokens) + 1\n"
            f"  {build}\nend\n"
            "done = function(summary, latency, requests)\n"
            "  local e = summary.errors\n"
            '  io.write(string.format("WRK %d %d %d %d %d %d %d\\n", summary.requests, '
            "summary.duration, e.connect + e.read + e.write + e.timeout, e.status, "
            "latency:percentile(50), latency:percentile(95), latency:percentile(99)))\n"
            "end\n")


def run_wrk(base: str, op: str, work: Workload, connections: int, seconds: float,
            directory: Path) -> Run:
    script = directory / f"{op}.lua"
    script.write_text(wrk_script(op, work), encoding="utf-8")
    output = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout", "10s",
         "-s", str(script), base], capture_output=True, text=True, check=True).stdout
    line = next(x for x in output.splitlines() if x.startswith("WRK "))
    requests, duration_us, errors, status_errors, p50, p95, p99 = map(int, line.split()[1:])
    return Run(requests / (duration_us / 1e6), p50 / 1e3, p95 / 1e3, p99 / 1e3,
               errors + status_errors, requests)


def run_python_load(base: str, op: str, work: Workload, connections: int,
                    seconds: float, count: int = 400) -> Run:
    """The fallback load generator (``http_load``: raw keep-alive HTTP/1.1 on uvloop), sending
    ``count`` prepared requests in turn, callers in turn, as the ``wrk`` script does."""
    users = work.users()
    samples = {user: work.rng.sample(work.ids[user], min(count, len(work.ids[user])))
               for user in users}
    requests = []
    for n in range(count):
        user = users[n % len(users)]
        token = work.tokens[user]
        if op == "get":
            ids = samples[user]
            requests.append(request_bytes("GET", f"/v1/memories/{ids[n % len(ids)]}", token))
        elif op == "search":
            requests.append(request_bytes("POST", "/v1/search", token, work.search_body()))
        else:
            requests.append(request_bytes("POST", "/v1/memories", token, work.add_body()))
    latencies, errors, elapsed = run_load(base, requests, connections, seconds)
    return run_of(latencies, errors, elapsed)


# --- the same work, direct --------------------------------------------------------------------
def direct_work(op: str, client: OracleAgentMemory, user: str, work: Workload,
                n: int) -> Callable[[], Any]:
    """What the gateway's route does for ``op`` inside the context, through the SDK."""
    if op == "get":
        ids = work.ids[user]

        def get() -> Any:
            with client.transaction():
                return memory(client, ids[n % len(ids)])
        return get
    if op == "search":
        query = work.search_body()["query"]
        return lambda: client.search(query, user_id=user, max_results=10)
    content = work.add_body()["content"]

    def add() -> Any:
        with client.transaction():
            return memory(client, client.add_memory(content, user_id=user))
    return add


def run_direct(op: str, client: OracleAgentMemory, app_token: str, work: Workload,
               threads: int, seconds: float) -> Run:
    users = work.users()
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds
    # One context per end user, reused, as an application keeps one per signed-in user (and
    # as the gateway does).
    contexts = {user: create_end_user_security_context(
        app_token, IdentityProviderUser(user.split(":", 1)[1], (GROUP,), IDP)) for user in users}

    def worker(index: int) -> None:
        nonlocal errors
        n = index
        mine: list[float] = []
        failed = 0
        while time.perf_counter() < deadline:
            n += threads
            user = users[n % len(users)]
            task = direct_work(op, client, user, work, n)
            started = time.perf_counter()
            try:
                with OracleMemoryEndUserSecurityContext(contexts[user]):
                    task()
            except Exception:
                failed += 1
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)
            errors += failed

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, range(threads)))
    return run_of(latencies, errors, time.perf_counter() - started)


@contextmanager
def direct_client(env: DdsEnvironment, store_id: str, pool_size: int, embedder: str,
                  dimension: int) -> Iterator[OracleAgentMemory]:
    pool: ConnectionPool[Any] = ConnectionPool(env.runtime_url, min_size=pool_size,
                                               max_size=pool_size, open=True)
    context = create_end_user_security_context(
        env.token, IdentityProviderUser(user_of(0), (GROUP,), IDP))
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(shared_embedder(embedder, dimension),
                                    pool, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=store_id, schema_owner=OWNER)
    client = OracleAgentMemory(store=store, extract_memories=False)
    try:
        yield client
    finally:
        client.close(timeout=5)
        pool.close()


# --- audit on/off -------------------------------------------------------------------------------
def audit_switch(env: DdsEnvironment, store_id: str) -> Callable[[bool], None]:
    """A function turning the store's write audit on or off (as the policy administrator)."""
    from oracleagentmemory.core.deepsec import audit as audit_api

    enable, disable = audit_api.enable_write_audit, audit_api.disable_write_audit

    def switch(on: bool) -> None:
        with psycopg.connect(env.secadmin_url) as conn:
            (enable if on else disable)(conn, OWNER, store_id)

    return switch


# --- main -----------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    arguments = sys.argv[1:] if argv is None else argv
    given = {a.lstrip("-").split("=", 1)[0].replace("-", "_") for a in arguments
             if a.startswith("--")}
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--memories", type=int, default=10_000, help="memories per user")
    parser.add_argument("--seconds", type=float, default=10.0, help="each measured run")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--pool", type=int, default=8,
                        help="the tenant's pool size (per gateway worker)")
    parser.add_argument("--workers", type=int, default=1, help="gateway worker processes")
    parser.add_argument("--embedder", choices=("wordllama", "hashing"), default="wordllama")
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated: get,search,add")
    parser.add_argument("--audit", action="store_true",
                        help="also measure add with the write audit off and on")
    parser.add_argument("--python-load", action="store_true",
                        help="use the Python load generator even when wrk is installed")
    parser.add_argument("--quick", action="store_true",
                        help=f"get and search only, against the floor, no direct or "
                             f"one-connection runs; --memories {QUICK['memories']} and "
                             f"--seconds {QUICK['seconds']:g} unless given")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="also write the floor comparison and round trips per get as JSON")
    parser.add_argument("--answers", type=Path, metavar="FILE",
                        help="write the gateway's and the floor's bodies for the same get and "
                             "search (JSON), to compare them")
    parser.add_argument("--floor-pipeline", choices=PIPELINES, default=PIPELINES[0],
                        help="how the floor pipelines a stage: libpq's pipeline mode through "
                             "psycopg.pq, or psycopg's AsyncConnection.pipeline()")
    parser.add_argument("--round-trip-gets", type=int, default=50,
                        help="sequential gets over which round trips per get are counted")
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    for name, value in QUICK.items():
        if args.quick and name not in given:
            setattr(args, name, value)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ops = [op for op in args.ops.split(",") if op]
    unknown = sorted(set(ops) - set(OPS))
    if unknown:
        print(f"unknown operation {unknown[0]!r}", file=sys.stderr)
        return 2
    dimension = 256 if args.embedder == "wordllama" else 64
    use_wrk = shutil.which("wrk") is not None and not args.python_load
    generator = "wrk (C, 1 thread)" if use_wrk else "Python (raw HTTP/1.1 on uvloop)"
    print(f"load generator: {generator}"
          + ("" if use_wrk else ": may itself be the bottleneck; install wrk"), flush=True)
    with bench_server(args.url, args.data_dir) as url, \
            tempfile.TemporaryDirectory(prefix="oam-bench-gw-") as tmp:
        env = setup_environment(url)
        store_id, ids = load_store(env, args.users, args.memories, dimension, args.embedder)
        rng = random.Random(SEED + 1)
        tokens = {user: env.issuer.token(user.split(":", 1)[1], audience=AUDIENCE,
                                         groups=[GROUP], scope="memory:read memory:write",
                                         lifetime_seconds=3600) for user in ids}
        work = Workload(tokens, ids, rng)
        directory = Path(tmp)
        results: dict[tuple[str, str, int], Run] = {}
        with psycopg.connect(url) as conn:
            postmaster = server_pid(conn)
        cpu: dict[str, CpuSplit] = {}
        direct_cpu: dict[str, CpuSplit] = {}
        floor_ops = [op for op in ops if op in FLOOR_OPS]
        floor_settings = FloorSettings(env.runtime_url, args.pool, directory / "app-token", IDP,
                                       args.embedder, dimension, args.floor_pipeline)
        study = _study_floor(env, store_id, directory, args, work, floor_settings, dimension) \
            if floor_ops else None
        floor_runs: dict[str, tuple[Run, CpuSplit]] = {}
        with gateway_process(env, store_id, directory, args.pool, args.embedder,
                             dimension, args.workers) as gateway, \
                (nullcontext(None) if args.quick else direct_client(
                    env, store_id, args.pool, args.embedder, dimension)) as client, \
                _maybe_floor(study, floor_settings, directory) as floor:
            base = gateway.base
            for op in ops:
                for connections in (args.connections,) if args.quick else (args.connections, 1):
                    warm = min(2.0, args.seconds)
                    _gateway_run(base, op, work, connections, warm, directory, use_wrk)
                    run, split = with_cpu(functools.partial(
                        _gateway_run, base, op, work, connections, args.seconds, directory,
                        use_wrk), gateway.pid, postmaster)
                    results[("gateway", op, connections)] = run
                    if connections == args.connections:
                        cpu[op] = split
                    if floor is not None and op in floor_ops and connections == args.connections:
                        # Right after the gateway, the same load at the same connections.
                        _gateway_run(floor.base, op, work, connections, warm, directory, use_wrk)
                        floor_runs[op] = with_cpu(functools.partial(
                            _gateway_run, floor.base, op, work, connections, args.seconds,
                            directory, use_wrk), floor.pid, postmaster)
                    if client is None:
                        continue
                    run_direct(op, client, env.token, work, connections, warm)
                    run, split = with_cpu(functools.partial(
                        run_direct, op, client, env.token, work, connections, args.seconds),
                        None, postmaster)
                    results[("direct", op, connections)] = run
                    if connections == args.connections:
                        direct_cpu[op] = split
            audit = _audit_runs(env, store_id, base, work, args, directory, use_wrk) \
                if args.audit else None
        if not args.quick:
            _report(results, ops, args.connections, audit)
            _report_cpu(cpu, direct_cpu, args.connections)
        comparison = _floor_comparison(results, cpu, floor_runs, args.connections)
        _report_floor(comparison, floor_runs, study, args.connections, args.floor_pipeline)
        if args.json:
            summary: dict[str, Any] = dict(comparison)
            if study is not None:
                summary["round_trips_per_get"] = study.gateway_round_trips_per_get
                summary["round_trips_per_search"] = study.gateway_round_trips_per_search
            args.json.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        if args.answers and study is not None:
            args.answers.write_text(json.dumps(study.answers, indent=2) + "\n",
                                    encoding="utf-8")
    return 0


def _study_floor(env: DdsEnvironment, store_id: str, directory: Path, args: argparse.Namespace,
                 work: Workload, settings: FloorSettings, dimension: int) -> FloorStudy:
    """The floor's program and the round trips per get (``floor.study_floor``), with a
    gateway of one pool connection run through a relay for it."""
    user = work.users()[0]

    def start_gateway(database_url: str) -> Any:
        return gateway_process(env, store_id, directory, 1, args.embedder, dimension,
                               database_url=database_url)

    started = time.perf_counter()
    study = study_floor(start_gateway, settings, directory, work.tokens[user], user,
                        work.ids[user], sentence(random.Random(SEED + 2), 3),
                        args.round_trip_gets)
    print(f"floor program captured from the gateway's get and search, round trips counted in "
          f"{time.perf_counter() - started:.1f} s", flush=True)
    for op in FLOOR_OPS:
        stages = " | ".join("; ".join(_statement_label(statement) for statement in stage)
                            for stage in study.program[op])
        print(f"  floor {op}: {stages}", flush=True)
    return study


def _statement_label(statement: dict[str, Any]) -> str:
    """A statement of the floor's program in a few words (marked when prepared)."""
    text = " ".join(str(statement["text"]).split())
    short = text if len(text) <= 40 else text[:37] + "..."
    return short + (" [prepared]" if statement["named"] else "")


@contextmanager
def _maybe_floor(study: FloorStudy | None, settings: FloorSettings,
                 directory: Path) -> Iterator[Any]:
    if study is None:
        yield None
        return
    with floor_process(settings, study.program, directory) as floor:
        yield floor


def _floor_comparison(results: dict[tuple[str, str, int], Run], cpu: dict[str, CpuSplit],
                      floor_runs: dict[str, tuple[Run, CpuSplit]], connections: int
                      ) -> dict[str, dict[str, float | None]]:
    """Per operation the floor answers: requests/s of both, their ratio, CPU per request of
    each process and the database's CPU per gateway request."""
    comparison: dict[str, dict[str, float | None]] = {}
    for op, (floor_run, floor_split) in floor_runs.items():
        gateway_run, split = results[("gateway", op, connections)], cpu[op]
        comparison[op] = {
            "gateway_rps": gateway_run.rps, "floor_rps": floor_run.rps,
            "ratio": gateway_run.rps / floor_run.rps if floor_run.rps else None,
            "gateway_cpu_us": split.gateway_us, "floor_cpu_us": floor_split.gateway_us,
            "db_cpu_us": split.database_us}
    return comparison


def _report_floor(comparison: dict[str, dict[str, float | None]],
                  floor_runs: dict[str, tuple[Run, CpuSplit]], study: FloorStudy | None,
                  connections: int, pipeline: str) -> None:
    """The gateway next to the floor (same SQL, bare server) in this run."""
    if not comparison:
        return

    def us(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.0f}"

    print(f"\nthe gateway against the floor at {connections} connections (a bare Starlette app, "
          "same uvicorn settings and pool size, the gateway's SQL in one pipeline per stage "
          f"({pipeline}), no verification):")
    print(f"{'operation':<10} {'side':<8} {'req/s':>9} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'errors':>6} {'CPU us':>7} {'db us':>7}")
    goals = {"get": GOALS["db_get_us"], "search": GOALS["db_search_us"]}
    for op, row in comparison.items():
        floor_run, floor_split = floor_runs[op]
        print(f"{op:<10} {'gateway':<8} {row['gateway_rps']:9.0f} {'':>8} {'':>8} {'':>6} "
              f"{us(row['gateway_cpu_us']):>7} {us(row['db_cpu_us']):>7}")
        print(f"{op:<10} {'floor':<8} {floor_run.rps:9.0f} {floor_run.p50:8.2f} "
              f"{floor_run.p95:8.2f} {floor_run.errors:6d} {us(floor_split.gateway_us):>7} "
              f"{us(floor_split.database_us):>7}")
        ratio = row["ratio"]
        print(f"  {op}: gateway / floor {'n/a' if ratio is None else f'{ratio:.2f}'}x "
              f"(goal >= {GOALS['floor_ratio']}x); database CPU per gateway {op} "
              f"{us(row['db_cpu_us'])} us (goal <= {goals[op]:.0f} us)")
    if study is not None:
        print(f"round trips per get: gateway {study.gateway_round_trips_per_get:.2f} (goal "
              f"{GOALS['round_trips']:.0f}), floor {study.floor_round_trips_per_get:.2f} "
              "(client flights to the database per get, counted by a relay over sequential "
              "gets on one connection)")
        print(f"round trips per search: gateway {study.gateway_round_trips_per_search:.2f}, "
              f"floor {study.floor_round_trips_per_search:.2f} (likewise, sequential searches)")


def _gateway_run(base: str, op: str, work: Workload, connections: int, seconds: float,
                 directory: Path, use_wrk: bool) -> Run:
    if use_wrk:
        return run_wrk(base, op, work, connections, seconds, directory)
    return run_python_load(base, op, work, connections, seconds)


def _audit_runs(env: DdsEnvironment, store_id: str, base: str, work: Workload,
                args: argparse.Namespace, directory: Path, use_wrk: bool
                ) -> dict[str, list[Run]]:
    switch = audit_switch(env, store_id)
    runs: dict[str, list[Run]] = {"off": [], "on": []}
    try:
        for _ in range(3):  # alternate, so drift hits both sides
            for state in ("off", "on"):
                switch(state == "on")
                runs[state].append(_gateway_run(base, "add", work, args.connections,
                                                args.seconds / 2, directory, use_wrk))
    finally:
        switch(False)
    return runs


def _report(results: dict[tuple[str, str, int], Run], ops: list[str], connections: int,
            audit: dict[str, list[Run]] | None) -> None:
    print(f"\n{'operation':<10} {'side':<8} {'conns':>5} {'req/s':>9} {'p50 ms':>8} "
          f"{'p95 ms':>8} {'p99 ms':>8} {'errors':>6}")
    for op in ops:
        for conns in (connections, 1):
            for side in ("gateway", "direct"):
                run = results[(side, op, conns)]
                print(f"{op:<10} {side:<8} {conns:>5} {run.row()}")
    print("\nratios (gateway / direct):")
    for op in ops:
        many_g, many_d = results[("gateway", op, connections)], results[("direct", op,
                                                                         connections)]
        one_g, one_d = results[("gateway", op, 1)], results[("direct", op, 1)]
        print(f"  {op:<8} throughput {many_g.rps / many_d.rps:5.2f}x at {connections} "
              f"connections; p50 at 1 connection {one_g.p50:.2f} vs {one_d.p50:.2f} ms "
              f"(overhead {one_g.p50 - one_d.p50:+.2f} ms, goal <= {GOALS['overhead_ms']} ms)")
    if "get" in ops:
        rps = results[("gateway", "get", connections)].rps
        print(f"goal get: {rps:.0f}/s (goal >= {GOALS['get_rps']:.0f}/s)")
    if "search" in ops:
        rps = results[("gateway", "search", connections)].rps
        print(f"goal search: {rps:.0f}/s (goal >= {GOALS['search_rps']:.0f}/s)")
    if audit:
        off = statistics.median(r.rps for r in audit["off"])
        on = statistics.median(r.rps for r in audit["on"])
        p50_off = statistics.median(r.p50 for r in audit["off"])
        p50_on = statistics.median(r.p50 for r in audit["on"])
        print(f"audit: add {off:.0f}/s off, {on:.0f}/s on: {off / on:.2f}x time per request "
              f"(p50 {p50_off:.2f} vs {p50_on:.2f} ms; goal <= {GOALS['audit_ratio']}x)")


def _report_cpu(cpu: dict[str, CpuSplit], direct: dict[str, CpuSplit],
                connections: int) -> None:
    """Where the CPU of each run at ``connections`` went, and the throughput that CPU allows
    were every core busy with it."""
    cores = os.cpu_count() or 1
    print(f"\nCPU per request at {connections} connections (microseconds; {cores} cores):")
    for op, split in cpu.items():
        gateway = "n/a" if split.gateway_us is None else f"{split.gateway_us:.0f}"
        database = "n/a" if split.database_us is None else f"{split.database_us:.0f}"
        total = split.total_us()
        ceiling = "" if not total else f"; {cores} cores allow at most {cores / total * 1e6:.0f}/s"
        print(f"  {op:<8} gateway: gateway {gateway}, database {database}, load generator "
              f"{split.load_us:.0f}; machine {split.machine_busy:.0%} busy{ceiling}")
        if op in direct:
            own = direct[op]
            database = "n/a" if own.database_us is None else f"{own.database_us:.0f}"
            ceiling = ("" if own.database_us is None else f"; {cores} cores allow at most "
                       f"{cores / (own.load_us + own.database_us) * 1e6:.0f}/s")
            print(f"  {'':<8} direct:  SDK process {own.load_us:.0f}, database {database}; "
                  f"machine {own.machine_busy:.0%} busy{ceiling}")


if __name__ == "__main__":
    sys.exit(main())
