"""The spec's "Store Write Semantics": stored content versus retrieval rows and their vectors.

Each write has two parts: ``contents`` / ``content`` decide what reads return, while
``index_texts`` / ``index_text`` and ``embeddings`` / ``embedding`` decide the retrieval rows in
``<store>_record_chunks``. These tests read that table directly to check what was written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from conftest import HashEmbedder, StoreFactory
from oracleagentmemory.apis import MemoryRecord, PendingRecordBatch
from oracleagentmemory.core import MemoryRetentionConfig, OracleDBMemoryStore
from oracleagentmemory.errors import DuplicateRecordError
from psycopg import sql
from stored_rows import PostgresStoredRows, StoredChunk, StoredRows, open_stored_rows

POSTGRESQL_ONLY = (
    "compares PostgreSQL's binary COPY write path with its INSERT batches, reading the rows "
    "with psycopg")
"""Why the marked tests do not run on Oracle (``tests/provision/engine_marks.py``)."""

LONG_TEXT = (
    "Alice prefers window seats on long flights. She flies to Lisbon every spring. "
    "Her loyalty number is stored in the travel profile. She dislikes red-eye departures."
)
"""A retrieval text the sentence chunker below splits into four pieces."""

V1 = [1.0, 0.0, 0.0]
V2 = [0.0, 1.0, 0.0]
V3 = [0.0, 0.0, 1.0]


def split_sentences(text: str) -> list[str]:
    """A configured chunker: one chunk per sentence."""
    return [part.strip() + "." for part in text.split(".") if part.strip()]


# --- fixtures and database helpers ------------------------------------------------------------


@pytest.fixture
def db(database_url: object) -> Iterator[StoredRows]:
    """Reads what the store wrote, on the engine under test (``tests/stored_rows.py``)."""
    with open_stored_rows(database_url) as rows:
        yield rows


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A direct PostgreSQL connection, for the tests of PostgreSQL's own write paths."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(3)


@pytest.fixture
def embedded_store(make_store: StoreFactory, embedder: HashEmbedder) -> OracleDBMemoryStore:
    """A store with 3-dimensional vector storage whose vectors come from ``embedder``."""
    return make_store(embedder=embedder)


@pytest.fixture
def chunking_store(embedded_store: OracleDBMemoryStore) -> OracleDBMemoryStore:
    """``embedded_store`` with a sentence chunker configured (the store's chunking seam)."""
    embedded_store._chunker = split_sentences
    return embedded_store


def _table(store: OracleDBMemoryStore, name: str) -> sql.Composable:
    table = store._names.table(name)
    if store._names.schema:
        return sql.Identifier(store._names.schema, table)
    return sql.Identifier(table)


def chunks(db: StoredRows, store: OracleDBMemoryStore,
           record_id: str | None = None) -> list[StoredChunk]:
    """Retrieval rows of the store (of one record when ``record_id`` is given)."""
    return db.chunks(store, record_id)


def chunk_texts(db: StoredRows, store: OracleDBMemoryStore,
                record_id: str) -> list[str | None]:
    return [c.text for c in chunks(db, store, record_id)]


def count_rows(db: StoredRows, store: OracleDBMemoryStore, table: str) -> int:
    return db.count(store, table)


def content_of(store: OracleDBMemoryStore, record_type: str, record_id: str) -> Any:
    record = store.get(record_type, record_id)
    assert record is not None
    return record.content


def assert_vector(actual: list[float] | None, expected: Any) -> None:
    assert actual is not None
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected, dtype=np.float32),
                               rtol=1e-6)


def add_memory(store: OracleDBMemoryStore, record_id: str, content: str | None,
               **kwargs: Any) -> None:
    assert store.add([content], record_type="memory", record_ids=record_id, **kwargs) == [
        record_id]


# --- add(): choosing the retrieval text -------------------------------------------------------


@pytest.mark.parametrize("record_type", ["memory", "fact", "guideline", "preference", "message"])
def test_add_without_index_texts_indexes_the_stored_content(
        store: OracleDBMemoryStore, db: StoredRows, record_type: str) -> None:
    store.add(["Alice likes tea"], record_type=record_type, record_ids="r1", thread_ids="t1")
    assert content_of(store, record_type, "r1") == "Alice likes tea"
    assert chunks(db, store) == [
        StoredChunk(record_type, "r1", 0, "Alice likes tea", None, None)]


@pytest.mark.parametrize("record_type", ["user_profile", "agent_profile"])
def test_add_profile_indexes_its_content(store: OracleDBMemoryStore, db: StoredRows,
                                         record_type: str) -> None:
    store.add(["Speaks Portuguese"], record_type=record_type, record_ids="actor-1")
    assert chunk_texts(db, store, "actor-1") == ["Speaks Portuguese"]


