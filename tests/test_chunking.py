"""Chunking: ``TextChunker`` on its own, and the store's use of it for retrieval rows.

The store splits retrieval text it owns (``contents`` or a ``str`` index text) with its chunker;
caller-owned chunk lists and single explicit vectors are never split. The integration tests read
``<store>_record_chunks`` directly (``tests/stored_rows.py``, on the engine under test) to check
the rows written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from conftest import StoreFactory
from hypothesis import given, settings
from hypothesis import strategies as st
from oracleagentmemory.core import OracleDBMemoryStore
from oracleagentmemory.core.chunking import DEFAULT_CHUNKER, TextChunker
from oracleagentmemory.core.embedders import HashingEmbedder
from stored_rows import StoredRows, open_stored_rows

# --- helpers -------------------------------------------------------------------------------------


def numbered_words(count: int, start: int = 0) -> str:
    """``count`` distinct words ("w0 w1 ..."), so a chunk's position in the text is unambiguous."""
    return " ".join(f"w{i}" for i in range(start, start + count))


def occurrences(text: str, piece: str) -> list[int]:
    found, at = [], text.find(piece)
    while at != -1:
        found.append(at)
        at = text.find(piece, at + 1)
    return found


def skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def at_word_edges(text: str, start: int, end: int) -> bool:
    return (start == 0 or text[start - 1].isspace()) and (end == len(text) or text[end].isspace())


def assert_chunks_cover(text: str, chunks: Sequence[str], whole_words: bool = False) -> None:
    """``chunks`` are pieces of ``text`` at increasing offsets that leave only whitespace out.

    Pieces may repeat in ``text``, so every placement is tried: a chunk may start after the
    previous chunk's start and no later than its end (plus the whitespace that follows). With
    ``whole_words`` every chunk must also start and end at word edges.
    """
    assert chunks, "no chunk for a text with words"

    def placements(chunk: str) -> list[int]:
        return [s for s in occurrences(text, chunk)
                if not whole_words or at_word_edges(text, s, s + len(chunk))]

    first = skip_space(text, 0)
    feasible = [s for s in placements(chunks[0]) if s == first]
    assert feasible, f"the first chunk {chunks[0]!r} does not start the text"
    for previous, chunk in pairwise(chunks):
        feasible = [s for s in placements(chunk)
                    if any(p < s <= skip_space(text, p + len(previous)) for p in feasible)]
        assert feasible, f"chunk {chunk!r} does not continue {previous!r}"
    assert any(skip_space(text, s + len(chunks[-1])) == len(text) for s in feasible), (
        f"the last chunk {chunks[-1]!r} does not end the text")


def shared_text(first: str, second: str) -> str:
    """The longest suffix of ``first`` that starts ``second``."""
    for length in range(min(len(first), len(second)), 0, -1):
        if first.endswith(second[:length]):
            return second[:length]
    return ""


# --- TextChunker: basics and validation ---------------------------------------------------------


def test_default_chunker_is_2000_characters_with_200_overlap() -> None:
    assert TextChunker(size=2000, overlap=200, unit="chars") == DEFAULT_CHUNKER


@pytest.mark.parametrize("unit", ["chars", "tokens"])
def test_text_no_longer_than_size_is_one_chunk(unit: str) -> None:
    text = numbered_words(10)  # 10 tokens, 29 characters
    size = 10 if unit == "tokens" else len(text)

    assert TextChunker(size=size, overlap=2, unit=unit)(text) == [text]


@pytest.mark.parametrize("unit", ["chars", "tokens"])
@pytest.mark.parametrize("text", ["", " ", "\n\t  \n"])
def test_empty_or_whitespace_text_gives_no_chunk(unit: str, text: str) -> None:
    assert TextChunker(size=5, overlap=1, unit=unit)(text) == []


@pytest.mark.parametrize("size", [0, -1, 1.5, True, "100", None])
def test_chunker_rejects_a_bad_size(size: Any) -> None:
    with pytest.raises(ValueError, match="size"):
        TextChunker(size=size, overlap=0)


@pytest.mark.parametrize("overlap", [-1, 10, 11, 2.5, True, "2", None])
def test_chunker_rejects_an_overlap_outside_zero_to_size(overlap: Any) -> None:
    with pytest.raises(ValueError, match="overlap"):
        TextChunker(size=10, overlap=overlap)


@pytest.mark.parametrize("unit", ["words", "characters", "CHARS", "", None])
def test_chunker_rejects_an_unknown_unit(unit: Any) -> None:
    with pytest.raises(ValueError, match="unit"):
        TextChunker(size=10, overlap=1, unit=unit)


# --- TextChunker: characters --------------------------------------------------------------------


