"""``/mcp`` as an OAuth 2.1 protected resource: its RFC 9728 metadata and the 401 pointer to it.

A client that calls ``/mcp`` without a valid token gets 401 with ``WWW-Authenticate: Bearer
... resource_metadata="<base>/.well-known/oauth-protected-resource/mcp"`` (RFC 9728 §5.1); that
document names the authorization server (the configured issuer), the bearer method (header
only) and the scopes. ``<base>`` is the URL the request reached (scheme, ``Host``, root path),
so the pointer is right behind a proxy that forwards them.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from oam_gateway.tenancy.principal import READ_SCOPE, WRITE_SCOPE

__all__ = ["MCP_METADATA_PATH", "MCP_PATH", "SCOPES_SUPPORTED", "WELL_KNOWN_PATH", "is_mcp_path",
           "metadata_routes", "resource_metadata", "resource_metadata_parameter"]

MCP_PATH = "/mcp"
WELL_KNOWN_PATH = "/.well-known/oauth-protected-resource"
MCP_METADATA_PATH = WELL_KNOWN_PATH + MCP_PATH
SCOPES_SUPPORTED = (READ_SCOPE, WRITE_SCOPE)


def is_mcp_path(path: str) -> bool:
    """Whether ``path`` is the MCP endpoint (or under it)."""
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


def _base_url(scope: Scope) -> str:
    """The gateway's URL as the request reached it (no trailing slash)."""
    return str(Request(scope).base_url).rstrip("/")


def resource_metadata_parameter(scope: Scope) -> str:
    """The ``resource_metadata`` auth-param of a 401 on ``/mcp`` (empty for other paths)."""
    if not is_mcp_path(scope["path"]):
        return ""
    return f', resource_metadata="{_base_url(scope)}{MCP_METADATA_PATH}"'


def resource_metadata(resource: str, issuer: str) -> dict[str, object]:
    """The RFC 9728 metadata document of ``resource``."""
    return {"resource": resource, "authorization_servers": [issuer],
            "bearer_methods_supported": ["header"], "scopes_supported": list(SCOPES_SUPPORTED),
            "resource_name": "Oracle Agent Memory gateway"}


def metadata_routes(issuer: str) -> Sequence[Route]:
    """The metadata of ``/mcp`` and of the gateway as a whole (both open, like any discovery)."""

    async def mcp_metadata(request: Request) -> Response:
        return JSONResponse(resource_metadata(_base_url(request.scope) + MCP_PATH, issuer))

    async def gateway_metadata(request: Request) -> Response:
        return JSONResponse(resource_metadata(_base_url(request.scope), issuer))

    return (Route(MCP_METADATA_PATH, mcp_metadata, methods=["GET"]),
            Route(WELL_KNOWN_PATH, gateway_metadata, methods=["GET"]))
