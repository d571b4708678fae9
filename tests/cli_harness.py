"""Running ``oam-admin`` in tests: in-process through ``main(argv)``, and its one-line errors."""

from __future__ import annotations

import io
import itertools
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from oracleagentmemory.admin_cli.main import main

_ids = itertools.count(1)
SECRET_ENV = ("OAM_ADMIN_URL", "OAM_RUNTIME_PASSWORD")
"""Environment variables the CLI reads secrets from (cleared for every test call)."""


def unique(prefix: str) -> str:
    """A name unique within the test session (store ids stay within 16 characters)."""
    return f"{prefix}{os.getpid() % 1000}_{next(_ids)}"


@dataclass
class Result:
    code: int
    out: str
    err: str
    seconds: float = 0.0


Cli = Callable[..., Result]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Run ``oam-admin`` in-process; ``env`` sets environment variables for the call."""
    for name in SECRET_ENV:
        monkeypatch.delenv(name, raising=False)

    def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> Result:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        capsys.readouterr()
        started = time.monotonic()
        code = main(list(args))
        seconds = time.monotonic() - started
        for key in env or {}:
            monkeypatch.delenv(key)
        out, err = capsys.readouterr()
        return Result(code, out, err, seconds)

    return run


def one_error(result: Result, code: int, fragment: str) -> str:
    """The command failed with ``code`` and exactly one ``error:`` line containing ``fragment``."""
    assert result.code == code, result
    errors = [line for line in result.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.err
    assert fragment in errors[0], result.err
    assert "Traceback" not in result.err
    return errors[0]
