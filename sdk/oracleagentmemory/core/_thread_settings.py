"""A thread's runtime settings: per-call overrides, the thread's saved layer, the client's layer.

What a thread saves (its ``runtime_config``) is only what was explicitly given when it was created
or updated; everything else resolves at open time: the value given for this call, then the saved
value, then the client's, then the SDK default.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
from oracleagentmemory.core.memoryextraction import (
    MemoryExtractionConfig,
    ResolvedExtraction,
    extraction_config_from_payload,
    resolve_extraction,
)
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

THREAD_LIMIT_DEFAULTS: dict[str, int] = {
    "max_message_token_length": 15_000,
    "message_shortening_input_token_limit": 30_000,
    "context_card_token_limit": 100_000,
    "context_card_type_search_concurrency": 5,
}
"""SDK defaults of a thread's own limits."""

EXTRACTION_FIELDS = frozenset(f.name for f in fields(MemoryExtractionConfig))
"""Extraction settings that may also be passed one by one (deprecated spelling)."""


@dataclass(frozen=True)
class ThreadOverrides:
    """Settings given for one call: the thread limits, an extraction layer, image limits."""

    limits: dict[str, int]
    extraction: MemoryExtractionConfig | None
    image_limits: ImageInputLimitConfig | None


def parse_overrides(memory_extraction_config: Any = NOT_SET_MARKER,
                    image_input_limit_config: Any = NOT_SET_MARKER,
                    **settings: Any) -> ThreadOverrides:
    """Validate the settings of a thread call; one-by-one extraction fields merge into one layer.

    Raises:
        InvalidArgumentError: an unknown setting, or a field given both inside
            ``memory_extraction_config`` and on its own.
    """
    given = {k: v for k, v in settings.items() if v is not NOT_SET_MARKER}
    unknown = set(given) - set(THREAD_LIMIT_DEFAULTS) - EXTRACTION_FIELDS
    if unknown:
        raise InvalidArgumentTypeError(f"unexpected arguments: {', '.join(sorted(unknown))}")
    limits = {}
    for name in THREAD_LIMIT_DEFAULTS:
        if name in given:
            value = given[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgumentTypeError(f"{name} must be an int", argument=name)
            if name == "context_card_type_search_concurrency" and value < 1:
                raise InvalidArgumentError(f"{name} must be at least 1", argument=name)
            limits[name] = value
    extraction: MemoryExtractionConfig | None = None
    if memory_extraction_config is not NOT_SET_MARKER:
        if not isinstance(memory_extraction_config, MemoryExtractionConfig):
            raise InvalidArgumentTypeError("memory_extraction_config must be a "
                                           "MemoryExtractionConfig",
                                           argument="memory_extraction_config")
        extraction = memory_extraction_config
    inline = {k: v for k, v in given.items() if k in EXTRACTION_FIELDS}
    if inline:
        if extraction is not None:
            both = sorted(set(inline) & set(extraction.given()))
            if both:
                raise InvalidArgumentError(
                    f"{both[0]}: pass it in memory_extraction_config or on its own, not both",
                    argument=both[0])
        extraction = MemoryExtractionConfig(**{**(extraction.given() if extraction else {}),
                                               **inline})
    image_limits: ImageInputLimitConfig | None = None
    if image_input_limit_config is not NOT_SET_MARKER:
        if not isinstance(image_input_limit_config, ImageInputLimitConfig):
            raise InvalidArgumentTypeError("image_input_limit_config must be an "
                                           "ImageInputLimitConfig",
                                           argument="image_input_limit_config")
        image_limits = image_input_limit_config
    return ThreadOverrides(limits, extraction, image_limits)


@dataclass(frozen=True)
class ThreadSettings:
    """Every runtime setting of an open thread, resolved."""

    max_message_token_length: int
    message_shortening_input_token_limit: int
    context_card_token_limit: int
    context_card_type_search_concurrency: int
    extraction: ResolvedExtraction
    image_limits: ImageInputLimitConfig


def saved_payload(previous: dict[str, Any] | None, overrides: ThreadOverrides) -> dict[str, Any]:
    """The thread's new ``runtime_config``: the previous saved layer with ``overrides`` on top."""
    payload = dict(previous or {})
    payload.update(overrides.limits)
    if overrides.extraction is not None:
        extraction = dict(payload.get("memory_extraction") or {})
        extraction.update(_jsonable(overrides.extraction.given()))
        payload["memory_extraction"] = extraction
    if overrides.image_limits is not None:
        images = dict(payload.get("image_input_limits") or {})
        images.update({f.name: getattr(overrides.image_limits, f.name)
                       for f in fields(overrides.image_limits)
                       if getattr(overrides.image_limits, f.name) is not NOT_SET_MARKER})
        payload["image_input_limits"] = images
    return payload


def resolve_settings(call: ThreadOverrides, saved: dict[str, Any] | None,
                     client: ThreadOverrides) -> ThreadSettings:
    """Resolve each setting: this call, the thread's saved layer, the client, the SDK."""
    saved = saved or {}
    limits = {}
    for name, default in THREAD_LIMIT_DEFAULTS.items():
        value = call.limits.get(name, saved.get(name, client.limits.get(name, default)))
        limits[name] = value if isinstance(value, int) and not isinstance(value, bool) \
            else default
    extraction = resolve_extraction(call.extraction,
                                    extraction_config_from_payload(saved.get("memory_extraction")),
                                    client.extraction)
    images = _saved_image_limits(saved.get("image_input_limits"))
    image_limits = (call.image_limits or ImageInputLimitConfig()).resolved(
        (images or ImageInputLimitConfig()).resolved(client.image_limits))
    return ThreadSettings(extraction=extraction, image_limits=image_limits, **limits)


def _saved_image_limits(payload: object) -> ImageInputLimitConfig | None:
    if not isinstance(payload, dict):
        return None
    known = {f.name for f in fields(ImageInputLimitConfig)}
    try:
        return ImageInputLimitConfig(**{k: v for k, v in payload.items() if k in known})
    except (TypeError, ValueError):
        return None


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in values.items():
        out[name] = getattr(value, "value", value)
        if isinstance(value, tuple):
            out[name] = list(value)
    return out
