"""The gateway's Starlette application: probes, and ``/v1`` behind bearer-token authentication.

``/healthz`` (the process answers) and ``/readyz`` (the database is reachable; 503 with
``Retry-After`` when not) are open. Every path under ``/v1`` passes :class:`BearerAuthMiddleware`
first, which fails closed: a request without a verified principal never reaches a route.
Errors are RFC 9457 problem documents (:mod:`oam_gateway.problems`).
"""

from __future__ import annotations

import logging

from oracleagentmemory.errors import DatabaseUnavailableError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from oam_gateway.auth import TokenRejected, TokenVerifier
from oam_gateway.health import RETRY_AFTER_SECONDS, database_reachable
from oam_gateway.jwks import KeysUnavailable
from oam_gateway.principal import Principal
from oam_gateway.problems import problem_response
from oam_gateway.settings import GatewaySettings

_log = logging.getLogger(__name__)

PROTECTED_PREFIX = "/v1"
PRINCIPAL_SCOPE_KEY = "oam.principal"
REALM = "oam-gateway"


def challenge(rejection: TokenRejected) -> str:
    """The ``WWW-Authenticate`` value for ``rejection`` (RFC 6750 §3)."""
    value = f'Bearer realm="{REALM}"'
    if rejection.error is not None:
        description = rejection.description.replace("\\", "").replace('"', "'")
        value += f', error="{rejection.error}", error_description="{description}"'
    return value


class BearerAuthMiddleware:
    """Verifies the bearer token of every HTTP request under ``/v1``; 401 when it fails."""

    def __init__(self, app: ASGIApp, verifier: TokenVerifier) -> None:
        self._app = app
        self._verifier = verifier

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_protected(scope["path"]):
            await self._app(scope, receive, send)
            return
        authorizations = _header_values(scope, b"authorization")
        try:
            if len(authorizations) > 1:
                raise TokenRejected("the request carries several Authorization headers")
            principal = await self._verifier.verify_header(authorizations[0] if authorizations
                                                     else None)
        except KeysUnavailable as unavailable:
            response = problem_response(503, "identity-provider-unavailable", str(unavailable),
                                        headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
            await response(scope, receive, send)
            return
        except TokenRejected as rejection:
            response = problem_response(401, "invalid-token", rejection.description,
                                        headers={"WWW-Authenticate": challenge(rejection)})
            await response(scope, receive, send)
            return
        scope[PRINCIPAL_SCOPE_KEY] = principal
        await self._app(scope, receive, send)


def principal_of(request: Request) -> Principal:
    """The verified caller of a ``/v1`` request (set by :class:`BearerAuthMiddleware`)."""
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY)
    if not isinstance(principal, Principal):  # a route outside the middleware: fail closed
        raise TokenRejected("a bearer token is required", error=None)
    return principal


def create_app(settings: GatewaySettings, verifier: TokenVerifier | None = None) -> Starlette:
    """The gateway for ``settings`` (keys from the settings unless ``verifier`` is given)."""
    token_verifier = verifier or TokenVerifier.from_settings(settings)
    database_url = settings.database_url.get_secret_value()

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        if not await database_reachable(database_url, settings.readiness_timeout_seconds):
            raise DatabaseUnavailableError("the database cannot be reached")
        return JSONResponse({"status": "ready"})

    async def me(request: Request) -> Response:
        principal = principal_of(request)
        return JSONResponse({"user_name": principal.user_name, "groups": list(principal.groups),
                             "tenant": principal.tenant})

    app = Starlette(
        routes=[Route("/healthz", healthz, methods=["GET"]),
                Route("/readyz", readyz, methods=["GET"]),
                Route(f"{PROTECTED_PREFIX}/me", me, methods=["GET"])],
        exception_handlers={HTTPException: _http_problem,
                            TokenRejected: _token_problem,
                            DatabaseUnavailableError: _unavailable_problem,
                            Exception: _internal_problem},
    )
    app.add_middleware(BearerAuthMiddleware, verifier=token_verifier)
    app.state.settings = settings
    return app


async def _http_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "internal-error")
    return problem_response(exc.status_code, slug, str(exc.detail), instance=request.url.path,
                            headers=exc.headers)


async def _token_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TokenRejected)
    return problem_response(401, "invalid-token", exc.description,
                            headers={"WWW-Authenticate": challenge(exc)})


async def _unavailable_problem(request: Request, exc: Exception) -> Response:
    return problem_response(503, "database-unavailable", str(exc),
                            headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


async def _internal_problem(request: Request, exc: Exception) -> Response:
    _log.error("unhandled %s on %s", type(exc).__name__, request.url.path)
    return problem_response(500, "internal-error", "the gateway failed to answer")


def _is_protected(path: str) -> bool:
    return path == PROTECTED_PREFIX or path.startswith(PROTECTED_PREFIX + "/")


def _header_values(scope: Scope, name: bytes) -> list[str]:
    """Every value of the request header ``name`` (lower case)."""
    return [bytes(value).decode("latin-1") for key, value in scope["headers"]
            if bytes(key).lower() == name]
