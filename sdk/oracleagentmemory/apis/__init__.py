"""Contracts and value types of the Agent Memory SDK."""

from oracleagentmemory.apis.embedders import IEmbedder
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
    MemoryRecord,
    MessageRecord,
    PreferenceRecord,
    Record,
    RecordStatus,
    ScopedRecord,
    ThreadRecord,
    ThreadSummaryRecord,
    UserProfileRecord,
    build_record,
)
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.apis.ttl import TimeToLiveAnchor

__all__ = [
    "MAX_LIST_LIMIT",
    "MEMORY_TYPES",
    "AgentProfileRecord",
    "FactRecord",
    "GuidelineRecord",
    "IEmbedder",
    "IMemoryStore",
    "ImageContent",
    "ImageMimeType",
    "Message",
    "MemoryRecord",
    "MessageContent",
    "MessageRecord",
    "PendingRecordBatch",
    "PreferenceRecord",
    "Record",
    "RecordRelation",
    "RecordStatus",
    "ScopedRecord",
    "TextContent",
    "ThreadRecord",
    "ThreadSummaryRecord",
    "TimeToLiveAnchor",
    "UserProfileRecord",
    "build_record",
]
