"""Validate relation arguments (spec "Relationships") and build relation values."""

from __future__ import annotations

import uuid
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.records import MEMORY_TYPES
from oracleagentmemory.apis.relations import MEMORY_LINK_OPPOSITES, RecordRelation
from oracleagentmemory.core._validation import (
    broadcast,
    check_id,
    check_required_id,
    format_timestamp,
    parse_timestamp,
)
from oracleagentmemory.core._writeplan import check_metadata
from oracleagentmemory.engines.interfaces import UNSET, RelationChange, RelationRow
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


def _count(value: object, argument: str) -> int:
    if isinstance(value, str):
        return 1
    if isinstance(value, (list, tuple)):
        if not value:
            raise InvalidArgumentError(f"{argument} must not be empty")
        return len(value)
    raise InvalidArgumentTypeError(
        f"{argument} must be a str or a list of str, got {type(value).__name__}")


def check_endpoint_type(value: object, argument: str) -> str:
    """A memory-like record type (relations link memories only)."""
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(f"{argument} must be a str, got {type(value).__name__}")
    if value not in MEMORY_TYPES:
        raise InvalidArgumentError(
            f"{argument}: relations link memory-like records ({', '.join(sorted(MEMORY_TYPES))}), "
            f"not {value!r}"
        )
    return value


def check_relation_type(value: object, argument: str) -> str:
    """A non-empty relation label of at most 128 characters."""
    return check_required_id(value, argument)


def opposite_for(relation_type: str, opposite: object, argument: str) -> str:
    """The reverse label: fixed for built-in types, the given one or the same label otherwise."""
    fixed = MEMORY_LINK_OPPOSITES.get(relation_type)
    if opposite is NOT_SET_MARKER or opposite is None:
        return fixed if fixed is not None else relation_type
    label = check_relation_type(opposite, argument)
    if fixed is not None and label != fixed:
        raise InvalidArgumentError(
            f"{argument}: the built-in relation type {relation_type!r} always has the reverse "
            f"label {fixed!r}, got {label!r}"
        )
    return label


def plan_add_relations(source_record_ids: object, source_record_types: object,
                       target_record_ids: object, target_record_types: object,
                       relation_types: object, opposite_relation_types: object,
                       relation_ids: object, timestamps: object,
                       metadata: object) -> list[RelationRow]:
    """Validate ``add_relations`` arguments; scalars broadcast over the batch.

    The batch has as many relations as the list arguments have entries (they must agree);
    when every argument is a scalar, it holds one relation.
    """
    count = 1
    for argument, value in (
        ("source_record_ids", source_record_ids), ("source_record_types", source_record_types),
        ("target_record_ids", target_record_ids), ("target_record_types", target_record_types),
        ("relation_types", relation_types), ("opposite_relation_types", opposite_relation_types),
        ("relation_ids", relation_ids), ("timestamps", timestamps), ("metadata", metadata),
    ):
        if isinstance(value, (list, tuple)):
            count = _count(value, argument)
            break
    sources = broadcast(source_record_ids, count, "source_record_ids")
    source_types = broadcast(source_record_types, count, "source_record_types")
    targets = broadcast(target_record_ids, count, "target_record_ids")
    target_types = broadcast(target_record_types, count, "target_record_types")
    types = broadcast(relation_types, count, "relation_types")
    opposites = broadcast(opposite_relation_types, count, "opposite_relation_types")
    ids = broadcast(None if relation_ids is NOT_SET_MARKER else relation_ids, count,
                    "relation_ids")
    stamps = broadcast(None if timestamps is NOT_SET_MARKER else timestamps, count, "timestamps")
    metas = broadcast(None if metadata is NOT_SET_MARKER else metadata, count, "metadata")
    rows: list[RelationRow] = []
    pairs: set[frozenset[str]] = set()
    seen_ids: set[str] = set()
    for n in range(count):
        source = check_required_id(sources[n], f"source_record_ids[{n}]")
        target = check_required_id(targets[n], f"target_record_ids[{n}]")
        if source == target:
            raise InvalidArgumentError(
                f"target_record_ids[{n}]: a relation cannot link {source!r} to itself")
        pair = frozenset((source, target))
        if pair in pairs:
            raise InvalidArgumentError(
                f"source_record_ids[{n}]: {source!r} and {target!r} are already related in this "
                "batch; only one orientation per endpoint pair is stored"
            )
        pairs.add(pair)
        relation_type = check_relation_type(types[n], f"relation_types[{n}]")
        relation_id = check_id(ids[n], f"relation_ids[{n}]", allow_none=True) or str(uuid.uuid4())
        if relation_id in seen_ids:
            raise InvalidArgumentError(f"relation_ids[{n}]: duplicate relation id {relation_id!r}")
        seen_ids.add(relation_id)
        rows.append(RelationRow(
            id=relation_id,
            source_id=source,
            source_type=check_endpoint_type(source_types[n], f"source_record_types[{n}]"),
            target_id=target,
            target_type=check_endpoint_type(target_types[n], f"target_record_types[{n}]"),
            relation_type=relation_type,
            opposite_relation_type=opposite_for(relation_type, opposites[n],
                                                f"opposite_relation_types[{n}]"),
            event_ts=parse_timestamp(stamps[n], f"timestamps[{n}]"),
            metadata=check_metadata(metas[n], f"metadata[{n}]"),
        ))
    return rows


