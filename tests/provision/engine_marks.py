"""``@pytest.mark.not_on_engine(name, reason=...)``: a behavioural test that does not apply to
one engine, and why.

The marked test still gets that engine's parameter when the engine is reachable, as a skip
whose reason says the engine was NOT tested by it (never a pass); the run's summary counts the
marked tests per engine and reason, whether or not the engine was reachable, so what the
engine-neutral suite leaves out of an engine stays visible. Module- and class-level marks
(``pytestmark``) count too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import pytest

MARKER = "not_on_engine"
MARKER_HELP = (f"{MARKER}(engine, reason=...): the test does not apply to that engine (it is "
               "reported, never counted as passed there)")

LEFT_OUT: Counter[tuple[str, str]] = Counter()
"""(engine, reason) -> how many test functions the mark leaves out (filled at collection)."""


def engines_left_out(node: pytest.Item) -> dict[str, str]:
    """Engine -> the reason, for every ``not_on_engine`` mark on ``node`` or its parents."""
    left_out: dict[str, str] = {}
    for mark in node.iter_markers(name=MARKER):
        if len(mark.args) != 1 or not isinstance(mark.args[0], str):
            raise TypeError(f"{MARKER} takes one engine name: {mark}")
        reason = mark.kwargs.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise TypeError(f"{MARKER}({mark.args[0]!r}) needs reason=... saying why")
        left_out.setdefault(mark.args[0], reason)
    return left_out


def engine_params(engines: Iterable[str], left_out: dict[str, str]) -> list[object]:
    """The ``engine_name`` parameters: a skip for each engine the marks leave out."""
    return [pytest.param(name, marks=pytest.mark.skip(
                reason=f"engine {name} NOT tested by this test: {left_out[name]}"))
            if name in left_out else name
            for name in engines]


def record(left_out: dict[str, str]) -> None:
    """Count one test against each engine and reason it is left out for."""
    for engine, reason in left_out.items():
        LEFT_OUT[(engine, reason)] += 1


def summary_lines() -> list[str]:
    """One line per engine and reason."""
    return [f"engine {engine}: {count} test function(s) do not apply and were NOT run there: "
            f"{reason}"
            for (engine, reason), count in sorted(LEFT_OUT.items())]
