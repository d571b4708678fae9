"""Directed relations between memory-like records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MEMORY_LINK_OPPOSITES: dict[str, str] = {
    "supersedes": "is_superseded_by",
    "refines": "is_refined_by",
    "supports": "is_supported_by",
    "contradicts": "contradicts",
    "duplicates": "duplicates",
}
"""Built-in relation types and their fixed reverse labels."""

LIFECYCLE_RELATION_TYPES: frozenset[str] = frozenset({"supersedes", "refines", "duplicates"})
"""Relation types that make their target memory INVALID while the link exists."""


@dataclass(frozen=True, slots=True)
class RecordRelation:
    """A stored, directed relation between two records (immutable and hashable).

    The hash leaves ``metadata`` out (a dict); equality compares every field.
    """

    id: str
    source_record_id: str
    source_record_type: str
    target_record_id: str
    target_record_type: str
    relation_type: str
    opposite_relation_type: str
    timestamp: str | None
    metadata: dict[str, Any] | None = field(hash=False)
    created_at: str
