"""The SDK's value types and interfaces have the spec's shapes (issue 9, item 4).

Records are frozen, hashable dataclasses whose ``record_type`` is fixed per class, so the
positional order is the spec's (``MemoryRecord("id1", "hello")`` sets the content);
``MessageRecord.seq_no`` is a required keyword; ``RecordStatus`` and ``ImageMimeType`` are
``str`` enums; ``build_record`` takes the record id positionally; ``TextContent`` requires its
text; embedders take ``is_query`` (the store passes ``True`` for search queries) and state
``max_input_tokens``; every store method has an ``*_async`` twin with the same signature.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from conftest import StoreFactory
from oracleagentmemory.apis import (
    AgentProfileRecord,
    FactRecord,
    GuidelineRecord,
    IEmbedder,
    ImageMimeType,
    IMemoryStore,
    MemoryRecord,
    MessageContent,
    MessageRecord,
    PreferenceRecord,
    Record,
    RecordRelation,
    RecordStatus,
    ScopedRecord,
    TextContent,
    ThreadRecord,
    ThreadSummaryRecord,
    UserProfileRecord,
    build_record,
)
from oracleagentmemory.apis.embedders.embedder import DEFAULT_MAX_INPUT_TOKENS
from oracleagentmemory.core import OracleDBMemoryStore, OracleMemoryStore
from oracleagentmemory.core.embedders import HashingEmbedder, OpenAICompatibleEmbedder

CONTENT_FIRST: list[tuple[type[Any], str, object]] = [
    (MemoryRecord, "memory", "hello"),
    (GuidelineRecord, "guideline", "hello"),
    (FactRecord, "fact", "hello"),
    (PreferenceRecord, "preference", "hello"),
    (UserProfileRecord, "user_profile", "hello"),
    (AgentProfileRecord, "agent_profile", "hello"),
    (ThreadRecord, "thread", "hello"),
    (ThreadSummaryRecord, "thread_summary", {"text": "hello"}),
]


def relation(metadata: dict[str, Any] | None = None) -> RecordRelation:
    return RecordRelation("r1", "a", "memory", "b", "memory", "supports", "is_supported_by",
                          None, metadata, "2026-01-01T00:00:00+00:00")


# --- positional order: record_type is fixed per class ----------------------------------------


def test_memory_record_second_positional_argument_is_the_content() -> None:
    record = MemoryRecord("id1", "hello")
    assert (record.id, record.content, record.record_type) == ("id1", "hello", "memory")


@pytest.mark.parametrize(("cls", "record_type", "content"), CONTENT_FIRST)
def test_every_record_class_fixes_its_type_and_takes_content_second(
        cls: type[Any], record_type: str, content: object) -> None:
    record = cls("id1", content)
    assert (record.record_type, record.content) == (record_type, content)
    assert "record_type" not in inspect.signature(cls).parameters
    with pytest.raises(TypeError):
        cls("id1", record_type="memory")


def test_message_record_takes_content_second_and_requires_a_keyword_seq_no() -> None:
    message = MessageRecord("m1", "hi", seq_no=3)
    assert (message.record_type, message.content, message.seq_no) == ("message", "hi", 3)
    assert inspect.signature(MessageRecord).parameters["seq_no"].kind is \
        inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError, match="seq_no"):
        MessageRecord("m1", "hi")  # type: ignore[call-arg]


def test_scoped_record_positional_order_follows_the_spec() -> None:
    record = MemoryRecord("id1", "hello", "2026-01-01T00:00:00+00:00", {"k": 1},
                          RecordStatus.INVALID, (), "t1", "u1", "a1")
    assert (record.timestamp, record.metadata, record.status) == (
        "2026-01-01T00:00:00+00:00", {"k": 1}, RecordStatus.INVALID)
    assert (record.thread_id, record.user_id, record.agent_id) == ("t1", "u1", "a1")
    assert record.linked_results == ()


# --- frozen and hashable ---------------------------------------------------------------------


@pytest.mark.parametrize("record", [
    MemoryRecord("id1", "hello", metadata={"k": [1, 2]}),
    MessageRecord("m1", (TextContent("a"),), seq_no=0),
    ThreadRecord("t1", runtime_config={"model": "x"}),
    ThreadSummaryRecord("s1", {"text": "summary"}),
    UserProfileRecord("u1", "likes tea"),
])
def test_records_are_frozen_and_hashable_even_with_dict_fields(record: Record) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.content = "changed"  # type: ignore[misc]
    copy = dataclasses.replace(record)
    assert copy == record and copy is not record
    assert hash(copy) == hash(record)
    assert len({record, copy}) == 1


def test_equality_compares_content_though_the_hash_leaves_it_out() -> None:
    first, second = MemoryRecord("id1", "hello"), MemoryRecord("id1", "bye")
    assert first != second
    assert len({first, second}) == 2
    assert MemoryRecord("id1", "hello") != FactRecord("id1", "hello")


def test_a_record_with_linked_results_is_hashable() -> None:
    root = MemoryRecord("a", "root", linked_results=((relation({"w": 1}), MemoryRecord("b")),))
    assert hash(root) == hash(dataclasses.replace(root))
    with pytest.raises(dataclasses.FrozenInstanceError):
        root.linked_results = ()  # type: ignore[misc]


def test_relations_are_frozen_and_hashable_with_metadata() -> None:
    link = relation({"weight": 1})
    assert hash(link) == hash(relation({"weight": 1}))
    assert link != relation({"weight": 2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        link.relation_type = "refines"  # type: ignore[misc]


# --- str enums ---------------------------------------------------------------------------------


def test_record_status_is_a_str_enum() -> None:
    # Typed as str: mypy's strict equality does not know that a str enum equals its value.
    valid: str = RecordStatus.VALID
    invalid: str = RecordStatus.INVALID
    assert valid == "valid" and invalid == "invalid" and valid != "invalid"
    assert RecordStatus("invalid") is RecordStatus.INVALID
    assert {"valid": 1}[RecordStatus.VALID] == 1  # same hash as its value


def test_image_mime_type_is_a_str_enum() -> None:
    assert [m.value for m in ImageMimeType] == ["image/png", "image/jpeg", "image/webp"]
    png: str = ImageMimeType.PNG
    assert png == "image/png" and isinstance(ImageMimeType.WEBP, str)
    assert ImageMimeType("image/jpeg") is ImageMimeType.JPEG


# --- build_record -----------------------------------------------------------------------------


def test_build_record_takes_the_record_id_positionally() -> None:
    record = build_record("memory", "id1", content="hello", user_id="u1")
    assert record == MemoryRecord("id1", "hello", user_id="u1")


def test_build_record_builds_each_type_and_ignores_fields_it_lacks() -> None:
    profile = build_record("user_profile", "u1", content="likes tea", thread_id="t1")
    assert type(profile) is UserProfileRecord and not isinstance(profile, ScopedRecord)
    memory = build_record("fact", "f1", content="x", role="user", seq_no=4)
    assert memory == FactRecord("f1", "x")
    message = build_record("message", "m1", content="hi", role="user", seq_no=2, thread_id="t")
    assert message == MessageRecord("m1", "hi", thread_id="t", role="user", seq_no=2)
    thread = build_record("thread", "t1", runtime_config={"a": 1})
    assert isinstance(thread, ThreadRecord) and thread.runtime_config == {"a": 1}


def test_build_record_refuses_a_message_without_seq_no_and_an_unknown_type() -> None:
    with pytest.raises(ValueError, match="seq_no"):
        build_record("message", "m1", content="hi")
    with pytest.raises(ValueError, match="unknown record type"):
        build_record("bogus", "x")


# --- message content ----------------------------------------------------------------------------


def test_text_content_requires_its_text() -> None:
    with pytest.raises(TypeError):
        TextContent()  # type: ignore[call-arg]
    part = TextContent("hello", timestamp="2026-01-01T00:00:00+00:00")
    assert (part.text, part.timestamp) == ("hello", "2026-01-01T00:00:00+00:00")
    assert isinstance(part, MessageContent) and len(part.id) == 32
    assert TextContent("a").id != TextContent("a").id
    with pytest.raises(TypeError):
        TextContent("hello", "an-id")  # type: ignore[call-arg]  # id, timestamp: keywords
    with pytest.raises(dataclasses.FrozenInstanceError):
        part.text = "changed"  # type: ignore[misc]


def test_message_parts_come_back_as_an_immutable_tuple(store: OracleDBMemoryStore) -> None:
    parts = [TextContent("First"), TextContent("Second")]
    store.add([parts], "message", record_ids="m1", thread_ids="t1")
    message = store.get("message", "m1")
    assert isinstance(message, MessageRecord)
    assert message.content == tuple(parts)
    assert hash(message) == hash(dataclasses.replace(message))


# --- embedders: is_query and max_input_tokens -------------------------------------------------


class RecordingEmbedder(IEmbedder):
    """Records ``(texts, is_query)`` of every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], bool]] = []

    @property
    def embedding_dimension(self) -> int:
        return 3

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        self.calls.append((list(texts), is_query))
        return np.tile(np.array([1.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


def test_embedder_contract_has_is_query_keyword_and_max_input_tokens() -> None:
    for method in (IEmbedder.embed, IEmbedder.embed_async):
        parameter = inspect.signature(method).parameters["is_query"]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is False
    embedder = RecordingEmbedder()
    assert embedder.max_input_tokens == DEFAULT_MAX_INPUT_TOKENS == 512


def test_embed_async_passes_is_query_through() -> None:
    embedder = RecordingEmbedder()
    asyncio.run(embedder.embed_async(["q"], is_query=True))
    asyncio.run(embedder.embed_async(["d"]))
    assert embedder.calls == [(["q"], True), (["d"], False)]


def test_store_embeds_search_queries_with_is_query_and_documents_without(
        make_store: StoreFactory) -> None:
    embedder = RecordingEmbedder()
    store = make_store(embedder=embedder)
    store.add(["Likes tea"], "memory", record_ids="m1")
    assert embedder.calls == [(["Likes tea"], False)]
    [(record, _)] = store.search("tea", 1)
    assert record.id == "m1"
    assert embedder.calls[1:] == [(["tea"], True)]


@pytest.mark.parametrize("is_query", [False, True])
def test_hashing_embedder_accepts_is_query_and_encodes_queries_like_documents(
        is_query: bool) -> None:
    embedder = HashingEmbedder(16)
    np.testing.assert_array_equal(embedder.embed(["pizza night"], is_query=is_query),
                                  embedder.embed(["pizza night"]))
    assert embedder.max_input_tokens == DEFAULT_MAX_INPUT_TOKENS


def test_openai_compatible_embedder_accepts_is_query_and_states_max_input_tokens() -> None:
    requests: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        import json
        body = json.loads(request.content)
        requests.append(body)
        return httpx.Response(200, json={"data": [
            {"index": i, "embedding": [1.0, 0.0]} for i in range(len(body["input"]))]})

    embedder = OpenAICompatibleEmbedder("http://embed.invalid", "m", 2, max_input_tokens=8192,
                                        transport=httpx.MockTransport(answer))
    assert embedder.max_input_tokens == 8192
    assert embedder.embed(["q"], is_query=True).shape == (1, 2)
    assert asyncio.run(embedder.embed_async(["d"], is_query=False)).shape == (1, 2)
    assert [r["input"] for r in requests] == [["q"], ["d"]]
    default = OpenAICompatibleEmbedder("http://embed.invalid", "m", 2,
                                       transport=httpx.MockTransport(answer))
    assert default.max_input_tokens == DEFAULT_MAX_INPUT_TOKENS
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="max_input_tokens"):
            OpenAICompatibleEmbedder("http://embed.invalid", "m", 2, max_input_tokens=bad)  # type: ignore[arg-type]


# --- the store contract and its async twins -----------------------------------------------------

SYNC_METHODS = sorted(IMemoryStore.__abstractmethods__)


def shape(signature: inspect.Signature) -> list[tuple[str, Any, Any]]:
    """Names, kinds and defaults (not annotations) of a signature's parameters."""
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def test_the_contract_declares_explicit_parameters_and_every_async_twin() -> None:
    add = inspect.signature(IMemoryStore.add).parameters
    assert list(add)[:15] == [
        "self", "contents", "record_type", "index_texts", "embeddings", "record_ids",
        "thread_ids", "user_ids", "agent_ids", "roles", "timestamps", "metadata", "ttl_days",
        "ttl_anchor", "statuses"]
    twins = {name for name in dir(IMemoryStore) if name.endswith("_async")}
    assert twins == {f"{name}_async" for name in SYNC_METHODS}
    for name in SYNC_METHODS:
        assert inspect.signature(getattr(IMemoryStore, f"{name}_async")) == \
            inspect.signature(getattr(IMemoryStore, name)), name
        assert inspect.iscoroutinefunction(getattr(IMemoryStore, f"{name}_async")), name


def test_the_db_store_implements_the_contract_signatures(store: OracleDBMemoryStore) -> None:
    assert isinstance(store, OracleMemoryStore) and issubclass(OracleMemoryStore, IMemoryStore)
    for name in SYNC_METHODS:
        declared = inspect.signature(getattr(IMemoryStore, name))
        implemented = inspect.signature(getattr(OracleDBMemoryStore, name))
        assert [(n, d) for n, _, d in shape(implemented)] == \
            [(n, d) for n, _, d in shape(declared)], name


@pytest.mark.parametrize("name", SYNC_METHODS)
def test_each_async_twin_has_the_signature_of_its_sync_method(
        store: OracleDBMemoryStore, name: str) -> None:
    twin = getattr(store, f"{name}_async")
    assert inspect.signature(twin) == inspect.signature(getattr(store, name))
    assert inspect.iscoroutinefunction(twin)
    assert twin.__name__ == f"{name}_async"


def test_an_async_twin_runs_the_store_method_with_its_arguments(
        store: OracleDBMemoryStore) -> None:
    assert asyncio.run(store.add_async(["Likes tea"], "memory", record_ids="m1",
                                       user_ids="u1")) == ["m1"]
    assert asyncio.run(store.get_async("memory", "m1")) == store.get("memory", "m1")
    listed = asyncio.run(store.list_async("memory", user_id="u1"))
    assert [r.id for r in listed] == ["m1"]
    assert asyncio.run(store.update_async("memory", "m1", content="Likes coffee")) == 1
    assert asyncio.run(store.delete_async("memory", "m1")) == 1
    assert store.list("memory") == []
    with pytest.raises(TypeError):
        asyncio.run(store.get_async("memory"))  # type: ignore[call-arg]
