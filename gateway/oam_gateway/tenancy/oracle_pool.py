"""An Oracle tenant's connection pool arguments, from the tenant's settings.

The pool is homogeneous (every connection is the runtime pool account) and logs in either with
the pool account's password (``oracle.user``) or with the gateway's database access token,
given as python-oracledb's ``access_token`` *callable* so that the pool can grow after the first
token has expired. The driver's side (the arguments' names, the pool itself) is the Oracle
engine's: :mod:`oracleagentmemory.engines.oracle.worker_pool`.

Not run against a live database here: :func:`pool_arguments` is unit-tested (and bound to the
installed ``oracledb.create_pool`` signature).
"""

from __future__ import annotations

from typing import Any

from oracleagentmemory.engines.oracle import worker_pool
from oracleagentmemory.engines.oracle.worker_pool import AccessTokenCallback

from oam_gateway.config.tenant_settings import TenantSettings

__all__ = ["pool_arguments"]


def pool_arguments(tenant: TenantSettings, access_token: AccessTokenCallback,
                   call_timeout_seconds: float | None = None) -> dict[str, Any]:
    """The keyword arguments of ``oracledb.create_pool`` for ``tenant`` (an Oracle tenant);
    ``call_timeout_seconds`` bounds each database round trip (``None``: unbounded). A request
    waits at most ``pool_timeout_seconds`` for a connection, then fails (503).

    Holds secrets (the pool password, the wallet password): never log the result.
    """
    oracle = tenant.oracle
    if oracle is None:
        raise ValueError("pool_arguments needs an Oracle tenant (its oracle table)")
    return worker_pool.pool_arguments(
        dsn=oracle.dsn, min_size=tenant.pool_min_size, max_size=tenant.pool_max_size,
        increment=oracle.pool_increment, timeout_seconds=tenant.pool_timeout_seconds,
        config_dir=oracle.config_dir, wallet_location=oracle.wallet_location,
        wallet_password=oracle.wallet_password_value(), user=oracle.user,
        password=oracle.password_value() if oracle.user is not None else None,
        access_token=access_token, call_timeout_seconds=call_timeout_seconds)
