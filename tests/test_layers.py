"""The layers are a checked contract, and every module imports in a fresh interpreter.

``oam_gateway`` -> ``oracleagentmemory.admin_cli`` -> ``oracleagentmemory.core`` ->
``oracleagentmemory.engines`` -> ``oracleagentmemory.apis`` -> the filter tree -> the errors;
``oam_policies`` stands alone (``[tool.importlinter]`` in ``pyproject.toml``).
"""

from __future__ import annotations

import importlib
import pkgutil
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("oracleagentmemory", "oam_policies", "oam_gateway")


def _modules() -> list[str]:
    names: list[str] = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        names.append(package)
        names.extend(info.name for info in pkgutil.walk_packages(module.__path__, package + "."))
    return sorted(names)


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_the_import_contracts_hold() -> None:
    executable = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert executable is not None, "import-linter is a dev dependency (pip install -e '.[dev]')"
    result = subprocess.run([executable, "--no-cache"], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout or " broken" not in result.stdout


def test_every_module_imports_in_a_fresh_interpreter() -> None:
    modules = _modules()
    assert len(modules) > 40  # the walk found the packages, not an empty path
    # One interpreter per module: a module that only imports because another was loaded first
    # (an import cycle) fails here.
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda name: (name, _fresh(f"import {name}")), modules))
    failed = [f"{name}: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
              for name, r in results if r.returncode]
    assert failed == []


@pytest.mark.parametrize(("module", "unloaded"), [
    ("oracleagentmemory.core", ("psycopg", "psycopg_pool", "pgvector", "oracledb")),
    ("oracleagentmemory.core.deepsec", ("psycopg", "psycopg_pool", "pgvector", "oracledb")),
    ("oracleagentmemory.engines", ("psycopg", "psycopg_pool", "pgvector", "oracledb")),
    ("oracleagentmemory.engines.postgres.assertion", ("psycopg_pool", "pgvector")),
    ("oracleagentmemory.errors", ("numpy", "psycopg")),
])
def test_importing_a_layer_loads_no_driver_it_does_not_need(module: str,
                                                            unloaded: tuple[str, ...]) -> None:
    result = _fresh(f"import sys, {module}; print(sorted(m for m in {unloaded!r} "
                    "if m in sys.modules))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    # Positive control: the probe sees a driver that is loaded.
    control = _fresh(f"import sys, psycopg, {module}; print('psycopg' in sys.modules)")
    assert control.stdout.strip() == "True"
