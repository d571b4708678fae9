"""The gateway runs the SDK on its event loop (``oracleagentmemory.engines.postgres.event_loop``):
a request waiting on the database holds up no other request, contexts stay per request, and
errors and cancellations reach the SDK code where it waits."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dds import DdsEnvironment
from gateway_live import live_gateway, memory_row_locked
from oam_gateway.observability.telemetry import instrument_database, uninstrument_database
from oracleagentmemory.engines.postgres.event_loop import (
    BridgedConnection,
    BridgedPool,
    await_in_bridge,
    in_bridge,
    run_bridged,
)

_request: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


def test_the_psycopg_internals_the_bridge_relies_on_are_there() -> None:
    """``Connection.wait(gen, interval, timeout)`` and ``psycopg.waiting.wait_async`` are not
    psycopg's documented API: a psycopg release that changes them fails here, by name."""
    import inspect

    from psycopg import waiting

    names = list(inspect.signature(psycopg.Connection.wait).parameters)
    assert names == ["self", "gen", "interval", "timeout"]
    assert list(inspect.signature(BridgedConnection.wait).parameters) == names
    assert inspect.iscoroutinefunction(waiting.wait_async)
    assert list(inspect.signature(waiting.wait_async).parameters)[:2] == ["gen", "fileno"]


def test_a_request_waiting_on_a_row_lock_holds_up_no_other_request(
        dds: DdsEnvironment, tmp_path: Path) -> None:
    with live_gateway(dds, tmp_path) as gateway, gateway.client("lock_waiter") as waiter, \
            gateway.client("bystander") as bystander:
        memory = waiter.post("/v1/memories", json={"content": "locked soon"}).json()
        mine = bystander.post("/v1/memories", json={"content": "free"}).json()
        blocked: dict[str, Any] = {}

        lock_released = threading.Event()

        def update_the_locked_row() -> None:
            blocked["response"] = waiter.patch(f"/v1/memories/{memory['id']}",
                                               json={"content": "after the lock"})
            blocked["answered_after_release"] = lock_released.is_set()

        updater = threading.Thread(target=update_the_locked_row)
        with memory_row_locked(gateway, memory["id"]):
            updater.start()
            time.sleep(0.5)  # the update now waits on the lock, inside the gateway's loop
            answers = [bystander.get(f"/v1/memories/{mine['id']}") for _ in range(5)]
            assert [a.status_code for a in answers] == [200] * 5
            # Every read was answered while the update still waited on the lock.
            assert updater.is_alive(), "the update did not wait on the lock"
            lock_released.set()
        updater.join(30)
        # Positive control: the update really waited for the lock, then succeeded.
        assert blocked["response"].status_code == 200, blocked["response"].text
        assert blocked["answered_after_release"] is True


def test_the_tenant_pool_hands_out_bridged_connections_even_after_tracing_was_undone(
        dds: DdsEnvironment) -> None:
    # The tracing instrumentor's undo leaves psycopg's connect bound to the base class, which
    # would silently turn every bridged wait into one that blocks the loop.
    instrument_database()
    uninstrument_database()
    pool = BridgedPool(dds.runtime_url, connection_class=BridgedConnection, min_size=1,
                       max_size=1, open=True)
    try:
        with pool.connection() as conn:
            assert type(conn) is BridgedConnection
    finally:
        pool.close()


def test_work_runs_in_a_copy_of_the_callers_context() -> None:
    seen: list[tuple[str, bool]] = []

    def work(name: str) -> str:
        seen.append((_request.get(), in_bridge()))
        _request.set(f"changed by {name}")  # stays inside the bridged call
        return name

    async def one(name: str) -> str:
        _request.set(name)
        result = await run_bridged(work, name)
        assert _request.get() == name
        return result

    async def main() -> list[str]:
        return list(await asyncio.gather(one("a"), one("b")))

    assert asyncio.run(main()) == ["a", "b"]
    assert sorted(seen) == [("a", True), ("b", True)]
    assert not in_bridge()


def test_an_awaited_failure_is_raised_where_the_work_waits() -> None:
    async def fails() -> None:
        await asyncio.sleep(0)
        raise LookupError("from the loop")

    def work() -> str:
        try:
            await_in_bridge(fails())
        except LookupError as error:
            return f"caught {error}"
        return "not raised"

    assert asyncio.run(run_bridged(work)) == "caught from the loop"
    outside = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="outside run_bridged"):
        await_in_bridge(outside)
    outside.close()


def test_a_cancelled_wait_closes_its_connection_and_ends_the_transaction(
        dds: DdsEnvironment) -> None:
    pool = BridgedPool(dds.superuser_url, connection_class=BridgedConnection, min_size=1,
                       max_size=1, open=True)
    outcome: dict[str, Any] = {}

    def work() -> None:
        with pool.connection() as conn:
            outcome["pid"] = conn.info.backend_pid
            try:
                conn.execute("SELECT pg_sleep(30)")
            except BaseException as error:
                outcome["raised"] = type(error).__name__
                outcome["closed"] = conn.closed
                raise

    async def main() -> None:
        task = asyncio.ensure_future(run_bridged(work))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())
        assert outcome["raised"] == "CancelledError"
        assert outcome["closed"] is True
        with psycopg.connect(dds.superuser_url) as check:
            deadline = time.monotonic() + 10
            while check.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                                [outcome["pid"]]).fetchone() != (0,):
                assert time.monotonic() < deadline, "the cancelled session lives on"
                time.sleep(0.1)
        # Positive control: the pool serves again with a fresh session.
        def again() -> int:
            with pool.connection() as conn:
                row = conn.execute("SELECT pg_backend_pid()").fetchone()
                assert row is not None
                return int(row[0])
        assert asyncio.run(run_bridged(again)) != outcome["pid"]
    finally:
        pool.close()
