"""Memory-extraction settings: the modes, the grouped config and its layered resolution.

Each field resolves on its own: the value given for an operation, then the thread's saved value,
then the client's, then the SDK default (:data:`EXTRACTION_DEFAULTS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


class MemoryExtractionMode(str, Enum):
    """When extraction and image descriptions run: before the write returns, or after."""

    INLINE = "INLINE"
    BACKGROUND = "BACKGROUND"


class MemoryLinkExtractionMode(str, Enum):
    """How links between extracted memories are found."""

    DISABLED = "DISABLED"
    DURING_EXTRACTION = "DURING_EXTRACTION"
    POST_EXTRACTION = "POST_EXTRACTION"


class MemoryExtractionImageContext(str, Enum):
    """How images take part in extraction prompts."""

    DISABLED = "disabled"
    IMAGE = "image"
    CAPTION = "caption"
    MEMORY = "memory"


class BackgroundExtractionQueueFullBehavior(str, Enum):
    """What background work does when the queue has no room in time."""

    DROP = "DROP"
    WAIT_THEN_DROP = "WAIT_THEN_DROP"
    WAIT_THEN_RAISE = "WAIT_THEN_RAISE"


_INT_FIELDS = ("memory_extraction_window", "context_summary_update_frequency",
               "memory_extraction_frequency", "memory_extraction_token_limit",
               "memory_link_extraction_token_limit")
_BOOL_FIELDS = ("extract_memories", "enable_context_summary")
_TEXT_FIELDS = ("memory_extraction_custom_instructions",
                "memory_link_extraction_custom_instructions")
_ENUM_FIELDS: dict[str, type[Enum]] = {
    "memory_extraction_image_context": MemoryExtractionImageContext,
    "extraction_mode": MemoryExtractionMode,
    "memory_link_extraction_mode": MemoryLinkExtractionMode,
    "background_extraction_queue_full_behavior": BackgroundExtractionQueueFullBehavior,
}


@dataclass(frozen=True)
class MemoryExtractionConfig:
    """Grouped settings for automatic memory extraction; omitted fields inherit (see module)."""

    memory_extraction_window: int | _NotSetMarker = NOT_SET_MARKER
    context_summary_update_frequency: int | _NotSetMarker = NOT_SET_MARKER
    memory_extraction_frequency: int | _NotSetMarker = NOT_SET_MARKER
    memory_extraction_token_limit: int | _NotSetMarker = NOT_SET_MARKER
    extract_memories: bool | _NotSetMarker = NOT_SET_MARKER
    enable_context_summary: bool | _NotSetMarker = NOT_SET_MARKER
    memory_extraction_custom_instructions: str | None | _NotSetMarker = NOT_SET_MARKER
    memory_link_extraction_custom_instructions: str | None | _NotSetMarker = NOT_SET_MARKER
    memory_extraction_image_context: MemoryExtractionImageContext | _NotSetMarker = NOT_SET_MARKER
    memory_extraction_inherit_message_metadata: bool | Sequence[str] | _NotSetMarker = (
        NOT_SET_MARKER)
    extraction_mode: MemoryExtractionMode | _NotSetMarker = NOT_SET_MARKER
    memory_link_extraction_mode: MemoryLinkExtractionMode | _NotSetMarker = NOT_SET_MARKER
    memory_link_extraction_token_limit: int | _NotSetMarker = NOT_SET_MARKER
    background_extraction_queue_full_behavior: (
        BackgroundExtractionQueueFullBehavior | _NotSetMarker) = NOT_SET_MARKER
    background_extraction_queue_put_timeout_seconds: float | _NotSetMarker = NOT_SET_MARKER

    def __post_init__(self) -> None:
        for name, value in self.given().items():
            object.__setattr__(self, name, _checked(name, value))

    def given(self) -> dict[str, Any]:
        """The fields that were set, by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not NOT_SET_MARKER}


