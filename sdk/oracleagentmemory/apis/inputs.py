"""The argument shapes of the store contract, as the spec types them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from oracleagentmemory._notset import _NotSetMarker
from oracleagentmemory.apis.message import MessageContent

T = TypeVar("T")

OneOrEach: TypeAlias = T | list[T]
"""One value for every record of a batch, or a list with one value per record."""

Omittable: TypeAlias = T | _NotSetMarker
"""A value, or ``NOT_SET_MARKER`` for an omitted argument (distinct from ``None``)."""

MetadataValue: TypeAlias = dict[str, Any] | None
"""A record's metadata: a JSON-compatible mapping, or ``None``."""

MetadataFilter: TypeAlias = dict[str, Any] | None
"""A metadata filter (the same grammar for ``list``, ``search`` and ``list_relations``)."""

RecordContent: TypeAlias = str | Mapping[str, object] | Sequence[MessageContent] | bytes | None
"""One record payload: text, a thread summary mapping, message parts or image bytes."""

RecordContents: TypeAlias = Sequence[RecordContent]
"""The payloads of a batch, one per record."""

IndexText: TypeAlias = str | list[str] | None
"""Retrieval text of one record: a str the store may chunk, caller-owned chunks, or ``None``."""

Vector: TypeAlias = list[float] | npt.NDArray[np.floating[Any]]
"""One embedding vector."""

Embedding: TypeAlias = Vector | list[Vector]
"""A record's vector, or one vector per caller-owned chunk."""

EmbeddingVectorInput: TypeAlias = Vector
"""One embedding vector (the vendor's name of :data:`Vector`)."""
RecordContentInput: TypeAlias = RecordContent
"""One record payload (the vendor's name of :data:`RecordContent`)."""
PerRecordIndexTextInput: TypeAlias = str | list[str]
"""Retrieval text given for one record: a str the store may chunk, or caller-owned chunks."""
PerRecordEmbeddingsInput: TypeAlias = Embedding
"""A record's vector or vectors (the vendor's name of :data:`Embedding`)."""
PerBatchRecordContentsInput: TypeAlias = RecordContents
"""The payloads of a batch (the vendor's name of :data:`RecordContents`)."""
PerBatchIndexTextsInput: TypeAlias = list[IndexText]
"""The retrieval texts of a batch, one per record."""
PerBatchEmbeddingsInput: TypeAlias = list[Embedding]
"""The vectors of a batch, one entry per record."""
