"""The PostgreSQL 18 + pgvector engine."""

from oracleagentmemory.engines.postgres.engine import PostgresEngine

__all__ = ["PostgresEngine"]
