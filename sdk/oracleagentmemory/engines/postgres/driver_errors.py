"""Translate psycopg's errors into the SDK's typed errors (no raw driver error leaves the SDK)."""

from __future__ import annotations

import logging

import psycopg
from psycopg import errors as pg
from psycopg_pool import PoolClosed, PoolTimeout

from oracleagentmemory.errors import (
    DatabaseError,
    DatabaseUnavailableError,
    InvalidArgumentError,
    MemoryStoreSchemaError,
    NotPermittedError,
    OperationTimeoutError,
    OracleAgentMemoryError,
)

UNAVAILABLE_HINT = ("check that the database is running and the URL is right (the embedded "
                    "database starts with `oam-admin db start`)")

ROW_SECURITY_REFUSAL = ("no data role of this memory store granted to the end user (directly or "
                        "through one of their groups) allows this write")
"""The message of a write the store's row security refused (any table, insert or update)."""

_POLICY_VIOLATION_TEXT = "violates row-level security policy"
"""What PostgreSQL's refusals of a row by a policy say (``new row violates row-level security
policy [(USING expression)] for table ...``)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def translate(exc: psycopg.Error | PoolTimeout | PoolClosed) -> OracleAgentMemoryError:
    """The typed error for a driver error (the caller raises it ``from exc``)."""
    detail = _first_line(exc)
    if isinstance(exc, PoolClosed):
        return DatabaseError(f"the connection pool is closed (was the store closed?): {detail}")
    if isinstance(exc, PoolTimeout) or isinstance(exc, psycopg.OperationalError) and not isinstance(
            exc, pg.QueryCanceled):
        return DatabaseUnavailableError(f"the database is unavailable: {detail}",
                                        hint=UNAVAILABLE_HINT)
    if isinstance(exc, pg.InsufficientPrivilege):
        if _POLICY_VIOLATION_TEXT in detail:  # the driver's text names the table: not shown
            return NotPermittedError(ROW_SECURITY_REFUSAL)
        return NotPermittedError(f"the database refused this operation ({detail})")
    if isinstance(exc, (pg.UndefinedTable, pg.UndefinedColumn, pg.UndefinedFunction,
                        pg.InvalidSchemaName)):
        return MemoryStoreSchemaError(
            f"the store's managed objects are missing or not visible to this database user "
            f"(check memory_store_id and schema_owner, and that the store was created): {detail}")
    if isinstance(exc, (pg.CharacterNotInRepertoire, pg.UntranslatableCharacter)) or (
            isinstance(exc, psycopg.DataError) and "NUL" in detail):
        # Text and JSON cannot hold U+0000: the caller's value, not the database, is at fault.
        return InvalidArgumentError(
            "a text or metadata value holds a character the database cannot store (NUL, "
            "U+0000, or an invalid byte sequence)")
    if isinstance(exc, pg.QueryCanceled):
        return OperationTimeoutError(f"the database cancelled the statement ({detail})")
    return DatabaseError(f"database error: {detail}")


class _PipelineAbortedNoise(logging.Filter):
    """Drops psycopg's "error ignored terminating <Pipeline>: pipeline aborted" warning.

    psycopg logs it when a statement of a pipeline fails and the block exits with that error:
    the error itself reaches the caller (translated), so the warning only repeats it on stderr.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (record.msg == "error ignored terminating %r: %s" and len(args) == 2
                    and isinstance(args[1], pg.PipelineAborted))


_NOISE_FILTER = _PipelineAbortedNoise()


def quiet_pipeline_aborts() -> None:
    """Install the filter on psycopg's logger (idempotent)."""
    logger = logging.getLogger("psycopg")
    if _NOISE_FILTER not in logger.filters:
        logger.addFilter(_NOISE_FILTER)
