"""The embedder contract."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


class IEmbedder(ABC):
    """Turns texts into fixed-dimension vectors."""

    @property
    @abstractmethod
    def embedding_dimension(self) -> int:
        """Dimension of every vector this embedder returns."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``; returns an array of shape ``(len(texts), embedding_dimension)``."""

    async def embed_async(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Asynchronous twin of :meth:`embed` (runs it in a worker thread by default)."""
        return await asyncio.to_thread(self.embed, texts)
