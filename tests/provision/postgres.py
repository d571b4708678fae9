"""PostgreSQL 18 + pgvector: the embedded server (always reachable), or ``OAM_TEST_PG_URL``."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from oracleagentmemory import embedded


class PostgresProvisioner:
    """The embedded server, started once per test session in a private directory."""

    name = "postgresql"

    def unavailable(self) -> str | None:
        return None

    @contextmanager
    def database(self) -> Iterator[str]:
        """The superuser's URL. The server requires passwords; the URL carries none: its
        ``passfile=`` names the superuser's password file in the data directory.

        The data directory is a private temporary directory outside pytest's rotating base
        directory, so concurrent pytest runs cannot remove it under a running server.
        """
        external = os.environ.get("OAM_TEST_PG_URL")
        if external:
            yield external
            return
        parent = Path(tempfile.mkdtemp(prefix="oam-test-pg-"))
        data_dir = parent / "data"
        server = embedded.start(data_dir)
        try:
            yield server.url
        finally:
            embedded.stop(data_dir)
            shutil.rmtree(parent, ignore_errors=True)


POSTGRES = PostgresProvisioner()
