"""Chat messages in and out of the store: ``Message`` objects or role/content mappings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.message import (
    ImageContent,
    ImageMimeType,
    Message,
    MessageContent,
    TextContent,
)
from oracleagentmemory.apis.records import MessageRecord
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

_MESSAGE_KEYS = frozenset({"role", "content", "timestamp", "metadata", "id"})


@dataclass(frozen=True)
class MessageColumns:
    """``store.add`` columns for a batch of messages."""

    contents: list[str | list[MessageContent]]
    roles: list[str]
    timestamps: list[str | None]
    metadata: list[dict[str, Any] | None]
    record_ids: list[str | None]


def message_columns(messages: object, metadata: object) -> MessageColumns:
    """Validate ``add_messages`` input; ``metadata`` (one mapping or one per message) replaces the
    messages' own metadata when given."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise InvalidArgumentTypeError("messages must be a list of Message objects or "
                                       "role/content mappings", argument="messages")
    if not messages:
        raise InvalidArgumentError("messages must not be empty", argument="messages")
    parsed = [_message(m, f"messages[{n}]") for n, m in enumerate(messages)]
    own_metadata = [m.metadata for m in parsed]
    if metadata is NOT_SET_MARKER:
        chosen = own_metadata
    elif isinstance(metadata, list):
        if len(metadata) != len(parsed):
            raise InvalidArgumentError(
                f"metadata has {len(metadata)} entries for {len(parsed)} messages",
                argument="metadata")
        chosen = metadata
    else:
        chosen = [metadata] * len(parsed)  # type: ignore[list-item]
    return MessageColumns(
        contents=[m.content if isinstance(m.content, str) else list(m.content) for m in parsed],
        roles=[m.role for m in parsed], timestamps=[m.timestamp for m in parsed],
        metadata=chosen, record_ids=[m.id for m in parsed])


def _message(value: object, argument: str) -> Message:
    if isinstance(value, Message):
        message = value
    elif isinstance(value, Mapping):
        unknown = set(value) - _MESSAGE_KEYS
        if unknown:
            raise InvalidArgumentError(f"{argument}: unknown keys {sorted(unknown)}",
                                       argument=argument)
        if "role" not in value or "content" not in value:
            raise InvalidArgumentError(f"{argument} needs 'role' and 'content'",
                                       argument=argument)
        content = message_content_parts(value["content"], argument)
        message = Message(role=value["role"], content=content,
                          timestamp=value.get("timestamp"), metadata=value.get("metadata"),
                          id=value.get("id"))
    else:
        raise InvalidArgumentTypeError(f"{argument} must be a Message or a mapping",
                                       argument=argument)
    if not isinstance(message.role, str) or not message.role.strip():
        raise InvalidArgumentError(f"{argument}.role must be a non-empty str", argument=argument)
    if message.id is not None and not isinstance(message.id, str):
        raise InvalidArgumentTypeError(f"{argument}.id must be a str", argument=argument)
    return message


def message_content_parts(value: object, argument: str) -> str | list[MessageContent]:
    """Message content: a str, or parts (``MessageContent`` or ``{"type": ...}`` mappings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [_part(p, f"{argument}.content[{n}]") for n, p in enumerate(value)]
    raise InvalidArgumentTypeError(f"{argument}.content must be a str or a list of parts",
                                   argument=argument)


def _part(value: object, argument: str) -> MessageContent:
    if isinstance(value, MessageContent):
        return value
    if not isinstance(value, Mapping):
        raise InvalidArgumentTypeError(f"{argument} must be a content part mapping",
                                       argument=argument)
    kind = value.get("type")
    if kind == "text":
        text = value.get("text")
        if not isinstance(text, str):
            raise InvalidArgumentTypeError(f"{argument}.text must be a str", argument=argument)
        return TextContent(text)
    if kind in ("image", "image_url"):
        data = value.get("bytes", value.get("image"))
        if not isinstance(data, (bytes, bytearray)):
            raise InvalidArgumentTypeError(f"{argument}: an image part needs its bytes",
                                           argument=argument)
        try:
            mime = ImageMimeType(value.get("mime_type"))
        except ValueError:
            raise InvalidArgumentError(
                f"{argument}.mime_type must be one of image/png, image/jpeg, image/webp",
                argument=argument) from None
        return ImageContent(bytes(data), mime, value.get("description"))
    raise InvalidArgumentError(f"{argument}.type must be 'text' or 'image', got {kind!r}",
                               argument=argument)


def to_message(record: MessageRecord) -> Message:
    """The ``Message`` view of a stored message."""
    content = record.content if isinstance(record.content, str) else tuple(record.content)
    return Message(role=record.role or "", content=content, timestamp=record.timestamp,
                   metadata=record.metadata if isinstance(record.metadata, dict) else None,
                   id=record.id)


def check_image_sizes(contents: Sequence[object], limit: object) -> None:
    """Refuse an image part larger than ``limit`` bytes (``ImageInputLimitConfig``).

    Raises:
        InvalidArgumentError: naming the message and the part.
    """
    if not isinstance(limit, int):
        return
    for n, content in enumerate(contents):
        if isinstance(content, str) or not isinstance(content, Sequence):
            continue
        for k, part in enumerate(content):
            if isinstance(part, ImageContent) and part.bytes is not None \
                    and len(part.bytes) > limit:
                raise InvalidArgumentError(
                    f"messages[{n}].content[{k}]: the image has {len(part.bytes)} bytes, more "
                    f"than max_raw_image_bytes={limit}", argument=f"messages[{n}].content[{k}]")
