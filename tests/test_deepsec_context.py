"""``OracleMemoryEndUserSecurityContext`` and the store rules that depend on it.

The scope is a ``contextvars`` scope: it follows awaited calls and thread offloads, stays local to
the task that entered it, and ends at exit (work that outlives it fails closed). A NO_CHECK store
needs it for every operation; every other schema policy refuses it. Everything runs on the
embedded server as the identities of tests/dds.py (they log in with the tests' password through
``url_as``: the privileges are what is tested).
"""

from __future__ import annotations

import asyncio
import contextvars
import secrets
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from dds import OWNER, db_user
from oracleagentmemory.apis import PendingRecordBatch, Record, ScopedRecord
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    EndUserContextError,
    IdentityProviderUser,
    OracleMemoryEndUserSecurityContext,
    create_end_user_security_context,
    get_end_user_username,
)
from oracleagentmemory.errors import (
    NotPermittedError,
    OracleAgentMemoryError,
    SecurityContextError,
)
from psycopg_pool import ConnectionPool

NEEDS_CONTEXT = "needs an active OracleMemoryEndUserSecurityContext for every operation"
RLS_REFUSAL = "no data role of this memory store granted to the end user"
"""What a write the row security refused says (the SDK's words, no table)."""


# --- fixtures and helpers ------------------------------------------------------------------
@pytest.fixture
def store_id(dds: Any) -> str:
    """A fresh protected store (both policies installed and granted)."""
    return str(dds.new_store())


def open_runtime(dds: Any, store_id: str, pool: Any = None) -> OracleDBMemoryStore:
    """A NO_CHECK runtime store; the caller must be inside an end-user context."""
    return OracleDBMemoryStore(None, pool or dds.runtime_url, schema_policy=SchemaPolicy.NO_CHECK,
                               memory_store_id=store_id, schema_owner=OWNER)


@pytest.fixture
def runtime(dds: Any, store_id: str) -> Iterator[OracleDBMemoryStore]:
    """A runtime store opened inside alice's context and handed out after that scope ended."""
    with OracleMemoryEndUserSecurityContext(dds.context("alice")):
        store = open_runtime(dds, store_id)
    yield store
    store.close()


def as_user(dds: Any, user: str) -> OracleMemoryEndUserSecurityContext:
    return OracleMemoryEndUserSecurityContext(dds.context(user))


def owner_rows(dds: Any, store_id: str, record_type: str = "memory") -> dict[str, str | None]:
    """``{record id: user_id}`` of every record of a type, read by the owner (no row security)."""
    with dds.owner_store(store_id) as owner:
        return {r.id: r.user_id for r in owner.list(record_type)}


def ids(records: list[Any]) -> list[str]:
    return sorted(r.id for r in records)


def user_ids(records: list[Record]) -> set[str | None]:
    scoped = [r for r in records if isinstance(r, ScopedRecord)]
    assert len(scoped) == len(records)
    return {r.user_id for r in scoped}


# --- the scope: sync, async, awaited calls, thread offloads ----------------------------------
def test_sync_with_scope_runs_operations_as_the_user(dds: Any, runtime: OracleDBMemoryStore,
                                                     store_id: str) -> None:
    with as_user(dds, "bob") as scope:
        assert scope.security_context.username == "bob"
        runtime.add(["bob note"], "memory", record_ids="b1")
        assert ids(runtime.list("memory")) == ["b1"]
    assert owner_rows(dds, store_id) == {"b1": "bob"}


