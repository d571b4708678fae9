"""Thread summaries and context cards, with a scripted model and without one."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from oracleagentmemory.core import (
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    OracleAgentMemory,
    OracleDBMemoryStore,
)
from oracleagentmemory.core._summaries import summary_record_id
from oracleagentmemory.core.contextcard import OracleContextCard, OracleSummary
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.errors import InvalidArgumentError
from scripted_llm import ScriptedCall, ScriptedLlm

StoreFactory = Callable[..., OracleDBMemoryStore]
OFF = MemoryExtractionConfig(extract_memories=False)


def digest(summary: str, *topics: str) -> str:
    return json.dumps({"summary": summary, "topics": list(topics)})


@pytest.fixture
def store(make_store: StoreFactory) -> OracleDBMemoryStore:
    return make_store(embedder=HashingEmbedder(64))


def test_summary_without_a_model_is_the_transcript(store: OracleDBMemoryStore) -> None:
    client = OracleAgentMemory(store=store, memory_extraction_config=OFF)
    thread = client.create_thread(thread_id="t", user_id="u1")
    assert len(thread.add_messages([{"role": "assistant",
                                     "content": "Summary source message"}])) == 1
    summary = thread.get_summary()
    assert isinstance(summary, OracleSummary) and bool(summary.content)  # the spec's example
    assert "assistant: Summary source message" in summary.content
    thread.add_messages([{"role": "user", "content": "x" * 10_000}])
    assert len(thread.get_summary(token_budget=0).content) <= 4_000
    assert len(thread.get_summary(token_budget=10).content) < 60
    with pytest.raises(TypeError):
        thread.get_summary(style="short")


def test_durable_summary_is_reused_refreshed_and_left_alone_for_prefixes(
        store: OracleDBMemoryStore) -> None:
    llm = ScriptedLlm(digest("They planned a trip to Rome.", "travel"),
                      digest("They booked a hotel in Rome.", "travel", "hotel"),
                      digest("Only the first message."))
    client = OracleAgentMemory(store=store, llm=llm, memory_extraction_config=OFF)
    thread = client.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": "Let's go to Rome"}])
    assert thread.get_summary().content == "They planned a trip to Rome."
    assert thread.get_summary().content == "They planned a trip to Rome."  # reused
    assert len(llm.calls) == 1
    thread.add_messages([{"role": "user", "content": "Book the Hotel Roma"}])
    assert thread.get_summary().content == "They booked a hotel in Rome."
    second = llm.calls[1].text
    assert "They planned a trip to Rome." in second  # the earlier summary as context
    assert "Book the Hotel Roma" in second and "Let's go to Rome" not in second  # only newer
    assert thread.get_summary(except_last=1).content == "Only the first message."
    assert thread.get_summary().content == "They booked a hotel in Rome."  # durable unchanged
    record = store.get("thread_summary", summary_record_id("t"))
    assert record is not None and record.content["topics"] == ["travel", "hotel"]


def test_a_failing_summary_model_falls_back_to_the_transcript(store: OracleDBMemoryStore) -> None:
    client = OracleAgentMemory(store=store, llm=ScriptedLlm("not json"),
                               memory_extraction_config=OFF)
    thread = client.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": "hello there"}])
    assert "user: hello there" in thread.get_summary().content


def test_automatic_summary_refresh_follows_the_frequency(store: OracleDBMemoryStore) -> None:
    llm = ScriptedLlm(digest("after two"), repeat_last=True)
    settings = MemoryExtractionConfig(
        extract_memories=False, enable_context_summary=True, context_summary_update_frequency=2,
        extraction_mode=MemoryExtractionMode.INLINE)
    client = OracleAgentMemory(store=store, llm=llm, memory_extraction_config=settings)
    thread = client.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": "one"}])
    assert llm.calls == [] and store.get("thread_summary", summary_record_id("t")) is None
    thread.add_messages([{"role": "user", "content": "two"}])
    assert len(llm.calls) == 1
    assert store.get("thread_summary", summary_record_id("t")) is not None


def test_extraction_prompt_gets_the_earlier_summary(store: OracleDBMemoryStore) -> None:
    def answer(call: ScriptedCall) -> str:
        if "memories" in json.dumps(call.response_json_schema):
            return json.dumps({"memories": []})
        return digest("The user is planning a wedding.")

    llm = ScriptedLlm(responder=answer)
    settings = MemoryExtractionConfig(
        enable_context_summary=True, extraction_mode=MemoryExtractionMode.INLINE,
        memory_link_extraction_mode=MemoryLinkExtractionMode.DISABLED)
    client = OracleAgentMemory(store=store, llm=llm, memory_extraction_config=settings)
    thread = client.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": "We set the date"}])
    thread.add_messages([{"role": "user", "content": "We chose a venue"}])
    extraction_prompts = [c.text for c in llm.calls
                          if "memories" in json.dumps(c.response_json_schema)]
    assert "The user is planning a wedding." in extraction_prompts[-1]


def test_context_card_sections(store: OracleDBMemoryStore) -> None:
    llm = ScriptedLlm(digest("Planning meals <fast>", "food"), repeat_last=True)
    client = OracleAgentMemory(store=store, llm=llm, memory_extraction_config=OFF)
    thread = client.create_thread(thread_id="t", user_id="u1", agent_id="a1")
    client.add_memory("User likes pizza", user_id="u1", agent_id="a1", memory_id="pizza")
    client.add_memory("Other user likes pizza", user_id="u2", agent_id="a1", memory_id="theirs")
    thread.add_messages([{"role": "user", "content": "meals with pizza"},
                         {"role": "user", "content": "and the tail message"}])
    card = thread.get_context_card(except_last_messages=1, max_recent_messages=1)
    assert isinstance(card, OracleContextCard)
    text = card.content
    assert "<summary>Planning meals &lt;fast&gt;</summary>" in text
    assert "<topic>food</topic>" in text
    ids = [r.id for r in card.relevant_results]
    assert "pizza" in ids and "theirs" not in ids  # the thread's user only
    assert all(r.record.content != "and the tail message" for r in card.relevant_results)
    assert [m.content for m in card.recent_messages] == ["and the tail message"]
    with pytest.raises(InvalidArgumentError, match="max_recent_messages"):
        thread.get_context_card(except_last_messages=2, max_recent_messages=1)
    minimum = thread.get_context_card(min_relevant_results_by_type={"message": 1},
                                      max_relevant_results=1)
    assert [r.record.record_type for r in minimum.relevant_results] == ["message"]
    with pytest.raises(InvalidArgumentError, match="unsupported"):
        thread.get_context_card(min_relevant_results_by_type={"thread": 1})


def test_context_card_without_a_model_uses_recent_messages(store: OracleDBMemoryStore) -> None:
    client = OracleAgentMemory(store=store, memory_extraction_config=OFF)
    thread = client.create_thread(thread_id="t", user_id="u1", agent_id=None)
    client.add_memory("User likes green tea", user_id="u1", memory_id="tea")
    thread.add_messages([{"role": "user", "content": "any green tea ideas?"}])
    card = thread.get_context_card(fallback_message_count=1)
    assert "any green tea ideas?" in card.summary
    assert "tea" in [r.id for r in card.relevant_results]
    assert card.topics == []
