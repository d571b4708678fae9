"""Deletes on Oracle: records with their retrieval rows and links, threads, actors, expiry.

Builders only. The unit of work is *delete where* (``logical`` table, a WHERE fragment and its
binds), which the session runs as:

1. ``memory`` only: ``relations.lifecycle_targets_from(o, where.sql, where.binds)`` (fetch
   the target ids: their status must be recomputed once the links are gone). The link
   statements are :mod:`~oracleagentmemory.engines.oracle.relations`' (one builder each).
2. :func:`delete_rows`: the ``DELETE ... RETURNING`` of the rows, whose out-binds
   ``deleted_id`` and ``deleted_owner`` give the keys of the rows really deleted (Deep Data
   Security skips rows the end user may not delete, silently: RETURNING reports exactly the
   deleted ones, where a later ``EXISTS`` on the parents would not).
3. With ``keys = list(zip(deleted_id, deleted_owner))``, when not empty:
   :func:`delete_chunks` of :func:`chunk_types` ``(logical)``; for ``memory``
   ``relations.delete_links_of(o, keys)`` then ``relations.recompute_status(o, targets)``; for
   ``message``, *delete where* ``document`` with :func:`message_images_where` ``(keys)``.

The operations, each from *delete where* steps: ``delete_record`` (``thread``: as
``delete_thread``; else :func:`record_where`; returns the number of deleted keys),
``delete_thread`` (:func:`thread_cascade` then ``thread`` with :func:`thread_row_where`),
``delete_actor_scope`` (``delete_thread`` for each id :func:`threads_of_actor` fetches, then
:func:`actor_cascade`), ``purge_expired`` (:func:`expired_where` on each
``EXPIRING_TABLES`` table; returns the total of deleted keys).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory.engines.layout import (
    EXPIRING_TABLES,
    MEMORY_TYPES,
    TABLE_OF_TYPE,
    THREAD_CASCADE,
)
from oracleagentmemory.engines.oracle.names import OracleObjects
from oracleagentmemory.engines.oracle.record_sql import (
    VARCHAR_OUT,
    json_binds,
    key_list,
    key_list_table,
    record_key,
    same_owner,
)
from oracleagentmemory.engines.oracle.statement import Statement, id_list
from oracleagentmemory.errors import InvalidArgumentError


@dataclass(frozen=True)
class Where:
    """A WHERE fragment on one table's unqualified columns, its binds and their input sizes."""

    sql: str
    binds: Mapping[str, Any] = field(default_factory=dict)
    input_sizes: Mapping[str, Any] = field(default_factory=dict)

ACTOR_COLUMNS = ("user_id", "agent_id")


def chunk_types(logical: str) -> tuple[str, ...]:
    """The record types of the retrieval rows of a table's records."""
    return {"memory": tuple(sorted(MEMORY_TYPES)), "message": ("message",),
            "document": ("image",), "actor_profile": ("user_profile", "agent_profile")
            }.get(logical, ())


def delete_rows(o: OracleObjects, logical: str, where: Where) -> Statement:
    """``DELETE`` the rows of ``logical`` matching ``where``, returning each row's id and the
    owner of its retrieval rows (a record's ``user_id``, a user profile's actor id) into the
    out-binds ``deleted_id`` and ``deleted_owner``."""
    owner = ("CASE WHEN actor_type = 'user' THEN actor_id END" if logical == "actor_profile"
             else "user_id")
    id_column = "actor_id" if logical == "actor_profile" else "id"
    return Statement(
        sql=(f"DELETE FROM {o.table(logical)} WHERE {where.sql} "
             f"RETURNING {id_column}, {owner} INTO :deleted_id, :deleted_owner"),
        binds=dict(where.binds), input_sizes=dict(where.input_sizes),
        out_binds={"deleted_id": VARCHAR_OUT, "deleted_owner": VARCHAR_OUT})


def delete_chunks(o: OracleObjects, record_types: Sequence[str],
                  keys: Sequence[tuple[str, str | None]]) -> Statement | None:
    """Delete the retrieval rows of the records ``(id, owner)`` of ``record_types`` (ids are
    unique per owner); ``None`` when there is nothing to delete."""
    if not keys or not record_types:
        return None
    binds, sizes = json_binds(deleted_keys=key_list(keys), chunk_types=list(record_types))
    return Statement(
        sql=(f"DELETE FROM {o.table('record_chunks')} c WHERE c.record_type IN "
             f"({id_list('chunk_types')}) AND EXISTS (SELECT 1 FROM "
             f"{key_list_table('deleted_keys')} d WHERE c.record_id = d.id "
             f"AND {same_owner('c.user_id', 'd.owner')})"),
        binds=binds, input_sizes=sizes)


def delete_record_chunks(o: OracleObjects, record_type: str, record_id: str,
                         owner: str | None) -> Statement:
    """Delete the retrieval rows of one record (its chunk owner known)."""
    statement = delete_chunks(o, (record_type,), [(record_id, owner)])
    assert statement is not None
    return statement


# --- WHERE fragments of the operations ---------------------------------------------------------
def record_where(record_type: str, record_id: str) -> tuple[str, Where]:
    """``(logical table, where)`` of one record (not a thread: see :func:`thread_cascade`)."""
    if record_type == "thread":
        raise InvalidArgumentError("a thread is deleted with its cascade (delete_thread)")
    logical = TABLE_OF_TYPE[record_type]
    return logical, Where(*record_key(logical, record_type, record_id))


def message_images_where(keys: Sequence[tuple[str, str | None]]) -> Where:
    """The image parts of messages ``(id, owner)``, on ``document``."""
    binds, sizes = json_binds(message_keys=key_list(keys))
    return Where(f"message_id IS NOT NULL AND EXISTS (SELECT 1 FROM "
                 f"{key_list_table('message_keys')} mk WHERE mk.id = message_id AND "
                 f"{same_owner('mk.owner', 'user_id')})", binds, sizes)


def thread_cascade(thread_id: str) -> list[tuple[str, Where]]:
    """What deleting a thread deletes first, in order (``THREAD_CASCADE``)."""
    return [(logical, Where("thread_id = :thread_id", {"thread_id": thread_id}))
            for logical in THREAD_CASCADE]


def thread_row_where(thread_id: str) -> Where:
    """The thread row itself (deleted last)."""
    return Where("id = :thread_id", {"thread_id": thread_id})


def _actor_column(actor_column: str) -> str:
    if actor_column not in ACTOR_COLUMNS:
        raise InvalidArgumentError(f"unknown actor column {actor_column!r}")
    return actor_column


def threads_of_actor(o: OracleObjects, actor_column: str, actor_id: str) -> Statement:
    """Ids of the threads an actor owns (``row[0]`` of each row)."""
    column = _actor_column(actor_column)
    return Statement(sql=f"SELECT id FROM {o.table('thread')} WHERE {column} = :actor_id",
                     binds={"actor_id": actor_id})


def actor_cascade(actor_column: str, actor_id: str) -> list[tuple[str, Where]]:
    """An actor's remaining scoped rows, after its threads (``THREAD_CASCADE`` order)."""
    column = _actor_column(actor_column)
    return [(logical, Where(f"{column} = :actor_id", {"actor_id": actor_id}))
            for logical in THREAD_CASCADE]


def expired_where() -> Where:
    """Rows whose expiry has passed (``purge_expired``, on each ``EXPIRING_TABLES`` table)."""
    return Where("expires_at IS NOT NULL AND expires_at <= SYSTIMESTAMP")


PURGED_TABLES = EXPIRING_TABLES
"""The tables ``purge_expired`` deletes from, in order."""
