"""Record updates on Oracle: changed columns, recomputed expiry, replaced retrieval rows.

Builders only. ``EngineSession.update_record(plan)`` on Oracle runs:

1. :func:`update_statement`; no row updated (``cursor.rowcount == 0``; Deep Data Security
   skips a row the end user may not change, silently) returns 0. Otherwise the scope is
   :func:`returned_scope` of the out-binds (``(thread_id, user_id, agent_id)``).
2. ``message`` only, when ``plan.attachments`` is set: *delete where* ``document`` with
   ``deletes.message_images_where([(plan.record_id, scope[1])])`` (see
   :mod:`~oracleagentmemory.engines.oracle.deletes`), then :func:`scoped_attachments` inserted
   through :mod:`~oracleagentmemory.engines.oracle.inserts` (``insert_batches``); then, when
   attachments, expiry or event time changed (:func:`syncs_message_images`),
   :func:`sync_message_images`.
3. ``plan.chunks`` set: ``deletes.delete_record_chunks(record type, id, chunk owner)`` and
   ``inserts.chunk_batch`` of :func:`chunk_plan`. Else ``plan.chunk_vectors`` set: fetch
   :func:`chunk_ids`, then ``executemany`` :func:`vector_batch` (which checks
   the count first). The chunk owner is :func:`chunk_owner`.
4. Return 1.

``UNSET`` plan fields leave their columns alone; ``updated_at`` is always set.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import oracledb

from oracleagentmemory.engines.interfaces import (
    UNSET,
    ImageBody,
    RowPlan,
    UpdatePlan,
    Vector,
    message_body,
)
from oracleagentmemory.engines.layout import TABLE_OF_TYPE
from oracleagentmemory.engines.oracle.binds import (
    json_bind,
    json_input_sizes,
    timestamp_bind,
    timestamp_input_sizes,
    utc_timestamp_sql,
    vector_bind,
)
from oracleagentmemory.engines.oracle.names import OracleObjects
from oracleagentmemory.engines.oracle.record_sql import (
    VARCHAR_OUT,
    equals,
    merge_binds,
    record_key,
    same_owner,
)
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import InvalidArgumentError

Scope = tuple[str | None, str | None, str | None]
"""A record's ``(thread_id, user_id, agent_id)``."""

_RETURNED_SCOPE = {"thread": "id, user_id, agent_id"}  # a thread's own id is its thread id
_SCOPE_OUT = ("scope_thread_id", "scope_user_id", "scope_agent_id")


def _set_clauses(logical: str, plan: UpdatePlan
                 ) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """The ``SET`` assignments of ``plan``'s changed fields, their binds and input sizes."""
    sets = ["updated_at = SYSTIMESTAMP"]
    binds: dict[str, Any] = {}
    json_names: list[str] = []
    ts_names: list[str] = []
    if plan.content is not UNSET:
        if logical == "thread_summary":
            sets.append("content = :content")
            binds["content"] = json_bind(plan.content)
            json_names.append("content")
        elif logical == "message":
            text, parts = message_body(plan.content)
            sets.append("content = :content, content_parts = :content_parts")
            binds.update(content=text, content_parts=json_bind(parts))
            json_names.append("content_parts")
        elif logical == "document":
            if not isinstance(plan.content, ImageBody):
                raise TypeError("an image's content is an ImageBody")
            sets.append("mime_type = :mime_type, bytes = :bytes")
            binds.update(mime_type=plan.content.mime_type, bytes=plan.content.data)
        else:
            sets.append("content = :content")
            binds["content"] = plan.content
    if plan.description is not UNSET:
        sets.append("description = :description")
        binds["description"] = plan.description
    if plan.metadata is not UNSET:
        sets.append("metadata = :metadata")
        binds["metadata"] = json_bind(plan.metadata)
        json_names.append("metadata")
    if plan.event_ts is not UNSET:
        sets.append(f"event_ts = {utc_timestamp_sql('event_ts')}")
        binds["event_ts"] = timestamp_bind(plan.event_ts)
        ts_names.append("event_ts")
    if plan.status is not UNSET:
        sets.append("status = :status")
        binds["status"] = plan.status
    for column, value in (("runtime_config", plan.runtime_config),
                          ("runtime_state", plan.runtime_state)):
        if value is not UNSET:
            sets.append(f"{column} = :{column}")
            binds[column] = json_bind(value)
            json_names.append(column)
    sizes: dict[str, Any] = {}
    if plan.expiry is not UNSET:
        if plan.expiry is None:
            sets.append("expires_at = NULL")
        elif isinstance(plan.expiry.anchor, datetime):
            sets.append(f"expires_at = {utc_timestamp_sql('expires_at')}")
            binds["expires_at"] = timestamp_bind(plan.expiry.instant(plan.expiry.anchor))
            ts_names.append("expires_at")
        else:
            sets.append("expires_at = created_at + NUMTODSINTERVAL(:lifetime_s, 'SECOND')")
            binds["lifetime_s"] = plan.expiry.lifetime.total_seconds()
            sizes["lifetime_s"] = oracledb.DB_TYPE_NUMBER
    sizes.update(json_input_sizes(*json_names))
    sizes.update(timestamp_input_sizes(*ts_names))
    return sets, binds, sizes


