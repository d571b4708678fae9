"""The spec's store examples, run as conformance tests.

Source: the ``OracleMemoryStore`` and ``OracleDBMemoryStore`` pages of the spec (file 001,
authoritative, and the older English file 000 for the same methods). Each test reproduces one
example with the output the spec shows, then checks the stored state the example implies so a
store that merely echoes its arguments would still fail.

Not covered here (not built yet): the ``search``/``search_async`` examples and every relation
example (``add_relations``, ``get_relation``, ``list_relations``, ``update_relations``,
``delete_relations`` and their async twins).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from oracleagentmemory.apis import (
    AgentProfileRecord,
    MemoryRecord,
    PendingRecordBatch,
    TimeToLiveAnchor,
    UserProfileRecord,
)
from oracleagentmemory.core import OracleDBMemoryStore
from stored_rows import StoredRows, open_stored_rows


@pytest.fixture
def db(database_url: object) -> Iterator[StoredRows]:
    """Reads what the store wrote, on the engine under test (``tests/stored_rows.py``)."""
    with open_stored_rows(database_url) as rows:
        yield rows


def chunk_texts(db: StoredRows, store: OracleDBMemoryStore, record_id: str) -> list[str | None]:
    return [chunk.text for chunk in db.chunks(store, record_id)]


# --- OracleDBMemoryStore.add ---------------------------------------------------------------
def test_add_with_record_id(store: OracleDBMemoryStore, db: StoredRows) -> None:
    assert store.add(
        ["Index this stored text"],
        record_type="memory",
        record_ids="mem-db-add-docs",
    ) == ["mem-db-add-docs"]
    record = store.get("memory", "mem-db-add-docs")
    assert isinstance(record, MemoryRecord)
    assert record.content == "Index this stored text"
    # Without index_texts the stored text is the retrieval text.
    assert chunk_texts(db, store, "mem-db-add-docs") == ["Index this stored text"]


def test_add_with_index_texts(store: OracleDBMemoryStore, db: StoredRows) -> None:
    assert store.add(
        ["Stored text"],
        record_type="memory",
        index_texts=["Search this text"],
        record_ids="mem-db-index-text-docs",
    ) == ["mem-db-index-text-docs"]
    record = store.get("memory", "mem-db-index-text-docs")
    assert record is not None and record.content == "Stored text"
    assert chunk_texts(db, store, "mem-db-index-text-docs") == ["Search this text"]


def test_add_with_timestamp_anchored_ttl(store: OracleDBMemoryStore,
                                         db: StoredRows) -> None:
    assert store.add(
        ["Short-lived event"],
        record_type="memory",
        record_ids="mem-db-ttl-docs",
        timestamps="2026-01-01T12:00:00+00:00",
        ttl_days=7,
        ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
    ) == ["mem-db-ttl-docs"]
    # Expiry counts from the event timestamp, not from the insert time.
    assert db.timestamps(store, "memory", "mem-db-ttl-docs", ("event_ts", "expires_at")) == (
        datetime(2026, 1, 1, 12, tzinfo=timezone.utc),
        datetime(2026, 1, 8, 12, tzinfo=timezone.utc))
    # That moment has passed, so reads hide the record although the row is still stored.
    assert store.get("memory", "mem-db-ttl-docs") is None
    assert store.list("memory", record_id="mem-db-ttl-docs") == []


# --- add_batches (OracleMemoryStore and OracleDBMemoryStore pages) -----------------------
def test_add_batches(store: OracleDBMemoryStore) -> None:
    assert store.add_batches(
        [
            PendingRecordBatch(
                contents=["pizza batch"],
                record_type="memory",
                record_ids="mem-batch-docs",
            )
        ]
    ) == ["mem-batch-docs"]
    record = store.get("memory", "mem-batch-docs")
    assert record is not None and record.content == "pizza batch"


# --- add_agent / add_user ------------------------------------------------------------------
def test_add_agent(store: OracleDBMemoryStore) -> None:
    assert store.add_agent("a-docs-agent", "Support assistant") == "a-docs-agent"
    record = store.get("agent_profile", "a-docs-agent")
    assert isinstance(record, AgentProfileRecord)
    assert record.content == "Support assistant"


def test_add_user(store: OracleDBMemoryStore) -> None:
    assert store.add_user("u-docs-profile", "Prefers concise answers.") == "u-docs-profile"
    record = store.get("user_profile", "u-docs-profile")
    assert isinstance(record, UserProfileRecord)
    assert record.content == "Prefers concise answers."


# --- delete --------------------------------------------------------------------------------
def test_delete(store: OracleDBMemoryStore) -> None:
    assert store.add(["Delete me"], record_type="memory", record_ids="mem-delete-docs") == [
        "mem-delete-docs"
    ]
    assert store.delete("memory", "mem-delete-docs") == 1
    assert store.get("memory", "mem-delete-docs") is None


# --- delete_thread -------------------------------------------------------------------------
def test_delete_thread(store: OracleDBMemoryStore) -> None:
    store.add([None], record_type="thread", record_ids="c2")
    assert store.delete_thread("c1") == 0
    # Deleting a missing thread touches no other thread.
    assert [t.id for t in store.list("thread")] == ["c2"]


# --- get -----------------------------------------------------------------------------------
def test_get(store: OracleDBMemoryStore) -> None:
    assert store.add(["Remember this"], record_type="memory", record_ids="mem-get-docs") == [
        "mem-get-docs"
    ]
    record = store.get("memory", "mem-get-docs")
    assert record is not None
    assert record.id == "mem-get-docs"


# --- list ----------------------------------------------------------------------------------
def test_list(store: OracleDBMemoryStore) -> None:
    assert store.add(
        ["First listed", "Second listed"],
        record_type="memory",
        record_ids=["mem-list-docs-1", "mem-list-docs-2"],
    ) == ["mem-list-docs-1", "mem-list-docs-2"]
    assert [record.id for record in store.list("memory", limit=2)] == [
        "mem-list-docs-1",
        "mem-list-docs-2",
    ]
    assert store.add_user("u-list-docs", "Prefers concise answers.") == "u-list-docs"
    # Profiles are unscoped: the user_id filter is ignored for them.
    assert any(
        record.id == "u-list-docs"
        for record in store.list("user_profile", user_id=None, limit=10)
    )


# --- list_thread_messages ------------------------------------------------------------------
def test_list_thread_messages(store: OracleDBMemoryStore) -> None:
    store.add(["Hello from another thread"], record_type="message", thread_ids="c2")
    assert store.list_thread_messages("c1") == []
    assert [m.content for m in store.list_thread_messages("c2")] == ["Hello from another thread"]


# --- update --------------------------------------------------------------------------------
def test_update(store: OracleDBMemoryStore) -> None:
    assert store.add(["Original note"], record_type="memory", record_ids="mem-update-docs") == [
        "mem-update-docs"
    ]
    assert store.update("memory", "mem-update-docs", content="Updated note") == 1
    record = store.get("memory", "mem-update-docs")
    assert record is not None and record.content == "Updated note"


def test_update_with_deprecated_text_alias(store: OracleDBMemoryStore) -> None:
    """The 000 page's example uses ``text=``; 001 keeps it as an alias that warns."""
    assert store.add(["Original note"], record_type="memory", record_ids="mem-update-docs") == [
        "mem-update-docs"
    ]
    with pytest.warns(DeprecationWarning, match="content"):
        assert store.update("memory", "mem-update-docs", text="Updated note") == 1
    record = store.get("memory", "mem-update-docs")
    assert record is not None and record.content == "Updated note"
