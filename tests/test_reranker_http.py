"""Reranker over real HTTP against a scripted /rerank server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from model_server import ModelServer, Reply, Seen, running_model_server
from oracleagentmemory.apis.reranker import IReranker, RerankResponse, RerankResponseResult
from oracleagentmemory.core.reranker import Reranker, RerankerServiceError
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


def overlap_ranking(seen: Seen) -> Reply:
    """Score by shared words with the query; answer in document order, like vLLM may."""
    query = set(seen.body["query"].lower().split())
    results: list[dict[str, Any]] = [
        {"index": n, "relevance_score": len(query & set(doc.lower().split())) / 10,
         "document": {"text": doc}}
        for n, doc in enumerate(seen.body["documents"])]
    top_n = seen.body.get("top_n")
    if top_n is not None:
        results = sorted(results, key=lambda r: -float(r["relevance_score"]))[:top_n]
    return Reply(json={"id": "r", "results": results})


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        running.handle("/rerank", overlap_ranking)
        yield running


def make(server: ModelServer, **kwargs: Any) -> Reranker:
    return Reranker("rerank-model", api_base=server.base_url, api_key="rk", **kwargs)


DOCS = ["pizza with olives", "the user likes pizza and olives", "tax return deadline"]


def test_rerank_request_and_sorted_results(server: ModelServer) -> None:
    reranker = make(server, return_documents=True)
    assert isinstance(reranker, IReranker)

    answer = reranker.rerank("likes pizza olives", DOCS, top_n=2)

    assert answer == RerankResponse([
        RerankResponseResult(1, 0.3, "the user likes pizza and olives"),
        RerankResponseResult(0, 0.2, "pizza with olives"),
    ])
    [seen] = server.requests
    assert seen.body == {"model": "rerank-model", "query": "likes pizza olives",
                         "documents": DOCS, "return_documents": True, "top_n": 2}
    assert seen.headers["authorization"] == "Bearer rk"


def test_rerank_async_and_empty_documents(server: ModelServer) -> None:
    reranker = make(server)
    answer = asyncio.run(reranker.rerank_async("tax deadline", DOCS))
    assert [r.index for r in answer.results] == [2, 0, 1]
    assert reranker.rerank("anything", []) == RerankResponse([])
    assert len(server.requests) == 1


def test_retries_after_503_and_gives_up_after_429s(server: ModelServer) -> None:
    answers = iter([Reply(503, {"error": "warming up"}, headers={"Retry-After": "1"})])

    def flaky(seen: Seen) -> Reply:
        return next(answers, None) or overlap_ranking(seen)

    server.handle("/rerank", flaky)
    assert make(server).rerank("pizza", DOCS).results[0].index in (0, 1)
    first, second = server.requests
    assert second.at - first.at >= 0.9

    server.handle("/rerank", lambda seen: Reply(429, {"error": "rate"},
                                               headers={"Retry-After": "0"}))
    with pytest.raises(RerankerServiceError, match="HTTP 429.*after 3 attempts") as caught:
        make(server, max_retries=2).rerank("pizza", DOCS)
    assert isinstance(caught.value, RuntimeError)
    assert len(server.requests) == 5


def test_timeout_and_malformed_rankings_are_typed(server: ModelServer) -> None:
    server.handle("/rerank", lambda seen: Reply(json={"results": []}, delay=1.5))
    with pytest.raises(RerankerServiceError, match="timed out"):
        make(server, read_timeout=0.3, max_retries=0).rerank("q", DOCS)
    bad: dict[str, Any]
    for bad in ({"data": []},
                {"results": [{"index": 3, "relevance_score": 0.1}]},
                {"results": [{"index": 0, "relevance_score": 0.1},
                             {"index": 0, "relevance_score": 0.2}]},
                {"results": [{"index": 0, "relevance_score": "high"}]}):
        server.handle("/rerank", lambda seen, bad=bad: Reply(json=bad))  # type: ignore[misc]
        with pytest.raises(RerankerServiceError):
            make(server).rerank("q", DOCS)


def test_invalid_arguments_are_typed(server: ModelServer) -> None:
    with pytest.raises(InvalidArgumentError, match="api_base"):
        Reranker("m")
    reranker = make(server)
    with pytest.raises(InvalidArgumentTypeError):
        reranker.rerank("q", "not a list")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match=r"documents\[1\]"):
        reranker.rerank("q", ["a", 2])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="top_n"):
        reranker.rerank("q", ["a"], top_n=0)
    assert server.requests == []
