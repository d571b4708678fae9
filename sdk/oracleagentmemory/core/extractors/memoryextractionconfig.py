"""Memory extraction settings and the SDK defaults of its limits (the settings are defined in
``core.memoryextraction``; the constants are the defaults a thread resolves to)."""

from oracleagentmemory.core.memoryextraction import (
    EXTRACTION_DEFAULTS,
    BackgroundExtractionQueueFullBehavior,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)

__all__ = [
    "MEMORY_EXTRACTION_FREQUENCY_DEFAULT",
    "MEMORY_EXTRACTION_TOKEN_LIMIT_DEFAULT",
    "MEMORY_EXTRACTION_WINDOW_DEFAULT",
    "MEMORY_LINKING_TOKEN_LIMIT_DEFAULT",
    "BackgroundExtractionQueueFullBehavior",
    "MemoryExtractionConfig",
    "MemoryExtractionImageContext",
    "MemoryExtractionMode",
    "MemoryLinkExtractionMode",
]

MEMORY_EXTRACTION_WINDOW_DEFAULT: int = EXTRACTION_DEFAULTS.memory_extraction_window
"""Recent messages an extraction prompt shows (-1: only the new messages)."""
MEMORY_EXTRACTION_FREQUENCY_DEFAULT: int = EXTRACTION_DEFAULTS.memory_extraction_frequency
"""Messages between extraction runs (below 0: after every append)."""
MEMORY_EXTRACTION_TOKEN_LIMIT_DEFAULT: int = EXTRACTION_DEFAULTS.memory_extraction_token_limit
"""Input token budget of an extraction prompt (below 1: no limit)."""
MEMORY_LINKING_TOKEN_LIMIT_DEFAULT: int = EXTRACTION_DEFAULTS.memory_link_extraction_token_limit
"""Total input token budget of post-extraction link resolution (below 1: no limit)."""
