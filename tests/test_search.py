"""``search`` / ``search_async`` on the embedded database.

Pins the spec's search examples (store pages 001 and 000), the store column of the scope table
(spec 004), record-type and lifecycle filtering, expiry, argument rules, the startup check that a
schema can serve the requested strategy, hybrid reciprocal-rank fusion and chunked queries.
Exact distances use hand-made 3-dimensional vectors; text searches use a local embedder.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from conftest import HashEmbedder, StoreFactory, new_store_id
from oracleagentmemory.apis import IEmbedder, RecordStatus, ScopedRecord, TimeToLiveAnchor
from oracleagentmemory.core import (
    MemoryStoreSchemaError,
    OracleDBMemoryStore,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oracleagentmemory.core.chunking import TextChunker
from oracleagentmemory.core.embedders import HashingEmbedder

EMBED_DIM = 64
RRF_K = 60
STRATEGIES = ["vector", "keyword", "hybrid"]
DEFAULT_TYPES = {"message", "memory", "guideline", "fact", "preference", "user_profile",
                 "agent_profile"}


def text_search_store(make_store: StoreFactory, strategy: str, **kwargs: Any
                      ) -> OracleDBMemoryStore:
    """A store searching text by ``strategy``; keyword stores get no embedder."""
    if strategy == "keyword":
        return make_store(search_strategy=SearchStrategy.KEYWORD, **kwargs)
    return make_store(embedder=HashingEmbedder(EMBED_DIM), search_strategy=strategy, **kwargs)


@pytest.fixture(params=STRATEGIES)
def text_store(request: pytest.FixtureRequest, make_store: StoreFactory) -> OracleDBMemoryStore:
    """A fresh store for each search strategy (vector and hybrid with a local embedder)."""
    return text_search_store(make_store, request.param)


def ids(results: Sequence[tuple[Any, float]]) -> list[str]:
    return [record.id for record, _ in results]


def days_ago(days: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()


# --- the spec's examples ------------------------------------------------------------------

@dataclass
class Example:
    """One doctest step of a spec page: an optional ``add`` then one ``search``."""

    search_args: tuple[Any, ...]
    search_kwargs: dict[str, Any]
    expected_id: str
    add: dict[str, Any] | None = None
    first_only: bool = False  # the example reads ``results[0][0].id`` (else ``any(...)``)


def metadata_examples(suffix: str, tags_k: int) -> list[Example]:
    """The metadata-filter examples shared by the pages (ids end in ``suffix``)."""
    combined = {"source": "slack", "review": {"status": "open"}, "tags": ["prod", "urgent"]}
    return [
        Example(("pizza",), {"k": 3, "metadata_filter": {"source": "slack"}},
                f"mem-search-meta-source-{suffix}",
                add={"contents": ["pizza release"],
                     "record_ids": f"mem-search-meta-source-{suffix}",
                     "metadata": {"source": "slack"}}),
        Example(("pizza",), {"k": 3, "metadata_filter": {"review": {"status": "open"}}},
                f"mem-search-meta-review-{suffix}",
                add={"contents": ["pizza review"], "record_ids": f"mem-search-meta-review-{suffix}",
                     "metadata": {"review": {"status": "open"}}}),
        Example(("pizza",), {"k": tags_k, "metadata_filter": {"tags": ["prod", "urgent"]}},
                f"mem-search-meta-tags-{suffix}",
                add={"contents": ["pizza tags"], "record_ids": f"mem-search-meta-tags-{suffix}",
                     "metadata": {"tags": ["prod", "urgent"]}}),
        Example(("pizza",), {"k": tags_k, "metadata_filter": {"tags": {"$array_contains": "prod"}}},
                f"mem-search-meta-tags-{suffix}"),
        Example(("pizza",), {"k": 5, "metadata_filter": combined},
                f"mem-search-meta-combined-{suffix}",
                add={"contents": ["pizza rollout"],
                     "record_ids": f"mem-search-meta-combined-{suffix}", "metadata": combined}),
    ]


ABSTRACT_001 = [
    Example(("Searchable", 1), {"record_types": {"memory"}}, "mem-search-abstract-docs",
            add={"contents": ["Searchable abstract memory"],
                 "record_ids": "mem-search-abstract-docs"}, first_only=True),
    *metadata_examples("docs2", tags_k=5),
]
ABSTRACT_000 = [ABSTRACT_001[0], *metadata_examples("docs", tags_k=3)]
DB_STORE_PAGE = [  # OracleDBMemoryStore.search: identical in 001 and 000
    Example(("pizza", 1), {"thread_id": "c-search-docs", "exact_thread_match": True,
                           "record_types": {"memory"}}, "mem-search-docs",
            add={"contents": ["pizza preference"], "record_ids": "mem-search-docs",
                 "thread_ids": "c-search-docs"}, first_only=True),
    *metadata_examples("docs", tags_k=3),
]
PAGES = {"001-abstract": ABSTRACT_001, "000-abstract": ABSTRACT_000, "db-store": DB_STORE_PAGE}


def matches_filter(metadata: Any, wanted: dict[str, Any]) -> bool:
    """The spec's filter semantics for the operators the examples use."""
    if not isinstance(metadata, dict):
        return False
    for key, value in wanted.items():
        if key not in metadata:
            return False
        if isinstance(value, dict) and "$array_contains" in value:
            if value["$array_contains"] not in metadata[key]:
                return False
        elif isinstance(value, dict):
            if not matches_filter(metadata[key], value):
                return False
        elif metadata[key] != value:
            return False
    return True


