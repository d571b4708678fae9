"""Search strategy and search-index synchronisation modes."""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

from oracleagentmemory.errors import InvalidArgumentError

E = TypeVar("E", bound=Enum)


class SearchStrategy(Enum):
    """Search backend of a DB-backed store."""

    VECTOR = "vector"
    """Rank by vector similarity against stored embeddings (the default)."""
    HYBRID = "hybrid"
    """Fuse keyword and vector candidates."""
    KEYWORD = "keyword"
    """Rank by keyword match over the stored search text; no embedder needed."""


class SearchIndexSyncMode(Enum):
    """When new or changed search text becomes visible to text-aware search."""

    ON_COMMIT = "on_commit"
    """Searchable as soon as the write commits (the default)."""
    MANUAL = "manual"
    """Refreshed only by an explicit synchronisation."""
    AUTO = "auto"
    """Refreshed asynchronously by the database; hybrid search only."""


def parse_enum(enum_type: type[E], value: object, argument: str) -> E:
    """Accept an enum member or its (case-insensitive) string value."""
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str):
        for member in enum_type:
            if member.value == value.lower() or member.name == value.upper():
                return member
    allowed = ", ".join(repr(m.value) for m in enum_type)
    raise InvalidArgumentError(
        f"{argument} must be a {enum_type.__name__} or one of {allowed}; got {value!r}"
    )
