"""The reranker contract: score documents against a query, most relevant first.

A search config with a reranker hands it the texts of the best direct candidates and reorders
them by the scores it returns (``RerankResponseResult.index`` points into the documents sent).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RerankResponseResult:
    """The score of one document: ``index`` into the documents sent, its relevance score.

    ``document`` echoes the document text when the service returns it.
    """

    index: int
    relevance_score: float
    document: str | None = None


@dataclass(frozen=True, slots=True)
class RerankResponse:
    """A reranker's answer: one result per scored document (any order; higher is better)."""

    results: list[RerankResponseResult]


class IReranker(ABC):
    """Scores documents for relevance to a query.

    Implementations write :meth:`rerank_async`; :meth:`rerank` runs it to completion (in a
    worker thread, with the caller's context variables, when the caller is already inside a
    running event loop).
    """

    def rerank(self, query: str, documents: list[str], **kwargs: Any) -> RerankResponse:
        """Score ``documents`` against ``query``; ``kwargs`` go to the service unchanged."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.rerank_async(query, documents, **kwargs))
        context = contextvars.copy_context()
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(context.run, asyncio.run,
                               self.rerank_async(query, documents, **kwargs)).result()

    @abstractmethod
    async def rerank_async(self, query: str, documents: list[str],
                           **kwargs: Any) -> RerankResponse:
        """Asynchronous :meth:`rerank`: score ``documents`` against ``query``."""


__all__ = ["IReranker", "RerankResponse", "RerankResponseResult"]