@pytest.mark.parametrize("page", list(PAGES))
def test_spec_search_examples(text_store: OracleDBMemoryStore, page: str) -> None:
    """Replays a page's examples in order, like its doctest (records accumulate)."""
    for example in PAGES[page]:
        if example.add is not None:
            added = dict(example.add)
            assert text_store.add(added.pop("contents"), record_type="memory", **added) == [
                example.add["record_ids"]]
        results = text_store.search(*example.search_args, **example.search_kwargs)
        if example.first_only:
            assert results[0][0].id == example.expected_id
        else:
            assert any(record.id == example.expected_id for record, _ in results) is True
        wanted = example.search_kwargs.get("metadata_filter")
        if wanted is not None:  # the filter really filters: nothing else slips in
            assert all(matches_filter(record.metadata, wanted) for record, _ in results)
        thread = example.search_kwargs.get("thread_id")
        if thread is not None:
            assert all(isinstance(record, ScopedRecord) and record.thread_id == thread
                       for record, _ in results)


def test_combined_filter_excludes_records_missing_one_key(text_store: OracleDBMemoryStore) -> None:
    for example in DB_STORE_PAGE:
        if example.add is not None:
            added = dict(example.add)
            text_store.add(added.pop("contents"), record_type="memory", **added)
    results = text_store.search("pizza", k=5, metadata_filter=DB_STORE_PAGE[-1].search_kwargs[
        "metadata_filter"])
    assert ids(results) == ["mem-search-meta-combined-docs"]


# --- scope table (store.search column) ------------------------------------------------------

SCOPED = {  # record id -> (thread_id, user_id, agent_id)
    "r-one": ("t1", "u1", "a1"),
    "r-two": ("t2", "u2", "a2"),
    "r-unscoped": (None, None, None),
}
DIMENSIONS = {"thread_id": (0, "t1"), "user_id": (1, "u1"), "agent_id": (2, "a1")}
FLAG = {"thread_id": "exact_thread_match", "user_id": "exact_user_match",
        "agent_id": "exact_agent_match"}


def add_scoped(store: OracleDBMemoryStore) -> None:
    """One memory (``r-*``) and one message (``m-*``) per scope of ``SCOPED``."""
    for record_id, (thread, user, agent) in SCOPED.items():
        store.add([f"scoped note {record_id}"], "memory", record_ids=record_id,
                  thread_ids=thread, user_ids=user, agent_ids=agent)
        message_id = "m" + record_id[1:]
        store.add([f"scoped note {message_id}"], "message", record_ids=message_id,
                  thread_ids=thread, user_ids=user, agent_ids=agent, roles="user")


ALL_SCOPED = set(SCOPED) | {"m" + r[1:] for r in SCOPED}


@pytest.mark.parametrize("dimension", list(DIMENSIONS))
def test_omitted_scope_does_not_filter(text_store: OracleDBMemoryStore, dimension: str) -> None:
    add_scoped(text_store)
    assert set(ids(text_store.search("scoped note", 10))) == ALL_SCOPED


@pytest.mark.parametrize("value_kind", ["id", "none"])
@pytest.mark.parametrize("dimension", list(DIMENSIONS))
def test_explicit_value_without_exact_match_does_not_filter(
        text_store: OracleDBMemoryStore, dimension: str, value_kind: str) -> None:
    add_scoped(text_store)
    value = DIMENSIONS[dimension][1] if value_kind == "id" else None
    scope: dict[str, Any] = {dimension: value, FLAG[dimension]: False}
    results = text_store.search("scoped note", 10, **scope)
    assert set(ids(results)) == ALL_SCOPED


@pytest.mark.parametrize("dimension", list(DIMENSIONS))
def test_explicit_id_with_exact_match_matches_that_id(
        text_store: OracleDBMemoryStore, dimension: str) -> None:
    add_scoped(text_store)
    scope: dict[str, Any] = {dimension: DIMENSIONS[dimension][1], FLAG[dimension]: True}
    results = text_store.search("scoped note", 10, **scope)
    assert set(ids(results)) == {"r-one", "m-one"}


@pytest.mark.parametrize("dimension", list(DIMENSIONS))
def test_explicit_none_with_exact_match_matches_unscoped_records(
        text_store: OracleDBMemoryStore, dimension: str) -> None:
    add_scoped(text_store)
    scope: dict[str, Any] = {dimension: None, FLAG[dimension]: True}
    results = text_store.search("scoped note", 10, **scope)
    assert set(ids(results)) == {"r-unscoped", "m-unscoped"}


def test_exact_matches_combine_over_dimensions(text_store: OracleDBMemoryStore) -> None:
    add_scoped(text_store)
    text_store.add(["scoped note mixed"], "memory", record_ids="r-mixed", thread_ids="t1",
                   user_ids="u1", agent_ids=None)
    both = text_store.search("scoped note", 10, user_id="u1", exact_user_match=True,
                             thread_id="t1", exact_thread_match=True)
    assert set(ids(both)) == {"r-one", "m-one", "r-mixed"}
    no_agent = text_store.search("scoped note", 10, user_id="u1", exact_user_match=True,
                                 agent_id=None, exact_agent_match=True)
    assert ids(no_agent) == ["r-mixed"]
    messages = text_store.search("scoped note", 10, thread_id="t1", exact_thread_match=True,
                                 record_types={"message"})
    assert ids(messages) == ["m-one"]


