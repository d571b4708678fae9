"""Chat messages and their content parts."""

from __future__ import annotations

import builtins
from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, TypeAlias
from uuid import uuid4

JsonSchema: TypeAlias = dict[str, Any]
"""A JSON Schema (draft 2020-12 subset the model service accepts), as a dict."""


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

    type: ClassVar[str] = "text"
    """The part's kind, as chat payloads name it."""

    text: str


@dataclass(frozen=True, slots=True)
class ImageContent(MessageContent):
    """An image part of a message: its bytes (``None`` when not loaded), format and an optional
    text description used for search and prompts."""

    type: ClassVar[str] = "image"
    """The part's kind, as chat payloads name it."""

    bytes: builtins.bytes | None
    mime_type: ImageMimeType
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: a role and either text or ordered content parts.

    ``timestamp`` is an ISO-8601 event time, ``metadata`` a JSON object, and ``id`` the stored
    message's record id (``None`` before it is stored).
    """

    role: str
    content: str | Sequence[MessageContent]
    timestamp: str | None = None
    metadata: dict[str, Any] | None = field(default=None, hash=False)
    id: str | None = None

    @property
    def text(self) -> str:
        """The message's text: its content, or its text parts joined by newlines."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextContent))
