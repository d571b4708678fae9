"""Recent choices between an exact scan and a vector index, shared by the engines.

A search whose user filter keeps few chunks is faster as an exact scan than through an
approximate index (each engine decides with its own counting statement); the choice only
affects speed, never results, so it is kept for a while per viewer, store and filter.
"""

from __future__ import annotations

import threading
import time
from typing import Any

SCAN_CHOICE_SECONDS = 30.0
"""How long a choice between an exact scan and HNSW is reused for the same user filter."""
SCAN_CHOICE_LIMIT = 10_000


class ScanChoices:
    """Recent choices between an exact scan and HNSW, per viewer, store and user filter.

    The choice only affects speed, never results (an HNSW round that under-returns is repeated
    exactly), so it may be a little stale: reusing it saves the engine's counting
    statement on repeated searches. Keyed by the end user the database
    applies (``viewer``), so one user's choice never depends on what another user can see.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._choices: dict[tuple[Any, ...], tuple[bool, float]] = {}

    def get(self, key: tuple[Any, ...]) -> bool | None:
        with self._lock:
            found = self._choices.get(key)
        if found is None or found[1] < time.monotonic():
            return None
        return found[0]

    def put(self, key: tuple[Any, ...], exact: bool) -> None:
        with self._lock:
            if len(self._choices) >= SCAN_CHOICE_LIMIT:
                self._choices.clear()
            self._choices[key] = (exact, time.monotonic() + SCAN_CHOICE_SECONDS)