def _checked(name: str, value: Any) -> Any:
    if name in _INT_FIELDS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgumentTypeError(f"{name} must be an int, got {type(value).__name__}",
                                           argument=name)
        return value
    if name in _BOOL_FIELDS:
        if not isinstance(value, bool):
            raise InvalidArgumentTypeError(f"{name} must be a bool, got {type(value).__name__}",
                                           argument=name)
        return value
    if name in _TEXT_FIELDS:
        if value is not None and not isinstance(value, str):
            raise InvalidArgumentTypeError(f"{name} must be a str or None", argument=name)
        return value
    if name in _ENUM_FIELDS:
        enum_type = _ENUM_FIELDS[name]
        for member in enum_type:
            if value is member or value == member.value:
                if member is MemoryExtractionImageContext.MEMORY:
                    raise InvalidArgumentError(
                        f"{name}: MemoryExtractionImageContext.MEMORY is not supported",
                        argument=name)
                return member
        allowed = ", ".join(repr(m.value) for m in enum_type)
        raise InvalidArgumentError(f"{name} must be one of {allowed}, got {value!r}",
                                   argument=name)
    if name == "memory_extraction_inherit_message_metadata":
        if isinstance(value, bool):
            return value
        if isinstance(value, Sequence) and not isinstance(value, str) \
                and all(isinstance(k, str) and k for k in value):
            return tuple(value)
        raise InvalidArgumentTypeError(
            f"{name} must be a bool or a sequence of metadata keys", argument=name)
    # background_extraction_queue_put_timeout_seconds
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InvalidArgumentError(f"{name} must be a number of seconds >= 0, got {value!r}",
                                   argument=name)
    return float(value)


@dataclass(frozen=True)
class ResolvedExtraction:
    """Every extraction setting with a concrete value."""

    memory_extraction_window: int = -1
    context_summary_update_frequency: int = -1
    memory_extraction_frequency: int = -1
    memory_extraction_token_limit: int = 100_000
    memory_link_extraction_token_limit: int = 100_000
    extract_memories: bool = True
    enable_context_summary: bool = False
    memory_extraction_custom_instructions: str | None = None
    memory_link_extraction_custom_instructions: str | None = None
    memory_extraction_image_context: MemoryExtractionImageContext = (
        MemoryExtractionImageContext.DISABLED)
    memory_extraction_inherit_message_metadata: bool | tuple[str, ...] = True
    extraction_mode: MemoryExtractionMode = MemoryExtractionMode.BACKGROUND
    memory_link_extraction_mode: MemoryLinkExtractionMode = (
        MemoryLinkExtractionMode.POST_EXTRACTION)
    background_extraction_queue_full_behavior: BackgroundExtractionQueueFullBehavior = (
        BackgroundExtractionQueueFullBehavior.DROP)
    background_extraction_queue_put_timeout_seconds: float = 300.0

    def to_payload(self) -> dict[str, Any]:
        """JSON-ready values (enums by value, key tuples as lists)."""
        payload: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            payload[f.name] = value.value if isinstance(value, Enum) else (
                list(value) if isinstance(value, tuple) else value)
        return payload


EXTRACTION_DEFAULTS = ResolvedExtraction()
"""The SDK defaults."""


def resolve_extraction(*layers: MemoryExtractionConfig | None) -> ResolvedExtraction:
    """Resolve field by field; earlier layers win (operation, thread, client), then defaults."""
    resolved = EXTRACTION_DEFAULTS
    for layer in reversed(layers):
        if layer is not None:
            resolved = replace(resolved, **layer.given())
    return resolved


def extraction_config_from_payload(payload: object) -> MemoryExtractionConfig | None:
    """The saved layer of a thread (unknown keys ignored; a bad payload counts as absent)."""
    if not isinstance(payload, dict):
        return None
    known = {f.name for f in fields(MemoryExtractionConfig)}
    try:
        return MemoryExtractionConfig(**{k: v for k, v in payload.items() if k in known})
    except (TypeError, ValueError):
        return None