def test_chars_chunks_are_no_longer_than_size_and_cut_between_words() -> None:
    text = numbered_words(120)
    chunks = TextChunker(size=50, overlap=10)(text)

    assert len(chunks) > 5
    assert all(0 < len(chunk) <= 50 for chunk in chunks)
    assert_chunks_cover(text, chunks, whole_words=True)


def test_chars_chunks_use_nearly_the_whole_size() -> None:
    """Cuts fall at the last word break that fits, not earlier (words here are 2-4 chars)."""
    chunks = TextChunker(size=50, overlap=10)(numbered_words(120))

    assert all(len(chunk) >= 50 - 5 for chunk in chunks[:-1])


def test_chars_consecutive_chunks_overlap_by_about_overlap_characters() -> None:
    """The overlap starts at a word edge: at most ``overlap`` characters, short by under a word."""
    chunks = TextChunker(size=50, overlap=10)(numbered_words(120))

    for first, second in pairwise(chunks):
        shared = shared_text(first, second)
        assert 5 <= len(shared) <= 10, (first, second)  # words here are at most 4 chars
        assert at_word_edges(first, len(first) - len(shared), len(first))


def test_chars_without_overlap_the_chunks_rejoin_into_the_text() -> None:
    text = numbered_words(200)
    chunks = TextChunker(size=37, overlap=0)(text)

    assert " ".join(chunks) == text


@pytest.mark.parametrize("separator", ["\n", "\t", "\n\n", " \r\n", "\u00a0"])
def test_chars_every_kind_of_whitespace_is_a_word_break(separator: str) -> None:
    text = separator.join(f"word{i}" for i in range(60))
    chunks = TextChunker(size=40, overlap=8)(text)

    assert all(len(chunk) <= 40 for chunk in chunks)
    assert_chunks_cover(text, chunks, whole_words=True)


def test_chars_a_single_word_longer_than_size_is_still_split() -> None:
    text = "x" * 1000
    chunks = TextChunker(size=100, overlap=10)(text)

    assert all(len(chunk) == 100 for chunk in chunks[:-1])
    assert len(chunks) == 11  # starts 0, 90, ..., 900
    assert all(first[-10:] == second[:10] for first, second in pairwise(chunks))
    assert_chunks_cover(text, chunks)


def test_chars_a_long_word_among_short_ones_splits_only_itself() -> None:
    long_word = "y" * 250
    text = f"{numbered_words(8)} {long_word} {numbered_words(8, start=8)}"
    chunks = TextChunker(size=60, overlap=10)(text)

    assert all(len(chunk) <= 60 for chunk in chunks)
    assert_chunks_cover(text, chunks)
    words_in_chunks = {word for chunk in chunks for word in chunk.split()}
    assert set(numbered_words(16).split()) <= words_in_chunks


def test_chars_a_word_just_shorter_than_size_is_never_split() -> None:
    text = f"ab {'z' * 19} cd {'q' * 19} ef"
    chunks = TextChunker(size=20, overlap=5)(text)

    assert all(len(chunk) <= 20 for chunk in chunks)
    assert_chunks_cover(text, chunks, whole_words=True)


# --- TextChunker: tokens ------------------------------------------------------------------------


def test_tokens_chunks_count_whitespace_tokens_with_exact_overlap() -> None:
    chunks = TextChunker(size=4, overlap=1, unit="tokens")("a b c d e f g h i j")

    assert chunks == ["a b c d", "d e f g", "g h i j"]


def test_tokens_overlap_is_exact_and_the_last_chunk_ends_the_text() -> None:
    words = numbered_words(103).split()
    chunks = [chunk.split() for chunk in TextChunker(size=10, overlap=3, unit="tokens")(
        " ".join(words))]

    assert all(len(chunk) == 10 for chunk in chunks[:-1])
    assert all(first[-3:] == second[:3] for first, second in pairwise(chunks))
    assert chunks[0][0] == words[0]
    assert chunks[-1][-1] == words[-1]
    assert [w for chunk in chunks for w in chunk[3:]] == words[3:]  # each word once past overlaps


def test_tokens_any_whitespace_separates_tokens() -> None:
    chunks = TextChunker(size=2, overlap=0, unit="tokens")("alpha\tbeta\n\ngamma   delta")

    assert chunks == ["alpha beta", "gamma delta"]


def test_tokens_size_counts_tokens_not_characters() -> None:
    text = " ".join(["supercalifragilistic"] * 5)

    assert TextChunker(size=5, overlap=0, unit="tokens")(text) == [text]


# --- TextChunker: properties --------------------------------------------------------------------

_SEPARATORS = st.sampled_from([" ", " ", " ", "  ", "\n", "\t", "\n\n", " \n "])


