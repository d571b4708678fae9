"""The embedded server authenticates every connection with a password (no ``trust``).

The session's server (``pg_url``, a data directory created by ``embedded.start``) shows what a
new data directory gets; one extra server, created the way older releases did (the wheel's own
``initdb``, which trusts local connections), shows the migration on start.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from dds import set_test_password, url_as
from oracleagentmemory import embedded
from oracleagentmemory.admin_cli._common import url_for_user, url_has_password

external = pytest.mark.skipif(bool(os.environ.get("OAM_TEST_PG_URL")),
                              reason="checks the embedded server, not OAM_TEST_PG_URL")
NO_PASSWORD = "no password supplied"
WRONG_PASSWORD = "password authentication failed for user"


def passfile_of(url: str) -> Path:
    values = parse_qs(urlsplit(url).query).get("passfile", [])
    assert len(values) == 1, url
    return Path(values[0])


def without_passfile(url: str) -> str:
    parts = urlsplit(url)
    query = "&".join(p for p in parts.query.split("&") if not p.startswith("passfile="))
    return parts._replace(query=query).geturl()


def hba_methods(data_dir: Path) -> list[str]:
    """The method of every rule of ``pg_hba.conf``, and whether any line says ``trust``."""
    rules = [line.split("#", 1)[0].split() for line in
             (data_dir / "pg_hba.conf").read_text().splitlines()]
    rules = [r for r in rules if r]
    assert rules
    assert not [r for r in rules if "trust" in r], rules
    return [r[3] if r[0] == "local" else r[4] for r in rules]


def assert_private_passfile(passfile: Path) -> str:
    """The superuser's password file is the caller's, mode 0600, one libpq line."""
    info = passfile.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert info.st_uid == os.geteuid()
    [line] = passfile.read_text().splitlines()
    host, port, database, user, password = line.split(":")
    assert (host, port, database, user) == ("*", "*", "*", embedded.SUPERUSER)
    assert len(password) >= 32
    return password


def assert_requires_password(url: str, password: str) -> None:
    """``url`` (no password in it) logs in with ``password`` only."""
    assert not url_has_password(url) and "passfile" not in url
    with pytest.raises(psycopg.OperationalError, match=NO_PASSWORD):
        psycopg.connect(url, connect_timeout=10)
    with pytest.raises(psycopg.OperationalError, match=WRONG_PASSWORD):
        psycopg.connect(url, password=password + "x", connect_timeout=10)
    with psycopg.connect(url, password=password, connect_timeout=10) as conn:  # positive control
        assert conn.execute("SELECT 1").fetchone() == (1,)


# --- a new data directory (the session's server) ---------------------------------------------
@external
def test_superuser_needs_its_password(pg_url: str) -> None:
    password = assert_private_passfile(passfile_of(pg_url))
    assert_requires_password(without_passfile(pg_url), password)
    with psycopg.connect(pg_url) as conn:  # libpq reads the password from passfile=
        assert conn.execute("SELECT current_user").fetchone() == (embedded.SUPERUSER,)


@external
def test_runtime_login_needs_its_password(pg_url: str) -> None:
    """A login like the ones ``oam-admin runtime-login create`` makes (SCRAM password)."""
    login = f"oam_test_auth_{secrets.token_hex(3)}"
    password = secrets.token_urlsafe(24)
    with psycopg.connect(pg_url, autocommit=True) as su:
        su.execute(psycopg.sql.SQL("CREATE ROLE {} LOGIN NOINHERIT PASSWORD {}").format(
            psycopg.sql.Identifier(login), psycopg.sql.Literal(password)))
    try:
        assert_requires_password(url_for_user(pg_url, login), password)
        with pytest.raises(psycopg.OperationalError, match=NO_PASSWORD):  # not the admin's file
            psycopg.connect(url_for_user(pg_url, login) + f"&passfile={passfile_of(pg_url)}",
                            connect_timeout=10)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as su:
            su.execute(psycopg.sql.SQL("DROP ROLE {}").format(psycopg.sql.Identifier(login)))


@external
def test_test_roles_log_in_with_the_test_password(pg_url: str) -> None:
    """``dds.url_as`` authenticates as a role that has :data:`dds.TEST_PASSWORD` (and only so)."""
    login = f"oam_test_auth_{secrets.token_hex(3)}"
    with psycopg.connect(pg_url, autocommit=True) as su:
        su.execute(psycopg.sql.SQL("CREATE ROLE {} LOGIN").format(psycopg.sql.Identifier(login)))
        try:
            assert not url_has_password(url_as(pg_url, login))
            with pytest.raises(psycopg.OperationalError, match=WRONG_PASSWORD):
                psycopg.connect(url_as(pg_url, login), connect_timeout=10)
            set_test_password(su, login)
            with psycopg.connect(url_as(pg_url, login), connect_timeout=10) as conn:
                assert conn.execute("SELECT current_user").fetchone() == (login,)
        finally:
            su.execute(psycopg.sql.SQL("DROP ROLE {}").format(psycopg.sql.Identifier(login)))


@external
def test_new_data_directory_has_no_trust_rule(pg_url: str) -> None:
    data_dir = passfile_of(pg_url).parent
    assert passfile_of(pg_url) == embedded.admin_passfile(data_dir)
    assert set(hba_methods(data_dir)) == {"scram-sha-256"}
    with psycopg.connect(pg_url) as conn:
        loaded = conn.execute("SELECT DISTINCT auth_method, error FROM pg_hba_file_rules"
                              ).fetchall()
        assert loaded == [("scram-sha-256", None)]
        assert conn.execute("SHOW password_encryption").fetchone() == ("scram-sha-256",)


@external
def test_printed_urls_carry_no_password(pg_url: str) -> None:
    data_dir = passfile_of(pg_url).parent
    assert embedded.url(data_dir) == pg_url
    assert not url_has_password(pg_url) and urlsplit(pg_url).password is None
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OAM_")}
    printed = {}
    for args in ((), ("--user", "support_rt")):
        proc = subprocess.run([sys.executable, "-m", "oracleagentmemory.admin_cli.main", "db",
                               "url", "--data-dir", str(data_dir), *args],
                              capture_output=True, text=True, env=environment, timeout=120)
        assert proc.returncode == 0, proc.stderr
        printed[args] = proc.stdout.strip()
    password = passfile_of(pg_url).read_text().split(":")[-1].strip()
    for url in printed.values():
        assert not url_has_password(url) and password not in url
    assert printed[()] == pg_url
    runtime_url = printed[("--user", "support_rt")]
    assert urlsplit(runtime_url).username == "support_rt"
    assert "passfile" not in runtime_url


# --- a data directory of an older release: migrated on start (one extra server) --------------
@pytest.fixture(scope="module")
def trusting_data_dir() -> Iterator[Path]:
    """A data directory initialised and started by the wheel alone (``initdb --auth=trust``)."""
    parent = Path(tempfile.mkdtemp(prefix="oam-test-trust-"))
    data_dir = parent / "data"
    try:
        server = embedded._wheel().get_server(data_dir, cleanup_mode=None)
        with psycopg.connect(server.get_uri(), connect_timeout=10) as conn:  # trusted: no password
            assert conn.execute("SELECT 1").fetchone() == (1,)
            conn.execute("CREATE ROLE oam_test_old_login LOGIN")  # a login without a password
        yield data_dir
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(parent, ignore_errors=True)


def test_trusting_data_directory_is_migrated_on_start(trusting_data_dir: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    assert "trust" in hba_methods_raw(trusting_data_dir)
    assert not embedded.admin_passfile(trusting_data_dir).exists()
    with caplog.at_level(logging.WARNING, logger="oracleagentmemory.embedded"):
        server = embedded.start(trusting_data_dir)
    assert any("migrating it to password authentication" in r.getMessage()
               for r in caplog.records)
    assert server.passfile == embedded.admin_passfile(trusting_data_dir)
    assert passfile_of(server.url) == server.passfile
    password = assert_private_passfile(server.passfile)
    assert set(hba_methods(trusting_data_dir)) == {"scram-sha-256"}
    assert_requires_password(without_passfile(server.url), password)
    with pytest.raises(psycopg.OperationalError, match=NO_PASSWORD):
        psycopg.connect(url_for_user(server.url, "oam_test_old_login"), connect_timeout=10)
    with psycopg.connect(server.url) as conn:
        assert conn.execute("SELECT extname FROM pg_extension WHERE extname = 'vector'"
                            ).fetchone() == ("vector",)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="oracleagentmemory.embedded"):
        again = embedded.start(trusting_data_dir)  # migrated once: same password, no warning
    assert again.url == server.url
    assert assert_private_passfile(again.passfile) == password
    assert not [r for r in caplog.records if "migrat" in r.getMessage()]


def hba_methods_raw(data_dir: Path) -> list[str]:
    """Every word of the rules of ``pg_hba.conf`` (comments left out)."""
    return [word for line in (data_dir / "pg_hba.conf").read_text().splitlines()
            for word in line.split("#", 1)[0].split()]
