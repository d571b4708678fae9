"""The floor: the least a server can do to answer the gateway's get and search, for
``bench/gateway.py`` to measure the gateway against in the same run.

A bare Starlette app (no middleware, no token verification: the bearer token's claims are read,
not checked) served by uvicorn as ``oam-gateway serve`` serves the gateway (one worker, the
default loop and HTTP implementations, log level ``info``, no access log), with a psycopg
``AsyncConnectionPool`` of the gateway's size connected as the same runtime login. Each request
sends the statements the gateway sent for the same operation (``floor_program``: captured on
the wire, the request's values in their slots) in one pipeline per stage: one round trip for a
get (``BEGIN``, the context apply with an assertion made once per end user as the SDK makes it,
the read, ``COMMIT`` and the check); two for a search, whose record read needs the candidate
round's rows. It answers the rows as JSON.

Usage (``bench/gateway.py`` starts it)::

    python bench/floor_app.py --program FILE --port PORT --database-url URL --pool N
        --app-token-file FILE --identity-provider IDP --embedder NAME --dimension D
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
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

__all__ = ["create_floor", "embedder_of", "main"]


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


def _claims(request: Request) -> dict[str, Any]:
    """The bearer token's claims, read and not verified (the floor verifies nothing)."""
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def create_floor(program: dict[str, Any], database_url: str, pool_size: int, app_token: str,
                 identity_provider: str, embedder: IEmbedder) -> Starlette:
    """The floor app for ``program`` (``{"get": stages, "search": stages, "k": k}``)."""
    for stages in (program["get"], program["search"]):
        for statement in (s for stage in stages for s in stage):
            for index, fmt in enumerate(statement["formats"]):
                # Registered before the pool connects: connections copy the adapters.
                _wire_type(_type(statement, index), fmt)
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        database_url, min_size=pool_size, max_size=pool_size, open=False,
        kwargs={"autocommit": True, "cursor_factory": psycopg.AsyncRawCursor})
    contexts: dict[tuple[str, tuple[str, ...]], Any] = {}
    k = int(program["k"])

    def values_of(request: Request) -> dict[str, Any]:
        claims = _claims(request)
        user, groups = str(claims["sub"]), tuple(claims.get("groups") or ())
        context = contexts.get((user, groups))
        if context is None:  # once per end user, as an application keeps one per user
            context = contexts[(user, groups)] = create_end_user_security_context(
                app_token, IdentityProviderUser(user, groups, identity_provider))
        return {"assertion": context.assertion().encode(),
                "owner": f"{identity_provider}:{user}".encode()}

    async def run(stages: list[list[dict[str, Any]]], values: dict[str, Any]
                  ) -> tuple[list[str], list[tuple[Any, ...]]]:
        hit_rows: list[tuple[Any, ...]] = []
        answer: tuple[list[str], list[tuple[Any, ...]]] = ([], [])
        async with pool.connection() as conn:
            for stage in stages:
                cursors = []
                async with conn.pipeline():
                    for statement in stage:
                        hits = hits_value([str(row[1]) for row in hit_rows[:k]]) \
                            if hit_rows else None
                        bound = fill(statement, values, hits)
                        params = [None if v is None else _wire_type(
                            _type(statement, i), statement["formats"][i])(v)
                            for i, v in enumerate(bound)]
                        cursor = conn.cursor(binary=statement["binary"])
                        await cursor.execute(statement["text"], params or None,
                                             prepare=statement["named"])
                        cursors.append((statement, cursor))
                for statement, cursor in cursors:
                    if statement["hits"]:
                        hit_rows = await cursor.fetchall()
                    if statement["answer"]:
                        names = [c.name for c in cursor.description or ()]
                        answer = (names, await cursor.fetchall())
        if hit_rows:
            by_id = {str(row[answer[0].index("id")]): row for row in answer[1]}
            ordered = [(by_id[str(hit[1])], float(hit[2])) for hit in hit_rows[:k]
                       if str(hit[1]) in by_id]
            return answer[0] + ["distance"], [(*row, d) for row, d in ordered]
        return answer

    def record(names: list[str], row: tuple[Any, ...]) -> dict[str, Any]:
        return {name: value if value is None or isinstance(value, (int, float)) else str(value)
                for name, value in zip(names, row, strict=True)}

    async def get(request: Request) -> Response:
        values = values_of(request)
        values["id"] = request.path_params["memory_id"]
        names, rows = await run(program["get"], values)
        if not rows:
            return JSONResponse({"detail": "not found"}, status_code=404)
        return JSONResponse(record(names, rows[0]))

    async def search(request: Request) -> Response:
        body = await request.json()
        values = values_of(request)
        vector = embedder.embed([str(body["query"])], is_query=True)[0]
        values["vector"] = vector_value([float(x) for x in vector])
        names, rows = await run(program["search"], values)
        return JSONResponse({"results": [
            {"record": record(names[:-1], row[:-1]), "distance": row[-1]} for row in rows]})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await pool.open(wait=True)
        try:
            yield
        finally:
            await pool.close()

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
    args = parser.parse_args(argv)
    embedder = embedder_of(args.embedder, args.dimension)
    embedder.embed(["warm up"], is_query=True)  # the model loads now, as the gateway's does
    app = create_floor(json.loads(args.program.read_text(encoding="utf-8")), args.database_url,
                       args.pool, args.app_token_file.read_text(encoding="utf-8").strip(),
                       args.identity_provider, embedder)
    # As ``oam-gateway serve`` runs uvicorn (one worker).
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
