"""The agent-memory client (``OracleAgentMemory``, ``OracleThread``) on the embedded database:
the client page's examples, thread messages, memories, profiles, relations, search scopes and the
end-user context rules."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from oracleagentmemory.apis import Message, TextContent
from oracleagentmemory.apis.llms import ILlm, LlmResponse
from oracleagentmemory.apis.reranker import IReranker, RerankResponse, RerankResponseResult
from oracleagentmemory.core import (
    MemoryExtractionConfig,
    OracleAgentMemory,
    OracleDBMemoryStore,
    OracleThread,
    SchemaPolicy,
)
from oracleagentmemory.core._tokens import estimate_tokens
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.searchconfig import PruningMemorySearchConfig, TopKMemorySearchConfig
from oracleagentmemory.core.searchresult import OracleSearchResult
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    RecordKeyError,
)

StoreFactory = Callable[..., OracleDBMemoryStore]
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)


class SilentLlm(ILlm):
    """A model that is never expected to be called here."""

    def generate(self, prompt: Any, *, response_json_schema: Any = None,
                 **kwargs: Any) -> LlmResponse:
        raise AssertionError("the LLM must not be called")

    async def generate_async(self, prompt: Any, *, response_json_schema: Any = None,
                             **kwargs: Any) -> LlmResponse:
        raise AssertionError("the LLM must not be called")


@pytest.fixture
def client(make_store: StoreFactory) -> Iterator[OracleAgentMemory]:
    store = make_store(embedder=HashingEmbedder(64))
    memory = OracleAgentMemory(store=store, memory_extraction_config=NO_EXTRACTION)
    yield memory
    memory.close()


# --- construction -----------------------------------------------------------------------------
def test_client_needs_a_store_or_a_connection(make_store: StoreFactory, pg_url: str) -> None:
    with pytest.raises(InvalidArgumentError, match="connection"):
        OracleAgentMemory()
    store = make_store()
    with pytest.raises(InvalidArgumentError, match="not both"):
        OracleAgentMemory(store=store, connection=pg_url)
    with pytest.raises(InvalidArgumentError, match="schema_policy"):
        OracleAgentMemory(store=store, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    with pytest.raises(InvalidArgumentTypeError, match="store"):
        OracleAgentMemory(store="not a store")
    with pytest.raises(TypeError):
        OracleAgentMemory(store, memory_extraction_config=NO_EXTRACTION)  # type: ignore[call-arg]


def test_client_builds_its_store_from_a_connection_and_closes_it(pg_url: str) -> None:
    client = OracleAgentMemory(connection=pg_url, embedder=HashingEmbedder(32),
                               schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                               memory_store_id="client_own", memory_extraction_config=NO_EXTRACTION)
    assert isinstance(client.store, OracleDBMemoryStore)
    thread = client.create_thread(thread_id="c-own", user_id="u1")
    assert client.get_thread("c-own").user_id == "u1"
    client.delete_thread(thread.thread_id)
    client.close()
    client.close()  # idempotent
    asyncio.run(client.close_async())


def test_extraction_needs_an_llm(make_store: StoreFactory) -> None:
    store = make_store()
    without_llm = OracleAgentMemory(store=store)
    with pytest.raises(InvalidArgumentError, match="llm"):
        without_llm.create_thread(thread_id="t1", user_id="u1")
    assert store.get("thread", "t1") is None  # refused before anything is written
    # positive controls: extraction off for that thread, or a model given
    thread = without_llm.create_thread(thread_id="t1", user_id="u1",
                                       memory_extraction_config=NO_EXTRACTION)
    assert thread.thread_id == "t1"
    assert without_llm.get_thread("t1").settings.extraction.extract_memories is False
    with_llm = OracleAgentMemory(store=store, llm=SilentLlm())
    assert with_llm.create_thread(thread_id="t2", user_id="u1").settings.extraction \
        .extract_memories is True


# --- the client page's examples (extraction off: no model is needed) ---------------------------
def test_spec_profile_examples(client: OracleAgentMemory) -> None:
    assert client.add_agent("a1", "Support assistant", metadata={"source": "catalog"}) == "a1"
    assert client.add_user("u1", "Prefers concise answers.", metadata={"source": "crm"}) == "u1"
    assert [r.id for r in client.list_agents(metadata_filter={"source": "catalog"})] == ["a1"]
    assert [r.id for r in client.list_users(metadata_filter={"source": "crm"})] == ["u1"]
    assert client.add_agent("a-delete", "Support assistant") == "a-delete"
    assert client.delete_agent("a-delete") == 1
    assert client.add_user("u-delete", "Prefers concise answers.") == "u-delete"
    assert client.delete_user("u-delete") == 1
    assert client.delete_user("u-delete") == 0


def test_spec_profile_examples_async(client: OracleAgentMemory) -> None:
    async def main() -> list[str]:
        await client.add_agent_async("a1", "Support assistant", metadata={"source": "catalog"})
        records = await client.list_agents_async(metadata_filter={"source": "catalog"})
        return [record.id for record in records]

    assert asyncio.run(main()) == ["a1"]
    assert asyncio.run(client.delete_agent_async("a1")) == 1


def test_spec_thread_examples(client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="c1", user_id="u1")
    assert thread.thread_id == "c1"
    message_id = thread.add_messages([{"role": "user", "content": "Hello"}])[0]
    assert [r.id for r in client.list_messages(thread_id="c1", limit=10)] == [message_id]
    assert [r.thread_id for r in client.list_threads(user_id="u1", limit=10)] == ["c1"]
    created = client.create_thread(thread_id="c2", user_id="u1")
    assert client.get_thread("c2").user_id == created.user_id == "u1"
    updated = client.update_thread("c1", metadata={"flags": {"vip": True}},
                                   message_shortening_input_token_limit=12_000)
    assert updated.message_shortening_input_token_limit == 12000
    reopened = client.get_thread("c1")
    assert reopened.metadata == {"flags": {"vip": True}}
    assert reopened.message_shortening_input_token_limit == 12000
    assert reopened.max_message_token_length == 15_000  # not given: the default
    assert client.get_thread("c1", max_message_token_length=99).max_message_token_length == 99
    assert client.get_thread("c1").max_message_token_length == 15_000  # per call only
    deletable = client.create_thread(thread_id="c-delete")
    assert client.delete_thread(deletable.thread_id) == 1
    with pytest.raises(KeyError):
        client.get_thread("c-delete")


def test_spec_thread_examples_async(client: OracleAgentMemory) -> None:
    async def main() -> bool:
        thread = await client.create_thread_async(thread_id="c1", user_id="u1")
        message_ids = await thread.add_messages_async([{"role": "user", "content": "Hello"}])
        records = await client.list_messages_async(thread_id="c1", limit=10)
        loaded = await client.get_thread_async("c1")
        return [r.id for r in records] == message_ids and loaded.user_id == "u1"

    assert asyncio.run(main())
    assert asyncio.run(client.delete_thread_async("c1")) == 1


def test_spec_memory_examples(client: OracleAgentMemory) -> None:
    assert client.add_memory("User likes pizza.", user_id="u1", memory_id="mem-1") == "mem-1"
    assert [r.id for r in client.list_memories(user_id="u1", limit=10)] == ["mem-1"]
    memory_id = client.add_memory("Temporary memory", memory_id="mem-delete")
    assert client.delete_memory(memory_id) == 1
    assert client.delete_memory(memory_id) == 0
    new_id = asyncio.run(client.add_memory_async("Original memory"))
    assert asyncio.run(client.update_memory_async(new_id, content="Updated memory")) == new_id
    record = client.store.get("memory", new_id)
    assert record is not None and record.content == "Updated memory"


# --- threads and their messages ---------------------------------------------------------------
def test_messages_round_trip_in_order_with_parts_and_metadata(client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="t", user_id="u1", agent_id="a1")
    ids = thread.add_messages([
        {"role": "user", "content": "first", "metadata": {"n": 1}},
        Message("assistant", [TextContent("second"), TextContent("part")], id="m-2"),
        {"role": "user", "content": [{"type": "text", "text": "third"}]},
    ])
    assert ids[1] == "m-2"
    messages = thread.get_messages()
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert messages[0].content == "first" and messages[0].metadata == {"n": 1}
    assert [p.text for p in messages[1].content] == ["second", "part"]  # type: ignore[union-attr]
    assert [m.id for m in thread.get_messages(start=1)] == ids[1:]
    assert [m.id for m in thread.get_messages(start=0, end=2)] == ids[:2]
    assert [m.id for m in thread.get_messages(start=1, end=-1)] == ids[1:]
    stored = client.list_messages(thread_id="t")
    assert {(m.user_id, m.agent_id) for m in stored} == {("u1", "a1")}
    shared = thread.add_messages([{"role": "user", "content": "x"}, {"role": "user",
                                  "content": "y"}], metadata={"batch": True})
    assert [thread.get_message(i).metadata for i in shared] == [{"batch": True}] * 2


@pytest.mark.parametrize("bad, error", [
    ([], InvalidArgumentError), ("hello", InvalidArgumentTypeError),
    ([{"content": "no role"}], InvalidArgumentError),
    ([{"role": "user", "content": "x", "extra": 1}], InvalidArgumentError),
    ([{"role": "user", "content": [{"type": "video"}]}], InvalidArgumentError),
    ([{"role": "", "content": "x"}], InvalidArgumentError),
    ([42], InvalidArgumentTypeError),
])
def test_malformed_messages_are_refused_naming_the_field(
        client: OracleAgentMemory, bad: Any, error: type[Exception]) -> None:
    thread = client.create_thread(thread_id="t", user_id="u1")
    with pytest.raises(error):
        thread.add_messages(bad)
    assert thread.get_messages() == []


def test_a_thread_reaches_only_its_own_messages(client: OracleAgentMemory) -> None:
    mine = client.create_thread(thread_id="mine", user_id="u1")
    other = client.create_thread(thread_id="other", user_id="u1")
    [own_id] = mine.add_messages([{"role": "user", "content": "mine"}])
    [other_id] = other.add_messages([{"role": "user", "content": "theirs"}])
    with pytest.raises(KeyError):
        mine.get_message(other_id)
    with pytest.raises(RecordKeyError):
        mine.update_message(other_id, content="hijacked")
    assert mine.delete_message(other_id) == 0
    assert other.get_message(other_id).content == "theirs"
    # positive controls on the thread's own message
    assert mine.update_message(own_id, content="edited", metadata={"e": 1}) == own_id
    assert mine.get_message(own_id).content == "edited"
    assert mine.get_message(own_id).metadata == {"e": 1}
    assert mine.delete_message(own_id) == 1
    with pytest.raises(KeyError, match="no message"):
        mine.get_message(own_id)


def test_update_thread_keeps_owner_and_refuses_unknown_threads(client: OracleAgentMemory) -> None:
    client.create_thread(thread_id="t", user_id="u1", agent_id="a1", metadata={"a": 1})
    thread = client.update_thread("t", metadata={"b": 2})
    assert (thread.user_id, thread.agent_id, thread.metadata) == ("u1", "a1", {"b": 2})
    assert client.update_thread("t").metadata == {"b": 2}  # nothing given: nothing changes
    with pytest.raises(KeyError):
        client.update_thread("missing", metadata={})
    with pytest.raises(InvalidArgumentTypeError, match="unexpected"):
        client.update_thread("t", colour="blue")


def test_store_updates_thread_metadata(make_store: StoreFactory) -> None:
    store = make_store()
    store.add([None], "thread", record_ids=["t"], user_ids=["u1"])
    assert store.update("thread", "t", metadata={"k": "v"}) == 1
    record = store.get("thread", "t")
    assert record is not None and record.metadata == {"k": "v"}


# --- memories and relations -------------------------------------------------------------------
def test_memory_types_update_and_scope_immutability(client: OracleAgentMemory) -> None:
    fact = client.add_memory("The sky is blue", memory_type="fact", user_id="u1",
                             metadata={"a": 1, "b": 2})
    with pytest.raises(InvalidArgumentError, match="memory_type"):
        client.add_memory("x", memory_type="note")
    client.update_memory(fact, metadata={"c": 3})
    record = client.store.get("fact", fact)
    assert record.metadata == {"c": 3} and record.content == "The sky is blue"
    assert record.user_id == "u1"
    with pytest.raises(TypeError):
        client.update_memory(fact, user_id="u2")
    with pytest.raises(KeyError):
        client.update_memory("missing", content="x")
    assert {r.id for r in client.list_memories(user_id="u1")} == {fact}


def test_links_between_memories(client: OracleAgentMemory) -> None:
    old = client.add_memory("Old address", user_id="u1", thread_id="t1")
    new = client.add_memory("New address", memory_id_to_link=old, link_type="supersedes",
                            link_id="rel-1")
    record = client.store.get("memory", new)
    assert (record.user_id, record.thread_id) == ("u1", "t1")  # inherited from the target
    assert client.store.get("memory", old).status.value == "invalid"
    assert client.update_record_link("rel-1", relation_type="supports") == 1
    assert client.store.get("memory", old).status.value == "valid"
    fact = client.add_memory("Fact", memory_type="fact", user_id="u1")
    rel = client.link_records(fact, "fact", old, "memory", "supports")
    assert client.delete_record_link(relation_id=rel) == 1
    assert client.delete_record_link(relation_id="rel-1") == 1
    assert client.delete_record_link(relation_id="rel-1") == 0


# --- search -----------------------------------------------------------------------------------
def test_client_search_needs_an_exact_user(client: OracleAgentMemory) -> None:
    client.add_memory("User likes pizza", user_id="u1", memory_id="p1")
    client.add_memory("User likes pasta", user_id="u2", memory_id="p2")
    with pytest.raises(InvalidArgumentError, match="user_id"):
        client.search("pizza")
    with pytest.raises(InvalidArgumentError, match="exact_user_match"):
        client.search("pizza", user_id="u1", exact_user_match=False)
    with pytest.raises(InvalidArgumentError, match="max_results"):
        client.search("pizza", user_id="u1", max_results=0)
    results = client.search("pizza", user_id="u1")
    assert [r.id for r in results] == ["p1"]
    assert isinstance(results[0], OracleSearchResult)
    assert "User likes pizza" in results[0].formatted_content
    assert [r.id for r in asyncio.run(client.search_async("pasta", user_id="u2"))] == ["p2"]
    assert client.search("pizza", user_id=None) == []  # only records without a user


def test_thread_search_defaults_to_its_user_and_agent(client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="t", user_id="u1", agent_id="a1")
    thread.add_memory("Likes green tea", memory_id="mine")
    client.add_memory("Likes green tea too", user_id="u2", agent_id="a1", memory_id="theirs")
    client.add_memory("Likes green tea as well", user_id="u1", agent_id="a2", memory_id="agent2")
    assert client.store.get("memory", "mine").thread_id == "t"
    assert [r.id for r in thread.search("green tea", record_types=["memory"])] == ["mine"]
    broad = thread.search("green tea", record_types=["memory"], exact_agent_match=False)
    assert {r.id for r in broad} == {"mine", "agent2"}


# --- end-user security context ----------------------------------------------------------------
def test_no_check_client_infers_the_end_user_and_sees_only_their_rows(dds: Any) -> None:
    store_id = dds.new_store(vector_dim=None)
    with dds.runtime_store(store_id, "alice") as store:
        alice = OracleAgentMemory(store=store, memory_extraction_config=NO_EXTRACTION)
        thread = alice.create_thread(thread_id="alice-t")
        assert thread.user_id == "alice"
        thread.add_messages([{"role": "user", "content": "hi from alice"}])
        alice.add_memory("alice memory", memory_id="alice-m")
        assert store.get("memory", "alice-m").user_id == "alice"
        assert [t.id for t in alice.list_threads()] == ["alice-t"]
    with dds.runtime_store(store_id, "bob") as store:
        bob = OracleAgentMemory(store=store, memory_extraction_config=NO_EXTRACTION)
        with pytest.raises(KeyError):
            bob.get_thread("alice-t")
        assert bob.list_messages(thread_id="alice-t") == []
        assert bob.delete_memory("alice-m") == 0
        assert bob.delete_thread("alice-t") == 0
        own = bob.create_thread(thread_id="bob-t")
        assert isinstance(bob.get_thread("bob-t"), OracleThread) and own.user_id == "bob"
    with dds.runtime_store(store_id, "alice") as store:  # alice's rows survived bob's attempts
        alice = OracleAgentMemory(store=store, memory_extraction_config=NO_EXTRACTION)
        assert len(alice.get_thread("alice-t").get_messages()) == 1
        assert [m.id for m in alice.list_memories()] == ["alice-m"]


def test_readme_client_example_runs(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's client block runs as written (on the test server instead of the per-user
    embedded one)."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The agent-memory client", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    assert "url = embedded.url()" in code
    exec(code.replace("url = embedded.url()", f"url = {pg_url!r}"), {})  # noqa: S102
    assert "User likes pizza" in capsys.readouterr().out


def test_sequence_numbers_are_never_reused(client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="t", user_id="u1")
    first = thread.add_messages([{"role": "user", "content": f"m{n}"} for n in range(3)])
    assert thread.delete_message(first[-1]) == 1  # the newest
    [later] = thread.add_messages([{"role": "user", "content": "after the delete"}])
    seq = {r.id: r.seq_no for r in client.list_messages(thread_id="t")}
    assert [seq[i] for i in first[:2]] == [0, 1]
    assert seq[later] == 3  # not 2, the deleted message's number
    # a thread reopened by another client object continues after it too
    other = OracleAgentMemory(store=client.store, memory_extraction_config=NO_EXTRACTION)
    [next_id] = other.get_thread("t").add_messages([{"role": "user", "content": "x"}])
    assert client.store.get("message", next_id).seq_no == 4


def test_end_user_appends_number_their_own_thread(dds: Any) -> None:
    store_id = dds.new_store(vector_dim=None)
    with dds.runtime_store(store_id, "alice") as store:
        alice = OracleAgentMemory(store=store, memory_extraction_config=NO_EXTRACTION)
        thread = alice.create_thread(thread_id="t")
        ids = thread.add_messages([{"role": "user", "content": "a"},
                                   {"role": "user", "content": "b"}])
        thread.delete_message(ids[1])
        [again] = thread.add_messages([{"role": "user", "content": "c"}])
        assert store.get("message", again).seq_no == 2


# --- search configurations through the client -------------------------------------------------
class ReversingReranker(IReranker):
    """Scores documents in reverse order, recording what it was asked."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    async def rerank_async(self, query: str, documents: list[str],
                           **kwargs: Any) -> RerankResponse:
        self.seen.append(documents)
        return RerankResponse([RerankResponseResult(n, float(n)) for n in range(len(documents))])


