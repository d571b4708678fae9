"""A reranker behind the common ``/rerank`` HTTP API (Cohere, Jina, vLLM, TEI, LiteLLM...)."""

from __future__ import annotations

import math
from typing import Any

from oracleagentmemory.apis.reranker import IReranker, RerankResponse, RerankResponseResult
from oracleagentmemory.core._modelhttp import (
    HttpModelClient,
    ModelHttpClient,
    RetryPolicy,
    build_ssl_context,
    check_base_url,
    check_int,
)
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OracleAgentMemoryError,
)


class RerankerServiceError(OracleAgentMemoryError, RuntimeError):
    """A reranking service failed or answered something that is not a ranking."""

    code = "reranker_service"


class Reranker(HttpModelClient, IReranker):
    """Scores documents through ``POST {api_base}/rerank``.

    The request is ``{"model", "query", "documents", "top_n"?}`` plus any constructor keyword
    (``return_documents=True``...) and any per-call keyword; the answer's ``results`` (each an
    ``index`` into the documents and a ``relevance_score``, optionally the ``document``) come
    back sorted by score, highest first. ``api_base`` is the URL the path hangs from
    (``https://api.jina.ai/v1``, ``https://api.cohere.com/v2``, ``http://vllm:8000/v1``...).

    Requests time out after ``connect_timeout`` / ``read_timeout`` seconds, are retried up to
    ``max_retries`` times on HTTP 408/409/429/5xx and transport errors (exponential backoff,
    ``Retry-After`` honoured), and at most ``max_concurrent_requests`` run at once. Failures
    raise :class:`RerankerServiceError`.
    """

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        *,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        max_retries: int = 3,
        max_concurrent_requests: int = 4,
        key_file: str | None = None,
        cert_file: str | None = None,
        ca_file: str | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        **default_kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(f"model must be a non-empty str, got {model!r}",
                                       argument="model")
        if api_base is None:
            raise InvalidArgumentError(
                "api_base is required: the URL the service's /rerank path hangs from",
                argument="api_base")
        self._model = model
        self._url = check_base_url(api_base) + "/rerank"
        self._default_kwargs = dict(default_kwargs)
        self._http = ModelHttpClient(
            service=f"reranking service ({model})",
            error_type=RerankerServiceError,
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

    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Score ``documents`` against ``query`` (a synchronous HTTP request)."""
        body = self._body(query, documents, kwargs)
        if body is None:
            return RerankResponse([])
        return self._ranking(self._http.post_json(self._url, body), len(documents))

    async def rerank_async(self, query: str, documents: list[str],
                           **kwargs: Any) -> RerankResponse:
        """Asynchronous :meth:`rerank` (an async HTTP client, no worker thread)."""
        body = self._body(query, documents, kwargs)
        if body is None:
            return RerankResponse([])
        return self._ranking(await self._http.post_json_async(self._url, body), len(documents))

    def _body(self, query: str, documents: list[str],
              kwargs: dict[str, Any]) -> dict[str, Any] | None:
        if not isinstance(query, str):
            raise InvalidArgumentTypeError(f"query must be a str, got {type(query).__name__}",
                                           argument="query")
        if isinstance(documents, str) or not isinstance(documents, (list, tuple)):
            raise InvalidArgumentTypeError("documents must be a list of str",
                                           argument="documents")
        for n, document in enumerate(documents):
            if not isinstance(document, str):
                raise InvalidArgumentTypeError(
                    f"documents[{n}] must be a str, got {type(document).__name__}",
                    argument=f"documents[{n}]")
        if not documents:
            return None
        options = {**self._default_kwargs, **kwargs}
        if options.get("top_n") is not None:
            check_int(options["top_n"], "top_n", 1)
        return {"model": self._model, "query": query, "documents": list(documents), **options}

    @staticmethod
    def _ranking(answer: Any, count: int) -> RerankResponse:
        raw = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(raw, list):
            raise RerankerServiceError("reranking service answered without a 'results' list")
        results: list[RerankResponseResult] = []
        seen: set[int] = set()
        for n, item in enumerate(raw):
            index = item.get("index") if isinstance(item, dict) else None
            score = item.get("relevance_score") if isinstance(item, dict) else None
            if (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count
                    or index in seen):
                raise RerankerServiceError(
                    f"reranking service answered results[{n}].index {index!r}; expected a "
                    f"distinct int in 0..{count - 1}")
            if (isinstance(score, bool) or not isinstance(score, (int, float))
                    or not math.isfinite(score)):
                raise RerankerServiceError(
                    f"reranking service answered results[{n}].relevance_score {score!r}; "
                    "expected a finite number")
            seen.add(index)
            document = item.get("document")
            if isinstance(document, dict):  # Cohere and Jina: {"text": ...}
                document = document.get("text")
            results.append(RerankResponseResult(
                index, float(score), document if isinstance(document, str) else None))
        results.sort(key=lambda result: (-result.relevance_score, result.index))
        return RerankResponse(results)
