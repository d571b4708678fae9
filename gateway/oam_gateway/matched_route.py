"""The route template a request matched (``/v1/memories/{memory_id}``), for spans and events.

Read after the application ran: the router left the matched endpoint in the scope, which
maps to its route's path; a request the router did not match by endpoint (a mounted ASGI
app, a 404) is matched against the application's routes once more.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from starlette.routing import BaseRoute, Match
from starlette.types import Scope

ROUTE_SCOPE_KEY = "oam.route"

_AMBIGUOUS = object()
_paths_by_endpoint: weakref.WeakKeyDictionary[Any, dict[Any, object]] = (
    weakref.WeakKeyDictionary())


def matched_route(scope: Scope, root_path: str) -> str | None:
    """The path template of the route ``scope`` matched (``None`` when none did).

    ``root_path`` is the scope's ``root_path`` before routing (a mount changes it). The answer
    is kept in the scope, so the second caller pays nothing.
    """
    if ROUTE_SCOPE_KEY in scope:
        cached: str | None = scope[ROUTE_SCOPE_KEY]
        return cached
    app = scope.get("app")
    routes: list[BaseRoute] = list(getattr(app, "routes", ()))
    template = None
    endpoint = scope.get("endpoint")
    if endpoint is not None and app is not None:
        path = _endpoint_paths(app, routes).get(endpoint)
        if isinstance(path, str):
            template = path
    if template is None:
        template = _match(routes, {**scope, "root_path": root_path})
    scope[ROUTE_SCOPE_KEY] = template
    return template


def _endpoint_paths(app: Any, routes: list[BaseRoute]) -> dict[Any, object]:
    try:
        paths = _paths_by_endpoint.get(app)
    except TypeError:  # an app that cannot be weakly referenced: no cache
        paths = None
    if paths is None:
        paths = {}
        for route in routes:
            endpoint = getattr(route, "endpoint", None)
            path = getattr(route, "path", None)
            if endpoint is not None and isinstance(path, str):
                paths[endpoint] = path if endpoint not in paths else _AMBIGUOUS
        with contextlib.suppress(TypeError):
            _paths_by_endpoint[app] = paths
    return paths


def _match(routes: list[BaseRoute], scope: Scope) -> str | None:
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        path = getattr(route, "path", None)
        if match == Match.FULL:
            return path if isinstance(path, str) else None
        if match == Match.PARTIAL and partial is None and isinstance(path, str):
            partial = path
    return partial
