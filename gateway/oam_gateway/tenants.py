"""Each tenant's runtime: its connection pool, its client, and its callers' security contexts.

The pool belongs to the tenant's runtime login, which holds no table privilege of its own:
every statement runs inside the caller's end-user context, and the database's row security
decides what it sees. The client (a ``SchemaPolicy.NO_CHECK`` store) is opened on the first
request, inside that request's context, and shared by every later request of the tenant.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core import OracleAgentMemory, OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    IdentityProviderUser,
    create_end_user_security_context,
)
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.embedders.wordllama_embedder import WordLlamaEmbedder
from oracleagentmemory.errors import InvalidArgumentError
from psycopg_pool import ConnectionPool

from oam_gateway.bridge import BridgedConnection, BridgedPool, run_bridged
from oam_gateway.health import database_reachable
from oam_gateway.oracle_tenant import OracleTenantRuntime
from oam_gateway.principal import Principal
from oam_gateway.tenant_runtime import ClientRuntime, Runtime
from oam_gateway.tenant_settings import EmbedderChoice, TenantSettings

T = TypeVar("T")

_log = logging.getLogger(__name__)

CONTEXT_CACHE_SIZE = 10_000
"""How many callers' end-user contexts a tenant keeps (least recently used dropped first)."""
TRANSACTION_TIMEOUT_GRACE_SECONDS = 1.0
"""How much longer than the request timeout the database lets a transaction run."""
CONTEXT_REUSE_SECONDS = 300.0
"""How long a caller's context is reused (its assertion renews itself at half its lifetime)."""


@functools.cache
def shared_embedder(choice: EmbedderChoice, dimension: int) -> IEmbedder | None:
    """One embedder per kind and dimension for the whole process (the model loads once)."""
    if choice == "wordllama":
        return WordLlamaEmbedder(dimension)
    if choice == "hashing":
        return HashingEmbedder(dimension)
    return None


class TenantRuntime(ClientRuntime):
    """One tenant's pool and client, and the end-user contexts of its callers."""

    def __init__(self, name: str, settings: TenantSettings,
                 transaction_timeout_seconds: float | None = None) -> None:
        super().__init__()
        self.name = name
        self.settings = settings
        self._app_token = settings.application_token()
        if self._app_token is None:
            raise InvalidArgumentError(
                f"tenant {name!r} has no application token (app_token or app_token_file)",
                argument="app_token")
        if settings.database_url is None:
            raise InvalidArgumentError(f"tenant {name!r} names no database_url",
                                       argument="database_url")
        self._database_url = settings.database_url.get_secret_value()
        seconds = max(1, math.ceil(settings.pool_timeout_seconds))
        options: dict[str, Any] = {"connect_timeout": seconds}
        if transaction_timeout_seconds is not None:
            # A request past its deadline is cancelled at its pending database wait and its
            # connection closed (oam_gateway.bridge), which rolls its transaction back. The
            # database also ends any transaction that outlives the deadline by the grace, a
            # backstop for work the gateway cannot cancel; the grace lets the gateway's own
            # deadline come first, so the caller gets the 504 rather than a database error.
            milliseconds = max(1, math.ceil(
                (transaction_timeout_seconds + TRANSACTION_TIMEOUT_GRACE_SECONDS) * 1000))
            options["options"] = f"-c transaction_timeout={milliseconds}"
        # Requests run the SDK on the event loop (oam_gateway.bridge): the pool's connections
        # await their I/O there, and waiting for a free connection never blocks the loop.
        self.pool: ConnectionPool[Any] = BridgedPool(
            self._database_url, connection_class=BridgedConnection,
            min_size=settings.pool_min_size, max_size=settings.pool_max_size,
            timeout=settings.pool_timeout_seconds,
            reconnect_timeout=max(30.0, settings.pool_timeout_seconds),
            name=f"oam-gateway-{name}", kwargs=options, open=False)
        self._contexts: OrderedDict[tuple[str, str, tuple[str, ...]], tuple[Any, float]] = (
            OrderedDict())
        self._contexts_lock = threading.Lock()

    def open(self) -> None:
        """Start the pool (connections open in the background; requests wait for them)."""
        self.pool.open(wait=False)  # a no-op when it is open

    def security_context(self, principal: Principal) -> Any:
        """The end-user security context of ``principal`` for this tenant's database.

        The same caller (subject and groups; in token mode, the same token) gets the same
        context for :data:`CONTEXT_REUSE_SECONDS`: its signed assertion is then one the
        database has verified before, which saves the verification on every request.
        """
        key = (principal.token if self.settings.end_user_mode == "token" else "",
               principal.subject, principal.groups)
        now = time.monotonic()
        with self._contexts_lock:
            cached = self._contexts.get(key)
            if cached is not None and cached[1] > now:
                self._contexts.move_to_end(key)
                return cached[0]
        context = self._new_context(principal)
        with self._contexts_lock:
            self._contexts[key] = (context, now + CONTEXT_REUSE_SECONDS)
            self._contexts.move_to_end(key)
            while len(self._contexts) > CONTEXT_CACHE_SIZE:
                self._contexts.popitem(last=False)
        return context

    async def context_for(self, principal: Principal) -> Any:
        """:meth:`security_context` (the endpoints' entry point, shared with Oracle tenants)."""
        return self.security_context(principal)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` on the loop's thread, its database waits awaited there."""
        return await run_bridged(work, *args)

    async def ready(self, timeout_seconds: float) -> bool:
        """Whether a connection to the tenant's database opens within ``timeout_seconds``."""
        return await database_reachable(self._database_url, timeout_seconds)

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
        assert self._app_token is not None
        return create_end_user_security_context(self._app_token, identity, roles or None)

    def _open_client(self) -> OracleAgentMemory:
        self.open()  # served without a lifespan (the pool opens on first use)
        settings = self.settings
        options: dict[str, Any] = {}
        if settings.search_strategy is not None:
            options["search_strategy"] = settings.search_strategy
        store = OracleDBMemoryStore(
            shared_embedder(settings.embedder, settings.embedding_dimension), self.pool,
            schema_policy=SchemaPolicy.NO_CHECK, memory_store_id=settings.memory_store_id,
            schema_owner=settings.schema_owner, **options)
        return OracleAgentMemory(store=store, extract_memories=False)

    def close(self) -> None:
        """Close the client and the pool."""
        self._close_client()
        self.pool.close()


class Tenants:
    """Every tenant's runtime, by name."""

    def __init__(self, settings: dict[str, TenantSettings],
                 transaction_timeout_seconds: float | None = None) -> None:
        self._runtimes: dict[str, Runtime] = {
            name: OracleTenantRuntime(name, tenant, shared_embedder,
                                      transaction_timeout_seconds=transaction_timeout_seconds)
            if tenant.oracle is not None
            else TenantRuntime(name, tenant, transaction_timeout_seconds)
            for name, tenant in settings.items()}

    def __getitem__(self, name: str) -> Runtime:
        return self._runtimes[name]

    def __iter__(self) -> Any:
        return iter(self._runtimes.values())

    def open(self) -> None:
        """Start every tenant's pool."""
        for runtime in self._runtimes.values():
            runtime.open()

    def close(self) -> None:
        """Close every tenant's client and pool."""
        for runtime in self._runtimes.values():
            try:
                runtime.close()
            except Exception as error:  # one tenant's failure must not keep the others open
                _log.warning("closing tenant %s failed: %s", runtime.name, type(error).__name__)
