"""Turn the arguments of ``add`` into insert plans, following the spec's write semantics.

Stored content and retrieval payload are kept apart: ``contents`` is what reads return;
``index_texts`` and ``embeddings`` decide the retrieval rows (chunk text and vectors).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.apis.message import MessageContent, TextContent
from oracleagentmemory.apis.records import MEMORY_TYPES, PROFILE_TYPES, RECORD_TYPES, RecordStatus
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core._validation import (
    broadcast,
    check_id,
    is_single_vector,
    parse_timestamp,
    to_vector,
)
from oracleagentmemory.core.dbsearch import parse_enum
from oracleagentmemory.core.retention import resolve_ttl_days
from oracleagentmemory.engines.base import ChunkRow, RowPlan, Vector
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

SEARCHABLE_TYPES = MEMORY_TYPES | PROFILE_TYPES | {"message"}
"""Types that get retrieval rows."""
EXPIRING_TYPES = MEMORY_TYPES | {"message"}
"""Types with a time to live."""
STATUS_TYPES = MEMORY_TYPES | {"message", "thread_summary"}
"""Types with a lifecycle status."""

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


def message_content(value: object, argument: str) -> tuple[str, list[dict[str, Any]] | None]:
    """Split message content into its text and (for part lists) its JSON parts."""
    if isinstance(value, str):
        return value, None
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        parts: list[dict[str, Any]] = []
        texts: list[str] = []
        for n, part in enumerate(value):
            if not isinstance(part, MessageContent):
                raise InvalidArgumentTypeError(f"{argument}[{n}] must be a MessageContent part")
            if not isinstance(part, TextContent):
                raise InvalidArgumentError(
                    f"{argument}[{n}]: image parts are not supported by this store yet"
                )
            parts.append({"type": "text", "id": part.id, "timestamp": part.timestamp,
                          "text": part.text})
            texts.append(part.text)
        return "\n".join(texts), parts
    raise InvalidArgumentTypeError(
        f"{argument} must be a str or a sequence of MessageContent parts")


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


def plan_add(settings: WriteSettings, contents: object, record_type: object,
             **arguments: Any) -> list[RowPlan]:
    """Validate ``add`` arguments and return one insert plan per record."""
    record_type = check_record_type(record_type)
    if isinstance(contents, (str, bytes, Mapping)) or not isinstance(contents, Sequence):
        raise InvalidArgumentTypeError("contents must be a list with one payload per record")
    count = len(contents)
    if count == 0:
        return []

    get = arguments.get
    ids = _record_ids(get("record_ids", NOT_SET_MARKER), count, record_type)
    user_default = settings.default_user_id
    thread_ids = _scope(get("thread_ids", NOT_SET_MARKER), count, "thread_ids", NOT_SET_MARKER)
    user_ids = _scope(get("user_ids", NOT_SET_MARKER), count, "user_ids", user_default)
    agent_ids = _scope(get("agent_ids", NOT_SET_MARKER), count, "agent_ids", NOT_SET_MARKER)
    roles = _scope(get("roles", NOT_SET_MARKER), count, "roles", NOT_SET_MARKER)
    timestamps = [parse_timestamp(v, f"timestamps[{n}]") for n, v in
                  enumerate(broadcast(get("timestamps", None), count, "timestamps"))]
    metadata = [check_metadata(v, f"metadata[{n}]") for n, v in
                enumerate(broadcast(get("metadata", None), count, "metadata"))]
    ttl_days = broadcast(get("ttl_days", NOT_SET_MARKER), count, "ttl_days")
    anchors = [check_anchor(v, f"ttl_anchor[{n}]") for n, v in
               enumerate(broadcast(get("ttl_anchor", NOT_SET_MARKER), count, "ttl_anchor"))]
    statuses = [check_status(v, f"statuses[{n}]") for n, v in
                enumerate(broadcast(get("statuses", RecordStatus.VALID), count, "statuses"))]
    index_texts = _aligned(get("index_texts", NOT_SET_MARKER), count, "index_texts")
    embeddings = _aligned(get("embeddings", NOT_SET_MARKER), count, "embeddings")

    if record_type == "thread" and any(t is not None for t in thread_ids):
        raise InvalidArgumentError("thread_ids must not be set for record_type 'thread'; "
                         "use record_ids for the thread identifiers")
    plans: list[RowPlan] = []
    explicit_dims: set[int] = set()
    for n in range(count):
        plan = RowPlan(
            record_type=record_type,
            record_id=ids[n],
            content=None,
            event_ts=timestamps[n],
            metadata=metadata[n],
        )
        if record_type not in PROFILE_TYPES:
            plan.thread_id = thread_ids[n]
            plan.user_id = user_ids[n]
            plan.agent_id = agent_ids[n]
        if record_type == "message":
            plan.role = roles[n]
        _set_status(plan, statuses[n], n)
        _set_ttl(plan, settings, ttl_days[n], anchors[n], n)
        text = _set_content(plan, contents[n], n)
        plan.chunks = _retrieval_rows(settings, record_type, text, index_texts[n], embeddings[n],
                                      n, explicit_dims)
        plans.append(plan)
    if len(explicit_dims) > 1:
        raise InvalidArgumentError(
            f"embeddings: all vectors of one add() must have the same dimension, got "
            f"{sorted(explicit_dims)}"
        )
    _check_store_dimension(settings, explicit_dims, "embeddings")
    embed_missing_vectors(settings, [c for p, e in zip(plans, embeddings, strict=True)
                                     if e is NOT_SET_MARKER or e is None for c in p.chunks])
    return plans


def embed_missing_vectors(settings: WriteSettings, chunks: list[ChunkRow]) -> None:
    """Fill in vectors of text chunks with the store's embedder, in one batch."""
    if settings.vector_dim is None or settings.embedder is None:
        return
    todo = [c for c in chunks if c.vector is None and c.text]
    if not todo:
        return
    vectors = np.asarray(settings.embedder.embed([c.text or "" for c in todo]), dtype=np.float32)
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


