"""Message content parts."""

from __future__ import annotations

from abc import ABC
from dataclasses import dataclass, field
from enum import Enum
from uuid import uuid4


class ImageMimeType(str, Enum):
    """Image formats the store accepts (a ``str`` enum: ``ImageMimeType.PNG == "image/png"``)."""

    PNG = "image/png"
    JPEG = "image/jpeg"
    WEBP = "image/webp"


@dataclass(frozen=True, slots=True)
class MessageContent(ABC):  # noqa: B024 - abstract by role, not by method
    """One ordered part of a message (immutable)."""

    id: str = field(default_factory=lambda: uuid4().hex, kw_only=True)
    timestamp: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class TextContent(MessageContent):
    """A text part of a message: ``TextContent("Hello")``."""

    text: str