def update_statement(o: OracleObjects, plan: UpdatePlan) -> Statement:
    """The ``UPDATE`` of one record's changed columns, returning its scope into the out-binds
    ``scope_thread_id``, ``scope_user_id`` and ``scope_agent_id`` (a profile has no scope and
    returns nothing: its ``cursor.rowcount`` says whether it was updated)."""
    logical = TABLE_OF_TYPE[plan.record_type]
    key, key_binds = record_key(logical, plan.record_type, plan.record_id)
    sets, binds, sizes = _set_clauses(logical, plan)
    sql = f"UPDATE {o.table(logical)} SET {', '.join(sets)} WHERE {key}"
    returning: dict[str, Any] = {}
    if logical != "actor_profile":
        sql += (f" RETURNING {_RETURNED_SCOPE.get(logical, 'thread_id, user_id, agent_id')} "
                f"INTO {', '.join(':' + name for name in _SCOPE_OUT)}")
        returning = dict.fromkeys(_SCOPE_OUT, VARCHAR_OUT)
    return Statement(sql=sql, binds=merge_binds(binds, key_binds), input_sizes=sizes,
                     out_binds=returning)


def returned_scope(out_values: dict[str, Sequence[Any]]) -> Scope:
    """The updated record's scope from the out-bind values (``name -> var.getvalue()``) of
    :func:`update_statement` (a profile, which returns none: no scope). The first updated
    row's, as PostgreSQL's ``RETURNING`` fetched once."""
    if not out_values:
        return None, None, None
    thread, user, agent = (list(out_values.get(name) or [None])[0] for name in _SCOPE_OUT)
    return thread, user, agent


def chunk_owner(plan: UpdatePlan, scope: Scope) -> str | None:
    """The owner of the record's retrieval rows: a user profile's actor id, else its user."""
    return plan.record_id if plan.record_type == "user_profile" else scope[1]


def chunk_plan(plan: UpdatePlan, scope: Scope) -> RowPlan:
    """The record's new retrieval rows as an insert plan (``plan.chunks`` set)."""
    if plan.chunks is UNSET:
        raise InvalidArgumentError("the plan does not replace the retrieval rows")
    return RowPlan(record_type=plan.record_type, record_id=plan.record_id, content=None,
                   thread_id=scope[0], user_id=scope[1], agent_id=scope[2], chunks=plan.chunks)


def chunk_ids(o: OracleObjects, plan: UpdatePlan, scope: Scope) -> Statement:
    """The ids of the record's retrieval rows in chunk order (``row[0]`` of each row)."""
    owner_sql, owner_binds = equals("user_id", "chunk_owner", chunk_owner(plan, scope))
    return Statement(
        sql=(f"SELECT id FROM {o.table('record_chunks')} WHERE record_type = :record_type "
             f"AND record_id = :record_id AND {owner_sql} ORDER BY chunk_no"),
        binds={"record_type": plan.record_type, "record_id": plan.record_id, **owner_binds})


def check_vector_count(ids: Sequence[Any], vectors: Sequence[Vector | None]) -> None:
    """Refuse a vector list that does not align with the stored retrieval rows."""
    if len(ids) != len(vectors):
        raise InvalidArgumentError("embedding: vector count does not match the stored chunks")


def vector_batch(o: OracleObjects, ids: Sequence[Any],
                 vectors: Sequence[Vector | None]) -> Statement | None:
    """Rewrite the vectors of the retrieval rows ``ids`` (aligned with ``vectors``); ``None``
    when there are none (python-oracledb's thin ``executemany`` refuses an empty list,
    python-oracledb issue #508)."""
    check_vector_count(ids, vectors)
    if not ids:
        return None
    rows = tuple({"embedding": None if v is None else vector_bind(
                      v, int(np.asarray(v).shape[0])), "chunk_id": int(i)}
                 for v, i in zip(vectors, ids, strict=True))
    return Statement(sql=(f"UPDATE {o.table('record_chunks')} SET embedding = :embedding "
                          "WHERE id = :chunk_id"),
                     rows=rows, input_sizes={"embedding": oracledb.DB_TYPE_VECTOR})


def scoped_attachments(plan: UpdatePlan, scope: Scope) -> list[RowPlan]:
    """The replacing image parts, with the stored message's scope (``plan.attachments``)."""
    if plan.attachments is UNSET:
        return []
    for image in plan.attachments:
        image.thread_id, image.user_id, image.agent_id = scope
    return list(plan.attachments)


def syncs_message_images(plan: UpdatePlan) -> bool:
    """Whether the message's image parts need :func:`sync_message_images`."""
    return plan.record_type == "message" and (
        plan.attachments is not UNSET or plan.expiry is not UNSET or plan.event_ts is not UNSET)


def sync_message_images(o: OracleObjects, message_id: str, owner: str | None) -> Statement:
    """Give a message's image parts the message's expiry and event time (where they differ)."""
    m_owner, m_binds = equals("m.user_id", "owner", owner)
    d_owner, d_binds = equals("d.user_id", "owner", owner)
    message = (f"FROM {o.table('message')} m WHERE m.id = :message_id AND {m_owner}")
    differs = ("(DECODE(d.expires_at, m.expires_at, 1, 0) = 0 "
               "OR DECODE(d.event_ts, m.event_ts, 1, 0) = 0)")
    return Statement(
        sql=(f"UPDATE {o.table('document')} d SET (expires_at, event_ts) = "
             f"(SELECT m.expires_at, m.event_ts {message}), updated_at = SYSTIMESTAMP "
             f"WHERE d.message_id = :message_id AND {d_owner} AND EXISTS (SELECT 1 {message} "
             f"AND {same_owner('m.user_id', 'd.user_id')} AND {differs})"),
        binds=merge_binds({"message_id": message_id}, m_binds, d_binds))