def _record_ids(value: object, count: int, record_type: str) -> list[str]:
    if value is NOT_SET_MARKER or value is None:
        raw: list[Any] = [None] * count
    elif isinstance(value, str):
        if count != 1:
            raise InvalidArgumentError(
                f"record_ids is a single string but there are {count} records; pass a list"
            )
        raw = [value]
    else:
        raw = broadcast(value, count, "record_ids") if isinstance(value, (list, tuple)) else []
        if not raw:
            raise InvalidArgumentTypeError(
                f"record_ids must be a str, None or a list, got {type(value).__name__}")
    ids: list[str] = []
    for n, item in enumerate(raw):
        checked = check_id(item, f"record_ids[{n}]", allow_none=True)
        if checked is None:
            if record_type in PROFILE_TYPES:
                raise InvalidArgumentError(
                    f"record_ids[{n}]: {record_type} records need the actor id as record id"
                )
            checked = str(uuid.uuid4())
        ids.append(checked)
    seen: set[str] = set()
    for n, record_id in enumerate(ids):
        if record_id in seen:
            raise InvalidArgumentError(
                f"record_ids[{n}]: duplicate record id {record_id!r} in one call")
        seen.add(record_id)
    return ids


def _scope(value: object, count: int, argument: str, default: object) -> list[Any]:
    values = broadcast(value, count, argument)
    result: list[Any] = []
    for n, item in enumerate(values):
        if item is NOT_SET_MARKER:
            item = None if default is NOT_SET_MARKER else default
        result.append(check_id(item, f"{argument}[{n}]", allow_none=True))
    return result


def _aligned(value: object, count: int, argument: str) -> list[Any]:
    if value is NOT_SET_MARKER or value is None:
        return [NOT_SET_MARKER] * count
    if not isinstance(value, (list, tuple)):
        raise InvalidArgumentTypeError(f"{argument} must be a list with one entry per record")
    if len(value) != count:
        raise InvalidArgumentError(
            f"{argument} has {len(value)} entries but there are {count} records")
    return list(value)


def _set_status(plan: RowPlan, status: str, n: int) -> None:
    if status != RecordStatus.VALID.value and plan.record_type not in STATUS_TYPES:
        raise InvalidArgumentError(
            f"statuses[{n}]: {plan.record_type} records have no lifecycle status")
    plan.status = status


def _set_ttl(plan: RowPlan, settings: WriteSettings, ttl: object, anchor_ts: bool, n: int) -> None:
    if plan.record_type not in EXPIRING_TYPES:
        if ttl is not NOT_SET_MARKER and ttl is not None:
            raise InvalidArgumentError(f"ttl_days[{n}]: {plan.record_type} records do not expire")
        return
    plan.ttl_days = resolve_ttl_days(ttl, settings.default_ttl_days,  # type: ignore[arg-type]
                                     settings.max_ttl_days, f"ttl_days[{n}]")
    plan.anchor_is_timestamp = anchor_ts
    if anchor_ts and plan.ttl_days is not None and plan.event_ts is None:
        raise InvalidArgumentError(
            f"timestamps[{n}]: ttl_anchor=TimeToLiveAnchor.TIMESTAMP needs a concrete ISO-8601 "
            "timestamp for every record"
        )


def _fallback(value: object, metadata: dict[str, Any] | None) -> object:
    if value is None and metadata is not None and isinstance(metadata.get("content"), str):
        return metadata["content"]
    return value


def _set_content(plan: RowPlan, value: object, n: int) -> str | None:
    """Store the record's content on ``plan``; returns its text for retrieval."""
    argument = f"contents[{n}]"
    record_type = plan.record_type
    if record_type == "thread":
        if value not in (None, ""):
            raise InvalidArgumentError(f"{argument}: thread records have no content; pass None")
        return None
    if record_type == "thread_summary":
        plan.content = summary_content(value, argument)
        return None
    value = _fallback(value, plan.metadata)
    if record_type == "message":
        text, parts = message_content("" if value is None else value, argument)
        plan.content = (text, parts)
        return text
    if value is not None and not isinstance(value, str):
        raise InvalidArgumentTypeError(
            f"{argument} must be a str or None for {record_type} records")
    if value is None and record_type in PROFILE_TYPES:
        raise InvalidArgumentError(f"{argument}: {record_type} records need text content")
    plan.content = value
    return value


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
