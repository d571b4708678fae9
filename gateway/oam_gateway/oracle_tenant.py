"""An Oracle tenant's runtime: its python-oracledb pool, its client, and its callers' end-user
security contexts (issue 12, item 5).

Each request runs inside ``oracledb.create_end_user_security_context(database_access_token,
end_user_identity=...)``: the database access token is the gateway's own (client credentials,
:mod:`oam_gateway.db_access_token`); the end user is

- ``end_user_mode = "token"``: the caller's own bearer token (OCI IAM or Entra ID), which the
  database verifies again and takes the user from (``sub`` / ``upn``); the caller's groups
  mapped by ``group_roles`` ask for data roles;
- ``end_user_mode = "local"``: the local end user named by the caller's subject, as the database
  stores an unquoted name (upper case: :func:`database_user_name`), with no key and no data
  roles (the Deep Data Security Guide rejects data roles with a local identity).

The caller's ``user_name`` (the rows' ``user_id``) is that same database name
(:func:`database_user_name`, applied by :mod:`oam_gateway.auth`).

The SDK is synchronous and python-oracledb's thin-mode waits block, so each SDK call runs in a
worker thread (``asyncio.to_thread`` carries the request's end-user context along). Not run
against a live database here: no Oracle database is reachable where it was written.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import oracledb
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core import OracleAgentMemory, OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.engines.oracle.context import local_end_user_name
from oracleagentmemory.errors import InvalidArgumentError

from oam_gateway.db_access_token import ClientCredentialsTokenProvider, DatabaseAccessTokenError
from oam_gateway.oracle_pool import create_oracle_pool, pool_arguments
from oam_gateway.principal import Principal
from oam_gateway.tenant_runtime import ClientRuntime
from oam_gateway.tenant_settings import EmbedderChoice, TenantSettings

_log = logging.getLogger(__name__)

T = TypeVar("T")

CONTEXT_CACHE_SIZE = 10_000
"""How many callers' end-user contexts a tenant keeps (least recently used dropped first)."""
CONTEXT_REUSE_SECONDS = 300.0
"""How long a caller's context is reused (never past the database access token it holds)."""
CALL_TIMEOUT_GRACE_SECONDS = 1.0
"""How much longer than the request timeout one database round trip may take."""

EndUserIdentity = str | tuple[str, None]
PoolFactory = Callable[[dict[str, Any]], oracledb.ConnectionPool]


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


class OracleTenantRuntime(ClientRuntime):
    """One Oracle tenant's pool and client, and the end-user contexts of its callers."""

    def __init__(self, name: str, settings: TenantSettings,
                 embedder_for: Callable[[EmbedderChoice, int], IEmbedder | None], *,
                 tokens: ClientCredentialsTokenProvider | None = None,
                 pool_factory: PoolFactory = create_oracle_pool,
                 transaction_timeout_seconds: float | None = None) -> None:
        if settings.oracle is None:
            raise InvalidArgumentError(f"tenant {name!r} names no Oracle database",
                                       argument="oracle")
        super().__init__()
        self.name = name
        self.settings = settings
        self.tokens = tokens or ClientCredentialsTokenProvider(settings.oracle.access_token)
        self._embedder_for = embedder_for
        self._pool_factory = pool_factory
        self._call_timeout_seconds = (
            None if transaction_timeout_seconds is None
            else transaction_timeout_seconds + CALL_TIMEOUT_GRACE_SECONDS)
        self._pool: oracledb.ConnectionPool | None = None
        self._pool_lock = threading.Lock()
        self._contexts: OrderedDict[tuple[Any, ...], tuple[Any, float]] = OrderedDict()
        self._contexts_token: str | None = None
        self._contexts_lock = threading.Lock()

    # --- the pool ----------------------------------------------------------------------------
    def pool_arguments(self) -> dict[str, Any]:
        """The ``oracledb.create_pool`` arguments of this tenant (hold secrets: never log)."""
        return pool_arguments(self.settings, self.tokens.pool_callback,
                              self._call_timeout_seconds)

    def open(self) -> None:
        """Create the pool (python-oracledb opens its connections; a no-op when it exists)."""
        self._ensure_pool()

    def _ensure_pool(self) -> oracledb.ConnectionPool:
        with self._pool_lock:
            if self._pool is None:
                self._pool = self._pool_factory(self.pool_arguments())
            return self._pool

    # --- end-user contexts -------------------------------------------------------------------
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

    def security_context(self, principal: Principal,
                         database_access_token: str) -> oracledb.EndUserSecurityContext:
        """The end-user security context of ``principal`` with ``database_access_token``; the
        same caller gets the same context while the token and :data:`CONTEXT_REUSE_SECONDS`
        last."""
        identity = self.end_user_identity(principal)
        key = (identity if isinstance(identity, str) else identity[0], principal.groups)
        now = time.monotonic()
        with self._contexts_lock:
            if self._contexts_token != database_access_token:  # a new token: new contexts
                self._contexts.clear()
                self._contexts_token = database_access_token
            cached = self._contexts.get(key)
            if cached is not None and cached[1] > now:
                self._contexts.move_to_end(key)
                return cached[0]  # type: ignore[no-any-return]
        context = oracledb.create_end_user_security_context(
            database_access_token, end_user_identity=identity,
            data_roles=self.data_roles(principal))
        with self._contexts_lock:
            if self._contexts_token == database_access_token:
                self._contexts[key] = (context, now + CONTEXT_REUSE_SECONDS)
                self._contexts.move_to_end(key)
                while len(self._contexts) > CONTEXT_CACHE_SIZE:
                    self._contexts.popitem(last=False)
        return context

    async def context_for(self, principal: Principal) -> Any:
        """The caller's context; a due database access token is fetched in a worker thread,
        never on the event loop."""
        token = self.tokens.peek()
        if token is None:
            token = await asyncio.to_thread(self.tokens.token)
        return self.security_context(principal, token)

    # --- the client --------------------------------------------------------------------------
    def _open_client(self) -> OracleAgentMemory:
        settings = self.settings
        options: dict[str, Any] = {}
        if settings.search_strategy is not None:
            options["search_strategy"] = settings.search_strategy
        store = OracleDBMemoryStore(
            self._embedder_for(settings.embedder, settings.embedding_dimension),
            self._ensure_pool(), schema_policy=SchemaPolicy.NO_CHECK,
            memory_store_id=settings.memory_store_id, schema_owner=settings.schema_owner,
            **options)
        return OracleAgentMemory(store=store, extract_memories=False)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` in a worker thread, in a copy of the current context."""
        return await asyncio.to_thread(work, *args)

    async def ready(self, timeout_seconds: float) -> bool:
        """Whether a pooled connection answers a ping within ``timeout_seconds``."""
        def probe() -> None:
            with self._ensure_pool().acquire() as connection:
                connection.ping()

        try:
            await asyncio.wait_for(asyncio.to_thread(probe), timeout_seconds)
        except (oracledb.Error, OSError, asyncio.TimeoutError, DatabaseAccessTokenError) as error:
            _log.warning("readiness: tenant %s's Oracle database unreachable (%s)", self.name,
                         type(error).__name__)
            return False
        return True

    def close(self) -> None:
        """Close the client and the pool."""
        self._close_client()
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(force=True)
