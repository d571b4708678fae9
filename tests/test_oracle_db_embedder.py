"""``OracleDBEmbedder``'s parameters as Oracle's ``oracleagentmemory`` 26.8 declares them:
``input_name``, an omittable ``embedding_dimension``, ``normalize``, ``query_prefix``,
``provider``, ``provider_options`` and ``get_vectorizer_config_json()``.

No Oracle database runs here. Everything that needs none is tested for real: the declared
signature, argument validation with typed errors, the vectorizer JSON, the statement and binds
the Oracle engine runs for each provider (``OracleInDatabaseEmbedding.statement``), learning the
dimension from the first vectors, the query prefix and normalisation applied around the engine,
and, with a real ``oracledb`` pool whose DSN nothing listens on, that an undeclared dimension is
probed in the database (the probe fails as unreachable).
"""

from __future__ import annotations

import array
import asyncio
import inspect
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import oracledb
import pytest
from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.core.embedders import OracleDBEmbedder
from oracleagentmemory.engines.in_database import in_database_embedding
from oracleagentmemory.engines.oracle import embedding
from oracleagentmemory.engines.oracle.embedding import OracleInDatabaseEmbedding
from oracleagentmemory.errors import (
    DatabaseUnavailableError,
    EmbeddingServiceError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)

DSN = "127.0.0.1:9/NOSUCH"


@pytest.fixture()
def pool() -> Iterator[oracledb.ConnectionPool]:
    """A real python-oracledb pool (thin mode, ``min=0``: no connection yet), unreachable."""
    created = oracledb.create_pool(user="oam", password="unused", dsn=DSN, min=0, max=1,
                                   increment=1, tcp_connect_timeout=2)
    yield created
    created.close(force=True)


def test_the_constructor_declares_the_vendor_parameters() -> None:
    parameters = list(inspect.signature(OracleDBEmbedder).parameters.values())
    assert [p.name for p in parameters] == [
        "connection", "model", "input_name", "embedding_dimension", "max_input_tokens",
        "normalize", "query_prefix", "batch_size", "provider", "provider_options"]
    assert {p.kind for p in parameters} == {inspect.Parameter.POSITIONAL_OR_KEYWORD}
    assert [p.default for p in parameters[2:-1]] == [NOT_SET_MARKER] * 7
    assert parameters[-1].default is None
    embed = inspect.signature(OracleDBEmbedder.embed).parameters["is_query"]
    assert embed.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and embed.default is False


def test_defaults(pool: oracledb.ConnectionPool) -> None:
    embedder = OracleDBEmbedder(pool, "doc_model", embedding_dimension=384)
    assert (embedder.provider, embedder.model, embedder.input_name) == \
        ("database", "DOC_MODEL", "DATA")
    assert embedder.normalize is False and embedder.query_prefix is None
    assert embedder.max_input_tokens == 512 and embedder.embedding_dimension == 384


@pytest.mark.parametrize(("arguments", "config"), [
    ({"model": "doc_model"}, {"model": "DOC_MODEL"}),
    ({"model": "doc_model", "input_name": "text"}, {"model": "DOC_MODEL", "input_name": "TEXT"}),
    ({"model": "doc_model", "input_name": "DATA"}, {"model": "DOC_MODEL"}),
    ({"model": "other.onnx_model"}, {"model": "OTHER.ONNX_MODEL"}),
    ({"model": "doc_model", "provider": "Database"}, {"model": "DOC_MODEL"}),
    ({"model": "doc_model", "provider_options": {"input_name": "txt"}},
     {"model": "DOC_MODEL", "input_name": "TXT"}),
    ({"model": "doc_model", "input_name": "body", "provider_options": {"input_name": "txt"}},
     {"model": "DOC_MODEL", "input_name": "BODY"}),
    ({"model": "text-embedding-3-small", "provider": "OpenAI",
      "provider_options": {"credential_name": "OPENAI_CRED", "url": "https://e.example/v1"}},
     {"embedder_spec": {"credential_name": "OPENAI_CRED", "url": "https://e.example/v1",
                        "provider": "openai", "model": "text-embedding-3-small"}}),
    ({"model": "BAAI/bge-small-en-v1.5",
      "provider_options": {"provider": "openai", "host": "local", "model": "ignored",
                           "url": "http://localhost:8080/v1/embeddings"}},
     {"embedder_spec": {"host": "local", "url": "http://localhost:8080/v1/embeddings",
                        "provider": "openai", "model": "BAAI/bge-small-en-v1.5"}}),
    ({"model": "embed-english-v3.0", "provider": "cohere", "input_name": "unused",
      "provider_options": {"provider": "database", "input_type": "search_document"}},
     {"embedder_spec": {"input_type": "search_document", "provider": "cohere",
                        "model": "embed-english-v3.0"}}),
])
def test_the_vectorizer_config(pool: oracledb.ConnectionPool, arguments: dict[str, Any],
                               config: dict[str, Any]) -> None:
    text = OracleDBEmbedder(pool, embedding_dimension=8, **arguments).get_vectorizer_config_json()
    assert json.loads(text) == config
    assert " " not in text.replace("https://e.example/v1", "")  # compact JSON


