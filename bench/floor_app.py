"""The floor: the least a server can do to answer the gateway's get and search, for
``bench/gateway.py`` to measure the gateway against in the same run.

A bare Starlette app (no middleware, no token verification: the bearer token's claims are read,
not checked) served by uvicorn as ``oam-gateway serve`` serves the gateway (one worker, the
default loop and HTTP implementations, log level ``info``, no access log), with a psycopg
``AsyncConnectionPool`` of the gateway's size connected as the same runtime login. Each request
sends the statements the gateway sent for the same operation (``floor_program``: captured on
the wire, the request's values in their slots, each statement named or unnamed as the gateway
sent it) in one pipeline per stage: one round trip for a get (``BEGIN``, the context apply with
an assertion made once per end user as the SDK makes it, the read, ``COMMIT`` and the check);
two for a search, whose record read needs the candidate round's rows. It answers the rows as
JSON (``--pipeline libpq``: as the text the server sent; ``psycopg``: as psycopg loads them).

``--pipeline`` (:data:`PIPELINES`): libpq's pipeline mode through ``psycopg.pq`` (psycopg's
public libpq wrapper) on the pool's connection, by default; or psycopg's
``AsyncConnection.pipeline()``, whose per-statement bookkeeping costs about as much again.

Usage (``bench/gateway.py`` starts it)::

    python bench/floor_app.py --program FILE --port PORT --database-url URL --pool N
        --app-token-file FILE --identity-provider IDP --embedder NAME --dimension D
        [--pipeline libpq|psycopg]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import uvicorn
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core.deepsec import IdentityProviderUser, create_end_user_security_context
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.embedders.wordllama_embedder import WordLlamaEmbedder
from psycopg import pq
from psycopg.adapt import Dumper
from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor_program import fill, hits_value, vector_value  # noqa: E402

PIPELINES = ("libpq", "psycopg")
"""How a stage is pipelined: libpq's pipeline through ``psycopg.pq`` (the default: one flush,
one wait for the results) or psycopg's ``AsyncConnection.pipeline()`` (whose bookkeeping waits
on the socket once per statement: about twice the floor's CPU per get)."""

__all__ = ["PIPELINES", "Floor", "claims_of", "create_floor", "embedder_of", "floor_pool",
           "main"]


