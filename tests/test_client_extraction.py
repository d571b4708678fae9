"""Automatic memory extraction of the agent-memory client, driven by a scripted model: inline and
background modes, each queue-full behaviour, frequency and window, metadata inheritance, links,
waits before deletes, and background work that runs as the end user who queued it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from oracleagentmemory.core import (
    BackgroundExtractionQueueFullBehavior,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    OracleAgentMemory,
    OracleDBMemoryStore,
)
from oracleagentmemory.core.deepsec.context import active_security_context
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.llms import LlmServiceError
from scripted_llm import ScriptedCall, ScriptedLlm

StoreFactory = Callable[..., OracleDBMemoryStore]
INLINE = MemoryExtractionMode.INLINE
BACKGROUND = MemoryExtractionMode.BACKGROUND
NO_LINKS = MemoryLinkExtractionMode.DISABLED


def memories(*items: tuple[str, str]) -> str:
    return json.dumps({"memories": [{"content": c, "memory_type": t} for c, t in items]})


def config(**fields: Any) -> MemoryExtractionConfig:
    fields.setdefault("memory_link_extraction_mode", NO_LINKS)
    return MemoryExtractionConfig(**fields)


@pytest.fixture
def store(make_store: StoreFactory) -> OracleDBMemoryStore:
    return make_store(embedder=HashingEmbedder(64))


def client_for(store: OracleDBMemoryStore, llm: Any, **fields: Any) -> OracleAgentMemory:
    return OracleAgentMemory(store=store, llm=llm, memory_extraction_config=config(**fields))


class Gate:
    """A model answer that waits until the test opens the gate."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, call: ScriptedCall) -> str:
        self.entered.set()
        assert self.release.wait(30), "the test never opened the gate"
        return self.answer


# --- inline and background ----------------------------------------------------------------
def test_inline_extraction_stores_memories_in_the_thread_scope(store: OracleDBMemoryStore) -> None:
    llm = ScriptedLlm(memories(("User likes pizza", "preference"), ("User lives in Lyon", "fact")))
    client = client_for(store, llm, extraction_mode=INLINE)
    thread = client.create_thread(thread_id="t", user_id="u1", agent_id="a1")
    thread.add_messages([{"role": "user", "content": "I love pizza. I live in Lyon.",
                          "metadata": {"channel": "web"}}])
    found = {r.content: r for r in client.list_memories(user_id="u1")}
    assert set(found) == {"User likes pizza", "User lives in Lyon"}
    pizza = found["User likes pizza"]
    assert (pizza.record_type, pizza.thread_id, pizza.agent_id) == ("preference", "t", "a1")
    assert pizza.metadata == {"channel": "web"}
    [call] = llm.calls
    assert "I love pizza" in call.text and call.response_json_schema is not None


def test_spec_example_with_an_llm_adds_one_message(store: OracleDBMemoryStore) -> None:
    client = OracleAgentMemory(store=store, llm=ScriptedLlm(memories(), repeat_last=True))
    thread = client.create_thread(thread_id="c4")
    assert len(thread.add_messages([{"role": "user", "content": "I love pizza."}])) == 1
    client.wait_for_memory_extraction(timeout=10)
    client.close()


def test_background_extraction_returns_first_then_writes(store: OracleDBMemoryStore) -> None:
    gate = Gate(memories(("User likes tea", "preference")))
    client = client_for(store, ScriptedLlm(gate), extraction_mode=BACKGROUND)
    thread = client.create_thread(thread_id="t", user_id="u1")
    [message_id] = thread.add_messages([{"role": "user", "content": "I like tea"}])
    assert gate.entered.wait(10)
    assert client.list_memories(user_id="u1") == []  # the call returned before the model did
    assert thread.get_message(message_id).content == "I like tea"
    gate.release.set()
    client.wait_for_memory_extraction(timeout=10)
    assert [m.content for m in client.list_memories(user_id="u1")] == ["User likes tea"]
    client.close()


@pytest.mark.parametrize("mode", [INLINE, BACKGROUND])
@pytest.mark.parametrize("answer", ["not json", '{"memories": [{"memory_type": "fact"}]}',
                                    LlmServiceError("model down")])
