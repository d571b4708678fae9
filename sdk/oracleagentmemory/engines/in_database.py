"""In-database embedding models, behind an engine-neutral contract.

The core's ``OracleDBEmbedder`` embeds texts with a model stored in the database; only an engine
knows the SQL. :func:`in_database_embedding` picks the engine by the connection (as
:mod:`~oracleagentmemory.engines.registry` does: by the driver's module, importing nothing of
another engine) and imports that engine's embedding module when it is first used. An engine
without in-database models (PostgreSQL) is refused with a typed error.
"""

from __future__ import annotations

import asyncio
import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oracleagentmemory.engines.registry import engine_entries
from oracleagentmemory.errors import InvalidArgumentTypeError

PROVIDERS: dict[str, str] = {
    "oracle": "oracleagentmemory.engines.oracle.embedding:OracleInDatabaseEmbedding",
}
"""Engine name -> ``"module:Class"`` of its :class:`InDatabaseEmbedding`."""

DATABASE_PROVIDER = "database"
"""The provider that runs a model loaded into the database (ONNX)."""

DEFAULT_INPUT_NAME = "DATA"
"""The input name of an in-database embedding model unless its metadata names another."""

DIMENSION_PROBE_TEXT = "dimension probe"
"""The text embedded once to learn an undeclared model's dimension."""


class InDatabaseEmbedding(ABC):
    """Texts embedded by a model the database runs (its own, or a provider it calls); vectors of
    :attr:`embedding_dimension`."""

    model: str
    """The model's name as the database resolves it (``MODEL`` or ``OWNER.MODEL``), or a
    provider's model name as given."""
    embedding_dimension: int | None
    """The declared dimension (every vector is checked against it), else ``None`` until the
    first vectors fix it."""
    provider: str
    """The provider, lower case (:data:`DATABASE_PROVIDER`: a model loaded into the database)."""
    input_name: str
    """The in-database model's text input as the database names it (upper case)."""
    provider_params: dict[str, Any] | None
    """What the database sends another provider: its options with ``provider`` and ``model``
    (``None`` for the database provider)."""

    @abstractmethod
    def __init__(self, connection: object, *, model: str, embedding_dimension: int | None,
                 batch_size: int, input_name: str = DEFAULT_INPUT_NAME,
                 provider: str = DATABASE_PROVIDER,
                 provider_options: Mapping[str, Any] | None = None) -> None:
        """Take the engine's driver connection or pool; validate the model's name (and, for the
        ``database`` provider, its input name)."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``: shape ``(len(texts), embedding_dimension)``, float32."""

    async def embed_async(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Asynchronous :meth:`embed` (a worker thread unless the engine has a native one)."""
        return await asyncio.to_thread(self.embed, texts)

    def probe_dimension(self) -> int:
        """The model's dimension: the declared one, else that of one probe embedding."""
        if self.embedding_dimension is None:
            self.embed([DIMENSION_PROBE_TEXT])
        assert self.embedding_dimension is not None
        return self.embedding_dimension


def in_database_embedding(connection: object, *, model: str, embedding_dimension: int | None,
                          batch_size: int, input_name: str = DEFAULT_INPUT_NAME,
                          provider: str = DATABASE_PROVIDER,
                          provider_options: Mapping[str, Any] | None = None
                          ) -> InDatabaseEmbedding:
    """The in-database embedding of ``model`` through ``connection`` (a driver connection or
    pool of an engine that has in-database models): a model loaded into the database (the
    ``database`` provider, model input ``input_name``) or a ``provider`` the database calls with
    ``provider_options``; ``embedding_dimension`` ``None``: learnt from the first vectors.

    Raises :class:`InvalidArgumentTypeError` (``argument="connection"``) for anything else,
    naming the engine when the connection belongs to one without in-database models.
    """
    entry = None if isinstance(connection, str) else next(
        (e for e in engine_entries() if e.accepts(connection)), None)
    supported = ", ".join(sorted(PROVIDERS))
    if entry is None:
        raise InvalidArgumentTypeError(
            f"connection must be a driver connection or pool of an engine with in-database "
            f"embedding models ({supported}: an oracledb Connection or ConnectionPool); got "
            f"{type(connection).__name__}", argument="connection")
    path = PROVIDERS.get(entry.name)
    if path is None:
        raise InvalidArgumentTypeError(
            f"connection is a {entry.name} {type(connection).__name__}, and {entry.name} has no "
            f"in-database embedding models: in-database embeddings need {supported} (an "
            "oracledb Connection or ConnectionPool); use another embedder with this database",
            argument="connection")
    module_name, class_name = path.split(":")
    engine_class = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(engine_class, type) and issubclass(engine_class, InDatabaseEmbedding)):
        raise TypeError(f"{path} is not an InDatabaseEmbedding")
    embedding: InDatabaseEmbedding = engine_class(
        connection, model=model, embedding_dimension=embedding_dimension, batch_size=batch_size,
        input_name=input_name, provider=provider, provider_options=provider_options)
    return embedding
