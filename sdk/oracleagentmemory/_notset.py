"""The ``NOT_SET_MARKER`` sentinel that tells an omitted argument from an explicit ``None``."""

from __future__ import annotations

from typing import Final, TypeVar

T_ = TypeVar("T_")


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

NotSet = _NotSetMarker


def is_set(value: object) -> bool:
    """Return ``True`` when ``value`` is anything but :data:`NOT_SET_MARKER`."""
    return value is not NOT_SET_MARKER


def value_or(value: T_ | _NotSetMarker, default: T_) -> T_:
    """Return ``value`` unless it is :data:`NOT_SET_MARKER`, else ``default``."""
    return default if isinstance(value, _NotSetMarker) else value
