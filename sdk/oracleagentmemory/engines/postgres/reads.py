"""Record reads on PostgreSQL: by type and scope, a thread's messages, by keys, linked memories."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import UNSET, MessageQuery, RecordQuery, SearchPlan
from oracleagentmemory.engines.layout import EXPIRING_TABLES, MEMORY_TYPES, TABLE_OF_TYPE
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.filters import (
    metadata_predicates,
    render_filter,
    scope_predicates,
)
from oracleagentmemory.engines.postgres.record_sql import (
    SELECT_COLUMNS,
    keyset_order,
    newest_first_statement,
    record_key,
    select_columns,
)

Statement = tuple[str, Sequence[Any]]
"""A statement (composed, in psycopg's ``%s`` form) and its parameters."""


def oldest_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a newest-first statement (:func:`records_statement`,
    :func:`thread_messages_statement`), oldest first."""
    rows.reverse()
    return rows


def records_statement(names: StoreNames, query: RecordQuery) -> Statement:
    """Visible (unexpired) rows of one record type, newest first."""
    logical = TABLE_OF_TYPE[query.record_type]
    where: list[sql.Composable] = []
    params: list[Any] = []
    if logical == "actor_profile":
        where.append(sql.SQL("actor_type = %s"))
        params.append(query.record_type.removesuffix("_profile"))
        if query.record_id is not UNSET:
            where.append(sql.SQL("actor_id = %s"))
            params.append(query.record_id)
    else:
        if logical == "memory":
            where.append(sql.SQL("record_type = %s"))
            params.append(query.record_type)
        if query.record_id is not UNSET:
            where.append(sql.SQL("id = %s"))
            params.append(query.record_id)
        scope, scope_params = scope_predicates(
            (column, getattr(query, column)) for column in ("thread_id", "user_id", "agent_id")
            if not (logical == "thread" and column == "thread_id"))
        where.extend(scope)
        params.extend(scope_params)
    if logical in EXPIRING_TABLES:
        where.append(sql.SQL("(expires_at IS NULL OR expires_at > now())"))
    metadata, metadata_params = metadata_predicates(query.metadata_filter)
    where.extend(metadata)
    params.extend(metadata_params)
    order, position, position_params = keyset_order(
        "coalesce(event_ts, created_at)", "actor_id" if logical == "actor_profile" else "id",
        query.older_than, "row_seq")
    return newest_first_statement(sql.SQL(select_columns(logical, query.include_bytes)),
                                  q.table(names, logical), [*where, *position], order,
                                  query.limit, [*params, *position_params])


def thread_messages_statement(names: StoreNames, query: MessageQuery) -> Statement:
    """Visible messages of one thread, newest first (sequence order: :func:`oldest_first`)."""
    where = [sql.SQL("thread_id = %s"), sql.SQL("(expires_at IS NULL OR expires_at > now())")]
    params: list[Any] = [query.thread_id]
    if query.range_start_seq_no is not None:
        where.append(sql.SQL("seq_no >= %s"))
        params.append(query.range_start_seq_no)
    if query.range_end_seq_no is not None:
        where.append(sql.SQL("seq_no < %s"))
        params.append(query.range_end_seq_no)
    return newest_first_statement(sql.SQL(SELECT_COLUMNS["message"]), q.table(names, "message"),
                                  where, "seq_no", query.last_n, params)


def select_message_images(conn: psycopg.Connection[Any], names: StoreNames,
                          messages: Sequence[tuple[str, str | None]]
                          ) -> dict[tuple[str, str], bytes]:
    """The bytes of the image parts of messages ``(message id, owner)``, by ``(message id, part
    id)`` (ids are unique per owner: a part is the row of its message's owner)."""
    if not messages:
        return {}
    rows = conn.execute(
        sql.SQL("SELECT d.message_id, d.id, d.bytes FROM {} d JOIN unnest(%s::text[], "
                "%s::text[]) AS m(id, owner) ON d.message_id = m.id "
                "AND d.user_id IS NOT DISTINCT FROM m.owner WHERE d.message_id IS NOT NULL "
                "AND d.message_id = ANY(%s)").format(q.table(names, "document")),
        [[m[0] for m in messages], [m[1] for m in messages], [m[0] for m in messages]],
    ).fetchall()
    return {(r[0], r[1]): bytes(r[2]) for r in rows if r[2] is not None}


def count_chunks(conn: psycopg.Connection[Any], names: StoreNames,
                 record_type: str, record_id: str) -> int:
    """Number of retrieval rows of one record."""
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {} WHERE record_type = %s AND record_id = %s").format(
            q.table(names, "record_chunks")), [record_type, record_id],
    ).fetchone()
    return int(row[0]) if row else 0


