"""A Starlette router that asks only the routes a request path could match.

Starlette's :class:`~starlette.routing.Router` asks every route in turn whether it matches
(each runs its path's regular expression), so ``POST /v1/search``, the last of about thirty
routes, pays for thirty matches. A :class:`~starlette.routing.Route`'s path can only match a
request path that starts with the route's literal prefix (the text before its first
``{parameter}``), and a route without parameters only the path it names (or that path and a
final newline, which its expression's ``$`` also accepts), so :class:`IndexedRouter` first keeps
the routes that could match (every other kind of route is always kept), in their order, and
runs Starlette's own rule over those: the first full match answers, else the first partial
one (a 405). A request none of them matches, one with a ``root_path`` and any other scope go
through Starlette's router unchanged (its slash redirect and 404), so every answer is the one
the plain router would give.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Receive, Scope, Send

__all__ = ["IndexedRouter"]


class IndexedRouter(Router):
    """A :class:`~starlette.routing.Router` that skips routes by their literal prefix."""

    _indexed: list[BaseRoute] | None = None
    _prefixes: tuple[tuple[BaseRoute, str, bool], ...] = ()

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("root_path"):
            await super().app(scope, receive, send)
            return
        path: str = scope["path"]
        partial: BaseRoute | None = None
        partial_scope: Scope = {}
        for route, prefix, literal in self._routes_by_prefix():
            if literal:
                if path != prefix and path != prefix + "\n":
                    continue
            elif not path.startswith(prefix):
                continue
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                scope.setdefault("router", self)
                scope["route"] = route
                scope.update(child_scope)
                await route.handle(scope, receive, send)
                return
            if match is Match.PARTIAL and partial is None:
                partial, partial_scope = route, child_scope
        if partial is not None:
            scope.setdefault("router", self)
            scope["route"] = partial
            scope.update(partial_scope)
            await partial.handle(scope, receive, send)
            return
        await super().app(scope, receive, send)  # no route: the redirect or the 404

    def _routes_by_prefix(self) -> tuple[tuple[BaseRoute, str, bool], ...]:
        """Each route with its literal prefix (``""`` for routes other than ``Route``) and
        whether that prefix is its whole path, recomputed when the routes changed."""
        if self._indexed != self.routes:
            self._indexed = list(self.routes)
            self._prefixes = tuple(_indexed(route) for route in self._indexed)
        return self._prefixes


def _indexed(route: BaseRoute) -> tuple[BaseRoute, str, bool]:
    if type(route) is not Route:
        return route, "", False
    prefix = route.path.split("{", 1)[0]
    return route, prefix, prefix == route.path
