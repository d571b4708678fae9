"""An embedder for any HTTP service that speaks the OpenAI ``/embeddings`` protocol."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from oracleagentmemory.core.embedders.input_budget import InputBudget
from oracleagentmemory.errors import (
    EmbeddingServiceError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)


class OpenAICompatibleEmbedder(InputBudget):
    """Embeds through ``POST {base_url}/embeddings`` (OpenAI, vLLM, Ollama, LiteLLM, TEI...).

    Texts are sent in batches of ``batch_size``; each request has ``timeout`` seconds. The API
    key, when given, is sent as a bearer token. ``dimension`` is the vector size the model returns
    (also sent as ``dimensions`` when ``send_dimensions`` is true, for models that can shorten
    their vectors). ``max_input_tokens`` states the model's input budget, when known.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        dimension: int,
        *,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        send_dimensions: bool = False,
        max_input_tokens: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidArgumentError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(f"model must be a non-empty str, got {model!r}")
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise InvalidArgumentError(f"dimension must be a positive int, got {dimension!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
        if (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                or not math.isfinite(timeout) or timeout <= 0):
            raise InvalidArgumentError(
                f"timeout must be a finite number of seconds > 0, got {timeout!r}")
        if max_input_tokens is not None and (
                isinstance(max_input_tokens, bool) or not isinstance(max_input_tokens, int)
                or max_input_tokens < 1):
            raise InvalidArgumentError(
                f"max_input_tokens must be a positive int or None, got {max_input_tokens!r}")
        self._max_input_tokens = max_input_tokens
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dimension = dimension
        self._batch_size = batch_size
        self._send_dimensions = send_dimensions
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    @property
    def embedding_dimension(self) -> int:
        """Dimension of every vector."""
        return self._dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed ``texts``; raises :class:`EmbeddingServiceError` when the service fails.

        The OpenAI ``/embeddings`` protocol has no query/document distinction: ``is_query`` is
        accepted for the contract and does not change the request.
        """
        if isinstance(texts, str):
            raise InvalidArgumentTypeError("texts must be a sequence of str, not a str")
        rows: list[npt.NDArray[np.float32]] = []
        items = list(texts)
        for n, text in enumerate(items):
            if not isinstance(text, str):
                raise InvalidArgumentTypeError(
                    f"texts[{n}] must be a str, got {type(text).__name__}")
        for start in range(0, len(items), self._batch_size):
            rows.append(self._embed_batch(items[start : start + self._batch_size]))
        if not rows:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.vstack(rows)

    def _embed_batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        body: dict[str, Any] = {"model": self._model, "input": texts}
        if self._send_dimensions:
            body["dimensions"] = self._dimension
        try:
            response = self._client.post(self._url, json=body)
        except httpx.TimeoutException as exc:
            raise EmbeddingServiceError(f"embedding request to {self._url} timed out") from exc
        except httpx.HTTPError as exc:
            raise EmbeddingServiceError(f"embedding request to {self._url} failed: {exc}") from exc
        if response.status_code != 200:
            raise EmbeddingServiceError(
                f"embedding service answered HTTP {response.status_code}: {response.text[:300]}"
            )
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            indexes = [item["index"] for item in data]
            vectors = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingServiceError(
                "embedding service answered without a usable 'data' list of embeddings"
            ) from exc
        if len(indexes) == len(texts) and indexes != list(range(len(texts))):
            raise EmbeddingServiceError(
                f"embedding service answered indexes {indexes}; expected each of "
                f"0..{len(texts) - 1} once"
            )
        if vectors.shape != (len(texts), self._dimension):
            raise EmbeddingServiceError(
                f"embedding service returned shape {vectors.shape}; expected "
                f"({len(texts)}, {self._dimension})"
            )
        if not np.all(np.isfinite(vectors)):
            raise EmbeddingServiceError("embedding service returned non-finite values")
        return vectors

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()
