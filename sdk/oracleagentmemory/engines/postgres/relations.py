"""Relation (memory link) SQL on PostgreSQL, lifecycle status upkeep and graph neighbours.

Graph neighbours: :func:`links_touching` (one hop) and :func:`links_within_hops` (every hop of a
search's graph expansion in one recursive query). Both read through the store's row security
like every other read: under an end-user context the walk sees only the links and memories the
user's policies let them see.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import UNSET, RelationChange, RelationQuery, RelationRow
from oracleagentmemory.engines.layout import LIFECYCLE_RELATION_TYPES
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.filters import metadata_predicates
from oracleagentmemory.engines.postgres.record_sql import keyset_order, newest_oldest_first
from oracleagentmemory.errors import DuplicateRelationError

LIFECYCLE_TYPES = sorted(LIFECYCLE_RELATION_TYPES)
"""Relation types that make their target INVALID while they exist (a bound list)."""

_COLUMNS = sql.SQL(
    "id, source_id, source_type, target_id, target_type, relation_type, opposite_relation_type, "
    "event_ts, metadata, created_at"
)


def memory_types(conn: psycopg.Connection[Any], names: StoreNames, ids: Sequence[str]
                 ) -> dict[str, list[tuple[str, str | None]]]:
    """``(record type, owner)`` of each visible memory among ``ids``, owned ones first."""
    rows = conn.execute(
        sql.SQL("SELECT id, record_type, user_id FROM {} WHERE id = ANY(%s) "
                "ORDER BY user_id NULLS LAST").format(q.table(names, "memory")), [list(ids)],
    ).fetchall()
    found: dict[str, list[tuple[str, str | None]]] = {}
    for record_id, record_type, owner in rows:
        found.setdefault(record_id, []).append((record_type, owner))
    return found


def insert_relations(conn: psycopg.Connection[Any], names: StoreNames,
                     rows: Sequence[RelationRow]) -> None:
    """Insert relations; one orientation per endpoint pair (unique index on the pair)."""
    try:
        with conn.cursor() as cur:
            cur.executemany(
                sql.SQL(
                    "INSERT INTO {} (id, user_id, source_id, source_type, target_id, "
                    "target_type, relation_type, opposite_relation_type, event_ts, metadata) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                ).format(q.table(names, "memory_link")),
                [(r.id, r.user_id, r.source_id, r.source_type, r.target_id, r.target_type,
                  r.relation_type, r.opposite_relation_type, r.event_ts,
                  None if r.metadata is None else Jsonb(r.metadata)) for r in rows],
            )
    except errors.UniqueViolation as exc:
        # Our own words: the server's text names internal indexes and echoes key values.
        detail = exc.diag.message_detail or ""
        if (exc.diag.constraint_name or "").endswith("_owner_id_uq"):
            clashing_id = next((r.id for r in rows if detail.endswith(
                f", {r.id}) already exists.")), None)
            message = (f"a relation with id {clashing_id!r} already exists"
                       if clashing_id is not None else "a relation with this id already exists")
            raise DuplicateRelationError(message, record_id=clashing_id) from exc
        raise DuplicateRelationError(
            "these two memories are already related (one relation per pair of memories)"
        ) from exc


def select_relations(conn: psycopg.Connection[Any], names: StoreNames,
                     query: RelationQuery) -> list[dict[str, Any]]:
    """Matching relations, most recent ``limit`` of them, in creation order."""
    where: list[sql.Composable] = []
    params: list[Any] = []
    for attribute, column in (("relation_id", "id"), ("relation_type", "relation_type"),
                              ("source_id", "source_id"), ("source_type", "source_type"),
                              ("target_id", "target_id"), ("target_type", "target_type")):
        value = getattr(query, attribute)
        if value is not UNSET:
            where.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(value)
    metadata, metadata_params = metadata_predicates(query.metadata_filter)
    where.extend(metadata)
    params.extend(metadata_params)
    order, position, position_params = keyset_order("created_at", "id", query.older_than,
                                                    "row_seq")
    return newest_oldest_first(conn, _COLUMNS, q.table(names, "memory_link"),
                               [*where, *position], order, query.limit,
                               [*params, *position_params])


def update_relation(conn: psycopg.Connection[Any], names: StoreNames,
                    change: RelationChange) -> bool:
    """Apply ``change``; returns whether the relation exists."""
    sets: list[sql.Composable] = [sql.SQL("updated_at = now()")]
    params: list[Any] = []
    for attribute, column in (("relation_type", "relation_type"),
                              ("opposite_relation_type", "opposite_relation_type"),
                              ("event_ts", "event_ts")):
        value = getattr(change, attribute)
        if value is not UNSET:
            sets.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(value)
    if change.metadata is not UNSET:
        sets.append(sql.SQL("metadata = %s"))
        params.append(None if change.metadata is None else Jsonb(change.metadata))
    cur = conn.execute(
        sql.SQL("UPDATE {} SET {} WHERE id = %s").format(
            q.table(names, "memory_link"), sql.SQL(", ").join(sets)),
        params + [change.relation_id],
    )
    return cur.rowcount > 0


def delete_relations(conn: psycopg.Connection[Any], names: StoreNames,
                     relation_ids: Sequence[str]) -> list[tuple[str, str]]:
    """Delete relations; returns ``(target_id, relation_type)`` of each deleted one."""
    rows = conn.execute(
        sql.SQL("DELETE FROM {} WHERE id = ANY(%s) RETURNING target_id, relation_type").format(
            q.table(names, "memory_link")), [list(dict.fromkeys(relation_ids))],
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def lifecycle_targets_from(conn: psycopg.Connection[Any], names: StoreNames,
                           memory_where: sql.Composable, params: Sequence[Any]) -> list[str]:
    """Targets of lifecycle links whose source memory matches ``memory_where``.

    Deleting those sources deletes the links (:func:`delete_links_of`), so the targets' status
    must be recomputed afterwards.
    """
    rows = conn.execute(
        sql.SQL(
            "SELECT DISTINCT l.target_id FROM {} l WHERE l.relation_type = ANY(%s) AND EXISTS "
            "(SELECT 1 FROM {} m WHERE m.id = l.source_id AND (m.user_id IS NOT DISTINCT FROM "
            "l.user_id OR m.user_id IS NULL) AND {})"
        ).format(q.table(names, "memory_link"), q.table(names, "memory"), memory_where),
        [LIFECYCLE_TYPES, *params],
    ).fetchall()
    return [r[0] for r in rows]


def delete_links_of(conn: psycopg.Connection[Any], names: StoreNames,
                    memories: Sequence[tuple[str, str | None]]) -> None:
    """Delete the relations of the deleted memories ``(id, owner)``.

    A link belongs to the owner of its endpoints; a global memory is an endpoint of links of
    any owner that has no memory of its own with that id.
    """
    if not memories:
        return
    conn.execute(
        sql.SQL(
            "DELETE FROM {link} l USING unnest(%s::text[], %s::text[]) AS d(id, owner) "
            "WHERE (l.source_id = d.id OR l.target_id = d.id) "
            "AND (l.user_id IS NOT DISTINCT FROM d.owner OR (d.owner IS NULL AND NOT EXISTS "
            "(SELECT 1 FROM {mem} m WHERE m.id = d.id AND m.user_id = l.user_id)))"
        ).format(link=q.table(names, "memory_link"), mem=q.table(names, "memory")),
        [[m[0] for m in memories], [m[1] for m in memories]],
    )


def recompute_status(conn: psycopg.Connection[Any], names: StoreNames,
                     memory_ids: Sequence[str]) -> None:
    """INVALID while a lifecycle link targets the memory, VALID otherwise (for ``memory_ids``)."""
    if not memory_ids:
        return
    conn.execute(
        sql.SQL(
            "UPDATE {mem} m SET status = CASE WHEN EXISTS (SELECT 1 FROM {link} l WHERE "
            "l.target_id = m.id AND (l.user_id IS NOT DISTINCT FROM m.user_id OR m.user_id IS "
            "NULL) AND l.relation_type = ANY(%s)) THEN 'invalid' ELSE 'valid' END, "
            "updated_at = now() WHERE m.id = ANY(%s)"
        ).format(mem=q.table(names, "memory"), link=q.table(names, "memory_link")),
        [LIFECYCLE_TYPES, list(set(memory_ids))],
    )


def links_touching(conn: psycopg.Connection[Any], names: StoreNames,
                   node_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Every relation with an endpoint among ``node_ids``, in creation order."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            sql.SQL(
                "SELECT {} FROM {} WHERE source_id = ANY(%s) OR target_id = ANY(%s) "
                "ORDER BY row_seq"
            ).format(_COLUMNS, q.table(names, "memory_link")),
            [list(node_ids), list(node_ids)],
        ).fetchall()


def links_within_hops(conn: psycopg.Connection[Any], names: StoreNames,
                      node_ids: Sequence[str], hops: int, limit: int
                      ) -> list[dict[str, Any]] | None:
    """Every relation the core's hop-by-hop walk from ``node_ids`` could fetch in ``hops`` hops,
    in creation order, in one recursive query; ``None`` when more than ``limit`` are in reach.

    ``walk`` holds ``(node, hop)`` for the nodes fewer than ``hops`` links from a start node,
    stepping along links both ways, and only to a memory the session can see (the core only
    expands from visible memories that pass its filters, so it needs a subset of these links);
    ``UNION`` keeps each ``(node, hop)`` once, so cycles end and the work is bounded by nodes
    times hops. The result is every link touching a walked node: what :func:`links_touching`
    returns for every hop's frontier when no node is filtered out.
    """
    if hops < 1 or not node_ids:
        return []
    link, mem = q.table(names, "memory_link"), q.table(names, "memory")
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            sql.SQL(
                "WITH RECURSIVE walk (node_id, hop) AS ("
                "SELECT id, 0 FROM unnest(%s::text[]) AS seeds (id) "
                "UNION "
                "SELECT step.other, w.hop + 1 FROM walk w CROSS JOIN LATERAL ("
                "SELECT l.target_id FROM {link} l WHERE l.source_id = w.node_id "
                "UNION ALL SELECT l.source_id FROM {link} l WHERE l.target_id = w.node_id"
                ") AS step (other) "
                "WHERE w.hop + 1 < %s AND EXISTS (SELECT 1 FROM {mem} m WHERE m.id = step.other)"
                ") "
                "SELECT {cols} FROM {link} WHERE source_id IN (SELECT node_id FROM walk) "
                "OR target_id IN (SELECT node_id FROM walk) ORDER BY row_seq LIMIT %s"
            ).format(cols=_COLUMNS, link=link, mem=mem),
            [list(dict.fromkeys(node_ids)), hops, limit + 1],
        ).fetchall()
    return None if len(rows) > limit else rows
