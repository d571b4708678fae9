"""What the gateway needs of a tenant's runtime, whatever its database.

:class:`~oam_gateway.tenants.TenantRuntime` serves a PostgreSQL tenant and
:class:`~oam_gateway.oracle_tenant.OracleTenantRuntime` an Oracle one; the endpoints see only
this protocol.
"""

from __future__ import annotations

import asyncio
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
