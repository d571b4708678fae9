"""Time-to-live anchors."""

from __future__ import annotations

from enum import Enum


class TimeToLiveAnchor(Enum):
    """Anchor used to compute an expiry timestamp from a time-to-live duration."""

    CREATED_AT = "created_at"
    """Expire relative to the record's database creation time (the default)."""
    TIMESTAMP = "timestamp"
    """Expire relative to the record's stored event timestamp."""
