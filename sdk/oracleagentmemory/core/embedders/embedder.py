"""An embedding model behind the OpenAI-compatible ``/embeddings`` HTTP API."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.core._modelhttp import (
    HttpModelClient,
    ModelHttpClient,
    RetryPolicy,
    build_ssl_context,
    check_base_url,
    check_int,
)
from oracleagentmemory.core.embedders.input_budget import InputBudget
from oracleagentmemory.errors import (
    EmbeddingServiceError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)

DEFAULT_API_BASE = "https://api.openai.com/v1"

T = TypeVar("T")


def _given(value: T | _NotSetMarker) -> T | None:
    """``value``, or ``None`` when it was omitted."""
    return None if isinstance(value, _NotSetMarker) else value


class Embedder(InputBudget, HttpModelClient):
    """Embeds through ``POST {api_base}/embeddings`` (OpenAI, vLLM, Ollama, LiteLLM, TEI...).

    ``embedding_dimension`` is the model's vector size; when ``None`` it is learnt from the
    service by embedding one probe text the first time it is needed. With ``send_dimensions``
    it is also sent as ``dimensions`` (models that can shorten their vectors).
    ``query_prefix`` / ``document_prefix`` are prepended to query / document texts (models such
    as e5 or bge expect ``"query: "``). ``truncate_prompt_tokens`` is sent as is (vLLM truncates
    inputs to it). Vectors are L2-normalised when ``normalize`` is true (default false: returned
    as served). Other keywords are sent in every request body. Every argument but ``model``
    may be omitted (``NOT_SET_MARKER``); ``trust_env`` defaults to true.

    Texts go in batches of ``batch_size``. Requests time out after ``connect_timeout`` /
    ``read_timeout`` seconds, are retried up to ``max_retries`` times on HTTP 408/409/429/5xx
    and transport errors (exponential backoff, ``Retry-After`` honoured), and at most
    ``max_concurrent_requests`` run at once (``embed_async`` sends its batches concurrently).
    Failures raise :class:`EmbeddingServiceError`.
    """

    def __init__(
        self,
        model: str,
        api_base: str | None | _NotSetMarker = NOT_SET_MARKER,
        api_key: str | None | _NotSetMarker = NOT_SET_MARKER,
        embedding_dimension: int | None | _NotSetMarker = NOT_SET_MARKER,
        max_input_tokens: int | None | _NotSetMarker = NOT_SET_MARKER,
        normalize: bool | _NotSetMarker = NOT_SET_MARKER,
        query_prefix: str | None | _NotSetMarker = NOT_SET_MARKER,
        document_prefix: str | None | _NotSetMarker = NOT_SET_MARKER,
        truncate_prompt_tokens: int | None | _NotSetMarker = NOT_SET_MARKER,
        key_file: str | None | _NotSetMarker = NOT_SET_MARKER,
        cert_file: str | None | _NotSetMarker = NOT_SET_MARKER,
        ca_file: str | None | _NotSetMarker = NOT_SET_MARKER,
        proxy: str | None | _NotSetMarker = NOT_SET_MARKER,
        trust_env: bool | _NotSetMarker = NOT_SET_MARKER,
        *,
        batch_size: int = 64,
        send_dimensions: bool = False,
        max_concurrent_requests: int = 4,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        max_retries: int = 3,
        **default_kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(f"model must be a non-empty str, got {model!r}",
                                       argument="model")
        api_base, api_key = _given(api_base), _given(api_key)
        embedding_dimension = _given(embedding_dimension)
        max_input_tokens = _given(max_input_tokens)
        query_prefix, document_prefix = _given(query_prefix), _given(document_prefix)
        truncate_prompt_tokens, proxy = _given(truncate_prompt_tokens), _given(proxy)
        key_file, cert_file, ca_file = _given(key_file), _given(cert_file), _given(ca_file)
        normalize = False if isinstance(normalize, _NotSetMarker) else normalize
        trust_env = True if isinstance(trust_env, _NotSetMarker) else trust_env
        if embedding_dimension is not None:
            check_int(embedding_dimension, "embedding_dimension", 1)
        elif send_dimensions:
            raise InvalidArgumentError("send_dimensions needs embedding_dimension",
                                       argument="send_dimensions")
        if max_input_tokens is not None:
            check_int(max_input_tokens, "max_input_tokens", 1)
        if truncate_prompt_tokens is not None:
            check_int(truncate_prompt_tokens, "truncate_prompt_tokens", 1)
        for name, prefix in (("query_prefix", query_prefix),
                             ("document_prefix", document_prefix)):
            if prefix is not None and not isinstance(prefix, str):
                raise InvalidArgumentTypeError(f"{name} must be a str or None", argument=name)
        if api_base is None and api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        self._model = model
        self._url = check_base_url(api_base or DEFAULT_API_BASE) + "/embeddings"
        self._dimension = embedding_dimension
        self._dimension_lock = threading.Lock()
        self._max_input_tokens = max_input_tokens
        self._normalize = bool(normalize)
        self._query_prefix = query_prefix or ""
        self._document_prefix = document_prefix or ""
        self._batch_size = check_int(batch_size, "batch_size", 1)
        self._extra: dict[str, Any] = dict(default_kwargs)
        if send_dimensions:
            self._extra["dimensions"] = embedding_dimension
        if truncate_prompt_tokens is not None:
            self._extra["truncate_prompt_tokens"] = truncate_prompt_tokens
        self._http = ModelHttpClient(
            service=f"embedding service ({model})",
            error_type=EmbeddingServiceError,
            api_key=api_key,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            retry=RetryPolicy(max_retries=check_int(max_retries, "max_retries", 0)),
            max_concurrent_requests=max_concurrent_requests,
            verify=build_ssl_context(ca_file, cert_file, key_file),
            proxy=proxy,
            trust_env=trust_env,
        )

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def embedding_dimension(self) -> int:
        """Dimension of every vector (asks the service once when not given at construction)."""
        if self._dimension is None:  # asked once, then remembered
            probe = self._vectors(self._http.post_json(self._url, self._body(["probe"])), 1)
            self._dimension = int(probe.shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed ``texts``: an array of shape ``(len(texts), embedding_dimension)``, float32."""
        batches = self._batches(texts, is_query)
        if not batches:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        return np.vstack([self._vectors(self._http.post_json(self._url, self._body(batch)),
                                        len(batch)) for batch in batches])

    async def embed_async(self, texts: Sequence[str], *,
                          is_query: bool = False) -> npt.NDArray[np.float32]:
        """Asynchronous :meth:`embed`: the batches are sent concurrently (bounded)."""
        batches = self._batches(texts, is_query)
        if not batches:
            return np.zeros((0, await asyncio.to_thread(lambda: self.embedding_dimension)),
                            dtype=np.float32)
        answers = await self._http.post_many_json_async(
            self._url, [self._body(batch) for batch in batches])
        return np.vstack([self._vectors(answer, len(batch))
                          for answer, batch in zip(answers, batches, strict=True)])

    def _batches(self, texts: Sequence[str], is_query: bool) -> list[list[str]]:
        if isinstance(texts, str):
            raise InvalidArgumentTypeError("texts must be a sequence of str, not a str",
                                           argument="texts")
        items = list(texts)
        for n, text in enumerate(items):
            if not isinstance(text, str):
                raise InvalidArgumentTypeError(
                    f"texts[{n}] must be a str, got {type(text).__name__}", argument=f"texts[{n}]")
        prefix = self._query_prefix if is_query else self._document_prefix
        if prefix:
            items = [prefix + text for text in items]
        return [items[start : start + self._batch_size]
                for start in range(0, len(items), self._batch_size)]

    def _body(self, batch: list[str]) -> dict[str, Any]:
        return {"model": self._model, "input": batch, **self._extra}

    def _vectors(self, answer: Any, count: int) -> npt.NDArray[np.float32]:
        try:
            data = sorted(answer["data"], key=lambda item: item["index"])
            indexes = [item["index"] for item in data]
            vectors = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingServiceError(
                "embedding service answered without a usable 'data' list of embeddings"
            ) from exc
        if indexes != list(range(count)):
            raise EmbeddingServiceError(
                f"embedding service answered indexes {indexes}; expected each of "
                f"0..{count - 1} once")
        expected = self._dimension
        if vectors.ndim != 2 or (expected is not None and vectors.shape[1] != expected):
            raise EmbeddingServiceError(
                f"embedding service returned shape {vectors.shape}; expected "
                f"({count}, {expected})")
        if not np.all(np.isfinite(vectors)):
            raise EmbeddingServiceError("embedding service returned non-finite values")
        if expected is None:
            with self._dimension_lock:
                self._dimension = self._dimension or int(vectors.shape[1])
        if self._normalize:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            if np.any(norms == 0):
                raise EmbeddingServiceError("embedding service returned a zero vector")
            vectors = vectors / norms
        return vectors.astype(np.float32, copy=False)
