"""Record value types returned by the store: frozen, hashable dataclasses.

Every record class fixes its ``record_type`` (it is not an ``__init__`` argument), so the
positional order is ``id, content, timestamp, metadata, status, linked_results`` and, for scoped
records, ``thread_id, user_id, agent_id``: ``MemoryRecord("id1", "hello").content == "hello"``.
Records are immutable; derive a changed copy with :func:`dataclasses.replace`. Their hash covers
the identifying fields and leaves out the container-valued ones (``content``, ``metadata``,
``linked_results``, thread runtime dicts); equality compares every field.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from oracleagentmemory.apis.message import ImageMimeType, MessageContent
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.errors import InvalidArgumentError

MetadataValue = dict[str, Any] | None

MemoryRecordType = Literal["memory", "guideline", "fact", "preference"]
"""The memory-like record types."""
ThreadRecordType = Literal["message", "memory", "guideline", "fact", "preference"]
"""The record types a thread holds: its messages and the memory-like records extracted in it."""
RecordType = Literal["thread", "message", "thread_summary", "memory", "guideline", "fact",
                     "preference", "user_profile", "agent_profile", "image"]
"""Every record type a store holds."""

MEMORY_TYPES: frozenset[str] = frozenset({"memory", "fact", "guideline", "preference"})
"""Record types stored in the memory table (memory-like records)."""

DOCUMENT_TYPES: frozenset[str] = frozenset({"image"})
"""Record types stored in the document table."""

PROFILE_TYPES: frozenset[str] = frozenset({"user_profile", "agent_profile"})
"""Actor profile record types (unscoped; the actor id is the record id)."""

RECORD_TYPES: frozenset[str] = MEMORY_TYPES | PROFILE_TYPES | {
    "thread",
    "message",
    "thread_summary",
    "image",
}
"""Every record type the store reads and writes."""


class RecordStatus(str, Enum):
    """Lifecycle status of a record (a ``str`` enum: ``RecordStatus.VALID == "valid"``)."""

    VALID = "valid"
    INVALID = "invalid"


LinkedResults = Sequence[tuple[RecordRelation, "Record"]]
"""``(relation, linked record)`` pairs a graph-expanded search attaches to a result."""


@dataclass(frozen=True, slots=True)
class Record:
    """A stored record."""

    id: str
    record_type: str = "record"
    content: Any = field(default=None, hash=False)
    timestamp: str | None = None
    metadata: MetadataValue = field(default=None, hash=False)
    status: RecordStatus = RecordStatus.VALID
    linked_results: LinkedResults = field(default_factory=tuple, hash=False)


@dataclass(frozen=True, slots=True)
class ScopedRecord(Record):
    """A record scoped to a thread, a user and/or an agent."""

    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None


@dataclass(frozen=True, slots=True)
class ThreadRecord(ScopedRecord):
    """A conversation thread; ``id`` and ``thread_id`` are the thread identifier."""

    record_type: str = field(default="thread", init=False)
    content: str | None = field(default=None, hash=False)
    runtime_config: dict[str, Any] | None = field(default=None, hash=False)
    runtime_state: dict[str, Any] | None = field(default=None, hash=False)


@dataclass(frozen=True, slots=True)
class MessageRecord(ScopedRecord):
    """A message of a thread; ``seq_no`` (keyword-only, required) orders it within its thread."""

    record_type: str = field(default="message", init=False)
    content: str | Sequence[MessageContent] = field(default="", hash=False)
    role: str | None = None
    seq_no: int = field(kw_only=True)


@dataclass(frozen=True, slots=True)
class ThreadSummaryRecord(ScopedRecord):
    """A structured summary of a thread."""

    record_type: str = field(default="thread_summary", init=False)
    content: dict[str, object] | None = field(default=None, hash=False)


@dataclass(frozen=True, slots=True)
class MemoryRecord(ScopedRecord):
    """A memory extracted or written for a scope."""

    record_type: str = field(default="memory", init=False)
    content: str | None = field(default=None, hash=False)


@dataclass(frozen=True, slots=True)
class GuidelineRecord(MemoryRecord):
    """A guideline memory."""

    record_type: str = field(default="guideline", init=False)


@dataclass(frozen=True, slots=True)
class FactRecord(MemoryRecord):
    """A fact memory."""

    record_type: str = field(default="fact", init=False)


@dataclass(frozen=True, slots=True)
class PreferenceRecord(MemoryRecord):
    """A preference memory."""

    record_type: str = field(default="preference", init=False)


@dataclass(frozen=True, slots=True)
class UserProfileRecord(Record):
    """A user profile; ``id`` is the user id."""

    record_type: str = field(default="user_profile", init=False)
    content: str | None = field(default=None, hash=False)


@dataclass(frozen=True, slots=True)
class AgentProfileRecord(Record):
    """An agent profile; ``id`` is the agent id."""

    record_type: str = field(default="agent_profile", init=False)
    content: str | None = field(default=None, hash=False)


@dataclass(frozen=True, slots=True)
class ImageRecord(ScopedRecord):
    """A stored image: ``content`` is its description (what search sees), ``bytes`` the image
    (``None`` unless requested), ``message_id`` the message it is a part of (``None`` for a
    standalone image) and ``mime_type`` (keyword-only, required) its format."""

    record_type: str = field(default="image", init=False)
    content: str | None = field(default=None, hash=False)
    message_id: str | None = None
    bytes: builtins.bytes | None = field(default=None, hash=False)
    mime_type: ImageMimeType = field(kw_only=True)


RECORD_CLASS_BY_TYPE: dict[str, type[Record]] = {
    "thread": ThreadRecord,
    "message": MessageRecord,
    "thread_summary": ThreadSummaryRecord,
    "memory": MemoryRecord,
    "guideline": GuidelineRecord,
    "fact": FactRecord,
    "preference": PreferenceRecord,
    "user_profile": UserProfileRecord,
    "agent_profile": AgentProfileRecord,
    "image": ImageRecord,
}


def build_record(
    record_type: str,
    record_id: str,
    *,
    content: str | dict[str, object] | Sequence[MessageContent] | None = None,
    thread_id: str | None = None,
    user_id: str | None = None,
    agent_id: str | None = None,
    role: str | None = None,
    seq_no: int | None = None,
    timestamp: str | None = None,
    metadata: MetadataValue = None,
    status: RecordStatus = RecordStatus.VALID,
    **kwargs: Any,
) -> Record:
    """Build the record class that matches ``record_type``.

    Arguments a record type does not have are ignored (scope on profiles, ``role`` and
    ``seq_no`` on non-messages); ``kwargs`` carries type-specific fields such as
    ``runtime_config`` or ``linked_results``.

    Raises:
        InvalidArgumentError: ``record_type`` is unknown, a message has no ``seq_no`` or an
            image no (known) ``mime_type``.
    """
    try:
        cls = RECORD_CLASS_BY_TYPE[record_type]
    except KeyError:
        raise InvalidArgumentError(f"record_type: unknown record type {record_type!r}") from None
    fields: dict[str, Any] = {"content": content, "timestamp": timestamp,
                              "metadata": metadata, "status": status, **kwargs}
    if issubclass(cls, ScopedRecord):
        fields.update(thread_id=thread_id, user_id=user_id, agent_id=agent_id)
    if cls is MessageRecord:
        if seq_no is None:
            raise InvalidArgumentError("seq_no: message records require a sequence number")
        fields.update(role=role, seq_no=seq_no)
        if fields["content"] is None:
            fields["content"] = ""
    if cls is ImageRecord:
        mime_type = fields.pop("mime_type", None)
        try:
            fields["mime_type"] = ImageMimeType(mime_type)
        except ValueError:
            raise InvalidArgumentError(
                f"mime_type: image records require one of "
                f"{', '.join(m.value for m in ImageMimeType)}, got {mime_type!r}") from None
    return cls(record_id, **fields)