def test_unknown_scope_id_with_exact_match_finds_nothing(text_store: OracleDBMemoryStore) -> None:
    add_scoped(text_store)
    assert text_store.search("scoped note", 10, user_id="nobody", exact_user_match=True) == []


# --- actor profiles scope by their actor id ----------------------------------------------

@pytest.fixture
def profiles(text_store: OracleDBMemoryStore) -> OracleDBMemoryStore:
    text_store.add_user("alice", "profile notes about alice")
    text_store.add_agent("helper-bot", "profile notes about the helper bot")
    text_store.add(["profile notes in a memory"], "memory", record_ids="alice-memory",
                   user_ids="alice", agent_ids="helper-bot")
    return text_store


def found(results: Sequence[tuple[Any, float]]) -> set[tuple[str, str]]:
    return {(record.record_type, record.id) for record, _ in results}


def test_user_profile_scopes_by_user_id(profiles: OracleDBMemoryStore) -> None:
    results = profiles.search("profile notes", 10, user_id="alice", exact_user_match=True)
    assert found(results) == {("user_profile", "alice"), ("memory", "alice-memory")}


def test_user_profile_has_no_agent_scope(profiles: OracleDBMemoryStore) -> None:
    scoped = profiles.search("profile notes", 10, user_id="alice", exact_user_match=True,
                             agent_id="x", exact_agent_match=True)
    assert scoped == []
    unscoped_agent = profiles.search("profile notes", 10, agent_id=None, exact_agent_match=True)
    assert found(unscoped_agent) == {("user_profile", "alice")}


def test_agent_profile_scopes_by_agent_id(profiles: OracleDBMemoryStore) -> None:
    results = profiles.search("profile notes", 10, agent_id="helper-bot", exact_agent_match=True)
    assert found(results) == {("agent_profile", "helper-bot"), ("memory", "alice-memory")}
    by_user = profiles.search("profile notes", 10, user_id="helper-bot", exact_user_match=True)
    assert by_user == []


def test_profiles_have_no_lifecycle_status_to_hide(profiles: OracleDBMemoryStore) -> None:
    results = profiles.search("profile notes", 10, include_invalid_results=False,
                              record_types={"user_profile", "agent_profile"})
    assert found(results) == {("user_profile", "alice"), ("agent_profile", "helper-bot")}


def test_profile_metadata_filter(text_store: OracleDBMemoryStore) -> None:
    text_store.add_user("bob", "profile notes about bob", metadata={"tier": "gold"})
    text_store.add_user("carol", "profile notes about carol", metadata={"tier": "free"})
    results = text_store.search("profile notes", 10, metadata_filter={"tier": "gold"})
    assert found(results) == {("user_profile", "bob")}


def test_profiles_have_no_thread_scope(profiles: OracleDBMemoryStore) -> None:
    results = profiles.search("profile notes", 10, thread_id=None, exact_thread_match=True)
    assert found(results) == {("user_profile", "alice"), ("agent_profile", "helper-bot"),
                              ("memory", "alice-memory")}
    assert profiles.search("profile notes", 10, thread_id="t", exact_thread_match=True) == []


# --- record types ---------------------------------------------------------------------------

def add_every_type(store: OracleDBMemoryStore) -> None:
    store.add([None], "thread", record_ids="th-1")
    store.add(["every type message"], "message", record_ids="msg", thread_ids="th-1",
              roles="user")
    store.add([{"text": "every type summary"}], "thread_summary", record_ids="sum",
              thread_ids="th-1")
    for record_type in ("memory", "guideline", "fact", "preference"):
        store.add([f"every type {record_type}"], record_type, record_ids=f"{record_type}-1")
    store.add_user("every-user", "every type user")
    store.add_agent("every-agent", "every type agent")


def test_default_record_types_cover_messages_memories_and_profiles(
        text_store: OracleDBMemoryStore) -> None:
    add_every_type(text_store)
    results = text_store.search("every type", 50)
    assert {record.record_type for record, _ in results} == DEFAULT_TYPES
    assert len(results) == len(DEFAULT_TYPES)  # never the thread or its summary


@pytest.mark.parametrize("wanted", [{"fact"}, {"message", "user_profile"},
                                    {"memory", "guideline", "preference", "agent_profile"}])
def test_record_types_filter(text_store: OracleDBMemoryStore, wanted: set[str]) -> None:
    add_every_type(text_store)
    results = text_store.search("every type", 50, record_types=wanted)
    assert {record.record_type for record, _ in results} == wanted
    assert len(results) == len(wanted)


@pytest.mark.parametrize("record_types", [{"bogus"}, {"thread"}, {"thread_summary"},
                                          {"memory", "thread"}])
def test_unsearchable_record_types_are_rejected(text_store: OracleDBMemoryStore,
                                                record_types: set[str]) -> None:
    with pytest.raises(ValueError, match="record_types"):
        text_store.search("anything", 3, record_types=record_types)


def test_empty_record_types_are_rejected(text_store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="record_types"):
        text_store.search("anything", 3, record_types=set())