def test_a_failing_model_never_loses_the_raw_messages(
        store: OracleDBMemoryStore, mode: MemoryExtractionMode, answer: Any) -> None:
    client = client_for(store, ScriptedLlm(answer), extraction_mode=mode)
    thread = client.create_thread(thread_id="t", user_id="u1")
    ids = thread.add_messages([{"role": "user", "content": "keep me"}])
    client.wait_for_memory_extraction(timeout=10)
    assert [m.id for m in thread.get_messages()] == ids
    assert client.list_memories(user_id="u1") == []


# --- the queue ------------------------------------------------------------------------------
@pytest.fixture
def one_slot_queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OAM_BACKGROUND_QUEUE_CAPACITY", "1")
    yield


def busy_client(store: OracleDBMemoryStore, behavior: BackgroundExtractionQueueFullBehavior,
                timeout: float) -> tuple[OracleAgentMemory, Any, Gate]:
    """A client whose worker is stuck on a first job and whose one queue slot is taken."""
    gate = Gate(memories(("first", "memory")))
    llm = ScriptedLlm(gate, memories(("second", "memory")), memories(("third", "memory")))
    client = client_for(store, llm, extraction_mode=BACKGROUND,
                        background_extraction_queue_full_behavior=behavior,
                        background_extraction_queue_put_timeout_seconds=timeout)
    thread = client.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": "one"}])
    assert gate.entered.wait(10)
    thread.add_messages([{"role": "user", "content": "two"}])  # waits in the only slot
    return client, thread, gate


@pytest.mark.usefixtures("one_slot_queue")
@pytest.mark.parametrize("behavior, wait", [
    (BackgroundExtractionQueueFullBehavior.DROP, 5.0),
    (BackgroundExtractionQueueFullBehavior.WAIT_THEN_DROP, 0.3),
])
def test_a_full_queue_drops_the_work_and_keeps_the_message(
        store: OracleDBMemoryStore, caplog: pytest.LogCaptureFixture,
        behavior: BackgroundExtractionQueueFullBehavior, wait: float) -> None:
    client, thread, gate = busy_client(store, behavior, wait)
    started = time.monotonic()
    [third] = thread.add_messages([{"role": "user", "content": "three"}])
    waited = time.monotonic() - started
    assert "dropped" in caplog.text
    if behavior is BackgroundExtractionQueueFullBehavior.DROP:
        assert waited < 2  # no wait at all
    else:
        assert waited >= wait
    gate.release.set()
    client.wait_for_memory_extraction(timeout=10)
    assert sorted(str(m.content) for m in client.list_memories(user_id="u1")) == ["first", "second"]
    assert thread.get_message(third).content == "three"


@pytest.mark.usefixtures("one_slot_queue")
def test_a_full_queue_raises_after_waiting_when_told(store: OracleDBMemoryStore) -> None:
    client, thread, gate = busy_client(
        store, BackgroundExtractionQueueFullBehavior.WAIT_THEN_RAISE, 0.2)
    with pytest.raises(TimeoutError, match="raw write is kept"):
        thread.add_messages([{"role": "user", "content": "three"}])
    assert [m.content for m in thread.get_messages()] == ["one", "two", "three"]
    gate.release.set()
    client.wait_for_memory_extraction(timeout=10)
    # positive control: with room in the queue the same call queues its work
    thread.add_messages([{"role": "user", "content": "four"}])
    client.close()


# --- what a pass covers -------------------------------------------------------------------
def test_frequency_collects_messages_until_due(store: OracleDBMemoryStore) -> None:
    llm = ScriptedLlm(memories(("covered", "memory")))
    client = client_for(store, llm, extraction_mode=INLINE, memory_extraction_frequency=3)
    thread = client.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": "m1"}, {"role": "user", "content": "m2"}])
    assert llm.calls == []
    thread.add_messages([{"role": "user", "content": "m3"}])
    [call] = llm.calls
    assert all(f"m{n}" in call.text for n in (1, 2, 3))
    # the counter is saved with the thread: another client object continues it
    reopened = client_for(store, llm, extraction_mode=INLINE,
                          memory_extraction_frequency=3).get_thread("t")
    llm.add(memories())
    reopened.add_messages([{"role": "user", "content": "m4"}])
    assert len(llm.calls) == 1


