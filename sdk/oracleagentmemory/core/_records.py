"""Build record objects from the neutral rows engines return."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from oracleagentmemory.apis.message import ImageContent, ImageMimeType, MessageContent, TextContent
from oracleagentmemory.apis.records import (
    MEMORY_TYPES,
    PROFILE_TYPES,
    RECORD_CLASS_BY_TYPE,
    MessageRecord,
    Record,
    RecordStatus,
    build_record,
)
from oracleagentmemory.core._validation import format_timestamp

MessageImages = Mapping[tuple[str, str], bytes]
"""Loaded bytes of message image parts, by ``(message id, part id)``."""

_UTC_ZONES: tuple[tzinfo, ...] = (ZoneInfo("Etc/UTC"), timezone.utc, ZoneInfo("UTC"))
"""Time zones always at offset zero, in which a timestamp's ISO text is already its UTC text:
``timezone.utc`` and the zones psycopg hands out for a server whose ``TimeZone`` is UTC."""
_STATUS: dict[object, RecordStatus] = {s.value: s for s in RecordStatus}
"""Each status by its stored text (what ``RecordStatus(text)`` returns, without the enum call)."""
_SCOPED_CLASSES: dict[str, Callable[..., Record]] = {
    t: RECORD_CLASS_BY_TYPE[t] for t in (*MEMORY_TYPES, "thread_summary")}
"""Scoped record classes whose fields are exactly the common ones (positional order ``id,
content, timestamp, metadata, status, linked_results, thread_id, user_id, agent_id``)."""
_PROFILE_CLASSES: dict[str, Callable[..., Record]] = {
    t: RECORD_CLASS_BY_TYPE[t] for t in PROFILE_TYPES}
"""Unscoped record classes (positional order ``id, content, timestamp, metadata, status,
linked_results``)."""


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


def _timestamp(value: datetime | None) -> str | None:
    """:func:`format_timestamp`, without the conversion when ``value`` is in UTC already."""
    if value is not None and value.tzinfo in _UTC_ZONES:
        return value.isoformat()
    return format_timestamp(value)


def record_from_row(row: dict[str, Any], images: MessageImages | None = None,
                    **extra: Any) -> Record:
    """The record a row stands for (``images``: loaded bytes of message image parts, which are
    ``None`` otherwise; ``extra``: further fields, such as ``linked_results``)."""
    record_type = row["record_type"]
    status = _STATUS.get(row.get("status") or "valid")
    if status is not None and (not extra or extra.keys() == {"linked_results"}):
        # The common rows, built by position: the same values as build_record below gives.
        linked = extra.get("linked_results", ())
        get = row.get
        cls = _SCOPED_CLASSES.get(record_type)
        if cls is not None:
            return cls(row["id"], get("content"), _timestamp(get("ts")), get("metadata"), status,
                       linked, get("thread_id"), get("user_id"), get("agent_id"))
        if record_type == "message":
            return MessageRecord(row["id"], _message_content(row, images), _timestamp(get("ts")),
                                 get("metadata"), status, linked, get("thread_id"),
                                 get("user_id"), get("agent_id"), get("role"),
                                 seq_no=int(get("seq_no") or 0))
        cls = _PROFILE_CLASSES.get(record_type)
        if cls is not None:
            return cls(row["id"], get("content"), _timestamp(get("ts")), get("metadata"), status,
                       linked)
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
