"""Turn the arguments of ``add`` into insert plans, following the spec's write semantics.

Stored content and retrieval payload are kept apart: ``contents`` is what reads return;
``index_texts`` and ``embeddings`` decide the retrieval rows (chunk text and vectors).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.apis.message import ImageContent, MessageContent, TextContent
from oracleagentmemory.apis.records import MEMORY_TYPES, PROFILE_TYPES, RECORD_TYPES, RecordStatus
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core._images import (
    check_image_bytes,
    check_image_part,
    split_image_metadata,
)
from oracleagentmemory.core._validation import (
    MAX_ID_LENGTH,
    broadcast,
    check_id,
    check_required_id,
    is_single_vector,
    parse_timestamp,
    to_vector,
)
from oracleagentmemory.core.dbsearch import parse_enum
from oracleagentmemory.core.retention import expiry, resolve_ttl_days
from oracleagentmemory.engines.interfaces import ChunkRow, Expiry, ImageBody, RowPlan, Vector
from oracleagentmemory.engines.layout import SEARCHABLE_TYPES
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError
from oracleagentmemory.observability._operation import embed as observed_embed

EXPIRING_TYPES = MEMORY_TYPES | {"message", "image"}
"""Types with a time to live."""
STATUS_TYPES = MEMORY_TYPES | {"message", "thread_summary", "image"}
"""Types with a lifecycle status."""
TEXT_TYPES = MEMORY_TYPES | PROFILE_TYPES
"""Types whose content is plain text."""
T = TypeVar("T")

Chunker = Callable[[str], list[str]]


@dataclass
class WriteSettings:
    """What the store knows when it plans a write."""

    vector_dim: int | None
    embedder: IEmbedder | None
    chunker: Chunker | None
    default_ttl_days: int | None
    max_ttl_days: int | None
    default_user_id: str | _NotSetMarker = NOT_SET_MARKER


def check_record_type(record_type: object, allowed: frozenset[str] = RECORD_TYPES) -> str:
    """A supported record type."""
    if not isinstance(record_type, str):
        raise InvalidArgumentTypeError(
            f"record_type must be a str, got {type(record_type).__name__}")
    if record_type not in allowed:
        raise InvalidArgumentError(
            f"record_type {record_type!r} is not supported; use one of {', '.join(sorted(allowed))}"
        )
    return record_type


def check_metadata(value: object, argument: str) -> dict[str, Any] | None:
    """``None`` or a JSON-serialisable mapping with string keys (copied)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgumentTypeError(
            f"{argument} must be a dict or None, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise InvalidArgumentError(f"{argument} keys must be strings, got {key!r}")
    try:
        result: dict[str, Any] = json.loads(json.dumps(dict(value), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{argument} must be JSON-serialisable: {exc}") from None
    return result


def check_status(value: object, argument: str) -> str:
    """A :class:`RecordStatus` (or its value) as stored text."""
    return parse_enum(RecordStatus, value, argument).value


def check_anchor(value: object, argument: str) -> bool:
    """Whether a ``ttl_anchor`` value selects ``TimeToLiveAnchor.TIMESTAMP``."""
    if value is NOT_SET_MARKER or value is None:
        return False
    return parse_enum(TimeToLiveAnchor, value, argument) is TimeToLiveAnchor.TIMESTAMP


@dataclass
class MessageImage:
    """A validated image part of a message being written (its bytes go to an image row)."""

    part_id: str
    body: ImageBody


MessageBody = tuple[str, "list[dict[str, Any]] | None", "list[MessageImage]"]
"""A message's text, its JSON parts (``None`` for plain text) and its image parts."""


def message_content(value: object, argument: str) -> tuple[str, list[dict[str, Any]] | None]:
    """Split message content into its text and (for part lists) its JSON parts."""
    text, parts, _ = message_parts(value, argument)
    return text, parts


def message_parts(value: object, argument: str) -> MessageBody:
    """Split message content into its text, its JSON parts and its validated image parts.

    The text joins the text parts; an image part keeps its id, timestamp, format and
    description in the JSON parts, its bytes in the returned :class:`MessageImage`.
    """
    if isinstance(value, str):
        return value, None, []
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        parts: list[dict[str, Any]] = []
        texts: list[str] = []
        images: list[MessageImage] = []
        for n, part in enumerate(value):
            where = f"{argument}[{n}]"
            if not isinstance(part, MessageContent):
                raise InvalidArgumentTypeError(f"{where} must be a MessageContent part",
                                               argument=where)
            part_id = check_required_id(part.id, f"{where}.id")
            if any(p["id"] == part_id for p in parts):
                raise InvalidArgumentError(f"{where}.id: duplicate part id {part_id!r}",
                                           argument=f"{where}.id")
            if isinstance(part, TextContent):
                parts.append({"type": "text", "id": part_id, "timestamp": part.timestamp,
                              "text": part.text})
                texts.append(part.text)
            elif isinstance(part, ImageContent):
                mime_type, data, description = check_image_part(part, where)
                parts.append({"type": "image", "id": part_id, "timestamp": part.timestamp,
                              "mime_type": mime_type, "description": description})
                images.append(MessageImage(part_id, ImageBody(mime_type, data, description)))
            else:
                raise InvalidArgumentTypeError(
                    f"{where} must be a TextContent or an ImageContent part", argument=where)
        return "\n".join(texts), parts, images
    raise InvalidArgumentTypeError(
        f"{argument} must be a str or a sequence of MessageContent parts")


def image_attachments(settings: WriteSettings, images: list[MessageImage], message_id: str,
                      thread_id: str | None, user_id: str | None, agent_id: str | None,
                      event_ts: datetime | None, lifetime: Expiry | None) -> list[RowPlan]:
    """The image plans of a message's image parts: the message's scope, event time and expiry,
    the part's description as retrieval text (embedded later with the other chunks)."""
    plans = []
    for image in images:
        image.body.message_id = message_id
        chunks = [ChunkRow(c, None)
                  for c in retrieval_chunks(settings, image.body.description or "")]
        plans.append(RowPlan(record_type="image", record_id=image.part_id, content=image.body,
                             thread_id=thread_id, user_id=user_id, agent_id=agent_id,
                             event_ts=event_ts, expiry=lifetime, chunks=chunks))
    return plans


def image_description(index_text: object) -> str | None:
    """The description an image stores for its (validated) retrieval text argument."""
    if isinstance(index_text, str):
        return index_text
    if isinstance(index_text, (list, tuple)):
        return "\n".join(index_text)
    return None


def image_content(value: object, metadata: dict[str, Any] | None, argument: str) -> ImageBody:
    """An image record's validated bytes and declared type (``argument``: ``contents[n]``; the
    type is ``metadata[n].image_mime_type``). The description is set from the retrieval text."""
    metadata_argument = "metadata" + argument.removeprefix("contents")
    mime_type, _ = split_image_metadata(metadata, metadata_argument)
    data = check_image_bytes(value, mime_type, argument,
                             f"{metadata_argument}.image_mime_type")
    return ImageBody(mime_type, data)


def summary_content(value: object, argument: str) -> dict[str, object] | None:
    """Thread-summary content: a mapping, a string (stored as ``{"text": ...}``) or ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        return {"text": value}
    if isinstance(value, Mapping):
        return check_metadata(value, argument)
    raise InvalidArgumentTypeError(
        f"{argument} must be a mapping, a str or None for thread summaries")


def plan_add(settings: WriteSettings, contents: object, record_type: object, *,
             record_ids: object = NOT_SET_MARKER, index_texts: object = NOT_SET_MARKER,
             embeddings: object = NOT_SET_MARKER, thread_ids: object = NOT_SET_MARKER,
             user_ids: object = NOT_SET_MARKER, agent_ids: object = NOT_SET_MARKER,
             roles: object = NOT_SET_MARKER, timestamps: object = NOT_SET_MARKER,
             metadata: object = NOT_SET_MARKER, ttl_days: object = NOT_SET_MARKER,
             ttl_anchor: object = NOT_SET_MARKER,
             statuses: object = NOT_SET_MARKER) -> list[RowPlan]:
    """Validate ``add`` arguments and return one insert plan per record.

    ``NOT_SET_MARKER`` is an omitted argument. Arguments are checked column by column: a value
    given once for all records is checked once, a list entry by entry; every error names the
    argument and the record's position.
    """
    record_type = check_record_type(record_type)
    if isinstance(contents, (str, bytes, Mapping)) or not isinstance(contents, Sequence):
        raise InvalidArgumentTypeError("contents must be a list with one payload per record")
    count = len(contents)
    if count == 0:
        return []

    if metadata is NOT_SET_MARKER:
        metadata = None
    if statuses is NOT_SET_MARKER:
        statuses = RecordStatus.VALID
    ids = _record_ids(record_ids, count, record_type)
    thread_col = _scope(thread_ids, count, "thread_ids", NOT_SET_MARKER)
    user_col = _scope(user_ids, count, "user_ids", settings.default_user_id)
    agent_col = _scope(agent_ids, count, "agent_ids", NOT_SET_MARKER)
    role_col = _scope(roles, count, "roles", NOT_SET_MARKER)
    timestamp_col = _column(timestamps, count, "timestamps", parse_timestamp)
    metadata_col = _column(metadata, count, "metadata", check_metadata)
    ttl_values = broadcast(ttl_days, count, "ttl_days")
    anchor_col = _column(ttl_anchor, count, "ttl_anchor", check_anchor)
    status_col = _column(statuses, count, "statuses", check_status)
    index_col = _aligned(index_texts, count, "index_texts")
    embedding_col = _aligned(embeddings, count, "embeddings")

    if record_type == "thread" and any(t is not None for t in thread_col):
        raise InvalidArgumentError("thread_ids must not be set for record_type 'thread'; "
                                   "use record_ids for the thread identifiers")
    if record_type in PROFILE_TYPES:
        thread_col = user_col = agent_col = [None] * count
    if record_type != "message":
        role_col = [None] * count
    explicit_dims: set[int] = set()
    try:
        _check_statuses(record_type, status_col)
        ttl_col = _ttl_column(settings, record_type, ttl_days, ttl_values)
        if record_type not in EXPIRING_TYPES:
            anchor_col = [False] * count
        else:
            _check_anchors(ttl_col, anchor_col, timestamp_col)
        content_col, text_col = _content_column(record_type, contents, metadata_col)
        chunk_col = _chunk_column(settings, record_type, text_col, index_col, embedding_col,
                                  explicit_dims)
        if record_type == "message":
            chunk_col = [_with_speaker(chunks, role, index_text)
                         for chunks, role, index_text in zip(chunk_col, role_col, index_col,
                                                             strict=True)]
    except (InvalidArgumentError, InvalidArgumentTypeError):
        # Several records may be invalid: report the first one's first error, as a check of
        # one record after the other would.
        _raise_first_record_error(settings, record_type, status_col, ttl_values, anchor_col,
                                  timestamp_col, contents, metadata_col, index_col, embedding_col)
        raise
    if len(explicit_dims) > 1:
        raise InvalidArgumentError(
            f"embeddings: all vectors of one add() must have the same dimension, got "
            f"{sorted(explicit_dims)}"
        )
    _check_store_dimension(settings, explicit_dims, "embeddings")
    plans = [
        RowPlan(record_type=record_type, record_id=record_id, content=content, thread_id=thread,
                user_id=user, agent_id=agent, role=role, event_ts=timestamp, metadata=meta,
                expiry=expiry(ttl, timestamp if anchor else None), status=status, chunks=chunks)
        for record_id, content, thread, user, agent, role, timestamp, meta, ttl, anchor, status,
        chunks in zip(ids, content_col, thread_col, user_col, agent_col, role_col, timestamp_col,
                      metadata_col, ttl_col, anchor_col, status_col, chunk_col, strict=True)
    ]
    missing = [c for chunks, e in zip(chunk_col, embedding_col, strict=True)
               if e is NOT_SET_MARKER or e is None for c in chunks]
    if record_type == "message":
        for plan, body in zip(plans, content_col, strict=True):
            text, parts, images = body
            plan.content = (text, parts)
            if images:
                plan.attachments = image_attachments(
                    settings, images, plan.record_id, plan.thread_id, plan.user_id,
                    plan.agent_id, plan.event_ts, plan.expiry)
                missing.extend(c for a in plan.attachments for c in a.chunks)
    elif record_type == "image":
        for n, (plan, index_text) in enumerate(zip(plans, index_col, strict=True)):
            plan.metadata = split_image_metadata(plan.metadata, f"metadata[{n}]")[1]
            assert isinstance(plan.content, ImageBody)
            plan.content.description = image_description(index_text)
    embed_missing_vectors(settings, missing)
    return plans


def _raise_first_record_error(settings: WriteSettings, record_type: str, statuses: list[str],
                              ttl_days: list[Any], anchors: list[bool],
                              timestamps: list[datetime | None], contents: Sequence[object],
                              metadata: list[dict[str, Any] | None], index_texts: list[Any],
                              payloads: list[Any]) -> None:
    """Check the records one by one (status, lifetime, content, retrieval rows) and raise the
    first error; returns only if there is none."""
    expiring = record_type in EXPIRING_TYPES
    for n in range(len(contents)):
        _check_statuses(record_type, statuses[n:n + 1], n)
        ttl = ttl_days[n]
        if not expiring:
            _ttl_column(settings, record_type, ttl, [ttl], n)
        else:  # the lifetime before clamping: the same errors, no second warning
            unclamped = resolve_ttl_days(ttl, settings.default_ttl_days, None, f"ttl_days[{n}]")
            lifetime = unclamped if unclamped is not None else settings.max_ttl_days
            _check_anchors([lifetime], anchors[n:n + 1], timestamps[n:n + 1], n)
        _, text = _content(record_type, contents[n], metadata[n], f"contents[{n}]")
        _retrieval_rows(settings, record_type, text, index_texts[n], payloads[n], n, set())


def embed_missing_vectors(settings: WriteSettings, chunks: list[ChunkRow]) -> None:
    """Fill in vectors of text chunks with the store's embedder, in one batch."""
    if settings.vector_dim is None or settings.embedder is None:
        return
    todo = [c for c in chunks if c.vector is None and c.text]
    if not todo:
        return
    vectors = np.asarray(observed_embed(settings.embedder, [c.text or "" for c in todo]),
                         dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape != (len(todo), settings.vector_dim):
        raise InvalidArgumentError(
            f"the embedder returned vectors of shape {vectors.shape}; the store expects "
            f"({len(todo)}, {settings.vector_dim})"
        )
    for chunk, vector in zip(todo, vectors, strict=True):
        chunk.vector = vector


def _check_store_dimension(settings: WriteSettings, dims: set[int], argument: str) -> None:
    if not dims:
        return
    if settings.vector_dim is None:
        raise InvalidArgumentError(
            f"{argument}: this store has no local vector storage (vector_dim is None); "
            "pass index_texts instead, or open the store with vector_dim"
        )
    wrong = sorted(d for d in dims if d != settings.vector_dim)
    if wrong:
        raise InvalidArgumentError(
            f"{argument}: vectors have dimension {wrong[0]} but the store's vector_dim is "
            f"{settings.vector_dim}"
        )


_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_UUID_DIGIT_POSITIONS = np.array([n for n in range(36) if n not in (8, 13, 18, 23)])
"""Where the 32 hex digits go in the 36-character text form (the rest are dashes)."""


def new_record_ids(count: int) -> list[str]:
    """``count`` random (version 4) UUIDs in their text form, drawn and formatted in one batch
    (as ``str(uuid.uuid4())`` would give them one by one)."""
    octets = np.frombuffer(os.urandom(16 * count), dtype=np.uint8).reshape(count, 16).copy()
    octets[:, 6] = (octets[:, 6] & 0x0F) | 0x40  # version 4
    octets[:, 8] = (octets[:, 8] & 0x3F) | 0x80  # RFC 4122 variant
    nibbles = np.empty((count, 32), dtype=np.uint8)
    nibbles[:, 0::2] = octets >> 4
    nibbles[:, 1::2] = octets & 0x0F
    text = np.full((count, 36), ord("-"), dtype=np.uint8)
    text[:, _UUID_DIGIT_POSITIONS] = _HEX_DIGITS[nibbles]
    joined = text.tobytes().decode("ascii")
    return [joined[i:i + 36] for i in range(0, 36 * count, 36)]


def _all_valid_ids(values: list[Any], allow_none: bool) -> bool:
    """Whether every entry passes :func:`check_id`, checked in bulk (``False``: check each)."""
    kinds = set(map(type, values))
    if not kinds <= ({str, type(None)} if allow_none else {str}):
        return False
    texts = values if len(kinds) == 1 and str in kinds else [v for v in values if v is not None]
    return not texts or (max(map(len, texts)) <= MAX_ID_LENGTH and all(map(str.strip, texts)))


def _record_ids(value: object, count: int, record_type: str) -> list[str]:
    if value is NOT_SET_MARKER or value is None:
        if record_type in PROFILE_TYPES:
            raise InvalidArgumentError(
                f"record_ids[0]: {record_type} records need the actor id as record id")
        return new_record_ids(count)
    if isinstance(value, str):
        if count != 1:
            raise InvalidArgumentError(
                f"record_ids is a single string but there are {count} records; pass a list"
            )
        raw: list[Any] = [value]
    elif isinstance(value, (list, tuple)):
        raw = broadcast(value, count, "record_ids")
    else:
        raise InvalidArgumentTypeError(
            f"record_ids must be a str, None or a list, got {type(value).__name__}")
    valid = _all_valid_ids(raw, allow_none=True)
    missing = [n for n, item in enumerate(raw) if item is None]
    if not valid or (missing and record_type in PROFILE_TYPES):
        for n, item in enumerate(raw):  # raises for the first invalid entry
            if check_id(item, f"record_ids[{n}]", allow_none=True) is None:
                raise InvalidArgumentError(
                    f"record_ids[{n}]: {record_type} records need the actor id as record id")
    ids: list[str] = raw
    if missing:
        ids = list(raw)
        for n, record_id in zip(missing, new_record_ids(len(missing)), strict=True):
            ids[n] = record_id
    if len(set(ids)) != count:
        seen: set[str] = set()
        for n, record_id in enumerate(ids):
            if record_id in seen:
                raise InvalidArgumentError(
                    f"record_ids[{n}]: duplicate record id {record_id!r} in one call")
            seen.add(record_id)
    return ids


def _scope(value: object, count: int, argument: str, default: object) -> list[Any]:
    """One actor or thread id (or ``None``) per record; ``NOT_SET_MARKER`` takes ``default``."""
    fallback = None if default is NOT_SET_MARKER else default
    if not isinstance(value, (list, tuple)):
        checked = check_id(fallback if value is NOT_SET_MARKER else value, f"{argument}[0]",
                           allow_none=True)
        return [checked] * count
    values = broadcast(value, count, argument)
    if _all_valid_ids(values, allow_none=True):
        return values
    result: list[Any] = []
    for n, item in enumerate(values):
        if item is NOT_SET_MARKER:
            item = fallback
        result.append(check_id(item, f"{argument}[{n}]", allow_none=True))
    return result


def _column(value: object, count: int, argument: str, check: Callable[[object, str], T]
            ) -> list[T]:
    """One checked value per record: a single value is checked once and shared by all."""
    if isinstance(value, (list, tuple)):
        return [check(v, f"{argument}[{n}]")
                for n, v in enumerate(broadcast(value, count, argument))]
    return [check(value, f"{argument}[0]")] * count


def _aligned(value: object, count: int, argument: str) -> list[Any]:
    if value is NOT_SET_MARKER or value is None:
        return [NOT_SET_MARKER] * count
    if not isinstance(value, (list, tuple)):
        raise InvalidArgumentTypeError(f"{argument} must be a list with one entry per record")
    if len(value) != count:
        raise InvalidArgumentError(
            f"{argument} has {len(value)} entries but there are {count} records")
    return list(value)


def _check_statuses(record_type: str, statuses: list[str], first: int = 0) -> None:
    """Refuse a lifecycle status on types without one (``first``: position of the first)."""
    if record_type in STATUS_TYPES:
        return
    for n, status in enumerate(statuses, first):
        if status != RecordStatus.VALID.value:
            raise InvalidArgumentError(
                f"statuses[{n}]: {record_type} records have no lifecycle status")


def _ttl_column(settings: WriteSettings, record_type: str, value: object,
                values: list[Any], first: int = 0) -> list[int | None]:
    """Each record's lifetime in days (``None``: never expires); ``values`` is ``value`` spread
    over the records (``first``: position of the first)."""
    count = len(values)
    if record_type not in EXPIRING_TYPES:
        for n, ttl in enumerate(values, first):
            if ttl is not NOT_SET_MARKER and ttl is not None:
                raise InvalidArgumentError(f"ttl_days[{n}]: {record_type} records do not expire")
        return [None] * count
    default, maximum = settings.default_ttl_days, settings.max_ttl_days
    if not isinstance(value, (list, tuple)):
        unclamped = resolve_ttl_days(value, default, None, "ttl_days[0]")  # type: ignore[arg-type]
        if maximum is None or unclamped is None or unclamped <= maximum:
            return [unclamped if unclamped is not None else maximum] * count
    # Clamped values warn once per record, naming it.
    return [resolve_ttl_days(ttl, default, maximum, f"ttl_days[{n}]")
            for n, ttl in enumerate(values)]


def _check_anchors(ttl_days: list[int | None], anchors: list[bool],
                   timestamps: list[datetime | None], first: int = 0) -> None:
    """Refuse a timestamp anchor on an expiring record without a timestamp."""
    if not any(anchors):
        return
    for n, (ttl, anchor, timestamp) in enumerate(zip(ttl_days, anchors, timestamps,
                                                     strict=True), first):
        if anchor and ttl is not None and timestamp is None:
            raise InvalidArgumentError(
                f"timestamps[{n}]: ttl_anchor=TimeToLiveAnchor.TIMESTAMP needs a concrete "
                "ISO-8601 timestamp for every record"
            )


def _fallback(value: object, metadata: dict[str, Any] | None) -> object:
    if value is None and metadata is not None and isinstance(metadata.get("content"), str):
        return metadata["content"]
    return value


def _content_column(record_type: str, contents: Sequence[object],
                    metadata: list[dict[str, Any] | None]) -> tuple[list[Any], list[str | None]]:
    """Each record's stored content and its text for retrieval."""
    if (record_type in TEXT_TYPES or record_type == "message") \
            and set(map(type, contents)) == {str}:
        texts: list[Any] = list(contents)
        if record_type == "message":  # plain text messages: (text, no parts, no images)
            return [(text, None, []) for text in texts], texts
        return texts, texts
    pairs = [_content(record_type, value, meta, f"contents[{n}]")
             for n, (value, meta) in enumerate(zip(contents, metadata, strict=True))]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _content(record_type: str, value: object, metadata: dict[str, Any] | None,
             argument: str) -> tuple[Any, str | None]:
    """One record's stored content and its text for retrieval."""
    if record_type == "thread":
        if value not in (None, ""):
            raise InvalidArgumentError(f"{argument}: thread records have no content; pass None")
        return None, None
    if record_type == "thread_summary":
        return summary_content(value, argument), None
    if record_type == "image":
        return image_content(value, metadata, argument), None
    value = _fallback(value, metadata)
    if record_type == "message":
        body = message_parts("" if value is None else value, argument)
        return body, body[0]
    if value is not None and not isinstance(value, str):
        raise InvalidArgumentTypeError(
            f"{argument} must be a str or None for {record_type} records")
    if value is None and record_type in PROFILE_TYPES:
        raise InvalidArgumentError(f"{argument}: {record_type} records need text content")
    return value, value


def retrieval_chunks(settings: WriteSettings, text: str) -> list[str]:
    """Chunks the store writes for a retrieval string it may split."""
    if not text:
        return []
    if settings.chunker is None:
        return [text]
    return [c for c in settings.chunker(text) if c]


def check_chunk_list(value: Sequence[object], argument: str) -> list[str]:
    """Caller-owned chunks: non-empty strings, never split again."""
    chunks: list[str] = []
    for j, chunk in enumerate(value):
        if not isinstance(chunk, str):
            raise InvalidArgumentTypeError(f"{argument}[{j}] must be a str")
        if not chunk.strip():
            raise InvalidArgumentError(
                f"{argument}[{j}]: caller-owned chunks must be non-empty strings")
        chunks.append(chunk)
    return chunks


def pair_vectors(settings: WriteSettings, text: str | None, chunks: list[str] | None,
                 payload: object, argument: str, index_argument: str,
                 dims: set[int]) -> list[ChunkRow]:
    """Retrieval rows for explicit vectors ``payload`` (spec "vector shape" rules).

    ``chunks`` is the caller-owned chunk list, or ``None`` when the retrieval text is ``text``.
    """
    if is_single_vector(payload):
        vector = to_vector(payload, argument)
        dims.add(vector.size)
        if chunks is None:
            return [ChunkRow(text or None, vector)]
        if len(chunks) == 1:
            return [ChunkRow(chunks[0], vector)]
        if not chunks:
            return [ChunkRow(None, vector)]
        raise InvalidArgumentError(
            f"{argument}: one vector was given but {index_argument} has {len(chunks)} chunks; "
            "pass one vector per chunk"
        )
    if isinstance(payload, (str, bytes)) or not isinstance(payload, (Sequence, np.ndarray)):
        raise InvalidArgumentTypeError(f"{argument} must be a vector or a list of chunk vectors")
    vectors: list[Vector] = [to_vector(v, f"{argument}[{j}]") for j, v in enumerate(payload)]
    dims.update(v.size for v in vectors)
    has_text = bool(chunks) if chunks is not None else bool(text)
    if not vectors:
        if has_text:
            raise InvalidArgumentError(
                f"{argument}: an empty vector payload is allowed only when the record has no "
                "retrieval text"
            )
        return []
    if chunks is None:
        raise InvalidArgumentError(
            f"{argument}: {len(vectors)} chunk vectors need {index_argument} as a list of "
            "caller-owned chunks (one per vector)"
        )
    if len(chunks) != len(vectors):
        raise InvalidArgumentError(
            f"{argument}: {len(vectors)} vectors but {index_argument} has {len(chunks)} chunks; "
            "counts must match"
        )
    return [ChunkRow(c, v) for c, v in zip(chunks, vectors, strict=True)]


def _chunk_column(settings: WriteSettings, record_type: str, texts: list[str | None],
                  index_texts: list[Any], payloads: list[Any], dims: set[int]
                  ) -> list[list[ChunkRow]]:
    """Each record's retrieval rows; adds the dimensions of explicit vectors to ``dims``."""
    if record_type in SEARCHABLE_TYPES and all(i is NOT_SET_MARKER or i is None
                                               for i in index_texts):
        matrix = _vector_matrix(payloads)
        if matrix is not None:
            dims.add(matrix.shape[1])
            return [[ChunkRow(text or None, vector)]
                    for text, vector in zip(texts, matrix, strict=True)]
    return [_retrieval_rows(settings, record_type, text, index_text, payload, n, dims)
            for n, (text, index_text, payload) in enumerate(zip(texts, index_texts, payloads,
                                                                strict=True))]


def _with_speaker(chunks: list[ChunkRow], role: object, index_text: object) -> list[ChunkRow]:
    """A message's chunks with its role in front of each, as ``"role: text"``.

    Questions name people ("What did Caroline..."): a transcript line names its speaker, so the
    embedded and keyword-indexed text does too; the stored content stays the caller's. Chunks
    the caller gave (``index_texts``) are theirs and stay as given.
    """
    if not isinstance(role, str) or not role.strip() or (
            index_text is not NOT_SET_MARKER and index_text is not None):
        return chunks
    return [ChunkRow(f"{role}: {c.text}", c.vector) if c.text else c for c in chunks]


def _vector_matrix(payloads: list[Any]) -> npt.NDArray[np.float32] | None:
    """One vector per record as a float32 matrix, or ``None`` unless all are valid and alike.

    ``None`` sends the records through the per-record rules, which also name any error.
    """
    if not all(map(is_single_vector, payloads)):
        return None
    try:
        matrix = np.asarray(payloads, dtype=np.float32)
    except (TypeError, ValueError):
        return None
    if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
        return None
    return matrix


def _retrieval_rows(settings: WriteSettings, record_type: str, text: str | None,
                    index_text: object, payload: object, n: int, dims: set[int]) -> list[ChunkRow]:
    index_argument = f"index_texts[{n}]"
    argument = f"embeddings[{n}]"
    if record_type not in SEARCHABLE_TYPES:
        if index_text is not NOT_SET_MARKER and index_text is not None:
            raise InvalidArgumentError(
                f"{index_argument}: {record_type} records are not searchable")
        if payload is not NOT_SET_MARKER and payload is not None:
            raise InvalidArgumentError(f"{argument}: {record_type} records are not searchable")
        return []
    chunks: list[str] | None = None
    if index_text is NOT_SET_MARKER or index_text is None:
        retrieval_text = text or ""
    elif isinstance(index_text, str):
        retrieval_text = index_text
    elif isinstance(index_text, (list, tuple)):
        retrieval_text = ""
        chunks = check_chunk_list(index_text, index_argument)
    else:
        raise InvalidArgumentTypeError(f"{index_argument} must be a str, a list of str or None")
    if payload is NOT_SET_MARKER or payload is None:
        pieces = chunks if chunks is not None else retrieval_chunks(settings, retrieval_text)
        return [ChunkRow(p, None) for p in pieces]
    return pair_vectors(settings, retrieval_text, chunks, payload, argument, index_argument, dims)
