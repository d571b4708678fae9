"""``bench/gateway_costs.py`` in a smoke run: every cost row is measured, the gateway's requests
all succeed, and the ceiling line adds up the figures it names."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH_DIR))  # the bench imports its siblings
    spec = importlib.util.spec_from_file_location("bench_gateway_costs",
                                                  BENCH_DIR / "gateway_costs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_small_run_measures_every_cost(bench: ModuleType, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # Its own embedded server: setting up the test identities renews the applications' tokens,
    # which the session's server must keep for its tests.
    assert bench.main(["--data-dir", str(tmp_path / "pgdata"), "--users", "2", "--memories",
                       "20", "--iterations", "40", "--seconds", "0.5", "--tasks", "2"]) == 0
    assert "OAM_GATEWAY_DATABASE_URL" not in os.environ  # later tests read their own settings
    out = capsys.readouterr().out
    costs = dict(re.findall(r"^  (.+?)\s+(\d+)\s+\d+\s+(?:\d+|n/a)$", out, re.MULTILINE))
    assert set(costs) >= {"SELECT 1 (one round trip)",
                          "context applied and cleared, nothing in it",
                          "SDK memory read in a context (the route's work)",
                          "SDK read, inline on the loop", "SDK read, through asyncio.to_thread",
                          "asyncio.to_thread of nothing"}, out
    routes = re.findall(r"^  (GET \S+).*?\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.MULTILINE)
    assert [r[0] for r in routes] == ["GET /v1/me", "GET /v1/memories/{id}"], out
    assert all(int(rps) > 0 and failed == "0" for _, rps, _, failed in routes), out
    ceiling = re.search(r"^ceiling for GET .* on (\d+) cores: (\d+)/s \((\d+) us gateway \+ "
                        r"(\d+) us database", out, re.MULTILINE)
    assert ceiling, out
    cores, rate, gateway_us, database_us = map(int, ceiling.groups())
    assert gateway_us == int(routes[1][2])
    assert abs(rate - cores * 1e6 / (gateway_us + database_us)) <= 0.01 * rate + 1
