"""``older_than=``: keyset pages of the SDK's list calls (an extension of the spec).

Records page by ``(timestamp, id)`` and relations by ``(created_at, id)``, ids in code-point
order on every engine (``"B" < "a"``, whatever the database's collation), so paging a list to
its end yields each item once, in order, however the items' times tie or were backdated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

import pytest
from conftest import StoreFactory
from oracleagentmemory.apis import OlderThan, RecordRelation
from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.memoryextraction import MemoryExtractionConfig
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

T = TypeVar("T")
NOON = "2026-01-01T12:00:00+00:00"


@pytest.fixture
def client(make_store: StoreFactory) -> Iterator[OracleAgentMemory]:
    memory = OracleAgentMemory(store=make_store(embedder=HashingEmbedder(64)),
                               memory_extraction_config=MemoryExtractionConfig(
                                   extract_memories=False))
    yield memory
    memory.close()


def every_page(fetch: Callable[[OlderThan], list[T]], position: Callable[[T], OlderThan]
               ) -> list[list[T]]:
    """Each page (newest first) until an empty one."""
    pages: list[list[T]] = []
    older_than = OlderThan()
    while page := fetch(older_than):
        pages.append(list(reversed(page)))
        older_than = position(page[0])  # the SDK answers oldest first
    return pages


def test_memories_page_by_time_then_id_in_code_points(client: OracleAgentMemory) -> None:
    added = [("a", NOON, "memory"), ("B", NOON, "fact"), ("c", NOON, "preference"),
             ("Z", "2026-01-01T12:00:00.000001+00:00", "memory"),
             ("old", "2020-06-01T00:00:00+00:00", "guideline"), ("new", None, "fact")]
    for memory_id, timestamp, memory_type in added:
        options: dict[str, Any] = {"timestamp": timestamp} if timestamp else {}
        client.add_memory(f"text {memory_id}", user_id="u1", memory_id=memory_id,
                          memory_type=memory_type, **options)
    client.add_memory("someone else's", user_id="u2", memory_id="x")
    pages = every_page(
        lambda older_than: client.list_memories(user_id="u1", limit=2, older_than=older_than),
        lambda record: OlderThan(record.timestamp, record.id))
    assert [[r.id for r in page] for page in pages] == [["new", "Z"], ["c", "a"], ["B", "old"]]
    assert {r.id for r in client.list_memories(user_id="u1")} == {m[0] for m in added}
    assert [r.id for r in client.list_memories(user_id="u1", limit=3, older_than=OlderThan(
        "2026-01-01T12:00:00Z", "a"))] == ["old", "B"]  # strictly older; "Z" and "+00:00"


def test_relations_page_by_creation_time_then_id(client: OracleAgentMemory) -> None:
    store = client.store
    ids = ["m0", "m1", "m2", "m3", "m4"]
    store.add([f"text {i}" for i in ids], "memory", record_ids=ids, user_ids="u1")
    relation_ids = ["R2", "r1", "R10", "q"]  # one batch: one created_at for all four
    store.add_relations(["m0"] * 4, "memory", ids[1:], "memory", "supports",
                        relation_ids=relation_ids)

    def fetch(older_than: OlderThan) -> list[RecordRelation]:
        found: list[RecordRelation] = store.list_relations(limit=1, older_than=older_than)
        return found

    pages = every_page(fetch, lambda relation: OlderThan(relation.created_at, relation.id))
    assert [r.id for page in pages for r in page] == sorted(relation_ids, reverse=True)
    assert [r.id for r in store.list_relations()] == relation_ids  # spec order: as created


def test_threads_page_and_the_default_order_is_the_specs(client: OracleAgentMemory) -> None:
    created = [client.create_thread(thread_id=f"t{n}", user_id="u1").thread_id
               for n in range(5)]
    pages = every_page(
        lambda older_than: client.list_threads(user_id="u1", limit=2, older_than=older_than),
        lambda thread: OlderThan(thread.timestamp, thread.id))
    assert [len(page) for page in pages] == [2, 2, 1]
    listed = [t.id for page in pages for t in page]
    assert sorted(listed) == created
    timestamps = [datetime.fromisoformat(t.timestamp or "") for page in pages for t in page]
    assert timestamps == sorted(timestamps, reverse=True)
    assert [t.id for t in client.list_threads(user_id="u1")] == created


@pytest.mark.parametrize(("older_than", "error"), [
    (OlderThan(NOON), InvalidArgumentError),
    (OlderThan(record_id="a"), InvalidArgumentError),
    (OlderThan("yesterday", "a"), InvalidArgumentError),
    (OlderThan(NOON, ""), InvalidArgumentError),
    (OlderThan(NOON, "x" * 129), InvalidArgumentError),
    ("a", InvalidArgumentTypeError),
])
def test_a_bad_position_names_older_than(client: OracleAgentMemory, older_than: Any,
                                         error: type[Exception]) -> None:
    with pytest.raises(error, match="older_than"):
        client.list_memories(user_id="u1", older_than=older_than)
    with pytest.raises(error, match="older_than"):
        client.store.list_relations(older_than=older_than)
