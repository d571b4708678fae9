"""Memory extraction: its settings, and the batch type extracted records are written in."""

from oracleagentmemory.apis.memorystore import PendingRecordBatch
from oracleagentmemory.core.extractors.memoryextractionconfig import (
    BackgroundExtractionQueueFullBehavior,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)

__all__ = [
    "BackgroundExtractionQueueFullBehavior",
    "MemoryExtractionConfig",
    "MemoryExtractionImageContext",
    "MemoryExtractionMode",
    "MemoryLinkExtractionMode",
    "PendingRecordBatch",
]
