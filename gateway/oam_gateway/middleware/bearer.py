"""Bearer authentication of every request under ``/v1``: no verified principal, no route.

:class:`BearerAuthMiddleware` fails closed: a request whose token does not verify answers 401
with ``WWW-Authenticate`` (RFC 6750), and 503 when the issuer's keys cannot be fetched.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from oam_gateway.auth.jwks import KeysUnavailable
from oam_gateway.auth.resource_metadata import is_mcp_path, resource_metadata_parameter
from oam_gateway.auth.verifier import TokenRejected, TokenVerifier
from oam_gateway.errors.problems import problem_response
from oam_gateway.tenancy.health import RETRY_AFTER_SECONDS
from oam_gateway.tenancy.principal import Principal

__all__ = ["PRINCIPAL_SCOPE_KEY", "PROTECTED_PREFIX", "REALM", "BearerAuthMiddleware", "challenge",
           "principal_of"]

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
            response = problem_response(401, "invalid-token", rejection.description, headers={
                "WWW-Authenticate": challenge(rejection) + resource_metadata_parameter(scope)})
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


def _is_protected(path: str) -> bool:
    return (path == PROTECTED_PREFIX or path.startswith(PROTECTED_PREFIX + "/")
            or is_mcp_path(path))


def _header_values(scope: Scope, name: bytes) -> list[str]:
    """Every value of the request header ``name`` (lower case)."""
    return [bytes(value).decode("latin-1") for key, value in scope["headers"]
            if bytes(key).lower() == name]
