"""An Oracle tenant's runtime: its python-oracledb pool, its client, and its callers' end-user
security contexts (issue 12, item 5).

Each request runs inside ``oracledb.create_end_user_security_context(database_access_token,
end_user_identity=...)``: the database access token is the gateway's own (client credentials,
:mod:`oam_gateway.tenancy.db_access_token`); the end user is

- ``end_user_mode = "token"``: the caller's own bearer token (OCI IAM or Entra ID), which the
  database verifies again and takes the user from (``sub`` / ``upn``); the caller's groups
  mapped by ``group_roles`` ask for data roles;
- ``end_user_mode = "local"``: the local end user named by the caller's subject, as the database
  stores an unquoted name (upper case: :func:`database_user_name`), with no key and no data
  roles (the Deep Data Security Guide rejects data roles with a local identity).

The caller's ``user_name`` (the rows' ``user_id``) is that same database name
(:func:`database_user_name`, applied by :mod:`oam_gateway.auth.verifier`).

The SDK is synchronous and python-oracledb's thin-mode waits block, so each SDK call runs in a
worker thread (:class:`~oracleagentmemory.engines.oracle.worker_pool.WorkerThreadPool`). Not run
against a live database here: no Oracle database is reachable where it was written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from oracleagentmemory.engines.oracle.context import local_end_user_name
from oracleagentmemory.engines.oracle.worker_pool import (
    EndUserIdentity,
    WorkerThreadPool,
    create_pool,
    end_user_context,
)
from oracleagentmemory.errors import InvalidArgumentError

from oam_gateway.config.tenant_settings import TenantSettings
from oam_gateway.tenancy.context_cache import ContextCache
from oam_gateway.tenancy.db_access_token import ClientCredentialsTokenProvider
from oam_gateway.tenancy.oracle_pool import pool_arguments
from oam_gateway.tenancy.principal import Principal
from oam_gateway.tenancy.tenant_runtime import TenantRuntime

__all__ = ["CALL_TIMEOUT_GRACE_SECONDS", "OracleContexts", "database_user_name",
           "oracle_runtime"]

CALL_TIMEOUT_GRACE_SECONDS = 1.0
"""How much longer than the request timeout one database round trip may take."""

PoolFactory = Callable[[dict[str, Any]], Any]


def database_user_name(settings: TenantSettings, subject: str) -> str:
    """The name an Oracle tenant's database gives the caller whose user claim is ``subject``
    (what ``ORA_END_USER_CONTEXT.username`` returns, and so what the rows' ``user_id`` holds):
    the local end user's stored name in ``local`` mode (unquoted names upper-cased), the claim
    itself in ``token`` mode (the database takes ``sub`` from an OCI IAM token and ``upn`` from
    an Entra ID one: set ``user_claim`` to match). Raises :class:`InvalidArgumentError` for a
    subject that is no Oracle end-user name."""
    if settings.end_user_mode == "local":
        return local_end_user_name(subject)
    return subject


class OracleContexts:
    """An Oracle tenant's callers' end-user security contexts, made with the gateway's database
    access token from ``tokens`` and reused through ``cache`` (keyed by that token too, and
    cleared when it changes: a context never outlives the token it holds)."""

    def __init__(self, settings: TenantSettings, tokens: ClientCredentialsTokenProvider,
                 cache: ContextCache | None = None) -> None:
        self.settings = settings
        self.tokens = tokens
        self._cache = cache or ContextCache()
        self._token: str | None = None

    def end_user_identity(self, principal: Principal) -> EndUserIdentity:
        """``principal`` as python-oracledb's ``end_user_identity``: the caller's token, or
        ``(local end-user name, None)``."""
        if self.settings.end_user_mode == "token":
            if not principal.token:
                raise InvalidArgumentError("token mode needs the caller's bearer token",
                                           argument="token")
            return principal.token
        return (database_user_name(self.settings, principal.subject), None)

    def data_roles(self, principal: Principal) -> list[str] | None:
        """The data roles asked for: ``group_roles`` of the caller's groups (token mode)."""
        if self.settings.end_user_mode != "token":
            return None
        roles = sorted({role for group in principal.groups
                        for role in self.settings.group_roles.get(group, ())})
        return roles or None

    def security_context(self, principal: Principal, database_access_token: str) -> Any:
        """The end-user security context of ``principal`` with ``database_access_token``; the
        same caller gets the same context while the token and the cache keep it."""
        if database_access_token != self._token:  # a new token: the old contexts go
            self._cache.clear()
            self._token = database_access_token
        identity = self.end_user_identity(principal)
        key = (database_access_token, identity if isinstance(identity, str) else identity[0],
               principal.groups)
        return self._cache.get(key, lambda: end_user_context(
            database_access_token, identity, self.data_roles(principal)))

    async def context_for(self, principal: Principal) -> Any:
        """The caller's context; a due database access token is fetched in a worker thread,
        never on the event loop."""
        token = self.tokens.peek()
        if token is None:
            token = await asyncio.to_thread(self.tokens.token)
        return self.security_context(principal, token)


def oracle_runtime(name: str, settings: TenantSettings, *,
                   tokens: ClientCredentialsTokenProvider | None = None,
                   pool_factory: PoolFactory = create_pool,
                   transaction_timeout_seconds: float | None = None) -> TenantRuntime:
    """The runtime of Oracle tenant ``name``: a worker-thread pool made by ``pool_factory`` from
    the tenant's settings (:func:`~oam_gateway.tenancy.oracle_pool.pool_arguments`) when first used.

    With ``transaction_timeout_seconds``, each database round trip may take that plus
    :data:`CALL_TIMEOUT_GRACE_SECONDS` at most.
    """
    if settings.oracle is None:
        raise InvalidArgumentError(f"tenant {name!r} names no Oracle database",
                                   argument="oracle")
    provider = tokens or ClientCredentialsTokenProvider(settings.oracle.access_token)
    call_timeout_seconds = (None if transaction_timeout_seconds is None
                            else transaction_timeout_seconds + CALL_TIMEOUT_GRACE_SECONDS)
    engine = WorkerThreadPool(
        lambda: pool_arguments(settings, provider.pool_callback, call_timeout_seconds),
        name=f"tenant {name}", factory=pool_factory)
    return TenantRuntime(name, settings, engine, OracleContexts(settings, provider))
