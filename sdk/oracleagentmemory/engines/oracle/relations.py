"""Relation (memory link) statements on Oracle, lifecycle status upkeep and graph neighbours.

Pure builders mirroring :mod:`oracleagentmemory.engines.postgres.relations`: the same rows,
keys and semantics, executed by the Oracle session. Every value is a bind; every object name
comes from :class:`~oracleagentmemory.engines.oracle.names.OracleObjects` (quoted,
schema-qualified). Lists of ids are bound as one JSON array
(:func:`~oracleagentmemory.engines.oracle.statement.id_list`).

Timestamps are written through ``FROM_TZ(CAST(:ts AS TIMESTAMP), 'UTC')`` and read as
``SYS_EXTRACT_UTC(col)`` (:mod:`~oracleagentmemory.engines.oracle.binds`); the session passes
each fetched row through :func:`relation_row` to make them aware again.

PostgreSQL's ``a IS NOT DISTINCT FROM b`` is written ``(a = b OR (a IS NULL AND b IS NULL))``
(``IS NOT DISTINCT FROM`` is not in Oracle's SQL grammar).

Graph expansion (``core/_graph.py``): :func:`links_within_hops` fetches every link within a
search's ``num_hops`` in one recursive query (``WITH ... UNION ALL ... CYCLE``), bounded by a row
limit; past it the core walks hop by hop through :func:`links_touching` (one query per hop).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

import oracledb

from oracleagentmemory.engines.interfaces import UNSET, RelationChange, RelationQuery, RelationRow
from oracleagentmemory.engines.layout import LIFECYCLE_RELATION_TYPES
from oracleagentmemory.engines.oracle.binds import (
    json_bind,
    timestamp_bind,
    timestamp_input_sizes,
    utc_from_fetch,
    utc_timestamp_sql,
)
from oracleagentmemory.engines.oracle.driver_errors import (
    UNIQUE_VIOLATION,
    unique_violation_constraint,
)
from oracleagentmemory.engines.oracle.names import OracleObjects
from oracleagentmemory.engines.oracle.reads import keyset_order
from oracleagentmemory.engines.oracle.record_sql import json_value
from oracleagentmemory.engines.oracle.statement import (
    ID_COLUMN_TYPE,
    Statement,
    aliased,
    id_list,
    id_list_bind,
    json_sizes,
)
from oracleagentmemory.errors import DuplicateRelationError, InvalidArgumentError

LIFECYCLE_TYPES: tuple[str, ...] = tuple(sorted(LIFECYCLE_RELATION_TYPES))
"""Relation types that make their target INVALID while they exist (bound one by one)."""

RELATION_KEYS: tuple[str, ...] = (
    "id", "source_id", "source_type", "target_id", "target_type", "relation_type",
    "opposite_relation_type", "event_ts", "metadata", "created_at")
"""The keys of a relation row (the PostgreSQL engine's), each selected from its column."""

_TIMESTAMP_KEYS = ("event_ts", "created_at")
_INSERTED = ("id", "user_id", "source_id", "source_type", "target_id", "target_type",
             "relation_type", "opposite_relation_type", "event_ts", "metadata")
_FILTERS = (("relation_id", "id"), ("relation_type", "relation_type"),
            ("source_id", "source_id"), ("source_type", "source_type"),
            ("target_id", "target_id"), ("target_type", "target_type"))
_CHANGES = ("relation_type", "opposite_relation_type")


def _columns(alias: str = "") -> str:
    """The relation SELECT list (timestamps as UTC wall clocks), columns of ``alias``."""
    prefix = f"{alias}." if alias else ""
    return aliased({key: f"SYS_EXTRACT_UTC({prefix}{key})" if key in _TIMESTAMP_KEYS
                    else prefix + key for key in RELATION_KEYS})


def _same_owner(left: str, right: str) -> str:
    """``left IS NOT DISTINCT FROM right`` in Oracle's grammar."""
    return f"({left} = {right} OR ({left} IS NULL AND {right} IS NULL))"


def _lifecycle_in(column: str) -> tuple[str, dict[str, str]]:
    names = [f"lifecycle_{n}" for n in range(len(LIFECYCLE_TYPES))]
    return (f"{column} IN ({', '.join(':' + n for n in names)})",
            dict(zip(names, LIFECYCLE_TYPES, strict=True)))


def relation_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A fetched relation row with its timestamps aware (UTC) again and its metadata's numbers
    ``int``/``float`` (python-oracledb reads numbers inside JSON as ``Decimal``)."""
    converted = dict(row)
    if converted.get("metadata") is not None:  # JSON numbers arrive as Decimal
        converted["metadata"] = json_value(converted["metadata"])
    for key in _TIMESTAMP_KEYS:
        if key in converted:
            value = converted[key]
            converted[key] = utc_from_fetch(value) if isinstance(value, datetime) else value
    return converted


# --- memories (relation endpoints) ----------------------------------------------------------
def memory_types(o: OracleObjects, ids: Sequence[str]) -> Statement:
    """``(id, record_type, user_id)`` of the visible memories among ``ids``, owned ones first
    (``NULLS LAST``, as on PostgreSQL); group them with :func:`group_memory_types`."""
    return Statement(
        sql=(f"SELECT m.id AS \"id\", m.record_type AS \"record_type\", m.user_id AS "
             f"\"user_id\" FROM {o.table('memory')} m WHERE m.id IN ({id_list('ids')}) "
             "ORDER BY m.user_id NULLS LAST"),
        binds={"ids": id_list_bind(ids)},
        input_sizes=json_sizes("ids"),
        columns=("id", "record_type", "user_id"),
    )


def group_memory_types(rows: Sequence[Mapping[str, Any]]
                       ) -> dict[str, list[tuple[str, str | None]]]:
    """``EngineSession.memory_types``'s answer from the rows of :func:`memory_types`."""
    found: dict[str, list[tuple[str, str | None]]] = {}
    for row in rows:
        found.setdefault(row["id"], []).append((row["record_type"], row["user_id"]))
    return found


# --- insert --------------------------------------------------------------------------------
def insert_relations(o: OracleObjects, rows: Sequence[RelationRow]) -> Statement:
    """One ``executemany`` inserting ``rows``; run it with ``batcherrors=True`` and pass
    ``cursor.getbatcherrors()`` to :func:`duplicate_relation_error`.

    ``created_at``, ``updated_at`` and ``row_seq`` take their defaults (``SYSTIMESTAMP``, the
    identity), as the data grants' ``INSERT (columns)`` lists expect.
    """
    values = ", ".join(utc_timestamp_sql(c) if c == "event_ts" else f":{c}" for c in _INSERTED)
    return Statement(
        sql=(f"INSERT INTO {o.table('memory_link')} ({', '.join(_INSERTED)}) "
             f"VALUES ({values})"),
        rows=tuple({"id": r.id, "user_id": r.user_id, "source_id": r.source_id,
                "source_type": r.source_type, "target_id": r.target_id,
                "target_type": r.target_type, "relation_type": r.relation_type,
                "opposite_relation_type": r.opposite_relation_type,
                "event_ts": timestamp_bind(r.event_ts), "metadata": json_bind(r.metadata)}
                   for r in rows),
        input_sizes={**timestamp_input_sizes("event_ts"), **json_sizes("metadata")},
    )


class BatchError(Protocol):
    """What :func:`duplicate_relation_error` reads of one of ``cursor.getbatcherrors()``
    (python-oracledb's ``_Error``: the row's ``offset`` in the batch, the Oracle ``code``
    and the ``message``)."""

    offset: int
    code: int
    message: str


def duplicate_relation_error(o: OracleObjects, rows: Sequence[RelationRow],
                             batch_errors: Sequence[BatchError]
                             ) -> DuplicateRelationError | None:
    """The error to raise for the first ORA-00001 among ``batch_errors``, else ``None`` (the
    caller translates any other batch error; the transaction is rolled back either way).

    As on PostgreSQL, a clash on the owner's id index names the relation id (from the failing
    row: ``offset`` is its index in ``rows``), and any other unique clash is the endpoint pair
    (``MEMORY_LINK_OWNER_PAIR_UQ``). The server's text is not repeated: it names internal
    indexes and, with ``ERROR_MESSAGE_DETAILS``, echoes key values (ORA-03301).
    """
    id_index = f"{o.owner}.{o.object_name('memory_link_owner_id_uq')}"
    for error in batch_errors:
        if error.code != UNIQUE_VIOLATION:
            continue
        constraint = unique_violation_constraint(oracledb.IntegrityError(error))
        if constraint == id_index:
            clashing = rows[error.offset].id if 0 <= error.offset < len(rows) else None
            message = (f"a relation with id {clashing!r} already exists"
                       if clashing is not None else "a relation with this id already exists")
            return DuplicateRelationError(message, record_id=clashing)
        return DuplicateRelationError(
            "these two memories are already related (one relation per pair of memories)")
    return None


# --- select, update, delete ----------------------------------------------------------------
def select_relations(o: OracleObjects, query: RelationQuery,
                     metadata: tuple[str, Mapping[str, Any]] | None = None,
                     metadata_input_sizes: Mapping[str, Any] | None = None) -> Statement:
    """Matching relations, the most recent ``query.limit`` of them, in creation order.

    ``metadata`` is the rendered ``query.metadata_filter`` (from the Oracle filter renderer):
    ``(predicate on the unqualified column metadata, its binds)``; it must be given exactly
    when the query has a metadata filter (``None`` included: ``metadata IS NULL``).
    """
    where: list[str] = []
    binds: dict[str, Any] = {}
    for attribute, column in _FILTERS:
        value = getattr(query, attribute)
        if value is not UNSET:
            where.append(f"{column} = :{attribute}")
            binds[attribute] = value
    if (query.metadata_filter is UNSET) != (metadata is None):
        raise InvalidArgumentError(
            "select_relations: pass the rendered metadata filter exactly when the query has one")
    if metadata is not None:
        predicate, filter_binds = metadata
        clash = set(filter_binds) & (set(binds) | {"row_limit", "older_ts", "older_id"})
        if clash:
            raise InvalidArgumentError(f"metadata filter bind names clash: {sorted(clash)}")
        where.append(predicate)
        binds.update(filter_binds)
    order_keys, position, position_binds, position_sizes = keyset_order(
        "created_at", "id", query.older_than, "row_seq")
    where.extend(position)
    binds.update(position_binds)
    condition = " AND ".join(where) if where else "1 = 1"
    # The order keys are selected as order_key_N (row_seq as itself) for the outer ORDER BY.
    order_names = (("row_seq",) if order_keys == ("row_seq",)
                   else tuple(f"order_key_{n}" for n in range(len(order_keys))))
    selected = ", ".join(key if key == name else f"{key} AS {name}"
                         for key, name in zip(order_keys, order_names, strict=True))
    inner = f"SELECT {_columns()}, {selected} FROM {o.table('memory_link')} WHERE {condition}"
    keys = ", ".join(f'"{key}"' for key in RELATION_KEYS)
    oldest_first = ", ".join(order_names)
    if query.limit is None:
        sql = f"SELECT {keys} FROM ({inner}) ORDER BY {oldest_first}"
    else:
        binds["row_limit"] = query.limit
        newest_first = ", ".join(f"{name} DESC" for name in order_names)
        sql = (f"SELECT {keys} FROM ({inner} ORDER BY {newest_first} FETCH FIRST :row_limit "
               f"ROWS ONLY) ORDER BY {oldest_first}")
    return Statement(sql=sql, binds=binds,
                     input_sizes={**(metadata_input_sizes or {}), **position_sizes},
                     columns=tuple(RELATION_KEYS))


def update_relation(o: OracleObjects, change: RelationChange) -> Statement:
    """Apply ``change`` (the session returns ``rowcount > 0``: whether the relation exists)."""
    sets = ["updated_at = SYSTIMESTAMP"]
    binds: dict[str, Any] = {}
    sizes: dict[str, Any] = {}
    for column in _CHANGES:
        value = getattr(change, column)
        if value is not UNSET:
            sets.append(f"{column} = :{column}")
            binds[column] = value
    if change.event_ts is not UNSET:
        sets.append(f"event_ts = {utc_timestamp_sql('event_ts')}")
        binds["event_ts"] = timestamp_bind(change.event_ts)
        sizes.update(timestamp_input_sizes("event_ts"))
    if change.metadata is not UNSET:
        sets.append("metadata = :metadata")
        binds["metadata"] = json_bind(change.metadata)
        sizes.update(json_sizes("metadata"))
    binds["relation_id"] = change.relation_id
    return Statement(
        sql=f"UPDATE {o.table('memory_link')} SET {', '.join(sets)} WHERE id = :relation_id",
        binds=binds, input_sizes=sizes)


def delete_relations(o: OracleObjects, relation_ids: Sequence[str]) -> Statement:
    """Delete relations; ``RETURNING`` the ``(target_id, relation_type)`` of each deleted one
    into the out binds ``target_ids`` and ``relation_types`` (``cursor.var(str)`` each; their
    ``getvalue()`` is a list, one item per deleted row)."""
    return Statement(
        sql=(f"DELETE FROM {o.table('memory_link')} WHERE id IN ({id_list('relation_ids')}) "
             "RETURNING target_id, relation_type INTO :target_ids, :relation_types"),
        binds={"relation_ids": id_list_bind(relation_ids, what="relation_ids")},
        input_sizes=json_sizes("relation_ids"),
        out_binds=dict.fromkeys(("target_ids", "relation_types"), oracledb.DB_TYPE_VARCHAR),
    )


def deleted_relations(target_ids: Sequence[str] | None, relation_types: Sequence[str] | None
                      ) -> list[tuple[str, str]]:
    """``EngineSession.delete_relations``'s answer from the two out binds' values."""
    return list(zip(target_ids or [], relation_types or [], strict=True))


# --- lifecycle status ------------------------------------------------------------------------
def recompute_status(o: OracleObjects, memory_ids: Sequence[str]) -> Statement | None:
    """INVALID while a lifecycle link targets the memory, VALID otherwise (``None``: no ids).

    A link counts for a memory of the same owner, and for a global memory (``user_id`` NULL)
    whatever the link's owner, as on PostgreSQL.
    """
    if not memory_ids:
        return None
    lifecycle, binds = _lifecycle_in("l.relation_type")
    return Statement(
        sql=(f"UPDATE {o.table('memory')} m SET status = CASE WHEN EXISTS (SELECT 1 FROM "
             f"{o.table('memory_link')} l WHERE l.target_id = m.id AND (l.user_id = m.user_id "
             f"OR m.user_id IS NULL) AND {lifecycle}) THEN 'invalid' ELSE 'valid' END, "
             f"updated_at = SYSTIMESTAMP WHERE m.id IN ({id_list('memory_ids')})"),
        binds={**binds, "memory_ids": id_list_bind(memory_ids, what="memory_ids")},
        input_sizes=json_sizes("memory_ids"),
    )


def lifecycle_targets_from(o: OracleObjects, memory_where: str,
                           binds: Mapping[str, Any]) -> Statement:
    """Targets of lifecycle links whose source memory matches ``memory_where`` (a predicate
    on the memory table's columns, alias ``m``, with its ``binds``): deleting those sources
    deletes the links, so the targets' status is recomputed afterwards."""
    lifecycle, lifecycle_binds = _lifecycle_in("l.relation_type")
    clash = set(binds) & set(lifecycle_binds)
    if clash:
        raise InvalidArgumentError(f"bind names clash: {sorted(clash)}")
    return Statement(
        sql=(f"SELECT DISTINCT l.target_id AS \"target_id\" FROM {o.table('memory_link')} l "
             f"WHERE {lifecycle} AND EXISTS (SELECT 1 FROM {o.table('memory')} m WHERE "
             f"m.id = l.source_id AND ({_same_owner('m.user_id', 'l.user_id')} OR m.user_id "
             f"IS NULL) AND {memory_where})"),
        binds={**lifecycle_binds, **binds},
        columns=("target_id",),
    )


def delete_links_of(o: OracleObjects, memories: Sequence[tuple[str, str | None]]
                    ) -> Statement | None:
    """Delete the relations of the deleted memories ``(id, owner)`` (``None``: none).

    A link belongs to the owner of its endpoints; a global memory is an endpoint of links of
    any owner that has no memory of its own with that id. The pairs are bound as one JSON
    array of ``{"id": ..., "owner": ...}`` objects.
    """
    if not memories:
        return None
    same_owner = _same_owner("l.user_id", "d.owner")
    return Statement(
        sql=(f"DELETE FROM {o.table('memory_link')} l WHERE EXISTS (SELECT 1 FROM "
             f"JSON_TABLE(:memories, '$[*]' COLUMNS (id {ID_COLUMN_TYPE} PATH '$.id', "
             f"owner {ID_COLUMN_TYPE} PATH '$.owner')) d WHERE (l.source_id = d.id OR "
             f"l.target_id = d.id) AND ({same_owner} OR (d.owner IS NULL AND NOT EXISTS "
             f"(SELECT 1 FROM {o.table('memory')} m WHERE m.id = d.id AND "
             "m.user_id = l.user_id))))"),
        binds={"memories": [{"id": memory_id, "owner": owner} for memory_id, owner in memories]},
        input_sizes=json_sizes("memories"),
    )


# --- graph neighbours ---------------------------------------------------------------------
def links_touching(o: OracleObjects, node_ids: Sequence[str]) -> Statement:
    """Every relation with an endpoint among ``node_ids``, in creation order."""
    return Statement(
        sql=(f"WITH nodes (id) AS ({id_list('node_ids')}) SELECT {_columns('l')} FROM "
             f"{o.table('memory_link')} l WHERE l.source_id IN (SELECT id FROM nodes) OR "
             "l.target_id IN (SELECT id FROM nodes) ORDER BY l.row_seq"),
        binds={"node_ids": id_list_bind(node_ids, what="node_ids")},
        input_sizes=json_sizes("node_ids"),
        columns=tuple(RELATION_KEYS),
    )


MAX_RECURSIVE_HOPS = 16
"""The most hops :func:`links_within_hops` walks (the recursion enumerates paths, not nodes:
Oracle's ``CYCLE`` clause stops a path at a node it already holds, not at a node another path
reached, so the work grows with the number of paths)."""


def links_within_hops(o: OracleObjects, node_ids: Sequence[str], max_hops: int,
                      row_limit: int) -> Statement:
    """Every relation the core's hop-by-hop walk from ``node_ids`` could fetch in
    ``max_hops`` hops, in one recursive query, in creation order, at most ``row_limit`` rows
    (the session asks for one more than its limit, to see whether it was reached).

    The walk follows links both ways, only along links whose two ends are memories the session
    can see (the core only walks from and to visible memories that pass its filters, so it uses
    a subset): the result is the union of what :func:`links_touching` returns for each hop's
    frontier when no node is filtered out. ``walk`` holds ``(node_id, hop)`` for the nodes at
    ``hop`` < ``max_hops`` links from a start node; the ``CYCLE node_id`` clause (Oracle SQL
    Language Reference, "Recursive Subquery Factoring": a row whose cycle column repeats an
    ancestor's is marked and not expanded) stops a path that comes back to a node. The
    visibility checks refer to the link only (a recursive member may not hold a subquery that
    refers to the query name). Under an end-user context every table reference, the
    recursive ones included, reads through the data grants.
    """
    if isinstance(max_hops, bool) or not isinstance(max_hops, int) \
            or not 1 <= max_hops <= MAX_RECURSIVE_HOPS:
        raise InvalidArgumentError(
            f"max_hops must be an integer from 1 to {MAX_RECURSIVE_HOPS}, got {max_hops!r}",
            argument="max_hops")
    if isinstance(row_limit, bool) or not isinstance(row_limit, int) or row_limit < 1:
        raise InvalidArgumentError(f"row_limit must be a positive integer, got {row_limit!r}",
                                   argument="row_limit")
    link, memory = o.table("memory_link"), o.table("memory")
    return Statement(
        sql=(f"WITH seeds (id) AS ({id_list('node_ids')}), "
             "walk (node_id, hop) AS (SELECT id, 0 FROM seeds UNION ALL "
             "SELECT CASE WHEN l.source_id = w.node_id THEN l.target_id ELSE l.source_id END, "
             f"w.hop + 1 FROM walk w JOIN {link} l ON l.source_id = w.node_id OR "
             "l.target_id = w.node_id WHERE w.hop + 1 < :max_hops "
             f"AND EXISTS (SELECT 1 FROM {memory} m WHERE m.id = l.source_id) "
             f"AND EXISTS (SELECT 1 FROM {memory} m WHERE m.id = l.target_id)) "
             "CYCLE node_id SET is_cycle TO 'Y' DEFAULT 'N' "
             f"SELECT {_columns('l')} FROM {link} l WHERE EXISTS (SELECT 1 FROM walk w "
             "WHERE w.node_id IN (l.source_id, l.target_id)) "
             "ORDER BY l.row_seq FETCH FIRST :row_limit ROWS ONLY"),
        binds={"node_ids": id_list_bind(node_ids, what="node_ids"), "max_hops": max_hops,
               "row_limit": row_limit},
        input_sizes=json_sizes("node_ids"),
        columns=RELATION_KEYS,
    )