def record_exists(conn: psycopg.Connection[Any], names: StoreNames,
                  record_type: str, record_id: str) -> bool:
    """Whether the record row exists (expired or not), locking it for update."""
    logical = TABLE_OF_TYPE[record_type]
    key, params = record_key(logical, type_filter=True, record_type=record_type,
                             record_id=record_id)
    row = conn.execute(
        sql.SQL("SELECT 1 FROM {} WHERE {} FOR UPDATE").format(
            q.table(names, logical), key),
        params,
    ).fetchone()
    return row is not None


def select_event_ts(
    conn: psycopg.Connection[Any], names: StoreNames, record_type: str, record_id: str
) -> datetime | None:
    """Stored event timestamp of one record."""
    logical = TABLE_OF_TYPE[record_type]
    key, params = record_key(logical, type_filter=True, record_type=record_type,
                             record_id=record_id)
    row = conn.execute(
        sql.SQL("SELECT event_ts FROM {} WHERE {}").format(q.table(names, logical), key),
        params,
    ).fetchone()
    return None if row is None else row[0]


def run(conn: psycopg.Connection[Any], statements: Sequence[Statement]
        ) -> list[list[dict[str, Any]]]:
    """The rows of each statement, run in order on ``conn``."""
    found = []
    with conn.cursor(row_factory=dict_row) as cur:
        for query, params in statements:
            found.append(cur.execute(query, params).fetchall())
    return found


def records_by_keys_statements(names: StoreNames, keys: Sequence[tuple[str, str]]
                               ) -> list[Statement]:
    """The statements that read the visible rows of ``(record_type, record_id)`` keys, one per
    table (see :func:`records_by_keys`)."""
    by_table: dict[str, set[str]] = defaultdict(set)
    for record_type, record_id in keys:
        by_table[TABLE_OF_TYPE[record_type]].add(record_id)
    return [(_by_ids_sql(names, logical), [sorted(ids)]) for logical, ids in by_table.items()]


@lru_cache(maxsize=256)
def _by_ids_sql(names: StoreNames, logical: str) -> str:
    """Visible rows of ``logical`` among ids, composed once per store and table. Ids are unique
    per owner: a user's own record shadows a global one (read last)."""
    id_column = "actor_id" if logical == "actor_profile" else "id"
    where = sql.SQL("{} = ANY(%s)").format(sql.Identifier(id_column))
    if logical in EXPIRING_TABLES:
        where = where + sql.SQL(" AND (expires_at IS NULL OR expires_at > now())")
    return sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY user_id NULLS FIRST").format(
        sql.SQL(SELECT_COLUMNS[logical]), q.table(names, logical), where).as_string()


def records_by_keys(results: Sequence[Sequence[dict[str, Any]]]
                    ) -> dict[tuple[str, str], dict[str, Any]]:
    """Rows of :func:`records_by_keys_statements`' results by ``(record_type, record_id)``."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for rows in results:
        for row in rows:
            found[(row["record_type"], row["id"])] = row
    return found


def select_linked_memories(conn: psycopg.Connection[Any], names: StoreNames, ids: Sequence[str],
                           plan: SearchPlan) -> list[dict[str, Any]]:
    """Memories among ``ids`` that pass the plan's scope, type, expiry and metadata filters."""
    types = [t for t in plan.record_types if t in MEMORY_TYPES]
    if not ids or not types:
        return []
    where: list[sql.Composable] = [
        sql.SQL("id = ANY(%s)"), sql.SQL("record_type = ANY(%s)"),
        sql.SQL("(expires_at IS NULL OR expires_at > now())"),
    ]
    params: list[Any] = [list(ids), types]
    scope, scope_params = scope_predicates(plan.scope.items())
    where.extend(scope)
    params.extend(scope_params)
    if plan.metadata_filter is not None:
        predicate, filter_params = render_filter(plan.metadata_filter,
                                                 sql.Identifier("metadata"))
        where.append(predicate)
        params.extend(filter_params)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            sql.SQL("SELECT {} FROM {} WHERE {}").format(
                sql.SQL(SELECT_COLUMNS["memory"]), q.table(names, "memory"),
                sql.SQL(" AND ").join(where)),
            params,
        ).fetchall()
