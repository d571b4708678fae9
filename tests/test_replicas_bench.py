"""``bench/replicas.py`` in a smoke run: gets over one replica, then over two, without errors,
with the CPU of both replicas and of the database counted."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH_DIR))  # the bench imports its siblings
    spec = importlib.util.spec_from_file_location("bench_replicas", BENCH_DIR / "replicas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_a_small_run_spreads_the_gets_over_both_replicas(
        bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Its own embedded server: the bench sets up the test identities, which renews the
    # applications' tokens, and the session's server must keep the ones its tests hold.
    report = tmp_path / "replicas.json"
    assert bench.main(["--data-dir", str(tmp_path / "pgdata"), "--users", "2", "--memories",
                       "50", "--seconds", "0.5", "--connections", "4", "--pool", "2",
                       "--json", str(report)]) == 0
    one, two = json.loads(report.read_text(encoding="utf-8"))
    assert (one["label"], two["label"]) == ("one replica", "two replicas")
    assert one["errors"] == two["errors"] == 0 and one["rps"] > 0 and two["rps"] > 0
    assert one["replica_a_us"] > 0 and one["database_us"] > 0
    assert two["replica_a_us"] > 0 and two["replica_b_us"] > 0 and two["database_us"] > 0
    out = capsys.readouterr().out
    assert bench.HEADER in out and "two replicas" in out
