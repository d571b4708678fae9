"""The SDK's observability events (``oracleagentmemory.observability``, issue 27).

A listener registered around SDK work receives a started and a completed event for each store
call, embedding and model generation, paired by ``started_event_id``, with the duration and the
outcome; it sees no contents unless it asks; a listener that raises is logged and the operation
goes on; and the OpenTelemetry listener turns the pairs into spans (nested as the calls are).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.core import MemoryExtractionConfig, OracleAgentMemory, OracleDBMemoryStore
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.llms import LlmServiceError
from oracleagentmemory.errors import EmbeddingServiceError
from oracleagentmemory.observability import (
    ApiOperationCompletedEvent,
    ApiOperationStartedEvent,
    EmbedderCompletedEvent,
    EmbedderStartedEvent,
    Event,
    EventListener,
    GenericEventListener,
    LlmGenerationCompletedEvent,
    LlmGenerationStartedEvent,
    MemoryStoreCompletedEvent,
    MemoryStoreStartedEvent,
    OperationKind,
    ThreadStartedEvent,
    register_event_listeners,
)
from oracleagentmemory.observability.otel import OpenTelemetryEventListener
from scripted_llm import ScriptedLlm

StoreFactory = Callable[..., OracleDBMemoryStore]
SECRET = "zanzibar marmalade"


class Recorder(EventListener):
    """Keeps every event it receives."""

    def __init__(self, include_contents: bool = False) -> None:
        self.events: list[Event] = []
        self.include_contents = include_contents  # type: ignore[misc]

    def on_event(self, event: Event) -> None:
        self.events.append(event)

    def pairs(self, name: str) -> list[tuple[ApiOperationStartedEvent,
                                             ApiOperationCompletedEvent]]:
        """The (started, completed) pairs of ``<component>.<method>`` ``name``, in start order."""
        started = [e for e in self.events if isinstance(e, ApiOperationStartedEvent)
                   and f"{e.component}.{e.method}" == name]
        completed = {e.started_event_id: e for e in self.events
                     if isinstance(e, ApiOperationCompletedEvent)}
        return [(s, completed[s.event_id]) for s in started]


class Raising(EventListener):
    def on_event(self, event: Event) -> None:
        raise RuntimeError(f"listener bug on {event.event_name}")


class FailingEmbedder(IEmbedder):
    """An embedder whose service is down."""

    @property
    def embedding_dimension(self) -> int:
        return 8

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        raise EmbeddingServiceError("the embedding service is down")


@pytest.fixture
def store(make_store: StoreFactory) -> OracleDBMemoryStore:
    return make_store(embedder=HashingEmbedder(64))


def _check_pair(started: ApiOperationStartedEvent, completed: ApiOperationCompletedEvent,
                success: bool) -> None:
    assert completed.started_event_id == started.event_id != completed.event_id
    assert completed.success is success
    assert completed.duration_seconds is not None and completed.duration_seconds >= 0
    assert completed.timestamp >= started.timestamp
    assert (completed.component, completed.method, completed.operation_kind) == (
        started.component, started.method, started.operation_kind)


def test_store_add_and_search_emit_paired_events_without_contents(
        store: OracleDBMemoryStore) -> None:
    recorder = Recorder()
    with register_event_listeners([recorder]):
        [record_id] = store.add([f"likes {SECRET}"], "memory", user_ids=["u1"],
                                metadata=[{"secret": SECRET}])
        results = store.search(SECRET, k=3, user_id="u1")
    assert [r.id for r, _ in results] == [record_id]

    [(started, completed)] = recorder.pairs("memory_store.add")
    _check_pair(started, completed, success=True)
    assert isinstance(started, MemoryStoreStartedEvent)
    assert isinstance(completed, MemoryStoreCompletedEvent)
    assert started.event_name == "memory_store.add.started"
    assert completed.event_name == "memory_store.add.completed"
    assert started.api_class == "IMemoryStore" and started.concrete_class == "OracleDBMemoryStore"
    assert started.operation_kind is OperationKind.CREATE
    assert started.arguments is None and completed.result is None
    assert started.argument_summary == {
        "contents": {"kind": "list", "count": 1}, "record_type": "memory",
        "user_ids": {"kind": "list", "count": 1}, "metadata": {"kind": "list", "count": 1}}
    assert completed.result_summary == {"value": {"kind": "list", "count": 1}}

    [(search, searched)] = recorder.pairs("memory_store.search")
    _check_pair(search, searched, success=True)
    assert search.operation_kind is OperationKind.READ
    assert search.argument_summary is not None
    assert search.argument_summary["query"] == {"kind": "str", "length": len(SECRET)}

    embeds = recorder.pairs("embedder.embed")
    assert [s.is_query for s, _ in embeds] == [False, True]  # type: ignore[attr-defined]
    for embed, embedded in embeds:
        _check_pair(embed, embedded, success=True)
        assert isinstance(embed, EmbedderStartedEvent)
        assert isinstance(embedded, EmbedderCompletedEvent)
        assert embed.concrete_class == "HashingEmbedder" and embed.input is None
        assert embedded.vector_count == 1 and embedded.embedding_dimension == 64
        assert embedded.embedding_vector is None
    # The embedding runs inside the store call that needs it.
    order = [e.event_id for e in recorder.events]
    add_started, embed_started = started.event_id, embeds[0][0].event_id
    assert order.index(add_started) < order.index(embed_started) < order.index(
        embeds[0][1].event_id) < order.index(completed.event_id)
    assert all(SECRET not in repr(event) and "u1" not in json.dumps(
        event.argument_summary or {}) for event in recorder.events
        if isinstance(event, ApiOperationStartedEvent))
    assert all(SECRET not in repr(event) for event in recorder.events)


def test_failures_complete_with_their_error_type(store: OracleDBMemoryStore,
                                                 make_store: StoreFactory) -> None:
    recorder = Recorder()
    broken = make_store(embedder=FailingEmbedder())
    with register_event_listeners([recorder]):
        with pytest.raises(ValueError):
            store.add(["x"], "no_such_type")
        with pytest.raises(ValueError):
            store.search("tea", k=0)
        with pytest.raises(EmbeddingServiceError):
            broken.add(["x"], "memory")
    for name in ("memory_store.search", "embedder.embed"):
        [(started, completed)] = recorder.pairs(name)
        _check_pair(started, completed, success=False)
    adds = recorder.pairs("memory_store.add")
    assert len(adds) == 2
    for started, completed in adds:
        _check_pair(started, completed, success=False)
    assert [c.error_type for _, c in adds] == ["InvalidArgumentError", "EmbeddingServiceError"]
    [(_, embedded)] = recorder.pairs("embedder.embed")
    assert embedded.error_type == "EmbeddingServiceError"
    assert isinstance(embedded, EmbedderCompletedEvent) and embedded.vector_count is None


def test_contents_reach_only_the_listener_that_asks(store: OracleDBMemoryStore) -> None:
    plain, curious = Recorder(), Recorder(include_contents=True)
    with register_event_listeners([plain, curious]):
        store.add([f"likes {SECRET}"], "memory", metadata=[{"secret": SECRET}])
    [(started, completed)] = curious.pairs("memory_store.add")
    assert started.arguments is not None
    assert started.arguments["contents"] == [f"likes {SECRET}"]
    assert started.arguments["metadata"] == [{"secret": SECRET}]
    assert completed.result is not None and len(completed.result["value"]) == 1
    [(embed, embedded)] = curious.pairs("embedder.embed")
    assert isinstance(embed, EmbedderStartedEvent) and embed.input == [f"likes {SECRET}"]
    assert isinstance(embedded, EmbedderCompletedEvent)
    vectors = np.asarray(embedded.embedding_vector, dtype=np.float32)
    assert vectors.shape == (1, 64)
    assert len(plain.events) == len(curious.events) == 4
    assert all(SECRET not in repr(event) for event in plain.events)


def test_llm_generation_events_with_the_scripted_llm(store: OracleDBMemoryStore) -> None:
    summary = json.dumps({"summary": f"They talked about {SECRET}.", "topics": ["food"]})
    llm = ScriptedLlm(summary, LlmServiceError("the model service is down"))
    client = OracleAgentMemory(store=store, llm=llm,
                               memory_extraction_config=MemoryExtractionConfig(
                                   extract_memories=False))
    recorder = Recorder()
    generations: list[LlmGenerationCompletedEvent] = []
    with register_event_listeners(
            [recorder, GenericEventListener(LlmGenerationCompletedEvent, generations.append)]):
        thread = client.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": f"I love {SECRET}"}])
        assert SECRET in thread.get_summary().content
        thread.add_messages([{"role": "user", "content": "and tea"}])
        thread.get_summary()  # the model fails: the summary falls back to the transcript

    first, second = recorder.pairs("llm.generate")
    _check_pair(*first, success=True)
    _check_pair(*second, success=False)
    started, completed = first
    assert isinstance(started, LlmGenerationStartedEvent)
    assert isinstance(completed, LlmGenerationCompletedEvent)
    assert started.event_name == "llm.generation.started" and started.prompt is None
    assert started.concrete_class == "ScriptedLlm"
    assert completed.content is None and completed.result_summary is not None
    assert completed.result_summary["has_json_schema"] is True
    assert second[1].error_type == "LlmServiceError"
    assert generations == [completed, second[1]]
    # The thread's and the client's own calls are observed too.
    [(create, created)] = recorder.pairs("agent_memory.create_thread")
    _check_pair(create, created, success=True)
    summaries = recorder.pairs("thread.get_summary")
    assert len(summaries) == 2 and all(c.success for _, c in summaries)
    assert isinstance(summaries[0][0], ThreadStartedEvent)
    assert (summaries[0][0].thread_id, summaries[0][0].user_id) == ("t1", "u1")
    assert all(SECRET not in repr(event) for event in recorder.events)


def test_a_raising_listener_does_not_break_the_add(store: OracleDBMemoryStore,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder()
    with caplog.at_level(logging.WARNING, "oracleagentmemory.observability"), \
            register_event_listeners([Raising(), recorder]):
        [record_id] = store.add(["likes tea"], "memory")
    assert store.get("memory", record_id) is not None
    [(_, completed)] = recorder.pairs("memory_store.add")
    assert completed.success
    failures = [r for r in caplog.records if "Raising failed" in r.getMessage()]
    assert len(failures) == 4  # each of the add's and the embedding's events
    assert all("listener bug" not in r.getMessage() for r in failures)


def test_concurrent_operations_keep_their_pairing(store: OracleDBMemoryStore) -> None:
    recorder = Recorder()

    async def work() -> None:
        with register_event_listeners([recorder]):
            await asyncio.gather(*(store.add_async([f"note {n}"], "memory", user_ids=[f"u{n}"])
                                   for n in range(8)))

    asyncio.run(work())
    adds = recorder.pairs("memory_store.add")
    assert len(adds) == 8
    assert len({s.event_id for s, _ in adds}) == 8
    for started, completed in adds:
        _check_pair(started, completed, success=True)
    assert len(recorder.pairs("embedder.embed")) == 8


def test_the_opentelemetry_listener_makes_nested_spans(store: OracleDBMemoryStore) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with register_event_listeners([OpenTelemetryEventListener(provider)]):
        store.add([f"likes {SECRET}"], "memory")
        with pytest.raises(ValueError):
            store.search(SECRET, k=0)
    spans: dict[str, ReadableSpan] = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"memory_store.add", "embedder.embed", "memory_store.search"}
    add, embed, search = spans["memory_store.add"], spans["embedder.embed"], spans[
        "memory_store.search"]
    assert embed.parent is not None and add.context is not None
    assert embed.parent.span_id == add.context.span_id
    assert add.parent is None and search.parent is None
    assert add.attributes is not None and add.attributes["oam.operation_kind"] == "create"
    assert add.status.status_code is StatusCode.UNSET
    assert search.status.status_code is StatusCode.ERROR
    assert search.attributes is not None
    assert search.attributes["error.type"] == "InvalidArgumentError"
    assert all(SECRET not in str(dict(span.attributes or {})) for span in spans.values())


def test_the_readme_example_runs(store: OracleDBMemoryStore,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The README's Observability block runs as written, with a client in scope."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Observability\n", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    client = OracleAgentMemory(store=store, memory_extraction_config=MemoryExtractionConfig(
        extract_memories=False))
    exec(code, {"client": client})  # noqa: S102
    printed = capsys.readouterr().out.split()
    assert printed[:3] == ["memory_store.add.completed", "True", "None"]
    assert float(printed[3]) >= 0
