"""An embedder that runs an embedding model inside Oracle AI Database (``VECTOR_EMBEDDING``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from oracleagentmemory.core.embedders.input_budget import InputBudget
from oracleagentmemory.engines.in_database import InDatabaseEmbedding, in_database_embedding
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

MAX_EMBEDDING_DIMENSION = 65535
"""The largest vector dimension Oracle stores and indexes."""


def _positive_int(value: object, name: str, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"{name} must be an int, got {type(value).__name__}", argument=name)
    if value < 1 or (maximum is not None and value > maximum):
        bound = f"from 1 to {maximum}" if maximum is not None else "of at least 1"
        raise InvalidArgumentError(f"{name} must be an int {bound}, got {value!r}",
                                   argument=name)
    return value


class OracleDBEmbedder(InputBudget):
    """Embeds with an ONNX embedding model loaded into the database (``oam-admin`` loads one
    with ``DBMS_VECTOR.LOAD_ONNX_MODEL``), through ``connection``: an ``oracledb`` connection
    or pool (``embed_async`` also takes the driver's async ones).

    ``model`` is the model's name (``"DOC_MODEL"``, or ``"OWNER.DOC_MODEL"`` for a model in
    another schema); ``embedding_dimension`` is the dimension the model produces, declared
    because the store's schema is created before any text is embedded (every vector is
    checked against it). Texts go to the database ``batch_size`` per query. The texts never
    leave the database server, and ``SearchStrategy.HYBRID`` requires this embedder: its
    hybrid index embeds with the same model.

    A connection of another database (PostgreSQL has no in-database models) is refused with
    :class:`~oracleagentmemory.errors.InvalidArgumentTypeError`; a failing model raises
    :class:`~oracleagentmemory.errors.EmbeddingServiceError`.
    """

    def __init__(self, connection: object, model: str, embedding_dimension: int, *,
                 batch_size: int = 64, max_input_tokens: int | None = None) -> None:
        if not isinstance(model, str):
            raise InvalidArgumentTypeError(
                f"model must be a str, got {type(model).__name__}", argument="model")
        if not model.strip():
            raise InvalidArgumentError("model must name an in-database model", argument="model")
        _positive_int(embedding_dimension, "embedding_dimension", MAX_EMBEDDING_DIMENSION)
        _positive_int(batch_size, "batch_size")
        if max_input_tokens is not None:
            _positive_int(max_input_tokens, "max_input_tokens")
        self._max_input_tokens = max_input_tokens
        self._backend: InDatabaseEmbedding = in_database_embedding(
            connection, model=model, embedding_dimension=embedding_dimension,
            batch_size=batch_size)

    @property
    def model(self) -> str:
        """The model's name as the database resolves it (upper case)."""
        return self._backend.model

    @property
    def embedding_dimension(self) -> int:
        """Dimension of every vector (the declared ``embedding_dimension``)."""
        return self._backend.embedding_dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed ``texts`` in the database: shape ``(len(texts), embedding_dimension)``.

        An in-database model has one encoding for queries and documents: ``is_query`` is
        accepted for the contract and changes nothing.
        """
        return self._backend.embed(_texts(texts))

    async def embed_async(self, texts: Sequence[str], *,
                          is_query: bool = False) -> npt.NDArray[np.float32]:
        """Asynchronous :meth:`embed`."""
        return await self._backend.embed_async(_texts(texts))


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
