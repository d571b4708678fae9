"""Oracle URLs reach the Oracle engine and its security admin; ``oam-admin`` takes them.

No Oracle database is reachable here: each test drives python-oracledb's real connect and pool
up to a closed local port, and checks the SDK's typed error (or the command's one-line error
and exit status) that comes out. The statements past that point are pinned by
``tests/test_oracle_security_admin.py``.
"""

from __future__ import annotations

import pytest
from cli_harness import Cli, cli  # noqa: F401  (the fixture)
from local_ports import closed_port
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import identities
from oracleagentmemory.core.deepsec.admin import connect_admin
from oracleagentmemory.engines.oracle.engine import OracleEngine
from oracleagentmemory.engines.oracle.security_admin import OracleSecurityAdmin
from oracleagentmemory.engines.postgres.security_admin import PostgresSecurityAdmin
from oracleagentmemory.engines.registry import entry_for, make_engine
from oracleagentmemory.engines.security_admin import _IMPLEMENTATIONS, security_admin_for
from oracleagentmemory.errors import (
    DatabaseUnavailableError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)

PASSWORD_ENV = "OAM_ORACLE_PASSWORD"




@pytest.fixture
def oracle_url(monkeypatch: pytest.MonkeyPatch) -> str:
    """A plain-TCP Oracle URL of a closed local port; its password in the environment."""
    monkeypatch.setenv(PASSWORD_ENV, "not-used-anywhere")
    return f"oracle+tcp://oam_policy_admin@127.0.0.1:{closed_port()}/FREEPDB1"


# --- the SDK -------------------------------------------------------------------------------------
def test_the_oracle_admin_is_registered_beside_postgresql() -> None:
    assert set(_IMPLEMENTATIONS) == {"postgresql", "oracle"}


def test_an_oracle_url_reaches_the_oracle_admin_and_reports_the_database_unavailable(
        oracle_url: str) -> None:
    with pytest.raises(DatabaseUnavailableError) as raised:
        security_admin_for(oracle_url)
    assert "DPY-6005" in str(raised.value)
    with pytest.raises(DatabaseUnavailableError):  # the admin API's own entry point too
        connect_admin(oracle_url)
    with pytest.raises(DatabaseUnavailableError):
        identities.list_end_users(oracle_url)


def test_each_oracle_scheme_is_the_oracle_engines(oracle_url: str) -> None:
    for scheme in ("oracle", "oracle+tcps", "oracle+tcp"):
        assert entry_for(f"{scheme}://u@db.example.com/FREEPDB1").name == "oracle"
    assert entry_for("postgresql://u@localhost/db").name == "postgresql"  # positive control


def test_an_oracle_url_without_a_password_is_refused_before_connecting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    with pytest.raises(InvalidArgumentError, match=PASSWORD_ENV):
        security_admin_for(f"oracle+tcp://oam_policy_admin@127.0.0.1:{closed_port()}/S")


def test_what_is_neither_engines_names_both_kinds_of_connection() -> None:
    with pytest.raises(InvalidArgumentTypeError) as raised:
        security_admin_for(object())
    assert "oracle://" in str(raised.value) and "postgresql://" in str(raised.value)
    with pytest.raises(InvalidArgumentTypeError):
        OracleSecurityAdmin.for_connection("postgresql://u@localhost/db")
    with pytest.raises(InvalidArgumentTypeError):
        PostgresSecurityAdmin.for_connection(object())


def test_the_engine_opens_and_closes_its_own_pool_from_an_oracle_url(oracle_url: str) -> None:
    engine = make_engine(oracle_url)
    assert isinstance(engine, OracleEngine)
    pool = engine._pool
    assert pool is not None and pool.opened == 0  # no connection until an operation needs one
    engine.close()
    with pytest.raises(Exception, match="DPY-1002"):  # the engine's own pool is closed
        pool.acquire()


def test_the_engine_takes_oracle_urls_and_needs_their_password(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert OracleEngine.accepts("oracle://u@db.example.com/FREEPDB1")
    assert not OracleEngine.accepts("postgresql://u@localhost/db")
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    with pytest.raises(InvalidArgumentError, match=PASSWORD_ENV):
        make_engine(f"oracle+tcp://oam_owner@127.0.0.1:{closed_port()}/FREEPDB1")


def test_a_store_on_an_oracle_url_reaches_the_engine_and_reports_the_database_unavailable(
        oracle_url: str) -> None:
    with pytest.raises(DatabaseUnavailableError):
        OracleDBMemoryStore(None, oracle_url, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                            memory_store_id="probe", schema_owner="oam_owner")


# --- oam-admin -----------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [
    ("end-user", "list"), ("check",), ("store", "check", "--memory-store-id", "demo"),
    ("policies", "list", "--memory-store-id", "demo", "--schema-owner", "oam_owner"),
    ("grants", "list", "--memory-store-id", "demo", "--schema-owner", "oam_owner"),
    ("purge-expired", "--memory-store-id", "demo"),
])
def test_oam_admin_on_an_unreachable_oracle_url_reports_it_once(
        cli: Cli, oracle_url: str, command: tuple[str, ...]) -> None:  # noqa: F811
    result = cli("--url", oracle_url, *command)
    assert result.code == 1, result.err
    errors = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the database is unavailable" in errors[0], result.err
    assert "oam-admin db start" not in result.err  # not the embedded PostgreSQL's hint


@pytest.mark.parametrize("command", [("application", "list"), ("idp", "list"),
                                     ("application", "show", "--name", "gw")])
def test_application_and_idp_on_oracle_are_usage_errors_saying_what_to_do(
        cli: Cli, oracle_url: str, command: tuple[str, ...]) -> None:  # noqa: F811
    result = cli("--url", oracle_url, *command)
    assert result.code == 2
    assert "no Oracle counterpart" in result.err and "deploy/oracle/README.md" in result.err
    assert "database is unavailable" not in result.err  # refused before connecting


def test_application_on_oracle_from_the_environment_url_is_refused_too(
        cli: Cli, oracle_url: str) -> None:  # noqa: F811
    result = cli("application", "list", env={"OAM_ADMIN_URL": oracle_url})
    assert result.code == 2 and "no Oracle counterpart" in result.err


def test_oam_admin_takes_the_oracle_password_only_from_the_environment(
        cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    port = closed_port()
    result = cli("--url", f"oracle+tcp://oam_policy_admin:secret@127.0.0.1:{port}/S",
                 "end-user", "list", env={PASSWORD_ENV: "x"})
    assert result.code == 2 and "must not contain a password" in result.err
    assert "secret" not in result.err
    result = cli("end-user", "list", env={
        "OAM_ADMIN_URL": f"oracle+tcp://oam_policy_admin:secret@127.0.0.1:{port}/S"})
    assert result.code == 2 and PASSWORD_ENV in result.err
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    result = cli("--url", f"oracle+tcp://oam_policy_admin@127.0.0.1:{port}/S", "end-user",
                 "list")
    assert result.code == 2 and f"set {PASSWORD_ENV}" in result.err


def test_the_url_help_names_both_engines(cli: Cli) -> None:  # noqa: F811
    result = cli("end-user", "list", "--help")
    assert result.code == 0
    assert "oracle://" in result.out and "postgresql://" in result.out
    assert "OAM_ORACLE_PASSWORD" in result.out
