"""In-database embeddings on Oracle: ``VECTOR_EMBEDDING`` with an ONNX model in the database,
``DBMS_VECTOR_CHAIN.UTL_TO_EMBEDDING`` with a provider the database calls (OpenAI, Cohere, OCI
Generative AI, ...), and loading an ONNX model with ``DBMS_VECTOR.LOAD_ONNX_MODEL``.

``VECTOR_EMBEDDING(model USING expr AS data)`` returns one ``VECTOR`` whose dimension the model
fixes (Oracle SQL Language Reference, "VECTOR_EMBEDDING"; AI Vector Search User's Guide). A
batch of texts is one query: the texts are bound as one JSON array (``DB_TYPE_JSON``) and
unnested with ``JSON_TABLE ... FOR ORDINALITY``, so the rows come back in the texts' order
(:func:`batch_embedding_sql`); a single text uses ``FROM dual`` (:func:`single_embedding_sql`).
The model name is an identifier, never a bind: validated and quoted by
:mod:`~oracleagentmemory.engines.oracle.names` (``MODEL`` or ``OWNER.MODEL``; name it with its
owner when end-user sessions, which run as ``XS$NULL``, embed through the connection); so is the
model's input name (``USING expr AS <input>``, ``DATA`` unless the model's metadata names
another). A provider's model, endpoint and credential name travel in the bound JSON parameters of
``UTL_TO_EMBEDDING(data CLOB, params JSON) RETURN VECTOR`` (:func:`provider_params`).

Model names follow the rules ``DBMS_VECTOR`` states for them: an unquoted identifier of at most
123 characters, in a schema of at most 128 (``LOAD_ONNX_MODEL`` usage notes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
import oracledb

from oracleagentmemory.engines.in_database import (
    DATABASE_PROVIDER,
    DEFAULT_INPUT_NAME,
    DIMENSION_PROBE_TEXT,
    InDatabaseEmbedding,
)
from oracleagentmemory.engines.oracle.ddl import MAX_VECTOR_DIM
from oracleagentmemory.engines.oracle.driver_errors import translate
from oracleagentmemory.engines.oracle.names import RESERVED_WORDS, normalise, quote
from oracleagentmemory.engines.oracle.statement import Statement, json_sizes
from oracleagentmemory.errors import (
    DatabaseUnavailableError,
    EmbeddingServiceError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OperationTimeoutError,
    SecurityContextError,
)

MAX_MODEL_NAME_CHARS = 123
"""The longest model name ``DBMS_VECTOR`` accepts (its schema may have 128)."""

DEFAULT_ONNX_METADATA: dict[str, Any] = {
    "function": "embedding", "embeddingOutput": "embedding", "input": {"input": ["DATA"]}}
"""``LOAD_ONNX_MODEL``'s documented default metadata: an embedding model whose one input is
``DATA`` (hence ``USING ... AS data`` in the queries)."""

_SYNC_SOURCES = (oracledb.Connection, oracledb.ConnectionPool)
_ASYNC_SOURCES = (oracledb.AsyncConnection, oracledb.AsyncConnectionPool)


# --- names ------------------------------------------------------------------------------------
def model_name(model: object) -> str:
    """``model`` (``"doc_model"`` or ``"owner.doc_model"``) validated and upper-cased:
    ``"DOC_MODEL"`` / ``"OWNER.DOC_MODEL"``, as the dictionary and ``LOAD_ONNX_MODEL`` name it."""
    if not isinstance(model, str):
        raise InvalidArgumentTypeError(
            f"model must be a str, got {type(model).__name__}", argument="model")
    parts = model.split(".")
    if len(parts) > 2:
        raise InvalidArgumentError(
            f"model must be MODEL or OWNER.MODEL, got {model!r}", argument="model")
    name = normalise(parts[-1], what="model")
    if len(name) > MAX_MODEL_NAME_CHARS or name in RESERVED_WORDS:
        raise InvalidArgumentError(
            f"model must be an unquoted identifier of at most {MAX_MODEL_NAME_CHARS} "
            f"characters and not a reserved word, got {model!r}", argument="model")
    owner = [normalise(parts[0], what="model owner")] if len(parts) == 2 else []
    return ".".join([*owner, name])


def model_reference(model: object) -> str:
    """The model as SQL: ``"DOC_MODEL"`` or ``"OWNER"."DOC_MODEL"``."""
    return ".".join(quote(part, what="model") for part in model_name(model).split("."))


def input_name_sql(input_name: object) -> str:
    """The model input ``input_name`` validated and upper-cased (``DATA``), as ``USING ... AS``
    names it."""
    return normalise(input_name, what="input_name")


def provider_name(provider: object) -> str:
    """``provider`` lower-cased (``"database"``, ``"openai"``, ``"ocigenai"``, ...)."""
    if not isinstance(provider, str):
        raise InvalidArgumentTypeError(
            f"provider must be a str, got {type(provider).__name__}", argument="provider")
    if not provider.strip() or provider != provider.strip():
        raise InvalidArgumentError(
            f"provider must name an embedding provider, got {provider!r}", argument="provider")
    return provider.lower()


def provider_params(provider: str, model: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON parameters of ``UTL_TO_EMBEDDING`` for a provider the database calls:
    ``options`` (``url``, ``credential_name``, ...) with ``provider`` and ``model`` set."""
    return {**options, "provider": provider, "model": model}


