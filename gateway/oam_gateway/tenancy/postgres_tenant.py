"""A PostgreSQL tenant: its pool runs the SDK on the event loop, its callers' contexts are signed
with the tenant's application token.

The pool belongs to the tenant's runtime login, which holds no table privilege of its own:
every statement runs inside the caller's end-user context, and the database's row security
decides what it sees.
"""

from __future__ import annotations

from typing import Any

from oracleagentmemory.core.deepsec import (
    IdentityProviderUser,
    create_end_user_security_context,
)
from oracleagentmemory.engines.postgres.event_loop_pool import EventLoopPool
from oracleagentmemory.errors import InvalidArgumentError

from oam_gateway.config.tenant_settings import TenantSettings
from oam_gateway.tenancy.context_cache import ContextCache
from oam_gateway.tenancy.principal import Principal
from oam_gateway.tenancy.tenant_runtime import TenantRuntime

__all__ = ["TRANSACTION_TIMEOUT_GRACE_SECONDS", "PostgresContexts", "postgres_runtime"]

TRANSACTION_TIMEOUT_GRACE_SECONDS = 1.0
"""How much longer than the request timeout the database lets a transaction run."""


class PostgresContexts:
    """A PostgreSQL tenant's callers' end-user security contexts, reused through ``cache``."""

    def __init__(self, name: str, settings: TenantSettings,
                 cache: ContextCache | None = None) -> None:
        app_token = settings.application_token()
        if app_token is None:
            raise InvalidArgumentError(
                f"tenant {name!r} has no application token (app_token or app_token_file)",
                argument="app_token")
        self._app_token = app_token
        self.settings = settings
        self._cache = cache or ContextCache()

    def security_context(self, principal: Principal) -> Any:
        """The end-user security context of ``principal`` for this tenant's database.

        The same caller (subject and groups; in token mode, the same token) gets the same
        context while the cache keeps it: its signed assertion is then one the database has
        verified before, which saves the verification on every request.
        """
        key = (principal.token if self.settings.end_user_mode == "token" else "",
               principal.subject, principal.groups)
        return self._cache.get(key, lambda: self._new_context(principal))

    async def context_for(self, principal: Principal) -> Any:
        """:meth:`security_context` (the runtime's entry point, shared with Oracle tenants)."""
        return self.security_context(principal)

    def _new_context(self, principal: Principal) -> Any:
        mode = self.settings.end_user_mode
        identity: Any
        if mode == "token":
            identity = principal.token
        elif mode == "vouched":
            assert self.settings.identity_provider is not None
            identity = IdentityProviderUser(principal.subject, principal.groups,
                                            self.settings.identity_provider)
        else:
            identity = (principal.subject, None)
        roles = sorted({role for group in principal.groups
                        for role in self.settings.group_roles.get(group, ())})
        return create_end_user_security_context(self._app_token, identity, roles or None)


def postgres_runtime(name: str, settings: TenantSettings,
                     transaction_timeout_seconds: float | None = None, *,
                     contexts: PostgresContexts | None = None) -> TenantRuntime:
    """The runtime of PostgreSQL tenant ``name``: an event-loop pool of its runtime login.

    With ``transaction_timeout_seconds``, the database also ends any transaction that outlives
    it by :data:`TRANSACTION_TIMEOUT_GRACE_SECONDS`: a backstop for work the gateway cannot
    cancel (a request past its deadline is cancelled at its pending database wait and its
    connection closed, which rolls its transaction back); the grace lets the gateway's own
    deadline come first, so the caller gets the 504 rather than a database error.
    """
    contexts = contexts or PostgresContexts(name, settings)
    if settings.database_url is None:
        raise InvalidArgumentError(f"tenant {name!r} names no database_url",
                                   argument="database_url")
    engine = EventLoopPool(
        settings.database_url.get_secret_value(), name=f"oam-gateway-{name}",
        min_size=settings.pool_min_size, max_size=settings.pool_max_size,
        timeout_seconds=settings.pool_timeout_seconds,
        transaction_timeout_seconds=(
            None if transaction_timeout_seconds is None
            else transaction_timeout_seconds + TRANSACTION_TIMEOUT_GRACE_SECONDS))
    return TenantRuntime(name, settings, engine, contexts)
