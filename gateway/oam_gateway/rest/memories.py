"""``/v1/memories``, ``/v1/memories:batch`` and ``/v1/relations``: the caller's memories."""

from __future__ import annotations

from typing import Any

from oracleagentmemory.apis.records import Record as SdkRecord
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.errors import RecordKeyError
from starlette.responses import Response

from oam_gateway.rest.endpoints import (
    Call,
    Endpoint,
    QueryParameter,
    RequestRefused,
    json_data_response,
    json_response,
)
from oam_gateway.rest.models import (
    BatchAdd,
    BatchIn,
    BatchResult,
    BatchUpdate,
    MemoryIn,
    MemoryPatch,
    Page,
    Record,
    Relation,
    RelationIn,
    RelationPage,
)
from oam_gateway.rest.pagination import page_of, page_request
from oam_gateway.rest.threads import PAGE_PARAMETERS, record_position
from oam_gateway.rest.views import record_data, record_view, relation_view
from oam_gateway.tenancy.principal import READ_SCOPE, WRITE_SCOPE

__all__ = ["ENDPOINTS", "add_memory", "add_relation", "batch", "delete_memory", "delete_relation",
           "get_memory", "list_memories", "list_relations", "memory", "update_memory"]


def memory(client: OracleAgentMemory, memory_id: str) -> SdkRecord:
    """The visible memory ``memory_id`` (any memory type), or a 404."""
    try:
        return client.get_memory(memory_id)
    except RecordKeyError:
        raise RequestRefused(404, "record-not-found", f"no memory {memory_id!r}") from None


def _add(client: OracleAgentMemory, body: MemoryIn, user_name: str) -> str:
    options: dict[str, Any] = {"memory_type": body.memory_type, "user_id": user_name}
    for name in ("memory_id", "thread_id", "agent_id", "metadata", "timestamp"):
        value = getattr(body, name)
        if value is not None:
            options[name] = value
    if "ttl_days" in body.model_fields_set:  # null is the spec's "never expires", not omitted
        options["ttl_days"] = body.ttl_days
    return client.add_memory(body.content, **options)


def _update(client: OracleAgentMemory, memory_id: str, body: MemoryPatch) -> None:
    memory(client, memory_id)
    changes = {name: getattr(body, name) for name in ("content", "metadata", "status")
               if name in body.model_fields_set}
    if not changes:
        raise RequestRefused(400, "invalid-request", "the body changes nothing")
    client.update_memory(memory_id, **changes)


async def add_memory(call: Call) -> Response:
    body = call.body(MemoryIn)

    def work(client: OracleAgentMemory) -> SdkRecord:
        with client.transaction():
            return memory(client, _add(client, body, call.principal.user_name))

    record = await call.sdk(work)
    call.event.touched([record.id])
    return json_response(record_view(record), 201)


async def get_memory(call: Call) -> Response:
    memory_id = call.path("memory_id")
    call.event.touched([memory_id])

    def work(client: OracleAgentMemory) -> SdkRecord:
        with client.transaction():
            return memory(client, memory_id)

    record = await call.sdk(work)
    call.event.result_count = 1
    return json_data_response(record_data(record))


async def update_memory(call: Call) -> Response:
    memory_id = call.path("memory_id")
    body = call.body(MemoryPatch)
    call.event.touched([memory_id])

    def work(client: OracleAgentMemory) -> SdkRecord:
        with client.transaction():
            _update(client, memory_id, body)
            return memory(client, memory_id)

    return json_response(record_view(await call.sdk(work)))


async def delete_memory(call: Call) -> Response:
    memory_id = call.path("memory_id")
    call.event.touched([memory_id])

    def work(client: OracleAgentMemory) -> int:
        with client.transaction():
            memory(client, memory_id)
            return client.delete_memory(memory_id)

    call.event.result_count = await call.sdk(work)
    return Response(status_code=204)


async def list_memories(call: Call) -> Response:
    page = page_request(call, "memories")
    filters = {name: value for name in ("thread_id", "agent_id")
               if (value := call.query(name)) is not None}

    def work(client: OracleAgentMemory) -> list[Any]:
        with client.transaction():
            return client.list_memories(user_id=call.principal.user_name, limit=page.fetch,
                                        older_than=page.older_than, **filters)

    result = page_of(await call.sdk(work), page, "memories", record_position)
    call.event.result_count = len(result.items)
    return json_response(Page(items=[record_view(r) for r in result.items],
                              next_cursor=result.next_cursor))


