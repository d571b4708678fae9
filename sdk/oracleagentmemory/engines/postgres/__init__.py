"""The PostgreSQL 18 + pgvector engine.

Loaded lazily: importing a submodule (the assertion codec, say) does not load the driver pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oracleagentmemory.engines.postgres.engine import PostgresEngine

__all__ = ["PostgresEngine"]


def __getattr__(name: str) -> Any:
    if name == "PostgresEngine":
        from oracleagentmemory.engines.postgres.engine import PostgresEngine

        return PostgresEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
