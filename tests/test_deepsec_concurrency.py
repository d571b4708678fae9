"""Many end users interleaved on a small pool of the runtime login: no row ever crosses users.

32 threads run 10,000 store operations, each as a randomly chosen end user (local users and
identity-provider users of group ``team``), on a ``ConnectionPool(max_size=4)``: every physical
connection serves a different user almost every time, so a context that leaked from one
transaction to the next would show up as a foreign row. Then 200 asyncio tasks do the same with
the ``*_async`` methods and one ``NO_CHECK`` store per user sharing one pool.
"""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from dds import OWNER, db_user
from oracleagentmemory.apis.records import Record, ScopedRecord
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from psycopg_pool import ConnectionPool

LOCAL_USERS = ("alice", "bob", "carol")
IDP_USERS = tuple(f"u{n:02d}" for n in range(1, 21))
USERS = LOCAL_USERS + IDP_USERS
GLOBAL_IDS = tuple(f"g{n}" for n in range(10))
THREADS = 32
OPERATIONS = 10_000


def security_context(dds: Any, user: str) -> Any:
    """A local end user's context, or an identity-provider user in group ``team``."""
    return dds.context(user) if user in LOCAL_USERS else dds.idp_context(user)


def vector(rng: random.Random) -> list[float]:
    return [rng.uniform(0.1, 1.0), rng.uniform(0.0, 1.0), rng.uniform(0.0, 1.0)]


@dataclass
class Ledger:
    """Who owns which record (as written), and what every read and write saw."""

    owners: dict[str, str | None] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    checked: int = 0
    leaks: list[str] = field(default_factory=list)
    foreign_attempts: int = 0
    own_seen: int = 0
    global_seen: int = 0
    operations: Counter[str] = field(default_factory=Counter)

    def remember(self, record_id: str, user: str | None) -> None:
        with self.lock:
            self.owners[record_id] = user

    def any_id(self, rng: random.Random) -> tuple[str, str | None]:
        with self.lock:
            record_id = rng.choice(list(self.owners))
            return record_id, self.owners[record_id]

    def check(self, user: str, records: list[Record], operation: str) -> None:
        """Count every returned record; a leak is a record of neither the caller nor everyone."""
        with self.lock:
            self.operations[operation] += 1
            for record in records:
                self.checked += 1
                user_id = record.user_id if isinstance(record, ScopedRecord) else "<unscoped>"
                written_by = self.owners.get(record.id, "<unknown>")
                if user_id not in (db_user(user), None) or written_by not in (user, None):
                    self.leaks.append(f"{operation} by {user} returned {record.id} of "
                                      f"{user_id} (written by {written_by})")
                elif user_id is None:
                    self.global_seen += 1
                else:
                    self.own_seen += 1

    def check_write(self, user: str, record_id: str, owner: str | None, changed: int,
                    operation: str) -> None:
        """A write that reports a change must have hit the caller's own record."""
        with self.lock:
            self.operations[operation] += 1
            if owner != user:
                self.foreign_attempts += 1
                if changed:
                    self.leaks.append(f"{operation} by {user} changed {record_id} of {owner}")


@pytest.fixture
def runtime_pool(dds: Any) -> Iterator[ConnectionPool[Any]]:
    pool: ConnectionPool[Any] = ConnectionPool(dds.runtime_url, min_size=4, max_size=4,
                                               open=True, name="deepsec-concurrency")
    try:
        yield pool
    finally:
        pool.close()


def seeded_store(dds: Any, ledger: Ledger, per_user: int) -> str:
    """A protected store with global memories and ``per_user`` memories of every user."""
    store_id: str = dds.new_store(vector_dim=3)
    rng = random.Random(7)
    owner = dds.owner_store(store_id)
    try:
        owner.add([f"global|{g}" for g in GLOBAL_IDS], "memory", record_ids=list(GLOBAL_IDS),
                  user_ids=None, embeddings=[vector(rng) for _ in GLOBAL_IDS])
        for user in USERS:
            ids = [f"{user}-seed{n}" for n in range(per_user)]
            owner.add([f"{user}|seed" for _ in ids], "memory", record_ids=ids,
                      user_ids=db_user(user),
                      embeddings=[vector(rng) for _ in ids])
            for record_id in ids:
                ledger.remember(record_id, user)
    finally:
        owner.close()
    for record_id in GLOBAL_IDS:
        ledger.remember(record_id, None)
    return store_id


def assert_rows_match_their_writers(dds: Any, store_id: str) -> None:
    """As the owner: every memory's content names the user who wrote it, globals untouched."""
    owner = dds.owner_store(store_id)
    try:
        memories = owner.list("memory", limit=None)
    finally:
        owner.close()
    wrong = [(m.id, m.user_id, m.content) for m in memories
             if (db_user(str(m.content).split("|")[0]) if m.user_id else "global")
             != (m.user_id or "global")]
    assert wrong == []
    assert sorted(m.id for m in memories if m.user_id is None) == sorted(GLOBAL_IDS)
    assert all(m.content == f"global|{m.id}" for m in memories if m.user_id is None)


