"""The managed store's logical layout, the same on every engine: which table holds each record
type, which tables expire, the order of cascading deletes, and the shape of a record row.

Engines map these logical names to their own tables (``StoreNames.table``) and SQL; the core
builds records from :class:`RecordRow`. Record-type facts are defined once, here and in
:mod:`oracleagentmemory.apis.records` (the public type names).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from oracleagentmemory.apis.records import MEMORY_TYPES, PROFILE_TYPES
from oracleagentmemory.apis.relations import LIFECYCLE_RELATION_TYPES

__all__ = [
    "EXPIRING_TABLES",
    "LIFECYCLE_RELATION_TYPES",
    "MEMORY_TYPES",
    "PROFILE_TYPES",
    "SEARCHABLE_TYPES",
    "TABLE_OF_TYPE",
    "THREAD_CASCADE",
    "RecordRow",
]

SEARCHABLE_TYPES: frozenset[str] = MEMORY_TYPES | PROFILE_TYPES | {"message", "image"}
"""Record types that get retrieval rows (chunks) and can be searched (an image by its
description)."""

TABLE_OF_TYPE: dict[str, str] = {
    "thread": "thread",
    "message": "message",
    "thread_summary": "thread_summary",
    "user_profile": "actor_profile",
    "agent_profile": "actor_profile",
    "image": "document",
    **{t: "memory" for t in sorted(MEMORY_TYPES)},
}
"""The logical table that holds each record type."""

EXPIRING_TABLES: tuple[str, ...] = ("message", "memory", "thread_summary", "document")
"""Logical tables whose rows carry ``expires_at`` (reads skip expired rows; purge deletes them)."""

THREAD_CASCADE: tuple[str, ...] = ("message", "memory", "thread_summary", "document")
"""What deleting a thread (or an actor's scope) deletes, in this order, before the thread row:
each step also deletes the rows' retrieval rows, and memories their relations."""


class RecordRow(TypedDict, total=False):
    """One record as every engine returns it (the neutral SELECT list)."""

    id: str
    record_type: str
    thread_id: str | None
    user_id: str | None
    agent_id: str | None
    content: Any
    """Text, a summary mapping (thread summaries), an image's description or ``None``
    (threads)."""
    content_parts: list[dict[str, Any]] | None
    """Message content parts (text and image parts), when the message has them."""
    metadata: dict[str, Any] | None
    ts: datetime
    """The event timestamp, or the creation time when the record has none."""
    event_ts: datetime | None
    status: str
    role: str | None
    seq_no: int | None
    """A message's sequence number, or a summary's covered-through sequence number."""
    runtime_config: dict[str, Any] | None
    """Threads only."""
    runtime_state: dict[str, Any] | None
    """Threads only."""
    message_id: str | None
    """Images only: the message the image is a part of."""
    mime_type: str
    """Images only."""
    bytes: bytes | None
    """Images only: ``None`` unless the read asked for bytes."""


def search_arms(record_types: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """The ``(parent table, record types)`` pairs a search over ``record_types`` visits, in the
    order every engine searches them (images are searched by their descriptions)."""
    arms: list[tuple[str, tuple[str, ...]]] = []
    memory = tuple(t for t in record_types if t in MEMORY_TYPES)
    if memory:
        arms.append(("memory", memory))
    if "message" in record_types:
        arms.append(("message", ("message",)))
    profiles = tuple(t for t in record_types if t in PROFILE_TYPES)
    if profiles:
        arms.append(("actor_profile", profiles))
    if "image" in record_types:
        arms.append(("document", ("image",)))
    return arms
