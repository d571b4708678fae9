"""Build record objects from the neutral rows engines return."""

from __future__ import annotations

from typing import Any

from oracleagentmemory.apis.message import MessageContent, TextContent
from oracleagentmemory.apis.records import PROFILE_TYPES, Record, RecordStatus, build_record
from oracleagentmemory.core._validation import format_timestamp


def _message_content(row: dict[str, Any]) -> str | tuple[MessageContent, ...]:
    parts = row.get("content_parts")
    if not parts:
        return str(row.get("content") or "")
    return tuple(TextContent(p.get("text", ""), id=p["id"], timestamp=p.get("timestamp"))
                 for p in parts)


def record_from_row(row: dict[str, Any], **extra: Any) -> Record:
    """The record a row stands for (``extra``: further fields, such as ``linked_results``)."""
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
        fields.update(content=_message_content(row), role=row.get("role"),
                      seq_no=int(row.get("seq_no") or 0))
    elif record_type == "thread":
        fields.update(runtime_config=row.get("runtime_config"),
                      runtime_state=row.get("runtime_state"))
    else:
        fields["content"] = row.get("content")
    return build_record(record_type, row["id"], **fields)
