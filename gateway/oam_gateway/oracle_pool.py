"""An Oracle tenant's connection pool: python-oracledb (thin mode) ``create_pool`` arguments
from the tenant's settings.

The pool is homogeneous (every connection is the runtime pool account) and logs in either with
the pool account's password (``oracle.user``) or with the gateway's database access token,
given as python-oracledb's ``access_token`` *callable* so that the pool can grow after the first
token has expired (python-oracledb calls it with ``refresh=True`` then). TLS comes from the DSN
(``tcps://``), the PEM wallet (``wallet_location``, ``wallet_password``) and ``config_dir``.

Not run against a live database here: :func:`pool_arguments` is unit-tested (and bound to the
installed ``oracledb.create_pool`` signature); :func:`create_oracle_pool` only passes them on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import oracledb

from oam_gateway.tenant_settings import TenantSettings

AccessTokenCallback = Callable[[bool], str]
"""python-oracledb's ``access_token`` callable: ``callback(refresh) -> token``."""


class CallTimeout:
    """A pool ``session_callback`` bounding every round trip of each new session to
    ``milliseconds`` (``Connection.call_timeout``): a request the gateway has given up on
    (its worker thread cannot be cancelled) ends at its next database wait, with DPY-4024."""

    def __init__(self, milliseconds: int) -> None:
        self.milliseconds = milliseconds

    def __call__(self, connection: oracledb.Connection, requested_tag: str | None) -> None:
        connection.call_timeout = self.milliseconds


def pool_arguments(tenant: TenantSettings, access_token: AccessTokenCallback,
                   call_timeout_seconds: float | None = None) -> dict[str, Any]:
    """The keyword arguments of ``oracledb.create_pool`` for ``tenant`` (an Oracle tenant);
    ``call_timeout_seconds`` bounds each database round trip (``None``: unbounded).

    Holds secrets (the pool password, the wallet password): never log the result.
    """
    oracle = tenant.oracle
    if oracle is None:
        raise ValueError("pool_arguments needs an Oracle tenant (its oracle table)")
    arguments: dict[str, Any] = {
        "dsn": oracle.dsn,
        "min": tenant.pool_min_size,
        "max": tenant.pool_max_size,
        "increment": oracle.pool_increment,
        "homogeneous": True,
        # A request waits at most pool_timeout_seconds for a connection, then fails
        # (the SDK reports it as the database being unavailable: 503).
        "getmode": oracledb.POOL_GETMODE_TIMEDWAIT,
        "wait_timeout": max(1, math.ceil(tenant.pool_timeout_seconds * 1000)),
        "tcp_connect_timeout": tenant.pool_timeout_seconds,
    }
    if oracle.config_dir is not None:
        arguments["config_dir"] = str(oracle.config_dir)
    if oracle.wallet_location is not None:
        arguments["wallet_location"] = str(oracle.wallet_location)
    wallet_password = oracle.wallet_password_value()
    if wallet_password is not None:
        arguments["wallet_password"] = wallet_password
    if oracle.user is not None:
        arguments["user"] = oracle.user
        arguments["password"] = oracle.password_value()
    else:
        arguments["access_token"] = access_token
    if call_timeout_seconds is not None:
        arguments["session_callback"] = CallTimeout(
            max(1, math.ceil(call_timeout_seconds * 1000)))
    return arguments


def create_oracle_pool(arguments: dict[str, Any]) -> oracledb.ConnectionPool:
    """A thin-mode pool made with ``arguments`` (from :func:`pool_arguments`)."""
    return oracledb.create_pool(**arguments)
