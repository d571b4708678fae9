"""Contracts and value types of the Agent Memory SDK."""

from oracleagentmemory.apis.agentmemory import IAgentMemory
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.apis.keyset import OlderThan
from oracleagentmemory.apis.llms import ILlm, LlmResponse
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT, IMemoryStore, PendingRecordBatch
from oracleagentmemory.apis.message import (
    ImageContent,
    ImageMimeType,
    Message,
    MessageContent,
    TextContent,
)
from oracleagentmemory.apis.records import (
    MEMORY_TYPES,
    AgentProfileRecord,
    FactRecord,
    GuidelineRecord,
    ImageRecord,
    MemoryRecord,
    MemoryRecordType,
    MessageRecord,
    PreferenceRecord,
    Record,
    RecordStatus,
    RecordType,
    ScopedRecord,
    ThreadRecord,
    ThreadRecordType,
    ThreadSummaryRecord,
    UserProfileRecord,
    build_record,
)
from oracleagentmemory.apis.relations import (
    MemoryLink,
    MemoryLinkOppositeType,
    MemoryLinkType,
    RecordRelation,
    RelationType,
)
from oracleagentmemory.apis.reranker import IReranker, RerankResponse, RerankResponseResult
from oracleagentmemory.apis.scope import Scope, SearchScope
from oracleagentmemory.apis.searchconfig import ISearchConfig
from oracleagentmemory.apis.searchresult import SearchResult, SearchResultFormatConfig
from oracleagentmemory.apis.summary import ContextCard, Summary
from oracleagentmemory.apis.thread import IThread
from oracleagentmemory.apis.ttl import TimeToLiveAnchor

__all__ = [
    "MAX_LIST_LIMIT",
    "MEMORY_TYPES",
    "AgentProfileRecord",
    "ContextCard",
    "FactRecord",
    "GuidelineRecord",
    "IAgentMemory",
    "IEmbedder",
    "ILlm",
    "IMemoryStore",
    "IReranker",
    "ISearchConfig",
    "IThread",
    "ImageContent",
    "ImageMimeType",
    "ImageRecord",
    "LlmResponse",
    "MemoryLink",
    "MemoryLinkOppositeType",
    "MemoryLinkType",
    "MemoryRecord",
    "MemoryRecordType",
    "Message",
    "MessageContent",
    "MessageRecord",
    "OlderThan",
    "PendingRecordBatch",
    "PreferenceRecord",
    "Record",
    "RecordRelation",
    "RecordStatus",
    "RecordType",
    "RelationType",
    "RerankResponse",
    "RerankResponseResult",
    "Scope",
    "ScopedRecord",
    "SearchResult",
    "SearchResultFormatConfig",
    "SearchScope",
    "Summary",
    "TextContent",
    "ThreadRecord",
    "ThreadRecordType",
    "ThreadSummaryRecord",
    "TimeToLiveAnchor",
    "UserProfileRecord",
    "build_record",
]
