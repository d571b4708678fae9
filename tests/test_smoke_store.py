"""End-to-end smoke test of the store's record API on the embedded database."""

from __future__ import annotations

from oracleagentmemory.core import OracleDBMemoryStore


def test_add_get_list_update_delete_round_trip(store: OracleDBMemoryStore) -> None:
    assert store.add(["Remember this"], record_type="memory", record_ids="m1") == ["m1"]
    record = store.get("memory", "m1")
    assert record is not None and record.content == "Remember this"
    assert store.update("memory", "m1", content="Changed") == 1
    assert [r.content for r in store.list("memory")] == ["Changed"]
    assert store.delete("memory", "m1") == 1
    assert store.get("memory", "m1") is None
    assert store.update("memory", "m1", content="gone") == 0
