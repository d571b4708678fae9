"""The audit event's time is written exactly as ``datetime.isoformat`` with milliseconds wrote
it (truncated, UTC, ``Z``), also across second, minute, day and year boundaries and the
microsecond rounding of ``datetime.fromtimestamp``, with its second's text reused."""

from __future__ import annotations

import random
from datetime import datetime, timezone

from oam_gateway.middleware.request_log import _utc_milliseconds


def _isoformat(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def test_event_time_is_the_isoformat_text() -> None:
    rng = random.Random(23)
    edges = [1767225600.0, 1767225599.0, 1700000000.0, 951782400.0, 0.0]  # new year, leap day
    stamps = [rng.uniform(0, 4e9) for _ in range(20_000)]
    stamps += [edge + delta for edge in edges
               for delta in (0.0, -1e-7, 1e-7, -5e-7, 5e-7, 0.9999994, 0.9999995, 0.9995,
                             -0.0005, 0.999, 59.9999996)]
    start = 1767225590.0
    stamps += [start + n * 0.000731 for n in range(20_000)]  # in order, as requests come
    for stamp in stamps:
        assert _utc_milliseconds(stamp) == _isoformat(stamp), stamp
    assert _utc_milliseconds(1767225600.0123) == "2026-01-01T00:00:00.012Z"  # positive control
