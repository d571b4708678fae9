"""Oracle AI Database 26ai: ``OAM_TEST_ORACLE_DSN``, or a container when a runtime exists.

Reachable only once the Oracle engine is available in this release (the engine registry says
so) and a database is: then every behavioural test also runs on Oracle.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from oracleagentmemory.engines.registry import engine_entries

CONTAINER_RUNTIMES = ("docker", "podman")


class OracleProvisioner:
    """An Oracle database named by ``OAM_TEST_ORACLE_DSN`` (``user/password@host:port/service``)."""

    name = "oracle"

    def unavailable(self) -> str | None:
        entry = next(e for e in engine_entries() if e.name == self.name)
        if entry.unavailable is not None:
            return entry.unavailable
        if os.environ.get("OAM_TEST_ORACLE_DSN"):
            return None
        if any(shutil.which(runtime) for runtime in CONTAINER_RUNTIMES):
            return "a container runtime exists, but starting Oracle in it is not automated yet"
        return "set OAM_TEST_ORACLE_DSN or install a container runtime"

    @contextmanager
    def database(self) -> Iterator[str]:
        reason = self.unavailable()
        if reason is not None:
            raise RuntimeError(f"Oracle is not reachable: {reason}")
        yield os.environ["OAM_TEST_ORACLE_DSN"]


ORACLE = OracleProvisioner()
