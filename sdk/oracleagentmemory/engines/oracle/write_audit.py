"""Oracle's :class:`~oracleagentmemory.engines.write_audit.WriteAuditAdmin`.

A thin adapter over :mod:`.audit_sql` bound to one python-oracledb connection of the store's
schema owner (who owns the audit tables and triggers; the policy administrator may read and
seal them if the owner granted it ``SELECT``/``INSERT`` on them, which the SDK does not do).

How the contract maps onto Oracle:

- ``install`` creates the three blockchain tables (once: a blockchain table cannot be replaced),
  then the sequence, the package and the triggers. DDL commits in Oracle, so enabling is not one
  transaction as on PostgreSQL: each step is idempotent and a rerun finishes an interrupted one.
  Each trigger's DDL waits at most ``DDL_LOCK_TIMEOUT`` for in-flight writers of its table.
- ``remove_triggers`` drops the triggers only. The tables are never dropped: Oracle refuses
  ``DROP TABLE`` on a blockchain table until it has been idle for its ``NO DROP`` period.
- The SDK's chain entries and signed checkpoints are stored as on PostgreSQL, in two more
  blockchain tables (so Oracle refuses to change them too), and verified by the core. Oracle's
  own chain does not replace them: it is kept by the database being audited, with no key held
  outside it, and it accepts deletions after the retention period.
- Verification (``sealed_rows``) first runs ``DBMS_BLOCKCHAIN_TABLE.VERIFY_ROWS`` on the three
  tables; a row that fails Oracle's own hash check stops the verification with a
  :class:`~oracleagentmemory.errors.DatabaseError` naming that audit record (the contract's
  problem kinds describe the SDK's chain, which cannot represent "Oracle's hash of this row is
  wrong"). Then the core walks its own chain as on PostgreSQL.

Never run against an Oracle database here: see ``tests/test_oracle_write_audit.py`` for what
was checked offline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Generator, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import oracledb

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, StoreNames
from oracleagentmemory.engines.oracle import audit_sql, schema_sql
from oracleagentmemory.engines.oracle.binds import utc_from_fetch
from oracleagentmemory.engines.oracle.driver_errors import error_info, translate
from oracleagentmemory.engines.oracle.names import OracleObjects
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.engines.oracle.url import admin_connection
from oracleagentmemory.engines.write_audit import (
    AuditInstallation,
    AuditRow,
    ChainEntry,
    CheckpointRow,
    SealedRow,
    WriteAuditAdmin,
)
from oracleagentmemory.errors import (
    DatabaseError,
    EndUserContextError,
    InvalidArgumentError,
    MemoryStoreSchemaError,
    OperationTimeoutError,
)

ENABLE_MANDATORY_ACCESS_CONTROL = False
"""Whether ``install`` runs ``SET USE DATA GRANTS ONLY`` on the audit tables: off, because Deep
Data Security documents mandatory access control as covering every access path, which would
make the owner's trigger fail for every end user (:func:`.audit_sql.mandatory_access_control`).
End users and the pool account still have no privilege and no data grant on the tables."""

_STREAM_ROWS = 5000
_LOCK_TIMEOUTS = frozenset({54, 30006})
"""ORA-00054 (resource busy, NOWAIT or DDL_LOCK_TIMEOUT expired), ORA-30006 (WAIT expired)."""
_INSUFFICIENT_PRIVILEGES = 1031


def _row(values: Sequence[Any]) -> AuditRow:
    return AuditRow(int(values[0]), _utc(values[1]), _utc(values[2]), str(values[3]),
                    values[4], values[5], values[6], values[7], values[8], values[9],
                    str(values[10]), str(values[11]))


def _utc(value: Any) -> datetime:
    moment = utc_from_fetch(value)
    assert moment is not None
    return moment


_CREATED = re.compile(r'CREATE OR REPLACE (?:PACKAGE BODY|PACKAGE|TRIGGER) "[^"]+"\."([^"]+)"')


def _created_name(sql: str) -> str | None:
    """The unquoted name of the PL/SQL object a ``CREATE OR REPLACE`` statement creates."""
    match = _CREATED.match(sql)
    return None if match is None else match[1]


def _checkpoint(values: Sequence[Any]) -> CheckpointRow:
    return CheckpointRow(int(values[0]), int(values[1]), int(values[2]), int(values[3]),
                         bytes(values[4]), bytes(values[5]), _utc(values[6]), str(values[7]),
                         str(values[8]), str(values[9]))


class OracleWriteAuditAdmin(WriteAuditAdmin):
    """Write-audit administration on one python-oracledb connection."""

    def __init__(self, conn: oracledb.Connection, *, owned: bool) -> None:
        self._conn = conn
        self._owned = owned

    @classmethod
    def for_connection(cls, connection: object) -> OracleWriteAuditAdmin:
        """Bind to an ``oracledb.Connection`` (left open) or connect to an ``oracle://`` URL
        (closed by :meth:`close`)."""
        conn, owned = admin_connection(connection, "the store's schema owner")
        return cls(conn, owned=owned)

    @property
    def connection(self) -> oracledb.Connection:
        return self._conn

    def transaction(self) -> AbstractContextManager[None]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            self._conn.rollback()
            raise
        self._conn.commit()

    def close(self) -> None:
        if self._owned:
            self._conn.close()

    # --- running statements ----------------------------------------------------------------
    def _execute(self, statement: Statement) -> list[Any]:
        with self._conn.cursor() as cur:
            try:
                cur.execute(statement.sql, dict(statement.binds))
            except oracledb.Error as exc:
                raise self._error(exc) from exc
            return cur.fetchall() if cur.description else []

    def _ddl(self, sql: str) -> str | None:
        """Run one DDL statement; the driver's warning, if any (a PL/SQL compilation error)."""
        with self._conn.cursor() as cur:
            try:
                cur.execute(sql)
            except oracledb.Error as exc:
                raise self._error(exc) from exc
            warning = cur.warning
        return None if warning is None else str(warning)

    def _plsql(self, o: OracleObjects, sql: str) -> None:
        """Create a PL/SQL object; on a compilation error drop every audit trigger again (an
        invalid trigger would fail every write, ORA-04098) and raise with Oracle's errors."""
        warning = self._ddl(sql)
        if warning is None:
            return
        name = _created_name(sql)
        errors = self._execute(audit_sql.compile_errors(o, name)) if name else []
        for statement in audit_sql.drop_trigger_statements(o):
            self._ddl(statement)
        details = "; ".join(f"line {line}, column {position}: {str(text).strip()}"
                            for line, position, text in errors) or warning
        raise DatabaseError(
            f"the write audit's {name or 'PL/SQL'} did not compile, so its triggers were "
            f"removed and writes continue unaudited: {details}")

    def _error(self, exc: oracledb.Error, what: str = "") -> Exception:
        code = error_info(exc).code
        detail = error_info(exc).first_line
        if code in _LOCK_TIMEOUTS:
            return OperationTimeoutError(
                f"{what or 'the write audit'} waited too long for transactions still writing "
                f"to the store's tables; retry ({detail})")
        if code == _INSUFFICIENT_PRIVILEGES:
            return PermissionError(
                "this identity may not manage the store's write audit: connect as the store's "
                f"schema owner ({detail})")
        return translate(exc)

    @staticmethod
    def _objects(names: StoreNames) -> OracleObjects:
        return OracleObjects.of(names)

    # --- the contract ----------------------------------------------------------------------
    def store_exists(self, names: StoreNames) -> bool:
        try:
            (outside,), = self._execute(schema_sql.outside_end_user_session())
        except (DatabaseError, MemoryStoreSchemaError):
            outside = 1  # no Deep Data Security: no end-user context either
        if not outside:
            raise EndUserContextError(
                "the write audit is administrative work: this connection carries an end-user "
                "security context; use a connection of the schema owner without one")
        statement, lookup = schema_sql.existing_tables(self._objects(names))
        found = {str(r[0]) for r in self._execute(statement)}
        return all(name in found for name, logical in lookup.items() if logical)

    def security_schema_installed(self) -> bool:
        """Whether the database knows ``ORA_END_USER_CONTEXT`` (Deep Data Security), which the
        triggers read the end user from."""
        try:
            self._execute(schema_sql.outside_end_user_session())
        except (DatabaseError, MemoryStoreSchemaError):
            return False
        return True

    def _tables(self, o: OracleObjects) -> dict[str, bool]:
        """Suffix -> whether that audit table is a blockchain table, for the tables present."""
        statement, lookup = audit_sql.existing_tables(o)
        return {lookup[str(name)]: bool(is_blockchain)
                for name, is_blockchain in self._execute(statement)}

    def install(self, names: StoreNames) -> None:
        o = self._objects(names)
        present = self._tables(o)
        impostors = [o.object_name(s) for s, blockchain in present.items() if not blockchain]
        if impostors:
            raise InvalidArgumentError(
                f"{', '.join(impostors)} in schema {o.owner} is an ordinary table, not the "
                "write audit's blockchain table: rename or drop it, then enable the audit",
                argument="memory_store_id")
        for suffix, statement in audit_sql.create_tables(o).items():
            if suffix not in present:
                self._ddl(statement)
        states = {str(kind): str(status) for kind, status in
                  self._execute(audit_sql.package_state(o))}
        package_valid = states == {"PACKAGE": "VALID", "PACKAGE BODY": "VALID"}
        with self._ddl_lock_timeout():
            sequence, *plsql = audit_sql.install_statements(o)
            self._ddl(sequence)
            for statement in plsql:
                if package_valid and statement in audit_sql.transaction_time_package(o):
                    continue
                self._plsql(o, statement)
        if ENABLE_MANDATORY_ACCESS_CONTROL:
            for statement in audit_sql.mandatory_access_control(o):
                self._ddl(statement)
        self._execute(audit_sql.audit_event(o, "audit_enabled"))

    @contextmanager
    def _ddl_lock_timeout(self) -> Iterator[None]:
        """Each trigger's DDL waits for in-flight writers of its table (bounded), then the
        session's default (0: no wait) is restored."""
        self._ddl(audit_sql.ddl_lock_timeout())
        try:
            yield
        finally:
            self._ddl(audit_sql.ddl_lock_timeout(0))

    def remove_triggers(self, names: StoreNames) -> None:
        o = self._objects(names)
        with self._ddl_lock_timeout():
            for statement in audit_sql.drop_trigger_statements(o):
                self._ddl(statement)
        if audit_sql.AUDIT_SUFFIX in self._tables(o):
            self._execute(audit_sql.audit_event(o, "audit_disabled"))

    def installation(self, names: StoreNames) -> AuditInstallation:
        o = self._objects(names)
        triggers = audit_sql.trigger_names(o)
        enabled = {triggers[str(name)] for name, status in self._execute(audit_sql.trigger_state(o))
                   if status == "ENABLED"}
        audited = tuple(t for t in MANAGED_TABLES if t in enabled and "" in enabled)
        missing = tuple(t for t in MANAGED_TABLES if t not in audited)
        return AuditInstallation(audit_sql.AUDIT_SUFFIX in self._tables(o), audited, missing)

    def _require_installed(self, o: OracleObjects) -> None:
        if audit_sql.AUDIT_SUFFIX not in self._tables(o):
            raise InvalidArgumentError(
                f"memory store {o.names.store_key!r} has no write audit; enable it first "
                "(enable_write_audit, oam-admin audit enable)", argument="memory_store_id")

    def wait_for_writers(self, names: StoreNames, lock_timeout_ms: int) -> int | None:
        o = self._objects(names)
        self._require_installed(o)
        lock, horizon = audit_sql.lock_and_horizon(o, math.ceil(lock_timeout_ms / 1000))
        try:
            with self.transaction():
                self._execute(lock)
                row = self._execute(horizon)
        except OperationTimeoutError as exc:
            raise OperationTimeoutError(
                f"sealing waited {lock_timeout_ms} ms for transactions still writing to memory "
                f"store {names.store_key!r} to end; retry (or allow a longer wait)") from exc
        value = row[0][0] if row else None
        return None if value is None else int(value)

    def lock_checkpoints(self, names: StoreNames) -> None:
        self._execute(audit_sql.lock_checkpoints(self._objects(names)))

    def checkpoints(self, names: StoreNames) -> list[CheckpointRow]:
        o = self._objects(names)
        self._require_installed(o)
        return [_checkpoint(r) for r in self._execute(audit_sql.select_checkpoints(o))]

    def last_checkpoint(self, names: StoreNames) -> CheckpointRow | None:
        o = self._objects(names)
        self._require_installed(o)
        rows = self._execute(audit_sql.select_checkpoints(o, last_only=True))
        return _checkpoint(rows[0]) if rows else None

    def rows(self, names: StoreNames, after_id: int, through_id: int,
             limit: int) -> list[AuditRow]:
        o = self._objects(names)
        self._require_installed(o)
        return [_row(r) for r in self._execute(
            audit_sql.rows_in_range(o, after_id, through_id, limit))]

    def verify_database_chains(self, o: OracleObjects) -> int:
        """``DBMS_BLOCKCHAIN_TABLE.VERIFY_ROWS`` on the three audit tables; returns how many
        rows Oracle verified, or raises :class:`DatabaseError` naming the first bad row."""
        verified = 0
        for suffix in audit_sql.TABLE_SUFFIXES:
            statement = audit_sql.verify_rows(o, suffix)
            with self._conn.cursor() as cur:
                (name, kind), = statement.out_binds.items()
                out = cur.var(kind)
                try:
                    cur.execute(statement.sql, {**statement.binds, name: out})
                except oracledb.Error as exc:
                    if error_info(exc).code == audit_sql.VERIFICATION_FAILED:
                        raise self._bad_row(o, suffix, error_info(exc).first_line) from exc
                    raise self._error(exc) from exc
                verified += int(out.getvalue() or 0)
        return verified

    def _bad_row(self, o: OracleObjects, suffix: str, message: str) -> DatabaseError:
        position = audit_sql.failed_row_position(message)
        key = None
        if position is not None:
            rows = self._execute(audit_sql.row_at_position(o, suffix, position))
            key = rows[0][0] if rows else None
        what = {audit_sql.AUDIT_SUFFIX: "audit record", audit_sql.CHAIN_SUFFIX:
                "the chain entry of audit record", audit_sql.CHECKPOINT_SUFFIX: "checkpoint"}
        where = f"{what[suffix]} {key}" if key is not None else f"a row of {o.object_name(suffix)}"
        return DatabaseError(
            f"Oracle's blockchain verification (DBMS_BLOCKCHAIN_TABLE.VERIFY_ROWS) failed at "
            f"{where}: its stored contents no longer match the hash Oracle chained when it was "
            f"inserted ({message})")

    def sealed_rows(self, names: StoreNames, after_id: int,
                    through_id: int) -> Generator[SealedRow, None, None]:
        o = self._objects(names)
        self._require_installed(o)
        self.verify_database_chains(o)
        statement = audit_sql.sealed_rows(o, after_id, through_id)
        with self._conn.cursor() as cur:
            cur.arraysize = _STREAM_ROWS
            try:
                cur.execute(statement.sql, dict(statement.binds))
            except oracledb.Error as exc:
                raise self._error(exc) from exc
            for values in cur:
                row = None if values[0] is None else _row(values)
                chain = None if values[12] is None else ChainEntry(
                    int(values[12]), None if values[13] is None else int(values[13]),
                    bytes(values[14]), int(values[15]))
                ident = row.id if row is not None else chain.audit_id if chain else 0
                yield SealedRow(ident, row, chain)

    def list_rows(self, names: StoreNames, after_id: int, limit: int) -> list[AuditRow]:
        o = self._objects(names)
        self._require_installed(o)
        return [_row(r) for r in self._execute(audit_sql.list_rows(o, after_id, limit))]

    def count_after(self, names: StoreNames, after_id: int) -> int:
        o = self._objects(names)
        self._require_installed(o)
        rows = self._execute(audit_sql.count_after(o, after_id))
        return int(rows[0][0]) if rows else 0

    def seal_time(self) -> tuple[datetime, str]:
        (moment, login), = self._execute(audit_sql.SEAL_TIME)
        return _utc(moment), str(login)

    def write_seal(self, names: StoreNames, entries: Sequence[ChainEntry],
                   checkpoint: CheckpointRow) -> None:
        o = self._objects(names)
        with self._conn.cursor() as cur:
            try:
                if entries:
                    chain = audit_sql.insert_chain(o, entries)
                    cur.setinputsizes(**chain.input_sizes)
                    cur.executemany(chain.sql, [dict(r) for r in chain.rows or ()])
                sealed = audit_sql.insert_checkpoint(o, checkpoint)
                cur.setinputsizes(**sealed.input_sizes)
                cur.execute(sealed.sql, dict(sealed.binds))
            except oracledb.Error as exc:
                raise self._error(exc) from exc
