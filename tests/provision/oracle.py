"""Oracle AI Database 26ai: ``OAM_TEST_ORACLE_DSN``, or a container when a runtime exists.

Reachable only once the Oracle engine is available in this release (the engine registry says
so) and a database is: then every behavioural test also runs on Oracle.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import oracledb
from oracleagentmemory.engines.registry import engine_entries

CONTAINER_RUNTIMES = ("docker", "podman")


@functools.cache
def running_container_runtime() -> str | None:
    """The first container runtime whose daemon answers (``<runtime> info``), else ``None``."""
    for runtime in CONTAINER_RUNTIMES:
        if shutil.which(runtime) is None:
            continue
        try:
            answered = subprocess.run([runtime, "info"], capture_output=True, timeout=10,
                                      check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            answered = False
        if answered:
            return runtime
    return None


class OracleProvisioner:
    """An Oracle database named by ``OAM_TEST_ORACLE_DSN`` (``user/password@host:port/service``)."""

    name = "oracle"

    def unavailable(self) -> str | None:
        entry = next(e for e in engine_entries() if e.name == self.name)
        if entry.unavailable is not None:
            return entry.unavailable
        if os.environ.get("OAM_TEST_ORACLE_DSN"):
            return None
        runtime = running_container_runtime()
        if runtime is not None:
            return (f"{runtime} runs here, but starting Oracle in it is not automated yet; set "
                    "OAM_TEST_ORACLE_DSN")
        installed = [r for r in CONTAINER_RUNTIMES if shutil.which(r)]
        if installed:
            return (f"{installed[0]} is installed but its daemon does not answer; set "
                    "OAM_TEST_ORACLE_DSN")
        return "set OAM_TEST_ORACLE_DSN (no container runtime here)"

    @contextmanager
    def database(self) -> Iterator[oracledb.ConnectionPool]:
        """A pool on the database as the store owner (the engine takes pools, not URLs)."""
        reason = self.unavailable()
        if reason is not None:
            raise RuntimeError(f"Oracle is not reachable: {reason}")
        user, password, dsn = parse_dsn(os.environ["OAM_TEST_ORACLE_DSN"])
        pool = oracledb.create_pool(user=user, password=password, dsn=dsn, min=1, max=4,
                                    increment=1)
        try:
            yield pool
        finally:
            pool.close(force=True)


def parse_dsn(value: str) -> tuple[str, str, str]:
    """``user/password@connect_string`` as its three parts (the form SQL*Plus takes)."""
    credentials, separator, dsn = value.partition("@")
    user, slash, password = credentials.partition("/")
    if not (separator and slash and user and password and dsn):
        raise RuntimeError("OAM_TEST_ORACLE_DSN must be user/password@host:port/service")
    return user, password, dsn


ORACLE = OracleProvisioner()
