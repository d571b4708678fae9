"""SQL pieces shared by reads, updates and deletes: SELECT lists and one record's key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from oracleagentmemory.engines.interfaces import UNSET, Keyset, OrUnset

# SELECT lists per table; every list yields the same neutral keys.
SELECT_COLUMNS = {
    "memory": "id, record_type, thread_id, user_id, agent_id, content, NULL::jsonb AS "
    "content_parts, metadata, coalesce(event_ts, created_at) AS ts, event_ts, status, "
    "NULL::text AS role, NULL::bigint AS seq_no",
    "message": "id, 'message' AS record_type, thread_id, user_id, agent_id, content, "
    "content_parts, metadata, coalesce(event_ts, created_at) AS ts, event_ts, status, role, "
    "seq_no",
    "thread_summary": "id, 'thread_summary' AS record_type, thread_id, user_id, agent_id, "
    "content, NULL::jsonb AS content_parts, metadata, coalesce(event_ts, created_at) AS ts, "
    "event_ts, status, NULL::text AS role, covered_through_seq_no AS seq_no",
    "actor_profile": "actor_id AS id, actor_type || '_profile' AS record_type, NULL::text AS "
    "thread_id, NULL::text AS user_id, NULL::text AS agent_id, content, NULL::jsonb AS "
    "content_parts, metadata, coalesce(event_ts, created_at) AS ts, event_ts, 'valid' AS "
    "status, NULL::text AS role, NULL::bigint AS seq_no",
    "thread": "id, 'thread' AS record_type, id AS thread_id, user_id, agent_id, NULL::text AS "
    "content, NULL::jsonb AS content_parts, metadata, coalesce(event_ts, created_at) AS ts, "
    "event_ts, 'valid' AS status, NULL::text AS role, NULL::bigint AS seq_no, runtime_config, "
    "runtime_state",
    "document": "id, 'image' AS record_type, thread_id, user_id, agent_id, description AS "
    "content, NULL::jsonb AS content_parts, metadata, coalesce(event_ts, created_at) AS ts, "
    "event_ts, status, NULL::text AS role, NULL::bigint AS seq_no, message_id, mime_type, "
    "NULL::bytea AS bytes",
}
IMAGE_COLUMNS_WITH_BYTES = SELECT_COLUMNS["document"].replace("NULL::bytea AS bytes", "bytes")
"""The image SELECT list that loads the bytes (reads load them only on request)."""


def select_columns(logical: str, include_bytes: bool = False) -> str:
    """The SELECT list of ``logical`` (images with their bytes when ``include_bytes``)."""
    if logical == "document" and include_bytes:
        return IMAGE_COLUMNS_WITH_BYTES
    return SELECT_COLUMNS[logical]


def record_key(logical: str, *, type_filter: bool, record_type: str,
               record_id: str) -> tuple[sql.Composable, list[Any]]:
    """WHERE clause that selects one record of ``record_type``."""
    if logical == "actor_profile":
        return sql.SQL("actor_type = %s AND actor_id = %s"), [
            record_type.removesuffix("_profile"), record_id]
    if logical == "memory" and type_filter:
        return sql.SQL("record_type = %s AND id = %s"), [record_type, record_id]
    if logical == "document":  # a message's image parts change and go with their message
        return sql.SQL("id = %s AND message_id IS NULL"), [record_id]
    return sql.SQL("id = %s"), [record_id]


def keyset_order(time: str, id_column: str, older_than: OrUnset[Keyset | None],
                 default_column: str) -> tuple[sql.Composable, list[sql.Composable], list[Any]]:
    """The newest-first ORDER BY of a list, and the predicate and parameters of its keyset
    position: by ``default_column`` when ``older_than`` is ``UNSET``, else by ``(time,
    id_column)`` with ids in code-point order (``COLLATE "C"``), strictly older than the
    position when one is given."""
    if older_than is UNSET:
        return sql.SQL("{} DESC").format(sql.Identifier(default_column)), [], []
    key = sql.SQL('{}, {} COLLATE "C"').format(sql.SQL(time), sql.Identifier(id_column))
    order = sql.SQL('{} DESC, {} COLLATE "C" DESC').format(sql.SQL(time),
                                                           sql.Identifier(id_column))
    if older_than is None:
        return order, [], []
    return order, [sql.SQL("({}) < (%s, %s)").format(key)], [older_than[0], older_than[1]]


def newest_oldest_first(conn: psycopg.Connection[Any], columns: sql.Composable,
                        table: sql.Composable, where: Sequence[sql.Composable],
                        order: str | sql.Composable, limit: int | None,
                        params: list[Any]) -> list[dict[str, Any]]:
    """The newest ``limit`` rows (all when ``None``) by ``order`` (a column, or a composed
    newest-first ORDER BY list), returned oldest first."""
    statement, values = newest_first_statement(columns, table, where, order, limit, params)
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(statement, values).fetchall()
    rows.reverse()
    return rows


def newest_first_statement(columns: sql.Composable, table: sql.Composable,
                           where: Sequence[sql.Composable], order: str | sql.Composable,
                           limit: int | None, params: list[Any]) -> tuple[str, list[Any]]:
    """The statement (``%s`` placeholders) and values of :func:`newest_oldest_first`, whose
    rows come newest first."""
    statement = sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY {}{}").format(
        columns, table, sql.SQL(" AND ").join(where) if where else sql.SQL("true"),
        sql.SQL("{} DESC").format(sql.Identifier(order)) if isinstance(order, str) else order,
        sql.SQL(" LIMIT %s") if limit is not None else sql.SQL(""),
    )
    return statement.as_string(), [*params, *([limit] if limit is not None else [])]
