"""A local, deterministic embedder that needs no download and no GPU."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder(IEmbedder):
    """Hashes words and character n-grams into ``dimension`` buckets, then L2-normalises.

    Quality is a baseline: it matches shared words and word pieces (so "pizzas" is near "pizza"),
    not meaning ("car" is not near "automobile"). Use it for development, tests and keyword-like
    recall; use a model-backed embedder (:class:`OpenAICompatibleEmbedder`) in production.
    Vectors are the same on every machine and in every process.
    """

    def __init__(self, dimension: int = 384, ngram: int = 3, word_weight: float = 2.0) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 8:
            raise InvalidArgumentError(f"dimension must be an int of at least 8, got {dimension!r}")
        if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 2:
            raise InvalidArgumentError(f"ngram must be an int of at least 2, got {ngram!r}")
        if (isinstance(word_weight, bool) or not isinstance(word_weight, (int, float))
                or not math.isfinite(word_weight) or word_weight < 0):
            raise InvalidArgumentError(
                f"word_weight must be a finite number >= 0, got {word_weight!r}")
        self._dimension = dimension
        self._ngram = ngram
        self._word_weight = float(word_weight)
        self._cache: dict[str, tuple[int, float]] = {}

    @property
    def embedding_dimension(self) -> int:
        """Dimension of every vector."""
        return self._dimension

    def _bucket(self, feature: str) -> tuple[int, float]:
        hit = self._cache.get(feature)
        if hit is None:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            hit = (value % self._dimension, 1.0 if (value >> 63) & 1 else -1.0)
            if len(self._cache) < 500_000:
                self._cache[feature] = hit
        return hit

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed ``texts`` into an array of shape ``(len(texts), embedding_dimension)``.

        Queries and documents share one encoding, so ``is_query`` does not change the vectors.
        """
        if isinstance(texts, str):
            raise InvalidArgumentTypeError("texts must be a sequence of str, not a str")
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        n = self._ngram
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidArgumentTypeError(
                    f"texts[{row}] must be a str, got {type(text).__name__}")
            vector = out[row]
            for word in _WORD.findall(text.lower()):
                index, sign = self._bucket("w:" + word)
                vector[index] += sign * self._word_weight
                padded = f"<{word}>"
                for start in range(max(1, len(padded) - n + 1)):
                    index, sign = self._bucket("c:" + padded[start : start + n])
                    vector[index] += sign
            norm = float(np.linalg.norm(vector))
            if norm > 0.0:
                vector /= norm
            else:
                vector[0] = 1.0  # empty text: a fixed unit vector keeps cosine distance defined
        return out
