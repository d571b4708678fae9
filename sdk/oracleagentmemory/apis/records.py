"""Record value types returned by the store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from oracleagentmemory.apis.message import MessageContent
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.errors import InvalidArgumentError

MetadataValue = dict[str, Any] | None

MEMORY_TYPES: frozenset[str] = frozenset({"memory", "fact", "guideline", "preference"})
"""Record types stored in the memory table (memory-like records)."""

PROFILE_TYPES: frozenset[str] = frozenset({"user_profile", "agent_profile"})
"""Actor profile record types (unscoped; the actor id is the record id)."""

RECORD_TYPES: frozenset[str] = MEMORY_TYPES | PROFILE_TYPES | {
    "thread",
    "message",
    "thread_summary",
}
"""Every record type the store reads and writes."""


class RecordStatus(Enum):
    """Lifecycle status of a record."""

    VALID = "valid"
    INVALID = "invalid"


@dataclass
class Record:
    """A stored record."""

    id: str
    record_type: str = "record"
    content: Any = None
    timestamp: str | None = None
    metadata: MetadataValue = None
    status: RecordStatus = RecordStatus.VALID
    linked_results: Sequence[tuple[RecordRelation, Record]] = field(default_factory=list)


@dataclass
class ScopedRecord(Record):
    """A record scoped to a thread, a user and/or an agent."""

    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None


@dataclass
class ThreadRecord(ScopedRecord):
    """A conversation thread; ``id`` and ``thread_id`` are the thread identifier."""

    record_type: str = "thread"
    runtime_config: dict[str, Any] | None = None
    runtime_state: dict[str, Any] | None = None


@dataclass
class MessageRecord(ScopedRecord):
    """A message of a thread; ``seq_no`` orders messages within their thread."""

    record_type: str = "message"
    content: str | Sequence[MessageContent] = ""
    role: str | None = None
    seq_no: int = 0


@dataclass
class ThreadSummaryRecord(ScopedRecord):
    """A structured summary of a thread."""

    record_type: str = "thread_summary"
    content: dict[str, object] | None = None


@dataclass
class MemoryRecord(ScopedRecord):
    """A memory extracted or written for a scope."""

    record_type: str = "memory"
    content: str | None = None


@dataclass
class GuidelineRecord(MemoryRecord):
    """A guideline memory."""

    record_type: str = "guideline"


@dataclass
class FactRecord(MemoryRecord):
    """A fact memory."""

    record_type: str = "fact"


@dataclass
class PreferenceRecord(MemoryRecord):
    """A preference memory."""

    record_type: str = "preference"


@dataclass
class UserProfileRecord(Record):
    """A user profile; ``id`` is the user id."""

    record_type: str = "user_profile"
    content: str | None = None


@dataclass
class AgentProfileRecord(Record):
    """An agent profile; ``id`` is the agent id."""

    record_type: str = "agent_profile"
    content: str | None = None


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
}


def build_record(record_type: str, **fields: Any) -> Record:
    """Build the record class that matches ``record_type``."""
    try:
        cls = RECORD_CLASS_BY_TYPE[record_type]
    except KeyError:
        raise InvalidArgumentError(f"record_type: unknown record type {record_type!r}") from None
    return cls(record_type=record_type, **fields)
