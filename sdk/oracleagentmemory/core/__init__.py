"""Core implementations: the DB-backed store, schema policies, search and retention settings."""

from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.storebase import OracleMemoryStore
from oracleagentmemory.errors import MemoryStoreSchemaError

__all__ = [
    "MemoryRetentionConfig",
    "MemoryStoreSchemaError",
    "OracleDBMemoryStore",
    "OracleMemoryStore",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchStrategy",
]
