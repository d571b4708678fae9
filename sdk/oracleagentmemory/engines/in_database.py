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
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from oracleagentmemory.engines.registry import engine_entries
from oracleagentmemory.errors import InvalidArgumentTypeError

PROVIDERS: dict[str, str] = {
    "oracle": "oracleagentmemory.engines.oracle.embedding:OracleInDatabaseEmbedding",
}
"""Engine name -> ``"module:Class"`` of its :class:`InDatabaseEmbedding`."""


class InDatabaseEmbedding(ABC):
    """Texts embedded by a model the database runs; vectors of :attr:`embedding_dimension`."""

    model: str
    """The model's name as the database resolves it (``MODEL`` or ``OWNER.MODEL``)."""
    embedding_dimension: int
    """The dimension declared for the model; every vector is checked against it."""

    @abstractmethod
    def __init__(self, connection: object, *, model: str, embedding_dimension: int,
                 batch_size: int) -> None:
        """Take the engine's driver connection or pool; validate the model's name."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``: shape ``(len(texts), embedding_dimension)``, float32."""

    async def embed_async(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Asynchronous :meth:`embed` (a worker thread unless the engine has a native one)."""
        return await asyncio.to_thread(self.embed, texts)


def in_database_embedding(connection: object, *, model: str, embedding_dimension: int,
                          batch_size: int) -> InDatabaseEmbedding:
    """The in-database embedding of ``model`` through ``connection`` (a driver connection or
    pool of an engine that has in-database models).

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
    provider = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(provider, type) and issubclass(provider, InDatabaseEmbedding)):
        raise TypeError(f"{path} is not an InDatabaseEmbedding")
    embedding: InDatabaseEmbedding = provider(connection, model=model,
                                              embedding_dimension=embedding_dimension,
                                              batch_size=batch_size)
    return embedding