def test_window_gives_recent_context(store: OracleDBMemoryStore) -> None:
    llm = ScriptedLlm(memories(), memories(), memories())
    client = client_for(store, llm, extraction_mode=INLINE, memory_extraction_window=2)
    thread = client.create_thread(thread_id="t", user_id="u1")
    for text in ("alpha", "beta", "gamma"):
        thread.add_messages([{"role": "user", "content": text}])
    last = llm.calls[-1].text
    assert "beta" in last and "gamma" in last and "alpha" not in last
    only_new = ScriptedLlm(memories())
    client_for(store, only_new, extraction_mode=INLINE).get_thread("t").add_messages(
        [{"role": "user", "content": "delta"}])
    assert "delta" in only_new.calls[0].text and "gamma" not in only_new.calls[0].text


@pytest.mark.parametrize("rule, expected", [
    (True, {"channel": "web"}), (("lang",), None), (False, None)])
def test_metadata_inheritance(store: OracleDBMemoryStore, rule: Any, expected: Any) -> None:
    client = client_for(store, ScriptedLlm(memories(("m", "memory"))), extraction_mode=INLINE,
                        memory_extraction_inherit_message_metadata=rule)
    thread = client.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": "a", "metadata": {"channel": "web",
                                                                       "lang": "fr"}},
                         {"role": "user", "content": "b", "metadata": {"channel": "web",
                                                                       "lang": "en"}}])
    [memory] = client.list_memories(user_id="u1")
    assert memory.metadata == expected  # lang differs between the sources: never copied


def test_custom_instructions_reach_the_prompt(store: OracleDBMemoryStore) -> None:
    llm = ScriptedLlm(memories())
    client = client_for(store, llm, extraction_mode=INLINE,
                        memory_extraction_custom_instructions="Only keep food preferences.")
    client.create_thread(thread_id="t", user_id="u1").add_messages(
        [{"role": "user", "content": "x"}])
    assert "Only keep food preferences." in llm.calls[0].text


def test_post_extraction_links_new_memories_to_similar_ones(store: OracleDBMemoryStore) -> None:
    def link_answer(call: ScriptedCall) -> str:
        new_id = call.text.split("New memory [", 1)[1].split("]", 1)[0]
        return json.dumps({"links": [
            {"source_memory_id": new_id, "target_memory_id": "old", "link_type": "supersedes"},
            {"source_memory_id": new_id, "target_memory_id": "invented", "link_type": "supports"},
        ]})

    llm = ScriptedLlm(memories(("User lives in Paris now", "fact")), link_answer)
    post = MemoryLinkExtractionMode.POST_EXTRACTION
    client = OracleAgentMemory(store=store, llm=llm,
                               memory_extraction_config=MemoryExtractionConfig(
                                   extraction_mode=INLINE, memory_link_extraction_mode=post))
    client.add_memory("User lives in Lyon", memory_type="fact", user_id="u1", memory_id="old",
                      autonomous_linking=False)
    client.create_thread(thread_id="t", user_id="u1").add_messages(
        [{"role": "user", "content": "I moved to Paris"}])
    [relation] = store.list_relations(target_record_id="old")
    assert relation.relation_type == "supersedes"
    old = store.get("fact", "old")
    assert old is not None and old.status.value == "invalid"  # superseded


# --- deletes wait for the work they would race --------------------------------------------
def test_delete_thread_waits_for_its_extraction(store: OracleDBMemoryStore) -> None:
    gate = Gate(memories(("late memory", "memory")))
    client = client_for(store, ScriptedLlm(gate), extraction_mode=BACKGROUND)
    thread = client.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": "hello"}])
    assert gate.entered.wait(10)
    result: list[int] = []
    deleter = threading.Thread(target=lambda: result.append(client.delete_thread("t")))
    deleter.start()
    deleter.join(0.5)
    assert deleter.is_alive() and result == []  # waiting for the extraction
    gate.release.set()
    deleter.join(10)
    assert result == [1]
    assert client.list_memories(user_id="u1") == []  # the late memory went with the thread