def test_add_string_index_text_replaces_retrieval_text_but_not_content(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(store, "m1", "Full stored note", index_texts=["search handle"])
    assert content_of(store, "memory", "m1") == "Full stored note"
    assert chunk_texts(db, store, "m1") == ["search handle"]


def test_add_string_index_text_may_be_chunked_by_the_store(
        chunking_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(chunking_store, "m1", "stored", index_texts=[LONG_TEXT])
    assert chunk_texts(db, chunking_store, "m1") == split_sentences(LONG_TEXT)


def test_add_content_is_chunked_by_the_store_when_chunking_is_configured(
        chunking_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(chunking_store, "m1", LONG_TEXT)
    rows = chunks(db, chunking_store, "m1")
    assert [r.text for r in rows] == split_sentences(LONG_TEXT)
    assert [r.chunk_no for r in rows] == [0, 1, 2, 3]


def test_add_list_index_text_writes_one_row_per_caller_chunk(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(store, "m1", "stored", index_texts=[["first chunk", "second chunk", "third"]])
    assert chunks(db, store, "m1") == [
        StoredChunk("memory", "m1", 0, "first chunk", None, None),
        StoredChunk("memory", "m1", 1, "second chunk", None, None),
        StoredChunk("memory", "m1", 2, "third", None, None),
    ]
    assert content_of(store, "memory", "m1") == "stored"


def test_add_caller_owned_chunks_are_never_split_again(
        chunking_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(chunking_store, "m1", "stored", index_texts=[[LONG_TEXT, "Second. Chunk."]])
    assert chunk_texts(db, chunking_store, "m1") == [LONG_TEXT, "Second. Chunk."]
    assert embedder.calls == [[LONG_TEXT, "Second. Chunk."]]


def test_add_none_index_text_entry_uses_the_stored_content(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["first content", "second content"], record_type="memory",
              record_ids=["m1", "m2"], index_texts=[None, "override"])
    assert chunk_texts(db, store, "m1") == ["first content"]
    assert chunk_texts(db, store, "m2") == ["override"]


@pytest.mark.parametrize("index_text", ["", []], ids=["empty-string", "empty-chunk-list"])
def test_add_empty_index_text_stores_content_without_retrieval_rows(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows, index_text: Any) -> None:
    add_memory(embedded_store, "m1", "stored but not searchable", index_texts=[index_text])
    assert content_of(embedded_store, "memory", "m1") == "stored but not searchable"
    assert chunks(db, embedded_store) == []
    assert embedder.calls == []


def test_add_empty_content_is_stored_without_retrieval_rows(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "")
    assert content_of(embedded_store, "memory", "m1") == ""
    assert chunks(db, embedded_store) == []
    assert embedder.calls == []


def test_add_index_texts_must_align_with_contents(store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="index_texts"):
        store.add(["a", "b"], record_type="memory", index_texts=["only one"])


def test_add_caller_owned_chunks_must_be_non_empty(store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match=r"index_texts\[0\]\[1\]"):
        store.add(["a"], record_type="memory", index_texts=[["chunk", ""]])


def test_add_caller_owned_chunks_must_be_strings(store: OracleDBMemoryStore) -> None:
    with pytest.raises(TypeError, match=r"index_texts\[0\]\[0\]"):
        store.add(["a"], record_type="memory", index_texts=[[42]])


# --- add(): explicit vectors ------------------------------------------------------------------


def test_add_one_vector_covers_the_whole_retrieval_text(
        chunking_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(chunking_store, "m1", LONG_TEXT, embeddings=[V2])
    rows = chunks(db, chunking_store, "m1")
    assert len(rows) == 1
    assert rows[0].text == LONG_TEXT
    assert rows[0].dims == 3
    assert_vector(rows[0].vector, V2)
    assert embedder.calls == []


def test_add_one_vector_covers_a_whole_string_index_text(
        chunking_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(chunking_store, "m1", "stored", index_texts=[LONG_TEXT], embeddings=[V3])
    rows = chunks(db, chunking_store, "m1")
    assert [r.text for r in rows] == [LONG_TEXT]
    assert_vector(rows[0].vector, V3)
    assert embedder.calls == []


def test_add_one_vector_accepts_a_numpy_array(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "note", embeddings=[np.array(V1, dtype=np.float64)])
    assert_vector(chunks(db, vector_store, "m1")[0].vector, V1)


def test_add_several_vectors_pair_with_caller_chunks(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "stored", index_texts=[["alpha", "beta", "gamma"]],
               embeddings=[[V1, V2, V3]])
    rows = chunks(db, embedded_store, "m1")
    assert [(r.chunk_no, r.text) for r in rows] == [(0, "alpha"), (1, "beta"), (2, "gamma")]
    for row, expected in zip(rows, [V1, V2, V3], strict=True):
        assert_vector(row.vector, expected)
    assert embedder.calls == []


def test_add_chunk_vectors_may_be_a_two_dimensional_array(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "stored", index_texts=[["alpha", "beta"]],
               embeddings=[np.array([V1, V2])])
    rows = chunks(db, vector_store, "m1")
    assert [r.text for r in rows] == ["alpha", "beta"]
    assert_vector(rows[1].vector, V2)


def test_add_one_vector_for_one_caller_chunk(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "stored", index_texts=[["only chunk"]], embeddings=[V1])
    rows = chunks(db, vector_store, "m1")
    assert [r.text for r in rows] == ["only chunk"]
    assert_vector(rows[0].vector, V1)


@pytest.mark.parametrize(
    ("chunk_list", "vectors"),
    [
        (["a", "b", "c"], [V1, V2]),
        (["a", "b"], [V1, V2, V3]),
        (["a", "b"], [V1]),
    ],
    ids=["fewer-vectors", "more-vectors", "one-vector-two-chunks"],
)
def test_add_vector_count_must_match_chunk_count(
        vector_store: OracleDBMemoryStore, db: StoredRows,
        chunk_list: list[str], vectors: list[list[float]]) -> None:
    payload: Any = vectors[0] if len(vectors) == 1 else vectors
    with pytest.raises(ValueError, match=r"embeddings\[0\].*chunk"):
        vector_store.add(["stored"], record_type="memory", index_texts=[chunk_list],
                         embeddings=[payload])
    assert count_rows(db, vector_store, "memory") == 0


@pytest.mark.parametrize("index_texts", [None, ["a string index text"], [None]],
                         ids=["index-texts-omitted", "string-entry", "none-entry"])
def test_add_several_vectors_need_a_chunk_list_index_text(
        vector_store: OracleDBMemoryStore, index_texts: Any) -> None:
    kwargs = {} if index_texts is None else {"index_texts": index_texts}
    with pytest.raises(ValueError, match=r"embeddings\[0\].*index_texts"):
        vector_store.add(["stored content"], record_type="memory", embeddings=[[V1, V2]],
                         **kwargs)


def test_add_vectors_of_one_call_must_share_a_dimension(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    with pytest.raises(ValueError, match="embeddings.*same dimension"):
        vector_store.add(["a", "b"], record_type="memory", embeddings=[V1, [1.0, 0.0]])
    assert count_rows(db, vector_store, "memory") == 0


def test_add_chunk_vectors_of_one_record_must_share_a_dimension(
        vector_store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="embeddings.*same dimension"):
        vector_store.add(["a"], record_type="memory", index_texts=[["x", "y"]],
                         embeddings=[[V1, [1.0, 0.0, 0.0, 0.0]]])


def test_add_vector_dimension_must_match_the_store(vector_store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="embeddings.*vector_dim"):
        vector_store.add(["a"], record_type="memory", embeddings=[[1.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize(
    ("content", "index_texts"),
    [("", None), ("stored", [""]), ("stored", [[]])],
    ids=["empty-content", "empty-index-text", "empty-chunk-list"],
)
def test_add_empty_vector_payload_is_allowed_without_retrieval_text(
        vector_store: OracleDBMemoryStore, db: StoredRows, content: str,
        index_texts: Any) -> None:
    kwargs = {} if index_texts is None else {"index_texts": index_texts}
    add_memory(vector_store, "m1", content, embeddings=[[]], **kwargs)
    assert content_of(vector_store, "memory", "m1") == content
    assert chunks(db, vector_store) == []


@pytest.mark.parametrize("index_texts", [None, ["text"], [["chunk"]]],
                         ids=["content", "string-index-text", "chunk-list"])
def test_add_empty_vector_payload_is_rejected_with_retrieval_text(
        vector_store: OracleDBMemoryStore, index_texts: Any) -> None:
    kwargs = {} if index_texts is None else {"index_texts": index_texts}
    with pytest.raises(ValueError, match=r"embeddings\[0\]"):
        vector_store.add(["stored"], record_type="memory", embeddings=[[]], **kwargs)


def test_add_one_vector_without_retrieval_text_is_stored_without_chunk_text(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "", embeddings=[V1])
    rows = chunks(db, vector_store, "m1")
    assert [(r.chunk_no, r.text, r.dims) for r in rows] == [(0, None, 3)]
    assert_vector(rows[0].vector, V1)


def test_add_explicit_vectors_do_not_call_the_embedder(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    embedded_store.add(["first", "second"], record_type="memory", record_ids=["m1", "m2"],
                       embeddings=[V1, V2])
    assert embedder.calls == []
    assert_vector(chunks(db, embedded_store, "m1")[0].vector, V1)
    assert_vector(chunks(db, embedded_store, "m2")[0].vector, V2)


@pytest.mark.parametrize("explicit_none", [False, True], ids=["omitted", "embeddings-none"])
def test_add_without_embeddings_uses_the_embedder(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows, explicit_none: bool) -> None:
    kwargs = {"embeddings": None} if explicit_none else {}
    embedded_store.add(["tea at noon", "coffee at dawn"], record_type="memory",
                       record_ids=["m1", "m2"], index_texts=[None, ["coffee", "dawn"]], **kwargs)
    assert sorted(t for call in embedder.calls for t in call) == sorted(
        ["tea at noon", "coffee", "dawn"])
    expected = HashEmbedder(3).embed(["tea at noon", "coffee", "dawn"])
    rows = chunks(db, embedded_store)
    assert [r.text for r in rows] == ["tea at noon", "coffee", "dawn"]
    for row, vector in zip(rows, expected, strict=True):
        assert row.dims == 3
        assert_vector(row.vector, vector)


def test_add_without_embedder_stores_rows_without_vectors(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "no embedder here")
    rows = chunks(db, vector_store, "m1")
    assert [(r.text, r.vector) for r in rows] == [("no embedder here", None)]


@pytest.mark.parametrize(
    ("index_texts", "payload", "error", "match"),
    [
        (None, [float("nan"), 0.0, 0.0], ValueError, r"embeddings\[0\].*finite"),
        (None, [float("inf"), 0.0, 0.0], ValueError, r"embeddings\[0\].*finite"),
        ([["a", "b"]], [V1, []], ValueError, r"embeddings\[0\]\[1\].*non-empty"),
        ([["a"]], [[V1]], ValueError, r"embeddings\[0\]\[0\].*one-dimensional"),
        ([["a", "b"]], [np.array([V1]), np.array([V2])], ValueError,
         r"embeddings\[0\]\[0\].*one-dimensional"),
        ([["a"]], [["x", "y", "z"]], ValueError, r"embeddings\[0\]\[0\]"),
        (None, "not a vector", TypeError, r"embeddings\[0\]"),
    ],
    ids=["nan", "inf", "empty-chunk-vector", "nested-list-chunk-vector", "2d-chunk-vector",
         "non-numeric", "string"],
)
def test_add_rejects_malformed_vectors(
        vector_store: OracleDBMemoryStore, db: StoredRows, index_texts: Any,
        payload: Any, error: type[Exception], match: str) -> None:
    kwargs = {} if index_texts is None else {"index_texts": index_texts}
    with pytest.raises(error, match=match):
        vector_store.add(["stored"], record_type="memory", embeddings=[payload], **kwargs)
    assert count_rows(db, vector_store, "memory") == 0


def test_add_embeddings_must_align_with_contents(vector_store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="embeddings"):
        vector_store.add(["a", "b"], record_type="memory", embeddings=[V1])


def test_add_embeddings_rejected_on_a_store_without_vector_storage(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    with pytest.raises(ValueError, match="embeddings.*vector"):
        store.add(["a"], record_type="memory", embeddings=[V1])
    assert count_rows(db, store, "memory") == 0


# --- add(): content entries -------------------------------------------------------------------


def test_add_none_content_falls_back_to_metadata_content(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(store, "m1", None, metadata={"content": "from metadata", "source": "import"})
    assert content_of(store, "memory", "m1") == "from metadata"
    assert chunk_texts(db, store, "m1") == ["from metadata"]


def test_add_empty_string_content_is_kept_despite_metadata_content(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(store, "m1", "", metadata={"content": "fallback"})
    assert content_of(store, "memory", "m1") == ""
    assert chunks(db, store) == []


def test_add_none_content_without_fallback_stores_no_content_and_no_rows(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(store, "m1", None)
    assert content_of(store, "memory", "m1") is None
    assert chunks(db, store) == []


@pytest.mark.parametrize("record_type", ["user_profile", "agent_profile"])
def test_add_profile_with_none_content_is_rejected(
        store: OracleDBMemoryStore, db: StoredRows, record_type: str) -> None:
    with pytest.raises(ValueError, match=r"contents\[0\]"):
        store.add([None], record_type=record_type, record_ids="actor-1")
    assert count_rows(db, store, "actor_profile") == 0


# --- update(): choosing the retrieval text ----------------------------------------------------


def test_update_content_reindexes_the_new_content(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "old words")
    embedder.calls.clear()
    assert embedded_store.update("memory", "m1", content="new words") == 1
    assert content_of(embedded_store, "memory", "m1") == "new words"
    rows = chunks(db, embedded_store, "m1")
    assert [r.text for r in rows] == ["new words"]
    assert_vector(rows[0].vector, HashEmbedder(3).embed(["new words"])[0])
    assert embedder.calls == [["new words"]]


def test_update_content_is_chunked_by_the_store_when_chunking_is_configured(
        chunking_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(chunking_store, "m1", "short")
    chunking_store.update("memory", "m1", content=LONG_TEXT)
    assert chunk_texts(db, chunking_store, "m1") == split_sentences(LONG_TEXT)


def test_update_string_index_text_replaces_rows_and_keeps_content(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(store, "m1", "stored", index_texts=[["one", "two"]])
    assert store.update("memory", "m1", index_text="replacement") == 1
    assert content_of(store, "memory", "m1") == "stored"
    assert chunk_texts(db, store, "m1") == ["replacement"]


def test_update_list_index_text_writes_caller_chunks_unsplit(
        chunking_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(chunking_store, "m1", "stored")
    chunking_store.update("memory", "m1", index_text=[LONG_TEXT, "tail"])
    assert content_of(chunking_store, "memory", "m1") == "stored"
    assert [(r.chunk_no, r.text) for r in chunks(db, chunking_store, "m1")] == [
        (0, LONG_TEXT), (1, "tail")]


def test_update_index_text_none_clears_rows_and_keeps_content(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(store, "m1", "stored")
    assert store.update("memory", "m1", index_text=None) == 1
    assert content_of(store, "memory", "m1") == "stored"
    assert chunks(db, store) == []


def test_update_index_text_none_with_content_updates_content_and_clears_rows(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(store, "m1", "stored")
    store.update("memory", "m1", content="replaced", index_text=None)
    assert content_of(store, "memory", "m1") == "replaced"
    assert chunks(db, store) == []


@pytest.mark.parametrize("index_text", ["", []], ids=["empty-string", "empty-chunk-list"])
@pytest.mark.parametrize("with_content", [False, True], ids=["alone", "with-content"])
def test_update_empty_index_text_clears_retrieval_text(
        store: OracleDBMemoryStore, db: StoredRows, index_text: Any,
        with_content: bool) -> None:
    add_memory(store, "m1", "stored")
    kwargs = {"content": "replaced"} if with_content else {}
    store.update("memory", "m1", index_text=index_text, **kwargs)
    assert content_of(store, "memory", "m1") == ("replaced" if with_content else "stored")
    assert chunks(db, store) == []


@pytest.mark.parametrize("record_type", ["memory", "message"])
def test_update_empty_content_is_kept_and_clears_retrieval_rows(
        embedded_store: OracleDBMemoryStore, db: StoredRows,
        record_type: str) -> None:
    embedded_store.add(["stored"], record_type=record_type, record_ids="r1", thread_ids="t1")
    embedded_store.update(record_type, "r1", content="")
    assert content_of(embedded_store, record_type, "r1") == ""
    assert chunks(db, embedded_store) == []


def test_update_metadata_only_keeps_retrieval_rows(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "stored", index_texts=[["a", "b"]], embeddings=[[V1, V2]])
    before = chunks(db, embedded_store, "m1")
    embedded_store.update("memory", "m1", metadata={"tag": "x"})
    assert chunks(db, embedded_store, "m1") == before
    assert embedder.calls == []


# --- update(): explicit vectors ---------------------------------------------------------------


def test_update_one_vector_covers_the_whole_replacement_content(
        chunking_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(chunking_store, "m1", "short")
    embedder.calls.clear()
    chunking_store.update("memory", "m1", content=LONG_TEXT, embedding=V3)
    rows = chunks(db, chunking_store, "m1")
    assert [(r.text, r.dims) for r in rows] == [(LONG_TEXT, 3)]
    assert_vector(rows[0].vector, V3)
    assert embedder.calls == []


def test_update_several_vectors_pair_with_a_chunk_list_index_text(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "stored")
    embedder.calls.clear()
    embedded_store.update("memory", "m1", content="new content", index_text=["x", "y"],
                          embedding=[V2, V3])
    rows = chunks(db, embedded_store, "m1")
    assert [r.text for r in rows] == ["x", "y"]
    assert_vector(rows[0].vector, V2)
    assert_vector(rows[1].vector, V3)
    assert content_of(embedded_store, "memory", "m1") == "new content"
    assert embedder.calls == []


@pytest.mark.parametrize("index_text", [None, "a string"], ids=["no-index-text", "string"])
def test_update_several_vectors_with_content_need_a_chunk_list_index_text(
        vector_store: OracleDBMemoryStore, db: StoredRows,
        index_text: str | None) -> None:
    add_memory(vector_store, "m1", "stored")
    kwargs = {} if index_text is None else {"index_text": index_text}
    with pytest.raises(ValueError, match="embedding.*index_text"):
        vector_store.update("memory", "m1", content="new", embedding=[V1, V2], **kwargs)
    assert content_of(vector_store, "memory", "m1") == "stored"
    assert chunk_texts(db, vector_store, "m1") == ["stored"]


@pytest.mark.parametrize(
    ("chunk_list", "payload"),
    [(["a", "b", "c"], [V1, V2]), (["a"], [V1, V2]), (["a", "b"], V1)],
    ids=["fewer-vectors", "more-vectors", "one-vector-two-chunks"],
)
def test_update_vector_count_must_match_index_text_chunks(
        vector_store: OracleDBMemoryStore, chunk_list: list[str], payload: Any) -> None:
    add_memory(vector_store, "m1", "stored")
    with pytest.raises(ValueError, match="embedding.*chunk"):
        vector_store.update("memory", "m1", index_text=chunk_list, embedding=payload)


def test_update_embedding_only_replaces_vectors_of_existing_rows(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "stored", index_texts=[["alpha", "beta"]])
    embedder.calls.clear()
    assert embedded_store.update("memory", "m1", embedding=[V3, V1]) == 1
    rows = chunks(db, embedded_store, "m1")
    assert [r.text for r in rows] == ["alpha", "beta"]
    assert_vector(rows[0].vector, V3)
    assert_vector(rows[1].vector, V1)
    assert content_of(embedded_store, "memory", "m1") == "stored"
    assert embedder.calls == []


def test_update_embedding_only_single_vector_for_a_single_row(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "stored")
    vector_store.update("memory", "m1", embedding=V2)
    rows = chunks(db, vector_store, "m1")
    assert [r.text for r in rows] == ["stored"]
    assert_vector(rows[0].vector, V2)


def test_update_embedding_only_single_vector_without_retrieval_rows_is_stored_without_text(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "")
    vector_store.update("memory", "m1", embedding=V3)
    rows = chunks(db, vector_store, "m1")
    assert [(r.chunk_no, r.text, r.dims) for r in rows] == [(0, None, 3)]
    assert_vector(rows[0].vector, V3)
    assert content_of(vector_store, "memory", "m1") == ""


@pytest.mark.parametrize("payload", [V1, [V1, V2, V3]], ids=["one-vector", "three-vectors"])
def test_update_embedding_only_must_match_existing_row_count(
        vector_store: OracleDBMemoryStore, db: StoredRows, payload: Any) -> None:
    add_memory(vector_store, "m1", "stored", index_texts=[["a", "b"]], embeddings=[[V1, V2]])
    before = chunks(db, vector_store, "m1")
    with pytest.raises(ValueError, match="embedding.*2 retrieval rows"):
        vector_store.update("memory", "m1", embedding=payload)
    assert chunks(db, vector_store, "m1") == before


def test_update_embedding_none_with_content_stores_rows_without_vectors(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "stored")
    embedder.calls.clear()
    embedded_store.update("memory", "m1", content="rewritten", embedding=None)
    rows = chunks(db, embedded_store, "m1")
    assert [(r.text, r.vector) for r in rows] == [("rewritten", None)]
    assert content_of(embedded_store, "memory", "m1") == "rewritten"
    assert embedder.calls == []


def test_update_embedding_none_with_index_text_stores_rows_without_vectors(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "stored")
    embedder.calls.clear()
    embedded_store.update("memory", "m1", index_text=["p", "q"], embedding=None)
    rows = chunks(db, embedded_store, "m1")
    assert [(r.text, r.vector) for r in rows] == [("p", None), ("q", None)]
    assert embedder.calls == []


def test_update_embedding_none_alone_clears_vectors_and_keeps_rows(
        embedded_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "stored", index_texts=[["a", "b"]])
    assert all(r.vector is not None for r in chunks(db, embedded_store, "m1"))
    assert embedded_store.update("memory", "m1", embedding=None) == 1
    rows = chunks(db, embedded_store, "m1")
    assert [(r.text, r.vector, r.dims) for r in rows] == [("a", None, None), ("b", None, None)]
    assert content_of(embedded_store, "memory", "m1") == "stored"


def test_update_index_text_none_rejects_explicit_vectors(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "stored")
    with pytest.raises(ValueError, match="index_text=None.*embedding"):
        vector_store.update("memory", "m1", index_text=None, embedding=V1)
    assert chunk_texts(db, vector_store, "m1") == ["stored"]


def test_update_index_text_none_accepts_an_empty_vector_payload(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "stored", embeddings=[V1])
    vector_store.update("memory", "m1", index_text=None, embedding=[])
    assert content_of(vector_store, "memory", "m1") == "stored"
    assert chunks(db, vector_store) == []


def test_update_vector_dimension_must_match_the_store(
        vector_store: OracleDBMemoryStore) -> None:
    add_memory(vector_store, "m1", "stored")
    with pytest.raises(ValueError, match="embedding.*vector_dim"):
        vector_store.update("memory", "m1", content="new", embedding=[1.0, 0.0])


def test_update_embedding_only_dimension_must_match_the_store(
        vector_store: OracleDBMemoryStore) -> None:
    add_memory(vector_store, "m1", "stored")
    with pytest.raises(ValueError, match="embedding.*vector_dim"):
        vector_store.update("memory", "m1", embedding=[1.0, 0.0, 0.0, 0.0])


def test_update_chunk_vectors_must_share_a_dimension(vector_store: OracleDBMemoryStore) -> None:
    add_memory(vector_store, "m1", "stored")
    with pytest.raises(ValueError, match="embedding.*dimension"):
        vector_store.update("memory", "m1", index_text=["a", "b"], embedding=[V1, [1.0, 0.0]])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"content": "new", "embedding": [float("nan"), 0.0, 0.0]}, ValueError,
         "embedding.*finite"),
        ({"content": "new", "embedding": [0.0, float("-inf"), 0.0]}, ValueError,
         "embedding.*finite"),
        ({"embedding": [float("nan"), 0.0, 0.0]}, ValueError, "embedding.*finite"),
        ({"index_text": ["a", "b"], "embedding": [V1, []]}, ValueError,
         r"embedding\[1\].*non-empty"),
        ({"index_text": ["a"], "embedding": [[V1]]}, ValueError,
         r"embedding\[0\].*one-dimensional"),
        ({"embedding": [np.array([V1])]}, ValueError, r"embedding\[0\].*one-dimensional"),
        ({"content": "new", "embedding": "vector"}, TypeError, "embedding"),
    ],
    ids=["nan", "negative-inf", "nan-embedding-only", "empty-chunk-vector",
         "nested-list-chunk-vector", "2d-array-embedding-only", "string"],
)
def test_update_rejects_malformed_vectors(
        vector_store: OracleDBMemoryStore, db: StoredRows, kwargs: dict[str, Any],
        error: type[Exception], match: str) -> None:
    add_memory(vector_store, "m1", "stored", embeddings=[V1])
    before = chunks(db, vector_store, "m1")
    with pytest.raises(error, match=match):
        vector_store.update("memory", "m1", **kwargs)
    assert chunks(db, vector_store, "m1") == before
    assert content_of(vector_store, "memory", "m1") == "stored"


def test_update_embedding_rejected_on_a_store_without_vector_storage(
        store: OracleDBMemoryStore) -> None:
    add_memory(store, "m1", "stored")
    with pytest.raises(ValueError, match="embedding.*vector"):
        store.update("memory", "m1", content="new", embedding=V1)
    assert content_of(store, "memory", "m1") == "stored"


def test_update_empty_vector_payload_is_allowed_without_retrieval_text(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "stored", embeddings=[V1])
    vector_store.update("memory", "m1", content="", embedding=[])
    assert content_of(vector_store, "memory", "m1") == ""
    assert chunks(db, vector_store) == []


def test_update_empty_vector_payload_is_rejected_with_retrieval_text(
        vector_store: OracleDBMemoryStore) -> None:
    add_memory(vector_store, "m1", "stored")
    with pytest.raises(ValueError, match="embedding"):
        vector_store.update("memory", "m1", content="new text", embedding=[])
    assert content_of(vector_store, "memory", "m1") == "stored"


# --- update(): content=None, the deprecated text alias, empty updates ------------------------


@pytest.mark.parametrize("record_type", ["memory", "fact", "guideline", "preference"])
def test_update_content_none_clears_content_and_retrieval_rows(
        embedded_store: OracleDBMemoryStore, db: StoredRows,
        record_type: str) -> None:
    embedded_store.add(["stored"], record_type=record_type, record_ids="r1",
                       index_texts=[["a", "b"]])
    assert embedded_store.update(record_type, "r1", content=None) == 1
    assert content_of(embedded_store, record_type, "r1") is None
    assert chunks(db, embedded_store) == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"index_text": "text"}, "content=None.*index_text"),
        ({"index_text": ["chunk"]}, "content=None.*index_text"),
        ({"embedding": V1}, "content=None.*embedding"),
        ({"embedding": [V1, V2]}, "content=None.*embedding"),
    ],
    ids=["string-index-text", "chunk-list-index-text", "one-vector", "chunk-vectors"],
)
def test_update_content_none_cannot_be_combined_with_retrieval_payloads(
        vector_store: OracleDBMemoryStore, db: StoredRows, kwargs: dict[str, Any],
        match: str) -> None:
    add_memory(vector_store, "m1", "stored")
    with pytest.raises(ValueError, match=match):
        vector_store.update("memory", "m1", content=None, **kwargs)
    assert content_of(vector_store, "memory", "m1") == "stored"
    assert chunk_texts(db, vector_store, "m1") == ["stored"]


def test_update_content_none_accepts_none_retrieval_arguments(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "stored", embeddings=[V1])
    vector_store.update("memory", "m1", content=None, index_text=None, embedding=None)
    assert content_of(vector_store, "memory", "m1") is None
    assert chunks(db, vector_store) == []


def test_update_message_content_none_is_rejected(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["hello"], record_type="message", record_ids="msg-1", thread_ids="t1")
    with pytest.raises(ValueError, match="content=None"):
        store.update("message", "msg-1", content=None)
    assert content_of(store, "message", "msg-1") == "hello"
    assert chunk_texts(db, store, "msg-1") == ["hello"]


@pytest.mark.parametrize("record_type", ["user_profile", "agent_profile"])
def test_update_profile_content_none_is_rejected(
        store: OracleDBMemoryStore, db: StoredRows, record_type: str) -> None:
    store.add(["profile text"], record_type=record_type, record_ids="actor-1")
    with pytest.raises(ValueError, match="content=None"):
        store.update(record_type, "actor-1", content=None)
    assert content_of(store, record_type, "actor-1") == "profile text"
    assert chunk_texts(db, store, "actor-1") == ["profile text"]


def test_update_text_alias_warns_and_behaves_like_content(
        embedded_store: OracleDBMemoryStore, embedder: HashEmbedder,
        db: StoredRows) -> None:
    add_memory(embedded_store, "m1", "old")
    embedder.calls.clear()
    with pytest.warns(DeprecationWarning, match="text"):
        assert embedded_store.update("memory", "m1", text="via alias") == 1
    assert content_of(embedded_store, "memory", "m1") == "via alias"
    assert chunk_texts(db, embedded_store, "m1") == ["via alias"]
    assert embedder.calls == [["via alias"]]


def test_update_text_alias_none_clears_like_content_none(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(store, "m1", "old")
    with pytest.warns(DeprecationWarning):
        store.update("memory", "m1", text=None)
    assert content_of(store, "memory", "m1") is None
    assert chunks(db, store) == []


def test_update_text_alias_none_follows_content_none_rules(
        store: OracleDBMemoryStore) -> None:
    add_memory(store, "m1", "old")
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="index_text"):
        store.update("memory", "m1", text=None, index_text="search")
    assert content_of(store, "memory", "m1") == "old"


def test_update_text_and_content_together_are_rejected(store: OracleDBMemoryStore) -> None:
    add_memory(store, "m1", "old")
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="content.*text"):
        store.update("memory", "m1", content="a", text="b")
    assert content_of(store, "memory", "m1") == "old"


def test_update_without_any_payload_is_rejected(store: OracleDBMemoryStore) -> None:
    add_memory(store, "m1", "old")
    with pytest.raises(ValueError, match="content.*index_text.*embedding"):
        store.update("memory", "m1")


# --- a call that fails writes nothing ---------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"embeddings": [V1, V2, [1.0, 0.0]]}, ValueError, "embeddings"),
        ({"index_texts": [None, ["ok"], ["fine", ""]]}, ValueError, r"index_texts\[2\]"),
        ({"embeddings": [V1, V2, [float("nan"), 0.0, 0.0]]}, ValueError, r"embeddings\[2\]"),
        ({"metadata": [None, None, {"bad": {1, 2}}]}, ValueError, r"metadata\[2\]"),
    ],
    ids=["dimension", "empty-chunk", "non-finite", "metadata"],
)
def test_add_with_an_invalid_third_record_writes_nothing(
        vector_store: OracleDBMemoryStore, db: StoredRows, kwargs: dict[str, Any],
        error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        vector_store.add(["one", "two", "three"], record_type="memory",
                         record_ids=["m1", "m2", "m3"], **kwargs)
    assert count_rows(db, vector_store, "memory") == 0
    assert count_rows(db, vector_store, "record_chunks") == 0


def test_add_with_an_invalid_third_content_writes_nothing(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    with pytest.raises(TypeError, match=r"contents\[2\]"):
        store.add(["one", "two", 3], record_type="memory")
    assert count_rows(db, store, "memory") == 0
    assert count_rows(db, store, "record_chunks") == 0


@pytest.mark.parametrize("batch_size", [1, 256])
def test_add_colliding_with_an_existing_id_writes_nothing(
        embedded_store: OracleDBMemoryStore, db: StoredRows,
        batch_size: int) -> None:
    add_memory(embedded_store, "taken", "first")
    before = chunks(db, embedded_store)
    with pytest.raises(ValueError, match="record_ids.*taken"):
        embedded_store.add(["a", "b", "c"], record_type="memory",
                           record_ids=["new-1", "new-2", "taken"], batch_size=batch_size)
    assert count_rows(db, embedded_store, "memory") == 1
    assert chunks(db, embedded_store) == before
    assert content_of(embedded_store, "memory", "taken") == "first"


def test_add_message_colliding_with_an_existing_id_writes_nothing(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["hello"], record_type="message", record_ids="msg-1", thread_ids="t1")
    with pytest.raises(ValueError, match="record_ids"):
        store.add(["a", "b"], record_type="message", record_ids=["msg-2", "msg-1"],
                  thread_ids="t1", batch_size=1)
    assert count_rows(db, store, "message") == 1
    assert chunk_texts(db, store, "msg-1") == ["hello"]
    assert chunks(db, store, "msg-2") == []


def test_failed_update_leaves_content_metadata_and_rows_unchanged(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    add_memory(vector_store, "m1", "stored", index_texts=[["a", "b"]], embeddings=[[V1, V2]],
               metadata={"v": 1})
    before = chunks(db, vector_store, "m1")
    with pytest.raises(ValueError, match="embedding"):
        vector_store.update("memory", "m1", metadata={"v": 2}, embedding=[V3])
    record = vector_store.get("memory", "m1")
    assert record is not None and record.metadata == {"v": 1} and record.content == "stored"
    assert chunks(db, vector_store, "m1") == before


# --- the write paths: one binary COPY, batched INSERTs, planning shortcuts ----------------------
#
# A write of more rows than ``batch_size`` goes through binary COPY when no row-level security
# applies, otherwise (and for smaller writes) through INSERT batches. Both must store the same.

BULK_TEXTS = ["short note", LONG_TEXT, "", "another note", LONG_TEXT.upper()]


def _memory_rows(db: psycopg.Connection[Any], store: OracleDBMemoryStore
                 ) -> list[tuple[Any, ...]]:
    """The memory table, with the expiry as a lifetime (the transaction times differ)."""
    return db.execute(sql.SQL(
        "SELECT id, record_type, thread_id, user_id, agent_id, content, metadata, event_ts, "
        "expires_at - created_at, status FROM {} ORDER BY id").format(
            _table(store, "memory"))).fetchall()


def _message_rows(db: psycopg.Connection[Any], store: OracleDBMemoryStore
                  ) -> list[tuple[Any, ...]]:
    return db.execute(sql.SQL(
        "SELECT id, thread_id, user_id, role, content, content_parts, seq_no, "
        "expires_at - created_at FROM {} ORDER BY id").format(
            _table(store, "message"))).fetchall()


def _write_workload(store: OracleDBMemoryStore, batch_size: int) -> None:
    count = len(BULK_TEXTS)
    store.add(BULK_TEXTS, "memory", record_ids=[f"m{n}" for n in range(count)],
              user_ids=["u1", "u2", None, "u1", "u2"], agent_ids="a1",
              metadata=[{"n": n} for n in range(count)], ttl_days=[3, None, 5, None, 7],
              timestamps="2026-01-02T03:04:05Z", batch_size=batch_size)
    store.add(["fact one", "fact two", "fact three"], "fact", record_ids=["f0", "f1", "f2"],
              embeddings=[V1, np.asarray(V2, dtype=np.float64), [0, 0, 1]],
              statuses=["valid", "invalid", "valid"], batch_size=batch_size)
    store.add([f"message {n}" for n in range(count)], "message",
              record_ids=[f"msg{n}" for n in range(count)], thread_ids="t1", user_ids="u1",
              roles="user", ttl_days=2, batch_size=batch_size)


@pytest.mark.parametrize("small_batches", [2, 1])
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_bulk_copy_and_batched_inserts_store_the_same_rows(
        make_store: StoreFactory, embedder: HashEmbedder, db: StoredRows,
        pg_db: psycopg.Connection[Any], small_batches: int) -> None:
    bulk = make_store(embedder=embedder, chunker=split_sentences)
    batched = make_store(embedder=embedder, chunker=split_sentences)
    _write_workload(bulk, batch_size=small_batches)  # more rows than a batch: binary COPY
    _write_workload(batched, batch_size=1000)  # one INSERT per table
    assert _memory_rows(pg_db, bulk) == _memory_rows(pg_db, batched)
    assert _message_rows(pg_db, bulk) == _message_rows(pg_db, batched)
    assert chunks(db, bulk) == chunks(db, batched)
    # What both wrote: a many-chunk record, sequence numbers, vectors, expiry.
    assert chunk_texts(db, bulk, "m1") == split_sentences(LONG_TEXT)
    assert chunk_texts(db, bulk, "m2") == []
    assert [row[6] for row in _message_rows(pg_db, bulk)] == [0, 1, 2, 3, 4]
    stored = {c.record_id: c for c in chunks(db, bulk) if c.record_type == "fact"}
    for record_id, vector in zip(["f0", "f1", "f2"], [V1, V2, V3], strict=True):
        assert_vector(stored[record_id].vector, vector)
    lifetimes = {row[0]: row[8] for row in _memory_rows(pg_db, bulk)}
    assert lifetimes["m0"] is not None and lifetimes["m0"].days == 3
    assert lifetimes["m1"] is None


def test_bulk_messages_continue_the_thread_sequence(store: OracleDBMemoryStore) -> None:
    for start in (0, 5):
        store.add([f"m{n}" for n in range(start, start + 5)], "message", thread_ids="t1",
                  record_ids=[f"m{n}" for n in range(start, start + 5)], batch_size=2)
    assert [(m.id, m.seq_no) for m in store.list_thread_messages("t1")] == [
        (f"m{n}", n) for n in range(10)]


def test_bulk_write_under_row_security_uses_inserts(dds: Any) -> None:
    """PostgreSQL refuses COPY FROM where row security applies; the store inserts instead."""
    store_id = dds.new_store()
    with dds.runtime_store(store_id, "alice") as store:
        ids = store.add([f"alice note {n}" for n in range(7)], "memory",
                        embeddings=[V1] * 7, batch_size=2)
        assert len(ids) == 7
        assert sorted(r.id for r in store.list("memory")) == sorted(ids)
        assert {r.user_id for r in store.list("memory")} == {"alice"}
    with dds.runtime_store(store_id, "bob") as store:  # the rows are alice's alone
        assert store.list("memory") == []
    owner = dds.owner_store(store_id)
    try:
        with psycopg.connect(dds.owner_url, autocommit=True) as conn:
            assert count_rows(PostgresStoredRows(conn), owner, "record_chunks") == 7
    finally:
        owner.close()


@pytest.mark.parametrize("batch_size", [1, 256])
def test_add_batches_duplicate_in_the_second_batch_writes_nothing(
        embedded_store: OracleDBMemoryStore, db: StoredRows,
        batch_size: int) -> None:
    add_memory(embedded_store, "taken", "first")
    with pytest.raises(DuplicateRecordError) as caught:
        embedded_store.add_batches([
            PendingRecordBatch(contents=["a", "b"], record_type="memory",
                               record_ids=["new-1", "new-2"]),
            PendingRecordBatch(contents=["c", LONG_TEXT], record_type="fact",
                               record_ids=["new-3", "taken"]),
        ], batch_size=batch_size)
    assert caught.value.record_id == "taken"
    assert count_rows(db, embedded_store, "memory") == 1
    assert count_rows(db, embedded_store, "record_chunks") == 1
    assert content_of(embedded_store, "memory", "taken") == "first"


def test_add_batches_repeating_an_id_across_batches_writes_nothing(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    with pytest.raises(ValueError, match="'x2' across batches"):
        store.add_batches([
            PendingRecordBatch(contents=["a", "b"], record_type="memory", record_ids=["x1", "x2"]),
            PendingRecordBatch(contents=["c"], record_type="user_profile", record_ids=["x2"]),
            PendingRecordBatch(contents=["d"], record_type="guideline", record_ids=["x2"]),
        ])
    assert count_rows(db, store, "memory") == 0
    assert count_rows(db, store, "actor_profile") == 0


def test_generated_record_ids_are_distinct_version_4_uuids(store: OracleDBMemoryStore) -> None:
    ids = store.add(["n"] * 500, "memory")
    assert len(set(ids)) == 500
    for record_id in ids:
        parsed = uuid.UUID(record_id)
        assert str(parsed) == record_id and parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_add_one_value_for_all_records_is_checked_once_and_applies_to_each(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    with pytest.raises(ValueError, match=r"user_ids\[0\] must not be empty"):
        store.add(["a", "b"], "memory", user_ids=" ")
    with pytest.raises(TypeError, match=r"user_ids\[1\] must be a str or None"):
        store.add(["a", "b"], "memory", user_ids=["u1", 7])
    with pytest.raises(ValueError, match=r"agent_ids\[1\] must be at most 128"):
        store.add(["a", "b"], "memory", agent_ids=["a", "x" * 129])
    assert count_rows(db, store, "memory") == 0
    store.add(["a", "b"], "memory", record_ids=["r1", "r2"], user_ids="u1",
              metadata={"k": "v"}, statuses="invalid")
    for record_id in ("r1", "r2"):
        record = store.get("memory", record_id)
        assert isinstance(record, MemoryRecord)
        assert (record.user_id, record.metadata, record.status.value) == ("u1", {"k": "v"},
                                                                          "invalid")


def test_add_clamps_a_shared_ttl_per_record_with_a_warning(make_store: StoreFactory) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(max_ttl_days=10))
    with pytest.warns(UserWarning, match=r"ttl_days\[[01]\]=30 exceeds") as caught:
        store.add(["a", "b"], "memory", ttl_days=30)
    assert len([w for w in caught if "max_ttl_days" in str(w.message)]) == 2


def test_add_mixed_vector_forms_are_stored_alike(
        vector_store: OracleDBMemoryStore, db: StoredRows) -> None:
    vector_store.add(["a", "b", "c"], "memory", record_ids=["a", "b", "c"],
                     embeddings=[V1, np.asarray(V2, dtype=np.float32), (0, 0, 1)])
    stored = {c.record_id: c for c in chunks(db, vector_store)}
    for record_id, vector in zip("abc", [V1, V2, V3], strict=True):
        assert_vector(stored[record_id].vector, vector)
        assert stored[record_id].text == record_id


def test_add_reports_the_first_invalid_record_first(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    # Record 0 has bad content, record 1 a bad lifetime (checked before content): the error
    # is record 0's, as when the records are checked one after the other.
    with pytest.raises(TypeError, match=r"contents\[0\] must be a str or None"):
        store.add([5, "b"], "memory", ttl_days=[1, "x"])
    with pytest.raises(TypeError, match=r"ttl_days\[1\] must be an int"):
        store.add(["a", 5], "memory", ttl_days=[1, "x"])
    with pytest.raises(ValueError, match=r"statuses\[1\]: user_profile records have no"):
        store.add(["a", None], "user_profile", record_ids=["p1", "p2"],
                  statuses=["valid", "invalid"])
    assert count_rows(db, store, "memory") == 0
    assert count_rows(db, store, "actor_profile") == 0
