"""The public unit of work and memory getter (extensions of the spec the gateway relies on):
``client.transaction()`` / ``store.transaction()`` run a block's operations in one transaction,
and ``client.get_memory(id)`` answers one visible memory, on the embedded database and under
Deep Data Security."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from oracleagentmemory.apis.records import FactRecord, MemoryRecord
from oracleagentmemory.core import MemoryExtractionConfig, OracleAgentMemory, OracleDBMemoryStore
from oracleagentmemory.errors import RecordKeyError

T = TypeVar("T")
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)


class Stop(Exception):
    """Raised inside a block to end it with an error."""


@pytest.fixture
def client(store: OracleDBMemoryStore) -> Iterator[OracleAgentMemory]:
    memory = OracleAgentMemory(store=store, memory_extraction_config=NO_EXTRACTION)
    yield memory
    memory.close()


def from_another_thread(read: Callable[[], T]) -> T:
    """``read()`` in another thread with an empty context: outside this thread's transaction,
    on its own pooled session, so it sees only what has been committed."""
    with ThreadPoolExecutor(1) as executor:
        return executor.submit(contextvars.Context().run, read).result()


def content(client: OracleAgentMemory, memory_id: str) -> str | None:
    record = client.store.get("memory", memory_id)
    return None if record is None else str(record.content)


# --- the transaction --------------------------------------------------------------------------
def test_a_transaction_commits_all_of_its_operations_when_it_ends(
        client: OracleAgentMemory) -> None:
    client.add_memory("before", user_id="u1", memory_id="m0")
    with client.transaction():
        client.add_memory("added", user_id="u1", memory_id="m1")
        client.update_memory("m0", content="changed")
        # The block sees its own writes; another session sees none of them before the commit.
        assert content(client, "m1") == "added"
        assert from_another_thread(lambda: content(client, "m1")) is None
        assert from_another_thread(lambda: content(client, "m0")) == "before"
    assert from_another_thread(lambda: content(client, "m1")) == "added"
    assert from_another_thread(lambda: content(client, "m0")) == "changed"


def test_a_transaction_that_raises_stores_none_of_its_operations(
        client: OracleAgentMemory) -> None:
    client.add_memory("before", user_id="u1", memory_id="m0")
    with pytest.raises(Stop), client.transaction():
        client.add_memory("added", user_id="u1", memory_id="m1")
        client.update_memory("m0", content="changed")
        client.delete_memory("m0")
        raise Stop
    assert content(client, "m1") is None
    assert content(client, "m0") == "before"
    # Positive control: the same operations without the error are stored.
    with client.transaction():
        client.add_memory("added", user_id="u1", memory_id="m1")
        client.update_memory("m0", content="changed")
    assert (content(client, "m1"), content(client, "m0")) == ("added", "changed")


def test_a_nested_transaction_joins_the_outer_one(client: OracleAgentMemory) -> None:
    with pytest.raises(Stop), client.transaction():
        with client.transaction():
            client.add_memory("inner", user_id="u1", memory_id="m1")
        # The inner block ended without committing: it is part of the outer transaction.
        assert from_another_thread(lambda: content(client, "m1")) is None
        with client.store.transaction():  # the store's own block joins the client's too
            client.add_memory("store block", user_id="u1", memory_id="m2")
        raise Stop
    assert content(client, "m1") is None and content(client, "m2") is None


def test_the_store_transaction_is_the_one_the_client_uses(store: OracleDBMemoryStore) -> None:
    with pytest.raises(Stop), store.transaction():
        store.add(["a", "b"], "memory", record_ids=["s1", "s2"], user_ids="u1")
        raise Stop
    assert store.get("memory", "s1") is None and store.get("memory", "s2") is None
    with store.transaction():
        store.add(["a", "b"], "memory", record_ids=["s1", "s2"], user_ids="u1")
    assert {r.id for r in store.list("memory", user_id="u1")} == {"s1", "s2"}


# --- one memory by id -------------------------------------------------------------------------
def test_get_memory_returns_a_memory_of_any_memory_type(client: OracleAgentMemory) -> None:
    client.add_memory("The sky is blue", memory_type="fact", user_id="u1", memory_id="f1")
    client.add_memory("Likes tea", user_id="u1", memory_id="m1")
    fact = client.get_memory("f1")
    assert isinstance(fact, FactRecord)
    assert (fact.id, fact.content, fact.user_id) == ("f1", "The sky is blue", "u1")
    memory = asyncio.run(client.get_memory_async("m1"))
    assert isinstance(memory, MemoryRecord) and memory.content == "Likes tea"


def test_get_memory_raises_record_key_error_for_what_is_not_a_memory(
        client: OracleAgentMemory) -> None:
    client.create_thread(thread_id="t1", user_id="u1")
    for missing in ("nothing", "t1"):  # no record at all, and a record that is no memory
        with pytest.raises(RecordKeyError) as raised:
            client.get_memory(missing)
        assert (raised.value.argument, raised.value.record_id) == ("memory_id", missing)
        assert isinstance(raised.value, KeyError)


# --- under Deep Data Security -----------------------------------------------------------------
def runtime_client(store: OracleDBMemoryStore) -> OracleAgentMemory:
    return OracleAgentMemory(store=store, memory_extraction_config=NO_EXTRACTION)


def test_get_memory_answers_only_the_callers_memories_under_deep_data_security(
        dds: Any) -> None:
    store_id = dds.new_store()
    for user in ("alice", "bob"):
        with dds.runtime_store(store_id, user) as store, runtime_client(store) as client:
            client.add_memory(f"memory of {user}", memory_id=f"{user}-m")
    with dds.runtime_store(store_id, "alice") as store, runtime_client(store) as alice:
        # Positive control: her own memory is answered.
        assert alice.get_memory("alice-m").content == "memory of alice"
        with pytest.raises(RecordKeyError) as raised:
            alice.get_memory("bob-m")
        assert raised.value.argument == "memory_id"
    with dds.runtime_store(store_id, "bob") as store, runtime_client(store) as bob:
        assert bob.get_memory("bob-m").content == "memory of bob"


def test_a_transaction_runs_as_its_end_user_under_deep_data_security(dds: Any) -> None:
    store_id = dds.new_store()
    with dds.runtime_store(store_id, "alice") as store, runtime_client(store) as alice:
        with pytest.raises(Stop), alice.transaction():
            alice.add_memory("lost", memory_id="a-lost")
            raise Stop
        with alice.transaction():
            alice.add_memory("kept", memory_id="a-kept")
            assert alice.get_memory("a-kept").user_id == "alice"
        assert alice.get_memory("a-kept").content == "kept"
        with pytest.raises(RecordKeyError):
            alice.get_memory("a-lost")
    with dds.runtime_store(store_id, "bob") as store, runtime_client(store) as bob, \
            bob.transaction(), pytest.raises(RecordKeyError):
        bob.get_memory("a-kept")