@pytest.mark.parametrize(("arguments", "error", "argument"), [
    ({"provider": ""}, InvalidArgumentError, "provider"),
    ({"provider": " openai"}, InvalidArgumentError, "provider"),
    ({"provider": 3}, InvalidArgumentTypeError, "provider"),
    ({"provider_options": {"provider": 3}}, InvalidArgumentTypeError, "provider"),
    ({"provider_options": [("url", "u")]}, InvalidArgumentTypeError, "provider_options"),
    ({"provider_options": {1: "u"}}, InvalidArgumentTypeError, "provider_options"),
    ({"provider_options": {"url": object()}}, InvalidArgumentTypeError, "provider_options"),
    ({"input_name": 8}, InvalidArgumentTypeError, "input_name"),
    ({"input_name": "a b"}, InvalidArgumentError, "input_name"),
    ({"input_name": "data; DROP TABLE t"}, InvalidArgumentError, "input_name"),
    ({"normalize": "yes"}, InvalidArgumentTypeError, "normalize"),
    ({"query_prefix": 3}, InvalidArgumentTypeError, "query_prefix"),
    ({"embedding_dimension": 0}, InvalidArgumentError, "embedding_dimension"),
    ({"batch_size": 0}, InvalidArgumentError, "batch_size"),
    ({"max_input_tokens": 0}, InvalidArgumentError, "max_input_tokens"),
    ({"model": "text-embedding-3-small"}, InvalidArgumentError, "model"),
])
def test_arguments_are_validated_with_typed_errors(pool: oracledb.ConnectionPool,
                                                   arguments: dict[str, Any],
                                                   error: type[Exception],
                                                   argument: str) -> None:
    given: dict[str, Any] = {"model": "doc_model", **arguments}
    with pytest.raises(error) as raised:
        OracleDBEmbedder(pool, **given)
    assert getattr(raised.value, "argument", None) == argument


# --- what the engine runs ------------------------------------------------------------------------
def engine(pool: oracledb.ConnectionPool, **arguments: Any) -> OracleInDatabaseEmbedding:
    backend = in_database_embedding(pool, **{"embedding_dimension": None, "batch_size": 4,
                                             **arguments})
    assert isinstance(backend, OracleInDatabaseEmbedding)
    return backend


def test_a_database_model_runs_vector_embedding_with_its_input_name(
        pool: oracledb.ConnectionPool) -> None:
    one = engine(pool, model="doc_model", input_name="text").statement(["it's"])
    assert one.sql == ('SELECT VECTOR_EMBEDDING("DOC_MODEL" USING :text AS TEXT) AS '
                       '"embedding" FROM dual')
    assert one.binds == {"text": "it's"}
    many = engine(pool, model="doc_model").statement(["a", "b"])
    assert "USING j.txt AS DATA)" in many.sql and many.binds == {"texts": ["a", "b"]}


