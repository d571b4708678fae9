"""The gateway's MCP server at ``/mcp``: streamable HTTP, stateless, behind the bearer tokens.

:class:`McpGateway` serves the ``mcp`` package's :class:`~mcp.server.mcpserver.MCPServer` over
streamable HTTP in stateless mode with JSON responses (each POST is answered on its own, so any
replica serves any request) and the RFC 9728 metadata routes (:mod:`oam_gateway.mcp_metadata`).
The bearer middleware verifies ``/mcp`` like ``/v1`` (same verifier, rate limit, audit event);
each tool runs the REST operation it names (:mod:`oam_gateway.mcp_tools`) inside the caller's
end-user context. No tool takes a ``user_id``: the caller is the token's user.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any, Literal

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult
from opentelemetry import context as otel_context
from pydantic import Field
from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from oam_gateway.endpoints import Endpoint
from oam_gateway.mcp_metadata import MCP_PATH, metadata_routes
from oam_gateway.mcp_tools import MCP_INSTANCE, OTEL_CONTEXT_SCOPE_KEY, ToolRunner, tool_error
from oam_gateway.models import (
    Deleted,
    Ids,
    MemoryType,
    MessageIn,
    Metadata,
    Page,
    Record,
    RecordTypeName,
    Relation,
    RelationPage,
    SearchOut,
)
from oam_gateway.problems import problem_response
from oam_gateway.request_events import event_of
from oam_gateway.rest import ENDPOINTS
from oam_gateway.rest_search import SEARCH_SCOPE_NOTE
from oam_gateway.rest_threads import THREAD_AGENT_NOTE
from oam_gateway.settings import GatewaySettings
from oam_gateway.tenants import Tenants

SERVER_NAME = "oracle-agent-memory"
INSTRUCTIONS = ("Long-term memory of the signed-in user: search it before answering, add what is "
                "worth remembering, keep conversations in threads. Every tool acts for the "
                "user of the bearer token only.")

Limit = Annotated[int | None, Field(description="how many items the page holds")]
Cursor = Annotated[str | None, Field(description="the next_cursor of the previous page")]


def _runner(ctx: Context) -> ToolRunner:
    runner = ctx.request_context.lifespan_context
    assert isinstance(runner, ToolRunner)
    return runner


def _present(**values: Any) -> dict[str, Any]:
    """The arguments the caller gave (``None`` means not given)."""
    return {name: value for name, value in values.items() if value is not None}


async def search(
    query: str, ctx: Context, k: int = 10,
    record_types: list[RecordTypeName] | None = None, thread_id: str | None = None,
    agent_id: str | None = None, metadata_filter: dict[str, Any] | None = None,
    num_hops: int = 0, include_invalid_results: bool = False, formatted: bool = False,
) -> Annotated[CallToolResult, SearchOut]:
    """Search the user's memories (and other records) for a query, best first; ``formatted``
    also answers the results as prompt text."""
    return await _runner(ctx).run(ctx, "search", "search", body=_present(
        query=query, k=k, record_types=record_types, thread_id=thread_id, agent_id=agent_id,
        metadata_filter=metadata_filter, num_hops=num_hops,
        include_invalid_results=include_invalid_results, formatted=formatted))


async def add_memory(
    content: str, ctx: Context, memory_type: MemoryType = "memory",
    memory_id: str | None = None, thread_id: str | None = None, agent_id: str | None = None,
    metadata: Metadata | None = None, timestamp: str | None = None,
    ttl_days: float | None = None,
) -> Annotated[CallToolResult, Record]:
    """Remember something about the user (a memory, fact, preference or guideline)."""
    return await _runner(ctx).run(ctx, "add_memory", "memories.add", body=_present(
        content=content, memory_type=memory_type, memory_id=memory_id, thread_id=thread_id,
        agent_id=agent_id, metadata=metadata, timestamp=timestamp, ttl_days=ttl_days))


async def get_memory(memory_id: str, ctx: Context) -> Annotated[CallToolResult, Record]:
    """One of the user's memories by id."""
    return await _runner(ctx).run(ctx, "get_memory", "memories.get",
                                  path={"memory_id": memory_id})


async def update_memory(
    memory_id: str, ctx: Context, content: str | None = None,
    metadata: Metadata | None = None, status: Literal["valid", "invalid"] | None = None,
) -> Annotated[CallToolResult, Record]:
    """Change a memory: its content, its metadata (replaced whole) or its status (valid or
    invalid); what is not given is kept."""
    return await _runner(ctx).run(ctx, "update_memory", "memories.update",
                                  path={"memory_id": memory_id},
                                  body=_present(content=content, metadata=metadata,
                                                status=status))


async def delete_memory(memory_id: str, ctx: Context) -> Annotated[CallToolResult, Deleted]:
    """Forget a memory (with its relations)."""
    return await _runner(ctx).run(ctx, "delete_memory", "memories.delete",
                                  path={"memory_id": memory_id})


async def list_memories(
    ctx: Context, thread_id: str | None = None, agent_id: str | None = None,
    limit: Limit = None, cursor: Cursor = None,
) -> Annotated[CallToolResult, Page]:
    """The user's memories, newest first, a page at a time."""
    return await _runner(ctx).run(ctx, "list_memories", "memories.list", query=_present(
        thread_id=thread_id, agent_id=agent_id, limit=limit, cursor=cursor))


async def create_thread(
    ctx: Context, thread_id: str | None = None, agent_id: str | None = None,
    metadata: Metadata | None = None,
) -> Annotated[CallToolResult, Record]:
    """Start a conversation thread of the user."""
    return await _runner(ctx).run(ctx, "create_thread", "threads.create", body=_present(
        thread_id=thread_id, agent_id=agent_id, metadata=metadata))


