"""Oracle AI Agent Memory SDK (``oracleagentmemory``), implemented for Oracle AI Database 26ai and
the embedded PostgreSQL 18 + pgvector engine."""

from oracleagentmemory._notset import NOT_SET_MARKER

__all__ = ["NOT_SET_MARKER"]
__version__ = "0.1.0"
