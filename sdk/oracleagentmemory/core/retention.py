"""Schema-level retention settings and per-record time-to-live resolution."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.engines.interfaces import Expiry, ExpiryAnchor
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


@dataclass(frozen=True)
class MemoryRetentionConfig:
    """Retention settings of a DB-backed store.

    ``default_ttl_days`` is used when a write omits ``ttl_days``. ``max_ttl_days`` is a hard cap:
    longer durations are clamped with a warning, and ``ttl_days=None`` uses it instead of
    creating rows that never expire. Attributes left at ``NOT_SET_MARKER`` resolve to ``None``.
    """

    default_ttl_days: int | None | _NotSetMarker = NOT_SET_MARKER
    max_ttl_days: int | None | _NotSetMarker = NOT_SET_MARKER

    def __post_init__(self) -> None:
        for name in ("default_ttl_days", "max_ttl_days"):
            value = getattr(self, name)
            if isinstance(value, _NotSetMarker) or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgumentTypeError(
                    f"{name} must be an int or None, got {type(value).__name__}")
            if value < 1:
                raise InvalidArgumentError(f"{name} must be at least 1 day, got {value}")

    def resolved(self) -> tuple[int | None, int | None]:
        """``(default_ttl_days, max_ttl_days)`` with unset attributes resolved to ``None``."""
        default = (
            None if isinstance(self.default_ttl_days, _NotSetMarker) else self.default_ttl_days
        )
        maximum = None if isinstance(self.max_ttl_days, _NotSetMarker) else self.max_ttl_days
        return default, maximum


def resolve_ttl_days(
    ttl_days: int | None | _NotSetMarker,
    default_ttl_days: int | None,
    max_ttl_days: int | None,
    argument: str = "ttl_days",
) -> int | None:
    """Effective lifetime in days of one record (``None``: never expires)."""
    if isinstance(ttl_days, _NotSetMarker):
        ttl_days = default_ttl_days
    elif ttl_days is not None:
        if isinstance(ttl_days, bool) or not isinstance(ttl_days, int):
            raise InvalidArgumentTypeError(
                f"{argument} must be an int or None, got {type(ttl_days).__name__}")
        if ttl_days < 1:
            raise InvalidArgumentError(f"{argument} must be at least 1 day, got {ttl_days}")
    if ttl_days is None:
        return max_ttl_days
    if max_ttl_days is not None and ttl_days > max_ttl_days:
        warnings.warn(
            f"{argument}={ttl_days} exceeds MemoryRetentionConfig.max_ttl_days={max_ttl_days}; "
            f"clamped to {max_ttl_days}",
            UserWarning,
            stacklevel=4,
        )
        return max_ttl_days
    return ttl_days


def expiry(ttl_days: int | None, timestamp_anchor: datetime | None) -> Expiry | None:
    """The expiry of a record living ``ttl_days`` (``None``: never expires).

    A day is 24 hours, whatever the session time zone. The lifetime starts at
    ``timestamp_anchor`` (the record's event time, for ``TimeToLiveAnchor.TIMESTAMP``) or, when
    that is ``None``, at the record's creation.
    """
    if ttl_days is None:
        return None
    anchor = ExpiryAnchor.RECORD_CREATION if timestamp_anchor is None else timestamp_anchor
    return Expiry(timedelta(hours=24 * ttl_days), anchor)
