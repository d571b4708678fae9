"""Turn the arguments of ``update`` into an update plan (spec "Store Write Semantics")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.records import MEMORY_TYPES, PROFILE_TYPES
from oracleagentmemory.core._images import (
    IMAGE_MIME_TYPE_KEY,
    check_image_bytes,
    split_image_metadata,
)
from oracleagentmemory.core._validation import is_single_vector, parse_timestamp, to_vector
from oracleagentmemory.core._writeplan import (
    EXPIRING_TYPES,
    STATUS_TYPES,
    WriteSettings,
    check_anchor,
    check_chunk_list,
    check_metadata,
    check_status,
    embed_missing_vectors,
    image_attachments,
    image_description,
    message_parts,
    pair_vectors,
    retrieval_chunks,
    summary_content,
)
from oracleagentmemory.core.retention import expiry, resolve_ttl_days
from oracleagentmemory.engines.interfaces import UNSET, ChunkRow, ImageBody, UpdatePlan, Vector
from oracleagentmemory.engines.layout import SEARCHABLE_TYPES
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

UPDATE_ARGUMENTS = ("content", "index_text", "embedding", "metadata", "timestamp", "ttl_days",
                    "ttl_anchor", "status")


@dataclass
class PendingUpdate:
    """An update plan plus what must be read from the database before it is applied."""

    plan: UpdatePlan
    ttl_days_after_stored_event_ts: int | None = None
    """Set when the new expiry is anchored at the event time the record already has."""
    existing_row_vectors: list[Vector | None] | None = None
    """Vectors for the record's existing retrieval rows (embedding-only updates)."""
    clear_existing_vectors: bool = False
    dims: set[int] = field(default_factory=set)


def plan_update(settings: WriteSettings, record_type: str, record_id: str,
                **arguments: Any) -> PendingUpdate:
    """Validate ``update`` arguments (``text`` already folded into ``content``)."""
    given = {k: v for k, v in arguments.items() if v is not NOT_SET_MARKER}
    if not given:
        raise InvalidArgumentError(
            "update needs at least one of: " + ", ".join(UPDATE_ARGUMENTS)
        )
    pending = PendingUpdate(UpdatePlan(record_type=record_type, record_id=record_id))
    plan = pending.plan
    text = _content(settings, plan, given)
    _retrieval(settings, pending, given, text)
    if "metadata" in given:
        plan.metadata = check_metadata(given["metadata"], "metadata")
        if record_type == "image":
            plan.metadata = _image_metadata(plan.metadata, "content" in given)
    elif record_type == "image" and "content" in given:
        raise InvalidArgumentError(
            f"metadata.{IMAGE_MIME_TYPE_KEY} is required to replace an image's content",
            argument=f"metadata.{IMAGE_MIME_TYPE_KEY}")
    if record_type == "image" and "index_text" in given:
        plan.description = image_description(given["index_text"])
    if "timestamp" in given:
        if record_type in PROFILE_TYPES:
            raise InvalidArgumentError(f"timestamp: {record_type} records have no event timestamp")
        plan.event_ts = parse_timestamp(given["timestamp"], "timestamp")
    if "status" in given:
        if record_type not in STATUS_TYPES:
            raise InvalidArgumentError(f"status: {record_type} records have no lifecycle status")
        plan.status = check_status(given["status"], "status")
    if "ttl_days" in given or "ttl_anchor" in given:
        _ttl(settings, pending, given)
    missing = [] if plan.chunks is UNSET or "embedding" in given else list(plan.chunks)
    if plan.attachments is not UNSET:
        missing.extend(c for a in plan.attachments for c in a.chunks)
    if missing:
        embed_missing_vectors(settings, missing)
    return pending


def _image_metadata(metadata: dict[str, Any] | None, replaces_content: bool
                    ) -> dict[str, Any] | None:
    """An image's new metadata without the declared type (which only comes with new bytes)."""
    if not replaces_content:
        if metadata is not None and IMAGE_MIME_TYPE_KEY in metadata:
            raise InvalidArgumentError(
                f"metadata.{IMAGE_MIME_TYPE_KEY}: an image's type changes only with its bytes; "
                "pass content too", argument=f"metadata.{IMAGE_MIME_TYPE_KEY}")
        return metadata
    return split_image_metadata(metadata, "metadata")[1]