def test_record_types_as_plain_string_is_rejected(text_store: OracleDBMemoryStore) -> None:
    with pytest.raises(TypeError, match="record_types"):
        text_store.search("anything", 3, record_types="memory")


# --- ranking and distances -----------------------------------------------------------------

def test_results_are_ordered_by_ascending_distance(text_store: OracleDBMemoryStore) -> None:
    text_store.add(["apple banana cherry", "apple banana", "apple", "banana split dessert",
                    "apple pie with apple sauce and apple juice"], "memory")
    results = text_store.search("apple banana cherry", 5)
    distances = [d for _, d in results]
    assert len(results) >= 4
    assert distances == sorted(distances)
    assert all(isinstance(d, float) and math.isfinite(d) and d >= 0 for d in distances)


def test_k_caps_the_result_count(text_store: OracleDBMemoryStore) -> None:
    text_store.add([f"common word {n}" for n in range(8)], "memory")
    assert len(text_store.search("common word", 3)) == 3
    assert len(text_store.search("common word", 20)) == 8


def test_vector_distance_is_cosine_distance(vector_store: OracleDBMemoryStore) -> None:
    vectors = {"same": [1.0, 0.0, 0.0], "diagonal": [1.0, 1.0, 0.0],
               "orthogonal": [0.0, 1.0, 0.0], "opposite": [-1.0, 0.0, 0.0]}
    vector_store.add([f"vec {name}" for name in vectors], "memory", record_ids=list(vectors),
                     embeddings=list(vectors.values()))
    for query in ([1.0, 0.0, 0.0], [5.0, 0.0, 0.0]):  # cosine ignores the query's length
        results = vector_store.search(None, 4, query_vector=query)
        assert ids(results) == ["same", "diagonal", "orthogonal", "opposite"]
        assert [d for _, d in results] == pytest.approx([0.0, 1 - 1 / math.sqrt(2), 1.0, 2.0],
                                                        abs=1e-6)


def test_orthogonal_vectors_are_at_distance_one(vector_store: OracleDBMemoryStore) -> None:
    vector_store.add(["y axis"], "memory", record_ids="y", embeddings=[[0.0, 1.0, 0.0]])
    [(record, distance)] = vector_store.search(None, 1, query_vector=[1.0, 0.0, 0.0])
    assert record.id == "y"
    assert distance == pytest.approx(1.0, abs=1e-6)


def test_a_record_with_several_chunks_appears_once_at_its_best_chunk(
        vector_store: OracleDBMemoryStore) -> None:
    vector_store.add(["two chunks"], "memory", record_ids="multi",
                     index_texts=[["first chunk", "second chunk"]],
                     embeddings=[[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]])
    vector_store.add(["other"], "memory", record_ids="other", embeddings=[[1.0, 1.0, 0.0]])
    results = vector_store.search(None, 5, query_vector=[1.0, 0.0, 0.0])
    assert ids(results) == ["multi", "other"]
    assert results[0][1] == pytest.approx(0.0, abs=1e-6)


# --- visibility: expiry and lifecycle status ------------------------------------------------

