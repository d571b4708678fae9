"""The gateway's IndexedRouter answers every request as Starlette's Router does (the same
route, 405 with the same Allow, the same slash redirect and 404), asking fewer routes."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from oam_gateway.middleware.bearer import PROTECTED_PREFIX
from oam_gateway.rest.route_index import IndexedRouter
from oam_gateway.rest.routes import ENDPOINTS
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import Message, Scope


def _answer(name: str) -> Any:
    async def endpoint(request: Request) -> Response:
        return PlainTextResponse(f"{name} {request.path_params}")
    return endpoint


def _routes() -> list[BaseRoute]:
    routes: list[BaseRoute] = [Route(p, _answer(p), methods=["GET"])
                               for p in ("/healthz", "/readyz", "/openapi.json", "/docs")]
    routes += [Route(PROTECTED_PREFIX + e.path, _answer(e.operation), methods=[e.method])
               for e in ENDPOINTS]
    routes += [Route("/mcp", _answer("mcp"), methods=["POST"]),
               Mount("/static", routes=[Route("/{name}", _answer("static"))]),
               Route("/.well-known/oauth-protected-resource", _answer("meta"), methods=["GET"])]
    return routes


_PATHS = ["/", "/healthz", "/healthz/", "/healthzx", "/docs", "/v1", "/v1/", "/v1/me",
          "/v1/me/", "/v1/me/profile", "/v1/me/export", "/v1/memories", "/v1/memories/",
          "/v1/memories/123", "/v1/memories/123/", "/v1/memories:batch", "/v1/memoriesx",
          "/v1/threads", "/v1/threads/t1", "/v1/threads/t1/messages", "/v1/threads/t1/messages/",
          "/v1/relations", "/v1/relations/r1", "/v1/search", "/v1/search/", "/mcp", "/mcp/",
          "/static/a", "/static", "/v2/memories/1", "/V1/search",
          "/.well-known/oauth-protected-resource", "/app/v1/memories/1"]
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _call(router: Router, path: str, method: str, root_path: str) -> list[Message]:
    scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                    "method": method, "scheme": "http", "path": root_path + path,
                    "raw_path": (root_path + path).encode(), "query_string": b"",
                    "root_path": root_path, "headers": [(b"host", b"gateway")],
                    "server": ("gateway", 80)}
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(router(scope, receive, send))
    return sent


def test_every_answer_is_the_plain_routers() -> None:
    plain, indexed = Router(_routes()), IndexedRouter(_routes())
    compared = statuses = 0
    for path in _PATHS:
        for method in _METHODS:
            for root_path in ("", "/app"):
                expected = _call(plain, path, method, root_path)
                assert _call(indexed, path, method, root_path) == expected, (path, method)
                compared += 1
                statuses |= 1 << (int(expected[0]["status"]) // 100)
    # Positive control: the cases cover answers, redirects and client errors.
    assert statuses == (1 << 2) | (1 << 3) | (1 << 4)
    assert compared == len(_PATHS) * len(_METHODS) * 2


def test_routes_added_later_are_indexed() -> None:
    router = IndexedRouter(_routes())
    assert _call(router, "/late/1", "GET", "")[0]["status"] == 404
    router.add_route("/late/{n}", _answer("late"), methods=["GET"])
    answer = _call(router, "/late/1", "GET", "")
    assert answer[0]["status"] == 200 and answer[1]["body"] == b"late {'n': '1'}"


class _CountedPattern:
    """A route's path expression that records each path it is asked to match."""

    def __init__(self, pattern: re.Pattern[str], asked: list[str], path: str) -> None:
        self._pattern, self._asked, self._path = pattern, asked, path

    def match(self, text: str) -> re.Match[str] | None:
        self._asked.append(self._path)
        return self._pattern.match(text)


def _counted(router: Router, asked: list[str]) -> Router:
    for route in router.routes:
        assert isinstance(route, Route)
        route.path_regex = _CountedPattern(route.path_regex, asked, route.path)  # type: ignore[assignment]
    return router


def test_a_search_asks_only_the_routes_its_path_could_match() -> None:
    asked: list[str] = []
    plain = _counted(Router([r for r in _routes() if isinstance(r, Route)]), asked)
    assert _call(plain, "/v1/search", "POST", "")[0]["status"] == 200
    assert len(asked) > 20  # positive control: the plain router asks (nearly) every route
    asked.clear()
    indexed = _counted(IndexedRouter([r for r in _routes() if isinstance(r, Route)]), asked)
    assert _call(indexed, "/v1/search", "POST", "")[0]["status"] == 200
    assert asked == [PROTECTED_PREFIX + "/search"]


def test_a_get_asks_only_the_route_its_path_could_match() -> None:
    asked: list[str] = []
    indexed = _counted(IndexedRouter([r for r in _routes() if isinstance(r, Route)]), asked)
    assert _call(indexed, "/v1/memories/123", "GET", "")[0]["status"] == 200
    # /v1/me and /v1/memories are prefixes of the path but name no other path.
    assert asked == [PROTECTED_PREFIX + "/memories/{memory_id}"]


def test_a_path_with_a_final_newline_gets_the_plain_routers_answer() -> None:
    # A route's expression ends in $, which also accepts a final newline.
    plain, indexed = Router(_routes()), IndexedRouter(_routes())
    for path in ("/v1/me\n", "/v1/search\n", "/v1/memories/1\n", "/healthz\n", "/v1/me\n\n"):
        for method in ("GET", "POST"):
            expected = _call(plain, path, method, "")
            assert _call(indexed, path, method, "") == expected, (path, method)
    # Positive control: the plain router does answer such a path with its route.
    assert _call(plain, "/v1/me\n", "GET", "")[0]["status"] == 200
