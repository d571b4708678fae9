"""MCP tool calls as REST operations: the same scope check, handler and end-user context.

An MCP tool names a declared REST operation (:class:`~oam_gateway.rest.endpoints.Endpoint`) and
runs its handler with a :class:`~oam_gateway.rest.endpoints.GivenCall`: the caller is the principal
the bearer middleware verified for the HTTP request that carried the tool call, path and query
parameters come from the tool's arguments, and the body is the operation's own pydantic model. The
handler's JSON answer becomes the tool's structured result; every refusal or SDK error becomes a
tool error (``isError``) whose structured content is the same RFC 9457 problem document REST
answers, never a stack trace. The request's audit event names the operation ``mcp.<tool>``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent
from opentelemetry import context as otel_context
from oracleagentmemory.errors import OracleAgentMemoryError
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from oam_gateway.config.limits import LimitSettings
from oam_gateway.errors.problems import problem_response
from oam_gateway.errors.sdk_problems import sdk_problem
from oam_gateway.middleware.bearer import PRINCIPAL_SCOPE_KEY
from oam_gateway.observability.request_events import event_of
from oam_gateway.rest.endpoints import (
    Endpoint,
    GivenCall,
    RequestRefused,
    refuse_unstorable_text,
    validated_body,
)
from oam_gateway.tenancy.principal import Principal
from oam_gateway.tenancy.tenants import Tenants

__all__ = ["MCP_INSTANCE", "OTEL_CONTEXT_SCOPE_KEY", "ToolRunner", "tool_error"]

_log = logging.getLogger(__name__)

OTEL_CONTEXT_SCOPE_KEY = "oam.otel_context"
"""The OpenTelemetry context of the HTTP request (the tool runs in the MCP server's task)."""


@dataclass(frozen=True)
class ToolRunner:
    """Runs tools as the REST operations they name."""

    endpoints: Mapping[str, Endpoint]
    """The declared operations by name."""
    tenants: Tenants
    limits: LimitSettings
    enforce_scopes: bool

    async def run(self, ctx: Context, tool: str, operation: str, *,
                  path: Mapping[str, str] | None = None, query: Mapping[str, Any] | None = None,
                  body: Mapping[str, Any] | None = None) -> CallToolResult:
        """Run ``operation`` for the tool ``tool`` as the caller of the request under ``ctx``."""
        request = ctx.request_context.request
        if not isinstance(request, Request):  # not over HTTP: no verified caller
            return tool_error(problem_response(401, "invalid-token", "a bearer token is required"))
        event = event_of(request)
        event.operation = f"mcp.{tool}"
        token = otel_context.attach(request.scope.get(OTEL_CONTEXT_SCOPE_KEY,
                                                      otel_context.get_current()))
        problem: Response | None
        try:
            response = await self._answer(request, operation, path or {}, query or {},
                                          body or {})
        except RequestRefused as refused:
            problem = problem_response(refused.status, refused.slug, refused.detail)
        except OracleAgentMemoryError as error:
            problem = sdk_problem(error, MCP_INSTANCE)
        except Exception as error:  # never a stack trace to the client
            _log.error("unhandled %s in MCP tool %s", type(error).__name__, tool)
            problem = problem_response(500, "internal-error", "the gateway failed to answer")
        else:
            problem = None
        finally:
            otel_context.detach(token)
        if problem is not None:
            event.status = problem.status_code  # the audit event tells the tool's outcome
            return tool_error(problem)
        return _tool_result(_json(response) if response.body else
                           {"deleted": event.result_count or 0})

    async def _answer(self, request: Request, operation: str, path: Mapping[str, str],
                      query: Mapping[str, Any], body: Mapping[str, Any]) -> Response:
        principal = request.scope.get(PRINCIPAL_SCOPE_KEY)
        if not isinstance(principal, Principal):  # outside the bearer middleware: fail closed
            raise RequestRefused(401, "invalid-token", "a bearer token is required")
        endpoint = self.endpoints[operation]
        if not principal.may(endpoint.scope, enforced=self.enforce_scopes):
            raise RequestRefused(403, "insufficient-scope",
                                 f"this tool needs the scope {endpoint.scope!r}")
        refuse_unstorable_text([dict(path), dict(query), dict(body)], "the tool's arguments")
        parsed: BaseModel | None = None
        if endpoint.body is not None:
            parsed = validated_body(endpoint.body, dict(body))
        call = GivenCall(request, principal, self.tenants[principal.tenant], self.limits,
                        event_of(request), parsed, path_values=path, query_values=query)
        return await endpoint.handler(call)


MCP_INSTANCE = "/mcp"


def _json(response: Response) -> dict[str, Any]:
    value = json.loads(bytes(response.body))
    assert isinstance(value, dict)
    return value


def _tool_result(value: dict[str, Any]) -> CallToolResult:
    """A successful tool result: ``value`` as structured content and as JSON text."""
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(value))],
                          structured_content=value)


def tool_error(problem: Response) -> CallToolResult:
    """A tool error carrying the problem document ``problem`` (``isError``)."""
    document = _json(problem)
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(document))],
                          structured_content=document, is_error=True)
