"""PostgreSQL's :class:`~oracleagentmemory.engines.write_audit.WriteAuditAdmin`.

A thin adapter over :mod:`.audit_sql` bound to one psycopg connection of the admin identity.
The audit objects are created as the owner of the store's tables (``SET LOCAL ROLE`` when the
policy administrator, a member of that role, enables the audit), so the schema owner and the
policy administrator can both seal and read them, and the runtime login can do neither.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator, Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, StoreNames
from oracleagentmemory.engines.postgres import audit_sql
from oracleagentmemory.engines.postgres import deepsec_admin as sql_admin
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.security_admin import AdminConnection
from oracleagentmemory.engines.write_audit import (
    AuditInstallation,
    AuditRow,
    ChainEntry,
    CheckpointRow,
    SealedRow,
    WriteAuditAdmin,
)
from oracleagentmemory.errors import (
    InvalidArgumentError,
    OperationTimeoutError,
)

_STREAM_ROWS = 5000
LOCK_WAIT_MS = 500
"""How long one attempt waits for the record tables' locks (under ``deadlock_timeout``, 1 s by
default, so the admin gives way first)."""
LOCK_ATTEMPTS = 20


def _row(values: Sequence[Any]) -> AuditRow:
    return AuditRow(*values[:12])


class PostgresWriteAuditAdmin(AdminConnection, WriteAuditAdmin):
    """Write-audit administration on one psycopg connection."""

    def store_exists(self, names: StoreNames) -> bool:
        return sql_admin.store_exists(self._conn, names)

    def security_schema_installed(self) -> bool:
        return self._conn.execute(
            "SELECT to_regclass('oam_sec.session_end_user') IS NOT NULL").fetchone() == (True,)

    def _as_table_owner(self, names: StoreNames) -> None:
        """Act as the owner of the store's tables for the rest of the transaction."""
        assert names.schema is not None
        row = self._conn.execute(audit_sql.TABLE_OWNER,
                                 [names.schema, names.table("thread")]).fetchone()
        assert row is not None
        owner = str(row[0])
        member = self._conn.execute("SELECT current_user = %s OR pg_has_role(current_user, %s, "
                                    "'MEMBER')", [owner, owner]).fetchone()
        if not member or not member[0]:
            raise PermissionError(
                f"the tables of memory store {names.store_key!r} belong to {owner!r}: manage "
                "their write audit as that schema owner or a member of it")
        self._conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(owner)))

    def _lock_record_tables(self, names: StoreNames) -> None:
        """Take every record table's exclusive lock before any trigger DDL, giving way to
        traffic: each attempt waits at most :data:`LOCK_WAIT_MS`, shorter than the server's
        deadlock check, so a deadlock with a writer never aborts the writer; then it retries
        (the admin waits up to :data:`LOCK_ATTEMPTS` attempts, then gives up)."""
        tables = sql.SQL(", ").join(q.table(names, t) for t in MANAGED_TABLES)
        for attempt in range(LOCK_ATTEMPTS):
            try:
                with self._conn.transaction():  # a savepoint: a timed-out attempt undoes itself
                    self._conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(
                        sql.Literal(f"{LOCK_WAIT_MS}ms")))
                    self._conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                        tables))
                    self._conn.execute("SET LOCAL lock_timeout = 0")
                return
            except psycopg.errors.LockNotAvailable:
                time.sleep(min(2.0, 0.05 * 2 ** attempt))
        raise OperationTimeoutError(
            f"the tables of memory store {names.store_key!r} stayed busy: changing their write "
            "audit needs a moment without writes; retry")

    def install(self, names: StoreNames) -> None:
        self._as_table_owner(names)
        self._lock_record_tables(names)
        for statement in audit_sql.install_statements(names):
            self._conn.execute(statement)
        self._conn.execute(audit_sql.audit_event_statement(names, "audit_enabled"))
        self._conn.execute("RESET ROLE")

    def remove_triggers(self, names: StoreNames) -> None:
        self._as_table_owner(names)
        self._lock_record_tables(names)
        for statement in audit_sql.drop_trigger_statements(names):
            self._conn.execute(statement)
        if self._audit_table_exists(names):
            self._conn.execute(audit_sql.audit_event_statement(names, "audit_disabled"))
        self._conn.execute("RESET ROLE")

    def _audit_table_exists(self, names: StoreNames) -> bool:
        row = self._conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                                 [audit_sql.audit_table(names).as_string(self._conn)]).fetchone()
        return row == (True,)

    def installation(self, names: StoreNames) -> AuditInstallation:
        tables = {names.table(t): t for t in MANAGED_TABLES}
        rows = self._conn.execute(audit_sql.TRIGGER_STATE,
                                  [names.schema, list(tables)]).fetchall()
        always: dict[str, set[str]] = {}
        for relname, trigger, enabled in rows:
            if enabled == "A":
                always.setdefault(tables[relname], set()).add(trigger)
        wanted = {audit_sql.TRIGGER_PREFIX + op for op in (*audit_sql.OPERATIONS, "truncate")}
        audited = tuple(t for t in MANAGED_TABLES if always.get(t, set()) >= wanted)
        missing = tuple(t for t in MANAGED_TABLES if t not in audited)
        return AuditInstallation(self._audit_table_exists(names), audited, missing)

    def _require_installed(self, names: StoreNames) -> None:
        if not self._audit_table_exists(names):
            raise InvalidArgumentError(
                f"memory store {names.store_key!r} has no write audit; enable it first "
                "(enable_write_audit, oam-admin audit enable)", argument="memory_store_id")

    def wait_for_writers(self, names: StoreNames, lock_timeout_ms: int) -> int | None:
        self._require_installed(names)
        try:
            with self._conn.transaction():
                self._conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(
                    sql.Literal(f"{int(lock_timeout_ms)}ms")))
                lock, horizon = audit_sql.lock_and_horizon(names)
                self._conn.execute(lock)
                row = self._conn.execute(horizon).fetchone()
        except psycopg.errors.LockNotAvailable as exc:
            raise OperationTimeoutError(
                f"sealing waited {lock_timeout_ms} ms for transactions still writing to memory "
                f"store {names.store_key!r} to end; retry (or allow a longer wait)") from exc
        except psycopg.errors.InsufficientPrivilege as exc:
            raise PermissionError(
                f"this identity may not seal the write audit of memory store "
                f"{names.store_key!r}: connect as its schema owner or policy administrator "
                f"({str(exc).strip()})") from exc
        return None if row is None or row[0] is None else int(row[0])

    def lock_checkpoints(self, names: StoreNames) -> None:
        self._conn.execute(audit_sql.lock_checkpoints(names))

    def checkpoints(self, names: StoreNames) -> list[CheckpointRow]:
        self._require_installed(names)
        rows = self._conn.execute(audit_sql.select_checkpoints(names)).fetchall()
        return [CheckpointRow(*r) for r in rows]

    def last_checkpoint(self, names: StoreNames) -> CheckpointRow | None:
        self._require_installed(names)
        row = self._conn.execute(audit_sql.select_checkpoints(names, last_only=True)).fetchone()
        return None if row is None else CheckpointRow(*row)

    def _stream(self, query: sql.Composed, params: Sequence[Any]) -> Iterator[Any]:
        """Rows of ``query`` through a server-side cursor (inside a transaction)."""
        with self._conn.transaction(), self._conn.cursor(name="oam_write_audit") as cur:
            cur.itersize = _STREAM_ROWS
            cur.execute(query, params)
            yield from cur

    def rows(self, names: StoreNames, after_id: int, through_id: int,
             limit: int) -> list[AuditRow]:
        self._require_installed(names)
        rows = self._conn.execute(audit_sql.rows_in_range(names),
                                  [after_id, through_id, limit]).fetchall()
        return [_row(r) for r in rows]

    def sealed_rows(self, names: StoreNames, after_id: int,
                    through_id: int) -> Generator[SealedRow, None, None]:
        self._require_installed(names)
        for values in self._stream(audit_sql.sealed_rows(names), [after_id, through_id]):
            row = None if values[0] is None else _row(values)
            chain = None if values[12] is None else ChainEntry(
                int(values[12]), None if values[13] is None else int(values[13]),
                bytes(values[14]), int(values[15]))
            ident = row.id if row is not None else chain.audit_id if chain is not None else 0
            yield SealedRow(ident, row, chain)

    def list_rows(self, names: StoreNames, after_id: int, limit: int) -> list[AuditRow]:
        self._require_installed(names)
        rows = self._conn.execute(audit_sql.list_rows(names), [after_id, limit]).fetchall()
        return [_row(r) for r in rows]

    def count_after(self, names: StoreNames, after_id: int) -> int:
        self._require_installed(names)
        row = self._conn.execute(audit_sql.count_after(names), [after_id]).fetchone()
        return 0 if row is None else int(row[0])

    def seal_time(self) -> tuple[datetime, str]:
        row = self._conn.execute(audit_sql.SEAL_TIME).fetchone()
        assert row is not None
        return row[0], str(row[1])

    def write_seal(self, names: StoreNames, entries: Sequence[ChainEntry],
                   checkpoint: CheckpointRow) -> None:
        with self._conn.cursor() as cur:
            with cur.copy(audit_sql.copy_chain(names)) as copy:
                for entry in entries:
                    copy.write_row((entry.audit_id, entry.prev_id, entry.row_hash,
                                    entry.checkpoint_seq))
            cur.execute(audit_sql.insert_checkpoint(names), [
                checkpoint.seq, checkpoint.first_id, checkpoint.last_id, checkpoint.row_count,
                checkpoint.head_hash, checkpoint.prev_head, checkpoint.sealed_at,
                checkpoint.sealed_by, checkpoint.key_id, checkpoint.signature])
