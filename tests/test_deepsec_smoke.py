"""End-to-end: the runtime login sees only the end user's rows and global rows."""

from __future__ import annotations

from typing import Any

from dds import OWNER


def test_each_user_sees_own_and_global_rows_only(dds: Any) -> None:
    store_id = dds.new_store()
    owner = dds.owner_store(store_id)
    owner.add(["shared fact"], "memory", user_ids=None, record_ids="g1")
    owner.close()
    for user in ("alice", "bob"):
        with dds.runtime_store(store_id, user) as store:
            store.add([f"{user} note"], "memory", record_ids=f"{user}-1")
    with dds.runtime_store(store_id, "alice") as store:
        seen = sorted(r.id for r in store.list("memory"))
        assert seen == ["alice-1", "g1"]
        assert store.get("memory", "bob-1") is None
        assert store.get("memory", "alice-1").user_id == "alice"
    assert OWNER == "oam_test_owner"
