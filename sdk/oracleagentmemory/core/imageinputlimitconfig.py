"""Limits on raw images and on the images sent in one LLM request."""

from __future__ import annotations

from dataclasses import dataclass, fields

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "MAX_IMAGES_PER_LLM_REQUEST_ABSOLUTE",
    "MAX_IMAGES_PER_LLM_REQUEST_DEFAULT",
    "MAX_RAW_IMAGE_BYTES_ABSOLUTE",
    "MAX_RAW_IMAGE_BYTES_DEFAULT",
    "MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_ABSOLUTE",
    "MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_DEFAULT",
    "MIB",
    "ImageInputLimitConfig",
]

MIB = 1024 * 1024
"""One mebibyte, in bytes."""

MAX_RAW_IMAGE_BYTES_DEFAULT = 10 * MIB
"""SDK default of the size of one image, where no scope sets it."""
MAX_IMAGES_PER_LLM_REQUEST_DEFAULT = 100
"""SDK default of the images one LLM request carries."""
MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_DEFAULT = 100 * MIB
"""SDK default of the image bytes one LLM request carries."""

MAX_RAW_IMAGE_BYTES_ABSOLUTE = 32 * MIB
"""Absolute maximum size of one image: no configuration exceeds it, and a store takes no
larger image."""
MAX_IMAGES_PER_LLM_REQUEST_ABSOLUTE = 512
"""Absolute maximum of the images one LLM request carries."""
MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_ABSOLUTE = 256 * MIB
"""Absolute maximum of the image bytes one LLM request carries."""

_DEFAULTS = {
    "max_raw_image_bytes": MAX_RAW_IMAGE_BYTES_DEFAULT,
    "max_images_per_llm_request": MAX_IMAGES_PER_LLM_REQUEST_DEFAULT,
    "max_total_raw_image_bytes_per_llm_request": MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_DEFAULT,
}
_MAXIMA = {
    "max_raw_image_bytes": MAX_RAW_IMAGE_BYTES_ABSOLUTE,
    "max_images_per_llm_request": MAX_IMAGES_PER_LLM_REQUEST_ABSOLUTE,
    "max_total_raw_image_bytes_per_llm_request": MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_ABSOLUTE,
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
        """Every field concrete: this config over ``broader`` over the SDK defaults."""
        values = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is NOT_SET_MARKER and broader is not None:
                value = getattr(broader, f.name)
            values[f.name] = _DEFAULTS[f.name] if value is NOT_SET_MARKER else value
        return ImageInputLimitConfig(**values)