def _foods(client: OracleAgentMemory) -> None:
    for n, food in enumerate(["pizza", "pizza pasta", "pizza pasta soup", "pizza pasta soup tea"]):
        client.add_memory(f"User likes {food}", user_id="u1", memory_id=f"f{n}")


def test_token_budgets_through_client_search(client: OracleAgentMemory) -> None:
    _foods(client)
    everything = client.search("pizza", user_id="u1", record_types=["memory"])
    assert len(everything) == 4
    first_cost = estimate_tokens(everything[0].formatted_content)
    assert client.search("pizza", user_id="u1", token_budget=first_cost - 1) == []
    soft = client.search("pizza", user_id="u1", soft_token_budget=first_cost + 1)
    assert [r.id for r in soft] == [r.id for r in everything[:2]]  # through the first crossing
    assert len(client.search("pizza", user_id="u1", token_budget=0)) == 4  # 0 disables it


def test_top_k_config_with_a_reranker(make_store: StoreFactory) -> None:
    reranker = ReversingReranker()
    client = OracleAgentMemory(
        store=make_store(embedder=HashingEmbedder(64)), memory_extraction_config=NO_EXTRACTION,
        search_config=TopKMemorySearchConfig(reranker=reranker, reranker_max_candidates=2,
                                             max_results=3))
    _foods(client)
    plain = client.store.search("pizza", 3, user_id="u1", exact_user_match=True)
    results = client.search("pizza", user_id="u1")
    assert len(results) == 3  # max_results retrieved
    assert len(reranker.seen[0]) == 2  # only the first two were reranked
    assert [r.id for r in results] == [plain[1][0].id, plain[0][0].id, plain[2][0].id]
    assert len(client.search("pizza", user_id="u1", max_results=1)) == 1


