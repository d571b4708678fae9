"""The floor of ``bench/gateway.py``: its program captured from the gateway, its process, and
round trips per get counted on the wire.

:func:`study_floor` runs a gateway with a pool of one connection through a recording
``pg_relay``: after a warm-up it captures one get and one search (``floor_program``: the
statements the floor will send), then counts the client flights of ``--round-trip-gets``
sequential gets on that one connection (round trips per get, as the database saw them), and the
same for the floor, run through a relay too. :func:`floor_process` runs ``floor_app`` for the
measured runs, directly connected.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from floor_app import embedder_of
from floor_program import build, vector_value
from pg_relay import Relay, RelayConnection, relayed_url
from pg_wire import flights_of, rows_of
from served import free_port, served_process

__all__ = ["FloorProcess", "FloorStudy", "floor_process", "study_floor"]

FLOOR_APP = Path(__file__).resolve().parent / "floor_app.py"
SEARCH_K = 10


@dataclass(frozen=True)
class FloorProcess:
    """A running ``floor_app``: its base URL and process id."""

    base: str
    pid: int


@dataclass(frozen=True)
class FloorStudy:
    """What :func:`study_floor` found."""

    program: dict[str, Any]
    """The floor's program (``{"get": stages, "search": stages, "k": k}``)."""
    gateway_round_trips_per_get: float
    floor_round_trips_per_get: float
    gateway_round_trips_per_search: float
    floor_round_trips_per_search: float
    answers: dict[str, Any]
    """The gateway's and the floor's bodies for the same get and the same search."""


@dataclass(frozen=True)
class FloorSettings:
    """How to start the floor: the gateway's pool size, login and embedder."""

    database_url: str
    pool: int
    app_token_file: Path
    identity_provider: str
    embedder: str
    dimension: int
    pipeline: str = "libpq"
    """``floor_app``'s ``--pipeline``."""


@contextmanager
def floor_process(settings: FloorSettings, program: dict[str, Any], directory: Path,
                  database_url: str | None = None) -> Iterator[FloorProcess]:
    """``floor_app`` for ``program`` on a free port (``database_url``: another URL of the same
    login, a relay's say)."""
    program_file = directory / "floor-program.json"
    program_file.write_text(json.dumps(program), encoding="utf-8")
    port = free_port()
    command = [sys.executable, str(FLOOR_APP), "--program", str(program_file), "--port",
               str(port), "--database-url", database_url or settings.database_url, "--pool",
               str(settings.pool), "--app-token-file", str(settings.app_token_file),
               "--identity-provider", settings.identity_provider, "--embedder",
               settings.embedder, "--dimension", str(settings.dimension), "--pipeline",
               settings.pipeline]
    log_path = directory / f"floor-{port}.log"
    try:
        with served_process("floor", command, port, log_path) as served:
            yield FloorProcess(served.base, served.pid)
    except BaseException:
        print(f"the floor's log ends: {log_path.read_text(encoding='utf-8')[-3000:]}",
              file=sys.stderr)
        raise


StartGateway = Callable[[str], AbstractContextManager[Any]]
"""Starts the gateway with a pool of one connection to the given database URL; yields an
object with ``base``."""


def study_floor(start_gateway: StartGateway, settings: FloorSettings, directory: Path,
                token: str, owner: str, memory_ids: list[str], query: str,
                round_trip_gets: int = 50) -> FloorStudy:
    """Capture the gateway's get and search, build the floor's program, count round trips.

    ``token`` is an end user's (``owner`` as rows name them), ``memory_ids`` that user's
    memories, ``query`` a search query.
    """
    headers = {"Authorization": f"Bearer {token}"}
    vector = vector_value([float(x) for x in embedder_of(settings.embedder, settings.dimension)
                           .embed([query], is_query=True)[0]])
    search_body = {"query": query, "k": SEARCH_K}
    answers: dict[str, Any] = {}

    def get(n: int) -> httpx.Response:  # on the client of the block that calls it
        return http.get(f"/v1/memories/{memory_ids[n % len(memory_ids)]}")

    def search(n: int) -> httpx.Response:
        return http.post("/v1/search", json=search_body)

    with Relay(settings.database_url, record=True) as relay, \
            start_gateway(relayed_url(settings.database_url, relay)) as gateway, \
            httpx.Client(base_url=gateway.base, headers=headers, timeout=30) as http:
        for n in range(10):  # warm-up: the pool's connection, prepared statements, caches
            http.get(f"/v1/memories/{memory_ids[n % len(memory_ids)]}").raise_for_status()
            http.post("/v1/search", json=search_body).raise_for_status()
        get_id = memory_ids[-1]
        before = relay.mark()
        answers["gateway_get"] = _ok(http.get(f"/v1/memories/{get_id}"))
        between = relay.mark()
        answers["gateway_search"] = _ok(http.post("/v1/search", json=search_body))
        after = relay.mark()
        get_flights, get_rows = _captured(relay.connections, before, between)
        search_flights, search_rows = _captured(relay.connections, between, after)
        program = {
            "get": build(get_flights, get_rows, get_id, owner, None, SEARCH_K).stages,
            "search": build(search_flights, search_rows, None, owner, vector, SEARCH_K).stages,
            "k": SEARCH_K}
        gateway_trips = _round_trips(relay, get, round_trip_gets)
        gateway_search_trips = _round_trips(relay, search, round_trip_gets)
    with Relay(settings.database_url) as relay, \
            floor_process(settings, program, directory,
                          relayed_url(settings.database_url, relay)) as floor, \
            httpx.Client(base_url=floor.base, headers=headers, timeout=30) as http:
        for n in range(10):
            http.get(f"/v1/memories/{memory_ids[n % len(memory_ids)]}").raise_for_status()
            http.post("/v1/search", json=search_body).raise_for_status()
        answers["floor_get"] = _ok(http.get(f"/v1/memories/{get_id}"))
        answers["floor_search"] = _ok(http.post("/v1/search", json=search_body))
        floor_trips = _round_trips(relay, get, round_trip_gets)
        floor_search_trips = _round_trips(relay, search, round_trip_gets)
    return FloorStudy(program, gateway_trips, floor_trips, gateway_search_trips,
                      floor_search_trips, answers)


def _ok(response: httpx.Response) -> Any:
    response.raise_for_status()
    return response.json()


def _captured(connections: list[RelayConnection], start: dict[int, int], end: dict[int, int]
              ) -> tuple[list[Any], list[Any]]:
    """The flights and result rows of the one connection that carried the request."""
    busy = [c for c in connections if end.get(c.number, 0) > start.get(c.number, 0)]
    if len(busy) != 1:
        raise RuntimeError(f"the request used {len(busy)} connections; expected one")
    connection = busy[0]
    prepared: dict[str, tuple[str, tuple[int, ...]]] = {}
    flights_of(connection.messages[:start.get(connection.number, 0)], prepared)
    window = connection.messages[start.get(connection.number, 0):end[connection.number]]
    return flights_of(window, prepared), rows_of(window)


def _round_trips(relay: Relay, request: Callable[[int], httpx.Response], count: int) -> float:
    """Client flights to the database per request, over ``count`` sequential ``request(n)``."""
    started = relay.flights()
    for n in range(count):
        request(n).raise_for_status()
    return (relay.flights() - started) / count