@st.composite
def worded_texts(draw: st.DrawFn) -> tuple[str, int, int]:
    """A text of words shorter than ``size``, with a valid ``overlap``."""
    size = draw(st.integers(min_value=2, max_value=60))
    overlap = draw(st.integers(min_value=0, max_value=size - 1))
    words = draw(st.lists(
        st.text("abcdefgh0123éß", min_size=1, max_size=size - 1), min_size=1, max_size=60))
    separators = draw(st.lists(_SEPARATORS, min_size=len(words) + 1, max_size=len(words) + 1))
    text = separators[0] * draw(st.booleans())
    for word, separator in zip(words, separators[1:], strict=True):
        text += word + separator
    if draw(st.booleans()):
        text = text.rstrip()
    return text, size, overlap


@settings(max_examples=300, deadline=None)
@given(worded_texts())
def test_property_chars_chunks_keep_every_word_whole_and_cover_the_text(
        case: tuple[str, int, int]) -> None:
    text, size, overlap = case
    chunks = TextChunker(size=size, overlap=overlap)(text)

    if len(text) <= size:
        assert chunks == [text]  # a text that fits is kept exactly as given
        return
    assert all(0 < len(chunk) <= size and chunk == chunk.strip() for chunk in chunks)
    in_chunks = {word for chunk in chunks for word in chunk.split()}
    assert set(text.split()) == in_chunks
    assert_chunks_cover(text, chunks, whole_words=True)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("ab \n\u3000\u00e9"), min_size=1, max_size=400),
       st.integers(min_value=1, max_value=40), st.data())
def test_property_chars_any_text_is_chunked_in_bounded_steps(
        text: str, size: int, data: st.DataObject) -> None:
    """Arbitrary text, long words included: bounded pieces that cover all of it."""
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    chunks = TextChunker(size=size, overlap=overlap)(text)

    assert len(chunks) <= len(text)
    assert all(0 < len(chunk) <= size for chunk in chunks)
    if not text.strip():
        assert chunks == []
    elif len(text) <= size:
        assert chunks == [text]
    else:
        assert all(chunk == chunk.strip() for chunk in chunks)
        assert_chunks_cover(text, chunks)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text("xyz", min_size=1, max_size=5), min_size=1, max_size=80),
       st.integers(min_value=1, max_value=12), st.data())