# --- statements -----------------------------------------------------------------------------
_BATCH_SOURCE = ("FROM JSON_TABLE(:texts, '$[*]' COLUMNS (n FOR ORDINALITY, txt CLOB PATH "
                 "'$')) j ORDER BY j.n")


def single_embedding_sql(model: object, input_name: object = DEFAULT_INPUT_NAME) -> str:
    """One text (bind ``text``) -> one row with ``embedding``."""
    return (f"SELECT VECTOR_EMBEDDING({model_reference(model)} USING :text AS "
            f"{input_name_sql(input_name)}) AS \"embedding\" FROM dual")


def batch_embedding_sql(model: object, input_name: object = DEFAULT_INPUT_NAME) -> str:
    """A JSON array of texts (bind ``texts``) -> one row per text, ``(n, embedding)``, in order."""
    return (f"SELECT j.n AS \"n\", VECTOR_EMBEDDING({model_reference(model)} USING j.txt AS "
            f"{input_name_sql(input_name)}) AS \"embedding\" {_BATCH_SOURCE}")


def single_provider_embedding_sql() -> str:
    """One text (bind ``text``) embedded by the provider of bind ``params`` (JSON text)."""
    return ("SELECT DBMS_VECTOR_CHAIN.UTL_TO_EMBEDDING(:text, JSON(:params)) AS \"embedding\" "
            "FROM dual")


def batch_provider_embedding_sql() -> str:
    """A JSON array of texts (bind ``texts``) embedded by the provider of bind ``params``."""
    return ("SELECT j.n AS \"n\", DBMS_VECTOR_CHAIN.UTL_TO_EMBEDDING(j.txt, JSON(:params)) AS "
            f"\"embedding\" {_BATCH_SOURCE}")


def embedding_statement(model: object, texts: Sequence[str], *,
                        input_name: object = DEFAULT_INPUT_NAME,
                        params: Mapping[str, Any] | None = None) -> Statement:
    """The query embedding ``texts`` (one of them: ``FROM dual``; more: the batched form):
    with the in-database ``model`` (input ``input_name``), or, given ``params``
    (:func:`provider_params`), with the provider they name."""
    extra = {} if params is None else {"params": json.dumps(dict(params))}
    if len(texts) == 1:
        sql = single_embedding_sql(model, input_name) if params is None \
            else single_provider_embedding_sql()
        return Statement(sql=sql, binds={"text": texts[0], **extra}, columns=("embedding",))
    sql = batch_embedding_sql(model, input_name) if params is None \
        else batch_provider_embedding_sql()
    return Statement(sql=sql, binds={"texts": list(texts), **extra},
                     input_sizes=json_sizes("texts"), columns=("n", "embedding"))


def load_onnx_model(directory: str, file_name: str, model: str,
                    metadata: Mapping[str, Any] | None = None) -> Statement:
    """``DBMS_VECTOR.LOAD_ONNX_MODEL`` of ``file_name`` in directory object ``directory`` as
    ``model``; run as the schema owner (it needs ``CREATE MINING MODEL`` and READ on the
    directory). Every value is bound; the metadata is JSON text read with ``JSON(...)``."""
    if not isinstance(file_name, str) or not file_name or file_name in (".", "..") or any(
            ch in file_name for ch in "/\\\0"):
        raise InvalidArgumentError(
            f"file_name must be a file name in the directory (no path), got {file_name!r}",
            argument="file_name")
    return Statement(
        sql=("BEGIN DBMS_VECTOR.LOAD_ONNX_MODEL(directory => :directory, file_name => "
             ":file_name, model_name => :model_name, metadata => JSON(:metadata)); END;"),
        binds={"directory": normalise(directory, what="directory"), "file_name": file_name,
               "model_name": model_name(model),
               "metadata": json.dumps(dict(metadata or DEFAULT_ONNX_METADATA))})


