"""``POST /v1/search``: rank the caller's records for a query."""

from __future__ import annotations

from typing import Any

from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.core import OracleAgentMemory
from starlette.responses import Response

from oam_gateway.rest.endpoints import Call, Endpoint, RequestRefused, json_data_response
from oam_gateway.rest.models import LinkedRecord, SearchHit, SearchIn, SearchOut
from oam_gateway.rest.views import record_data, record_view
from oam_gateway.tenancy.principal import READ_SCOPE

__all__ = ["ENDPOINTS", "SEARCH_SCOPE_NOTE", "search"]


def _filter_depth(value: Any) -> int:
    """How deeply ``value`` (a metadata filter) nests objects and arrays."""
    if isinstance(value, dict):
        return 1 + max((_filter_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_filter_depth(v) for v in value), default=0)
    return 0


def _check_search(body: SearchIn, call: Call) -> None:
    """The limits of a search: ``k``, query length, filter depth."""
    limits = call.limits
    if body.k > limits.max_k:
        raise RequestRefused(400, "invalid-request", f"k must be at most {limits.max_k}")
    if len(body.query) > limits.max_query_chars:
        raise RequestRefused(400, "invalid-request",
                             f"the query must be at most {limits.max_query_chars} characters")
    if body.metadata_filter is not None and (
            _filter_depth(body.metadata_filter) > limits.max_filter_depth):
        raise RequestRefused(400, "invalid-request", f"the metadata filter nests deeper than "
                             f"{limits.max_filter_depth} levels")


def _linked(parent: SearchResult) -> list[LinkedRecord]:
    """The records linked under ``parent``, each with its relation and its own links."""
    return [LinkedRecord(**record_view(child.record).model_dump(), relation_id=relation.id,
                         relation_type=relation.relation_type_from(parent.record.id),
                         linked=_linked(child))
            for relation, child in parent.linked_results]


def _hit(result: SearchResult) -> dict[str, Any]:
    """``result`` as :class:`SearchHit` serialises it (``None`` fields left out); a result
    without links is built directly (:func:`record_data`), which costs a fraction of the
    models' validation on the route's hottest path."""
    distance = getattr(result, "distance", None)
    if not isinstance(distance, float):
        distance = None
    if result.linked_results:
        return SearchHit(record=record_view(result.record), distance=distance,
                         linked=_linked(result)).model_dump(mode="json", exclude_none=True)
    hit: dict[str, Any] = {"record": record_data(result.record)}
    if distance is not None:
        hit["distance"] = float(distance)
    hit["linked"] = []
    return hit


async def search(call: Call) -> Response:
    body = call.body(SearchIn)
    _check_search(body, call)
    options: dict[str, Any] = {"user_id": call.principal.user_name, "max_results": body.k,
                               "num_hops": body.num_hops,
                               "include_invalid_results": body.include_invalid_results}
    if body.record_types is not None:
        options["record_types"] = list(body.record_types)
    if body.metadata_filter is not None:
        options["metadata_filter"] = body.metadata_filter
    if body.thread_id is not None:
        options["thread_id"] = body.thread_id
        options["exact_thread_match"] = True
    if body.agent_id is not None:
        options["agent_id"] = body.agent_id
        options["exact_agent_match"] = True

    def work(client: OracleAgentMemory) -> dict[str, Any]:
        results = client.search(body.query, **options)
        answer: dict[str, Any] = {"results": [_hit(r) for r in results]}  # as SearchOut
        if body.formatted:
            answer["formatted"] = "\n\n".join(r.formatted_content for r in results)
        return answer

    answer = await call.sdk(work)
    hits = answer["results"]
    call.event.touched(hit["record"]["id"] for hit in hits)
    call.event.result_count = len(hits)
    return json_data_response(answer)


SEARCH_SCOPE_NOTE = (
    "thread_id and agent_id each match exactly: with thread_id only that thread's records are "
    "found, with agent_id only that agent's. A thread created without agent_id has a generated "
    "agent_id, which its messages carry, so memories stored without an agent are not found in "
    "the thread's scope (its thread_id and agent_id); a search without them finds all of the "
    "caller's records.")
"""What a client of ``POST /v1/search`` (and of the ``search`` tool) should know."""

ENDPOINTS = (
    Endpoint("POST", "/search", "search", "Search the caller's memories", search, READ_SCOPE,
             body=SearchIn, response=SearchOut, description=SEARCH_SCOPE_NOTE),
)