def test_pruner_llm_prunes_client_search(make_store: StoreFactory) -> None:
    def judge(call: Any) -> str:
        import re as _re
        numbers = [int(n) for n in _re.findall(r"\[(\d+)\]", call.text)]
        return json.dumps({"relevant": numbers[:1]})

    from scripted_llm import ScriptedLlm
    client = OracleAgentMemory(store=make_store(embedder=HashingEmbedder(64)),
                               memory_extraction_config=NO_EXTRACTION,
                               pruner_llm=ScriptedLlm(responder=judge))
    assert isinstance(client._search_config, PruningMemorySearchConfig)
    _foods(client)
    pruned = client.search("pizza", user_id="u1", max_results=4)
    assert 1 <= len(pruned) < 4


def test_client_and_thread_implement_the_contracts(client: OracleAgentMemory) -> None:
    from oracleagentmemory.apis import IAgentMemory, IThread, MemoryLink

    thread = client.create_thread(thread_id="t", user_id="u1")
    assert isinstance(client, IAgentMemory) and isinstance(thread, IThread)
    missing = [name for name in ("add_memory_async", "search_async", "get_summary_async",
                                 "get_context_card_async", "list_images_async")
               if not asyncio.iscoroutinefunction(getattr(thread if "summary" in name or
                                                          "card" in name else client, name))]
    assert missing == []
    link = MemoryLink("r", "a", "fact", "b", "memory", "supports", "is_supported_by", None,
                      None, "2026-01-01T00:00:00+00:00")
    assert (link.source_memory_id, link.target_memory_id, link.link_type) == ("a", "b",
                                                                              "supports")


def test_a_standalone_thread_over_a_store(make_store: StoreFactory) -> None:
    """``OracleThread(store, ...)`` as the reference has it: creates the thread, or opens the
    stored one keeping its saved settings."""
    store = make_store(embedder=HashingEmbedder(64))
    thread = OracleThread(store, thread_id="solo", user_id="u1", max_message_token_length=777)
    assert store.get("thread", "solo") is not None
    thread.add_messages([{"role": "user", "content": "hello"}])
    assert thread.settings.extraction.extract_memories is False  # no llm: no extraction
    again = OracleThread(store, thread_id="solo")
    assert (again.user_id, again.max_message_token_length) == ("u1", 777)
    assert [m.content for m in again.get_messages()] == ["hello"]
    assert OracleThread(store).thread_id != "solo"  # a new one, id generated
    client = OracleAgentMemory(store=store, memory_extraction_config=NO_EXTRACTION)
    with pytest.raises(InvalidArgumentError, match="client"):
        OracleThread(make_store(), client=client)
