"""One tenant's runtime, whatever its database: its pool, its client, its callers' contexts.

A tenant's runtime is built from what its database engine supplies, an :class:`EnginePool`
(:class:`~oracleagentmemory.engines.postgres.event_loop_pool.EventLoopPool` runs the SDK on the
event loop, :class:`~oracleagentmemory.engines.oracle.worker_pool.WorkerThreadPool` in worker
threads), and the gateway's :class:`CallerContexts` for that engine
(:mod:`oam_gateway.tenancy.postgres_tenant`, :mod:`oam_gateway.tenancy.oracle_tenant`). The
endpoints see only the :class:`Runtime` protocol.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core import OracleAgentMemory, OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.embedders.wordllama_embedder import WordLlamaEmbedder

from oam_gateway.config.tenant_settings import EmbedderChoice, TenantSettings
from oam_gateway.tenancy.principal import Principal

__all__ = ["CallerContexts", "EnginePool", "Runtime", "TenantRuntime", "shared_embedder"]

T = TypeVar("T")


class Runtime(Protocol):
    """One tenant's pool, client and callers' end-user contexts."""

    name: str
    settings: TenantSettings

    def open(self) -> None:
        """Start the pool (a no-op when it is open)."""

    def close(self) -> None:
        """Close the client and the pool."""

    async def context_for(self, principal: Principal) -> Any:
        """The end-user security context ``principal``'s request runs in."""

    @property
    def operation_slots(self) -> asyncio.Semaphore:
        """Admits at most one SDK operation per pooled connection at a time."""

    async def client(self) -> OracleAgentMemory:
        """The tenant's client, opened on first use inside the caller's context."""

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """Run the synchronous SDK call ``work(*args)`` in the current context."""

    async def ready(self, timeout_seconds: float) -> bool:
        """Whether the tenant's database answers within ``timeout_seconds``."""


class EnginePool(Protocol):
    """What a database engine supplies to run a tenant from the event loop."""

    @property
    def pool(self) -> Any:
        """The pool the tenant's store is opened on."""

    def open(self) -> None:
        """Start the pool (a no-op when it is open)."""

    def close(self) -> None:
        """Close the pool."""

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """Run the synchronous SDK call ``work(*args)`` in the current context."""

    async def ready(self, timeout_seconds: float) -> bool:
        """Whether the database answers within ``timeout_seconds``."""


class CallerContexts(Protocol):
    """How a tenant makes (and reuses) its callers' end-user security contexts."""

    async def context_for(self, principal: Principal) -> Any:
        """The end-user security context ``principal``'s request runs in."""


@functools.cache
def shared_embedder(choice: EmbedderChoice, dimension: int) -> IEmbedder | None:
    """One embedder per kind and dimension for the whole process (the model loads once)."""
    if choice == "wordllama":
        return WordLlamaEmbedder(dimension)
    if choice == "hashing":
        return HashingEmbedder(dimension)
    return None


class TenantRuntime:
    """One tenant's runtime: ``engine``'s pool, the client opened on it (a
    ``SchemaPolicy.NO_CHECK`` store, opened on the first request inside that request's context
    and shared by every later request of the tenant), and ``contexts``."""

    def __init__(self, name: str, settings: TenantSettings, engine: EnginePool,
                 contexts: CallerContexts,
                 embedder_for: Callable[[EmbedderChoice, int], IEmbedder | None] = (
                     shared_embedder)) -> None:
        self.name = name
        self.settings = settings
        self.engine = engine
        self.contexts = contexts
        self._embedder_for = embedder_for
        self._slots: asyncio.Semaphore | None = None
        self._client: OracleAgentMemory | None = None
        self._lock = asyncio.Lock()

    def open(self) -> None:
        """Start the pool (a no-op when it is open)."""
        self.engine.open()

    @property
    def operation_slots(self) -> asyncio.Semaphore:
        """Admits at most one SDK operation per pooled connection at a time."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.settings.pool_max_size)
        return self._slots

    async def context_for(self, principal: Principal) -> Any:
        """The end-user security context ``principal``'s request runs in."""
        return await self.contexts.context_for(principal)

    async def client(self) -> OracleAgentMemory:
        """The tenant's client; opened on first use, inside the caller's active context."""
        if self._client is None:
            async with self._lock:
                if self._client is None:
                    self._client = await asyncio.to_thread(self._open_client)
        return self._client

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` the engine's way (on the loop, or in a worker thread), in a copy of
        the current context."""
        return await self.engine.run(work, *args)

    async def ready(self, timeout_seconds: float) -> bool:
        """Whether the tenant's database answers within ``timeout_seconds``."""
        return await self.engine.ready(timeout_seconds)

    def close(self) -> None:
        """Close the client and the pool."""
        if self._client is not None:
            self._client.close(timeout=5.0)
            self._client.store.close()
            self._client = None
        self.engine.close()

    def _open_client(self) -> OracleAgentMemory:
        self.engine.open()  # served without a lifespan (the pool opens on first use)
        settings = self.settings
        options: dict[str, Any] = {}
        if settings.search_strategy is not None:
            options["search_strategy"] = settings.search_strategy
        store = OracleDBMemoryStore(
            self._embedder_for(settings.embedder, settings.embedding_dimension),
            self.engine.pool, schema_policy=SchemaPolicy.NO_CHECK,
            memory_store_id=settings.memory_store_id, schema_owner=settings.schema_owner,
            **options)
        return OracleAgentMemory(store=store, extract_memories=False)
