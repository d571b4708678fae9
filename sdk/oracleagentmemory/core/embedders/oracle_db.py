"""An embedder that runs in Oracle AI Database: a model loaded into the database
(``VECTOR_EMBEDDING``) or a provider the database calls (``DBMS_VECTOR_CHAIN.UTL_TO_EMBEDDING``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.core.embedders.input_budget import InputBudget
from oracleagentmemory.engines.in_database import (
    DATABASE_PROVIDER,
    DEFAULT_INPUT_NAME,
    InDatabaseEmbedding,
    in_database_embedding,
)
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["DEFAULT_BATCH_SIZE", "MAX_EMBEDDING_DIMENSION", "OracleDBEmbedder"]

MAX_EMBEDDING_DIMENSION = 65535
"""The largest vector dimension Oracle stores and indexes."""

DEFAULT_BATCH_SIZE = 64
"""Texts embedded per query unless ``batch_size`` says otherwise."""

_NAMED_OPTIONS = ("provider", "model", "input_name")
"""``provider_options`` keys that the constructor's own arguments override."""


def _positive_int(value: object, name: str, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"{name} must be an int, got {type(value).__name__}", argument=name)
    if value < 1 or (maximum is not None and value > maximum):
        bound = f"from 1 to {maximum}" if maximum is not None else "of at least 1"
        raise InvalidArgumentError(f"{name} must be an int {bound}, got {value!r}",
                                   argument=name)
    return value


def _options(provider_options: object) -> dict[str, Any]:
    """``provider_options`` as a JSON-ready dict (keys ``str``, values JSON-serialisable)."""
    if provider_options is None:
        return {}
    if not isinstance(provider_options, Mapping):
        raise InvalidArgumentTypeError(
            f"provider_options must be a mapping or None, got {type(provider_options).__name__}",
            argument="provider_options")
    options = dict(provider_options)
    for key in options:
        if not isinstance(key, str):
            raise InvalidArgumentTypeError(
                f"provider_options keys must be str, got {key!r}", argument="provider_options")
    try:
        json.dumps(options)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentTypeError(
            f"provider_options must hold JSON values: {exc}", argument="provider_options"
        ) from None
    return options


