"""Directed relations between memory-like records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

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

    def relation_type_from(self, record_id: str) -> str:
        """The relation's type read from the side of ``record_id``: ``relation_type`` from its
        source, ``opposite_relation_type`` from its target (``supports`` / ``is_supported_by``)."""
        if record_id == self.source_record_id:
            return self.relation_type
        return self.opposite_relation_type


MemoryLinkType = Literal["supersedes", "contradicts", "refines", "supports", "duplicates"]
"""The built-in relation types between memories."""

MemoryLinkOppositeType = Literal["is_superseded_by", "contradicts", "is_refined_by",
                                 "is_supported_by", "duplicates"]
"""The reverse labels of the built-in relation types, read from the target's side."""

RelationType = str
"""A relation's type: a :data:`MemoryLinkType`, its opposite, or any label of the caller's."""

memory_link_type_opposite_mapping: dict[str, str] = dict(MEMORY_LINK_OPPOSITES)
"""Each built-in relation type's reverse label (a copy: changing it changes no link)."""


@dataclass(frozen=True, slots=True)
class MemoryLink(RecordRelation):
    """A relation between two memory-like records, named as memories and links."""

    @property
    def source_memory_id(self) -> str:
        """The memory the link starts from."""
        return self.source_record_id

    @property
    def target_memory_id(self) -> str:
        """The memory the link points to."""
        return self.target_record_id

    @property
    def link_type(self) -> str:
        """The relation type, read from source to target."""
        return self.relation_type
