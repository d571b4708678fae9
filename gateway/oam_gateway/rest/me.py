"""``/v1/me``: the caller, their profile, and their data-subject rights (export, erasure)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from oracleagentmemory.apis.records import Record as SdkRecord
from oracleagentmemory.apis.records import UserProfileRecord
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.core import OracleAgentMemory, OracleDBMemoryStore
from starlette.responses import Response, StreamingResponse

from oam_gateway.rest.endpoints import Call, Endpoint, RequestRefused, json_response
from oam_gateway.rest.models import ErasureReceipt, Me, ProfileIn, Record
from oam_gateway.rest.views import record_view, relation_view
from oam_gateway.tenancy.principal import READ_SCOPE, WRITE_SCOPE

__all__ = ["ENDPOINTS", "EXPORTED_TYPES", "JSON_LINES", "erase", "export", "get_profile", "me",
           "put_profile"]

EXPORTED_TYPES = ("user_profile", "thread", "message", "thread_summary", "memory", "fact",
                  "preference", "guideline", "image")
"""Every record type an end user owns, in export order."""

JSON_LINES = "application/jsonl"


async def me(call: Call) -> Response:
    principal = call.principal
    return json_response(Me(user_name=principal.user_name, subject=principal.subject,
                            groups=list(principal.groups), tenant=principal.tenant,
                            scopes=sorted(principal.scopes)))


def _profile(client: OracleAgentMemory, user_name: str) -> UserProfileRecord | None:
    record = client.store.get("user_profile", user_name)
    return record if isinstance(record, UserProfileRecord) else None


async def get_profile(call: Call) -> Response:
    user_name = call.principal.user_name
    record = await call.sdk(lambda client: _profile(client, user_name))
    if record is None:
        raise RequestRefused(404, "record-not-found", "the caller has no profile yet")
    call.event.touched([record.id])
    return json_response(record_view(record))


async def put_profile(call: Call) -> Response:
    body = call.body(ProfileIn)
    user_name = call.principal.user_name

    def work(client: OracleAgentMemory) -> tuple[UserProfileRecord, bool]:
        with client.transaction():
            created = _profile(client, user_name) is None
            if created:
                client.add_user(user_name, body.information, body.metadata)
            else:
                client.store.update("user_profile", user_name, content=body.information,
                                    metadata=body.metadata)
            record = _profile(client, user_name)
            assert record is not None
            return record, created

    record, created = await call.sdk(work)
    call.event.touched([record.id])
    return json_response(record_view(record), 201 if created else 200)


def _owned_records(store: OracleDBMemoryStore, user_name: str) -> dict[str, list[SdkRecord]]:
    """Every record the caller owns, by record type (global records are not theirs)."""
    found: dict[str, list[SdkRecord]] = {}
    for record_type in EXPORTED_TYPES:
        if record_type == "user_profile":
            profile = store.get("user_profile", user_name)
            found[record_type] = [profile] if profile is not None else []
        else:
            found[record_type] = store.list(record_type, limit=None, user_id=user_name)
    return found


def _owned_relations(store: OracleDBMemoryStore,
                    records: dict[str, list[SdkRecord]]) -> list[RecordRelation]:
    """The relations that start or end at one of the caller's ``records`` (erased with them)."""
    owned_ids = {r.id for rs in records.values() for r in rs}
    return [r for r in store.list_relations(limit=None)
            if r.source_record_id in owned_ids or r.target_record_id in owned_ids]


async def export(call: Call) -> Response:
    user_name = call.principal.user_name

    def work(client: OracleAgentMemory) -> tuple[dict[str, list[SdkRecord]], list[Any]]:
        store = client.store
        with client.transaction():  # the records and their relations read in one transaction
            records = _owned_records(store, user_name)
            return records, _owned_relations(store, records)

    records, relations = await call.sdk(work)
    call.event.result_count = sum(map(len, records.values())) + len(relations)

    def lines() -> Iterator[str]:
        for record_type, items in records.items():
            for record in items:
                body = record_view(record).model_dump(mode="json", exclude_none=True)
                yield json.dumps({"kind": record_type, "record": body}) + "\n"
        for relation in relations:
            body = relation_view(relation).model_dump(mode="json", exclude_none=True)
            yield json.dumps({"kind": "relation", "record": body}) + "\n"

    return StreamingResponse(lines(), media_type=JSON_LINES, headers={
        "Content-Disposition": 'attachment; filename="memory-export.jsonl"'})


async def erase(call: Call) -> Response:
    user_name = call.principal.user_name

    def work(client: OracleAgentMemory) -> dict[str, int]:
        store = client.store
        with client.transaction():  # counted and erased in one transaction
            records = _owned_records(store, user_name)
            counts = {record_type: len(items) for record_type, items in records.items()}
            counts["relation"] = len(_owned_relations(store, records))
            # The profile and, whether or not one exists, every row scoped to the user.
            client.delete_user(user_name, cascade=True)
            return counts

    counts = await call.sdk(work)
    call.event.result_count = sum(counts.values())
    receipt = ErasureReceipt(user_name=user_name, counts=counts,
                             erased_at=datetime.now(timezone.utc).isoformat())
    return json_response(receipt)


ENDPOINTS = (
    Endpoint("GET", "/me", "me", "Who the caller is", me, READ_SCOPE, response=Me),
    Endpoint("GET", "/me/profile", "profile.get", "The caller's profile", get_profile,
             READ_SCOPE, response=Record),
    Endpoint("PUT", "/me/profile", "profile.put", "Create or replace the caller's profile",
             put_profile, WRITE_SCOPE, body=ProfileIn, response=Record),
    Endpoint("GET", "/me/export", "me.export",
             "Everything the database holds for the caller, as JSON lines", export, READ_SCOPE,
             response_media_type=JSON_LINES),
    Endpoint("DELETE", "/me", "me.erase", "Erase everything the database holds for the caller",
             erase, WRITE_SCOPE, response=ErasureReceipt),
)
