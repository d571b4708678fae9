"""The client page's examples (spec 003), each run as written.

Every example builds its client as the page does, ``OracleAgentMemory(connection=db_pool,
embedder=embedder, llm=llm)``: ``db_pool`` is a real ``psycopg_pool`` pool whose sessions work
in a schema of their own (a fresh default store per test), ``embedder`` the local hashing
embedder and ``llm`` a scripted model that finds no memories (the examples show API results,
not extraction; extraction has its own tests). Each test asserts the output the page shows,
then the stored state it implies.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from itertools import count

import anyio
import psycopg
import pytest
from oracleagentmemory.core import (
    BackgroundExtractionQueueFullBehavior,
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    OracleAgentMemory,
    OracleDBMemoryStore,
    SchemaPolicy,
)
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from psycopg import sql
from psycopg_pool import ConnectionPool
from scripted_llm import ScriptedLlm

_schemas = count()


@pytest.fixture
def db_pool(pg_url: str) -> Iterator[ConnectionPool]:
    """A pool whose sessions use a schema of their own, holding a fresh default store."""
    schema = f"spec003_{next(_schemas)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    pool = ConnectionPool(pg_url, min_size=1, max_size=4, open=True,
                          kwargs={"options": f"-c search_path={schema},public"})
    OracleDBMemoryStore(HashingEmbedder(), pool,
                        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY).close()
    yield pool
    pool.close()


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def llm() -> ScriptedLlm:
    return ScriptedLlm(json.dumps({"memories": []}), repeat_last=True)


@pytest.fixture
def client(db_pool: ConnectionPool, embedder: HashingEmbedder,
           llm: ScriptedLlm) -> Iterator[OracleAgentMemory]:
    memory = OracleAgentMemory(connection=db_pool, embedder=embedder, llm=llm)
    yield memory
    memory.close()


def test_construction_examples(db_pool: ConnectionPool, embedder: HashingEmbedder,
                               llm: ScriptedLlm) -> None:
    client = OracleAgentMemory(connection=db_pool, embedder=embedder, llm=llm)
    read_only_client = OracleAgentMemory(
        connection=db_pool, embedder=embedder,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False))
    pruned_search_client = OracleAgentMemory(
        connection=db_pool, embedder=embedder,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
        pruner_llm=llm)
    # the read-only client needs no model; the default client needs one and has it
    assert read_only_client.create_thread(thread_id="r1").settings.extraction \
        .extract_memories is False
    assert client.create_thread(thread_id="c1").settings.extraction.extract_memories is True
    assert pruned_search_client.search("x", user_id="u1") == []
    for each in (client, read_only_client, pruned_search_client):
        each.close()


def test_add_agent(client: OracleAgentMemory) -> None:
    assert client.add_agent("a1", "Support assistant", metadata={"source": "catalog"}) == "a1"
    assert asyncio.run(client.add_agent_async("a2", "Support assistant",
                                              metadata={"source": "catalog"})) == "a2"
    assert [r.content for r in client.list_agents()] == ["Support assistant"] * 2


def test_add_memory(client: OracleAgentMemory) -> None:
    memory_id = client.add_memory("User likes pizza", memory_id="mem-1")
    assert memory_id == "mem-1"
    memory_id = asyncio.run(client.add_memory_async("User likes pizza", memory_id="mem-2"))
    assert memory_id == "mem-2"
    assert client.store.get("memory", "mem-1").content == "User likes pizza"


def test_add_user(client: OracleAgentMemory) -> None:
    assert client.add_user("u1", "Prefers concise answers.", metadata={"source": "crm"}) == "u1"
    assert asyncio.run(client.add_user_async("u2", "Prefers concise answers.",
                                             metadata={"source": "crm"})) == "u2"


def test_close(db_pool: ConnectionPool, embedder: HashingEmbedder) -> None:
    client = OracleAgentMemory(
        connection=db_pool, embedder=embedder, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False))
    client.close()
    asyncio.run(client.close_async())
    assert not db_pool.closed  # a caller's pool stays open


def test_create_thread(client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="c1", user_id="u1")
    assert thread.thread_id == "c1"
    thread = asyncio.run(client.create_thread_async(thread_id="c2", user_id="u1"))
    assert thread.thread_id == "c2"


def test_delete_agent_and_user(client: OracleAgentMemory) -> None:
    assert client.add_agent("a-delete", "Support assistant") == "a-delete"
    assert client.delete_agent("a-delete") == 1
    assert asyncio.run(client.add_agent_async("a-delete", "Support assistant")) == "a-delete"
    assert asyncio.run(client.delete_agent_async("a-delete")) == 1
    assert client.add_user("u-delete", "Prefers concise answers.") == "u-delete"
    assert client.delete_user("u-delete") == 1
    assert asyncio.run(client.add_user_async("u-delete", "Prefers concise answers.")) \
        == "u-delete"
    assert asyncio.run(client.delete_user_async("u-delete")) == 1
    assert client.list_users() == [] and client.list_agents() == []


def test_delete_memory(client: OracleAgentMemory) -> None:
    memory_id = client.add_memory("Temporary memory", memory_id="mem-delete")
    assert client.delete_memory(memory_id) == 1
    memory_id = asyncio.run(client.add_memory_async("Temporary memory",
                                                    memory_id="mem-delete"))
    assert asyncio.run(client.delete_memory_async(memory_id)) == 1


def test_delete_thread(client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="c-delete")
    assert client.delete_thread(thread.thread_id) == 1
    thread = asyncio.run(client.create_thread_async(thread_id="c-delete"))
    assert asyncio.run(client.delete_thread_async(thread.thread_id)) == 1


def test_get_thread(client: OracleAgentMemory) -> None:
    client.create_thread(thread_id="c2", user_id="u1")
    loaded = client.get_thread("c2")
    assert loaded.user_id == "u1"
    asyncio.run(client.create_thread_async(thread_id="c3", user_id="u1"))
    loaded = asyncio.run(client.get_thread_async("c3"))
    assert loaded.user_id == "u1"


def test_links(client: OracleAgentMemory) -> None:
    client.add_memory("Memory", memory_id="memory-1", user_id="u1")
    client.add_memory("Fact", memory_type="fact", memory_id="fact-1", user_id="u1")
    relation_id = client.link_records("fact-1", "fact", "memory-1", "memory", "supports")
    assert isinstance(relation_id, str)
    assert client.update_record_link(relation_id, relation_type="supports") == 1
    assert client.delete_record_link(relation_id=relation_id) == 1


def test_list_agents_and_users(client: OracleAgentMemory) -> None:
    assert client.add_agent("a1", "Support assistant", metadata={"source": "catalog"}) == "a1"
    assert [r.id for r in client.list_agents(metadata_filter={"source": "catalog"})] == ["a1"]
    assert client.add_user("u1", "Prefers concise answers.", metadata={"source": "crm"}) == "u1"
    assert [r.id for r in client.list_users(metadata_filter={"source": "crm"})] == ["u1"]

    async def main() -> list[str]:
        await client.add_agent_async("a2", "Support assistant", metadata={"source": "x"})
        records = await client.list_agents_async(metadata_filter={"source": "x"})
        users = await client.list_users_async(metadata_filter={"source": "crm"})
        return [record.id for record in records + users]

    assert anyio.run(main) == ["a2", "u1"]


def test_list_memories(client: OracleAgentMemory) -> None:
    assert client.add_memory("User likes pizza.", user_id="u1", memory_id="mem-1") == "mem-1"
    assert [record.id for record in client.list_memories(user_id="u1", limit=10)] == ["mem-1"]

    async def main() -> list[str]:
        await client.add_memory_async("User likes pizza.", user_id="u2", memory_id="mem-2")
        records = await client.list_memories_async(user_id="u2", limit=10)
        return [record.id for record in records]

    assert anyio.run(main) == ["mem-2"]


def test_list_messages(client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="c1", user_id="u1")
    message_id = thread.add_messages([{"role": "user", "content": "Hello"}])[0]
    assert [record.id for record in client.list_messages(thread_id="c1", limit=10)] \
        == [message_id]

    async def main() -> bool:
        thread = await client.create_thread_async(thread_id="c2", user_id="u1")
        message_ids = await thread.add_messages_async([{"role": "user", "content": "Hello"}])
        records = await client.list_messages_async(thread_id="c2", limit=10)
        return [record.id for record in records] == message_ids

    assert anyio.run(main) is True


def test_list_threads(client: OracleAgentMemory) -> None:
    assert client.create_thread(thread_id="c1", user_id="u1").thread_id == "c1"
    assert [record.thread_id for record in client.list_threads(user_id="u1", limit=10)] \
        == ["c1"]

    async def main() -> list[str | None]:
        await client.create_thread_async(thread_id="c2", user_id="u2")
        records = await client.list_threads_async(user_id="u2", limit=10)
        return [record.thread_id for record in records]

    assert anyio.run(main) == ["c2"]


def test_update_memory_async(client: OracleAgentMemory) -> None:
    memory_id = asyncio.run(client.add_memory_async("Original memory"))
    assert (asyncio.run(client.update_memory_async(memory_id, content="Updated memory"))
            == memory_id) is True
    assert client.store.get("memory", memory_id).content == "Updated memory"


def test_update_thread(client: OracleAgentMemory) -> None:
    client.create_thread(thread_id="c1", user_id="u1")
    updated = client.update_thread("c1", metadata={"flags": {"vip": True}},
                                   message_shortening_input_token_limit=12_000)
    assert updated.message_shortening_input_token_limit == 12000
    assert client.get_thread("c1").metadata == {"flags": {"vip": True}}
    again = asyncio.run(client.update_thread_async("c1", message_shortening_input_token_limit=9))
    assert again.message_shortening_input_token_limit == 9


def test_wait_for_memory_extraction(db_pool: ConnectionPool, embedder: HashingEmbedder) -> None:
    client = OracleAgentMemory(
        connection=db_pool, embedder=embedder,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False))
    client.wait_for_memory_extraction(timeout=10)
    asyncio.run(client.wait_for_memory_extraction_async(timeout=10))


def test_config_examples() -> None:
    config = ImageInputLimitConfig(max_raw_image_bytes=16 * 1024 * 1024,
                                   max_images_per_llm_request=200)
    assert config.max_raw_image_bytes == 16 * 1024 * 1024
    extraction = MemoryExtractionConfig(
        extract_memories=True,
        memory_extraction_image_context=MemoryExtractionImageContext.CAPTION,
        extraction_mode=MemoryExtractionMode.BACKGROUND,
        memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
        memory_link_extraction_token_limit=8_000,
    )
    assert extraction.memory_link_extraction_token_limit == 8000
    assert BackgroundExtractionQueueFullBehavior("WAIT_THEN_RAISE").value == "WAIT_THEN_RAISE"


def test_thread_examples(client: OracleAgentMemory) -> None:
    """The thread examples the reference's docstrings show (``c4`` with a summary-enabled
    extraction config, a stored message read back, a message of another thread not deleted)."""
    thread = client.create_thread(thread_id="c4", memory_extraction_config=MemoryExtractionConfig(
        enable_context_summary=True))
    assert len(thread.add_messages([{"role": "user", "content": "I love pizza."}])) == 1
    assert len(thread.add_messages([{"role": "user", "content": "Stored message example"}])) == 1
    messages = thread.get_messages()
    assert messages[-1].content == "Stored message example"
    assert thread.delete_message("not-a-message") == 0
    client.wait_for_memory_extraction(timeout=10)
    assert bool(thread.get_summary().content) is True

