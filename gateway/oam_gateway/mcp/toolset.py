"""The gateway's MCP tools, built for the limits of the server that offers them.

Each tool is an async function whose signature is its input schema, and runs the REST operation
it names (:class:`~oam_gateway.mcp.tools.ToolRunner`). Every argument is described: a body
argument by its REST body model's field, with that field's constraints; a list filter by the
operation's query parameter. The bounds the server enforces come from its
:class:`~oam_gateway.config.limits.LimitSettings` (``k`` at most ``max_k``, the query at most
``max_query_chars`` characters, a page at most ``max_page_size`` items), so the schema an agent
reads is the rule the server applies. Each tool also carries MCP annotations: reads are
read-only, deletes and replacements destructive and idempotent, additions neither; none reaches
outside the user's memory.

The annotations of this module are evaluated when a tool is defined (it does not postpone
them), so that a tool's schema holds the limits of the server it is built for.
"""

import inspect
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from oam_gateway.mcp.tools import ToolRunner
from oam_gateway.rest.models import (
    Deleted,
    Id,
    Ids,
    MemoryIn,
    MemoryPatch,
    MemoryType,
    MessageIn,
    MessagesIn,
    Metadata,
    Page,
    PathId,
    ProfileIn,
    Record,
    RecordTypeName,
    Relation,
    RelationIn,
    RelationPage,
    SearchIn,
    SearchOut,
    ThreadIn,
    TtlDays,
)
from oam_gateway.rest.search import SEARCH_SCOPE_NOTE
from oam_gateway.rest.threads import THREAD_AGENT_NOTE

__all__ = ["ADDS", "MEMORY_ID", "READS", "RELATION_ID", "REPLACES", "THREAD_ID", "ToolFunction",
           "build_tools"]

ToolFunction = Callable[..., Coroutine[Any, Any, CallToolResult]]

READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                       open_world_hint=False)
"""A tool that only adds: calling it twice adds twice."""
REPLACES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                           open_world_hint=False)
"""A tool that changes or deletes what exists: calling it twice changes nothing more."""

MEMORY_ID = "The memory's id (as add_memory, list_memories or search answered it)."
THREAD_ID = "The thread's id (as create_thread or list_threads answered it)."
RELATION_ID = "The relation's id (as add_relation or list_relations answered it)."


def _body_field(model: type[BaseModel], name: str, *, note: str = "", **bounds: Any) -> Any:
    """The tool argument for the field ``name`` of the REST body ``model``: the field's
    description (and ``note``), its constraints and schema extras (a query's ``pattern``), and
    ``bounds`` (pydantic ``Field`` bounds)."""
    field = model.model_fields[name]
    description = " ".join(part for part in (field.description, note) if part)
    if not description:
        raise ValueError(f"{model.__name__}.{name} has no description to give its tool argument")
    argument: FieldInfo = Field(description=description,
                                json_schema_extra=field.json_schema_extra, **bounds)
    argument.metadata = [*field.metadata, *argument.metadata]
    return argument


