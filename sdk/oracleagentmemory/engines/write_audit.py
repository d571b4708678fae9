"""The engine-neutral contract of the database write audit (the admin side).

A :class:`WriteAuditAdmin` is bound to one connection of the admin identity (the schema owner or
the policy administrator). It installs and removes the audit triggers of a store, reads audit
rows, and stores the hash chain and signed checkpoints the core computes
(:mod:`oracleagentmemory.core.deepsec.audit`). It runs no transaction of its own except where a
method says so; the caller opens one with :meth:`WriteAuditAdmin.transaction`.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Generator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.errors import InvalidArgumentTypeError, UnsupportedEngineError


@dataclass(frozen=True)
class AuditRow:
    """One audit row: who wrote which record, when, in which transaction (no contents).

    ``operation`` is ``insert``, ``update``, ``delete``, ``truncate`` (a whole table, no record
    id), ``audit_enabled`` or ``audit_disabled``. ``end_user`` and ``application`` are filled in
    by the database from the verified end-user context (``None`` outside one); ``db_login`` is
    the session's login; ``txid`` the transaction id (decimal text).
    """

    id: int
    tx_time: datetime
    clock_time: datetime
    operation: str
    record_table: str | None
    record_type: str | None
    record_id: str | None
    record_owner: str | None
    end_user: str | None
    application: str | None
    db_login: str
    txid: str


@dataclass(frozen=True)
class ChainEntry:
    """The stored hash of a sealed audit row and the sealed row before it."""

    audit_id: int
    prev_id: int | None
    row_hash: bytes
    checkpoint_seq: int


@dataclass(frozen=True)
class SealedRow:
    """An audit row and its chain entry, matched by id (either may be missing if tampered)."""

    id: int
    row: AuditRow | None
    chain: ChainEntry | None


@dataclass(frozen=True)
class CheckpointRow:
    """A stored checkpoint: the chain head after ``last_id`` and its signature (compact JWS)."""

    seq: int
    first_id: int
    last_id: int
    row_count: int
    head_hash: bytes
    prev_head: bytes
    sealed_at: datetime
    sealed_by: str
    key_id: str
    signature: str


@dataclass(frozen=True)
class AuditInstallation:
    """Whether a store's audit tables exist and which record tables have every trigger on."""

    installed: bool
    audited_tables: tuple[str, ...]
    missing_tables: tuple[str, ...]


class WriteAuditAdmin(ABC):
    """Write-audit administration on one admin connection (see the module docstring)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """A transaction: committed on success, else rolled back."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection if this object opened it."""

    def __enter__(self) -> WriteAuditAdmin:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    @abstractmethod
    def store_exists(self, names: StoreNames) -> bool:
        """Whether every managed table of the store exists."""

    @abstractmethod
    def security_schema_installed(self) -> bool:
        """Whether the end-user verification the triggers read is installed."""

    @abstractmethod
    def install(self, names: StoreNames) -> None:
        """Create the audit tables and every record trigger (idempotent); logs the event."""

    @abstractmethod
    def remove_triggers(self, names: StoreNames) -> None:
        """Drop every record trigger (the audit tables and their rows stay); logs the event."""

    @abstractmethod
    def installation(self, names: StoreNames) -> AuditInstallation:
        """Which record tables are audited."""

    @abstractmethod
    def wait_for_writers(self, names: StoreNames, lock_timeout_ms: int) -> int | None:
        """In its own transaction: wait until no transaction that wrote audit rows is in flight,
        then return the highest audit id (``None`` when there is none)."""

    @abstractmethod
    def lock_checkpoints(self, names: StoreNames) -> None:
        """Lock the checkpoints against another sealer until the transaction ends."""

    @abstractmethod
    def checkpoints(self, names: StoreNames) -> list[CheckpointRow]:
        """Every checkpoint, by sequence number."""

    @abstractmethod
    def last_checkpoint(self, names: StoreNames) -> CheckpointRow | None:
        """The newest checkpoint."""

    @abstractmethod
    def rows(self, names: StoreNames, after_id: int, through_id: int,
             limit: int) -> list[AuditRow]:
        """At most ``limit`` audit rows with ``after_id < id <= through_id``, by id."""

    @abstractmethod
    def sealed_rows(self, names: StoreNames, after_id: int,
                    through_id: int) -> Generator[SealedRow, None, None]:
        """Audit rows and chain entries in that id range, matched by id, by id (streamed)."""

    @abstractmethod
    def list_rows(self, names: StoreNames, after_id: int, limit: int) -> list[AuditRow]:
        """At most ``limit`` audit rows after ``after_id``, by id."""

    @abstractmethod
    def count_after(self, names: StoreNames, after_id: int) -> int:
        """How many audit rows have an id above ``after_id``."""

    @abstractmethod
    def seal_time(self) -> tuple[datetime, str]:
        """The database's clock (milliseconds) and the session's login."""

    @abstractmethod
    def write_seal(self, names: StoreNames, entries: Sequence[ChainEntry],
                   checkpoint: CheckpointRow) -> None:
        """Store chain entries and the checkpoint that covers them."""


_IMPLEMENTATIONS = {
    "postgresql": "oracleagentmemory.engines.postgres.write_audit:PostgresWriteAuditAdmin",
    "oracle": "oracleagentmemory.engines.oracle.write_audit:OracleWriteAuditAdmin",
}


def write_audit_admin_for(connection: object) -> WriteAuditAdmin:
    """The :class:`WriteAuditAdmin` of the engine ``connection`` belongs to.

    ``connection`` is a driver connection (left open), a URL (opened and closed on exit), an
    open :class:`~oracleagentmemory.engines.security_admin.SecurityAdmin` (its connection is
    used) or a :class:`WriteAuditAdmin` (returned as is).
    """
    if isinstance(connection, WriteAuditAdmin):
        return connection
    from oracleagentmemory.engines.registry import engine_entries
    from oracleagentmemory.engines.security_admin import SecurityAdmin

    source = connection
    if isinstance(connection, SecurityAdmin):
        source = getattr(connection, "connection", None) or getattr(connection, "_conn", None)
    entry = next((e for e in engine_entries() if e.accepts(source)), None)
    if entry is not None and entry.unavailable is not None:
        raise UnsupportedEngineError(entry.unavailable)
    path = None if entry is None else _IMPLEMENTATIONS.get(entry.name)
    if path is None:
        raise InvalidArgumentTypeError(
            "connection must be the admin identity's psycopg Connection or postgresql:// URL, "
            "or the store owner's oracledb Connection or oracle:// URL, got "
            f"{type(connection).__name__}", argument="connection")
    module_name, class_name = path.split(":")
    implementation = getattr(importlib.import_module(module_name), class_name)
    admin = implementation.for_connection(source)
    assert isinstance(admin, WriteAuditAdmin)
    return admin
