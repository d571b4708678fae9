"""The ``NOT_SET_MARKER`` sentinel that tells an omitted argument from an explicit ``None``."""

from __future__ import annotations

from typing import Final


class _NotSetMarker:
    """Type of :data:`NOT_SET_MARKER`; there is exactly one instance."""

    _instance: _NotSetMarker | None = None

    def __new__(cls) -> _NotSetMarker:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_SET_MARKER"

    def __bool__(self) -> bool:
        return False

    def __copy__(self) -> _NotSetMarker:
        return self

    def __deepcopy__(self, memo: object) -> _NotSetMarker:
        return self

    def __reduce__(self) -> str:
        return "NOT_SET_MARKER"


NOT_SET_MARKER: Final = _NotSetMarker()
"""Marks an argument the caller did not pass (distinct from an explicit ``None``)."""
