"""The gateway's MCP server at ``/mcp``: streamable HTTP, stateless, behind the bearer tokens.

:class:`McpGateway` serves the ``mcp`` package's :class:`~mcp.server.mcpserver.MCPServer` over
streamable HTTP in stateless mode with JSON responses (each POST is answered on its own, so any
replica serves any request) and the RFC 9728 metadata routes
(:mod:`oam_gateway.auth.resource_metadata`).
The bearer middleware verifies ``/mcp`` like ``/v1`` (same verifier, rate limit, audit event);
each tool (:mod:`oam_gateway.mcp.toolset`) runs the REST operation it names
(:mod:`oam_gateway.mcp.tools`) inside the caller's end-user context. No tool takes a
``user_id``: the caller is the token's user. Arguments that break a tool's input schema answer
a problem naming each one and its rule; ``serverInfo`` carries the package's version.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from opentelemetry import context as otel_context
from pydantic import ValidationError
from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from oam_gateway.auth.resource_metadata import MCP_PATH, metadata_routes
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.errors.problems import problem_response
from oam_gateway.mcp.tools import MCP_INSTANCE, OTEL_CONTEXT_SCOPE_KEY, ToolRunner, tool_error
from oam_gateway.mcp.toolset import build_tools
from oam_gateway.observability.request_events import event_of
from oam_gateway.rest.endpoints import Endpoint, describe_validation
from oam_gateway.rest.routes import ENDPOINTS
from oam_gateway.tenancy.tenants import Tenants
from oam_gateway.version import gateway_version

__all__ = ["INSTRUCTIONS", "SERVER_NAME", "McpGateway"]

SERVER_NAME = "oracle-agent-memory"
INSTRUCTIONS = ("Long-term memory of the signed-in user: search it before answering, add what is "
                "worth remembering, keep conversations in threads. Every tool acts for the "
                "user of the bearer token only.")


async def _name_the_operation(ctx: ServerRequestContext[Any, Any],
                             call_next: CallNext) -> HandlerResult:
    """MCP middleware: the request's audit event names the MCP method (``mcp.<tool>`` for a
    tool call), and a tool error the ``mcp`` package raised itself (an unknown tool) carries a
    problem document like every other tool error."""
    request = ctx.request
    if isinstance(request, Request):
        params = ctx.params or {}
        name = params.get("name") if ctx.method == "tools/call" else None
        event_of(request).operation = (f"mcp.{name}" if isinstance(name, str)
                                       else "mcp." + ctx.method.replace("/", "."))
    result = await call_next(ctx)
    if (ctx.method == "tools/call" and isinstance(result, dict) and result.get("isError")
            and result.get("structuredContent") is None):
        content = result.get("content") or [{}]
        text = str(content[0].get("text") or "") if isinstance(content[0], dict) else ""
        problem = tool_error(problem_response(
            400, "invalid-request", text.splitlines()[0] if text else "the tool call is not valid",
            instance=MCP_INSTANCE))
        wire = problem.model_dump(mode="json", by_alias=True)
        result = {**result, "content": wire["content"],
                  "structuredContent": wire["structuredContent"]}
    return result


def _check_arguments(tools: Sequence[Tool]) -> ServerMiddleware[Any]:
    """MCP middleware: a call of one of ``tools`` whose arguments break its input schema
    answers, before the tool runs, the tool error of a 400 ``invalid-request`` problem naming
    each bad argument and the rule it breaks."""
    by_name = {tool.name: tool for tool in tools}

    async def check(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params or {}
        tool = by_name.get(str(params.get("name"))) if ctx.method == "tools/call" else None
        arguments = params.get("arguments") or {}
        if tool is not None and isinstance(arguments, dict):
            try:
                tool.fn_metadata.validate_arguments(arguments)
            except ValidationError as error:
                if isinstance(ctx.request, Request):
                    event_of(ctx.request).status = 400
                return tool_error(problem_response(
                    400, "invalid-request", describe_validation(error), instance=MCP_INSTANCE))
        return await call_next(ctx)

    return check


def _mcp_server(runner: ToolRunner, version: str) -> MCPServer[Any]:
    """The MCP server of the tools of ``runner``'s operations, reporting ``version``."""
    tools = build_tools(runner)
    # MCPServer() calls logging.basicConfig (a handler and level INFO on the root logger);
    # the gateway's logging is its own, so the root logger is put back as it was.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        server: MCPServer[Any] = MCPServer(
            SERVER_NAME, instructions=INSTRUCTIONS, version=version, tools=tools,
            middleware=[_name_the_operation, _check_arguments(tools)],
            warn_on_duplicate_tools=True)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return server


class McpGateway:
    """The ``/mcp`` endpoint, its metadata routes and the session manager's lifespan."""

    def __init__(self, settings: GatewaySettings, tenants: Tenants,
                 endpoints: Sequence[Endpoint] = ENDPOINTS) -> None:
        runner = ToolRunner({e.operation: e for e in endpoints}, tenants, settings.limits,
                            settings.require_scopes)
        self.server = _mcp_server(runner, gateway_version())
        # Stateless with JSON answers: no session to pin to a replica, no stream to keep open.
        # The token is a header (no ambient credential), so DNS rebinding gains an attacker
        # nothing; behind a load balancer the Host is not known in advance.
        # (The Starlette app it returns is not used: the gateway routes to the transport.)
        self.server.streamable_http_app(
            streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.session_manager: StreamableHTTPSessionManager = self.server.session_manager
        self._transport = StreamableHTTPASGIApp(self.session_manager)
        # POST only: a stateless server offers no event stream (GET) and no session (DELETE).
        self.routes: list[BaseRoute] = [Route(MCP_PATH, self, methods=["POST"], name="mcp"),
                                        *metadata_routes(settings.issuer)]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ``/mcp`` endpoint (ASGI): the MCP transport, with the request's context."""
        event_of(Request(scope)).operation = "mcp"
        scope[OTEL_CONTEXT_SCOPE_KEY] = otel_context.get_current()
        await self._transport(scope, receive, send)

    def run(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The session manager's lifespan (enter it once, inside the app's lifespan)."""
        return self.session_manager.run()
