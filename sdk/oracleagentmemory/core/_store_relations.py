"""The relation methods of the database store (add, get, list, update, delete relations)."""

from __future__ import annotations

import builtins
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT
from oracleagentmemory.apis.relations import LIFECYCLE_RELATION_TYPES, RecordRelation
from oracleagentmemory.core._keyset import keyset_position
from oracleagentmemory.core._relations import (
    plan_add_relations,
    plan_update_relations,
    relation_from_row,
    resolve_change_labels,
)
from oracleagentmemory.core._validation import check_limit, check_required_id
from oracleagentmemory.engines.interfaces import UNSET, EngineSession, RelationQuery, RelationRow
from oracleagentmemory.errors import (
    DuplicateRelationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    RecordNotFoundError,
)
from oracleagentmemory.filtertree import parse_metadata_filter
from oracleagentmemory.observability._operation import MEMORY_STORE, observed


class StoreRelations:
    """Relations between memories; the store supplies :meth:`_session`."""

    if TYPE_CHECKING:
        def _session(self) -> AbstractContextManager[EngineSession]:
            raise NotImplementedError

    @observed(MEMORY_STORE)
    def add_relations(self, source_record_ids: Any, source_record_types: Any,
                      target_record_ids: Any, target_record_types: Any, relation_types: Any,
                      opposite_relation_types: Any = NOT_SET_MARKER,
                      relation_ids: Any = NOT_SET_MARKER, timestamps: Any = NOT_SET_MARKER,
                      metadata: Any = NOT_SET_MARKER) -> builtins.list[str]:
        """Store directed relations between memories atomically; returns their ids in order."""
        rows = plan_add_relations(source_record_ids, source_record_types, target_record_ids,
                                  target_record_types, relation_types, opposite_relation_types,
                                  relation_ids, timestamps, metadata)
        with self._session() as session:
            self._relate(session, rows)
        return [r.id for r in rows]

    def _relate(self, session: EngineSession, rows: builtins.list[RelationRow]) -> None:
        """Check the endpoints of planned relations and insert them in ``session``'s
        transaction (recomputing the targets' lifecycle status)."""
        endpoint_ids = sorted({r.source_id for r in rows} | {r.target_id for r in rows})
        stored = session.memory_types(endpoint_ids)
        for n, row in enumerate(rows):
            owners: list[str | None] = []
            for side, record_id, record_type in (("source", row.source_id, row.source_type),
                                                 ("target", row.target_id, row.target_type)):
                found = stored.get(record_id, [])
                if not found or found[0][0] != record_type:
                    raise RecordNotFoundError(
                        f"{side}_record_ids[{n}]: no {record_type} record {record_id!r} "
                        "exists in this store", argument=f"{side}_record_ids[{n}]",
                        record_id=record_id, record_type=record_type,
                    )
                if len({owner for _, owner in found if owner is not None}) > 1:
                    raise InvalidArgumentError(
                        f"{side}_record_ids[{n}]: memories of several users have the id "
                        f"{record_id!r} (ids are unique per user); relate them inside "
                        "that user's end-user context"
                    )
                owners.append(found[0][1])
            row.user_id = _link_owner(owners, n)
        try:
            session.insert_relations(rows)
        except DuplicateRelationError as exc:
            if exc.record_id is not None:
                position = [r.id for r in rows].index(exc.record_id)
                raise DuplicateRelationError(
                    f"relation_ids[{position}]: a relation with id {exc.record_id!r} "
                    "already exists", argument=f"relation_ids[{position}]",
                    record_id=exc.record_id,
                ) from None
            raise DuplicateRelationError(
                "source_record_ids: a relation between these records already exists "
                f"(only one orientation per endpoint pair is stored): {exc.message}",
                argument="source_record_ids",
            ) from None
        session.recompute_status([
            r.target_id for r in rows if r.relation_type in LIFECYCLE_RELATION_TYPES])

    @observed(MEMORY_STORE)
    def get_relation(self, source_record_id: Any = NOT_SET_MARKER,
                     source_record_type: Any = NOT_SET_MARKER,
                     target_record_id: Any = NOT_SET_MARKER,
                     target_record_type: Any = NOT_SET_MARKER,
                     relation_type: Any = NOT_SET_MARKER,
                     relation_id: Any = NOT_SET_MARKER) -> RecordRelation | None:
        """The relation named by ``relation_id`` alone or by the complete endpoint tuple."""
        endpoint = {
            "source_record_id": source_record_id, "source_record_type": source_record_type,
            "target_record_id": target_record_id, "target_record_type": target_record_type,
            "relation_type": relation_type,
        }
        given = [name for name, value in endpoint.items() if value is not NOT_SET_MARKER]
        if relation_id is not NOT_SET_MARKER:
            if given:
                raise InvalidArgumentError(
                    "get_relation takes relation_id alone or the complete endpoint tuple, not "
                    f"both (also got {', '.join(given)})"
                )
            query = RelationQuery(relation_id=check_required_id(relation_id, "relation_id"))
        else:
            missing = [name for name in endpoint if name not in given]
            if missing:
                raise InvalidArgumentError(
                    "get_relation needs relation_id or the complete endpoint tuple; missing "
                    + ", ".join(missing)
                )
            query = RelationQuery(
                source_id=check_required_id(source_record_id, "source_record_id"),
                source_type=check_required_id(source_record_type, "source_record_type"),
                target_id=check_required_id(target_record_id, "target_record_id"),
                target_type=check_required_id(target_record_type, "target_record_type"),
                relation_type=check_required_id(relation_type, "relation_type"),
            )
        query.limit = 1
        with self._session() as session:
            rows = session.select_relations(query)
        return relation_from_row(rows[0]) if rows else None

    @observed(MEMORY_STORE)
    def list_relations(self, relation_type: Any = NOT_SET_MARKER,
                       source_record_id: Any = NOT_SET_MARKER,
                       source_record_type: Any = NOT_SET_MARKER,
                       target_record_id: Any = NOT_SET_MARKER,
                       target_record_type: Any = NOT_SET_MARKER, limit: Any = NOT_SET_MARKER,
                       metadata_filter: Any = NOT_SET_MARKER,
                       relation_id: Any = NOT_SET_MARKER, *,
                       older_than: Any = None) -> builtins.list[RecordRelation]:
        """Relations in creation order (the most recent ``limit``, default MAX_LIST_LIMIT);
        ``older_than`` (an extension, see :class:`~oracleagentmemory.apis.keyset.OlderThan`)
        pages by ``(created_at, id)``."""
        query = RelationQuery(
            limit=MAX_LIST_LIMIT if limit is NOT_SET_MARKER else check_limit(limit, "limit"),
            older_than=keyset_position(older_than))
        for argument, attribute, value in (
            ("relation_type", "relation_type", relation_type),
            ("source_record_id", "source_id", source_record_id),
            ("source_record_type", "source_type", source_record_type),
            ("target_record_id", "target_id", target_record_id),
            ("target_record_type", "target_type", target_record_type),
            ("relation_id", "relation_id", relation_id),
        ):
            if value is not NOT_SET_MARKER:
                setattr(query, attribute, check_required_id(value, argument))
        if metadata_filter is None:
            query.metadata_filter = None
        elif metadata_filter is not NOT_SET_MARKER:
            query.metadata_filter = parse_metadata_filter(metadata_filter)
        with self._session() as session:
            rows = session.select_relations(query)
        return [relation_from_row(r) for r in rows]

    @observed(MEMORY_STORE)
    def update_relations(self, relation_ids: Any, relation_types: Any = NOT_SET_MARKER,
                         opposite_relation_types: Any = NOT_SET_MARKER,
                         timestamps: Any = NOT_SET_MARKER,
                         metadata: Any = NOT_SET_MARKER) -> builtins.list[str]:
        """Replace mutable relation fields atomically; returns the ids that were updated."""
        changes = plan_update_relations(relation_ids, relation_types, opposite_relation_types,
                                        timestamps, metadata)
        updated: builtins.list[str] = []
        retyped_targets: builtins.list[str] = []
        with self._session() as session:
            for n, change in enumerate(changes):
                stored = session.select_relations(
                    RelationQuery(relation_id=change.relation_id, limit=1))
                if not stored:
                    continue
                resolve_change_labels(change, stored[0]["relation_type"], n)
                session.update_relation(change)
                updated.append(change.relation_id)
                if change.relation_type is not UNSET:
                    retyped_targets.append(stored[0]["target_id"])
            session.recompute_status(retyped_targets)
        return updated

    @observed(MEMORY_STORE)
    def delete_relations(self, relation_ids: Any) -> int:
        """Delete relations by id; lifecycle status is recomputed from the relations left."""
        ids = [relation_ids] if isinstance(relation_ids, str) else relation_ids
        if not isinstance(ids, (builtins.list, tuple)):
            raise InvalidArgumentTypeError("relation_ids must be a str or a list of str")
        checked = [check_required_id(v, f"relation_ids[{n}]") for n, v in enumerate(ids)]
        with self._session() as session:
            deleted = session.delete_relations(checked)
            session.recompute_status([
                target for target, kind in deleted if kind in LIFECYCLE_RELATION_TYPES])
        return len(deleted)


def _link_owner(owners: builtins.list[str | None], position: int) -> str | None:
    """The owner of a relation: that of its endpoints (record ids are unique per owner).

    Both endpoints belong to one user, or one of them (or both) is a global memory.
    """
    scoped = {owner for owner in owners if owner is not None}
    if len(scoped) > 1:
        raise InvalidArgumentError(
            f"source_record_ids[{position}]: a relation links memories of one user (or global "
            f"memories), not of users {sorted(scoped)!r}"
        )
    return scoped.pop() if scoped else None
