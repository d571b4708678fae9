"""The PostgreSQL driver's classes that callers above the engine name: its connection classes,
for callers that instrument them (tracing), and its error base class.

An instrumentor (OpenTelemetry's psycopg instrumentation) replaces their ``connect``; a caller
that must restore it exactly, for the subclasses of
:mod:`~oracleagentmemory.engines.postgres.event_loop` to keep opening their own class, saves
it from these classes first.
"""

from __future__ import annotations

import psycopg

__all__ = ["DriverError", "connection_classes"]

DriverError = psycopg.Error
"""The base class of the driver's errors: what a failure the SDK does not translate raises
(the embedded server's set-up, :mod:`~oracleagentmemory.engines.postgres.bootstrap_roles`)."""


def connection_classes() -> tuple[type, ...]:
    """psycopg's synchronous and asynchronous connection classes."""
    return (psycopg.Connection, psycopg.AsyncConnection)