# --- results ----------------------------------------------------------------------------------
def vectors_from_rows(rows: Sequence[Sequence[Any]], count: int, dimension: int | None,
                      model: str) -> npt.NDArray[np.float32]:
    """The fetched ``embedding`` values (last column of each row) as a ``(count, dimension)``
    float32 array; :class:`EmbeddingServiceError` unless there is one finite vector of the
    declared dimension per text (``dimension`` ``None``: the first vector's, at most
    ``MAX_VECTOR_DIM``)."""
    if len(rows) != count:
        raise EmbeddingServiceError(
            f"in-database model {model} returned {len(rows)} embeddings for {count} texts")
    vectors: npt.NDArray[np.float32] | None = None
    for n, row in enumerate(rows):
        value = row[-1]
        if value is None:
            raise EmbeddingServiceError(
                f"in-database model {model} returned no embedding for text {n}")
        vector = _dense(value, model, n)
        if dimension is None and vector.ndim == 1 and 1 <= len(vector) <= MAX_VECTOR_DIM:
            dimension = len(vector)
        if vector.shape != (dimension,):
            raise EmbeddingServiceError(
                f"in-database model {model} returned a vector of shape {vector.shape}; "
                f"embedding_dimension is {dimension}")
        if vectors is None:
            vectors = np.zeros((count, len(vector)), dtype=np.float32)
        vectors[n] = vector
    if vectors is None:
        return np.zeros((0, dimension or 0), dtype=np.float32)
    if not np.all(np.isfinite(vectors)):
        raise EmbeddingServiceError(f"in-database model {model} returned non-finite values")
    return vectors


def _dense(value: Any, model: str, n: int) -> npt.NDArray[np.float32]:
    """One fetched vector as a dense float32 array (a ``SPARSE`` vector is expanded)."""
    if isinstance(value, oracledb.SparseVector):
        dense = np.zeros(value.num_dimensions, dtype=np.float32)
        indices = np.asarray(value.indices, dtype=np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= value.num_dimensions):
            raise EmbeddingServiceError(
                f"in-database model {model} returned a sparse vector for text {n} whose "
                f"indices fall outside its {value.num_dimensions} dimensions")
        dense[indices] = np.asarray(value.values, dtype=np.float32)
        return dense
    try:
        return np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbeddingServiceError(
            f"in-database model {model} returned a {type(value).__name__} for text {n}, "
            "not a vector") from None


def _failure(exc: oracledb.Error, model: str) -> Exception:
    """A reachability, login or context failure as the driver layer types it; anything else
    (an unknown model, a text the model cannot take) as the embedding service's failure."""
    typed = translate(exc)
    if isinstance(typed, (DatabaseUnavailableError, SecurityContextError, OperationTimeoutError)):
        return typed
    return EmbeddingServiceError(f"in-database model {model} failed: {typed.message}")