def build_tools(runner: ToolRunner) -> list[Tool]:
    """Every tool of ``runner``'s operations, in the order ``tools/list`` answers them."""
    limits = runner.limits
    query_of = {(e.operation, q.name): q.description
                for e in runner.endpoints.values() for q in e.query}

    def query_field(operation: str, name: str) -> Any:
        """The tool argument for the query parameter ``name`` of ``operation``."""
        return Field(description=query_of[operation, name])

    def page_limit(operation: str) -> Any:
        return Field(ge=1, le=limits.max_page_size,
                     description=query_of[operation, "limit"])

    def present(**values: Any) -> dict[str, Any]:
        """The arguments the caller gave (``None`` means not given)."""
        return {name: value for name, value in values.items() if value is not None}

    async def search(
        query: Annotated[str, _body_field(SearchIn, "query",
                                         max_length=limits.max_query_chars)],
        ctx: Context,
        k: Annotated[int, _body_field(SearchIn, "k", le=limits.max_k)] = 10,
        record_types: Annotated[list[RecordTypeName] | None,
                                _body_field(SearchIn, "record_types")] = None,
        thread_id: Annotated[Id | None, _body_field(SearchIn, "thread_id")] = None,
        agent_id: Annotated[Id | None, _body_field(SearchIn, "agent_id")] = None,
        metadata_filter: Annotated[dict[str, Any] | None, _body_field(
            SearchIn, "metadata_filter",
            note=f"At most {limits.max_filter_depth} levels deep.")] = None,
        num_hops: Annotated[int, _body_field(SearchIn, "num_hops")] = 0,
        include_invalid_results: Annotated[
            bool, _body_field(SearchIn, "include_invalid_results")] = False,
        formatted: Annotated[bool, _body_field(SearchIn, "formatted")] = False,
    ) -> Annotated[CallToolResult, SearchOut]:
        """Search the user's memories (and other records) for a query, best first. With
        formatted, the answer also holds the results as prompt text."""
        return await runner.run(ctx, "search", "search", body=present(
            query=query, k=k, record_types=record_types, thread_id=thread_id,
            agent_id=agent_id, metadata_filter=metadata_filter, num_hops=num_hops,
            include_invalid_results=include_invalid_results, formatted=formatted))

    async def add_memory(
        content: Annotated[str, _body_field(MemoryIn, "content")],
        ctx: Context,
        memory_type: Annotated[MemoryType, _body_field(MemoryIn, "memory_type")] = "memory",
        memory_id: Annotated[PathId | None, _body_field(MemoryIn, "memory_id")] = None,
        thread_id: Annotated[Id | None, _body_field(MemoryIn, "thread_id")] = None,
        agent_id: Annotated[Id | None, _body_field(MemoryIn, "agent_id")] = None,
        metadata: Annotated[Metadata | None, _body_field(MemoryIn, "metadata")] = None,
        timestamp: Annotated[str | None, _body_field(MemoryIn, "timestamp")] = None,
        ttl_days: Annotated[TtlDays | None, _body_field(MemoryIn, "ttl_days")] = None,
    ) -> Annotated[CallToolResult, Record]:
        """Remember something about the user: a memory, fact, preference or guideline."""
        return await runner.run(ctx, "add_memory", "memories.add", body=present(
            content=content, memory_type=memory_type, memory_id=memory_id,
            thread_id=thread_id, agent_id=agent_id, metadata=metadata, timestamp=timestamp,
            ttl_days=ttl_days))

    async def get_memory(
        memory_id: Annotated[str, Field(description=MEMORY_ID)], ctx: Context,
    ) -> Annotated[CallToolResult, Record]:
        """One of the user's memories, by id."""
        return await runner.run(ctx, "get_memory", "memories.get",
                                path={"memory_id": memory_id})

    async def update_memory(
        memory_id: Annotated[str, Field(description=MEMORY_ID)], ctx: Context,
        content: Annotated[str | None, _body_field(MemoryPatch, "content")] = None,
        metadata: Annotated[Metadata | None, _body_field(MemoryPatch, "metadata")] = None,
        status: Annotated[Literal["valid", "invalid"] | None,
                          _body_field(MemoryPatch, "status")] = None,
    ) -> Annotated[CallToolResult, Record]:
        """Change one of the user's memories: its content, its metadata (replaced whole) or its
        status (valid or invalid). What is not given is kept."""
        return await runner.run(ctx, "update_memory", "memories.update",
                                path={"memory_id": memory_id},
                                body=present(content=content, metadata=metadata,
                                             status=status))

    async def delete_memory(
        memory_id: Annotated[str, Field(description=MEMORY_ID)], ctx: Context,
    ) -> Annotated[CallToolResult, Deleted]:
        """Forget one of the user's memories, with its relations."""
        return await runner.run(ctx, "delete_memory", "memories.delete",
                                path={"memory_id": memory_id})

    async def list_memories(
        ctx: Context,
        thread_id: Annotated[str | None, query_field("memories.list", "thread_id")] = None,
        agent_id: Annotated[str | None, query_field("memories.list", "agent_id")] = None,
        limit: Annotated[int, page_limit("memories.list")] = limits.default_page_size,
        cursor: Annotated[str | None, query_field("memories.list", "cursor")] = None,
    ) -> Annotated[CallToolResult, Page]:
        """The user's memories, newest first, a page at a time (the answer's next_cursor,
        passed as cursor, fetches the next page)."""
        return await runner.run(ctx, "list_memories", "memories.list", query=present(
            thread_id=thread_id, agent_id=agent_id, limit=limit, cursor=cursor))

    async def create_thread(
        ctx: Context,
        thread_id: Annotated[PathId | None, _body_field(ThreadIn, "thread_id")] = None,
        agent_id: Annotated[Id | None, _body_field(ThreadIn, "agent_id")] = None,
        metadata: Annotated[Metadata | None, _body_field(ThreadIn, "metadata")] = None,
    ) -> Annotated[CallToolResult, Record]:
        """Start a conversation thread of the user."""
        return await runner.run(ctx, "create_thread", "threads.create", body=present(
            thread_id=thread_id, agent_id=agent_id, metadata=metadata))

    async def list_threads(
        ctx: Context,
        agent_id: Annotated[str | None, query_field("threads.list", "agent_id")] = None,
        limit: Annotated[int, page_limit("threads.list")] = limits.default_page_size,
        cursor: Annotated[str | None, query_field("threads.list", "cursor")] = None,
    ) -> Annotated[CallToolResult, Page]:
        """The user's threads, newest first, a page at a time (the answer's next_cursor,
        passed as cursor, fetches the next page)."""
        return await runner.run(ctx, "list_threads", "threads.list",
                                query=present(agent_id=agent_id, limit=limit, cursor=cursor))

    async def get_thread(
        thread_id: Annotated[str, Field(description=THREAD_ID)], ctx: Context,
    ) -> Annotated[CallToolResult, Record]:
        """One of the user's threads, by id."""
        return await runner.run(ctx, "get_thread", "threads.get",
                                path={"thread_id": thread_id})

    async def add_messages(
        thread_id: Annotated[str, Field(description=THREAD_ID)],
        messages: Annotated[list[MessageIn], _body_field(
            MessagesIn, "messages", max_length=limits.max_batch_operations)],
        ctx: Context,
    ) -> Annotated[CallToolResult, Ids]:
        """Append messages (role and content) to one of the user's threads, in order."""
        return await runner.run(
            ctx, "add_messages", "messages.add", path={"thread_id": thread_id},
            body={"messages": [m.model_dump(exclude_none=True) for m in messages]})

    async def list_messages(
        thread_id: Annotated[str, Field(description=THREAD_ID)], ctx: Context,
        limit: Annotated[int, page_limit("messages.list")] = limits.default_page_size,
        cursor: Annotated[str | None, query_field("messages.list", "cursor")] = None,
    ) -> Annotated[CallToolResult, Page]:
        """A thread's messages, newest first, a page at a time (the answer's next_cursor,
        passed as cursor, fetches the next page)."""
        return await runner.run(ctx, "list_messages", "messages.list",
                                path={"thread_id": thread_id},
                                query=present(limit=limit, cursor=cursor))

    async def get_profile(ctx: Context) -> Annotated[CallToolResult, Record]:
        """The user's profile: what agents should know about them."""
        return await runner.run(ctx, "get_profile", "profile.get")

    async def set_profile(
        information: Annotated[str, _body_field(ProfileIn, "information")], ctx: Context,
        metadata: Annotated[Metadata | None, _body_field(ProfileIn, "metadata")] = None,
    ) -> Annotated[CallToolResult, Record]:
        """Create or replace the user's profile."""
        return await runner.run(ctx, "set_profile", "profile.put",
                                body=present(information=information, metadata=metadata))

    async def add_relation(
        source_record_id: Annotated[str, _body_field(RelationIn, "source_record_id")],
        source_record_type: Annotated[MemoryType, _body_field(RelationIn,
                                                             "source_record_type")],
        target_record_id: Annotated[str, _body_field(RelationIn, "target_record_id")],
        target_record_type: Annotated[MemoryType, _body_field(RelationIn,
                                                             "target_record_type")],
        relation_type: Annotated[str, _body_field(RelationIn, "relation_type")],
        ctx: Context,
        opposite_relation_type: Annotated[str | None, _body_field(
            RelationIn, "opposite_relation_type")] = None,
        relation_id: Annotated[PathId | None, _body_field(RelationIn, "relation_id")] = None,
        metadata: Annotated[Metadata | None, _body_field(RelationIn, "metadata")] = None,
    ) -> Annotated[CallToolResult, Relation]:
        """Relate two of the user's memories (a directed, typed link)."""
        return await runner.run(ctx, "add_relation", "relations.add", body=present(
            source_record_id=source_record_id, source_record_type=source_record_type,
            target_record_id=target_record_id, target_record_type=target_record_type,
            relation_type=relation_type, opposite_relation_type=opposite_relation_type,
            relation_id=relation_id, metadata=metadata))

    async def list_relations(
        ctx: Context,
        relation_type: Annotated[str | None, query_field("relations.list",
                                                         "relation_type")] = None,
        source_record_id: Annotated[str | None, query_field("relations.list",
                                                            "source_record_id")] = None,
        target_record_id: Annotated[str | None, query_field("relations.list",
                                                            "target_record_id")] = None,
        limit: Annotated[int, page_limit("relations.list")] = limits.default_page_size,
        cursor: Annotated[str | None, query_field("relations.list", "cursor")] = None,
    ) -> Annotated[CallToolResult, RelationPage]:
        """The relations between the user's memories, newest first, a page at a time (the
        answer's next_cursor, passed as cursor, fetches the next page)."""
        return await runner.run(ctx, "list_relations", "relations.list", query=present(
            relation_type=relation_type, source_record_id=source_record_id,
            target_record_id=target_record_id, limit=limit, cursor=cursor))

    async def delete_relation(
        relation_id: Annotated[str, Field(description=RELATION_ID)], ctx: Context,
    ) -> Annotated[CallToolResult, Deleted]:
        """Delete a relation between two of the user's memories."""
        return await runner.run(ctx, "delete_relation", "relations.delete",
                                path={"relation_id": relation_id})

    catalogue: list[tuple[ToolFunction, ToolAnnotations, str]] = [
        (search, READS, SEARCH_SCOPE_NOTE), (add_memory, ADDS, ""), (get_memory, READS, ""),
        (update_memory, REPLACES, ""), (delete_memory, REPLACES, ""),
        (list_memories, READS, ""), (create_thread, ADDS, THREAD_AGENT_NOTE),
        (list_threads, READS, ""), (get_thread, READS, ""), (add_messages, ADDS, ""),
        (list_messages, READS, ""), (get_profile, READS, ""), (set_profile, REPLACES, ""),
        (add_relation, ADDS, ""), (list_relations, READS, ""),
        (delete_relation, REPLACES, ""),
    ]
    return [Tool.from_function(function, annotations=annotations, structured_output=True,
                               description=_description(function, note))
            for function, annotations, note in catalogue]


def _description(function: ToolFunction, note: str) -> str:
    """The tool's description: its docstring as one paragraph, then ``note`` if any."""
    summary = " ".join((inspect.getdoc(function) or "").split())
    return f"{summary}\n\n{note}" if note else summary
