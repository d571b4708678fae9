"""Limits on raw images and on the images sent in one LLM request."""

from __future__ import annotations

from dataclasses import dataclass, fields

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

MAX_RAW_IMAGE_BYTES = 20 * 1024 * 1024
"""Absolute maximum size of one image (resolved limits cannot exceed it)."""
MAX_IMAGES_PER_LLM_REQUEST = 500
MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST = 100 * 1024 * 1024

_MAXIMA = {
    "max_raw_image_bytes": MAX_RAW_IMAGE_BYTES,
    "max_images_per_llm_request": MAX_IMAGES_PER_LLM_REQUEST,
    "max_total_raw_image_bytes_per_llm_request": MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST,
}


@dataclass(frozen=True)
class ImageInputLimitConfig:
    """Image limits; omitted fields inherit from the broader scope (thread, client, SDK)."""

    max_raw_image_bytes: int | _NotSetMarker = NOT_SET_MARKER
    max_images_per_llm_request: int | _NotSetMarker = NOT_SET_MARKER
    max_total_raw_image_bytes_per_llm_request: int | _NotSetMarker = NOT_SET_MARKER

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is NOT_SET_MARKER:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgumentTypeError(
                    f"{f.name} must be an int, got {type(value).__name__}", argument=f.name)
            if not 1 <= value <= _MAXIMA[f.name]:
                raise InvalidArgumentError(
                    f"{f.name} must be between 1 and {_MAXIMA[f.name]}, got {value}",
                    argument=f.name)

    def resolved(self, broader: ImageInputLimitConfig | None = None) -> ImageInputLimitConfig:
        """Every field concrete: this config over ``broader`` over the SDK maxima."""
        values = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is NOT_SET_MARKER and broader is not None:
                value = getattr(broader, f.name)
            values[f.name] = _MAXIMA[f.name] if value is NOT_SET_MARKER else value
        return ImageInputLimitConfig(**values)
