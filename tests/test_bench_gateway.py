"""``bench/gateway.py`` in a smoke run: the gateway and the direct calls answer without errors,
and the table, ratios and goal lines are printed."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH_DIR))  # the bench imports its sibling ``_embedded``
    spec = importlib.util.spec_from_file_location("bench_gateway", BENCH_DIR / "gateway.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_a_small_run_measures_every_operation_without_errors(
        bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Its own embedded server: the bench sets up the test identities, which renews the
    # applications' tokens, and the session's server must keep the ones its tests hold.
    assert bench.main(["--data-dir", str(tmp_path / "pgdata"), "--users", "2", "--memories",
                       "50", "--seconds", "0.5",
                       "--connections", "2", "--pool", "2", "--embedder", "hashing",
                       "--python-load", "--audit"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^(get|search|add)\s+(gateway|direct)\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+"
                      r"\s+[\d.]+\s+(\d+)$", out, re.MULTILINE)
    assert len(rows) == 12, out
    assert all(int(requests) > 0 for *_, requests, _ in rows), out
    assert all(errors == "0" for *_, errors in rows), out
    assert re.search(r"^goal get: \d+/s", out, re.MULTILINE), out
    assert re.search(r"^audit: add \d+/s off, \d+/s on", out, re.MULTILINE), out
    # Where the CPU went, per operation: the gateway's processes, the database server's and the
    # load generator's, next to the direct calls' (this process and the server).
    gateway_cpu = re.findall(r"^  (get|search|add) +gateway: gateway (\d+), database (\d+), "
                             r"load generator (\d+); machine \d+% busy; \d+ cores allow at "
                             r"most \d+/s$", out, re.MULTILINE)
    direct_cpu = re.findall(r"^ +direct: +SDK process (\d+), database (\d+); machine \d+% busy",
                            out, re.MULTILINE)
    assert [op for op, *_ in gateway_cpu] == ["get", "search", "add"], out
    assert len(direct_cpu) == 3, out
    # Each side did work that the counters saw (summed: one short run may fall under a tick).
    assert sum(int(gateway) for _, gateway, _, _ in gateway_cpu) > 0, out
    assert sum(int(database) for _, _, database, _ in gateway_cpu) > 0, out
    assert sum(int(own) for own, _ in direct_cpu) > 0, out