def test_another_provider_runs_utl_to_embedding_with_bound_parameters(
        pool: oracledb.ConnectionPool) -> None:
    backend = engine(pool, model="text-embedding-3-small", provider="OpenAI",
                     provider_options={"credential_name": "OPENAI_CRED",
                                       "url": "https://e.example/v1'--"})
    one = backend.statement(["hello"])
    assert one.sql == embedding.single_provider_embedding_sql()
    assert one.binds["text"] == "hello"
    assert json.loads(one.binds["params"]) == {
        "credential_name": "OPENAI_CRED", "url": "https://e.example/v1'--",
        "provider": "openai", "model": "text-embedding-3-small"}
    many = backend.statement(["a", "b"])
    assert many.sql == embedding.batch_provider_embedding_sql()
    assert many.binds["texts"] == ["a", "b"] and "params" in many.binds
    assert "e.example" not in one.sql + many.sql and backend.model == "text-embedding-3-small"


def test_an_undeclared_dimension_is_learnt_from_the_first_vectors() -> None:
    rows = [(1, array.array("f", [3.0, 4.0, 0.0])), (2, array.array("f", [0.0, 1.0, 0.0]))]
    assert embedding.vectors_from_rows(rows, 2, None, "M").shape == (2, 3)
    with pytest.raises(EmbeddingServiceError, match="embedding_dimension is 3"):
        embedding.vectors_from_rows([*rows[:1], (2, array.array("f", [1.0]))], 2, None, "M")
    with pytest.raises(EmbeddingServiceError):
        embedding.vectors_from_rows([(1, array.array("f", []))], 1, None, "M")


def test_an_undeclared_dimension_is_probed_in_the_database(
        pool: oracledb.ConnectionPool) -> None:
    embedder = OracleDBEmbedder(pool, "doc_model")
    with pytest.raises(DatabaseUnavailableError):
        _ = embedder.embedding_dimension
    with pytest.raises(DatabaseUnavailableError):
        embedder.embed([])  # an empty batch still needs the dimension of its shape
    declared = OracleDBEmbedder(pool, "doc_model", embedding_dimension=None)
    with pytest.raises(DatabaseUnavailableError):
        _ = declared.embedding_dimension


def test_an_async_pool_needs_a_declared_dimension_to_answer_synchronously() -> None:
    async def main() -> None:
        pool = oracledb.create_pool_async(user="oam", password="unused", dsn=DSN, min=0, max=1,
                                          increment=1, tcp_connect_timeout=2)
        try:
            embedder = OracleDBEmbedder(pool, "doc_model")
            with pytest.raises(InvalidArgumentError) as raised:
                _ = embedder.embedding_dimension
            assert raised.value.argument == "embedding_dimension"
            assert OracleDBEmbedder(pool, "doc_model", embedding_dimension=16
                                    ).embedding_dimension == 16
        finally:
            await pool.close(force=True)

    asyncio.run(main())


def test_query_prefix_and_normalize_apply_around_the_engine(
        pool: oracledb.ConnectionPool) -> None:
    embedder = OracleDBEmbedder(pool, "doc_model", embedding_dimension=2,
                                query_prefix="search_query: ", normalize=True)
    assert embedder._prepared(["pizza"], True) == ["search_query: pizza"]
    assert embedder._prepared(["pizza"], False) == ["pizza"]
    vectors = embedder._finish(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32))
    assert vectors.dtype == np.float32
    assert np.allclose(vectors, [[0.6, 0.8], [0.0, 0.0]])
    plain = OracleDBEmbedder(pool, "doc_model", embedding_dimension=2, query_prefix="")
    assert plain.query_prefix is None and plain._prepared(["x"], True) == ["x"]
    assert plain._finish(np.array([[3.0, 4.0]], dtype=np.float32)).tolist() == [[3.0, 4.0]]


def test_sparse_vectors_are_expanded_and_other_values_refused() -> None:
    rows = [(1, oracledb.SparseVector(4, [0, 3], [1.5, 2.0])),
            (2, oracledb.SparseVector(4, [], []))]
    assert embedding.vectors_from_rows(rows, 2, 4, "M").tolist() == [[1.5, 0.0, 0.0, 2.0],
                                                                      [0.0, 0.0, 0.0, 0.0]]
    assert embedding.vectors_from_rows(rows[:1], 1, None, "M").shape == (1, 4)
    with pytest.raises(EmbeddingServiceError, match="not a vector"):
        embedding.vectors_from_rows([(1, "0.5,0.5")], 1, None, "M")
