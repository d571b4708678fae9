"""``/v1/threads`` and ``/v1/threads/{id}/messages``: the caller's conversations."""

from __future__ import annotations

from typing import Any

from oracleagentmemory.apis.records import MessageRecord, ThreadRecord
from oracleagentmemory.apis.records import Record as SdkRecord
from oracleagentmemory.core import OracleAgentMemory
from starlette.responses import Response

from oam_gateway.rest.endpoints import Call, Endpoint, QueryParameter, RequestRefused, json_response
from oam_gateway.rest.models import Ids, MessagesIn, Page, Record, ThreadIn, ThreadPatch
from oam_gateway.rest.pagination import page_of, page_request
from oam_gateway.rest.views import record_view
from oam_gateway.tenancy.principal import READ_SCOPE, WRITE_SCOPE

__all__ = ["ENDPOINTS", "PAGE_PARAMETERS", "THREAD_AGENT_NOTE", "add_messages", "create_thread",
           "delete_thread", "get_thread", "list_messages", "list_threads", "record_position",
           "update_thread"]

PAGE_PARAMETERS = (
    QueryParameter("limit", "how many items the page holds", int),
    QueryParameter("cursor", "the next_cursor of the previous page of this list: the next "
                   "page starts strictly after its last item, so items added or deleted "
                   "meanwhile are neither repeated nor skipped"),
)


def record_position(record: SdkRecord) -> tuple[str, str]:
    """Where a record stands in a keyset list: its ``(timestamp, id)``."""
    assert record.timestamp is not None  # stored records always carry a time
    return record.timestamp, record.id


def _thread(client: OracleAgentMemory, thread_id: str) -> ThreadRecord:
    """The visible thread ``thread_id``, or a 404 (another user's thread is not visible)."""
    record = client.store.get("thread", thread_id)
    if not isinstance(record, ThreadRecord):
        raise RequestRefused(404, "record-not-found", f"no thread {thread_id!r}")
    return record


async def create_thread(call: Call) -> Response:
    body = call.body(ThreadIn)
    options: dict[str, Any] = {"user_id": call.principal.user_name, "metadata": body.metadata}
    if body.thread_id is not None:
        options["thread_id"] = body.thread_id
    if body.agent_id is not None:
        options["agent_id"] = body.agent_id

    def work(client: OracleAgentMemory) -> ThreadRecord:
        thread = client.create_thread(**options)
        return _thread(client, thread.thread_id)

    record = await call.sdk(work)
    call.event.touched([record.id])
    return json_response(record_view(record), 201)


async def list_threads(call: Call) -> Response:
    page = page_request(call, "threads")
    agent_id = call.query("agent_id")

    def work(client: OracleAgentMemory) -> list[ThreadRecord]:
        options: dict[str, Any] = {"user_id": call.principal.user_name, "limit": page.fetch}
        if agent_id is not None:
            options["agent_id"] = agent_id
        return client.list_threads(**options, older_than=page.older_than)

    result = page_of(await call.sdk(work), page, "threads", record_position)
    call.event.result_count = len(result.items)
    return json_response(Page(items=[record_view(r) for r in result.items],
                              next_cursor=result.next_cursor))


async def get_thread(call: Call) -> Response:
    thread_id = call.path("thread_id")
    call.event.touched([thread_id])
    record = await call.sdk(lambda client: _thread(client, thread_id))
    call.event.result_count = 1
    return json_response(record_view(record))


async def update_thread(call: Call) -> Response:
    thread_id = call.path("thread_id")
    body = call.body(ThreadPatch)
    call.event.touched([thread_id])

    def work(client: OracleAgentMemory) -> ThreadRecord:
        with client.transaction():
            _thread(client, thread_id)
            client.update_thread(thread_id, metadata=body.metadata)
            return _thread(client, thread_id)

    return json_response(record_view(await call.sdk(work)))


async def delete_thread(call: Call) -> Response:
    thread_id = call.path("thread_id")
    call.event.touched([thread_id])

    def work(client: OracleAgentMemory) -> int:
        with client.transaction():
            _thread(client, thread_id)
            return client.delete_thread(thread_id)

    call.event.result_count = await call.sdk(work)
    return Response(status_code=204)


async def add_messages(call: Call) -> Response:
    thread_id = call.path("thread_id")
    body = call.body(MessagesIn)
    if len(body.messages) > call.limits.max_batch_operations:
        raise RequestRefused(400, "invalid-request", f"at most "
                             f"{call.limits.max_batch_operations} messages per request")
    messages = [message.model_dump(exclude_none=True) for message in body.messages]
    for message in messages:
        message.pop("metadata", None)
    metadata = [m.metadata for m in body.messages]

    def work(client: OracleAgentMemory) -> list[str]:
        with client.transaction():
            _thread(client, thread_id)
            thread = client.get_thread(thread_id)
            return thread.add_messages(messages, metadata=metadata)

    ids = await call.sdk(work)
    call.event.touched([thread_id, *ids])
    return json_response(Ids(ids=ids), 201)


async def list_messages(call: Call) -> Response:
    thread_id = call.path("thread_id")
    page = page_request(call, "messages")
    call.event.touched([thread_id])

    def work(client: OracleAgentMemory) -> list[MessageRecord]:
        with client.transaction():
            _thread(client, thread_id)
            found: list[MessageRecord] = client.store.list_thread_messages(
                thread_id, last_n=page.fetch, range_end_seq_no=page.before_seq_no)
            return found

    result = page_of(await call.sdk(work), page, "messages", lambda message: message.seq_no)
    call.event.result_count = len(result.items)
    return json_response(Page(items=[record_view(r) for r in result.items],
                              next_cursor=result.next_cursor))


THREAD_AGENT_NOTE = (
    "A thread created without agent_id gets a generated agent_id (in the answer), as the SDK's "
    "create_thread does, and its messages carry it. A search in the thread's scope (its "
    "thread_id and that agent_id, as the SDK's thread search does) finds only that agent's "
    "records: memories stored without an agent are not among them; a search without agent_id "
    "finds them.")
"""What a client of ``POST /v1/threads`` (and of the ``create_thread`` tool) should know."""

ENDPOINTS = (
    Endpoint("POST", "/threads", "threads.create", "Start a thread", create_thread,
             WRITE_SCOPE, body=ThreadIn, response=Record, status=201,
             description=THREAD_AGENT_NOTE),
    Endpoint("GET", "/threads", "threads.list", "List the caller's threads", list_threads,
             READ_SCOPE, response=Page,
             query=(*PAGE_PARAMETERS, QueryParameter("agent_id", "only this agent's threads"))),
    Endpoint("GET", "/threads/{thread_id}", "threads.get", "Get a thread", get_thread,
             READ_SCOPE, response=Record),
    Endpoint("PATCH", "/threads/{thread_id}", "threads.update", "Replace a thread's metadata",
             update_thread, WRITE_SCOPE, body=ThreadPatch, response=Record),
    Endpoint("DELETE", "/threads/{thread_id}", "threads.delete",
             "Delete a thread with its messages and memories", delete_thread, WRITE_SCOPE,
             status=204),
    Endpoint("POST", "/threads/{thread_id}/messages", "messages.add",
             "Append messages to a thread", add_messages, WRITE_SCOPE, body=MessagesIn,
             response=Ids, status=201),
    Endpoint("GET", "/threads/{thread_id}/messages", "messages.list",
             "List a thread's messages", list_messages, READ_SCOPE, response=Page,
             query=PAGE_PARAMETERS),
)