def test_expired_records_never_appear(text_store: OracleDBMemoryStore) -> None:
    text_store.add(["visit expired memory", "visit fresh memory"], "memory",
                   record_ids=["old-mem", "new-mem"], timestamps=[days_ago(3), days_ago(0.2)],
                   ttl_days=1, ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    text_store.add(["visit expired message"], "message", record_ids="old-msg", thread_ids="t",
                   timestamps=days_ago(3), ttl_days=1, ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    results = text_store.search("visit expired memory message", 10)
    assert ids(results) == ["new-mem"]
    filtered = text_store.search("visit expired", 10, user_id=None, exact_user_match=True,
                                 include_invalid_results=False, record_types={"memory"})
    assert ids(filtered) == ["new-mem"]


def test_expired_records_do_not_use_up_k(vector_store: OracleDBMemoryStore) -> None:
    vector_store.add([f"old {n}" for n in range(30)], "memory", timestamps=days_ago(3),
                     ttl_days=1, ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
                     embeddings=[[1.0, 0.0, 0.0]] * 30)
    vector_store.add(["far but alive"], "memory", record_ids="alive",
                     embeddings=[[0.0, 0.0, 1.0]])
    assert ids(vector_store.search(None, 1, query_vector=[1.0, 0.0, 0.0])) == ["alive"]


def test_invalid_records_are_included_by_default(text_store: OracleDBMemoryStore) -> None:
    text_store.add(["status valid note", "status invalid note"], "memory",
                   record_ids=["valid", "invalid"],
                   statuses=[RecordStatus.VALID, RecordStatus.INVALID])
    results = text_store.search("status note", 10)
    assert set(ids(results)) == {"valid", "invalid"}
    statuses = {record.id: record.status for record, _ in results}
    assert statuses["invalid"] == RecordStatus.INVALID


def test_include_invalid_results_false_hides_invalid_records(
        text_store: OracleDBMemoryStore) -> None:
    text_store.add(["status valid note", "status invalid note"], "memory",
                   record_ids=["valid", "invalid"],
                   statuses=[RecordStatus.VALID, RecordStatus.INVALID])
    text_store.add(["status invalid message note"], "message", record_ids="invalid-msg",
                   thread_ids="t", statuses=RecordStatus.INVALID)
    results = text_store.search("status note", 10, include_invalid_results=False)
    assert ids(results) == ["valid"]


def test_status_update_changes_search_visibility(text_store: OracleDBMemoryStore) -> None:
    text_store.add(["status flip note"], "memory", record_ids="flip")
    assert text_store.update("memory", "flip", status=RecordStatus.INVALID) == 1
    assert text_store.search("status flip", 5, include_invalid_results=False) == []
    assert ids(text_store.search("status flip", 5)) == ["flip"]


def test_deleted_records_never_appear(text_store: OracleDBMemoryStore) -> None:
    text_store.add(["gone note", "kept note"], "memory", record_ids=["gone", "kept"])
    assert text_store.delete("memory", "gone") == 1
    assert ids(text_store.search("gone kept note", 10)) == ["kept"]


def test_search_follows_content_updates(text_store: OracleDBMemoryStore) -> None:
    text_store.add(["walrus habitat notes"], "memory", record_ids="topic")
    text_store.add(["unrelated gardening notes"], "memory", record_ids="other")
    assert text_store.update("memory", "topic", content="penguin colony notes") == 1
    results = text_store.search("penguin colony", 1)
    assert ids(results) == ["topic"]
    assert results[0][0].content == "penguin colony notes"
    if text_store.search_strategy is SearchStrategy.KEYWORD:
        assert text_store.search("walrus", 5) == []  # the old retrieval text is gone


def test_results_are_full_records(text_store: OracleDBMemoryStore) -> None:
    text_store.add(["full record note"], "memory", record_ids="full", user_ids="u",
                   agent_ids="a", thread_ids="t", metadata={"k": [1, 2]},
                   timestamps="2024-05-01T10:00:00+00:00")
    [(record, _)] = text_store.search("full record", 1)
    assert record == text_store.get("memory", "full")
    assert isinstance(record, ScopedRecord)
    assert (record.content, record.user_id, record.agent_id, record.thread_id, record.metadata) == (
        "full record note", "u", "a", "t", {"k": [1, 2]})


# --- argument rules -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rejecting_store(pg_url: str) -> Iterator[OracleDBMemoryStore]:
    """One 3-dimensional vector store with an embedder, shared by the argument-rule cases."""
    store = OracleDBMemoryStore(HashEmbedder(3), pg_url, memory_store_id=new_store_id(),
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                search_strategy=SearchStrategy.VECTOR)
    store.add(["ok record"], "memory")
    assert len(store.search("ok", 3)) == 1  # the store itself searches fine
    yield store
    store.close()


@pytest.mark.parametrize(("args", "kwargs", "error", "pattern"), [
    (("both", 3), {"query_vector": [1.0, 0.0, 0.0]}, ValueError, "query_vector"),
    ((None, 3), {}, ValueError, "query"),
    (("   \n\t", 3), {}, ValueError, "query"),
    (("", 3), {}, ValueError, "query"),
    ((42, 3), {}, TypeError, "query"),
    ((["a list"], 3), {}, TypeError, "query"),
    (("ok", 0), {}, ValueError, "k must be at least 1"),
    (("ok", -2), {}, ValueError, "k must be at least 1"),
    (("ok", True), {}, TypeError, "k must be an int"),
    (("ok", "3"), {}, TypeError, "k must be an int"),
    (("ok", 2.0), {}, TypeError, "k must be an int"),
    ((None, 3), {"query_vector": []}, ValueError, "query_vector"),
    ((None, 3), {"query_vector": [1.0, float("nan"), 0.0]}, ValueError, "query_vector"),
    ((None, 3), {"query_vector": [1.0, float("inf"), 0.0]}, ValueError, "query_vector"),
    ((None, 3), {"query_vector": [1.0, 0.0]}, ValueError, "query_vector"),
    ((None, 3), {"query_vector": [0.0, 0.0, 0.0]}, ValueError, "query_vector"),
    ((None, 3), {"query_vector": [[1.0, 0.0, 0.0]]}, ValueError, "query_vector"),
    ((None, 3), {"query_vector": ["a", "b", "c"]}, ValueError, "query_vector"),
    (("ok", 3), {"num_hops": 6}, ValueError, "num_hops"),
    (("ok", 3), {"num_hops": -1}, ValueError, "num_hops"),
    (("ok", 3), {"num_hops": 1.5}, TypeError, "num_hops"),
    (("ok", 3), {"max_linked_results": -1}, ValueError, "max_linked_results"),
    (("ok", 3), {"max_linked_results": "5"}, TypeError, "max_linked_results"),
    (("ok", 3), {"metadata_filter": {"tags": {"$bogus": 1}}}, ValueError, "metadata_filter"),
    (("ok", 3), {"metadata_filter": {"": 1}}, ValueError, "metadata_filter"),
    (("ok", 3), {"metadata_filter": "source=slack"}, (TypeError, ValueError), "metadata_filter"),
    (("ok", 3), {"user_id": ""}, ValueError, "user_id"),
    (("ok", 3), {"agent_id": 7, "exact_agent_match": True}, TypeError, "agent_id"),
    (("ok", 3), {"thread_id": "t", "exact_thread_match": "yes"}, TypeError, "exact_thread_match"),
    (("ok", 3), {"exact_user_match": 1}, TypeError, "exact_user_match"),
    (("ok", 3), {"include_invalid_results": None}, TypeError, "include_invalid_results"),
])
def test_invalid_arguments_are_rejected_naming_the_argument(
        rejecting_store: OracleDBMemoryStore, args: tuple[Any, ...], kwargs: dict[str, Any],
        error: type[Exception], pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        rejecting_store.search(*args, **kwargs)


def test_keyword_search_rejects_query_vector(make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    with pytest.raises(ValueError, match="query_vector"):
        store.search(None, 3, query_vector=[1.0, 0.0, 0.0])


@pytest.mark.parametrize("k", [0, -1])
def test_search_async_rejects_k_below_one(vector_store: OracleDBMemoryStore, k: int) -> None:
    with pytest.raises(ValueError, match="k must be at least 1"):
        asyncio.run(vector_store.search_async(None, k, query_vector=[1.0, 0.0, 0.0]))


def test_num_hops_bounds_are_accepted(vector_store: OracleDBMemoryStore) -> None:
    vector_store.add(["hop"], "memory", record_ids="hop", embeddings=[[1.0, 0.0, 0.0]])
    for hops in (0, 5):
        assert ids(vector_store.search(None, 1, query_vector=[1.0, 0.0, 0.0], num_hops=hops,
                                       max_linked_results=0)) == ["hop"]


# --- strategies and the startup check --------------------------------------------------------

@pytest.mark.parametrize("strategy", [SearchStrategy.VECTOR, SearchStrategy.HYBRID])
def test_vector_strategies_need_vector_storage_at_startup(
        make_store: StoreFactory, strategy: SearchStrategy) -> None:
    created = make_store(search_strategy=SearchStrategy.KEYWORD)
    assert created.vector_dim is None
    store_id = created._names.store_key
    created.close()
    with pytest.raises(MemoryStoreSchemaError, match=strategy.name):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                   search_strategy=strategy)


@pytest.mark.parametrize("strategy", [SearchStrategy.VECTOR, SearchStrategy.HYBRID])
def test_vector_strategies_without_vector_dim_or_embedder_fail_at_startup(
        make_store: StoreFactory, strategy: SearchStrategy) -> None:
    with pytest.raises(MemoryStoreSchemaError, match="vector"):
        make_store(search_strategy=strategy)


def test_keyword_client_on_hybrid_schema_searches_by_keyword(make_store: StoreFactory) -> None:
    hybrid = make_store(embedder=HashingEmbedder(EMBED_DIM), search_strategy=SearchStrategy.HYBRID)
    hybrid.add(["zucchini bread recipe", "garden hose repair"], "memory",
               record_ids=["bread", "hose"])
    store_id = hybrid._names.store_key
    keyword = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                         search_strategy=SearchStrategy.KEYWORD)
    assert keyword.search_strategy is SearchStrategy.KEYWORD
    results = keyword.search("zucchini", 5)
    assert ids(results) == ["bread"]  # keyword search returns matching records only
    with pytest.raises(ValueError, match="query_vector"):
        keyword.search(None, 5, query_vector=[0.1] * EMBED_DIM)
    # The keyword client leaves the schema hybrid: a later detecting opener still sees it.
    detected = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                          embedder=HashingEmbedder(EMBED_DIM))
    assert detected.search_strategy is SearchStrategy.HYBRID


def test_keyword_client_with_create_if_necessary_keeps_hybrid_schema(
        make_store: StoreFactory) -> None:
    hybrid = make_store(embedder=HashingEmbedder(EMBED_DIM), search_strategy=SearchStrategy.HYBRID)
    store_id = hybrid._names.store_key
    make_store(memory_store_id=store_id, search_strategy=SearchStrategy.KEYWORD)
    detected = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                          embedder=HashingEmbedder(EMBED_DIM))
    assert detected.search_strategy is SearchStrategy.HYBRID
    assert detected.vector_dim == EMBED_DIM


