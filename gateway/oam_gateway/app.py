"""The gateway's Starlette application: probes, OpenAPI, and ``/v1`` behind bearer tokens.

``/healthz`` (the process answers), ``/readyz`` (every tenant's database is reachable; 503 with
``Retry-After`` when not), ``/openapi.json`` and ``/docs`` are open. Every path under ``/v1``
passes the bearer-token middleware first, which fails closed: a request without a verified
principal never reaches a route. Each route runs the SDK inside the caller's end-user security
context (:mod:`oam_gateway.rest.endpoints`). Errors are RFC 9457 problem documents.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Sequence

from oracleagentmemory.errors import DatabaseUnavailableError, OracleAgentMemoryError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from oam_gateway.auth.verifier import TokenRejected, TokenVerifier
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.console.routes import Console
from oam_gateway.errors.problems import problem_response
from oam_gateway.errors.sdk_problems import sdk_problem
from oam_gateway.mcp.server import McpGateway
from oam_gateway.middleware.bearer import PROTECTED_PREFIX, challenge
from oam_gateway.middleware.stack import build_stack
from oam_gateway.rest.endpoints import Endpoint, RequestRefused, route_handler
from oam_gateway.rest.openapi import docs_page, openapi_document
from oam_gateway.rest.route_index import IndexedRouter
from oam_gateway.rest.routes import ENDPOINTS
from oam_gateway.tenancy.health import RETRY_AFTER_SECONDS
from oam_gateway.tenancy.tenants import Tenants
from oam_gateway.version import gateway_version

_log = logging.getLogger(__name__)


def create_app(settings: GatewaySettings, verifier: TokenVerifier | None = None,
               endpoints: Sequence[Endpoint] = ENDPOINTS,
               extra_routes: Sequence[BaseRoute] = ()) -> Starlette:
    """The gateway for ``settings`` (keys from the settings unless ``verifier`` is given);
    ``extra_routes`` are served first, open like ``/docs`` (``oam-gateway dev``'s
    authorization server)."""
    token_verifier = verifier or TokenVerifier.from_settings(settings)
    tenants = Tenants(settings.tenant_settings(),
                      transaction_timeout_seconds=settings.limits.request_timeout_seconds)
    document = openapi_document(endpoints, PROTECTED_PREFIX, gateway_version(), settings.limits)
    page = docs_page(document)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        checks = [t.ready(settings.readiness_timeout_seconds) for t in tenants]
        if not all(await asyncio.gather(*checks)):
            raise DatabaseUnavailableError("the database cannot be reached")
        return JSONResponse({"status": "ready"})

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def docs(request: Request) -> Response:
        return HTMLResponse(page)

    routes: list[BaseRoute] = [
        *extra_routes,
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
    ]
    routes += [Route(PROTECTED_PREFIX + e.path,
                     route_handler(e, tenants, settings.limits, settings.require_scopes),
                     methods=[e.method], name=e.operation) for e in endpoints]
    mcp = McpGateway(settings, tenants)
    routes += mcp.routes
    routes += Console(settings, tenants, token_verifier, tuple(endpoints)).routes

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        tenants.open()
        try:
            async with mcp.run():
                _freeze_start_up_objects()
                yield
        finally:
            await asyncio.to_thread(tenants.close)

    app = Starlette(
        routes=routes,
        middleware=build_stack(settings, token_verifier),
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_problem,
                            TokenRejected: _token_problem,
                            RequestRefused: _refused_problem,
                            OracleAgentMemoryError: _sdk_problem,
                            Exception: _internal_problem},
    )
    app.router = IndexedRouter(routes, lifespan=lifespan)  # Starlette's, asking fewer routes
    app.state.settings = settings
    app.state.tenants = tenants
    return app


def _freeze_start_up_objects() -> None:
    """Move what start-up built (modules, settings, the OpenAPI document, models) out of the
    garbage collector's reach: later collections, run as requests allocate, then scan only
    what requests create, not the long-lived objects again and again (:func:`gc.freeze`)."""
    gc.collect()
    gc.freeze()


async def _http_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "internal-error")
    return problem_response(exc.status_code, slug, str(exc.detail), instance=request.url.path,
                            headers=exc.headers)


async def _token_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TokenRejected)
    return problem_response(401, "invalid-token", exc.description,
                            headers={"WWW-Authenticate": challenge(exc)})


async def _refused_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestRefused)
    return problem_response(exc.status, exc.slug, exc.detail, instance=request.url.path,
                            headers=exc.headers)


async def _sdk_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, OracleAgentMemoryError)
    return sdk_problem(exc, request.url.path)


async def _internal_problem(request: Request, exc: Exception) -> Response:
    _log.error("unhandled %s on %s", type(exc).__name__, request.url.path)
    return problem_response(500, "internal-error", "the gateway failed to answer")


__all__ = ["RETRY_AFTER_SECONDS", "create_app"]