async def batch(call: Call) -> Response:
    body = call.body(BatchIn)
    if len(body.operations) > call.limits.max_batch_operations:
        raise RequestRefused(400, "invalid-request", f"at most "
                             f"{call.limits.max_batch_operations} operations per batch")
    user_name = call.principal.user_name

    def work(client: OracleAgentMemory) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        with client.transaction():  # all of them or none
            for index, operation in enumerate(body.operations):
                try:
                    if isinstance(operation, BatchAdd):
                        results.append({"op": "add", "id": _add(client, operation, user_name)})
                    elif isinstance(operation, BatchUpdate):
                        _update(client, operation.id, operation)
                        results.append({"op": "update", "id": operation.id})
                    else:
                        memory(client, operation.id)
                        client.delete_memory(operation.id)
                        results.append({"op": "delete", "id": operation.id})
                except RequestRefused as refused:
                    raise RequestRefused(refused.status, refused.slug,
                                         f"operations[{index}]: {refused.detail}") from None
        return results

    results = await call.sdk(work)
    call.event.touched(str(result["id"]) for result in results)
    call.event.result_count = len(results)
    return json_response(BatchResult(results=results))


async def add_relation(call: Call) -> Response:
    body = call.body(RelationIn)
    options = {name: value for name in ("opposite_relation_type", "relation_id", "metadata")
               if (value := getattr(body, name)) is not None}

    def work(client: OracleAgentMemory) -> RecordRelation:
        with client.transaction():
            memory(client, body.source_record_id)
            memory(client, body.target_record_id)
            relation_id = client.link_records(
                body.source_record_id, body.source_record_type, body.target_record_id,
                body.target_record_type, body.relation_type, **options)
            relation = client.store.get_relation(relation_id=relation_id)
            assert isinstance(relation, RecordRelation)
            return relation

    relation = await call.sdk(work)
    call.event.touched([relation.id, relation.source_record_id, relation.target_record_id])
    return json_response(relation_view(relation), 201)


async def list_relations(call: Call) -> Response:
    page = page_request(call, "relations")
    filters = {name: value for name in ("relation_type", "source_record_id", "target_record_id")
               if (value := call.query(name)) is not None}

    def work(client: OracleAgentMemory) -> list[RecordRelation]:
        found: list[RecordRelation] = client.store.list_relations(
            limit=page.fetch, older_than=page.older_than, **filters)
        return found

    result = page_of(await call.sdk(work), page, "relations",
                     lambda relation: (relation.created_at, relation.id))
    call.event.result_count = len(result.items)
    return json_response(RelationPage(items=[relation_view(r) for r in result.items],
                                      next_cursor=result.next_cursor))


async def delete_relation(call: Call) -> Response:
    relation_id = call.path("relation_id")
    call.event.touched([relation_id])
    deleted = await call.sdk(lambda client: client.delete_record_link(relation_id=relation_id))
    if not deleted:
        raise RequestRefused(404, "record-not-found", f"no relation {relation_id!r}")
    call.event.result_count = deleted
    return Response(status_code=204)


ENDPOINTS = (
    Endpoint("POST", "/memories", "memories.add", "Add a memory", add_memory, WRITE_SCOPE,
             body=MemoryIn, response=Record, status=201),
    Endpoint("GET", "/memories", "memories.list", "List the caller's memories", list_memories,
             READ_SCOPE, response=Page,
             query=(*PAGE_PARAMETERS, QueryParameter("thread_id", "only this thread's"),
                    QueryParameter("agent_id", "only this agent's"))),
    Endpoint("POST", "/memories:batch", "memories.batch",
             "Add, change and delete memories in one transaction", batch, WRITE_SCOPE,
             body=BatchIn, response=BatchResult),
    Endpoint("GET", "/memories/{memory_id}", "memories.get", "Get a memory", get_memory,
             READ_SCOPE, response=Record),
    Endpoint("PATCH", "/memories/{memory_id}", "memories.update", "Change a memory",
             update_memory, WRITE_SCOPE, body=MemoryPatch, response=Record),
    Endpoint("DELETE", "/memories/{memory_id}", "memories.delete",
             "Delete a memory with its relations", delete_memory, WRITE_SCOPE, status=204),
    Endpoint("POST", "/relations", "relations.add", "Relate two memories", add_relation,
             WRITE_SCOPE, body=RelationIn, response=Relation, status=201),
    Endpoint("GET", "/relations", "relations.list", "List the caller's relations",
             list_relations, READ_SCOPE, response=RelationPage,
             query=(*PAGE_PARAMETERS, QueryParameter("relation_type", "only this type"),
                    QueryParameter("source_record_id", "only from this memory"),
                    QueryParameter("target_record_id", "only to this memory"))),
    Endpoint("DELETE", "/relations/{relation_id}", "relations.delete", "Delete a relation",
             delete_relation, WRITE_SCOPE, status=204),
)
