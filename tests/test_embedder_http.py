"""Embedder over real HTTP against a scripted OpenAI-compatible /embeddings server."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from model_server import ModelServer, Reply, Seen, running_model_server
from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.core.embedders import Embedder
from oracleagentmemory.errors import (
    EmbeddingServiceError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)

DIM = 8


def vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b - 127.5 for b in digest[:DIM]]


def embeddings(seen: Seen) -> Reply:
    """Answer like a real service: one vector per input, data in reversed order."""
    data = [{"object": "embedding", "index": n, "embedding": vector(text)}
            for n, text in enumerate(seen.body["input"])]
    return Reply(json={"object": "list", "model": seen.body["model"], "data": data[::-1]})


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        running.handle("/embeddings", embeddings)
        yield running


def make(server: ModelServer, **kwargs: Any) -> Embedder:
    kwargs.setdefault("embedding_dimension", DIM)
    return Embedder("embed-model", api_base=server.base_url, api_key="k", **kwargs)


def unit(text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    raw = np.asarray(vector(text), dtype=np.float32)
    scaled: np.ndarray[Any, np.dtype[np.float32]] = raw / np.linalg.norm(raw)
    return scaled


def test_embeds_in_batches_normalised_in_input_order(server: ModelServer) -> None:
    embedder = make(server, batch_size=2, max_input_tokens=300, normalize=True)
    assert isinstance(embedder, IEmbedder)
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]

    vectors = embedder.embed(texts)

    assert vectors.dtype == np.float32 and vectors.shape == (5, DIM)
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, unit(text), rtol=1e-5)
    assert [b["input"] for b in server.bodies("/embeddings")] == [
        ["alpha", "beta"], ["gamma", "delta"], ["epsilon"]]
    assert server.requests[0].headers["authorization"] == "Bearer k"
    assert embedder.max_input_tokens == 300


def test_prefixes_dimensions_and_extra_fields_are_sent(server: ModelServer) -> None:
    embedder = make(server, query_prefix="query: ", document_prefix="passage: ",
                    send_dimensions=True, truncate_prompt_tokens=256, user="tester")
    embedder.embed(["q"], is_query=True)
    embedder.embed(["d"])
    query, document = server.bodies("/embeddings")
    assert query == {"model": "embed-model", "input": ["query: q"], "dimensions": DIM,
                     "truncate_prompt_tokens": 256, "user": "tester"}
    assert document["input"] == ["passage: d"]


def test_unnormalised_vectors_are_returned_as_served(server: ModelServer) -> None:
    """As the vendor's Embedder: vectors are normalised only when ``normalize`` is true."""
    for embedder in (make(server, normalize=False), make(server)):
        [row] = embedder.embed(["raw"])
        np.testing.assert_allclose(row, np.asarray(vector("raw"), dtype=np.float32))


def test_dimension_is_learnt_from_the_service(server: ModelServer) -> None:
    embedder = make(server, embedding_dimension=None)
    assert embedder.embedding_dimension == DIM
    assert embedder.embedding_dimension == DIM
    assert len(server.requests) == 1  # the service is asked once
    assert embedder.embed([]).shape == (0, DIM)
    assert embedder.embed(["x"]).shape == (1, DIM)


def test_wrong_dimension_and_bad_bodies_are_typed(server: ModelServer) -> None:
    with pytest.raises(EmbeddingServiceError, match="shape"):
        make(server, embedding_dimension=DIM + 1).embed(["x"])
    server.handle("/embeddings", lambda seen: Reply(json={"data": [
        {"index": 1, "embedding": [1.0] * DIM}]}))
    with pytest.raises(EmbeddingServiceError, match="indexes"):
        make(server).embed(["x"])
    server.handle("/embeddings", lambda seen: Reply(json={"nothing": True}))
    with pytest.raises(EmbeddingServiceError, match="'data'"):
        make(server).embed(["x"])


def test_retries_after_429_then_typed_failure_after_503s(server: ModelServer) -> None:
    calls: list[int] = []

    def flaky(seen: Seen) -> Reply:
        calls.append(1)
        if len(calls) == 1:
            return Reply(429, {"error": "rate"}, headers={"Retry-After": "1"})
        return embeddings(seen)

    server.handle("/embeddings", flaky)
    assert make(server).embed(["x"]).shape == (1, DIM)
    first, second = server.requests
    assert second.at - first.at >= 0.9

    server.handle("/embeddings", lambda seen: Reply(503, {"error": "down"},
                                                   headers={"Retry-After": "0"}))
    with pytest.raises(EmbeddingServiceError, match="HTTP 503.*after 2 attempts"):
        make(server, max_retries=1).embed(["x"])
    assert len(server.requests) == 4


def test_timeout_is_typed(server: ModelServer) -> None:
    server.handle("/embeddings", lambda seen: Reply(json={}, delay=1.5))
    with pytest.raises(EmbeddingServiceError, match="timed out"):
        make(server, read_timeout=0.3, max_retries=0).embed(["x"])
    assert len(server.requests) == 1


def test_embed_async_sends_batches_concurrently_within_the_bound(server: ModelServer) -> None:
    server.handle("/embeddings", lambda seen: Reply(json=embeddings(seen).json, delay=0.2))
    embedder = make(server, batch_size=1, max_concurrent_requests=3, normalize=True)
    texts = [f"t{n}" for n in range(7)]

    vectors = asyncio.run(embedder.embed_async(texts, is_query=True))
    assert vectors.shape == (7, DIM)
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, unit(text), rtol=1e-5)
    assert server.max_in_flight == 3


def test_invalid_arguments_are_typed(server: ModelServer) -> None:
    with pytest.raises(InvalidArgumentError):
        Embedder("", api_base=server.base_url)
    with pytest.raises(InvalidArgumentError, match="send_dimensions"):
        Embedder("m", api_base=server.base_url, send_dimensions=True)
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        make(server, batch_size=0)
    embedder = make(server)
    with pytest.raises(InvalidArgumentTypeError):
        embedder.embed("not a list")
    with pytest.raises(InvalidArgumentTypeError, match=r"texts\[1\]"):
        embedder.embed(["ok", 3])  # type: ignore[list-item]
    assert server.requests == []


def test_every_argument_but_the_model_may_be_omitted(server: ModelServer) -> None:
    """The vendor's declared defaults: ``NOT_SET_MARKER`` for each, meaning omitted."""
    parameters = list(inspect.signature(Embedder).parameters.values())
    declared = parameters[1:14]
    assert [p.name for p in declared] == [
        "api_base", "api_key", "embedding_dimension", "max_input_tokens", "normalize",
        "query_prefix", "document_prefix", "truncate_prompt_tokens", "key_file", "cert_file",
        "ca_file", "proxy", "trust_env"]
    assert all(p.default is NOT_SET_MARKER for p in declared)
    omitted = Embedder("embed-model", server.base_url, "k", NOT_SET_MARKER, NOT_SET_MARKER,
                       NOT_SET_MARKER, NOT_SET_MARKER, NOT_SET_MARKER, NOT_SET_MARKER,
                       NOT_SET_MARKER, NOT_SET_MARKER, NOT_SET_MARKER, NOT_SET_MARKER,
                       NOT_SET_MARKER)
    assert omitted.embedding_dimension == DIM and omitted.max_input_tokens == 512
    [row] = omitted.embed(["raw"], is_query=True)
    np.testing.assert_allclose(row, np.asarray(vector("raw"), dtype=np.float32))
    assert server.bodies("/embeddings")[-1] == {"model": "embed-model", "input": ["raw"]}
