"""``oracle://`` URLs: how the SDK and ``oam-admin`` name an Oracle database and a login.

Forms::

    oracle://USER@HOST[:PORT]/SERVICE[?PARAMS]       TLS (Easy Connect ``tcps://``)
    oracle+tcp://USER@HOST[:PORT]/SERVICE[?PARAMS]   plain TCP (a development database;
                                                     end-user contexts refuse it, DPY-2073)

``PARAMS`` are python-oracledb's Easy Connect Plus parameters, passed on unchanged
(``wallet_location``, ``ssl_server_dn_match``, ``ssl_server_cert_dn``, ``retry_count`` ...).
The password is ``USER:PASSWORD@`` in the URL (URL-encoded) or, better, the environment
variable ``OAM_ORACLE_PASSWORD``; the URL's user is folded as Oracle folds an unquoted name.
The default port is python-oracledb's (1521).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import oracledb

from oracleagentmemory.engines.oracle.driver_errors import translate
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

SCHEMES = ("oracle", "oracle+tcps", "oracle+tcp")
"""The URL schemes of the Oracle engine."""

PASSWORD_ENV = "OAM_ORACLE_PASSWORD"
"""The environment variable holding the password when the URL has none."""

CONNECT_TIMEOUT_SECONDS = 10.0
"""How long opening one connection may take before the database counts as unavailable."""


@dataclass(frozen=True)
class OracleUrl:
    """An ``oracle://`` URL taken apart: the login, the Easy Connect DSN and the password."""

    user: str
    dsn: str
    password: str | None = field(default=None, repr=False)

    def connect_arguments(self, environ: Mapping[str, str] | None = None) -> dict[str, object]:
        """``oracledb.connect`` / ``create_pool`` keyword arguments (holds the password: never
        log them). The password comes from the URL, else ``OAM_ORACLE_PASSWORD``."""
        env = os.environ if environ is None else environ
        password = self.password if self.password is not None else env.get(PASSWORD_ENV)
        if not password:
            raise InvalidArgumentError(
                f"no password for Oracle login {self.user}: set {PASSWORD_ENV}", argument="url")
        return {"user": self.user, "password": password, "dsn": self.dsn,
                "tcp_connect_timeout": CONNECT_TIMEOUT_SECONDS}


def is_oracle_url(value: object) -> bool:
    """Whether ``value`` is a string with one of :data:`SCHEMES`."""
    return isinstance(value, str) and value.split("://", 1)[0].lower() in SCHEMES and (
        "://" in value)


def parse_oracle_url(url: str) -> OracleUrl:
    """Take ``url`` apart; :class:`~oracleagentmemory.errors.InvalidArgumentError` when it is
    not one of the forms above (the message never repeats a password)."""
    if not is_oracle_url(url):
        raise InvalidArgumentError(
            "an Oracle URL starts with oracle:// (TLS) or oracle+tcp://", argument="url")
    scheme = url.split("://", 1)[0].lower()
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise InvalidArgumentError(f"not a valid Oracle URL: {exc}", argument="url") from None
    if not parts.username:
        raise InvalidArgumentError("an Oracle URL names its login: oracle://USER@HOST/SERVICE",
                                   argument="url")
    service = parts.path.lstrip("/")
    if not host or not service or "/" in service:
        raise InvalidArgumentError(
            "an Oracle URL names a host and one service: oracle://USER@HOST[:PORT]/SERVICE",
            argument="url")
    protocol = "tcp" if scheme == "oracle+tcp" else "tcps"
    address = f"[{host}]" if ":" in host else host
    dsn = f"{protocol}://{address}{'' if port is None else f':{port}'}/{service}"
    if parts.query:
        dsn += f"?{parts.query}"
    password = None if parts.password is None else unquote(parts.password)
    return OracleUrl(user=unquote(parts.username), dsn=dsn, password=password)


def connect(url: str, environ: Mapping[str, str] | None = None) -> oracledb.Connection:
    """Open one connection for ``url`` (bounded by :data:`CONNECT_TIMEOUT_SECONDS`); a refused
    login or an unreachable database raises the SDK's typed error."""
    arguments = parse_oracle_url(url).connect_arguments(environ)
    try:
        return oracledb.connect(**arguments)
    except oracledb.Error as exc:
        raise translate(exc) from exc


def admin_connection(source: object, identity: str) -> tuple[oracledb.Connection, bool]:
    """The connection an admin object works on, and whether it owns it: ``source`` itself (an
    ``oracledb.Connection``, left open), or one opened by :func:`connect` for an ``oracle://``
    URL (the caller closes it). ``identity`` names who must connect, for the error."""
    if is_oracle_url(source):
        assert isinstance(source, str)
        return connect(source), True
    if isinstance(source, oracledb.Connection):
        return source, False
    raise InvalidArgumentTypeError(
        f"connection must be an oracledb Connection or an oracle:// URL of {identity}, got "
        f"{type(source).__name__}", argument="connection")