# --- background work runs as the user who queued it ---------------------------------------
def test_background_jobs_run_as_the_user_who_queued_them(dds: Any) -> None:
    """One client and one small pool shared by two end users, as a gateway runs it: each queued
    job runs as the user who queued it, after that user's request scope has ended."""
    from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext

    store_id = dds.new_store(vector_dim=None)
    seen: dict[str, str] = {}
    gate = threading.Event()

    def answer(call: ScriptedCall) -> str:
        user = "alice" if "from alice" in call.text else "bob"
        context = active_security_context()
        seen[user] = context.verified_username() if context is not None else "none"
        assert gate.wait(30)
        return memories((f"memory of {user}", "memory"))

    contexts = {user: dds.context(user) for user in ("alice", "bob")}
    with OracleMemoryEndUserSecurityContext(contexts["alice"]):
        store = OracleDBMemoryStore(None, dds.runtime_url, schema_policy="no_check",
                                    memory_store_id=store_id, schema_owner="oam_test_owner")
    client = client_for(store, ScriptedLlm(responder=answer), extraction_mode=BACKGROUND)
    try:
        for user in ("alice", "bob", "alice", "bob"):  # interleaved requests
            with OracleMemoryEndUserSecurityContext(contexts[user]):
                thread = client.create_thread(thread_id=f"{user}-{len(seen)}-{time.time_ns()}")
                thread.add_messages([{"role": "user", "content": f"hello from {user}"}])
        gate.set()  # every job runs after the request scope that queued it has ended
        client.wait_for_memory_extraction(timeout=20)
        assert seen == {"alice": "alice", "bob": "bob"}
        for user in ("alice", "bob"):
            with OracleMemoryEndUserSecurityContext(contexts[user]):
                mine = client.list_memories()
                assert [(m.content, m.user_id) for m in mine] == [(f"memory of {user}", user)] * 2
    finally:
        client.close()
        store.close()


def test_background_job_whose_context_is_refused_fails_closed(
        dds: Any, caplog: pytest.LogCaptureFixture) -> None:
    """A job queued inside alice's context whose context is refused by the time it runs (as a
    revoked application's would be) writes nothing; the message stays. Positive control: the
    job before it, with the valid context, writes its memory."""
    from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
    from oracleagentmemory.engines import create_end_user_security_context

    store_id = dds.new_store(vector_dim=None)
    gate = Gate(memories(("first memory", "memory")))
    context = dds.context("alice")
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(None, dds.runtime_url, schema_policy="no_check",
                                    memory_store_id=store_id, schema_owner="oam_test_owner")
        client = client_for(store, ScriptedLlm(gate, memories(("second memory", "memory"))),
                            extraction_mode=BACKGROUND)
        thread = client.create_thread(thread_id="t")
        thread.add_messages([{"role": "user", "content": "one"}])
        assert gate.entered.wait(10)  # the worker is busy with the first job
        [second] = thread.add_messages([{"role": "user", "content": "two"}])
    queued = client._background._pending[-1]
    # another application's credential on this login: the database refuses it
    queued.security = create_end_user_security_context(dds.other_app_token, ("alice", None))
    gate.release.set()
    client.wait_for_memory_extraction(timeout=20)
    assert "failed" in caplog.text
    with OracleMemoryEndUserSecurityContext(context):
        assert [m.content for m in client.list_memories()] == ["first memory"]
        assert thread.get_message(second).content == "two"
    client.close()
    store.close()


@pytest.mark.parametrize("shortener_works", [True, False])
def test_oversized_messages_are_shortened_by_the_model_for_prompts(
        store: OracleDBMemoryStore, shortener_works: bool) -> None:
    long_text = "I like tea. " + "blah " * 400 + "My sister is called Ana."

    def answer(call: ScriptedCall) -> str:
        if "Rewrite the message below" in call.text:
            excerpt = call.last_user_text
            assert len(excerpt) <= int(20 * 3.5)  # message_shortening_input_token_limit
            if not shortener_works:
                raise RuntimeError("model down")
            return "Likes tea; sister Ana."
        return memories()

    llm = ScriptedLlm(responder=answer)
    client = client_for(store, llm, extraction_mode=INLINE)
    thread = client.create_thread(thread_id="t", user_id="u1", max_message_token_length=10,
                                  message_shortening_input_token_limit=20)
    [message_id] = thread.add_messages([{"role": "user", "content": long_text}])
    extraction = llm.calls[-1].text
    assert "blah blah blah blah blah" not in extraction
    if shortener_works:
        assert "Likes tea; sister Ana." in extraction
    else:
        assert "I like tea." in extraction and "[...]" in extraction  # truncated instead
    assert thread.get_message(message_id).content == long_text  # stored content unchanged
