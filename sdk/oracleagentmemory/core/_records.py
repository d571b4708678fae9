"""Build record objects from the neutral rows engines return."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oracleagentmemory.apis.message import ImageContent, ImageMimeType, MessageContent, TextContent
from oracleagentmemory.apis.records import PROFILE_TYPES, Record, RecordStatus, build_record
from oracleagentmemory.core._validation import format_timestamp

MessageImages = Mapping[tuple[str, str], bytes]
"""Loaded bytes of message image parts, by ``(message id, part id)``."""


def _message_content(row: dict[str, Any], images: MessageImages | None
                     ) -> str | tuple[MessageContent, ...]:
    parts = row.get("content_parts")
    if not parts:
        return str(row.get("content") or "")
    return tuple(_part(p, row["id"], images) for p in parts)


def _part(part: dict[str, Any], message_id: str, images: MessageImages | None
          ) -> MessageContent:
    if part.get("type") == "image":
        data = None if images is None else images.get((message_id, part["id"]))
        return ImageContent(data, ImageMimeType(part["mime_type"]), part.get("description"),
                            id=part["id"], timestamp=part.get("timestamp"))
    return TextContent(part.get("text", ""), id=part["id"], timestamp=part.get("timestamp"))


def message_image_owners(rows: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """``(message id, owner)`` of the message rows that have image parts."""
    return [(r["id"], r.get("user_id")) for r in rows if r.get("record_type") == "message"
            and any(p.get("type") == "image" for p in r.get("content_parts") or ())]


def record_from_row(row: dict[str, Any], images: MessageImages | None = None,
                    **extra: Any) -> Record:
    """The record a row stands for (``images``: loaded bytes of message image parts, which are
    ``None`` otherwise; ``extra``: further fields, such as ``linked_results``)."""
    record_type = row["record_type"]
    fields: dict[str, Any] = {
        "timestamp": format_timestamp(row.get("ts")),
        "metadata": row.get("metadata"),
        "status": RecordStatus(row.get("status") or "valid"),
        **extra,
    }
    if record_type not in PROFILE_TYPES:
        fields.update(thread_id=row.get("thread_id"), user_id=row.get("user_id"),
                      agent_id=row.get("agent_id"))
    if record_type == "message":
        fields.update(content=_message_content(row, images), role=row.get("role"),
                      seq_no=int(row.get("seq_no") or 0))
    elif record_type == "image":
        data = row.get("bytes")
        fields.update(content=row.get("content"), message_id=row.get("message_id"),
                      mime_type=row.get("mime_type"),
                      bytes=None if data is None else bytes(data))
    elif record_type == "thread":
        fields.update(runtime_config=row.get("runtime_config"),
                      runtime_state=row.get("runtime_state"))
    else:
        fields["content"] = row.get("content")
    return build_record(record_type, row["id"], **fields)