def test_async_with_scope_follows_awaited_calls_and_to_thread(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    async def nested_list() -> list[Any]:
        await asyncio.sleep(0)
        return await runtime.list_async("memory")

    async def main() -> tuple[list[str], str | None]:
        async with OracleMemoryEndUserSecurityContext(dds.context("carol")):
            await runtime.add_async(["carol note"], "memory", record_ids="c1")
            await asyncio.to_thread(runtime.add, ["carol offload"], "memory", record_ids="c2")
            seen = await nested_list()
            got = await asyncio.to_thread(runtime.get, "memory", "c2")
        assert isinstance(got, ScopedRecord)
        return ids(seen), got.user_id

    seen, user = asyncio.run(main())
    assert seen == ["c1", "c2"]
    assert user == "carol"
    assert owner_rows(dds, store_id) == {"c1": "carol", "c2": "carol"}


def test_async_calls_outside_the_scope_are_refused(runtime: OracleDBMemoryStore) -> None:
    with pytest.raises(EndUserContextError, match=NEEDS_CONTEXT):
        asyncio.run(runtime.list_async("memory"))


def test_fifty_concurrent_tasks_never_see_each_others_rows(dds: Any, store_id: str) -> None:
    users = [f"idp_user_{n:02d}" for n in range(50)]
    pool: ConnectionPool[Any] = ConnectionPool(dds.runtime_url, min_size=1, max_size=3, open=True)
    try:
        with OracleMemoryEndUserSecurityContext(dds.idp_context(users[0])):
            store = open_runtime(dds, store_id, pool)

        async def one(user: str) -> tuple[str, list[str], set[str | None]]:
            async with OracleMemoryEndUserSecurityContext(dds.idp_context(user)):
                await store.add_async([f"{user} a", f"{user} b"], "memory",
                                      record_ids=[f"{user}-a", f"{user}-b"])
                await asyncio.sleep(0)  # let the other tasks interleave
                seen = await store.list_async("memory")
            return user, ids(seen), user_ids(seen)

        async def main() -> list[tuple[str, list[str], set[str | None]]]:
            return list(await asyncio.gather(*(one(u) for u in users)))

        results = asyncio.run(main())
    finally:
        pool.close()
    for user, seen, owners in results:
        assert seen == [f"{user}-a", f"{user}-b"]
        assert owners == {db_user(user)}
    stored = owner_rows(dds, store_id)
    assert len(stored) == 100
    assert all(user_id is not None and db_user(record_id.rsplit("-", 1)[0]) == user_id
               for record_id, user_id in stored.items())


def test_nested_scopes_inner_user_wins_and_outer_is_restored(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    with as_user(dds, "alice"):
        runtime.add(["alice before"], "memory", record_ids="a1")
        with as_user(dds, "bob"):
            runtime.add(["bob inside"], "memory", record_ids="b1")
            assert ids(runtime.list("memory")) == ["b1"]
        assert ids(runtime.list("memory")) == ["a1"]
        runtime.add(["alice after"], "memory", record_ids="a2")
    assert owner_rows(dds, store_id) == {"a1": "alice", "b1": "bob", "a2": "alice"}


def _in_thread(target: Callable[[], Any], copy_context: bool) -> Any:
    """Run ``target`` in a new thread; returns its result or the exception it raised."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(target())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(exc)

    runner = contextvars.copy_context().run if copy_context else (lambda f: f())
    thread = threading.Thread(target=runner, args=(run,))
    thread.start()
    thread.join()
    return outcome[0]


def test_thread_started_with_copy_context_sees_the_scope(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    with as_user(dds, "bob"):
        result = _in_thread(lambda: runtime.add(["from a thread"], "memory", record_ids="t1"),
                            copy_context=True)
    assert result == ["t1"]
    assert owner_rows(dds, store_id) == {"t1": "bob"}


def test_plain_new_thread_does_not_inherit_the_scope(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    with as_user(dds, "bob"):
        result = _in_thread(lambda: runtime.add(["lost"], "memory", record_ids="t1"),
                            copy_context=False)
    assert isinstance(result, EndUserContextError)
    assert isinstance(result, RuntimeError)
    assert NEEDS_CONTEXT in str(result)
    assert owner_rows(dds, store_id) == {}


def test_task_that_outlives_its_scope_fails_closed(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    async def main() -> None:
        gate = asyncio.Event()

        async def late_write() -> list[str]:
            await gate.wait()  # runs only after the scope below has ended
            return await runtime.add_async(["too late"], "memory", record_ids="late")

        async with OracleMemoryEndUserSecurityContext(dds.context("alice")):
            task = asyncio.create_task(late_write())
        gate.set()
        with pytest.raises(EndUserContextError, match="has ended"):
            await task

    asyncio.run(main())
    assert owner_rows(dds, store_id) == {}


def test_thread_that_outlives_its_scope_fails_closed(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    gate = threading.Event()
    outcome: list[Any] = []

    def late() -> None:
        gate.wait()
        try:
            outcome.append(runtime.add(["too late"], "memory", record_ids="late"))
        except EndUserContextError as exc:
            outcome.append(exc)

    with as_user(dds, "alice"):
        thread = threading.Thread(target=contextvars.copy_context().run, args=(late,))
        thread.start()
    gate.set()
    thread.join()
    assert isinstance(outcome[0], EndUserContextError)
    assert "has ended" in str(outcome[0])
    assert owner_rows(dds, store_id) == {}


def test_entering_the_same_context_object_twice_is_refused(dds: Any) -> None:
    scope = as_user(dds, "alice")
    with scope:
        with pytest.raises(RuntimeError, match="already entered"):
            scope.__enter__()
        assert scope.security_context.username == "alice"
    with scope:  # usable again once exited
        assert scope.security_context.username == "alice"


@pytest.mark.parametrize("value", [None, "alice", ("alice", None), 42,
                                   IdentityProviderUser("alice", ("team",))])
def test_constructor_rejects_what_is_not_a_security_context(value: Any) -> None:
    with pytest.raises(TypeError, match="security_context must"):
        OracleMemoryEndUserSecurityContext(value)


# --- store rules ---------------------------------------------------------------------------
def test_no_check_opened_outside_a_context_is_refused(dds: Any, store_id: str) -> None:
    with pytest.raises(EndUserContextError,
                       match="NO_CHECK .* inside an active OracleMemoryEndUserSecurityContext"):
        open_runtime(dds, store_id)


def _owner_table_exists(dds: Any, store_id: str) -> bool:
    with psycopg.connect(dds.owner_url) as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                           [f"{OWNER}.{store_id}_memory"]).fetchone()
    return bool(row and row[0])


@pytest.mark.parametrize("policy", [SchemaPolicy.CREATE_IF_NECESSARY, SchemaPolicy.CREATE_IF_EMPTY,
                                    SchemaPolicy.RECREATE, SchemaPolicy.REQUIRE_EXISTING])
def test_lifecycle_policies_refuse_an_active_context_and_do_no_ddl(
    dds: Any, policy: SchemaPolicy,
) -> None:
    fresh = f"nx{secrets.token_hex(4)}"
    with as_user(dds, "alice"), pytest.raises(
        EndUserContextError, match=f"SchemaPolicy.{policy.name} cannot run inside an end-user"
    ):
        OracleDBMemoryStore(None, dds.owner_url, schema_policy=policy, memory_store_id=fresh)
    assert not _owner_table_exists(dds, fresh)


def test_recreate_inside_a_context_keeps_the_existing_store(dds: Any, store_id: str) -> None:
    with dds.owner_store(store_id) as owner:
        owner.add(["keep me"], "memory", user_ids=None, record_ids="k1")
    with as_user(dds, "alice"), pytest.raises(EndUserContextError, match="RECREATE"):
        OracleDBMemoryStore(None, dds.owner_url, schema_policy=SchemaPolicy.RECREATE,
                            memory_store_id=store_id)
    assert owner_rows(dds, store_id) == {"k1": None}


def test_owner_store_used_inside_a_context_is_refused(dds: Any, store_id: str) -> None:
    with dds.owner_store(store_id) as owner, as_user(dds, "alice"), pytest.raises(
        EndUserContextError, match="REQUIRE_EXISTING stores refuse to run inside an end-user"
    ):
        owner.add(["as the owner"], "memory", user_ids=None, record_ids="o1")
    assert owner_rows(dds, store_id) == {}


def test_schema_owner_with_create_if_necessary_is_a_value_error(dds: Any, store_id: str) -> None:
    with pytest.raises(ValueError, match="schema_owner gives runtime access to an existing store"):
        OracleDBMemoryStore(None, dds.runtime_url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id, schema_owner=OWNER)


OPERATIONS: dict[str, Callable[[OracleDBMemoryStore], Any]] = {
    "add": lambda s: s.add(["x"], "memory", record_ids="m9"),
    "add_batches": lambda s: s.add_batches(
        [PendingRecordBatch(contents=["x"], record_type="memory")]),
    "add_user": lambda s: s.add_user(information="me"),
    "add_agent": lambda s: s.add_agent("agent1", "an agent"),
    "get": lambda s: s.get("memory", "m1"),
    "list": lambda s: s.list("memory"),
    "list_thread_messages": lambda s: s.list_thread_messages("t1"),
    "search": lambda s: s.search(None, 3, query_vector=[1.0, 0.0, 0.0]),
    "update": lambda s: s.update("memory", "m1", content="changed"),
    "delete": lambda s: s.delete("memory", "m1"),
    "delete_thread": lambda s: s.delete_thread("t1"),
    "purge_expired": lambda s: s.purge_expired(),
    "add_relations": lambda s: s.add_relations("m1", "memory", "m2", "memory", "supports"),
    "get_relation": lambda s: s.get_relation(relation_id="r1"),
    "list_relations": lambda s: s.list_relations(),
    "update_relations": lambda s: s.update_relations("r1", relation_types="refines"),
    "delete_relations": lambda s: s.delete_relations("r1"),
    "get_async": lambda s: asyncio.run(s.get_async("memory", "m1")),
    "add_async": lambda s: asyncio.run(s.add_async(["x"], "memory", record_ids="m9")),
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_no_check_store_used_outside_a_context_refuses_every_operation(
    dds: Any, store_id: str, operation: str,
) -> None:
    with as_user(dds, "alice"):
        store = open_runtime(dds, store_id)
        store.add(["one", "two"], "memory", record_ids=["m1", "m2"])
        store.add_relations("m1", "memory", "m2", "memory", "supports", relation_ids="r1")
    try:
        with pytest.raises(EndUserContextError, match=NEEDS_CONTEXT):
            OPERATIONS[operation](store)
        with as_user(dds, "alice"):  # nothing changed
            assert ids(store.list("memory")) == ["m1", "m2"]
            assert store.get("memory", "m1").content == "one"  # type: ignore[union-attr]
            assert [r.id for r in store.list_relations()] == ["r1"]
            assert store.get("user_profile", "alice") is None
    finally:
        store.close()


# --- user_id inference ---------------------------------------------------------------------
def test_omitted_user_ids_resolve_to_the_context_user(dds: Any, runtime: OracleDBMemoryStore,
                                                      store_id: str) -> None:
    with as_user(dds, "bob"):
        runtime.add(["bob fact"], "memory", record_ids="b1")
        runtime.add(["hello"], "message", record_ids="msg1", thread_ids="t1")
    assert owner_rows(dds, store_id) == {"b1": "bob"}
    assert owner_rows(dds, store_id, "message") == {"msg1": "bob"}


def test_add_user_without_user_id_creates_the_context_users_profile(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    with as_user(dds, "carol"):
        assert runtime.add_user(information="carol likes tea") == "carol"
        profile = runtime.get("user_profile", "carol")
    assert profile is not None and profile.content == "carol likes tea"
    with dds.owner_store(store_id) as owner:
        assert [r.id for r in owner.list("user_profile")] == ["carol"]


def test_explicit_none_user_ids_is_an_unscoped_record_the_database_refuses(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    with as_user(dds, "bob"), pytest.raises(NotPermittedError,
                                            match=RLS_REFUSAL):
        runtime.add(["pretend global"], "memory", user_ids=None, record_ids="g1")
    assert owner_rows(dds, store_id) == {}


def test_explicit_other_user_id_is_refused_by_the_database(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    with as_user(dds, "bob"):
        with pytest.raises(NotPermittedError, match=RLS_REFUSAL):
            runtime.add(["planted"], "memory", user_ids="alice", record_ids="x1")
        with pytest.raises(NotPermittedError, match=RLS_REFUSAL):
            runtime.add_user(user_id="alice", information="planted profile")
    assert owner_rows(dds, store_id) == {}
    assert owner_rows(dds, store_id, "user_profile") == {}


def test_search_without_user_id_returns_own_and_global_rows(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    vector = [[1.0, 0.0, 0.0]]
    with dds.owner_store(store_id) as owner:
        owner.add(["shared"], "memory", user_ids=None, record_ids="g1", embeddings=vector)
    for user in ("alice", "bob"):
        with as_user(dds, user):
            runtime.add([f"{user} note"], "memory", record_ids=f"{user}-1", embeddings=vector)
    with as_user(dds, "alice"):
        hits = runtime.search(None, 10, query_vector=vector[0])
    assert sorted(r.id for r, _ in hits) == ["alice-1", "g1"]


# --- what the database sees ------------------------------------------------------------------
def test_database_sees_the_asserted_user_only_inside_the_transaction(dds: Any) -> None:
    with psycopg.connect(dds.runtime_url) as conn:
        with conn.transaction():
            row = conn.execute("SELECT oam_sec.apply_assertion(%s)",
                               [dds.context("alice").assertion()]).fetchone()
            assert row == ("alice",)
            assert get_end_user_username(conn) == "alice"
        assert get_end_user_username(conn) is None
        conn.rollback()


def test_get_end_user_username_requires_a_connection() -> None:
    with pytest.raises(TypeError, match="connection must be a psycopg Connection"):
        get_end_user_username("postgresql://nowhere")


def test_context_for_an_unknown_local_user_fails_and_writes_nothing(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    with as_user(dds, "mallory"):
        with pytest.raises(SecurityContextError, match="does not accept the end-user context "
                           "for 'mallory'"):
            runtime.add(["intruder"], "memory", record_ids="x1")
        with pytest.raises(SecurityContextError, match="unknown local end user"):
            open_runtime(dds, store_id)
    assert issubclass(SecurityContextError, RuntimeError)
    assert owner_rows(dds, store_id) == {}


def test_wrong_application_key_fails_and_writes_nothing(
    dds: Any, runtime: OracleDBMemoryStore, store_id: str,
) -> None:
    forged_token = f"oamapp1.gw.{secrets.token_hex(32)}"
    assert forged_token != dds.token
    forged = create_end_user_security_context(forged_token, ("alice", None))
    with OracleMemoryEndUserSecurityContext(forged):
        with pytest.raises(SecurityContextError, match="for 'alice'"):
            runtime.add(["forged"], "memory", record_ids="x1")
        with pytest.raises(SecurityContextError, match="for 'alice'"):
            runtime.list("memory")
    assert owner_rows(dds, store_id) == {}


def test_pooled_connection_keeps_no_context_after_an_operation(dds: Any, store_id: str) -> None:
    pool: ConnectionPool[Any] = ConnectionPool(dds.runtime_url, min_size=1, max_size=1, open=True)
    try:
        with as_user(dds, "alice"):
            store = open_runtime(dds, store_id, pool)
            store.add(["alice"], "memory", record_ids="a1")
        with pool.connection() as conn:
            assert get_end_user_username(conn) is None
            assert conn.execute("SELECT current_setting('oam.end_user_assertion', true)"
                                ).fetchone() in (("",), (None,))
    finally:
        pool.close()


@pytest.mark.parametrize("failure", ["duplicate id", "invalid JSON text"])
def test_a_failed_write_leaves_its_pooled_connection_serving_later_writes(
        dds: Any, store_id: str, failure: str) -> None:
    """A write whose pipeline fails part-way is rolled back through psycopg, which then drops
    its prepared statements, so none the server skipped preparing is taken for a prepared one
    (the rollback used to bypass psycopg: the pool's only connection then failed every later
    write with 'prepared statement "_pg3_1" does not exist')."""
    pool: ConnectionPool[Any] = ConnectionPool(dds.runtime_url, min_size=1, max_size=1, open=True)
    try:
        with pool.connection() as conn:
            threshold = conn.prepare_threshold
        assert threshold is not None and threshold > 1
        with as_user(dds, "alice"):
            store = open_runtime(dds, store_id, pool)
            store.add(["first"], "memory", record_ids="taken", metadata={"k": "v"})
            for index in range(threshold - 1):  # the next use of the statements prepares them
                store.add([f"ordinary {index}"], "memory", metadata={"k": "v"})
            with pytest.raises(OracleAgentMemoryError):
                if failure == "duplicate id":
                    store.add(["again"], "memory", record_ids="taken", metadata={"k": "v"})
                else:  # PostgreSQL's JSON refuses a lone surrogate escape
                    store.add(["lone"], "memory", metadata={"k": "\ud800"})
            for index in range(threshold + 1):
                store.add([f"after {index}"], "memory", metadata={"k": "v"})
        assert len(owner_rows(dds, store_id)) == 1 + (threshold - 1) + (threshold + 1)
    finally:
        pool.close()