def _content(settings: WriteSettings, plan: UpdatePlan, given: dict[str, Any]) -> str | None:
    """Store the new content on ``plan``; returns its retrieval text (None when unchanged)."""
    if "content" not in given:
        return None
    value = given["content"]
    record_type = plan.record_type
    if record_type == "thread":
        raise InvalidArgumentError("content: thread records have no content")
    if record_type == "image":
        metadata = given.get("metadata")
        mime_type, _ = split_image_metadata(
            metadata if isinstance(metadata, dict) else None, "metadata")
        plan.content = ImageBody(mime_type, check_image_bytes(
            value, mime_type, "content", f"metadata.{IMAGE_MIME_TYPE_KEY}"))
        return None
    if value is None:
        if record_type == "message":
            raise InvalidArgumentError(
                "content=None is not allowed for message records; pass '' to clear")
        if record_type in PROFILE_TYPES:
            raise InvalidArgumentError(f"content=None is not supported for {record_type} records")
        if record_type in MEMORY_TYPES:
            for other in ("index_text", "embedding"):
                if given.get(other) is not None and not _is_empty_payload(given[other]):
                    raise InvalidArgumentError(
                        f"content=None clears the stored text and retrieval rows, so it cannot "
                        f"be combined with a non-None {other}"
                    )
            plan.content = None
            plan.chunks = []
            return None
    if record_type == "thread_summary":
        plan.content = summary_content(value, "content")
        return None
    if record_type == "message":
        text, parts, images = message_parts(value, "content")
        plan.content = (text, parts)
        # Scope and expiry are the stored message's (the engine sets them).
        plan.attachments = image_attachments(settings, images, plan.record_id, None, None, None,
                                             None, None)
        return text
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(f"content must be a str or None for {record_type} records")
    plan.content = value
    return value


def _is_empty_payload(value: object) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 0


def _retrieval(settings: WriteSettings, pending: PendingUpdate, given: dict[str, Any],
               text: str | None) -> None:
    plan = pending.plan
    if plan.record_type not in SEARCHABLE_TYPES:
        for argument in ("index_text", "embedding"):
            if argument in given:
                raise InvalidArgumentError(
                    f"{argument}: {plan.record_type} records are not searchable")
        return
    if plan.chunks is not UNSET:  # content=None already cleared the rows
        return
    has_embedding = "embedding" in given
    payload = given.get("embedding")
    if has_embedding and payload is not None and settings.vector_dim is None:
        raise InvalidArgumentError(
            "embedding: this store has no local vector storage (vector_dim is None); "
            "pass index_text instead"
        )
    chunks: list[str] | None = None
    retrieval_text: str | None = None
    if "index_text" in given:
        index_text = given["index_text"]
        if index_text is None:
            if has_embedding and payload is not None and not _is_empty_payload(payload):
                raise InvalidArgumentError(
                    "index_text=None clears the retrieval rows, so explicit non-empty "
                    "embedding vectors are not allowed in the same call"
                )
            plan.chunks = []
            return
        if isinstance(index_text, str):
            retrieval_text = index_text
        elif isinstance(index_text, (list, tuple)):
            chunks = check_chunk_list(index_text, "index_text")
        else:
            raise InvalidArgumentTypeError("index_text must be a str, a list of str or None")
    elif "content" in given and plan.record_type != "image":  # an image's text: index_text
        retrieval_text = text or ""
    text_changes = retrieval_text is not None or chunks is not None
    if text_changes:
        if has_embedding and payload is not None:
            plan.chunks = pair_vectors(settings, retrieval_text, chunks, payload, "embedding",
                                       "index_text", pending.dims)
        else:
            pieces = (
                chunks if chunks is not None
                else retrieval_chunks(settings, retrieval_text or "")
            )
            plan.chunks = [ChunkRow(p, None) for p in pieces]
        _check_dims(settings, pending.dims)
        return
    if not has_embedding:
        return
    if payload is None:
        pending.clear_existing_vectors = True
        return
    if is_single_vector(payload):
        vectors: list[Vector | None] = [to_vector(payload, "embedding")]
    elif isinstance(payload, (list, tuple)) or hasattr(payload, "ndim"):
        vectors = [to_vector(v, f"embedding[{j}]") for j, v in enumerate(payload)]
    else:
        raise InvalidArgumentTypeError(
            "embedding must be a vector, a list of chunk vectors or None")
    pending.dims.update(v.size for v in vectors if v is not None)
    _check_dims(settings, pending.dims)
    pending.existing_row_vectors = vectors


def _check_dims(settings: WriteSettings, dims: set[int]) -> None:
    if len(dims) > 1:
        raise InvalidArgumentError(
            f"embedding: vectors must share one dimension, got {sorted(dims)}")
    wrong = [d for d in dims if d != settings.vector_dim]
    if wrong:
        raise InvalidArgumentError(
            f"embedding: vectors have dimension {wrong[0]} but the store's vector_dim is "
            f"{settings.vector_dim}"
        )


def _ttl(settings: WriteSettings, pending: PendingUpdate, given: dict[str, Any]) -> None:
    plan = pending.plan
    if plan.record_type not in EXPIRING_TYPES:
        raise InvalidArgumentError(f"ttl_days/ttl_anchor: {plan.record_type} records do not expire")
    ttl = resolve_ttl_days(given.get("ttl_days", NOT_SET_MARKER), settings.default_ttl_days,
                           settings.max_ttl_days)
    anchored = check_anchor(given.get("ttl_anchor", NOT_SET_MARKER), "ttl_anchor")
    if not anchored or ttl is None:
        plan.expiry = expiry(ttl, None)
    elif plan.event_ts is UNSET:
        pending.ttl_days_after_stored_event_ts = ttl
    elif plan.event_ts is None:
        raise InvalidArgumentError(
            "ttl_anchor=TimeToLiveAnchor.TIMESTAMP needs a timestamp, but timestamp=None "
            "clears it"
        )
    else:
        plan.expiry = expiry(ttl, plan.event_ts)