class OracleDBEmbedder(InputBudget):
    """Embeds in Oracle AI Database through ``connection`` (an ``oracledb`` connection or pool;
    ``embed_async`` also takes the driver's async ones). The texts never leave the database
    server unless ``provider`` names a service the database calls.

    - ``provider`` ``"database"`` (the default): ``model`` is a model loaded into the database
      (``"DOC_MODEL"``, or ``"OWNER.DOC_MODEL"`` for a model in another schema; ``oam-admin``
      loads ONNX models) whose text input is ``input_name`` (default ``"DATA"``);
      ``SearchStrategy.HYBRID`` requires this provider, as its hybrid index embeds with the
      same model.
    - any other ``provider`` (``"openai"``, ``"cohere"``, ``"ocigenai"``, ``"googleai"``,
      ``"huggingface"``, ...; see Oracle's ``DBMS_VECTOR_CHAIN``): ``model`` is that service's
      model name, and ``provider_options`` its settings (``url``, ``credential_name`` of a
      database credential, ``host="local"``, ...). ``input_name`` is not used.

    ``provider_options`` may also give ``provider`` and ``input_name``; the constructor's own
    ``provider``, ``model`` and ``input_name`` override them. ``embedding_dimension``, when
    omitted, is learnt from one probe embedding the first time it is needed (the store reads it
    before it creates its schema); declare it to avoid that round trip, and on an async
    connection. ``normalize`` scales every vector to unit length; ``query_prefix`` is prepended
    to query texts (``is_query=True``). Texts go to the database ``batch_size`` (default 64) per
    query. ``max_input_tokens`` is the model's input budget (default 512).

    A connection of another database (PostgreSQL has no in-database models) is refused with
    :class:`~oracleagentmemory.errors.InvalidArgumentTypeError`; a failing model raises
    :class:`~oracleagentmemory.errors.EmbeddingServiceError`.
    """

    def __init__(self, connection: object, model: str,
                 input_name: str | _NotSetMarker = NOT_SET_MARKER,
                 embedding_dimension: int | None | _NotSetMarker = NOT_SET_MARKER,
                 max_input_tokens: int | None | _NotSetMarker = NOT_SET_MARKER,
                 normalize: bool | _NotSetMarker = NOT_SET_MARKER,
                 query_prefix: str | None | _NotSetMarker = NOT_SET_MARKER,
                 batch_size: int | _NotSetMarker = NOT_SET_MARKER,
                 provider: str | _NotSetMarker = NOT_SET_MARKER,
                 provider_options: Mapping[str, Any] | None = None) -> None:
        if not isinstance(model, str):
            raise InvalidArgumentTypeError(
                f"model must be a str, got {type(model).__name__}", argument="model")
        if not model.strip():
            raise InvalidArgumentError("model must name an embedding model", argument="model")
        options = _options(provider_options)
        chosen_provider: object = options.get("provider", DATABASE_PROVIDER) \
            if isinstance(provider, _NotSetMarker) else provider
        if not isinstance(chosen_provider, str):
            raise InvalidArgumentTypeError(
                f"provider must be a str, got {type(chosen_provider).__name__}",
                argument="provider")
        chosen_input = options.get("input_name", DEFAULT_INPUT_NAME) \
            if input_name is NOT_SET_MARKER else input_name
        if not isinstance(chosen_input, str):
            raise InvalidArgumentTypeError(
                f"input_name must be a str, got {type(chosen_input).__name__}",
                argument="input_name")
        dimension = None if isinstance(embedding_dimension, _NotSetMarker) or \
            embedding_dimension is None else \
            _positive_int(embedding_dimension, "embedding_dimension", MAX_EMBEDDING_DIMENSION)
        if max_input_tokens is not NOT_SET_MARKER and max_input_tokens is not None:
            _positive_int(max_input_tokens, "max_input_tokens")
        if normalize is not NOT_SET_MARKER and not isinstance(normalize, bool):
            raise InvalidArgumentTypeError(
                f"normalize must be a bool, got {type(normalize).__name__}", argument="normalize")
        if query_prefix is not NOT_SET_MARKER and query_prefix is not None and \
                not isinstance(query_prefix, str):
            raise InvalidArgumentTypeError(
                f"query_prefix must be a str or None, got {type(query_prefix).__name__}",
                argument="query_prefix")
        size = DEFAULT_BATCH_SIZE if isinstance(batch_size, _NotSetMarker) else \
            _positive_int(batch_size, "batch_size")
        self._max_input_tokens = None if isinstance(max_input_tokens, _NotSetMarker) \
            else max_input_tokens
        self._normalize = normalize is True
        self._query_prefix = (query_prefix or None) if isinstance(query_prefix, str) else None
        self._backend: InDatabaseEmbedding = in_database_embedding(
            connection, model=model, embedding_dimension=dimension, batch_size=size,
            input_name=chosen_input, provider=chosen_provider,
            provider_options={k: v for k, v in options.items() if k not in _NAMED_OPTIONS})

    @property
    def model(self) -> str:
        """The model's name: as the database resolves it (upper case) for the ``database``
        provider, else as given."""
        return self._backend.model

    @property
    def provider(self) -> str:
        """The embedding provider, lower case (``"database"``: a model in the database)."""
        return self._backend.provider

    @property
    def input_name(self) -> str:
        """The in-database model's text input (upper case; ``"DATA"`` by default)."""
        return self._backend.input_name

    @property
    def normalize(self) -> bool:
        """Whether vectors are scaled to unit length after the database returns them."""
        return self._normalize

    @property
    def query_prefix(self) -> str | None:
        """The text prepended to query texts, if any."""
        return self._query_prefix

    @property
    def embedding_dimension(self) -> int:
        """Dimension of every vector: the declared one, else learnt from one probe embedding
        (then kept)."""
        return self._backend.probe_dimension()

    def get_vectorizer_config_json(self) -> str:
        """The model as an Oracle vectorizer preference's JSON (compact), what
        ``DBMS_VECTOR_CHAIN.CREATE_PREFERENCE`` takes for a hybrid vector index:
        ``{"model": ...}`` (with ``"input_name"`` when it is not ``DATA``) for a model in the
        database, ``{"embedder_spec": {...options, "provider": ..., "model": ...}}`` otherwise."""
        if self.provider == DATABASE_PROVIDER:
            config: dict[str, Any] = {"model": self.model}
            if self.input_name != DEFAULT_INPUT_NAME:
                config["input_name"] = self.input_name
        else:
            config = {"embedder_spec": dict(self._backend.provider_params or {})}
        return json.dumps(config, separators=(",", ":"))

    def embed(self, texts: Sequence[str], is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed ``texts`` in the database: shape ``(len(texts), embedding_dimension)``.

        Query texts (``is_query``) get ``query_prefix`` first.
        """
        return self._finish(self._backend.embed(self._prepared(texts, is_query)))

    async def embed_async(self, texts: Sequence[str],
                          is_query: bool = False) -> npt.NDArray[np.float32]:
        """Asynchronous :meth:`embed`."""
        return self._finish(await self._backend.embed_async(self._prepared(texts, is_query)))

    def _prepared(self, texts: Sequence[str], is_query: bool) -> list[str]:
        items = _texts(texts)
        if is_query and self._query_prefix:
            return [self._query_prefix + text for text in items]
        return items

    def _finish(self, vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        if not self._normalize or not len(vectors):
            return vectors
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms > 0, norms, 1)).astype(np.float32)


def _texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidArgumentTypeError("texts must be a sequence of str, not a str",
                                       argument="texts")
    items = list(texts)
    for n, text in enumerate(items):
        if not isinstance(text, str):
            raise InvalidArgumentTypeError(
                f"texts[{n}] must be a str, got {type(text).__name__}", argument=f"texts[{n}]")
    return items
