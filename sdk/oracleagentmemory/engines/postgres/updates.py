"""Record updates on PostgreSQL: changed columns, recomputed expiry, replaced retrieval rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import (
    UNSET,
    ImageBody,
    RowPlan,
    UpdatePlan,
    message_body,
)
from oracleagentmemory.engines.layout import TABLE_OF_TYPE
from oracleagentmemory.engines.postgres import inserts
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.deletes import delete_chunks, delete_message_images
from oracleagentmemory.engines.postgres.record_sql import record_key
from oracleagentmemory.errors import InvalidArgumentError

_RETURNED_SCOPE = {
    "actor_profile": sql.SQL("NULL, NULL, NULL"),
    "thread": sql.SQL("id, user_id, agent_id"),  # a thread's own id is its thread id
}


def _jsonb(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def _update_message_images(conn: psycopg.Connection[Any], names: StoreNames, plan: UpdatePlan,
                           scope: Any) -> None:
    """Replace a message's image parts (new content) and keep their event time and expiry the
    message's (``scope``: the message's thread, user and agent ids)."""
    if plan.attachments is not UNSET:
        delete_message_images(conn, names, [(plan.record_id, scope[1])])
        for image in plan.attachments:
            image.thread_id, image.user_id, image.agent_id = scope[0], scope[1], scope[2]
        inserts.insert_rows(conn, names, plan.attachments)
    elif plan.expiry is UNSET and plan.event_ts is UNSET:
        return
    conn.execute(
        sql.SQL("UPDATE {d} d SET expires_at = m.expires_at, event_ts = m.event_ts, "
                "updated_at = now() FROM {m} m WHERE m.id = %s AND m.user_id IS NOT DISTINCT "
                "FROM %s AND d.message_id = m.id AND d.user_id IS NOT DISTINCT FROM m.user_id "
                "AND (d.expires_at IS DISTINCT FROM m.expires_at "
                "OR d.event_ts IS DISTINCT FROM m.event_ts)").format(
            d=q.table(names, "document"), m=q.table(names, "message")),
        [plan.record_id, scope[1]],
    )


def update_record(conn: psycopg.Connection[Any], names: StoreNames, plan: UpdatePlan) -> int:
    """Apply ``plan`` to one record (and its retrieval rows); returns 0 or 1."""
    logical = TABLE_OF_TYPE[plan.record_type]
    table = q.table(names, logical)
    key, key_params = record_key(logical, type_filter=True,
                                 record_type=plan.record_type, record_id=plan.record_id)
    sets: list[sql.Composable] = [sql.SQL("updated_at = now()")]
    params: list[Any] = []
    if plan.content is not UNSET:
        if logical == "thread_summary":
            sets.append(sql.SQL("content = %s"))
            params.append(Jsonb(plan.content))
        elif logical == "message":
            text, parts = message_body(plan.content)
            sets.append(sql.SQL("content = %s, content_parts = %s"))
            params.extend([text, _jsonb(parts)])
        elif logical == "document":
            if not isinstance(plan.content, ImageBody):
                raise TypeError("an image's content is an ImageBody")
            sets.append(sql.SQL("mime_type = %s, bytes = %s"))
            params.extend([plan.content.mime_type, plan.content.data])
        else:
            sets.append(sql.SQL("content = %s"))
            params.append(plan.content)
    if plan.description is not UNSET:
        sets.append(sql.SQL("description = %s"))
        params.append(plan.description)
    if plan.metadata is not UNSET:
        sets.append(sql.SQL("metadata = %s"))
        params.append(_jsonb(plan.metadata))
    if plan.event_ts is not UNSET:
        sets.append(sql.SQL("event_ts = %s"))
        params.append(plan.event_ts)
    if plan.status is not UNSET:
        sets.append(sql.SQL("status = %s"))
        params.append(plan.status)
    for column, value in (("runtime_config", plan.runtime_config),
                          ("runtime_state", plan.runtime_state)):
        if value is not UNSET:
            sets.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(_jsonb(value))
    if plan.expiry is not UNSET:
        if plan.expiry is None:
            sets.append(sql.SQL("expires_at = NULL"))
        elif isinstance(plan.expiry.anchor, datetime):
            sets.append(sql.SQL("expires_at = %s"))
            params.append(plan.expiry.instant(plan.expiry.anchor))
        else:
            sets.append(sql.SQL("expires_at = created_at + make_interval(secs => %s)"))
            params.append(plan.expiry.lifetime.total_seconds())
    cur = conn.execute(
        sql.SQL("UPDATE {} SET {} WHERE {} RETURNING {}").format(
            table, sql.SQL(", ").join(sets), key,
            _RETURNED_SCOPE.get(logical, sql.SQL("thread_id, user_id, agent_id")),
        ),
        params + key_params,
    )
    scope = cur.fetchone()
    if scope is None:
        return 0
    if logical == "message":
        _update_message_images(conn, names, plan, scope)
    chunks = q.table(names, "record_chunks")
    chunk_owner = plan.record_id if plan.record_type == "user_profile" else scope[1]
    if plan.chunks is not UNSET:
        delete_chunks(conn, names, (plan.record_type,), [(plan.record_id, chunk_owner)])
        row = RowPlan(record_type=plan.record_type, record_id=plan.record_id, content=None,
                      thread_id=scope[0], user_id=scope[1], agent_id=scope[2],
                      chunks=plan.chunks)
        inserts.insert_chunks(conn, names, [row])
    elif plan.chunk_vectors is not UNSET:
        ids = [r[0] for r in conn.execute(
            sql.SQL("SELECT id FROM {} WHERE record_type = %s AND record_id = %s "
                    "AND user_id IS NOT DISTINCT FROM %s ORDER BY chunk_no").format(chunks),
            [plan.record_type, plan.record_id, chunk_owner],
        ).fetchall()]
        if len(ids) != len(plan.chunk_vectors):
            raise InvalidArgumentError(
                "embedding: vector count does not match the stored chunks")
        with conn.cursor() as c:
            c.executemany(
                sql.SQL("UPDATE {} SET embedding = %s WHERE id = %s").format(chunks),
                list(zip(plan.chunk_vectors, ids, strict=True)),
            )
    return 1
