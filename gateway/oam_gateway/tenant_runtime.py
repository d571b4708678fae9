"""What the gateway needs of a tenant's runtime, whatever its database.

:class:`~oam_gateway.tenants.TenantRuntime` serves a PostgreSQL tenant and
:class:`~oam_gateway.oracle_tenant.OracleTenantRuntime` an Oracle one; the endpoints see only
this protocol.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from oracleagentmemory.core import OracleAgentMemory

from oam_gateway.principal import Principal
from oam_gateway.tenant_settings import TenantSettings

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


class ClientRuntime(ABC):
    """What every tenant runtime shares: its operation slots and its lazily opened client.

    Subclasses open the client (:meth:`_open_client`, run in a worker thread) and close it
    with :meth:`_close_client` before closing their pool.
    """

    settings: TenantSettings

    def __init__(self) -> None:
        self._slots: asyncio.Semaphore | None = None
        self._client: OracleAgentMemory | None = None
        self._lock = asyncio.Lock()

    @property
    def operation_slots(self) -> asyncio.Semaphore:
        """Admits at most one SDK operation per pooled connection at a time."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.settings.pool_max_size)
        return self._slots

    async def client(self) -> OracleAgentMemory:
        """The tenant's client; opened on first use, inside the caller's active context."""
        if self._client is None:
            async with self._lock:
                if self._client is None:
                    self._client = await asyncio.to_thread(self._open_client)
        return self._client

    @abstractmethod
    def _open_client(self) -> OracleAgentMemory:
        """Open the tenant's store and client (blocking)."""

    def _close_client(self) -> None:
        if self._client is not None:
            self._client.close(timeout=5.0)
            self._client.store.close()
            self._client = None
