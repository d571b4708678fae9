"""Time to live: ``ttl_days``, ``ttl_anchor``, ``MemoryRetentionConfig`` and ``purge_expired``.

Expiry times are checked in the store's tables (``tests/stored_rows.py``, on the engine under
test); visibility through the store API.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from oracleagentmemory.apis import TimeToLiveAnchor
from oracleagentmemory.core import (
    MemoryRetentionConfig,
    MemoryStoreSchemaError,
    OracleDBMemoryStore,
    SchemaPolicy,
)
from stored_rows import PostgresStoredRows, StoredRows, open_stored_rows

POSTGRESQL_ONLY = "sets a PostgreSQL session time zone on a psycopg connection"
"""Why the marked tests do not run on Oracle (``tests/provision/engine_marks.py``)."""

StoreFactory = Callable[..., OracleDBMemoryStore]
TS = TimeToLiveAnchor.TIMESTAMP
DAY = timedelta(days=1)


def days_ago(days: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()


class Times:
    """``created_at``, ``event_ts`` and ``expires_at`` of one stored row."""

    def __init__(self, created_at: datetime, event_ts: datetime | None,
                 expires_at: datetime | None) -> None:
        self.created_at = created_at
        self.event_ts = event_ts
        self.expires_at = expires_at


@pytest.fixture
def db(database_url: object) -> Iterator[StoredRows]:
    """Reads what the store wrote, on the engine under test (``tests/stored_rows.py``)."""
    with open_stored_rows(database_url) as rows:
        yield rows


def times(db: StoredRows, store: OracleDBMemoryStore, record_id: str,
          table: str = "memory") -> Times:
    row = db.timestamps(store, table, record_id, ("created_at", "event_ts", "expires_at"))
    assert row is not None, f"{record_id} is not in the {table} table"
    created_at, event_ts, expires_at = row
    assert created_at is not None
    return Times(created_at, event_ts, expires_at)


def chunk_count(db: StoredRows, store: OracleDBMemoryStore, record_ids: list[str]) -> int:
    """Retrieval rows stored for ``record_ids`` (expired rows included)."""
    return sum(len(db.chunks(store, record_id)) for record_id in record_ids)


def registry_retention(db: StoredRows, store: OracleDBMemoryStore) -> tuple[Any, Any]:
    default_ttl_days, max_ttl_days = db.registry(store, ("default_ttl_days", "max_ttl_days"))
    return default_ttl_days, max_ttl_days


def visible_ids(store: OracleDBMemoryStore, record_type: str = "memory") -> set[str]:
    return {r.id for r in store.list(record_type)}


# --- anchors ------------------------------------------------------------------------------

def test_ttl_days_counts_from_creation_time_by_default(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["short"], "memory", record_ids="m", ttl_days=3,
              timestamps="2001-01-01T00:00:00+00:00")
    row = times(db, store, "m")
    assert row.expires_at == row.created_at + 3 * DAY  # the old event timestamp is ignored
    assert store.get("memory", "m") is not None


def test_created_at_anchor_can_be_named(store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["short"], "memory", record_ids="m", ttl_days=2,
              ttl_anchor=TimeToLiveAnchor.CREATED_AT)
    row = times(db, store, "m")
    assert row.expires_at == row.created_at + 2 * DAY


@pytest.mark.parametrize(
    ("timestamp", "event_utc"),
    [
        pytest.param("2099-06-01T12:00:00+02:00", datetime(2099, 6, 1, 10, tzinfo=timezone.utc),
                     id="offset"),
        pytest.param("2099-06-01T12:00:00", datetime(2099, 6, 1, 12, tzinfo=timezone.utc),
                     id="naive-is-utc"),
        pytest.param("2099-06-01T12:00:00Z", datetime(2099, 6, 1, 12, tzinfo=timezone.utc),
                     id="z-suffix"),
        pytest.param("2099-06-01T12:00:00.250-05:30",
                     datetime(2099, 6, 1, 17, 30, 0, 250000, tzinfo=timezone.utc),
                     id="fraction-and-negative-offset"),
    ],
)
def test_timestamp_anchor_counts_from_the_event_time(
        store: OracleDBMemoryStore, db: StoredRows, timestamp: str, event_utc: datetime) -> None:
    store.add(["event"], "memory", record_ids="m", timestamps=timestamp, ttl_days=7,
              ttl_anchor=TS)
    row = times(db, store, "m")
    assert row.event_ts == event_utc
    assert row.expires_at == event_utc + 7 * DAY


def test_anchors_and_ttls_align_per_record(store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["a", "b"], "memory", record_ids=["a", "b"], ttl_days=[1, 5],
              timestamps="2099-06-01T00:00:00+00:00",
              ttl_anchor=[TS, TimeToLiveAnchor.CREATED_AT])
    a, b = times(db, store, "a"), times(db, store, "b")
    assert a.expires_at == datetime(2099, 6, 2, tzinfo=timezone.utc)
    assert b.expires_at == b.created_at + 5 * DAY


def test_anchor_accepts_the_enum_value_string(store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["a"], "memory", record_ids="a", ttl_days=1, ttl_anchor="timestamp",
              timestamps="2099-06-01T00:00:00+00:00")
    assert times(db, store, "a").expires_at == datetime(2099, 6, 2, tzinfo=timezone.utc)


def test_without_ttl_a_record_never_expires(store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["kept"], "memory", record_ids="omitted")
    store.add(["kept"], "memory", record_ids="none", ttl_days=None)
    assert times(db, store, "omitted").expires_at is None
    assert times(db, store, "none").expires_at is None


def test_messages_expire_too(store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["hi"], "message", record_ids="msg", thread_ids="t", ttl_days=2)
    row = times(db, store, "msg", table="message")
    assert row.expires_at == row.created_at + 2 * DAY


# --- expired records are invisible --------------------------------------------------------

def test_expired_memory_is_invisible_to_get_and_list(store: OracleDBMemoryStore) -> None:
    store.add(["old", "fresh"], "memory", record_ids=["old", "fresh"],
              timestamps=[days_ago(3), days_ago(0.5)], ttl_days=1, ttl_anchor=TS)
    assert store.get("memory", "old") is None
    assert store.get("memory", "fresh") is not None
    assert visible_ids(store) == {"fresh"}
    assert store.list("memory", record_id="old") == []


def test_expired_messages_are_invisible_in_thread_reads(store: OracleDBMemoryStore) -> None:
    store.add(["first", "second", "third"], "message", record_ids=["m0", "m1", "m2"],
              thread_ids="t", timestamps=[days_ago(5), days_ago(0.5), days_ago(4)],
              ttl_days=1, ttl_anchor=TS)
    assert [m.id for m in store.list_thread_messages("t")] == ["m1"]
    assert [m.id for m in store.list_thread_messages("t", last_n=3)] == ["m1"]
    assert [m.id for m in store.list("message", thread_id="t")] == ["m1"]
    assert store.get("message", "m0") is None


def test_expired_records_do_not_use_up_the_limit(store: OracleDBMemoryStore) -> None:
    store.add(["keep"], "memory", record_ids="keep")
    store.add([f"old {n}" for n in range(5)], "memory", timestamps=days_ago(3), ttl_days=1,
              ttl_anchor=TS)
    assert [r.id for r in store.list("memory", limit=1)] == ["keep"]


# --- invalid arguments --------------------------------------------------------------------

def test_timestamp_anchor_needs_a_timestamp(store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="timestamps"):
        store.add(["x"], "memory", ttl_days=1, ttl_anchor=TS)
    with pytest.raises(ValueError, match=r"timestamps\[1\]"):
        store.add(["x", "y"], "memory", ttl_days=1, ttl_anchor=TS,
                  timestamps=["2099-01-01T00:00:00+00:00", None])
    assert visible_ids(store) == set()  # nothing of a rejected call is written


@pytest.mark.parametrize("timestamp", ["yesterday", "2026-13-01T00:00:00", "", "2026-01-01T25:00"])
def test_invalid_timestamps_are_rejected(store: OracleDBMemoryStore, timestamp: str) -> None:
    with pytest.raises(ValueError, match="timestamps"):
        store.add(["x"], "memory", timestamps=timestamp, ttl_days=1, ttl_anchor=TS)


def test_non_string_timestamp_is_rejected(store: OracleDBMemoryStore) -> None:
    with pytest.raises(TypeError, match="timestamps"):
        store.add(["x"], "memory", timestamps=1700000000)


@pytest.mark.parametrize("ttl_days", [0, -1])
def test_ttl_days_below_one_is_rejected(store: OracleDBMemoryStore, ttl_days: int) -> None:
    with pytest.raises(ValueError, match="ttl_days"):
        store.add(["x"], "memory", ttl_days=ttl_days)
    store.add(["x"], "memory", record_ids="m")
    with pytest.raises(ValueError, match="ttl_days"):
        store.update("memory", "m", ttl_days=ttl_days)


@pytest.mark.parametrize("ttl_days", [True, 1.5, "3"])
def test_ttl_days_must_be_an_int(store: OracleDBMemoryStore, ttl_days: Any) -> None:
    with pytest.raises(TypeError, match="ttl_days"):
        store.add(["x"], "memory", ttl_days=ttl_days)
    store.add(["x"], "memory", record_ids="m")
    with pytest.raises(TypeError, match="ttl_days"):
        store.update("memory", "m", ttl_days=ttl_days)


def test_invalid_anchor_is_rejected(store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="ttl_anchor"):
        store.add(["x"], "memory", ttl_days=1, ttl_anchor="yesterday")


@pytest.mark.parametrize(
    ("record_type", "extra"),
    [
        pytest.param("user_profile", {"record_ids": "u1"}, id="user_profile"),
        pytest.param("agent_profile", {"record_ids": "a1"}, id="agent_profile"),
        pytest.param("thread", {"record_ids": "t1"}, id="thread"),
    ],
)
def test_ttl_on_records_that_do_not_expire_is_rejected(
        store: OracleDBMemoryStore, record_type: str, extra: dict[str, Any]) -> None:
    content = None if record_type == "thread" else "info"
    with pytest.raises(ValueError, match="ttl_days.*do not expire"):
        store.add([content], record_type, ttl_days=3, **extra)
    store.add([content], record_type, **extra)
    with pytest.raises(ValueError, match="ttl_days.*do not expire"):
        store.update(record_type, extra["record_ids"], ttl_days=3)


def test_retention_config_values_are_checked() -> None:
    with pytest.raises(ValueError, match="default_ttl_days"):
        MemoryRetentionConfig(default_ttl_days=0)
    with pytest.raises(ValueError, match="max_ttl_days"):
        MemoryRetentionConfig(max_ttl_days=-2)
    with pytest.raises(TypeError, match="max_ttl_days"):
        MemoryRetentionConfig(max_ttl_days=True)


# --- MemoryRetentionConfig ----------------------------------------------------------------

def test_default_ttl_is_used_when_ttl_days_is_omitted(
        make_store: StoreFactory, db: StoredRows) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=5))
    store.add(["a"], "memory", record_ids="default")
    store.add(["b"], "memory", record_ids="explicit", ttl_days=2)
    store.add(["c"], "memory", record_ids="forever", ttl_days=None)
    store.add(["d"], "message", record_ids="msg", thread_ids="t")
    default = times(db, store, "default")
    assert default.expires_at == default.created_at + 5 * DAY
    explicit = times(db, store, "explicit")
    assert explicit.expires_at == explicit.created_at + 2 * DAY
    assert times(db, store, "forever").expires_at is None
    msg = times(db, store, "msg", table="message")
    assert msg.expires_at == msg.created_at + 5 * DAY


def test_values_above_the_maximum_are_clamped_with_a_warning(
        make_store: StoreFactory, db: StoredRows) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(max_ttl_days=10))
    with pytest.warns(UserWarning, match="max_ttl_days"):
        store.add(["a"], "memory", record_ids="long", ttl_days=30)
    row = times(db, store, "long")
    assert row.expires_at == row.created_at + 10 * DAY
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.add(["b"], "memory", record_ids="at-max", ttl_days=10)
    row = times(db, store, "at-max")
    assert row.expires_at == row.created_at + 10 * DAY


def test_update_clamps_to_the_maximum_with_a_warning(
        make_store: StoreFactory, db: StoredRows) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(max_ttl_days=4))
    store.add(["a"], "memory", record_ids="m", ttl_days=1)
    with pytest.warns(UserWarning, match="max_ttl_days"):
        assert store.update("memory", "m", ttl_days=400) == 1
    row = times(db, store, "m")
    assert row.expires_at == row.created_at + 4 * DAY


def test_ttl_none_uses_the_maximum_when_one_is_set(
        make_store: StoreFactory, db: StoredRows) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(max_ttl_days=10))
    store.add(["a"], "memory", record_ids="none", ttl_days=None)
    store.add(["b"], "memory", record_ids="omitted")
    for record_id in ("none", "omitted"):
        row = times(db, store, record_id)
        assert row.expires_at == row.created_at + 10 * DAY


def test_ttl_none_never_expires_without_a_maximum(
        make_store: StoreFactory, db: StoredRows) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=3))
    store.add(["a"], "memory", record_ids="none", ttl_days=None)
    assert times(db, store, "none").expires_at is None


def test_store_reports_its_retention_config(make_store: StoreFactory) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=2,
                                                                     max_ttl_days=9))
    assert store.memory_retention_config.resolved() == (2, 9)


# --- update -------------------------------------------------------------------------------

def test_update_ttl_recomputes_expiry_from_creation(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["a"], "memory", record_ids="m", ttl_days=1)
    assert store.update("memory", "m", ttl_days=30) == 1
    row = times(db, store, "m")
    assert row.expires_at == row.created_at + 30 * DAY


def test_update_can_revive_an_expired_unpurged_record(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["old"], "memory", record_ids="m", timestamps=days_ago(3), ttl_days=1,
              ttl_anchor=TS)
    assert store.get("memory", "m") is None
    assert store.update("memory", "m", ttl_days=30) == 1
    revived = store.get("memory", "m")
    assert revived is not None and revived.content == "old"
    row = times(db, store, "m")
    assert row.expires_at == row.created_at + 30 * DAY


def test_update_ttl_none_clears_expiry(store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["old"], "memory", record_ids="m", timestamps=days_ago(3), ttl_days=1,
              ttl_anchor=TS)
    assert store.update("memory", "m", ttl_days=None) == 1
    assert times(db, store, "m").expires_at is None
    assert store.get("memory", "m") is not None


def test_update_without_ttl_arguments_keeps_expiry(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["a"], "memory", record_ids="m", ttl_days=3, ttl_anchor=TS,
              timestamps="2099-06-01T00:00:00+00:00")
    before = times(db, store, "m").expires_at
    store.update("memory", "m", content="changed", metadata={"k": 1})
    store.update("memory", "m", timestamp="2099-07-01T00:00:00+00:00")
    assert times(db, store, "m").expires_at == before


def test_update_timestamp_anchor_uses_the_stored_event_time(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["a"], "memory", record_ids="m", timestamps="2099-06-01T00:00:00+00:00")
    assert store.update("memory", "m", ttl_days=2, ttl_anchor=TS) == 1
    assert times(db, store, "m").expires_at == datetime(2099, 6, 3, tzinfo=timezone.utc)


def test_update_timestamp_anchor_prefers_the_timestamp_of_the_same_call(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["a"], "memory", record_ids="m", timestamps="2099-06-01T00:00:00+00:00")
    assert store.update("memory", "m", timestamp="2099-08-01T00:00:00+02:00", ttl_days=2,
                        ttl_anchor=TS) == 1
    row = times(db, store, "m")
    assert row.event_ts == datetime(2099, 7, 31, 22, tzinfo=timezone.utc)
    assert row.expires_at == datetime(2099, 8, 2, 22, tzinfo=timezone.utc)


def test_update_timestamp_anchor_can_expire_a_record(store: OracleDBMemoryStore) -> None:
    store.add(["a"], "message", record_ids="m", thread_ids="t")
    assert store.update("message", "m", timestamp=days_ago(3), ttl_days=1, ttl_anchor=TS) == 1
    assert store.list_thread_messages("t") == []


def test_update_timestamp_anchor_needs_a_timestamp(store: OracleDBMemoryStore,
                                                   db: StoredRows) -> None:
    store.add(["a"], "memory", record_ids="m", ttl_days=3)
    before = times(db, store, "m").expires_at
    with pytest.raises(ValueError, match="timestamp"):
        store.update("memory", "m", ttl_days=2, ttl_anchor=TS)
    store.add(["b"], "memory", record_ids="n", timestamps="2099-06-01T00:00:00+00:00")
    with pytest.raises(ValueError, match="timestamp"):
        store.update("memory", "n", timestamp=None, ttl_days=2, ttl_anchor=TS)
    assert times(db, store, "m").expires_at == before


def test_update_anchor_alone_uses_the_default_ttl(make_store: StoreFactory, db: StoredRows) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=4))
    store.add(["a"], "memory", record_ids="m", timestamps="2099-06-01T00:00:00+00:00",
              ttl_days=None)
    assert times(db, store, "m").expires_at is None
    assert store.update("memory", "m", ttl_anchor=TS) == 1
    assert times(db, store, "m").expires_at == datetime(2099, 6, 5, tzinfo=timezone.utc)


def test_update_of_a_missing_record_returns_zero(store: OracleDBMemoryStore) -> None:
    assert store.update("memory", "nope", ttl_days=3) == 0


# --- purge --------------------------------------------------------------------------------

def test_purge_expired_removes_expired_rows_and_their_chunks(
        store: OracleDBMemoryStore, db: StoredRows) -> None:
    store.add(["expired memory one", "expired memory two"], "memory", record_ids=["x1", "x2"],
              timestamps=days_ago(3), ttl_days=1, ttl_anchor=TS)
    store.add(["expired message"], "message", record_ids="xm", thread_ids="t",
              timestamps=days_ago(3), ttl_days=1, ttl_anchor=TS)
    store.add(["live memory"], "memory", record_ids="live", ttl_days=5)
    store.add(["forever"], "memory", record_ids="forever")
    store.add(["live message"], "message", record_ids="lm", thread_ids="t",
              timestamps=days_ago(3), ttl_days=30, ttl_anchor=TS)
    assert chunk_count(db, store, ["x1", "x2", "xm"]) == 3

    assert store.purge_expired() == 3

    assert db.count(store, "memory") == 2
    assert db.count(store, "message") == 1
    assert chunk_count(db, store, ["x1", "x2", "xm"]) == 0
    assert chunk_count(db, store, ["live", "forever", "lm"]) == 3
    assert visible_ids(store) == {"live", "forever"}
    assert [m.id for m in store.list_thread_messages("t")] == ["lm"]
    assert store.purge_expired() == 0


def test_purged_records_cannot_be_revived(store: OracleDBMemoryStore) -> None:
    store.add(["old"], "memory", record_ids="m", timestamps=days_ago(3), ttl_days=1,
              ttl_anchor=TS)
    assert store.purge_expired() == 1
    assert store.update("memory", "m", ttl_days=30) == 0
    assert store.get("memory", "m") is None


def test_purge_with_nothing_expired_returns_zero(store: OracleDBMemoryStore) -> None:
    store.add(["a"], "memory", ttl_days=1)
    assert store.purge_expired() == 0
    assert len(store.list("memory")) == 1


# --- retention config in the schema registry ----------------------------------------------

def test_explicit_config_updates_the_registry_and_omitted_keeps_it(
        make_store: StoreFactory, db: StoredRows) -> None:
    first = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=5,
                                                                     max_ttl_days=20))
    store_id = first._names.store_key
    first.add(["a"], "memory", record_ids="before")
    before = times(db, first, "before").expires_at
    assert registry_retention(db, first) == (5, 20)

    second = make_store(memory_store_id=store_id,
                        memory_retention_config=MemoryRetentionConfig(default_ttl_days=2))
    assert registry_retention(db, second) == (2, None)  # NOT_SET max resolves to None
    assert second.memory_retention_config.resolved() == (2, None)
    assert times(db, second, "before").expires_at == before  # existing expiry untouched
    second.add(["b"], "memory", record_ids="after")
    row = times(db, second, "after")
    assert row.expires_at == row.created_at + 2 * DAY

    third = make_store(memory_store_id=store_id)
    assert registry_retention(db, third) == (2, None)
    assert third.memory_retention_config.resolved() == (2, None)
    third.add(["c"], "memory", record_ids="kept")
    row = times(db, third, "kept")
    assert row.expires_at == row.created_at + 2 * DAY


def test_require_existing_rejects_a_differing_config(make_store: StoreFactory) -> None:
    first = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=5))
    store_id = first._names.store_key
    with pytest.raises(MemoryStoreSchemaError, match="memory_retention_config"):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                   memory_retention_config=MemoryRetentionConfig(default_ttl_days=6))
    with pytest.raises(MemoryStoreSchemaError, match="memory_retention_config"):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                   memory_retention_config=MemoryRetentionConfig(default_ttl_days=5,
                                                                 max_ttl_days=9))


def test_require_existing_accepts_the_same_or_an_omitted_config(
        make_store: StoreFactory) -> None:
    first = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=5))
    store_id = first._names.store_key
    same = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                      memory_retention_config=MemoryRetentionConfig(default_ttl_days=5,
                                                                    max_ttl_days=None))
    assert same.memory_retention_config.resolved() == (5, None)
    omitted = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert omitted.memory_retention_config.resolved() == (5, None)


def test_retention_config_must_be_a_retention_config(make_store: StoreFactory) -> None:
    with pytest.raises(TypeError, match="memory_retention_config"):
        make_store(memory_retention_config={"default_ttl_days": 3})


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_day_is_24_hours_whatever_the_session_time_zone(
        make_store: StoreFactory, pg_url: str) -> None:
    """add and update give the same expiry across a daylight-saving change (30 days of 24 h)."""
    with psycopg.connect(pg_url, options="-c TimeZone=America/New_York") as conn, (
            psycopg.connect(pg_url, autocommit=True)) as reader_conn:
        reader = PostgresStoredRows(reader_conn)
        store = make_store(pool=conn)
        event = "2099-03-01T12:00:00+00:00"  # US clocks change on 2099-03-08
        store.add(["a", "b"], "memory", record_ids=["added", "updated"], timestamps=event,
                  ttl_days=[30, 1], ttl_anchor=TS)
        store.update("memory", "updated", ttl_days=30, ttl_anchor=TS)
        store.add(["c"], "memory", record_ids="created")
        store.update("memory", "created", ttl_days=30)
        expected = datetime(2099, 3, 31, 12, tzinfo=timezone.utc)
        assert times(reader, store, "added").expires_at == expected
        assert times(reader, store, "updated").expires_at == expected
        created = times(reader, store, "created")
        assert created.expires_at == created.created_at + 30 * DAY
