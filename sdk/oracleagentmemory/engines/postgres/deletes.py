"""Deletes on PostgreSQL: records with their retrieval rows and links, threads, actors, expiry."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.layout import (
    EXPIRING_TABLES,
    MEMORY_TYPES,
    TABLE_OF_TYPE,
    THREAD_CASCADE,
)
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres import relations
from oracleagentmemory.engines.postgres.record_sql import record_key
from oracleagentmemory.errors import InvalidArgumentError

_log = logging.getLogger(__name__)


def delete_chunks(conn: psycopg.Connection[Any], names: StoreNames, record_types: Sequence[str],
                   keys: Sequence[tuple[str, str | None]]) -> None:
    """Delete the retrieval rows of the records ``(id, owner)`` (ids are unique per owner)."""
    if keys:
        conn.execute(
            sql.SQL("DELETE FROM {} c USING unnest(%s::text[], %s::text[]) AS d(id, owner) "
                    "WHERE c.record_type = ANY(%s) AND c.record_id = d.id "
                    "AND c.user_id IS NOT DISTINCT FROM d.owner")
            .format(q.table(names, "record_chunks")),
            [[k[0] for k in keys], [k[1] for k in keys], list(record_types)],
        )


def delete_where(conn: psycopg.Connection[Any], names: StoreNames,
                 logical: str, where: sql.Composable,
                  params: list[Any]) -> list[str]:
    """Delete rows of ``logical`` and their retrieval rows; returns the deleted ids."""
    # The owner of a retrieval row: the record's user_id, or a user profile's actor id.
    owner = ("CASE WHEN actor_type = 'user' THEN actor_id END" if logical == "actor_profile"
             else "user_id")
    id_column = "actor_id" if logical == "actor_profile" else "id"
    released: list[str] = []
    if logical == "memory":
        released = relations.lifecycle_targets_from(conn, names, where, params)
    rows = conn.execute(
        sql.SQL("DELETE FROM {} WHERE {} RETURNING {}, {}").format(
            q.table(names, logical), where, sql.Identifier(id_column), sql.SQL(owner)),
        params,
    ).fetchall()
    keys = [(r[0], r[1]) for r in rows]
    if logical == "memory":
        delete_chunks(conn, names, sorted(MEMORY_TYPES), keys)
        relations.delete_links_of(conn, names, keys)
        relations.recompute_status(conn, names, released)
    elif logical == "message":
        delete_chunks(conn, names, ("message",), keys)
        delete_message_images(conn, names, keys)
    elif logical == "document":
        delete_chunks(conn, names, ("image",), keys)
    elif logical == "actor_profile":
        delete_chunks(conn, names, ("user_profile", "agent_profile"), keys)
    return [k[0] for k in keys]


def delete_message_images(conn: psycopg.Connection[Any], names: StoreNames,
                          messages: Sequence[tuple[str, str | None]]) -> None:
    """Delete the image parts (with their retrieval rows) of messages ``(id, owner)``."""
    if messages:
        delete_where(conn, names, "document", sql.SQL(
            "message_id IS NOT NULL AND message_id = ANY(%s) AND EXISTS (SELECT 1 FROM "
            "unnest(%s::text[], %s::text[]) AS m(id, owner) WHERE m.id = message_id "
            "AND m.owner IS NOT DISTINCT FROM user_id)"),
            [[m[0] for m in messages], [m[0] for m in messages], [m[1] for m in messages]])


def delete_record(conn: psycopg.Connection[Any], names: StoreNames,
                  record_type: str, record_id: str) -> int:
    """Delete one record with its retrieval rows (and links); returns 0 or 1."""
    if record_type == "thread":
        return delete_thread(conn, names, record_id)
    logical = TABLE_OF_TYPE[record_type]
    key, params = record_key(logical, type_filter=True, record_type=record_type,
                             record_id=record_id)
    return len(delete_where(conn, names, logical, key, params))


def delete_actor_scope(conn: psycopg.Connection[Any], names: StoreNames,
                       actor_column: str, actor_id: str) -> None:
    """Delete threads owned by an actor (with their scoped rows) and its remaining rows."""
    if actor_column not in ("user_id", "agent_id"):
        raise InvalidArgumentError(f"unknown actor column {actor_column!r}")
    column = sql.Identifier(actor_column)
    thread_ids = [r[0] for r in conn.execute(
        sql.SQL("SELECT id FROM {} WHERE {} = %s").format(
            q.table(names, "thread"), column),
        [actor_id],
    ).fetchall()]
    for thread_id in thread_ids:
        delete_thread(conn, names, thread_id)
    for logical in THREAD_CASCADE:
        delete_where(conn, names, logical, sql.SQL("{} = %s").format(column), [actor_id])


def delete_thread(conn: psycopg.Connection[Any], names: StoreNames, thread_id: str) -> int:
    """Delete a thread with its messages, memories, summaries and retrieval rows."""
    by_thread = sql.SQL("thread_id = %s")
    for logical in THREAD_CASCADE:
        delete_where(conn, names, logical, by_thread, [thread_id])
    return len(delete_where(conn, names, "thread", sql.SQL("id = %s"), [thread_id]))


def purge_expired(conn: psycopg.Connection[Any], names: StoreNames) -> int:
    """Physically delete expired rows; returns how many records were removed."""
    expired = sql.SQL("expires_at IS NOT NULL AND expires_at <= now()")
    total = 0
    for logical in EXPIRING_TABLES:
        removed = len(delete_where(conn, names, logical, expired, []))
        _log.info("purged %d expired rows from %s", removed, names.table(logical))
        total += removed
    return total
