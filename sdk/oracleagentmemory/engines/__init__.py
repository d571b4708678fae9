"""Database engines. Each engine module is the only place that writes SQL for its database."""

from __future__ import annotations

from typing import Any

from oracleagentmemory.engines.base import Engine
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


def make_engine(source: Any) -> Engine:
    """Pick the engine for ``source``: a psycopg connection or pool, or a ``postgresql://`` URL."""
    module = type(source).__module__
    if isinstance(source, str):
        if source.startswith(("postgresql://", "postgres://")):
            from oracleagentmemory.engines.postgres import PostgresEngine

            return PostgresEngine(source)
        raise InvalidArgumentError(
            "pool: a URL must start with postgresql:// (Oracle takes a pool or "
                         "connection from oracledb)")
    if module.startswith(("psycopg", "psycopg_pool")):
        from oracleagentmemory.engines.postgres import PostgresEngine

        return PostgresEngine(source)
    if module.startswith("oracledb"):
        raise NotImplementedError(
            "the Oracle engine is not available in this release; use PostgreSQL (the embedded "
            "default) until it lands"
        )
    raise InvalidArgumentTypeError(
        "pool must be a psycopg Connection or psycopg_pool ConnectionPool, a postgresql:// URL, "
        f"or an oracledb connection or pool; got {type(source).__name__}"
    )
