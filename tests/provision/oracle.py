"""Oracle AI Database 26ai: ``OAM_TEST_ORACLE_DSN``, or a container when a runtime exists.

Reachable only once the Oracle engine is available in this release (the engine registry says
so) and a database is: then every behavioural test also runs on Oracle.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import oracledb
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
