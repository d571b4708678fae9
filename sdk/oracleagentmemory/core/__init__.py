"""Core implementations: the DB-backed store, schema policies, search and retention settings."""

from oracleagentmemory.apis.relations import (
    MemoryLink,
    MemoryLinkOppositeType,
    MemoryLinkType,
    RecordRelation,
    RelationType,
)
from oracleagentmemory.apis.searchresult import SearchResultFormatConfig
from oracleagentmemory.core.contextcard import OracleContextCard, OracleSummary
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.dbsearch import SearchIndexSyncMode, SearchStrategy
from oracleagentmemory.core.embedders import Embedder, WordLlamaEmbedder
from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
from oracleagentmemory.core.llms import Llm, LlmApiType
from oracleagentmemory.core.memoryextraction import (
    BackgroundExtractionQueueFullBehavior,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)
from oracleagentmemory.core.oracleagentmemory import OracleAgentMemory
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore
from oracleagentmemory.core.reranker import Reranker
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.searchconfig import (
    MemorySearchConfig,
    PruningEvaluationMode,
    PruningMemorySearchConfig,
    TopKMemorySearchConfig,
)
from oracleagentmemory.core.searchresult import OracleSearchResult, OracleSearchResultFormatConfig
from oracleagentmemory.core.storebase import OracleMemoryStore
from oracleagentmemory.core.thread import OracleThread
from oracleagentmemory.errors import MemoryStoreSchemaError

__all__ = [
    "BackgroundExtractionQueueFullBehavior",
    "Embedder",
    "ImageInputLimitConfig",
    "Llm",
    "LlmApiType",
    "MemoryExtractionConfig",
    "MemoryExtractionImageContext",
    "MemoryExtractionMode",
    "MemoryLink",
    "MemoryLinkExtractionMode",
    "MemoryLinkOppositeType",
    "MemoryLinkType",
    "MemoryRetentionConfig",
    "MemorySearchConfig",
    "MemoryStoreSchemaError",
    "OracleAgentMemory",
    "OracleContextCard",
    "OracleDBMemoryStore",
    "OracleMemoryStore",
    "OracleSearchResult",
    "OracleSearchResultFormatConfig",
    "OracleSummary",
    "OracleThread",
    "PruningEvaluationMode",
    "PruningMemorySearchConfig",
    "RecordRelation",
    "RelationType",
    "Reranker",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchResultFormatConfig",
    "SearchStrategy",
    "TopKMemorySearchConfig",
    "WordLlamaEmbedder",
]
