"""Readiness: can the gateway reach its databases right now?

Each tenant's engine answers (:meth:`~oam_gateway.tenancy.tenant_runtime.TenantRuntime.ready`): a
PostgreSQL tenant opens (and closes) one connection as its runtime login, a successful
handshake and authentication being the answer, so no SQL is sent; an Oracle tenant pings a
pooled connection.
"""

from __future__ import annotations

__all__ = ["RETRY_AFTER_SECONDS"]

RETRY_AFTER_SECONDS = 5
"""What ``Retry-After`` tells a client while the database cannot be reached."""
