"""A request answered 504 never commits afterwards: the database ends its transaction too."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
from dds import DdsEnvironment
from gateway_live import live_gateway
from oam_gateway.problems import problem_type
from psycopg import sql


def test_a_write_answered_504_is_not_committed_later(dds: DdsEnvironment,
                                                     tmp_path: Path) -> None:
    with live_gateway(dds, tmp_path, limits={"request_timeout_seconds": 1.0}) as gateway, \
            gateway.client("slow_writer") as http:
        memory = http.post("/v1/memories", json={"content": "before"}).json()
        # Positive control: unblocked, the same change commits within the deadline.
        assert http.patch(f"/v1/memories/{memory['id']}",
                          json={"content": "changed in time"}).status_code == 200
        table = sql.Identifier("oam_test_owner", f"{gateway.store_id}_memory")
        locked = threading.Event()
        release = threading.Event()

        def hold_the_row() -> None:  # the owner locks the row the request will update
            with psycopg.connect(dds.owner_url) as conn, conn.transaction():
                conn.execute(sql.SQL("SELECT 1 FROM {} WHERE id = %s FOR UPDATE").format(table),
                             [memory["id"]])
                locked.set()
                release.wait(30)

        holder = threading.Thread(target=hold_the_row)
        holder.start()
        try:
            assert locked.wait(30)
            started = time.monotonic()
            # A delete's last statement: nothing after it in the request would fail closed.
            late = http.delete(f"/v1/memories/{memory['id']}")
            assert late.status_code == 504, late.text
            assert late.json()["type"] == problem_type("request-timeout")
            assert time.monotonic() - started < 5
        finally:
            time.sleep(1.0)  # past the deadline, the worker thread still waits on the lock
            release.set()
            holder.join(30)
        time.sleep(1.0)  # had its transaction survived, the delete would commit now
        kept = http.get(f"/v1/memories/{memory['id']}")
        assert kept.status_code == 200, kept.text
        assert kept.json()["content"] == "changed in time"