# --- execution --------------------------------------------------------------------------------
class OracleInDatabaseEmbedding(InDatabaseEmbedding):
    """Embeds with ``VECTOR_EMBEDDING`` (the ``database`` provider) or ``UTL_TO_EMBEDDING``
    (any other provider) through an ``oracledb`` connection or pool (sync or async):
    ``batch_size`` texts per query, one pooled connection per call."""

    def __init__(self, connection: object, *, model: str, embedding_dimension: int | None,
                 batch_size: int, input_name: str = DEFAULT_INPUT_NAME,
                 provider: str = DATABASE_PROVIDER,
                 provider_options: Mapping[str, Any] | None = None) -> None:
        if not isinstance(connection, (*_SYNC_SOURCES, *_ASYNC_SOURCES)):
            raise InvalidArgumentTypeError(
                "connection must be an oracledb Connection, ConnectionPool, AsyncConnection or "
                f"AsyncConnectionPool, got {type(connection).__name__}", argument="connection")
        if embedding_dimension is not None and (
                isinstance(embedding_dimension, bool) or not isinstance(embedding_dimension, int)
                or not 1 <= embedding_dimension <= MAX_VECTOR_DIM):
            raise InvalidArgumentError(
                f"embedding_dimension must be an integer from 1 to {MAX_VECTOR_DIM}, got "
                f"{embedding_dimension!r}", argument="embedding_dimension")
        self.provider = provider_name(provider)
        self.provider_params = None
        if self.provider == DATABASE_PROVIDER:
            self.model = model_name(model)
            self.input_name = input_name_sql(input_name)
        else:
            self.model = model
            self.input_name = input_name_sql(DEFAULT_INPUT_NAME)
            self.provider_params = provider_params(self.provider, model, provider_options or {})
        self.embedding_dimension = embedding_dimension
        self._source = connection
        self._batch_size = batch_size

    def statement(self, texts: Sequence[str]) -> Statement:
        """The query that embeds ``texts`` (one batch) with this model."""
        return embedding_statement(self.model, texts, input_name=self.input_name,
                                   params=self.provider_params)

    def _vectors(self, rows: Sequence[Sequence[Any]], count: int) -> npt.NDArray[np.float32]:
        vectors = vectors_from_rows(rows, count, self.embedding_dimension, self.model)
        self.embedding_dimension = int(vectors.shape[1])
        return vectors

    def probe_dimension(self) -> int:
        """The declared dimension, else that of one probe embedding (synchronous connections
        only: on an async one, declare ``embedding_dimension`` or call ``embed_async`` first)."""
        if self.embedding_dimension is None and isinstance(self._source, _ASYNC_SOURCES):
            raise InvalidArgumentError(
                "embedding_dimension is not declared and an async oracledb connection or pool "
                "cannot be probed synchronously: declare embedding_dimension, or await "
                "embed_async once before reading it", argument="embedding_dimension")
        return super().probe_dimension()

    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        items = list(texts)
        return [items[i : i + self._batch_size] for i in range(0, len(items), self._batch_size)]

    @contextmanager
    def _connection(self) -> Iterator[oracledb.Connection]:
        if isinstance(self._source, oracledb.ConnectionPool):
            with self._source.acquire() as conn:
                yield conn
        elif isinstance(self._source, oracledb.Connection):
            yield self._source
        else:
            raise InvalidArgumentTypeError(
                "an OracleDBEmbedder on an async oracledb connection or pool embeds with "
                "embed_async only; give it a synchronous Connection or ConnectionPool for "
                "embed", argument="connection")

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` (one query per batch, on one connection)."""
        batches = self._batches(texts)
        if not batches:
            return np.zeros((0, self.probe_dimension()), dtype=np.float32)
        parts = []
        try:
            with self._connection() as conn, conn.cursor() as cursor:
                for batch in batches:
                    statement = self.statement(batch)
                    cursor.setinputsizes(**statement.input_sizes)
                    cursor.execute(statement.sql, dict(statement.binds))
                    parts.append(self._vectors(cursor.fetchall(), len(batch)))
        except oracledb.Error as exc:
            raise _failure(exc, self.model) from exc
        return np.vstack(parts)

    @asynccontextmanager
    async def _async_connection(self) -> Any:
        if isinstance(self._source, oracledb.AsyncConnectionPool):
            async with self._source.acquire() as conn:
                yield conn
        else:
            yield self._source

    async def embed_async(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``; on an async connection or pool with the driver's async API."""
        if isinstance(self._source, _SYNC_SOURCES):
            return await super().embed_async(texts)
        batches = self._batches(texts)
        if not batches:
            if self.embedding_dimension is None:
                await self.embed_async([DIMENSION_PROBE_TEXT])
            return np.zeros((0, self.embedding_dimension or 0), dtype=np.float32)
        parts = []
        try:
            async with self._async_connection() as conn:
                with conn.cursor() as cursor:
                    for batch in batches:
                        statement = self.statement(batch)
                        cursor.setinputsizes(**statement.input_sizes)
                        await cursor.execute(statement.sql, dict(statement.binds))
                        parts.append(self._vectors(await cursor.fetchall(), len(batch)))
        except oracledb.Error as exc:
            raise _failure(exc, self.model) from exc
        return np.vstack(parts)
