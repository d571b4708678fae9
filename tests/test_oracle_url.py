"""``oracle://`` URLs: parsing into python-oracledb's connect arguments, and a real connect."""

from __future__ import annotations

import oracledb
import pytest
from local_ports import closed_port
from oracleagentmemory.engines.oracle.url import (
    PASSWORD_ENV,
    admin_connection,
    connect,
    is_oracle_url,
    parse_oracle_url,
)
from oracleagentmemory.errors import (
    DatabaseUnavailableError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)


def test_tls_url_becomes_a_tcps_easy_connect_dsn_that_oracledb_parses() -> None:
    url = parse_oracle_url(
        "oracle://oam_admin@db.example.com:2484/memorypdb?wallet_location=/w&ssl_server_dn_match=true")
    assert url.user == "oam_admin" and url.password is None
    params = oracledb.ConnectParams()
    params.parse_connect_string(url.dsn)
    assert (params.protocol, params.host, params.port, params.service_name) == (
        "tcps", "db.example.com", 2484, "memorypdb")
    assert params.wallet_location == "/w" and params.ssl_server_dn_match is True


def test_plain_tcp_only_when_asked_and_default_port_is_the_drivers() -> None:
    url = parse_oracle_url("oracle+tcp://system@localhost/FREEPDB1")
    params = oracledb.ConnectParams()
    params.parse_connect_string(url.dsn)
    assert (params.protocol, params.port, params.service_name) == ("tcp", 1521, "FREEPDB1")
    assert parse_oracle_url("oracle+tcps://u@h/s").dsn.startswith("tcps://")


def test_password_from_url_is_decoded_and_never_in_repr() -> None:
    url = parse_oracle_url("oracle://alice:p%40ss%3Aword@h:1522/s")
    assert url.password == "p@ss:word"
    assert "p@ss" not in repr(url)
    assert url.connect_arguments({})["password"] == "p@ss:word"


def test_password_from_environment_else_a_typed_error() -> None:
    url = parse_oracle_url("oracle://alice@h/s")
    assert url.connect_arguments({PASSWORD_ENV: "secret"})["password"] == "secret"
    with pytest.raises(InvalidArgumentError, match=PASSWORD_ENV):
        url.connect_arguments({})


@pytest.mark.parametrize("bad", [
    "postgresql://u@h/db", "oracle://h/s", "oracle://u@/s", "oracle://u@h", "oracle://u@h/a/b",
    "oracle://u@h:notaport/s",
])
def test_malformed_urls_are_refused(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        parse_oracle_url(bad)


def test_is_oracle_url() -> None:
    assert is_oracle_url("oracle://u@h/s") and is_oracle_url("ORACLE+TCP://u@h/s")
    assert not is_oracle_url("postgresql://u@h/db") and not is_oracle_url(None)


def test_connect_to_a_closed_port_is_database_unavailable() -> None:
    with pytest.raises(DatabaseUnavailableError):
        connect(f"oracle+tcp://alice@127.0.0.1:{closed_port()}/FREEPDB1", {PASSWORD_ENV: "x"})


def test_an_admin_connection_is_an_oracledb_connection_or_an_oracle_url(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidArgumentTypeError, match="oracle:// URL of the store's owner"):
        admin_connection("postgresql://owner@localhost/db", "the store's owner")
    with pytest.raises(InvalidArgumentTypeError, match="got int"):
        admin_connection(7, "the store's owner")
    monkeypatch.setenv(PASSWORD_ENV, "x")
    with pytest.raises(DatabaseUnavailableError):  # positive control: a URL is connected to
        admin_connection(f"oracle+tcp://owner@127.0.0.1:{closed_port()}/FREEPDB1", "the owner")
