"""The store's record API beyond the spec's examples: add, get, list, list_thread_messages,
update, delete (with cascade), delete_thread, add_batches, argument checks and the async twins.

Every test runs on the real embedded database; where the API cannot show a row (chunk rows,
JSON null, expired rows) the test reads the store's tables directly (``tests/stored_rows.py`` on
the engine under test; psycopg for the few PostgreSQL-only checks).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from conftest import StoreFactory, new_store_id
from oracleagentmemory.apis import (
    MAX_LIST_LIMIT,
    AgentProfileRecord,
    FactRecord,
    GuidelineRecord,
    IEmbedder,
    MemoryRecord,
    MessageRecord,
    PendingRecordBatch,
    PreferenceRecord,
    Record,
    RecordStatus,
    TextContent,
    ThreadRecord,
    ThreadSummaryRecord,
    UserProfileRecord,
)
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.errors import DatabaseError
from psycopg import sql
from stored_rows import StoredRows, open_stored_rows

POSTGRESQL_ONLY = (
    "reads PostgreSQL-typed columns (jsonb_typeof, timestamptz) or installs a PL/pgSQL trigger "
    "with psycopg")
"""Why the marked tests do not run on Oracle (``tests/provision/engine_marks.py``)."""

# --- helpers -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def module_stores(database_url: object) -> Iterator[StoreFactory]:
    """Stores shared by the read-only tests of this module (closed at module end), on the
    engine under test."""
    opened: list[OracleDBMemoryStore] = []

    def factory() -> OracleDBMemoryStore:
        opened.append(OracleDBMemoryStore(None, database_url, memory_store_id=new_store_id(),
                                          schema_policy=SchemaPolicy.CREATE_IF_NECESSARY))
        return opened[-1]

    yield factory
    for shared in opened:
        shared.close()


@pytest.fixture(scope="module")
def empty_store(module_stores: StoreFactory) -> OracleDBMemoryStore:
    """A store that tests only validate arguments against (they must write nothing)."""
    return module_stores()


@pytest.fixture
def db(database_url: object) -> Iterator[StoredRows]:
    """Reads what the store wrote, on the engine under test (``tests/stored_rows.py``)."""
    with open_stored_rows(database_url) as rows:
        yield rows


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A direct PostgreSQL connection, for the tests of PostgreSQL's own storage."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        yield conn


def count(db: StoredRows, store: OracleDBMemoryStore, table: str,
          where: Mapping[str, object] | None = None) -> int:
    """Rows of one managed table of ``store`` whose columns equal ``where`` (expired rows
    included)."""
    return db.count(store, table, where)


def chunk_count(db: StoredRows, store: OracleDBMemoryStore, record_ids: Sequence[str]) -> int:
    """Retrieval rows stored for ``record_ids``."""
    return sum(len(db.chunks(store, record_id)) for record_id in record_ids)


def ids(records: Sequence[Record]) -> list[str]:
    return [r.id for r in records]


def messages(records: Sequence[Record]) -> list[MessageRecord]:
    """``records``, checked to be message records."""
    assert all(isinstance(r, MessageRecord) for r in records)
    return [r for r in records if isinstance(r, MessageRecord)]


# --- round trips per record type -----------------------------------------------------------


def test_thread_round_trips_with_id_as_thread_id(store: OracleDBMemoryStore) -> None:
    assert store.add([None], "thread", record_ids="t1", user_ids="u1", agent_ids="a1",
                     metadata={"topic": "billing"}) == ["t1"]
    record = store.get("thread", "t1")
    assert isinstance(record, ThreadRecord)
    assert (record.id, record.thread_id, record.user_id, record.agent_id) == ("t1", "t1", "u1",
                                                                              "a1")
    assert record.metadata == {"topic": "billing"}
    assert store.list("thread") == [record]


def test_thread_rejects_thread_ids(store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="thread_ids"):
        store.add([None], "thread", record_ids="t1", thread_ids="t0")
    assert store.list("thread") == []


def test_message_round_trips_with_role_and_scope(store: OracleDBMemoryStore) -> None:
    store.add(["Hi", "Hello, how can I help?"], "message", record_ids=["m1", "m2"],
              thread_ids="t1", user_ids="u1", agent_ids="a1", roles=["user", "assistant"])
    record = store.get("message", "m2")
    assert isinstance(record, MessageRecord)
    assert record.content == "Hello, how can I help?"
    assert record.role == "assistant"
    assert (record.thread_id, record.user_id, record.agent_id) == ("t1", "u1", "a1")
    assert [(m.id, m.role) for m in messages(store.list("message"))] == [
        ("m1", "user"), ("m2", "assistant")]


def test_message_seq_no_increases_per_thread_from_zero(store: OracleDBMemoryStore) -> None:
    store.add(["a", "b"], "message", record_ids=["t1-0", "t1-1"], thread_ids="t1")
    store.add(["c"], "message", record_ids=["t2-0"], thread_ids="t2")
    store.add(["d", "e", "f"], "message", record_ids=["t1-2", "t2-1", "t1-3"],
              thread_ids=["t1", "t2", "t1"])
    seq = {m.id: (m.thread_id, m.seq_no) for m in messages(store.list("message"))}
    assert seq == {
        "t1-0": ("t1", 0), "t1-1": ("t1", 1), "t1-2": ("t1", 2), "t1-3": ("t1", 3),
        "t2-0": ("t2", 0), "t2-1": ("t2", 1),
    }


def test_message_text_content_parts_round_trip(store: OracleDBMemoryStore,
                                               db: StoredRows) -> None:
    parts = [TextContent(text="First part"),
             TextContent(text="Second part", timestamp="2026-01-01T00:00:00+00:00")]
    store.add([parts], "message", record_ids="m1", thread_ids="t1", roles="user")
    record = store.get("message", "m1")
    assert isinstance(record, MessageRecord)
    assert record.content == tuple(parts)  # ids, timestamps and texts, in order (immutable)
    # The parts' text is what retrieval indexes.
    assert chunk_count(db, store, ["m1"]) == 1


@pytest.mark.parametrize(
    ("record_type", "record_class"),
    [("memory", MemoryRecord), ("guideline", GuidelineRecord), ("fact", FactRecord),
     ("preference", PreferenceRecord)],
)
def test_memory_like_types_round_trip_as_their_class(
        store: OracleDBMemoryStore, record_type: str, record_class: type[Record]) -> None:
    store.add(["Likes tea"], record_type, record_ids="r1", thread_ids="t1", user_ids="u1",
              agent_ids="a1", metadata={"source": "chat"})
    record = store.get(record_type, "r1")
    assert type(record) is record_class
    assert record.record_type == record_type
    assert (record.content, record.metadata) == ("Likes tea", {"source": "chat"})
    assert isinstance(record, MemoryRecord)
    assert (record.thread_id, record.user_id, record.agent_id) == ("t1", "u1", "a1")
    assert ids(store.list(record_type)) == ["r1"]


def test_memory_like_types_do_not_answer_for_each_other(store: OracleDBMemoryStore) -> None:
    store.add(["A memory"], "memory", record_ids="mem-1")
    store.add(["A fact"], "fact", record_ids="fact-1")
    assert store.get("fact", "mem-1") is None
    assert store.get("memory", "fact-1") is None
    assert ids(store.list("memory")) == ["mem-1"]
    assert ids(store.list("fact")) == ["fact-1"]
    assert store.list("guideline") == []


@pytest.mark.parametrize(
    ("record_type", "record_class"),
    [("user_profile", UserProfileRecord), ("agent_profile", AgentProfileRecord)],
)
def test_profiles_are_unscoped_and_ignore_scope_filters(
        store: OracleDBMemoryStore, record_type: str, record_class: type[Record]) -> None:
    if record_type == "user_profile":
        assert store.add_user("actor-1", "Prefers tea", metadata={"tier": "gold"}) == "actor-1"
    else:
        assert store.add_agent("actor-1", "Support bot", metadata={"tier": "gold"}) == "actor-1"
    record = store.get(record_type, "actor-1")
    assert type(record) is record_class
    assert record.metadata == {"tier": "gold"}
    assert not hasattr(record, "user_id")
    for filters in ({"user_id": "someone-else"}, {"user_id": None}, {"thread_id": "t9"},
                    {"agent_id": None, "thread_id": None}):
        assert ids(store.list(record_type, **filters)) == ["actor-1"], filters


def test_user_and_agent_profiles_with_one_id_are_separate_records(
        store: OracleDBMemoryStore) -> None:
    store.add_user("same-id", "A user")
    store.add_agent("same-id", "An agent")
    user = store.get("user_profile", "same-id")
    agent = store.get("agent_profile", "same-id")
    assert user is not None and user.content == "A user"
    assert agent is not None and agent.content == "An agent"


@pytest.mark.parametrize(
    ("content", "stored"),
    [({"topic": "billing", "open": [1, 2]}, {"topic": "billing", "open": [1, 2]}),
     ("User asked about invoices", {"text": "User asked about invoices"}),
     (None, None)],
    ids=["mapping", "str", "none"],
)
def test_thread_summary_content(store: OracleDBMemoryStore, content: object,
                                stored: object) -> None:
    store.add([content], "thread_summary", record_ids="s1", thread_ids="t1")
    record = store.get("thread_summary", "s1")
    assert isinstance(record, ThreadSummaryRecord)
    assert record.content == stored
    assert record.thread_id == "t1"


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_thread_summary_none_is_stored_as_json_null(store: OracleDBMemoryStore,
                                                   pg_db: psycopg.Connection[Any]) -> None:
    store.add([None], "thread_summary", record_ids="s1", thread_ids="t1")
    statement = sql.SQL("SELECT content IS NULL, jsonb_typeof(content) FROM {} WHERE id = %s"
                        ).format(sql.Identifier(store._names.table("thread_summary")))
    assert pg_db.execute(statement, ["s1"]).fetchall() == [(False, "null")]


def test_none_content_falls_back_to_metadata_content(store: OracleDBMemoryStore,
                                                     db: StoredRows) -> None:
    store.add([None], "memory", record_ids="m1", metadata={"content": "From metadata"})
    record = store.get("memory", "m1")
    assert record is not None and record.content == "From metadata"
    assert chunk_count(db, store, ["m1"]) == 1


def test_explicit_empty_content_is_kept_and_gets_no_retrieval_rows(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add([""], "memory", record_ids="m1", metadata={"content": "not used"})
    record = store.get("memory", "m1")
    assert record is not None and record.content == ""
    assert chunk_count(db, store, ["m1"]) == 0


# --- statuses and timestamps ---------------------------------------------------------------


def test_invalid_status_is_stored_and_returned(store: OracleDBMemoryStore) -> None:
    store.add(["kept", "retired"], "memory", record_ids=["ok", "old"],
              statuses=[RecordStatus.VALID, RecordStatus.INVALID])
    store.add(["also retired"], "fact", record_ids="f1", statuses=RecordStatus.INVALID)
    assert {r.id: r.status for r in store.list("memory")} == {
        "ok": RecordStatus.VALID, "old": RecordStatus.INVALID}
    fact = store.get("fact", "f1")
    assert fact is not None and fact.status is RecordStatus.INVALID


def test_status_defaults_to_valid(store: OracleDBMemoryStore) -> None:
    store.add(["note"], "message", record_ids="m1", thread_ids="t1")
    record = store.get("message", "m1")
    assert record is not None and record.status is RecordStatus.VALID


@pytest.mark.parametrize("record_type", ["user_profile", "agent_profile", "thread"])
def test_invalid_status_rejected_for_types_without_lifecycle(store: OracleDBMemoryStore,
                                                             record_type: str) -> None:
    content = None if record_type == "thread" else "info"
    with pytest.raises(ValueError, match="statuses"):
        store.add([content], record_type, record_ids="x1", statuses=RecordStatus.INVALID)
    assert store.list(record_type) == []


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_omitted_timestamp_reads_as_creation_time(store: OracleDBMemoryStore,
                                                  pg_db: psycopg.Connection[Any]) -> None:
    store.add(["note"], "memory", record_ids="m1")
    record = store.get("memory", "m1")
    assert record is not None and record.timestamp is not None
    statement = sql.SQL("SELECT created_at, event_ts FROM {} WHERE id = %s").format(
        sql.Identifier(store._names.table("memory")))
    [(created_at, event_ts)] = pg_db.execute(statement, ["m1"]).fetchall()
    assert event_ts is None  # no event timestamp stored ...
    assert datetime.fromisoformat(record.timestamp) == created_at  # ... reads use created_at
    assert record.timestamp.endswith("+00:00")


@pytest.mark.parametrize(
    ("given", "returned"),
    [("2026-01-01T12:00:00+00:00", "2026-01-01T12:00:00+00:00"),
     ("2026-01-01T12:00:00Z", "2026-01-01T12:00:00+00:00"),
     ("2026-01-01T14:30:00+02:00", "2026-01-01T12:30:00+00:00"),
     ("2026-01-01T12:00:00", "2026-01-01T12:00:00+00:00")],
    ids=["utc", "zulu", "offset", "naive-is-utc"],
)
def test_given_timestamp_is_returned_in_utc(store: OracleDBMemoryStore, given: str,
                                            returned: str) -> None:
    store.add(["note"], "memory", record_ids="m1", timestamps=given)
    store.add(["hi"], "message", record_ids="msg1", thread_ids="t1", timestamps=given)
    for record_type, record_id in (("memory", "m1"), ("message", "msg1")):
        record = store.get(record_type, record_id)
        assert record is not None and record.timestamp == returned


def test_malformed_timestamp_rejected(store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match=r"timestamps\[0\]"):
        store.add(["note"], "memory", timestamps="yesterday")
    assert store.list("memory") == []


# --- list ----------------------------------------------------------------------------------


def test_max_list_limit_is_ten_thousand() -> None:
    assert MAX_LIST_LIMIT == 10000


def test_list_caps_at_max_list_limit_unless_limit_is_none(store: OracleDBMemoryStore) -> None:
    total = MAX_LIST_LIMIT + 1
    record_ids = [f"m{n:05d}" for n in range(total)]
    store.add([f"note {n}" for n in range(total)], "memory", record_ids=record_ids)
    capped = store.list("memory")
    assert len(capped) == MAX_LIST_LIMIT
    assert ids(capped) == record_ids[1:]  # the most recent records, oldest first
    assert ids(store.list("memory", limit=None)) == record_ids


def test_list_returns_most_recent_records_oldest_first(store: OracleDBMemoryStore) -> None:
    for n in range(5):
        store.add([f"note {n}"], "memory", record_ids=f"m{n}")
    assert ids(store.list("memory", limit=3)) == ["m2", "m3", "m4"]
    assert ids(store.list("memory", limit=1)) == ["m4"]
    assert ids(store.list("memory", limit=50)) == ["m0", "m1", "m2", "m3", "m4"]


@pytest.fixture(scope="module")
def scoped_memories(module_stores: StoreFactory) -> OracleDBMemoryStore:
    store = module_stores()
    store.add(
        ["global", "user only", "user in thread", "other user with agent"],
        "memory",
        record_ids=["m-none", "m-u1", "m-u1-t1", "m-u2-a1"],
        user_ids=[None, "u1", "u1", "u2"],
        thread_ids=[None, None, "t1", None],
        agent_ids=[None, None, None, "a1"],
    )
    return store


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["m-none", "m-u1", "m-u1-t1", "m-u2-a1"]),
        ({"user_id": "u1"}, ["m-u1", "m-u1-t1"]),
        ({"user_id": None}, ["m-none"]),
        ({"thread_id": "t1"}, ["m-u1-t1"]),
        ({"thread_id": None}, ["m-none", "m-u1", "m-u2-a1"]),
        ({"thread_id": None, "user_id": "u1"}, ["m-u1"]),
        ({"agent_id": "a1"}, ["m-u2-a1"]),
        ({"agent_id": None}, ["m-none", "m-u1", "m-u1-t1"]),
        ({"user_id": "nobody"}, []),
        ({"record_id": "m-u1"}, ["m-u1"]),
        ({"record_id": "m-u1", "user_id": "u2"}, []),
        ({"record_id": "missing"}, []),
    ],
    ids=lambda v: repr(v) if isinstance(v, dict) else None,
)
def test_list_scope_and_record_id_filters(scoped_memories: OracleDBMemoryStore,
                                          filters: dict[str, Any], expected: list[str]) -> None:
    assert ids(scoped_memories.list("memory", **filters)) == expected


def test_list_threads_by_record_id(store: OracleDBMemoryStore) -> None:
    store.add([None, None], "thread", record_ids=["t1", "t2"], user_ids=["u1", "u2"])
    assert ids(store.list("thread", record_id="t2")) == ["t2"]
    assert ids(store.list("thread", user_id="u1")) == ["t1"]


@pytest.mark.parametrize("thread_id", ["t1", None])
def test_list_threads_rejects_thread_id(store: OracleDBMemoryStore,
                                        thread_id: str | None) -> None:
    store.add([None], "thread", record_ids="t1")
    with pytest.raises(ValueError, match="thread_id"):
        store.list("thread", thread_id=thread_id)


@pytest.mark.parametrize(
    ("filters", "error", "argument"),
    [({"user_id": ""}, ValueError, "user_id"), ({"thread_id": "t" * 129}, ValueError, "thread_id"),
     ({"agent_id": 7}, TypeError, "agent_id"), ({"record_id": ""}, ValueError, "record_id"),
     ({"record_id": None}, TypeError, "record_id")],
    ids=lambda v: repr(v)[:40] if isinstance(v, dict) else None,
)
def test_list_rejects_bad_filters(empty_store: OracleDBMemoryStore, filters: dict[str, Any],
                                  error: type[Exception], argument: str) -> None:
    with pytest.raises(error, match=argument):
        empty_store.list("memory", **filters)


@pytest.mark.parametrize(
    ("limit", "error"),
    [(0, ValueError), (-1, ValueError), (True, TypeError), ("5", TypeError), (2.0, TypeError)],
)
def test_list_rejects_bad_limit(empty_store: OracleDBMemoryStore, limit: object,
                                error: type[Exception]) -> None:
    with pytest.raises(error, match="limit"):
        empty_store.list("memory", limit=limit)


# --- list_thread_messages ------------------------------------------------------------------


@pytest.fixture(scope="module")
def six_messages(module_stores: StoreFactory) -> OracleDBMemoryStore:
    store = module_stores()
    store.add([f"message {n}" for n in range(6)], "message",
              record_ids=[f"t1-{n}" for n in range(6)], thread_ids="t1")
    store.add(["elsewhere"], "message", record_ids="t2-0", thread_ids="t2")
    return store


@pytest.mark.parametrize(
    ("arguments", "expected_seq_nos"),
    [
        ({}, [0, 1, 2, 3, 4, 5]),
        ({"last_n": 2}, [4, 5]),
        ({"last_n": 50}, [0, 1, 2, 3, 4, 5]),
        ({"range_start_seq_no": 2}, [2, 3, 4, 5]),
        ({"range_end_seq_no": 3}, [0, 1, 2]),
        ({"range_start_seq_no": 1, "range_end_seq_no": 4}, [1, 2, 3]),
        ({"range_start_seq_no": 1, "range_end_seq_no": 5, "last_n": 2}, [3, 4]),
        ({"range_start_seq_no": 3, "range_end_seq_no": 3}, []),
        ({"range_start_seq_no": 6}, []),
    ],
    ids=lambda v: repr(v) if isinstance(v, dict) else None,
)
def test_list_thread_messages_window(six_messages: OracleDBMemoryStore,
                                     arguments: dict[str, int],
                                     expected_seq_nos: list[int]) -> None:
    messages = six_messages.list_thread_messages("t1", **arguments)
    assert [m.seq_no for m in messages] == expected_seq_nos
    assert [m.id for m in messages] == [f"t1-{n}" for n in expected_seq_nos]


@pytest.mark.parametrize(
    ("arguments", "error", "argument"),
    [
        ({"last_n": 0}, ValueError, "last_n"),
        ({"last_n": -3}, ValueError, "last_n"),
        ({"last_n": True}, TypeError, "last_n"),
        ({"range_start_seq_no": -1}, ValueError, "range_start_seq_no"),
        ({"range_start_seq_no": "1"}, TypeError, "range_start_seq_no"),
        ({"range_end_seq_no": -1}, ValueError, "range_end_seq_no"),
        ({"range_end_seq_no": 2.5}, TypeError, "range_end_seq_no"),
        ({"thread_id": ""}, ValueError, "thread_id"),
        ({"thread_id": None}, TypeError, "thread_id"),
    ],
    ids=lambda v: repr(v) if isinstance(v, dict) else None,
)
def test_list_thread_messages_rejects_bad_arguments(
        empty_store: OracleDBMemoryStore, arguments: dict[str, Any], error: type[Exception],
        argument: str) -> None:
    arguments = {"thread_id": "t1", **arguments}
    with pytest.raises(error, match=argument):
        empty_store.list_thread_messages(**arguments)


# --- delete --------------------------------------------------------------------------------


@pytest.mark.parametrize("record_type", ["memory", "fact", "message"])
def test_delete_returns_one_then_zero_and_removes_chunk_rows(
        store: OracleDBMemoryStore, db: StoredRows, record_type: str) -> None:
    store.add(["to be removed", "to be kept"], record_type, record_ids=["gone", "kept"],
              thread_ids="t1")
    assert chunk_count(db, store, ["gone"]) == 1
    assert store.delete(record_type, "gone") == 1
    assert store.get(record_type, "gone") is None
    assert chunk_count(db, store, ["gone"]) == 0
    assert chunk_count(db, store, ["kept"]) == 1
    assert store.delete(record_type, "gone") == 0


def test_delete_checks_record_type(store: OracleDBMemoryStore) -> None:
    store.add(["a memory"], "memory", record_ids="m1")
    assert store.delete("fact", "m1") == 0
    assert store.get("memory", "m1") is not None


def test_delete_thread_summary(store: OracleDBMemoryStore) -> None:
    store.add([{"text": "summary"}], "thread_summary", record_ids="s1", thread_ids="t1")
    assert store.delete("thread_summary", "s1") == 1
    assert store.get("thread_summary", "s1") is None
    assert store.delete("thread_summary", "s1") == 0


def test_delete_profile_removes_its_chunk_rows(store: OracleDBMemoryStore,
                                               db: StoredRows) -> None:
    store.add_user("u1", "Prefers tea")
    assert chunk_count(db, store, ["u1"]) == 1
    assert store.delete("user_profile", "u1") == 1
    assert chunk_count(db, store, ["u1"]) == 0


def _populate_actors(store: OracleDBMemoryStore, column: str) -> None:
    """Two actors (x1, x2) scoped by ``column`` ('user_ids' or 'agent_ids'), each with a thread
    that holds unscoped messages, memories and a summary, plus directly scoped rows; and one
    global memory."""
    store.add([None, None], "thread", record_ids=["t-x1", "t-x2"], **{column: ["x1", "x2"]})
    for actor in ("x1", "x2"):
        store.add(["hello", "hi"], "message", record_ids=[f"msg-{actor}-a", f"msg-{actor}-b"],
                  thread_ids=f"t-{actor}")
        store.add(["thread memory"], "memory", record_ids=f"mem-t-{actor}",
                  thread_ids=f"t-{actor}")
        store.add(["summary"], "thread_summary", record_ids=f"sum-{actor}",
                  thread_ids=f"t-{actor}")
        store.add(["direct message"], "message", record_ids=f"msg-direct-{actor}",
                  thread_ids="t-unowned", **{column: actor})
        store.add(["direct memory"], "memory", record_ids=f"mem-direct-{actor}", **{column: actor})
        store.add(["direct fact"], "fact", record_ids=f"fact-direct-{actor}", **{column: actor})
    store.add(["global memory"], "memory", record_ids="mem-global")


def _actor_rows(actor: str) -> dict[str, list[str]]:
    return {
        "thread": [f"t-{actor}"],
        "message": [f"msg-{actor}-a", f"msg-{actor}-b", f"msg-direct-{actor}"],
        "memory": [f"mem-t-{actor}", f"mem-direct-{actor}"],
        "fact": [f"fact-direct-{actor}"],
        "thread_summary": [f"sum-{actor}"],
    }


def _present(store: OracleDBMemoryStore, rows: dict[str, list[str]]) -> dict[str, list[str]]:
    return {t: [i for i in record_ids if store.get(t, i) is not None]
            for t, record_ids in rows.items()}


@pytest.mark.parametrize(
    ("profile_type", "column"),
    [("user_profile", "user_ids"), ("agent_profile", "agent_ids")],
)
def test_cascade_delete_of_profile_removes_the_actors_rows_only(
        store: OracleDBMemoryStore, db: StoredRows, profile_type: str,
        column: str) -> None:
    add_profile = store.add_user if profile_type == "user_profile" else store.add_agent
    add_profile("x1", "first actor")
    add_profile("x2", "second actor")
    _populate_actors(store, column)
    removed = _actor_rows("x1")
    removed_ids = [i for record_ids in removed.values() for i in record_ids] + ["x1"]
    assert chunk_count(db, store, removed_ids) > 0

    assert store.delete(profile_type, "x1", cascade=True) == 1

    assert store.get(profile_type, "x1") is None
    assert _present(store, removed) == {t: [] for t in removed}
    assert chunk_count(db, store, removed_ids) == 0
    kept = _actor_rows("x2")
    assert _present(store, kept) == kept
    assert store.get(profile_type, "x2") is not None
    assert store.get("memory", "mem-global") is not None


def test_cascade_delete_runs_when_profile_is_missing(store: OracleDBMemoryStore,
                                                     db: StoredRows) -> None:
    _populate_actors(store, "user_ids")
    assert store.delete("user_profile", "x1", cascade=True) == 0
    removed = _actor_rows("x1")
    assert _present(store, removed) == {t: [] for t in removed}
    kept = _actor_rows("x2")
    assert _present(store, kept) == kept


def test_delete_profile_without_cascade_leaves_scoped_rows(store: OracleDBMemoryStore) -> None:
    store.add_user("x1", "first actor")
    _populate_actors(store, "user_ids")
    assert store.delete("user_profile", "x1") == 1
    assert store.get("user_profile", "x1") is None
    rows = _actor_rows("x1")
    assert _present(store, rows) == rows


def fail_deletes_of(db: psycopg.Connection[Any], store: OracleDBMemoryStore, table: str,
                    record_id: str) -> None:
    """Install a real trigger that makes deleting ``record_id`` from ``table`` fail."""
    function = sql.Identifier(store._names.table(table) + "_fail_delete")
    db.execute(sql.SQL(
        "CREATE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF OLD.id = {} THEN RAISE EXCEPTION 'injected delete failure'; END IF; "
        "RETURN OLD; END $$").format(function, sql.Literal(record_id)))
    db.execute(sql.SQL(
        "CREATE TRIGGER fail_delete BEFORE DELETE ON {} FOR EACH ROW EXECUTE FUNCTION {}()"
    ).format(sql.Identifier(store._names.table(table)), function))


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_cascade_delete_is_one_transaction(store: OracleDBMemoryStore,
                                           pg_db: psycopg.Connection[Any]) -> None:
    store.add_user("x1", "first actor")
    _populate_actors(store, "user_ids")
    # The last step of the cascade (the directly scoped memories) fails ...
    fail_deletes_of(pg_db, store, "memory", "mem-direct-x1")
    with pytest.raises(DatabaseError, match="injected delete failure"):
        store.delete("user_profile", "x1", cascade=True)
    # ... so the profile, the thread and its rows deleted before it are all still there.
    assert store.get("user_profile", "x1") is not None
    rows = _actor_rows("x1")
    assert _present(store, rows) == rows


def test_cascade_must_be_a_bool(store: OracleDBMemoryStore) -> None:
    with pytest.raises(TypeError, match="cascade"):
        store.delete("user_profile", "x1", cascade="yes")  # type: ignore[arg-type]


# --- delete_thread -------------------------------------------------------------------------


def test_delete_thread_removes_thread_and_its_scoped_rows(store: OracleDBMemoryStore,
                                                         db: StoredRows) -> None:
    for thread in ("t1", "t2"):
        store.add([None], "thread", record_ids=thread, user_ids="u1")
        store.add(["hi", "hello"], "message", record_ids=[f"{thread}-m0", f"{thread}-m1"],
                  thread_ids=thread, user_ids="u1")
        store.add(["thread memory"], "memory", record_ids=f"{thread}-mem", thread_ids=thread)
        store.add(["thread preference"], "preference", record_ids=f"{thread}-pref",
                  thread_ids=thread, user_ids="u1")
        store.add([{"text": "summary"}], "thread_summary", record_ids=f"{thread}-sum",
                  thread_ids=thread)
    store.add(["user memory outside threads"], "memory", record_ids="u1-mem", user_ids="u1")
    t1_records = ["t1-m0", "t1-m1", "t1-mem", "t1-pref"]
    assert chunk_count(db, store, t1_records) == 4

    assert store.delete_thread("t1") == 1

    assert store.get("thread", "t1") is None
    assert store.list_thread_messages("t1") == []
    for table in ("message", "memory", "thread_summary"):
        assert count(db, store, table, {"thread_id": "t1"}) == 0, table
    assert chunk_count(db, store, t1_records) == 0
    # Other threads and rows outside the thread are untouched.
    assert ids(store.list_thread_messages("t2")) == ["t2-m0", "t2-m1"]
    assert ids(store.list("memory")) == ["t2-mem", "u1-mem"]
    assert ids(store.list("thread_summary")) == ["t2-sum"]
    assert chunk_count(db, store, ["t2-m0", "t2-m1", "t2-mem", "t2-pref", "u1-mem"]) == 5

    assert store.delete_thread("t1") == 0


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_delete_thread_is_one_transaction(store: OracleDBMemoryStore, db: StoredRows,
                                          pg_db: psycopg.Connection[Any]) -> None:
    store.add([None], "thread", record_ids="t1")
    store.add(["hi"], "message", record_ids="m1", thread_ids="t1")
    store.add(["thread memory"], "memory", record_ids="mem1", thread_ids="t1")
    fail_deletes_of(pg_db, store, "thread", "t1")  # the thread row goes last and fails
    with pytest.raises(DatabaseError, match="injected delete failure"):
        store.delete_thread("t1")
    assert ids(store.list_thread_messages("t1")) == ["m1"]
    assert store.get("memory", "mem1") is not None
    assert chunk_count(db, store, ["m1", "mem1"]) == 2


def test_delete_thread_rejects_empty_id(store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="thread_id"):
        store.delete_thread("")


# --- add_batches ---------------------------------------------------------------------------


def test_add_batches_of_several_types_in_one_call(store: OracleDBMemoryStore) -> None:
    result = store.add_batches([
        PendingRecordBatch(contents=[None], record_type="thread", record_ids="t1",
                           user_ids="u1"),
        PendingRecordBatch(contents=["Hi", "Hello"], record_type="message",
                           record_ids=["m1", "m2"], thread_ids="t1", roles=["user", "assistant"]),
        PendingRecordBatch(contents=["Likes tea", "Lives in Lisbon"], record_type="memory",
                           record_ids=["mem1", "mem2"], user_ids="u1"),
        PendingRecordBatch(contents=["Is vegetarian"], record_type="fact", record_ids="f1"),
        PendingRecordBatch(contents=["Tea lover"], record_type="user_profile", record_ids="u1"),
    ])
    assert result == ["t1", "m1", "m2", "mem1", "mem2", "f1", "u1"]
    assert store.get("thread", "t1") is not None
    assert [(m.content, m.seq_no) for m in store.list_thread_messages("t1")] == [("Hi", 0),
                                                                               ("Hello", 1)]
    assert ids(store.list("memory", user_id="u1")) == ["mem1", "mem2"]
    assert isinstance(store.get("fact", "f1"), FactRecord)
    assert isinstance(store.get("user_profile", "u1"), UserProfileRecord)


def test_add_batches_generates_ids_when_omitted(store: OracleDBMemoryStore) -> None:
    result = store.add_batches([PendingRecordBatch(contents=["a", "b"], record_type="memory")])
    assert len(result) == 2 and len(set(result)) == 2
    assert ids(store.list("memory")) == result


def test_add_batches_with_one_invalid_batch_writes_nothing(store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="user_ids"):
        store.add_batches([
            PendingRecordBatch(contents=["fine"], record_type="memory", record_ids="ok1"),
            PendingRecordBatch(contents=["fine too"], record_type="fact", record_ids="ok2"),
            PendingRecordBatch(contents=["bad"], record_type="memory", record_ids="bad",
                               user_ids="u" * 129),
        ])
    assert store.list("memory") == []
    assert store.list("fact") == []


def test_add_batches_rolls_back_when_a_later_batch_hits_an_existing_id(
        store: OracleDBMemoryStore) -> None:
    store.add(["existing"], "memory", record_ids="taken")
    with pytest.raises(ValueError, match="record_ids"):
        store.add_batches([
            PendingRecordBatch(contents=["new"], record_type="message", record_ids="new-msg",
                               thread_ids="t1"),
            PendingRecordBatch(contents=["clash"], record_type="memory", record_ids="taken"),
        ])
    assert store.list("message") == []
    taken = store.get("memory", "taken")
    assert taken is not None and taken.content == "existing"


@pytest.mark.parametrize("second_type", ["memory", "fact"])
def test_add_batches_rejects_duplicate_ids_across_batches(store: OracleDBMemoryStore,
                                                         second_type: str) -> None:
    with pytest.raises(ValueError, match="record_ids"):
        store.add_batches([
            PendingRecordBatch(contents=["one"], record_type="memory", record_ids="dup"),
            PendingRecordBatch(contents=["two"], record_type=second_type, record_ids="dup"),
        ])
    assert store.list("memory") == []
    assert store.list("fact") == []


def test_add_batches_accepts_batch_size(store: OracleDBMemoryStore,
                                        db: StoredRows) -> None:
    record_ids = [f"m{n}" for n in range(5)]
    result = store.add_batches(
        [PendingRecordBatch(contents=[f"note {n}" for n in range(5)], record_type="memory",
                            record_ids=list(record_ids))],
        batch_size=2,
    )
    assert result == record_ids
    assert ids(store.list("memory")) == record_ids
    assert chunk_count(db, store, record_ids) == 5


def test_add_accepts_batch_size(store: OracleDBMemoryStore) -> None:
    assert store.add(["a", "b", "c"], "memory", record_ids=["a", "b", "c"], batch_size=1) == [
        "a", "b", "c"]
    assert ids(store.list("memory")) == ["a", "b", "c"]


@pytest.mark.parametrize(("batch_size", "error"), [(0, ValueError), (True, TypeError)])
def test_bad_batch_size_rejected(store: OracleDBMemoryStore, batch_size: object,
                                 error: type[Exception]) -> None:
    with pytest.raises(error, match="batch_size"):
        store.add_batches([PendingRecordBatch(contents=["x"], record_type="memory")],
                          batch_size=batch_size)
    assert store.list("memory") == []


def test_unknown_store_kwargs_rejected(store: OracleDBMemoryStore) -> None:
    with pytest.raises(TypeError, match="chunk_size"):
        store.add_batches([PendingRecordBatch(contents=["x"], record_type="memory")],
                          chunk_size=10)
    with pytest.raises(TypeError, match="commit_every"):
        store.add(["x"], "memory", commit_every=10)
    assert store.list("memory") == []


def test_add_batches_rejects_non_batches(store: OracleDBMemoryStore) -> None:
    with pytest.raises(TypeError, match=r"batches\[0\]"):
        store.add_batches([{"contents": ["x"], "record_type": "memory"}])  # type: ignore[list-item]


# --- bad input to add ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "error", "argument"),
    [
        ({"record_type": "diary"}, ValueError, "record_type"),
        ({"record_type": 3}, TypeError, "record_type"),
        ({"contents": "Likes tea"}, TypeError, "contents"),
        ({"contents": ["a", "b", "c"], "thread_ids": ["t1", "t2"]}, ValueError, "thread_ids"),
        ({"contents": ["a", "b"], "record_ids": ["only-one"]}, ValueError, "record_ids"),
        ({"contents": ["a", "b"], "record_ids": "one-string"}, ValueError, "record_ids"),
        ({"record_ids": ""}, ValueError, "record_ids"),
        ({"record_ids": ["   "]}, ValueError, "record_ids"),
        ({"record_ids": "r" * 129}, ValueError, "record_ids"),
        ({"record_ids": [7]}, TypeError, "record_ids"),
        ({"record_ids": 7}, TypeError, "record_ids"),
        ({"contents": ["a", "b"], "record_ids": ["dup", "dup"]}, ValueError, "record_ids"),
        ({"user_ids": "u" * 129}, ValueError, "user_ids"),
        ({"contents": ["a", "b"], "user_ids": ["u1", "u" * 129]}, ValueError, "user_ids"),
        ({"agent_ids": ""}, ValueError, "agent_ids"),
        ({"thread_ids": 42}, TypeError, "thread_ids"),
        ({"metadata": "not a dict"}, TypeError, "metadata"),
        ({"ttl_days": 0}, ValueError, "ttl_days"),
        ({"statuses": "archived"}, ValueError, "statuses"),
    ],
    ids=lambda v: repr(v)[:60] if isinstance(v, dict) else None,
)
def test_add_rejects_bad_arguments_and_writes_nothing(
        store: OracleDBMemoryStore, arguments: dict[str, Any], error: type[Exception],
        argument: str) -> None:
    call = {"contents": ["a"], "record_type": "memory", **arguments}
    with pytest.raises(error, match=argument):
        store.add(**call)
    assert store.list("memory") == []


def test_record_id_of_128_characters_is_accepted(store: OracleDBMemoryStore) -> None:
    long_id = "r" * 128
    assert store.add(["a"], "memory", record_ids=long_id, user_ids="u" * 128) == [long_id]
    record = store.get("memory", long_id)
    assert isinstance(record, MemoryRecord) and record.user_id == "u" * 128


def test_add_rejects_id_of_existing_record_and_writes_nothing(store: OracleDBMemoryStore) -> None:
    store.add(["original"], "memory", record_ids="taken")
    with pytest.raises(ValueError, match="record_ids.*taken"):
        store.add(["new", "clash"], "memory", record_ids=["fresh", "taken"])
    assert store.get("memory", "fresh") is None
    taken = store.get("memory", "taken")
    assert taken is not None and taken.content == "original"


@pytest.mark.parametrize("record_id", ["team, alpha", "a, b, c", "(x)=(y)"])
def test_duplicate_id_error_names_the_whole_id(store: OracleDBMemoryStore,
                                               record_id: str) -> None:
    store.add(["original"], "memory", record_ids=record_id)
    store.add_user(record_id, "original profile")
    with pytest.raises(ValueError, match="record_ids") as memory_error:
        store.add(["again"], "memory", record_ids=record_id)
    with pytest.raises(ValueError, match="record_ids") as profile_error:
        store.add_user(record_id, "again")
    assert repr(record_id) in str(memory_error.value)
    assert repr(record_id) in str(profile_error.value)


def test_add_rejects_id_of_existing_record_of_another_memory_type(
        store: OracleDBMemoryStore) -> None:
    store.add(["a memory"], "memory", record_ids="taken")
    with pytest.raises(ValueError, match="record_ids"):
        store.add(["a fact"], "fact", record_ids="taken")
    assert store.list("fact") == []


def test_add_user_rejects_existing_profile(store: OracleDBMemoryStore) -> None:
    store.add_user("u1", "first")
    with pytest.raises(ValueError, match="record_ids"):
        store.add_user("u1", "second")
    profile = store.get("user_profile", "u1")
    assert profile is not None and profile.content == "first"


@pytest.mark.parametrize(
    ("method", "arguments", "error", "argument"),
    [
        ("get", ("diary", "x"), ValueError, "record_type"),
        ("get", ("memory", ""), ValueError, "record_id"),
        ("get", ("memory", "r" * 129), ValueError, "record_id"),
        ("get", ("memory", 5), TypeError, "record_id"),
        ("list", ("diary",), ValueError, "record_type"),
        ("delete", ("diary", "x"), ValueError, "record_type"),
        ("delete", ("memory", ""), ValueError, "record_id"),
        ("add_user", ("", "info"), ValueError, "user_id"),
        ("add_user", ("u" * 129, "info"), ValueError, "user_id"),
        ("add_user", ("u1", 5), TypeError, "information"),
        ("add_agent", (None, "info"), TypeError, "agent_id"),
    ],
    ids=lambda v: repr(v)[:40] if isinstance(v, tuple) else None,
)
def test_other_methods_reject_bad_arguments(empty_store: OracleDBMemoryStore, method: str,
                                            arguments: tuple[Any, ...],
                                            error: type[Exception], argument: str) -> None:
    with pytest.raises(error, match=argument):
        getattr(empty_store, method)(*arguments)


# --- async twins ---------------------------------------------------------------------------


def test_add_get_list_async(store: OracleDBMemoryStore) -> None:
    async def scenario() -> tuple[list[str], Record | None, list[Record]]:
        added = await store.add_async(["Likes tea"], "memory", record_ids="m1", user_ids="u1")
        return added, await store.get_async("memory", "m1"), await store.list_async(
            "memory", user_id="u1")

    added, record, listed = asyncio.run(scenario())
    assert added == ["m1"]
    assert record is not None and record.content == "Likes tea"
    assert ids(listed) == ["m1"]


def test_update_and_delete_async(store: OracleDBMemoryStore) -> None:
    store.add(["before"], "memory", record_ids="m1")

    async def scenario() -> tuple[int, Record | None, int, int]:
        updated = await store.update_async("memory", "m1", content="after")
        record = await store.get_async("memory", "m1")
        return updated, record, await store.delete_async("memory", "m1"), await store.delete_async(
            "memory", "m1")

    updated, record, first, second = asyncio.run(scenario())
    assert updated == 1
    assert record is not None and record.content == "after"
    assert (first, second) == (1, 0)
    assert store.get("memory", "m1") is None


def test_add_batches_and_add_user_async(store: OracleDBMemoryStore) -> None:
    async def scenario() -> tuple[list[str], str]:
        batch_ids = await store.add_batches_async(
            [PendingRecordBatch(contents=["a", "b"], record_type="fact", record_ids=["f1", "f2"])],
            batch_size=1,
        )
        return batch_ids, await store.add_user_async("u1", "Prefers tea")

    assert asyncio.run(scenario()) == (["f1", "f2"], "u1")
    assert ids(store.list("fact")) == ["f1", "f2"]
    profile = store.get("user_profile", "u1")
    assert profile is not None and profile.content == "Prefers tea"


def test_list_thread_messages_and_delete_thread_async(store: OracleDBMemoryStore) -> None:
    store.add([None], "thread", record_ids="t1")
    store.add(["one", "two", "three"], "message", record_ids=["m0", "m1", "m2"], thread_ids="t1")

    async def scenario() -> tuple[list[MessageRecord], int, int, list[MessageRecord]]:
        window = await store.list_thread_messages_async("t1", last_n=2)
        first = await store.delete_thread_async("t1")
        second = await store.delete_thread_async("t1")
        return window, first, second, await store.list_thread_messages_async("t1")

    window, first, second, after = asyncio.run(scenario())
    assert ids(window) == ["m1", "m2"]
    assert (first, second, after) == (1, 0, [])


def test_async_twins_raise_the_same_errors(store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="record_ids"):
        asyncio.run(store.add_async(["a", "b"], "memory", record_ids=["d", "d"]))
    with pytest.raises(ValueError, match="limit"):
        asyncio.run(store.list_async("memory", limit=0))
    assert store.list("memory") == []


request_user: ContextVar[str | None] = ContextVar("request_user", default=None)


class ContextRecordingEmbedder(IEmbedder):
    """Records the ``request_user`` context variable and the thread of every ``embed`` call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, int]] = []

    @property
    def embedding_dimension(self) -> int:
        return 3

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        self.calls.append((request_user.get(), threading.get_ident()))
        return np.tile(np.array([1.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


def test_async_twin_carries_context_vars_into_its_worker_thread(
        make_store: StoreFactory, db: StoredRows) -> None:
    embedder = ContextRecordingEmbedder()
    store = make_store(embedder=embedder)
    assert store.vector_dim == 3

    async def scenario() -> list[str]:
        request_user.set("alice")
        return await store.add_async(["Likes tea"], "memory", record_ids="m1")

    assert asyncio.run(scenario()) == ["m1"]
    [(seen_user, worker_thread)] = embedder.calls
    assert seen_user == "alice"
    assert worker_thread != threading.get_ident()  # the embedder ran off the event loop thread
    assert request_user.get() is None  # the value stayed inside the task's context
    assert [chunk.vector is not None for chunk in db.chunks(store, "m1")] == [True]