async def list_threads(
    ctx: Context, agent_id: str | None = None, limit: Limit = None, cursor: Cursor = None,
) -> Annotated[CallToolResult, Page]:
    """The user's threads, newest first, a page at a time."""
    return await _runner(ctx).run(ctx, "list_threads", "threads.list",
                                  query=_present(agent_id=agent_id, limit=limit, cursor=cursor))


async def get_thread(thread_id: str, ctx: Context) -> Annotated[CallToolResult, Record]:
    """One of the user's threads by id."""
    return await _runner(ctx).run(ctx, "get_thread", "threads.get",
                                  path={"thread_id": thread_id})


async def add_messages(thread_id: str, messages: list[MessageIn],
                       ctx: Context) -> Annotated[CallToolResult, Ids]:
    """Append messages (role and content) to one of the user's threads, in order."""
    return await _runner(ctx).run(
        ctx, "add_messages", "messages.add", path={"thread_id": thread_id},
        body={"messages": [m.model_dump(exclude_none=True) for m in messages]})


async def list_messages(thread_id: str, ctx: Context, limit: Limit = None,
                        cursor: Cursor = None) -> Annotated[CallToolResult, Page]:
    """A thread's messages, newest first, a page at a time."""
    return await _runner(ctx).run(ctx, "list_messages", "messages.list",
                                  path={"thread_id": thread_id},
                                  query=_present(limit=limit, cursor=cursor))


async def get_profile(ctx: Context) -> Annotated[CallToolResult, Record]:
    """The user's profile: what agents should know about them."""
    return await _runner(ctx).run(ctx, "get_profile", "profile.get")


async def set_profile(information: str, ctx: Context,
                      metadata: Metadata | None = None) -> Annotated[CallToolResult, Record]:
    """Create or replace the user's profile."""
    return await _runner(ctx).run(ctx, "set_profile", "profile.put",
                                  body=_present(information=information, metadata=metadata))


async def add_relation(
    source_record_id: str, source_record_type: MemoryType, target_record_id: str,
    target_record_type: MemoryType, relation_type: str, ctx: Context,
    opposite_relation_type: str | None = None, relation_id: str | None = None,
    metadata: Metadata | None = None,
) -> Annotated[CallToolResult, Relation]:
    """Relate two of the user's memories (a directed, typed link)."""
    return await _runner(ctx).run(ctx, "add_relation", "relations.add", body=_present(
        source_record_id=source_record_id, source_record_type=source_record_type,
        target_record_id=target_record_id, target_record_type=target_record_type,
        relation_type=relation_type, opposite_relation_type=opposite_relation_type,
        relation_id=relation_id, metadata=metadata))


async def list_relations(
    ctx: Context, relation_type: str | None = None, source_record_id: str | None = None,
    target_record_id: str | None = None, limit: Limit = None, cursor: Cursor = None,
) -> Annotated[CallToolResult, RelationPage]:
    """The relations between the user's memories, newest first, a page at a time."""
    return await _runner(ctx).run(ctx, "list_relations", "relations.list", query=_present(
        relation_type=relation_type, source_record_id=source_record_id,
        target_record_id=target_record_id, limit=limit, cursor=cursor))


async def delete_relation(relation_id: str, ctx: Context) -> Annotated[CallToolResult, Deleted]:
    """Delete a relation between two of the user's memories."""
    return await _runner(ctx).run(ctx, "delete_relation", "relations.delete",
                                  path={"relation_id": relation_id})


TOOLS = (search, add_memory, get_memory, update_memory, delete_memory, list_memories,
         create_thread, list_threads, get_thread, add_messages, list_messages, get_profile,
         set_profile, add_relation, list_relations, delete_relation)
"""Every tool, in the order ``tools/list`` answers them."""

NOTES = {"search": SEARCH_SCOPE_NOTE, "create_thread": THREAD_AGENT_NOTE}
"""What a tool's description adds to its docstring (the REST operation's note)."""


async def name_the_operation(ctx: ServerRequestContext[Any, Any],
                             call_next: CallNext) -> HandlerResult:
    """MCP middleware: the request's audit event names the MCP method (``mcp.<tool>`` for a
    tool call), and a tool error the ``mcp`` package raised itself (unknown tool, arguments
    outside the input schema) carries a problem document like every other tool error."""
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


def mcp_server(runner: ToolRunner) -> MCPServer[ToolRunner]:
    """The MCP server of the gateway's tools (its lifespan state is ``runner``)."""

    @contextlib.asynccontextmanager
    async def state(server: MCPServer[ToolRunner]) -> AsyncIterator[ToolRunner]:
        yield runner

    # MCPServer() calls logging.basicConfig (a handler and level INFO on the root logger);
    # the gateway's logging is its own, so the root logger is put back as it was.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        server: MCPServer[ToolRunner] = MCPServer(
            SERVER_NAME, instructions=INSTRUCTIONS, lifespan=state,
            middleware=[name_the_operation], warn_on_duplicate_tools=True)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    for tool in TOOLS:
        note = NOTES.get(tool.__name__)
        server.add_tool(tool, description=f"{tool.__doc__}\n\n{note}" if note else None,
                        structured_output=True)
    return server


class McpGateway:
    """The ``/mcp`` endpoint, its metadata routes and the session manager's lifespan."""

    def __init__(self, settings: GatewaySettings, tenants: Tenants,
                 endpoints: Sequence[Endpoint] = ENDPOINTS) -> None:
        runner = ToolRunner({e.operation: e for e in endpoints}, tenants, settings.limits,
                            settings.require_scopes)
        self.server = mcp_server(runner)
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
