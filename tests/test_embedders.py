"""Embedders: the local ``HashingEmbedder`` baseline and the HTTP ``OpenAICompatibleEmbedder``.

The embedding service cannot run here, so ``FakeEmbeddingService`` is an honest fake: a real HTTP
server on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a background thread) that speaks the
OpenAI ``POST /v1/embeddings`` protocol, embeds with a ``HashingEmbedder``, records every request
(headers and JSON body) and can be told to misbehave (HTTP errors, hangs, wrong shapes, malformed
JSON, out-of-order indexes, NaN). The stores use the real embedded database.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from conftest import StoreFactory, new_store_id
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy, SearchStrategy
from oracleagentmemory.core.embedders import (
    EmbeddingServiceError,
    HashingEmbedder,
    OpenAICompatibleEmbedder,
)

POSTGRESQL_ONLY = (
    "reads the embedding column's dimension from pg_attribute (PostgreSQL catalog)")
"""Why the marked tests do not run on Oracle (``tests/provision/engine_marks.py``)."""

PIZZA = "Alice loves pizza with mushrooms and olives"
PIZZA_TOO = "pizza with olives is what Alice orders every friday"
TAXES = "the quarterly tax report is due to the accountant"


def cosine(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- HashingEmbedder ----------------------------------------------------------------------------


def test_hashing_embedder_returns_one_float32_row_per_text() -> None:
    vectors = HashingEmbedder(dimension=64).embed([PIZZA, PIZZA_TOO, TAXES])

    assert vectors.shape == (3, 64)
    assert vectors.dtype == np.float32


def test_hashing_embedder_default_dimension_is_384() -> None:
    embedder = HashingEmbedder()

    assert embedder.embedding_dimension == 384
    assert embedder.embed([PIZZA]).shape == (1, 384)


def test_hashing_embedder_rows_have_unit_norm() -> None:
    vectors = HashingEmbedder().embed([PIZZA, TAXES, "x", "ÉTÉ à Zürich — 東京"])

    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("text", ["", "   ", "?!. ,;"])
def test_hashing_embedder_text_without_words_gives_a_unit_vector(text: str) -> None:
    vector = HashingEmbedder(dimension=32).embed([text])[0]

    assert np.all(np.isfinite(vector))
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0)


def test_hashing_embedder_empty_batch_gives_an_empty_matrix() -> None:
    assert HashingEmbedder(dimension=16).embed([]).shape == (0, 16)


def test_hashing_embedder_is_deterministic_across_instances() -> None:
    first = HashingEmbedder().embed([PIZZA, TAXES])
    second = HashingEmbedder().embed([TAXES, PIZZA])

    np.testing.assert_array_equal(first, second[::-1])


def test_hashing_embedder_is_deterministic_across_processes() -> None:
    """Another interpreter, with a different str hash seed, computes the same bits."""
    script = (
        "import json, sys\n"
        "from oracleagentmemory.core.embedders import HashingEmbedder\n"
        "rows = HashingEmbedder().embed(json.loads(sys.argv[1]))\n"
        "print(json.dumps([[float(x) for x in row] for row in rows]))\n"
    )
    texts = [PIZZA, TAXES, ""]
    env = dict(os.environ, PYTHONHASHSEED="4242")
    result = subprocess.run([sys.executable, "-c", script, json.dumps(texts)], env=env,
                            capture_output=True, text=True, check=True, timeout=120)

    other = np.asarray(json.loads(result.stdout), dtype=np.float32)
    np.testing.assert_array_equal(other, HashingEmbedder().embed(texts))


def test_hashing_embedder_texts_sharing_words_are_closer_than_unrelated_texts() -> None:
    pizza, pizza_too, taxes = HashingEmbedder().embed([PIZZA, PIZZA_TOO, TAXES])

    assert cosine(pizza, pizza_too) > cosine(pizza, taxes) + 0.2


def test_hashing_embedder_character_ngrams_bring_word_forms_together() -> None:
    pizza, pizzas, taxes = HashingEmbedder().embed(["pizza", "pizzas", "taxes"])

    assert cosine(pizza, pizzas) > 0.4
    assert cosine(pizza, pizzas) > cosine(pizza, taxes) + 0.3


def test_hashing_embedder_ignores_case() -> None:
    lower, upper = HashingEmbedder().embed(["alice loves pizza", "ALICE Loves PIZZA"])

    np.testing.assert_array_equal(lower, upper)


def test_hashing_embedder_docstring_says_its_quality_is_a_baseline() -> None:
    assert "baseline" in (HashingEmbedder.__doc__ or "")


@pytest.mark.parametrize("dimension", [0, -1, 7, 8.0, True, "384", None])
def test_hashing_embedder_rejects_a_bad_dimension(dimension: Any) -> None:
    with pytest.raises(ValueError, match="dimension"):
        HashingEmbedder(dimension=dimension)


@pytest.mark.parametrize("ngram", [0, 1, 2.5, True, "3"])
def test_hashing_embedder_rejects_a_bad_ngram(ngram: Any) -> None:
    with pytest.raises(ValueError, match="ngram"):
        HashingEmbedder(ngram=ngram)


@pytest.mark.parametrize("word_weight", [-1.0, math.nan, math.inf, "2"])
def test_hashing_embedder_rejects_a_bad_word_weight(word_weight: Any) -> None:
    with pytest.raises(ValueError, match="word_weight"):
        HashingEmbedder(word_weight=word_weight)


def test_hashing_embedder_rejects_a_single_str() -> None:
    with pytest.raises(TypeError, match="texts"):
        HashingEmbedder().embed(PIZZA)


def test_hashing_embedder_rejects_a_non_str_text() -> None:
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        HashingEmbedder().embed([PIZZA, 42])  # type: ignore[list-item]


def test_hashing_embedder_embed_async_equals_embed() -> None:
    embedder = HashingEmbedder()

    vectors = asyncio.run(embedder.embed_async([PIZZA, TAXES]))

    np.testing.assert_array_equal(vectors, embedder.embed([PIZZA, TAXES]))


def test_store_with_hashing_embedder_gets_its_dimension_and_searches(
        make_store: StoreFactory) -> None:
    store = make_store(embedder=HashingEmbedder())
    pizza_id, _ = store.add([PIZZA, TAXES], record_type="memory")

    results = store.search("what pizza does Alice like", k=2)

    assert store.vector_dim == 384
    assert [record.id for record, _ in results][0] == pizza_id


# --- vector_dim defaults to the embedder's dimension --------------------------------------------


def embedding_column_dimension(pg_url: str, store: OracleDBMemoryStore) -> int:
    """The declared dimension of ``<store>_record_chunks.embedding`` (pgvector's typmod)."""
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = 'embedding'", [store._names.table("record_chunks")]).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("strategy", [SearchStrategy.VECTOR, SearchStrategy.HYBRID])
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_vector_dim_defaults_to_the_embedding_dimension(
        make_store: StoreFactory, pg_url: str, strategy: SearchStrategy) -> None:
    store = make_store(embedder=HashingEmbedder(dimension=48), search_strategy=strategy)

    assert store.vector_dim == 48
    assert embedding_column_dimension(pg_url, store) == 48


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_vector_dim_defaults_to_the_embedding_dimension_without_a_strategy(
        make_store: StoreFactory, pg_url: str) -> None:
    store = make_store(embedder=HashingEmbedder(dimension=24))

    assert store.vector_dim == 24
    assert embedding_column_dimension(pg_url, store) == 24


def test_vector_dim_that_disagrees_with_the_embedder_is_rejected(make_store: StoreFactory) -> None:
    with pytest.raises(ValueError, match="vector_dim"):
        make_store(embedder=HashingEmbedder(dimension=48), vector_dim=64)


# --- the fake OpenAI-compatible embedding service -----------------------------------------------


@dataclass
class RecordedRequest:
    """One request the fake service received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeEmbeddingService:
    """A real HTTP server answering ``POST /v1/embeddings`` like the OpenAI API.

    ``mode`` scripts the next answers: ``"ok"``, ``"http_error"`` (``status``), ``"hang"`` (waits
    until the test ends), ``"wrong_dimension"``, ``"missing_row"``, ``"malformed_json"``,
    ``"no_data"``, ``"reversed"`` (data listed in reverse index order), ``"duplicate_index"``,
    ``"nan"``.
    """

    dimension: int = 16
    mode: str = "ok"
    status: int = 500
    requests: list[RecordedRequest] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with service._lock:
                    service.requests.append(RecordedRequest(
                        "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status, payload = service.answer(self.path, body)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str, body: Any) -> tuple[int, bytes]:
        if path != "/v1/embeddings":
            return 404, b'{"error": {"message": "not found"}}'
        if self.mode == "http_error":
            return self.status, b'{"error": {"message": "the model is overloaded"}}'
        if self.mode == "hang":
            self.release.wait(30)
        if self.mode == "malformed_json":
            return 200, b'{"data": [{"index": 0, "embedding": [0.1, 0.2'
        if self.mode == "no_data":
            return 200, b'{"object": "list", "items": []}'
        texts = body["input"]
        dimension = int(body.get("dimensions", self.dimension))
        if self.mode == "wrong_dimension":
            dimension += 1
        vectors = HashingEmbedder(dimension=max(dimension, 8)).embed(texts)[:, :dimension]
        data: list[dict[str, Any]] = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vector]}
            for i, vector in enumerate(vectors)
        ]
        if self.mode == "nan":
            data[-1]["embedding"][0] = math.nan
        if self.mode == "missing_row":
            data = data[:-1]
        if self.mode == "reversed":
            data.reverse()
        if self.mode == "duplicate_index":
            data[-1]["index"] = 0
        answer = {"object": "list", "data": data, "model": body["model"],
                  "usage": {"prompt_tokens": 0, "total_tokens": 0}}
        return 200, json.dumps(answer).encode()  # json writes NaN for math.nan


@pytest.fixture
def service() -> Iterator[FakeEmbeddingService]:
    fake = FakeEmbeddingService()
    yield fake
    fake.stop()


def client(service: FakeEmbeddingService, **kwargs: Any) -> OpenAICompatibleEmbedder:
    kwargs.setdefault("model", "fake-embed-small")
    kwargs.setdefault("dimension", service.dimension)
    return OpenAICompatibleEmbedder(service.base_url, **kwargs)


def expected_vectors(texts: list[str], dimension: int = 16) -> npt.NDArray[np.float32]:
    return HashingEmbedder(dimension=dimension).embed(texts)


# --- OpenAICompatibleEmbedder: protocol ---------------------------------------------------------


def test_openai_embedder_posts_model_and_input_to_the_embeddings_endpoint(
        service: FakeEmbeddingService) -> None:
    vectors = client(service).embed([PIZZA, TAXES])

    [request] = service.requests
    assert request.path == "/v1/embeddings"
    assert request.headers["content-type"] == "application/json"
    assert request.body["model"] == "fake-embed-small"
    assert request.body["input"] == [PIZZA, TAXES]
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected_vectors([PIZZA, TAXES]), rtol=1e-6)


def test_openai_embedder_accepts_a_base_url_with_a_trailing_slash(
        service: FakeEmbeddingService) -> None:
    embedder = OpenAICompatibleEmbedder(service.base_url + "/", "fake-embed-small", 16)

    embedder.embed([PIZZA])

    assert [r.path for r in service.requests] == ["/v1/embeddings"]


def test_openai_embedder_sends_texts_in_batches_of_batch_size(
        service: FakeEmbeddingService) -> None:
    texts = [f"note number {i} about topic {i % 7}" for i in range(70)]

    vectors = client(service, batch_size=32).embed(texts)

    assert [len(r.body["input"]) for r in service.requests] == [32, 32, 6]
    assert [t for r in service.requests for t in r.body["input"]] == texts
    assert vectors.shape == (70, 16)
    np.testing.assert_allclose(vectors, expected_vectors(texts), rtol=1e-6)


def test_openai_embedder_orders_results_by_index_not_by_answer_order(
        service: FakeEmbeddingService) -> None:
    service.mode = "reversed"
    texts = [f"text {i}: {word}" for i, word in enumerate(["apple", "pear", "plum", "fig", "kiwi"])]

    vectors = client(service, batch_size=2).embed(texts)

    np.testing.assert_allclose(vectors, expected_vectors(texts), rtol=1e-6)


def test_openai_embedder_sends_no_request_for_an_empty_batch(
        service: FakeEmbeddingService) -> None:
    vectors = client(service).embed([])

    assert vectors.shape == (0, 16)
    assert service.requests == []


def test_openai_embedder_sends_the_api_key_as_a_bearer_token(
        service: FakeEmbeddingService) -> None:
    client(service, api_key="sk-test-123").embed([PIZZA])

    assert service.requests[0].headers["authorization"] == "Bearer sk-test-123"


def test_openai_embedder_sends_no_authorization_without_an_api_key(
        service: FakeEmbeddingService) -> None:
    client(service).embed([PIZZA])

    assert "authorization" not in service.requests[0].headers


def test_openai_embedder_sends_dimensions_only_when_asked(service: FakeEmbeddingService) -> None:
    client(service).embed([PIZZA])
    client(service, dimension=12, send_dimensions=True).embed([PIZZA])

    plain, shortened = service.requests
    assert "dimensions" not in plain.body
    assert shortened.body["dimensions"] == 12


def test_openai_embedder_reports_its_dimension(service: FakeEmbeddingService) -> None:
    assert client(service, dimension=12).embedding_dimension == 12


def test_openai_embedder_embed_async_equals_embed(service: FakeEmbeddingService) -> None:
    embedder = client(service)

    vectors = asyncio.run(embedder.embed_async([PIZZA, TAXES]))

    np.testing.assert_array_equal(vectors, embedder.embed([PIZZA, TAXES]))
    assert len(service.requests) == 2


def test_openai_embedder_rejects_a_single_str(service: FakeEmbeddingService) -> None:
    with pytest.raises(TypeError, match="texts"):
        client(service).embed(PIZZA)
    assert service.requests == []


def test_openai_embedder_rejects_a_non_str_text(service: FakeEmbeddingService) -> None:
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        client(service).embed([PIZZA, None])  # type: ignore[list-item]
    assert service.requests == []


# --- OpenAICompatibleEmbedder: failures become EmbeddingServiceError ----------------------------


def test_openai_embedder_timeout_raises_embedding_service_error(
        service: FakeEmbeddingService) -> None:
    service.mode = "hang"

    with pytest.raises(EmbeddingServiceError, match="timed out") as caught:
        client(service, timeout=0.2).embed([PIZZA])

    assert isinstance(caught.value, RuntimeError)


@pytest.mark.parametrize("status", [401, 429, 500, 503])
def test_openai_embedder_http_error_names_the_status(
        service: FakeEmbeddingService, status: int) -> None:
    service.mode = "http_error"
    service.status = status

    with pytest.raises(EmbeddingServiceError, match=f"HTTP {status}.*overloaded"):
        client(service).embed([PIZZA])


def test_openai_embedder_unreachable_service_raises_embedding_service_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:{port}/v1", "fake-embed-small", 16)

    with pytest.raises(EmbeddingServiceError, match=f"127.0.0.1:{port}"):
        embedder.embed([PIZZA])


@pytest.mark.parametrize(("mode", "message"), [
    ("wrong_dimension", r"shape \(2, 17\); expected \(2, 16\)"),
    ("missing_row", r"shape \(1, 16\); expected \(2, 16\)"),
    ("nan", "non-finite"),
    ("malformed_json", "data"),
    ("no_data", "data"),
    ("duplicate_index", "index"),
])
def test_openai_embedder_unusable_answer_raises_embedding_service_error(
        service: FakeEmbeddingService, mode: str, message: str) -> None:
    service.mode = mode

    with pytest.raises(EmbeddingServiceError, match=message):
        client(service).embed([PIZZA, TAXES])


def test_openai_embedder_error_in_a_later_batch_is_reported(
        service: FakeEmbeddingService) -> None:
    embedder = client(service, batch_size=1)
    embedder.embed([PIZZA])
    service.mode = "nan"

    with pytest.raises(EmbeddingServiceError, match="non-finite"):
        embedder.embed([PIZZA, TAXES])


# --- OpenAICompatibleEmbedder: constructor validation ---------------------------------------------


@pytest.mark.parametrize("base_url", ["", "localhost:8000/v1", "ftp://example.com/v1", None, 42])
def test_openai_embedder_rejects_a_bad_base_url(base_url: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="base_url"):
        OpenAICompatibleEmbedder(base_url, "fake-embed-small", 16)


@pytest.mark.parametrize("model", ["", "   ", None, 7])
def test_openai_embedder_rejects_a_bad_model(model: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="model"):
        OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", model, 16)


@pytest.mark.parametrize("dimension", [0, -3, 1.5, True, "16"])
def test_openai_embedder_rejects_a_bad_dimension(dimension: Any) -> None:
    with pytest.raises(ValueError, match="dimension"):
        OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", "fake-embed-small", dimension)


@pytest.mark.parametrize("batch_size", [0, -1, 2.0, True])
def test_openai_embedder_rejects_a_bad_batch_size(batch_size: Any) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", "fake-embed-small", 16,
                                 batch_size=batch_size)


@pytest.mark.parametrize("timeout", [0, -1.0, math.nan, math.inf, None, "5"])
def test_openai_embedder_rejects_a_bad_timeout(timeout: Any) -> None:
    with pytest.raises(ValueError, match="timeout"):
        OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", "fake-embed-small", 16, timeout=timeout)


# --- OpenAICompatibleEmbedder in a store --------------------------------------------------------


def test_store_with_openai_embedder_embeds_writes_and_queries_through_the_service(
        service: FakeEmbeddingService, pg_url: str) -> None:
    service.dimension = 32
    embedder = OpenAICompatibleEmbedder(service.base_url, "fake-embed-small", 32,
                                        api_key="sk-store", batch_size=2)
    store = OracleDBMemoryStore(embedder, pg_url,
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id=new_store_id())
    try:
        contents = [PIZZA, TAXES, "Bob plays chess on tuesdays"]
        pizza_id, taxes_id, chess_id = store.add(contents, record_type="memory")
        written = [t for r in service.requests for t in r.body["input"]]

        results = store.search("which pizza does Alice order", k=3)
    finally:
        store.close()
        embedder.close()

    assert store.vector_dim == 32
    assert written == contents
    assert service.requests[-1].body["input"] == ["which pizza does Alice order"]
    assert {r.headers["authorization"] for r in service.requests} == {"Bearer sk-store"}
    assert [record.id for record, _ in results][0] == pizza_id
    assert {record.id for record, _ in results} == {pizza_id, taxes_id, chess_id}


def test_store_write_fails_cleanly_when_the_embedding_service_fails(
        service: FakeEmbeddingService, make_store: StoreFactory) -> None:
    embedder = client(service)
    store = make_store(embedder=embedder)
    service.mode = "http_error"

    with pytest.raises(EmbeddingServiceError, match="HTTP 500"):
        store.add([PIZZA], record_type="memory", record_ids="m-failed")

    assert store.get("memory", "m-failed") is None
