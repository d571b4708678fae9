"""A request answered 504 never commits afterwards: its statement is cancelled and its session
closed at the deadline (and the database would end the transaction soon after in any case)."""

from __future__ import annotations

import time
from pathlib import Path

from dds import DdsEnvironment
from gateway_live import live_gateway, memory_row_locked
from oam_gateway.errors.problems import problem_type


def test_a_write_answered_504_is_not_committed_later(dds: DdsEnvironment,
                                                     tmp_path: Path) -> None:
    with live_gateway(dds, tmp_path, limits={"request_timeout_seconds": 1.0}) as gateway, \
            gateway.client("slow_writer") as http:
        memory = http.post("/v1/memories", json={"content": "before"}).json()
        # Positive control: unblocked, the same change commits within the deadline.
        assert http.patch(f"/v1/memories/{memory['id']}",
                          json={"content": "changed in time"}).status_code == 200
        with memory_row_locked(gateway, memory["id"]):
            started = time.monotonic()
            # A delete's last statement: nothing after it in the request would fail closed.
            late = http.delete(f"/v1/memories/{memory['id']}")
            assert late.status_code == 504, late.text
            assert late.json()["type"] == problem_type("request-timeout")
            assert time.monotonic() - started < 5
            time.sleep(1.0)  # past the deadline, while the row stays locked
        time.sleep(1.0)  # had its transaction survived, the delete would commit now
        kept = http.get(f"/v1/memories/{memory['id']}")
        assert kept.status_code == 200, kept.text
        assert kept.json()["content"] == "changed in time"