def test_vector_search_without_embedder_uses_query_vector(
        vector_store: OracleDBMemoryStore) -> None:
    vector_store.add(["x", "y"], "memory", record_ids=["x", "y"],
                     embeddings=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert ids(vector_store.search(None, 2, query_vector=np.array([0.0, 2.0, 0.0]))) == ["y", "x"]


def test_vector_search_of_text_without_embedder_is_rejected(
        vector_store: OracleDBMemoryStore) -> None:
    vector_store.add(["x"], "memory", embeddings=[[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="embedder"):
        vector_store.search("x", 1)


def test_search_on_store_without_vector_storage_is_rejected(
        store: OracleDBMemoryStore) -> None:
    assert store.search_strategy is SearchStrategy.VECTOR and store.vector_dim is None
    with pytest.raises(ValueError, match="vector storage"):
        store.search(None, 1, query_vector=[1.0, 0.0, 0.0])


def test_keyword_search_needs_no_embedder(make_store: StoreFactory) -> None:
    store = make_store(search_strategy="keyword")
    assert store.vector_dim is None
    store.add(["the quick brown fox", "a lazy dog sleeps"], "memory", record_ids=["fox", "dog"])
    assert ids(store.search("fox", 5)) == ["fox"]
    assert ids(store.search("lazy dog", 5)) == ["dog"]
    assert store.search("elephant", 5) == []


@pytest.mark.parametrize(("query", "expected"), [
    ("o'reilly", ["odd"]),
    ("foo:*", ["odd"]),
    ("!café & lait", ["odd"]),
    ("CAFÉ", ["odd"]),
    ("&&& ((( <->", []),
    ("x' OR '1'='1", []),
    ("\\", []),
])
def test_keyword_query_operators_are_plain_text(make_store: StoreFactory, query: str,
                                                expected: list[str]) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    store.add(["O'Reilly books about foo and Café au lait"], "memory", record_ids="odd")
    store.add(["nothing in common"], "memory", record_ids="plain")
    assert ids(store.search(query, 5)) == expected


def test_keyword_search_ranks_more_matching_words_first(make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    store.add(["red apple", "red apple pie recipe", "green pear"], "memory",
              record_ids=["one", "two", "none"])
    results = store.search("apple pie recipe", 5)
    assert ids(results) == ["two", "one"]
    assert results[0][1] < results[1][1]


@pytest.mark.parametrize(("strategy", "sync"), [
    (SearchStrategy.HYBRID, SearchIndexSyncMode.AUTO),
    (SearchStrategy.HYBRID, SearchIndexSyncMode.MANUAL),
    (SearchStrategy.HYBRID, "on_commit"),
    (SearchStrategy.KEYWORD, SearchIndexSyncMode.MANUAL),
    (SearchStrategy.KEYWORD, SearchIndexSyncMode.ON_COMMIT),
    (SearchStrategy.VECTOR, SearchIndexSyncMode.ON_COMMIT),
])
def test_search_index_sync_values_accepted_by_the_spec(
        make_store: StoreFactory, strategy: SearchStrategy, sync: Any) -> None:
    store = text_search_store(make_store, strategy.value, search_index_sync=sync)
    store.add(["synced walnut note"], "memory", record_ids="walnut")
    found_ids = ids(store.search("walnut", 1))
    if sync == SearchIndexSyncMode.MANUAL:  # the spec lets search lag until an explicit sync
        assert found_ids in (["walnut"], [])
    else:
        assert found_ids == ["walnut"]


@pytest.mark.parametrize("strategy", [SearchStrategy.KEYWORD, SearchStrategy.VECTOR])
def test_auto_index_sync_is_hybrid_only(make_store: StoreFactory,
                                        strategy: SearchStrategy) -> None:
    with pytest.raises(ValueError, match="search_index_sync"):
        text_search_store(make_store, strategy.value, search_index_sync=SearchIndexSyncMode.AUTO)


# --- hybrid fusion --------------------------------------------------------------------------

HYBRID_RRF_K, HYBRID_WEIGHTS = 5, (0.1, 1.0)  # vector, keyword (core._hybrid_fusion)


def hybrid_distance(vector_rank: int | None, keyword_rank: int | None) -> float:
    """The documented fused distance: ``1 - score / best_possible``, a side's rank ``r``
    scoring ``weight / (HYBRID_RRF_K + r)``."""
    score = sum(w / (HYBRID_RRF_K + r) for r, w in zip((vector_rank, keyword_rank),
                                                       HYBRID_WEIGHTS, strict=True)
                if r is not None)
    return 1 - score * (HYBRID_RRF_K + 1) / sum(HYBRID_WEIGHTS)


def test_hybrid_record_first_on_both_sides_has_distance_zero(make_store: StoreFactory) -> None:
    store = make_store(embedder=HashingEmbedder(EMBED_DIM), search_strategy=SearchStrategy.HYBRID)
    store.add(["pizza", "pasta carbonara recipe", "sushi bar downtown"], "memory",
              record_ids=["pizza", "pasta", "sushi"])
    results = store.search("pizza", 3)
    assert ids(results)[0] == "pizza"
    # The other two only come from the vector side, at vector ranks 2 and 3.
    assert [d for _, d in results] == pytest.approx(
        [0.0, hybrid_distance(2, None), hybrid_distance(3, None)], abs=1e-9)


class AxisEmbedder(IEmbedder):
    """Texts containing ``far`` point along -x, every other text along +x."""

    @property
    def embedding_dimension(self) -> int:
        return 3

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        return np.array([[-1.0, 0.0, 0.0] if "far" in t.split() else [1.0, 0.0, 0.0]
                         for t in texts], dtype=np.float32)


def test_hybrid_keyword_only_match_still_appears(make_store: StoreFactory) -> None:
    store = make_store(embedder=AxisEmbedder(), search_strategy=SearchStrategy.HYBRID)
    # 60 records sit on the query's vector; the keyword match points the other way, beyond the
    # vector side's candidate window.
    store.add([f"filler number {n}" for n in range(60)], "memory")
    store.add(["zebra far"], "memory", record_ids="zebra")
    results = store.search("zebra", 5)
    assert "zebra" in ids(results)
    distances = dict((record.id, d) for record, d in results)
    assert distances["zebra"] == pytest.approx(hybrid_distance(None, 1), abs=1e-9)
    assert [d for _, d in results] == sorted(d for _, d in results)


def test_hybrid_query_vector_searches_vectors(make_store: StoreFactory) -> None:
    store = make_store(embedder=AxisEmbedder(), search_strategy=SearchStrategy.HYBRID)
    store.add(["near", "far"], "memory", record_ids=["near", "far"])
    results = store.search(None, 2, query_vector=[-1.0, 0.0, 0.0])
    assert ids(results) == ["far", "near"]


# --- chunked queries ------------------------------------------------------------------------

SENTENCE_ONE = "pizza margherita from a napoli oven"
SENTENCE_TWO = "sushi salmon nigiri in tokyo"
LONG_QUERY = f"{SENTENCE_ONE} {SENTENCE_TWO}"
CHUNKER = TextChunker(size=40, overlap=0)


def add_chunk_targets(store: OracleDBMemoryStore) -> None:
    store.add(["pizza margherita napoli oven", "sushi salmon nigiri tokyo",
               "garden shovel and rake"], "memory", record_ids=["pizza", "sushi", "garden"])


def test_the_long_query_splits_into_its_two_sentences() -> None:
    assert CHUNKER(LONG_QUERY) == [SENTENCE_ONE, SENTENCE_TWO]


def test_long_keyword_query_is_searched_chunk_by_chunk(make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD, chunker=CHUNKER)
    add_chunk_targets(store)
    results = store.search(LONG_QUERY, 5)
    assert set(ids(results)) == {"pizza", "sushi"}
    # Each record is first in one chunk's list and absent from the other: 1 - (1/61)/(2/61).
    assert [d for _, d in results] == pytest.approx([0.5, 0.5], abs=1e-9)


def test_long_vector_query_is_searched_chunk_by_chunk(make_store: StoreFactory) -> None:
    embedder = HashEmbedder(EMBED_DIM)
    store = make_store(embedder=embedder, search_strategy=SearchStrategy.VECTOR, chunker=CHUNKER)
    add_chunk_targets(store)
    per_chunk = [store.search(chunk, 3) for chunk in (SENTENCE_ONE, SENTENCE_TWO)]
    assert [ids(r)[0] for r in per_chunk] == ["pizza", "sushi"]
    embedder.calls.clear()
    results = store.search(LONG_QUERY, 3)
    assert embedder.calls == [[SENTENCE_ONE, SENTENCE_TWO]]  # one embedding per chunk
    assert set(ids(results)[:2]) == {"pizza", "sushi"}
    expected = {}
    for record_id in ("pizza", "sushi", "garden"):
        score = sum(1 / (RRF_K + ids(r).index(record_id) + 1) for r in per_chunk)
        expected[record_id] = 1 - score / (2 / (RRF_K + 1))
    assert dict((r.id, d) for r, d in results) == pytest.approx(expected, abs=1e-9)
    assert all(0 <= d < 1 for _, d in results)
    assert [d for _, d in results] == sorted(d for _, d in results)


def test_long_hybrid_query_is_searched_chunk_by_chunk(make_store: StoreFactory) -> None:
    store = make_store(embedder=HashingEmbedder(EMBED_DIM), search_strategy=SearchStrategy.HYBRID,
                       chunker=CHUNKER)
    add_chunk_targets(store)
    per_chunk = [store.search(chunk, 3) for chunk in (SENTENCE_ONE, SENTENCE_TWO)]
    results = store.search(LONG_QUERY, 3)
    assert set(ids(results)[:2]) == {"pizza", "sushi"}
    expected = {}
    for record_id in ids(results):
        score = sum(1 / (RRF_K + ids(r).index(record_id) + 1) for r in per_chunk
                    if record_id in ids(r))
        expected[record_id] = 1 - score / (2 / (RRF_K + 1))
    assert dict((r.id, d) for r, d in results) == pytest.approx(expected, abs=1e-9)
    assert all(0 <= d < 1 for _, d in results)


def test_chunked_query_respects_k_and_filters(make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD, chunker=CHUNKER)
    add_chunk_targets(store)
    store.update("memory", "sushi", metadata={"cuisine": "japanese"})
    assert len(store.search(LONG_QUERY, 1)) == 1
    assert ids(store.search(LONG_QUERY, 5, metadata_filter={"cuisine": "japanese"})) == ["sushi"]


def test_short_query_is_not_fused(make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD, chunker=CHUNKER)
    add_chunk_targets(store)
    [(record, distance)] = store.search(SENTENCE_ONE, 5)
    assert record.id == "pizza"
    assert distance != pytest.approx(0.5)  # a plain keyword distance, not an RRF one
    assert 0 < distance < 1


# --- search_async ---------------------------------------------------------------------------

def test_search_async_returns_the_same_as_search(text_store: OracleDBMemoryStore) -> None:
    text_store.add(["async alpha note", "async beta note", "async gamma"], "memory",
                   user_ids=["u", "u", "v"])
    kwargs: dict[str, Any] = {"user_id": "u", "exact_user_match": True,
                              "record_types": {"memory"}}
    sync_results = text_store.search("async note", 5, **kwargs)
    async_results = asyncio.run(text_store.search_async("async note", 5, **kwargs))
    assert len(sync_results) == 2
    assert [(r.id, d) for r, d in async_results] == [(r.id, d) for r, d in sync_results]
    assert [r for r, _ in async_results] == [r for r, _ in sync_results]


def test_search_async_with_keyword_arguments_only(vector_store: OracleDBMemoryStore) -> None:
    vector_store.add(["v"], "memory", record_ids="v", embeddings=[[0.0, 0.0, 1.0]])
    results = asyncio.run(vector_store.search_async(query=None, k=1,
                                                    query_vector=[0.0, 0.0, 1.0]))
    assert ids(results) == ["v"]

