"""The console's pages for a signed-in person: each reads or changes their memory through
the REST operations (:class:`~oam_gateway.console.operations.PersonOperations`) and answers a
page (:mod:`~oam_gateway.console.pages`) or a redirect after a change (303, so a reload does
not post again). Refusals and SDK errors propagate to the route, which shows them as pages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from oam_gateway.console import pages
from oam_gateway.console.graph import Neighbour, relation_graph
from oam_gateway.console.markup import Html
from oam_gateway.console.operations import PersonOperations
from oam_gateway.console.sessions import ConsoleSession
from oam_gateway.rest.endpoints import RequestRefused, validated_body
from oam_gateway.rest.models import (
    ErasureReceipt,
    Me,
    MemoryIn,
    MemoryPatch,
    Page,
    Record,
    RelationPage,
    SearchIn,
    SearchOut,
)
from oam_gateway.tenancy.principal import Principal

__all__ = ["SEARCH_RESULTS", "Handler", "Visit", "add", "data_page", "delete", "edit", "erase",
           "export", "memories_page", "memory_page", "profile_page", "thread_page",
           "threads_page", "timeline_page"]

SEARCH_RESULTS = 20
"""How many records a search on the memories page shows."""


@dataclass(frozen=True)
class Visit:
    """A request of a signed-in person: their session, principal and operations."""

    request: Request
    links: pages.Links
    session: ConsoleSession
    principal: Principal
    operations: PersonOperations
    form: FormData | None

    def page(self, body: Html, status: int = 200) -> Response:
        """``body`` as the HTML answer."""
        return HTMLResponse(body, status_code=status)

    def field(self, name: str) -> str:
        """A field of the posted form (empty when absent)."""
        value = self.form.get(name) if self.form is not None else None
        return value if isinstance(value, str) else ""

    def text(self, name: str) -> str:
        """A text field of the posted form, stripped; a 400 when it is blank."""
        text = self.field(name).strip()
        if not text:
            raise RequestRefused(400, "invalid-request", f"Write the {name} first.")
        return text

    def redirect(self, path: str) -> Response:
        """See Other: the console page ``path`` (after a change)."""
        return RedirectResponse(self.links.to(path), status_code=303)


Handler = Callable[[Visit], Awaitable[Response]]
"""A page of the console for a signed-in person."""


async def memories_page(visit: Visit) -> Response:
    query = visit.request.query_params.get("q", "").strip()
    ops, csrf = visit.operations, visit.session.csrf_token
    if query:
        body = validated_body(SearchIn, {"query": query, "k": SEARCH_RESULTS})
        found = await ops.answer("search", SearchOut, body=body)
        return visit.page(pages.memories_page(visit.links, csrf, query=query,
                                              hits=found.results))
    page = await ops.answer("memories.list", Page, query=_paging(visit))
    return visit.page(pages.memories_page(visit.links, csrf, page=page))

async def add(visit: Visit) -> Response:
    body = validated_body(MemoryIn, {"content": visit.text("content")})
    record = await visit.operations.answer("memories.add", Record, body=body)
    return RedirectResponse(visit.links.memory(record.id), status_code=303)

async def memory_page(visit: Visit) -> Response:
    memory_id = visit.request.path_params["memory_id"]
    ops = visit.operations
    record = await ops.answer("memories.get", Record, path={"memory_id": memory_id})
    relations = []
    for direction in ("source_record_id", "target_record_id"):
        found = await ops.answer("relations.list", RelationPage,
                                 query={direction: memory_id, "limit": "100"})
        for relation in found.items:
            outgoing = direction == "source_record_id"
            other = relation.target_record_id if outgoing else relation.source_record_id
            kind = (relation.relation_type if outgoing
                    else relation.opposite_relation_type or f"{relation.relation_type} (to)")
            relations.append((kind, other))
    texts = {other: await _text_of(ops, other) for _, other in relations}
    listed = [(kind, other, texts[other]) for kind, other in relations]
    graph = relation_graph(pages.record_text(record.content),
                           [Neighbour(o, t, k) for k, o, t in listed], visit.links.memory)
    return visit.page(pages.memory_page(visit.links, visit.session.csrf_token, record,
                                        graph, listed))

async def _text_of(ops: PersonOperations, memory_id: str) -> str:
    try:
        other = await ops.answer("memories.get", Record, path={"memory_id": memory_id})
    except RequestRefused:
        return memory_id  # a record that is not a memory (or not visible): its id
    return pages.record_text(other.content)

async def edit(visit: Visit) -> Response:
    memory_id = visit.request.path_params["memory_id"]
    body = validated_body(MemoryPatch, {"content": visit.text("content")})
    await visit.operations.answer("memories.update", Record, path={"memory_id": memory_id},
                                  body=body)
    return RedirectResponse(visit.links.memory(memory_id), status_code=303)

async def delete(visit: Visit) -> Response:
    memory_id = visit.request.path_params["memory_id"]
    await visit.operations.response("memories.delete", path={"memory_id": memory_id})
    return visit.redirect("/memories")

async def timeline_page(visit: Visit) -> Response:
    page = await visit.operations.answer("memories.list", Page, query=_paging(visit))
    return visit.page(pages.timeline_page(visit.links, visit.session.csrf_token, page))

async def threads_page(visit: Visit) -> Response:
    page = await visit.operations.answer("threads.list", Page, query=_paging(visit))
    return visit.page(pages.threads_page(visit.links, visit.session.csrf_token, page))

async def thread_page(visit: Visit) -> Response:
    path = {"thread_id": visit.request.path_params["thread_id"]}
    thread = await visit.operations.answer("threads.get", Record, path=path)
    messages = await visit.operations.answer("messages.list", Page, path=path,
                                             query=_paging(visit))
    return visit.page(pages.thread_page(visit.links, visit.session.csrf_token, thread,
                                        messages))

async def profile_page(visit: Visit) -> Response:
    me = await visit.operations.answer("me", Me)
    try:
        profile: Record | None = await visit.operations.answer("profile.get", Record)
    except RequestRefused as refused:
        if refused.status != 404:
            raise
        profile = None
    return visit.page(pages.profile_page(visit.links, visit.session.csrf_token, me,
                                         profile))

async def data_page(visit: Visit) -> Response:
    return visit.page(pages.data_page(visit.links, visit.session.csrf_token))

async def export(visit: Visit) -> Response:
    return await visit.operations.response("me.export")

async def erase(visit: Visit) -> Response:
    if visit.field("confirm") != "yes":
        raise RequestRefused(400, "invalid-request",
                             "Tick the confirmation to erase everything.")
    receipt = await visit.operations.answer("me.erase", ErasureReceipt)
    return visit.page(pages.erased_page(visit.links, visit.session.csrf_token, receipt))


def _paging(visit: Visit) -> Mapping[str, str | None]:
    params = visit.request.query_params
    return {"cursor": params.get("cursor"), "limit": params.get("limit")}