def test_property_tokens_chunks_rebuild_the_token_stream(
        words: list[str], size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    chunks = [c.split() for c in TextChunker(size=size, overlap=overlap, unit="tokens")(
        " ".join(words))]

    assert all(0 < len(chunk) <= size for chunk in chunks)
    rebuilt = chunks[0] + [w for chunk in chunks[1:] for w in chunk[overlap:]]
    assert rebuilt == words
    assert all(first[len(first) - overlap:] == second[:overlap]
               for first, second in pairwise(chunks))


# --- the store's chunking -------------------------------------------------------------------------

LONG_TEXT = (
    "Alice keeps a travel notebook. She prefers window seats on long flights and aisle seats "
    "on short ones. Every spring she flies to Lisbon to visit her sister. Her loyalty number "
    "lives in the travel profile. She dislikes red-eye departures and always packs light."
)
SMALL = TextChunker(size=50, overlap=10)


@pytest.fixture
def db(database_url: object) -> Iterator[StoredRows]:
    """Reads what the store wrote, on the engine under test (``tests/stored_rows.py``)."""
    with open_stored_rows(database_url) as rows:
        yield rows


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(dimension=32)


def chunk_rows(db: StoredRows, store: OracleDBMemoryStore,
               record_id: str) -> list[tuple[int, str | None, list[float] | None]]:
    """``(chunk_no, chunk_text, embedding)`` of one record's retrieval rows, in chunk order."""
    return [(c.chunk_no, c.text, c.vector) for c in db.chunks(store, record_id)]


def texts_of(db: StoredRows, store: OracleDBMemoryStore,
             record_id: str) -> list[str | None]:
    return [text for _, text, _ in chunk_rows(db, store, record_id)]


def assert_each_row_embeds_its_own_text(db: StoredRows,
                                        store: OracleDBMemoryStore, record_id: str,
                                        embedder: HashingEmbedder) -> None:
    rows = chunk_rows(db, store, record_id)
    assert [n for n, _, _ in rows] == sorted({n for n, _, _ in rows})  # distinct chunk numbers
    for _, text, vector in rows:
        assert text is not None and vector is not None
        np.testing.assert_allclose(vector, embedder.embed([text])[0], rtol=1e-5, atol=1e-6)


def test_store_chunker_splits_long_content_into_rows(
        make_store: StoreFactory, db: StoredRows,
        embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder, chunker=SMALL)

    [record_id] = store.add([LONG_TEXT], record_type="memory")

    texts = texts_of(db, store, record_id)
    assert texts == SMALL(LONG_TEXT)
    assert len(texts) >= 5
    assert all(text is not None and len(text) <= 50 for text in texts)
    assert_each_row_embeds_its_own_text(db, store, record_id, embedder)
    assert store.get("memory", record_id).content == LONG_TEXT  # type: ignore[union-attr]


def test_store_chunker_splits_a_str_index_text(
        make_store: StoreFactory, db: StoredRows,
        embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder, chunker=SMALL)

    [record_id] = store.add(["travel notes"], record_type="memory", index_texts=[LONG_TEXT])

    assert texts_of(db, store, record_id) == SMALL(LONG_TEXT)
    assert_each_row_embeds_its_own_text(db, store, record_id, embedder)


def test_store_writes_caller_owned_chunks_as_is(
        make_store: StoreFactory, db: StoredRows,
        embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder, chunker=SMALL)
    owned = [LONG_TEXT[:120], LONG_TEXT[120:]]  # both longer than the chunk size

    [record_id] = store.add([LONG_TEXT], record_type="memory", index_texts=[owned])

    assert texts_of(db, store, record_id) == owned
    assert_each_row_embeds_its_own_text(db, store, record_id, embedder)


def test_store_keeps_one_row_for_a_single_explicit_vector(
        make_store: StoreFactory, db: StoredRows,
        embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder, chunker=SMALL)
    vector = embedder.embed(["my own vector"])[0]

    [record_id] = store.add([LONG_TEXT], record_type="memory", embeddings=[vector])

    [(_, text, stored)] = chunk_rows(db, store, record_id)
    assert text == LONG_TEXT
    np.testing.assert_allclose(stored, vector, rtol=1e-6)  # type: ignore[arg-type]


def test_store_without_chunker_never_splits(
        make_store: StoreFactory, db: StoredRows,
        embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder, chunker=None)
    long_text = " ".join([LONG_TEXT] * 20)  # over 5,000 characters

    [record_id] = store.add([long_text], record_type="memory")

    assert texts_of(db, store, record_id) == [long_text]
    assert_each_row_embeds_its_own_text(db, store, record_id, embedder)


def test_store_default_chunker_keeps_a_1000_character_text_whole(
        make_store: StoreFactory, db: StoredRows,
        embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder)
    text = (LONG_TEXT + " ") * 4
    text = text[:1000]

    [record_id] = store.add([text], record_type="memory")

    assert texts_of(db, store, record_id) == [text]
    assert_each_row_embeds_its_own_text(db, store, record_id, embedder)


def test_store_default_chunker_splits_a_5000_character_text(
        make_store: StoreFactory, db: StoredRows,
        embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder)
    text = numbered_words(1100)[:5000].rstrip()

    [record_id] = store.add([text], record_type="memory")

    texts = texts_of(db, store, record_id)
    assert texts == DEFAULT_CHUNKER(text)
    assert len(texts) == 3
    assert all(text_ is not None and 1800 <= len(text_) <= 2000 for text_ in texts[:-1])
    assert_chunks_cover(text, [t for t in texts if t is not None], whole_words=True)
    assert_each_row_embeds_its_own_text(db, store, record_id, embedder)


def test_store_update_rechunks_new_content(
        make_store: StoreFactory, db: StoredRows,
        embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder, chunker=SMALL)
    [record_id] = store.add(["short note"], record_type="memory")

    assert store.update("memory", record_id, content=LONG_TEXT) == 1

    assert texts_of(db, store, record_id) == SMALL(LONG_TEXT)
    assert_each_row_embeds_its_own_text(db, store, record_id, embedder)


def test_store_update_writes_a_caller_owned_index_text_list_as_is(
        make_store: StoreFactory, db: StoredRows,
        embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder, chunker=SMALL)
    [record_id] = store.add([LONG_TEXT], record_type="memory")
    owned = [LONG_TEXT[:150], LONG_TEXT[150:]]

    assert store.update("memory", record_id, index_text=owned) == 1

    assert texts_of(db, store, record_id) == owned
    assert_each_row_embeds_its_own_text(db, store, record_id, embedder)


def test_store_chunks_are_searchable_and_rank_their_record(make_store: StoreFactory,
                                                          embedder: HashingEmbedder) -> None:
    store = make_store(embedder=embedder, chunker=SMALL)
    travel_id, other_id = store.add(
        [LONG_TEXT, "Bob repairs vintage bicycles in his garage on weekends"],
        record_type="memory")

    results = store.search("Lisbon sister spring", k=2)

    assert [record.id for record, _ in results] == [travel_id, other_id]


@pytest.mark.parametrize("chunker", [0, "2000", 2000.0])
def test_store_rejects_a_chunker_that_is_not_callable(make_store: StoreFactory,
                                                      chunker: Any) -> None:
    with pytest.raises(TypeError, match="chunker"):
        make_store(chunker=chunker)
