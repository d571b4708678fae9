"""What a bridged psycopg wait costs the event loop (``engines/postgres/event_loop.py``): a wait
whose generator needs no I/O finishes inside the greenlet, while a wait on the database switches
to the loop and back, with the same answers as before."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import greenlet
import psycopg
from oracleagentmemory.engines.postgres.event_loop import BridgedConnection, run_bridged


def _switches_of(work: Callable[[], Any]) -> tuple[Any, int]:
    """``work()``'s result under :func:`run_bridged` and how many greenlet switches it made."""
    switches = 0

    def trace(event: str, args: Any) -> None:
        nonlocal switches
        if event in ("switch", "throw"):
            switches += 1

    async def main() -> Any:
        previous = greenlet.settrace(trace)
        try:
            return await run_bridged(work)
        finally:
            greenlet.settrace(previous)

    return asyncio.run(main()), switches


def test_a_wait_that_needs_no_io_does_not_switch_to_the_loop(pg_url: str) -> None:
    with BridgedConnection.connect(pg_url) as conn:
        def commit_nothing() -> str:
            conn.commit()  # no transaction open: psycopg's commit sends nothing
            return conn.info.transaction_status.name

        status, switches = _switches_of(commit_nothing)
        assert status == "IDLE"
        assert switches == 2  # into the work and back when it ends

        # Positive control: a statement's wait goes to the loop and back, once each way more.
        def select() -> Any:
            row = conn.execute("SELECT 41 + 1").fetchone()
            conn.commit()
            return row

        row, switches = _switches_of(select)
        assert row == (42,)
        assert switches >= 4


def test_a_wait_that_fails_at_once_raises_as_before(pg_url: str) -> None:
    with BridgedConnection.connect(pg_url) as conn:
        def on_a_closed_socket() -> str:
            conn.pgconn.finish()  # the session is gone: the first step of a query fails
            try:
                conn.execute("SELECT 1")
            except psycopg.OperationalError as error:
                return type(error).__name__
            return "no error"

        result, _ = _switches_of(on_a_closed_socket)
        assert result == "OperationalError"
