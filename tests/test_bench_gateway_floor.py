"""``bench/gateway.py --quick --json`` in a tiny run: the floor answers what the gateway answers
for the same get and search, the JSON summary has every figure, and round trips per get were
counted (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
KEYS = {"gateway_rps", "floor_rps", "ratio", "gateway_cpu_us", "floor_cpu_us", "db_cpu_us"}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH_DIR))  # the bench imports its siblings
    spec = importlib.util.spec_from_file_location("bench_gateway", BENCH_DIR / "gateway.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _record(body: dict[str, Any]) -> tuple[str, str]:
    return body["id"], body["content"]


def test_a_quick_run_writes_the_floor_comparison(
        bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary, answers = tmp_path / "bench.json", tmp_path / "answers.json"
    # Its own embedded server: the bench sets up the test identities, which renews the
    # applications' tokens, and the session's server must keep the ones its tests hold.
    assert bench.main(["--data-dir", str(tmp_path / "pgdata"), "--quick", "--users", "2",
                       "--memories", "150", "--seconds", "0.5", "--connections", "2",
                       "--pool", "2", "--embedder", "hashing", "--python-load",
                       "--round-trip-gets", "10", "--json", str(summary),
                       "--answers", str(answers)]) == 0
    out = capsys.readouterr().out
    figures = json.loads(summary.read_text(encoding="utf-8"))
    assert set(figures) == {"get", "search", "round_trips_per_get", "round_trips_per_search"}, (
        figures)
    for op in ("get", "search"):
        assert set(figures[op]) == KEYS, figures
        assert figures[op]["gateway_rps"] > 0 and figures[op]["floor_rps"] > 0, figures
        assert figures[op]["ratio"] == pytest.approx(
            figures[op]["gateway_rps"] / figures[op]["floor_rps"]), figures
    assert isinstance(figures["round_trips_per_get"], float), figures
    assert figures["round_trips_per_get"] > 0, figures
    assert isinstance(figures["round_trips_per_search"], float), figures
    assert figures["round_trips_per_search"] >= 2, figures  # a round, then the records
    # The floor ran the gateway's SQL: the same memory for the same id, the same ranking (ids
    # and contents) for the same query.
    bodies = json.loads(answers.read_text(encoding="utf-8"))
    assert _record(bodies["floor_get"]) == _record(bodies["gateway_get"]), bodies
    gateway_hits = [_record(hit["record"]) for hit in bodies["gateway_search"]["results"]]
    floor_hits = [_record(hit["record"]) for hit in bodies["floor_search"]["results"]]
    assert gateway_hits and floor_hits == gateway_hits, bodies
    assert [hit["distance"] for hit in bodies["floor_search"]["results"]] == pytest.approx(
        [hit["distance"] for hit in bodies["gateway_search"]["results"]]), bodies
    # The table on standard output, with the errors column of each floor run at zero.
    assert "the gateway against the floor" in out, out
    assert "round trips per get: gateway" in out, out
    floor_rows = [line.split() for line in out.splitlines()
                  if line.startswith(("get ", "search ")) and " floor " in line]
    assert [row[0] for row in floor_rows] == ["get", "search"], out
    assert all(row[5] == "0" for row in floor_rows), out