def run_operation(store: OracleDBMemoryStore, user: str, rng: random.Random,
                  ledger: Ledger) -> None:
    """One random store operation as ``user`` (the caller has entered the user's context)."""
    roll = rng.random()
    if roll < 0.25:
        record_id = f"{user}-{uuid.uuid4().hex[:12]}"
        ledger.remember(record_id, user)
        assert store.add([f"{user}|added"], "memory", record_ids=record_id,
                         embeddings=[vector(rng)]) == [record_id]
        ledger.check(user, [], "add")
    elif roll < 0.45:
        ledger.check(user, store.list("memory", limit=40), "list")
    elif roll < 0.65:
        record_id, _ = ledger.any_id(rng)
        found = store.get("memory", record_id)
        ledger.check(user, [] if found is None else [found], "get")
    elif roll < 0.80:
        hits = store.search(None, 20, query_vector=vector(rng), record_types=["memory"])
        ledger.check(user, [record for record, _ in hits], "search")
    elif roll < 0.90:
        record_id, owner = ledger.any_id(rng)
        changed = store.update("memory", record_id, content=f"{user}|updated")
        ledger.check_write(user, record_id, owner, changed, "update")
    else:
        record_id, owner = ledger.any_id(rng)
        deleted = store.delete("memory", record_id)
        ledger.check_write(user, record_id, owner, deleted, "delete")


def test_threads_with_interleaved_users_on_a_small_pool_never_leak(
        dds: Any, runtime_pool: ConnectionPool[Any]) -> None:
    ledger = Ledger()
    store_id = seeded_store(dds, ledger, per_user=5)
    contexts = {user: security_context(dds, user) for user in USERS}
    with OracleMemoryEndUserSecurityContext(contexts["alice"]):
        # One store object for every thread: the user comes from each call's active context.
        store = OracleDBMemoryStore(None, runtime_pool, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=store_id, schema_owner=OWNER)
    errors: list[BaseException] = []
    per_thread = OPERATIONS // THREADS
    start = threading.Barrier(THREADS)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        try:
            for _ in range(per_thread + (1 if seed < OPERATIONS % THREADS else 0)):
                user = rng.choice(USERS)
                with OracleMemoryEndUserSecurityContext(contexts[user]):
                    run_operation(store, user, rng, ledger)
        except BaseException as exc:  # reported below, with the thread's seed
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,), name=f"dds-{n}")
               for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()
    assert errors == []
    assert sum(ledger.operations.values()) == OPERATIONS
    assert ledger.leaks == []
    # The test can fail: it read many rows, own and global, and tried many foreign writes.
    assert ledger.checked > 50_000
    assert ledger.own_seen > 30_000 and ledger.global_seen > 3_000
    assert ledger.foreign_attempts > 1_000
    assert all(ledger.operations[op] > 500 for op in ("add", "list", "get", "search", "update",
                                                     "delete"))
    assert_rows_match_their_writers(dds, store_id)
    assert runtime_pool.get_stats()["pool_size"] <= 4


TASKS = 200
OPERATIONS_PER_TASK = 6


def test_async_tasks_of_different_users_on_one_pool_never_leak(
        dds: Any, runtime_pool: ConnectionPool[Any]) -> None:
    ledger = Ledger()
    store_id = seeded_store(dds, ledger, per_user=3)
    contexts = {user: security_context(dds, user) for user in USERS}
    stores: dict[str, OracleDBMemoryStore] = {}
    for user in USERS:
        with OracleMemoryEndUserSecurityContext(contexts[user]):
            stores[user] = OracleDBMemoryStore(None, runtime_pool,
                                               schema_policy=SchemaPolicy.NO_CHECK,
                                               memory_store_id=store_id, schema_owner=OWNER)

    async def task(n: int) -> None:
        user = USERS[n % len(USERS)]
        store = stores[user]
        rng = random.Random(1000 + n)
        async with OracleMemoryEndUserSecurityContext(contexts[user]):
            record_id = f"{user}-task{n}"
            ledger.remember(record_id, user)
            await store.add_async([f"{user}|task"], "memory", record_ids=record_id,
                                  embeddings=[vector(rng)])
            for _ in range(OPERATIONS_PER_TASK):
                await asyncio.sleep(0)  # let the other tasks interleave
                roll = rng.random()
                if roll < 0.3:
                    ledger.check(user, await store.list_async("memory", limit=40), "list")
                elif roll < 0.5:
                    other, _ = ledger.any_id(rng)
                    found = await store.get_async("memory", other)
                    ledger.check(user, [] if found is None else [found], "get")
                elif roll < 0.75:
                    hits = await store.search_async(None, 20, query_vector=vector(rng),
                                                    record_types={"memory"})
                    ledger.check(user, [r for r, _ in hits], "search")
                elif roll < 0.9:
                    other, owner = ledger.any_id(rng)
                    changed = await store.update_async("memory", other,
                                                       content=f"{user}|updated")
                    ledger.check_write(user, other, owner, changed, "update")
                else:
                    other, owner = ledger.any_id(rng)
                    if owner == user:
                        continue
                    deleted = await store.delete_async("memory", other)
                    ledger.check_write(user, other, owner, deleted, "delete")
            own = await store.get_async("memory", record_id)
            assert isinstance(own, ScopedRecord) and own.user_id == db_user(user)
            ledger.check(user, [own], "get")

    async def main() -> None:
        await asyncio.gather(*(task(n) for n in range(TASKS)))

    try:
        asyncio.run(main())
    finally:
        for store in stores.values():
            store.close()
    assert ledger.leaks == []
    assert ledger.checked > 5_000
    assert ledger.own_seen > 500 and ledger.global_seen > 500
    assert ledger.foreign_attempts > 50
    assert_rows_match_their_writers(dds, store_id)