class _Wire:
    """A bound value as the gateway sent it: its bytes, dumped with a fixed type and format."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


_WIRE_TYPES: dict[tuple[int, int], type[_Wire]] = {}


def _wire_type(oid: int, fmt: int) -> type[_Wire]:
    """A :class:`_Wire` subclass whose dumper declares ``oid`` and ``fmt`` (registered on
    psycopg's global adapters on first use, which connections opened later copy)."""
    key = (oid, fmt)
    if key not in _WIRE_TYPES:
        wire = type(f"_Wire_{oid}_{fmt}", (_Wire,), {"__slots__": ()})

        class WireDumper(Dumper):
            format = pq.Format.BINARY if fmt else pq.Format.TEXT

            def dump(self, obj: Any) -> bytes:
                return bytes(obj.data)

        WireDumper.oid = oid
        psycopg.adapters.register_dumper(wire, WireDumper)
        _WIRE_TYPES[key] = wire
    return _WIRE_TYPES[key]


def embedder_of(name: str, dimension: int) -> IEmbedder:
    """The embedder the gateway's settings name."""
    if name == "wordllama":
        return WordLlamaEmbedder(dimension)
    return HashingEmbedder(dimension)


def claims_of(authorization: str) -> dict[str, Any]:
    """A bearer token's claims, read and not verified (the floor verifies nothing)."""
    payload = authorization.removeprefix("Bearer ").split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


class Floor:
    """The floor's work for one request, without HTTP: the program's stages on a pool
    connection, the answer's rows out."""

    def __init__(self, program: dict[str, Any], pool: AsyncConnectionPool[Any], app_token: str,
                 identity_provider: str, embedder: IEmbedder, lean: bool = True) -> None:
        for op in ("get", "search"):
            for statement in (s for stage in program[op] for s in stage):
                statement["op"] = op
                for index, fmt in enumerate(statement["formats"]):
                    # Registered before the pool connects: connections copy the adapters.
                    _wire_type(_type(statement, index), fmt)
        self.program = program
        self.pool = pool
        self.k = int(program["k"])
        self._app_token = app_token
        self._identity_provider = identity_provider
        self._embedder = embedder
        self._contexts: dict[tuple[str, tuple[str, ...]], Any] = {}
        self.lean = lean
        self._prepared: weakref.WeakKeyDictionary[Any, set[bytes]] = \
            weakref.WeakKeyDictionary()

    def values_of(self, claims: dict[str, Any]) -> dict[str, Any]:
        """The slots every request fills: the end user's assertion and owner name."""
        user, groups = str(claims["sub"]), tuple(claims.get("groups") or ())
        context = self._contexts.get((user, groups))
        if context is None:  # once per end user, as an application keeps one per user
            context = self._contexts[(user, groups)] = create_end_user_security_context(
                self._app_token, IdentityProviderUser(user, groups, self._identity_provider))
        return {"assertion": context.assertion().encode(),
                "owner": f"{self._identity_provider}:{user}".encode()}

    async def get(self, claims: dict[str, Any], memory_id: str) -> dict[str, Any] | None:
        """The memory's row as JSON, or None."""
        values = self.values_of(claims)
        values["id"] = memory_id
        names, rows = await self._run(self.program["get"], values)
        return _record(names, rows[0]) if rows else None

    async def search(self, claims: dict[str, Any], query: str) -> dict[str, Any]:
        """The search's records and distances as JSON."""
        values = self.values_of(claims)
        vector = self._embedder.embed([query], is_query=True)[0]
        values["vector"] = vector_value([float(x) for x in vector])
        names, rows = await self._run(self.program["search"], values)
        return {"results": [{"record": _record(names[:-1], row[:-1]), "distance": row[-1]}
                            for row in rows]}

    async def _run(self, stages: list[list[dict[str, Any]]], values: dict[str, Any]
                   ) -> tuple[list[str], list[tuple[Any, ...]]]:
        k = self.k
        hit_rows: list[tuple[Any, ...]] = []
        answer: tuple[list[str], list[tuple[Any, ...]]] = ([], [])
        async with self.pool.connection() as conn:
            for stage in stages:
                hits = hits_value([str(row[1]) for row in hit_rows[:k]]) if hit_rows else None
                bound = [fill(statement, values, hits) for statement in stage]
                results = await (self._libpq_stage(conn, stage, bound) if self.lean
                                 else self._psycopg_stage(conn, stage, bound))
                for statement, (names, rows) in zip(stage, results, strict=True):
                    if statement["hits"]:
                        hit_rows = rows
                    if statement["answer"]:
                        answer = (names, rows)
        if hit_rows:
            by_id = {str(row[answer[0].index("id")]): row for row in answer[1]}
            ordered = [(by_id[str(hit[1])], float(hit[2])) for hit in hit_rows[:k]
                       if str(hit[1]) in by_id]
            return answer[0] + ["distance"], [(*row, d) for row, d in ordered]
        return answer

    async def _psycopg_stage(self, conn: psycopg.AsyncConnection[Any],
                             stage: list[dict[str, Any]], bound: list[list[bytes | None]]
                             ) -> list[tuple[list[str], list[tuple[Any, ...]]]]:
        """One stage through psycopg's ``AsyncConnection.pipeline()``: rows as psycopg loads
        them."""
        cursors = []
        async with conn.pipeline():
            for statement, values in zip(stage, bound, strict=True):
                params = [None if v is None else _wire_type(
                    _type(statement, i), statement["formats"][i])(v)
                    for i, v in enumerate(values)]
                cursor = conn.cursor(binary=statement["binary"])
                await cursor.execute(statement["text"], params or None,
                                     prepare=statement["named"])
                cursors.append((statement, cursor))
        results: list[tuple[list[str], list[tuple[Any, ...]]]] = []
        for statement, cursor in cursors:
            if statement["hits"] or statement["answer"]:
                names = [c.name for c in cursor.description or ()]
                results.append((names, list(await cursor.fetchall())))
            else:
                results.append(([], []))
        return results

    async def _libpq_stage(self, conn: psycopg.AsyncConnection[Any],
                           stage: list[dict[str, Any]], bound: list[list[bytes | None]]
                           ) -> list[tuple[list[str], list[tuple[Any, ...]]]]:
        """One stage through libpq's pipeline (``psycopg.pq``, psycopg's public libpq
        wrapper): one flush, one sync, results read as the socket has them; rows as text."""
        pgconn = conn.pgconn
        prepared = self._prepared.setdefault(conn, set())
        answers: list[bool] = []  # per result to come: whether a statement's (not a Prepare's)
        pgconn.nonblocking = 1
        pgconn.enter_pipeline_mode()
        try:
            for statement, values in zip(stage, bound, strict=True):
                types = [_type(statement, i) for i in range(len(values))]
                formats = [int(f) for f in statement["formats"]]
                result_format = int(bool(statement["binary"]))
                if statement["named"]:
                    name = f"floor_{statement['op']}_{statement['index']}".encode()
                    if name not in prepared:
                        pgconn.send_prepare(name, statement["text"].encode(), types)
                        prepared.add(name)
                        answers.append(False)
                    pgconn.send_query_prepared(name, values, formats, result_format)
                else:
                    pgconn.send_query_params(statement["text"].encode(), values, types,
                                             formats, result_format)
                answers.append(True)
            pgconn.pipeline_sync()
            results = await _exchange(pgconn)
        except BaseException:
            prepared.clear()  # unknown which preparations the server kept: the pool drops it
            await conn.close()
            raise
        finally:
            if pgconn.status == pq.ConnStatus.OK:
                pgconn.exit_pipeline_mode()
        out: list[tuple[list[str], list[tuple[Any, ...]]]] = []
        for result, answer in zip(results, answers, strict=True):
            if result.status == pq.ExecStatus.FATAL_ERROR:
                prepared.clear()
                await conn.close()
                raise psycopg.DatabaseError((result.error_message or b"").decode())
            if not answer:
                continue
            names = [(result.fname(c) or b"").decode() for c in range(result.nfields)]
            out.append((names, [tuple(_text(result.get_value(r, c))
                                      for c in range(result.nfields))
                                for r in range(result.ntuples)]))
        return out


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode()


async def _exchange(pgconn: pq.abc.PGconn) -> list[Any]:
    """Flush what libpq holds, then read one result per statement up to the sync point."""
    loop = asyncio.get_running_loop()
    fd = pgconn.socket
    while pgconn.flush() == 1:
        await _ready(loop, fd, writable=True)
    results: list[Any] = []
    while True:
        while pgconn.is_busy():
            await _ready(loop, fd, writable=False)
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            continue
        if result.status == pq.ExecStatus.PIPELINE_SYNC:
            return results
        results.append(result)


async def _ready(loop: asyncio.AbstractEventLoop, fd: int, writable: bool) -> None:
    future: asyncio.Future[None] = loop.create_future()

    def done() -> None:
        if not future.done():
            future.set_result(None)

    (loop.add_writer if writable else loop.add_reader)(fd, done)
    try:
        await future
    finally:
        (loop.remove_writer if writable else loop.remove_reader)(fd)


def _record(names: list[str], row: tuple[Any, ...]) -> dict[str, Any]:
    return {name: value if value is None or isinstance(value, (int, float)) else str(value)
            for name, value in zip(names, row, strict=True)}


def floor_pool(database_url: str, size: int) -> AsyncConnectionPool[Any]:
    """The floor's pool (not opened): ``size`` autocommit connections with raw cursors."""
    return AsyncConnectionPool(database_url, min_size=size, max_size=size, open=False,
                               kwargs={"autocommit": True,
                                       "cursor_factory": psycopg.AsyncRawCursor})


def create_floor(program: dict[str, Any], database_url: str, pool_size: int, app_token: str,
                 identity_provider: str, embedder: IEmbedder, pipeline: str = PIPELINES[0]
                 ) -> Starlette:
    """The floor app for ``program`` (``{"get": stages, "search": stages, "k": k}``)."""
    floor = Floor(program, floor_pool(database_url, pool_size), app_token, identity_provider,
                  embedder, lean=pipeline == "libpq")

    async def get(request: Request) -> Response:
        body = await floor.get(claims_of(request.headers.get("authorization", "")),
                               request.path_params["memory_id"])
        if body is None:
            return JSONResponse({"detail": "not found"}, status_code=404)
        return JSONResponse(body)

    async def search(request: Request) -> Response:
        query = str((await request.json())["query"])
        return JSONResponse(await floor.search(
            claims_of(request.headers.get("authorization", "")), query))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await floor.pool.open(wait=True)
        try:
            yield
        finally:
            await floor.pool.close()

    return Starlette(routes=[
        Route("/v1/memories/{memory_id}", get, methods=["GET"]),
        Route("/v1/search", search, methods=["POST"]),
        Route("/healthz", lambda request: Response("ok"), methods=["GET"]),
    ], lifespan=lifespan)


def _type(statement: dict[str, Any], index: int) -> int:
    types: list[int] = statement["types"]
    return types[index] if index < len(types) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--program", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--pool", type=int, required=True)
    parser.add_argument("--app-token-file", type=Path, required=True)
    parser.add_argument("--identity-provider", required=True)
    parser.add_argument("--embedder", choices=("wordllama", "hashing"), required=True)
    parser.add_argument("--dimension", type=int, required=True)
    parser.add_argument("--pipeline", choices=PIPELINES, default=PIPELINES[0])
    args = parser.parse_args(argv)
    embedder = embedder_of(args.embedder, args.dimension)
    embedder.embed(["warm up"], is_query=True)  # the model loads now, as the gateway's does
    app = create_floor(json.loads(args.program.read_text(encoding="utf-8")), args.database_url,
                       args.pool, args.app_token_file.read_text(encoding="utf-8").strip(),
                       args.identity_provider, embedder, args.pipeline)
    # As ``oam-gateway serve`` runs uvicorn (one worker).
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
