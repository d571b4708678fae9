"""The route template a request matched (``/v1/memories/{memory_id}``), for spans and events.

Starlette's router leaves the matched route in the scope (``scope["route"]``); a request it
did not route (refused by a middleware before routing, or a Starlette without that key) is
matched against the application's routes here, as the router would have.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Match
from starlette.types import Scope

__all__ = ["ROUTE_SCOPE_KEY", "matched_route"]

ROUTE_SCOPE_KEY = "oam.route"


def matched_route(scope: Scope, root_path: str) -> str | None:
    """The path template of the route ``scope`` matches (``None`` when none does).

    ``root_path`` is the scope's ``root_path`` before routing (a mount changes it). The answer
    is kept in the scope, so later callers pay nothing.
    """
    if ROUTE_SCOPE_KEY in scope:
        cached: str | None = scope[ROUTE_SCOPE_KEY]
        return cached
    path = getattr(scope.get("route"), "path", None)
    template = path if isinstance(path, str) else _match(
        list(getattr(scope.get("app"), "routes", ())), {**scope, "root_path": root_path})
    scope[ROUTE_SCOPE_KEY] = template
    return template


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