def plan_update_relations(relation_ids: object, relation_types: object,
                          opposite_relation_types: object, timestamps: object,
                          metadata: object) -> list[RelationChange]:
    """Validate ``update_relations`` arguments (type checks against stored rows come later)."""
    count = _count(relation_ids, "relation_ids")
    ids = broadcast(relation_ids, count, "relation_ids")
    types = broadcast(relation_types, count, "relation_types")
    opposites = broadcast(opposite_relation_types, count, "opposite_relation_types")
    stamps = broadcast(timestamps, count, "timestamps")
    metas = broadcast(metadata, count, "metadata")
    if all(v is NOT_SET_MARKER for v in (relation_types, opposite_relation_types, timestamps,
                                         metadata)):
        raise InvalidArgumentError("update_relations needs at least one of relation_types, "
                         "opposite_relation_types, timestamps, metadata")
    changes: list[RelationChange] = []
    for n in range(count):
        change = RelationChange(relation_id=check_required_id(ids[n], f"relation_ids[{n}]"))
        if types[n] is not NOT_SET_MARKER:
            change.relation_type = check_relation_type(types[n], f"relation_types[{n}]")
        if opposites[n] is not NOT_SET_MARKER:
            change.opposite_relation_type = check_relation_type(
                opposites[n], f"opposite_relation_types[{n}]")
        if stamps[n] is not NOT_SET_MARKER:
            change.event_ts = parse_timestamp(stamps[n], f"timestamps[{n}]")
        if metas[n] is not NOT_SET_MARKER:
            change.metadata = check_metadata(metas[n], f"metadata[{n}]")
        changes.append(change)
    return changes


def resolve_change_labels(change: RelationChange, stored_type: str, n: int) -> None:
    """Apply the built-in label rules to a change, knowing the stored relation type."""
    new_type = stored_type if change.relation_type is UNSET else change.relation_type
    fixed = MEMORY_LINK_OPPOSITES.get(new_type)
    if fixed is None:
        return
    if change.opposite_relation_type is not UNSET and change.opposite_relation_type != fixed:
        raise InvalidArgumentError(
            f"opposite_relation_types[{n}]: the built-in relation type {new_type!r} always has "
            f"the reverse label {fixed!r}"
        )
    change.opposite_relation_type = fixed


def relation_from_row(row: dict[str, Any]) -> RecordRelation:
    """The relation value of a stored row."""
    return RecordRelation(
        id=row["id"],
        source_record_id=row["source_id"],
        source_record_type=row["source_type"],
        target_record_id=row["target_id"],
        target_record_type=row["target_type"],
        relation_type=row["relation_type"],
        opposite_relation_type=row["opposite_relation_type"],
        timestamp=format_timestamp(row.get("event_ts")),
        metadata=row.get("metadata"),
        created_at=format_timestamp(row["created_at"]) or "",
    )
