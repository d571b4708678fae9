"""The embedder contract."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from oracleagentmemory.errors import EmbeddingServiceError

DEFAULT_MAX_INPUT_TOKENS = 512
"""Conservative input budget (tokens per text) assumed when an embedder does not state its own."""


DIMENSION_PROBE_TEXT = "dimension probe"
"""The text the default :attr:`IEmbedder.embedding_dimension` embeds once."""


class IEmbedder(ABC):
    """Turns texts into fixed-dimension vectors."""

    _inferred_embedding_dimension: int | None = None

    @property
    def embedding_dimension(self) -> int:
        """Dimension of every vector this embedder returns.

        The default embeds one probe text the first time it is read and keeps that vector's
        width; override it when the width is known from configuration.
        """
        if self._inferred_embedding_dimension is None:
            probe = np.asarray(self.embed([DIMENSION_PROBE_TEXT]))
            if probe.ndim != 2 or probe.shape[0] != 1 or probe.shape[1] < 1:
                raise EmbeddingServiceError(
                    f"{type(self).__name__}.embed returned shape {probe.shape} for one text; "
                    "expected (1, dimension)")
            self._inferred_embedding_dimension = int(probe.shape[1])
        return self._inferred_embedding_dimension

    @property
    def max_input_tokens(self) -> int:
        """Largest number of input tokens one text may have.

        The default is :data:`DEFAULT_MAX_INPUT_TOKENS`; override it when the model's input
        budget is known.
        """
        return DEFAULT_MAX_INPUT_TOKENS

    @abstractmethod
    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed ``texts``; returns an array of shape ``(len(texts), embedding_dimension)``.

        ``is_query`` is true when the texts are search queries rather than stored documents
        (models with asymmetric query and document encodings use it).
        """

    async def embed_async(self, texts: Sequence[str], *,
                          is_query: bool = False) -> npt.NDArray[np.float32]:
        """Asynchronous twin of :meth:`embed` (runs it in a worker thread by default)."""
        return await asyncio.to_thread(self.embed, texts, is_query=is_query)
