"""Every tenant's runtime, by name: a PostgreSQL or an Oracle one, as its settings say.

Each is a :class:`~oam_gateway.tenancy.tenant_runtime.TenantRuntime` built from what its engine
supplies (:mod:`oam_gateway.tenancy.postgres_tenant`, :mod:`oam_gateway.tenancy.oracle_tenant`).
"""

from __future__ import annotations

import logging
from typing import Any

from oam_gateway.config.tenant_settings import TenantSettings
from oam_gateway.tenancy.oracle_tenant import oracle_runtime
from oam_gateway.tenancy.postgres_tenant import postgres_runtime
from oam_gateway.tenancy.tenant_runtime import Runtime, TenantRuntime, shared_embedder

__all__ = ["TenantRuntime", "Tenants", "shared_embedder"]

_log = logging.getLogger(__name__)


class Tenants:
    """Every tenant's runtime, by name."""

    def __init__(self, settings: dict[str, TenantSettings],
                 transaction_timeout_seconds: float | None = None) -> None:
        self._runtimes: dict[str, Runtime] = {
            name: oracle_runtime(name, tenant,
                                 transaction_timeout_seconds=transaction_timeout_seconds)
            if tenant.oracle is not None
            else postgres_runtime(name, tenant, transaction_timeout_seconds)
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
