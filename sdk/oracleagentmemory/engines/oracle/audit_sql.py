"""SQL of the database write audit on Oracle: blockchain tables, row triggers, verification.

Pure functions: each returns DDL text or a :class:`~.statement.Statement` and executes nothing
(:mod:`.write_audit` runs them). Names come from
:class:`~oracleagentmemory.engines.oracle.names.OracleObjects` (quoted, schema-qualified, upper
case); every value is bound. Written to Oracle AI Database 26ai's documented SQL; never run
against a database here (see the notes marked *unverified*).

Objects, in the store owner's schema, outside the versioned store schema (a store without the
audit is unchanged; enabling and disabling need no schema upgrade):

- ``<P>WRITE_AUDIT``: one row per record written, with the columns of
  :class:`~oracleagentmemory.engines.write_audit.AuditRow`;
- ``<P>WRITE_AUDIT_CHAIN``: the SDK's hash of each sealed row and the row it follows;
- ``<P>WRITE_AUDIT_CHECKPOINT``: the SDK's signed checkpoints (chain head, last sealed id);
- ``<P>WRITE_AUDIT_SEQ`` (the audit ids, ``ORDER``: increasing across RAC instances too, so no
  id can later appear below a sealed one) and ``<P>WRITE_AUDIT_TX`` (a package keeping the time
  of a transaction's first audited write: Oracle has no ``now()`` of the transaction);
- one row trigger per managed table, ``<P><TABLE>_AUDIT_TRG``, and one schema trigger
  ``<P>WRITE_AUDIT_TRUNCATE_TRG`` for ``TRUNCATE`` (Oracle fires no DML trigger on it).

**What Oracle guarantees.** All three tables are *blockchain tables*: Oracle refuses every
``UPDATE``, ``MERGE`` and ``TRUNCATE`` of their rows, refuses ``DELETE`` of a row younger than
the row retention (``NO DELETE UNTIL n DAYS AFTER INSERT``, at least 16 days; the retention can
be raised, never lowered), refuses ``DROP TABLE`` until the table has had no insert for the idle
period (``NO DROP UNTIL n DAYS IDLE``), and chains each row's SHA2-512 hash to the row before it
on its chain, which ``DBMS_BLOCKCHAIN_TABLE.VERIFY_ROWS`` recomputes (the table owner included:
no SQL path changes a row in place). Rows are written only by the triggers: definer-rights PL/SQL
of the owner, in the writer's transaction (rolled back with it). The runtime pool account and
end users hold no object privilege and no data grant on these tables, so they can neither read
nor write them, except through the triggers.

**What the SDK adds.** A hash chain of its own over the rows it seals, and checkpoints signed
with the admin's key outside the database (:mod:`oracleagentmemory.core.deepsec.audit`): they
expose what Oracle allows after the retention or the idle period (old rows deleted, the table
dropped and recreated with other rows) once a checkpoint head is kept outside the database
(``trusted_checkpoint``), and they are checked with a key the database never holds.

Sources (docs corpus): the SQL Language Reference's ``blockchain_table_clauses`` (26ai: drop
clause, row retention clause, ``HASHING USING "SHA2_512"``, data format clause ``VERSION
"v2"``), oracle-base "Blockchain Table Enhancements in Oracle Database 23ai" (the ``HASHING
USING "SHA2_512" VERSION "v2"`` example, the 16-day minimum of ``NO DELETE UNTIL``), the
Reference's ``ALL_BLOCKCHAIN_TABLES`` (``SCHEMA_NAME``, ``TABLE_NAME``) and
``BLOCKCHAIN_TABLE_RETENTION_THRESHOLD`` (26ai, default 16 days without the ``TABLE RETENTION``
privilege), the PL/SQL Packages reference ``DBMS_BLOCKCHAIN_TABLE`` (``VERIFY_ROWS``, invoker's
rights: the caller needs ``SELECT`` on the table), Oracle LiveLabs' calls of ``VERIFY_ROWS``
(``schema_name, table_name, low_timestamp, high_timestamp, instance_id, chain_id,
number_of_rows_verified``, named ``verify_signature``), the error reference ORA-05737 ("rows
verification failed at ... instance ID, chain ID, sequence number") and ORA-05784 (a blockchain
table refuses a distributed transaction).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import oracledb

from oracleagentmemory.engines.identifiers import MANAGED_TABLES
from oracleagentmemory.engines.oracle.binds import (
    timestamp_bind,
    timestamp_input_sizes,
    utc_timestamp_sql,
)
from oracleagentmemory.engines.oracle.names import OracleObjects, normalise, qualified, quote
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.engines.write_audit import ChainEntry, CheckpointRow

AUDIT_SUFFIX = "write_audit"
CHAIN_SUFFIX = "write_audit_chain"
CHECKPOINT_SUFFIX = "write_audit_checkpoint"
SEQUENCE_SUFFIX = "write_audit_seq"
PACKAGE_SUFFIX = "write_audit_tx"
TRUNCATE_TRIGGER_SUFFIX = "write_audit_truncate_trg"
TABLE_SUFFIXES = (AUDIT_SUFFIX, CHAIN_SUFFIX, CHECKPOINT_SUFFIX)

ROW_RETENTION_DAYS = 16
"""``NO DELETE UNTIL 16 DAYS AFTER INSERT``: the shortest retention Oracle accepts, and the
longest an owner without the ``TABLE RETENTION`` privilege may set under 26ai's default
``BLOCKCHAIN_TABLE_RETENTION_THRESHOLD`` (16). A DBA raises it later with ``ALTER TABLE ... NO
DELETE UNTIL n DAYS AFTER INSERT`` (raising only)."""

IDLE_DAYS_BEFORE_DROP = 16
"""``NO DROP UNTIL 16 DAYS IDLE``: a table with rows cannot be dropped before 16 days without an
insert (same threshold as above)."""

OPERATIONS = ("insert", "update", "delete", "truncate", "audit_enabled", "audit_disabled")

AUDIT_COLUMNS = ("id", "tx_time", "clock_time", "operation", "record_table", "record_type",
                 "record_id", "record_owner", "end_user", "application", "db_login", "txid")
"""The audit row's columns, in :class:`AuditRow` order (the order the SDK's chain encodes)."""

_SHAPES: dict[str, tuple[str, str, str]] = {
    "thread": ("'thread'", "{r}.id", "{r}.user_id"),
    "thread_summary": ("'thread_summary'", "{r}.id", "{r}.user_id"),
    "actor_profile": ("{r}.actor_type || '_profile'", "{r}.actor_id",
                      "CASE WHEN {r}.actor_type = 'user' THEN {r}.actor_id END"),
    "message": ("'message'", "{r}.id", "{r}.user_id"),
    "document": ("'image'", "{r}.id", "{r}.user_id"),
    "memory": ("{r}.record_type", "{r}.id", "{r}.user_id"),
    "memory_link": ("'relation'", "{r}.id", "{r}.user_id"),
    "record_chunks": ("{r}.record_type", "{r}.record_id", "{r}.user_id"),
}
"""Per managed table: the record type, id and owner of a row (``{r}`` is ``:NEW`` or ``:OLD``),
as the PostgreSQL engine records them; never the record's contents."""
assert set(_SHAPES) == set(MANAGED_TABLES)

_BLOCKCHAIN_CLAUSES = (
    "NO DROP UNTIL {idle} DAYS IDLE NO DELETE UNTIL {retention} DAYS AFTER INSERT "
    'HASHING USING "SHA2_512" VERSION "v2"')


def _object(o: OracleObjects, suffix: str) -> str:
    return qualified(o.owner, o.object_name(suffix), what="object name")


def audit_table(o: OracleObjects) -> str:
    return _object(o, AUDIT_SUFFIX)


def chain_table(o: OracleObjects) -> str:
    return _object(o, CHAIN_SUFFIX)


def checkpoint_table(o: OracleObjects) -> str:
    return _object(o, CHECKPOINT_SUFFIX)


def trigger_suffix(logical: str) -> str:
    """The row trigger of managed table ``logical``: ``<P><TABLE>_AUDIT_TRG``."""
    return f"{logical}_audit_trg"


def create_tables(o: OracleObjects, *, retention_days: int = ROW_RETENTION_DAYS,
                  idle_days: int = IDLE_DAYS_BEFORE_DROP) -> dict[str, str]:
    """``CREATE BLOCKCHAIN TABLE`` of each audit table, by suffix (run only for a missing one:
    the adapter checks ``ALL_TABLES`` and refuses an ordinary table of the same name, which
    ``IF NOT EXISTS`` would silently accept).

    Timestamps are ``TIMESTAMP(6) WITH TIME ZONE`` read back as UTC; hashes ``RAW(32)``;
    ``txid`` is ``DBMS_TRANSACTION.LOCAL_TRANSACTION_ID`` (``usn.slot.sequence``).
    """
    for days in (retention_days, idle_days):
        if isinstance(days, bool) or not isinstance(days, int) or days < 16:
            raise ValueError("blockchain retention periods are whole days, at least 16")
    clauses = _BLOCKCHAIN_CLAUSES.format(idle=idle_days, retention=retention_days)
    operations = ", ".join(f"'{op}'" for op in OPERATIONS)
    return {
        AUDIT_SUFFIX: (
            f"CREATE BLOCKCHAIN TABLE {audit_table(o)} (id NUMBER(19) NOT NULL PRIMARY KEY, "
            "tx_time TIMESTAMP(6) WITH TIME ZONE NOT NULL, "
            "clock_time TIMESTAMP(6) WITH TIME ZONE NOT NULL, "
            f"operation VARCHAR2(16) NOT NULL CHECK (operation IN ({operations})), "
            "record_table VARCHAR2(32), record_type VARCHAR2(32), "
            "record_id VARCHAR2(128 CHAR), record_owner VARCHAR2(128 CHAR), "
            "end_user VARCHAR2(128 CHAR), application VARCHAR2(128 CHAR), "
            "db_login VARCHAR2(128) NOT NULL, txid VARCHAR2(64) NOT NULL) " + clauses),
        CHAIN_SUFFIX: (
            f"CREATE BLOCKCHAIN TABLE {chain_table(o)} (audit_id NUMBER(19) NOT NULL "
            "PRIMARY KEY, prev_id NUMBER(19), row_hash RAW(32) NOT NULL, "
            "checkpoint_seq NUMBER(19) NOT NULL) " + clauses),
        CHECKPOINT_SUFFIX: (
            f"CREATE BLOCKCHAIN TABLE {checkpoint_table(o)} (seq NUMBER(19) NOT NULL PRIMARY KEY, "
            "first_id NUMBER(19) NOT NULL, last_id NUMBER(19) NOT NULL, "
            "row_count NUMBER(19) NOT NULL, head_hash RAW(32) NOT NULL, "
            "prev_head RAW(32) NOT NULL, sealed_at TIMESTAMP(6) WITH TIME ZONE NOT NULL, "
            "sealed_by VARCHAR2(128) NOT NULL, key_id VARCHAR2(128) NOT NULL, "
            "signature VARCHAR2(4000) NOT NULL) " + clauses),
    }


def existing_tables(o: OracleObjects) -> tuple[Statement, dict[str, str]]:
    """Which audit tables exist and whether each is a blockchain table (``table_name,
    is_blockchain`` rows), with the suffix of each table name."""
    lookup = {o.object_name(suffix): suffix for suffix in TABLE_SUFFIXES}
    binds = {f"t{i}": name for i, name in enumerate(lookup)}
    placeholders = ", ".join(f":{key}" for key in binds)
    return (Statement(
        "SELECT t.table_name, CASE WHEN b.table_name IS NULL THEN 0 ELSE 1 END "
        "FROM all_tables t LEFT JOIN all_blockchain_tables b "
        "ON b.schema_name = t.owner AND b.table_name = t.table_name "
        f"WHERE t.owner = :owner AND t.table_name IN ({placeholders})",
        {"owner": o.owner, **binds}), lookup)


def install_statements(o: OracleObjects) -> list[str]:
    """The idempotent part of the installation, after the tables: the sequence, the
    transaction-time package (its two statements are skipped while it is valid:
    :func:`package_state`), every row trigger and the truncate trigger (``CREATE OR REPLACE``:
    a rerun repairs a partial installation, and replaces the triggers after ``store
    recreate``). The owner needs ``CREATE SEQUENCE``, ``CREATE PROCEDURE`` and ``CREATE
    TRIGGER``."""
    statements = [
        f"CREATE SEQUENCE IF NOT EXISTS {_object(o, SEQUENCE_SUFFIX)} START WITH 1 "
        "INCREMENT BY 1 NOCYCLE ORDER",
        *transaction_time_package(o),
    ]
    statements += [record_trigger(o, logical) for logical in MANAGED_TABLES]
    statements.append(truncate_trigger(o))
    return statements


def package_state(o: OracleObjects) -> Statement:
    """``object_type, status`` of the transaction-time package's spec and body. The adapter
    replaces the package only when one is missing or invalid: replacing a package discards the
    state every session holds (their next call fails once with ORA-04068)."""
    return Statement("SELECT object_type, status FROM all_objects WHERE owner = :owner "
                     "AND object_name = :name AND object_type IN ('PACKAGE', 'PACKAGE BODY')",
                     {"owner": o.owner, "name": o.object_name(PACKAGE_SUFFIX)})


def transaction_time_package(o: OracleObjects) -> list[str]:
    """``<P>WRITE_AUDIT_TX.tx_time``: the time of the current transaction's first audited write
    (package state per session, reset when ``LOCAL_TRANSACTION_ID`` changes)."""
    package = _object(o, PACKAGE_SUFFIX)
    return [
        f"CREATE OR REPLACE PACKAGE {package} AUTHID DEFINER AS "
        "FUNCTION tx_time RETURN TIMESTAMP WITH TIME ZONE; END;",
        f"CREATE OR REPLACE PACKAGE BODY {package} AS "
        "g_txid VARCHAR2(64); g_time TIMESTAMP WITH TIME ZONE; "
        "FUNCTION tx_time RETURN TIMESTAMP WITH TIME ZONE IS "
        "v_txid VARCHAR2(64) := DBMS_TRANSACTION.LOCAL_TRANSACTION_ID; BEGIN "
        "IF g_txid IS NULL OR v_txid IS NULL OR v_txid <> g_txid THEN "
        "g_txid := v_txid; g_time := SYSTIMESTAMP; END IF; RETURN g_time; END; END;",
    ]


NO_DEEP_SEC_SQLCODES = (-900, -904, -942)
"""What the end-user query raises on a database without Deep Data Security (ORA-00900 invalid
statement, ORA-00904 invalid identifier, ORA-00942 no such view): the only failures the trigger
records as "no end user"."""

_END_USER = ("BEGIN EXECUTE IMMEDIATE 'SELECT ORA_END_USER_CONTEXT.username FROM dual' "
             "INTO v_user; EXCEPTION WHEN OTHERS THEN IF SQLCODE IN ("
             + ", ".join(str(code) for code in NO_DEEP_SEC_SQLCODES)
             + ") THEN v_user := NULL; ELSE RAISE; END IF; END;")
"""The verified end user (``NULL`` outside an end-user context). Dynamic SQL, so the trigger
compiles whatever PL/SQL makes of the dotted name; a database without the operator records
``NULL`` rather than refusing every write. Any other failure (a name longer than the
variable, an error of the context itself) is raised, and the write with it: recorded as
``NULL``, an end user's write would read as one made outside any end-user context (the owner's
or an administrator's), so an end user who could make the lookup fail would write unattributed.
*Unverified*: that the operator answers inside a definer-rights trigger as it does at top level
(the engine's own check, ``context.USERNAME_QUERY``, runs at top level)."""


def _insert(o: OracleObjects, operation: str, logical: str, row: str) -> str:
    record_type, record_id, owner = (part.format(r=row) for part in _SHAPES[logical])
    return (
        f"INSERT INTO {audit_table(o)} ({', '.join(AUDIT_COLUMNS)}) VALUES ("
        f"{_object(o, SEQUENCE_SUFFIX)}.NEXTVAL, {_object(o, PACKAGE_SUFFIX)}.tx_time, "
        f"SYSTIMESTAMP, {operation}, '{logical}', {record_type}, {record_id}, {owner}, "
        "v_user, NULL, SYS_CONTEXT('USERENV', 'SESSION_USER'), "
        "DBMS_TRANSACTION.LOCAL_TRANSACTION_ID);")


def record_trigger(o: OracleObjects, logical: str) -> str:
    """The row trigger of one managed table: one audit row per inserted, updated or deleted
    record, in the writer's transaction.

    A row trigger (Oracle has no transition tables): ``FOR EACH ROW`` writes one audit row per
    record, as PostgreSQL's statement triggers do from their transition tables. Updates record
    the new row's type, id and owner; deletes the old row's. ``application`` is ``NULL``:
    Oracle's end-user security context carries the end user and its data roles, and no value
    the database verified names the application (``MODULE``/``CLIENT_INFO`` are whatever the
    client sets). ``db_login`` is ``SESSION_USER`` (the pool account for an end-user session).
    """
    table = qualified(o.owner, o.names.table(logical), what="table name")
    name = _object(o, trigger_suffix(logical))
    return (
        f"CREATE OR REPLACE TRIGGER {name} AFTER INSERT OR UPDATE OR DELETE ON {table} "
        "FOR EACH ROW DECLARE v_user VARCHAR2(128 CHAR); BEGIN " + _END_USER + " "
        "IF DELETING THEN " + _insert(o, "'delete'", logical, ":OLD") + " "
        "ELSE " + _insert(o, "CASE WHEN INSERTING THEN 'insert' ELSE 'update' END", logical,
                          ":NEW") + " END IF; END;")


def truncate_trigger(o: OracleObjects) -> str:
    """``AFTER TRUNCATE ON <owner>.SCHEMA``: a ``truncate`` row when a managed table is
    truncated.

    A schema trigger fires for DDL the owner's own sessions issue; a ``TRUNCATE`` by another
    account holding ``DROP ANY TABLE`` is not seen (that needs a database trigger and
    ``ADMINISTER DATABASE TRIGGER``). ``TRUNCATE`` commits on its own, so the row is written in
    an autonomous transaction. The table names are literals of validated identifiers.
    """
    names = {normalise(o.names.table(t), what="table name"): t for t in MANAGED_TABLES}
    cases = " ".join(f"WHEN '{name}' THEN '{logical}'" for name, logical in names.items())
    listed = ", ".join(f"'{name}'" for name in names)
    return (
        f"CREATE OR REPLACE TRIGGER {_object(o, TRUNCATE_TRIGGER_SUFFIX)} AFTER TRUNCATE ON "
        f"{quote(o.owner, what='schema owner')}.SCHEMA "
        "DECLARE PRAGMA AUTONOMOUS_TRANSACTION; v_user VARCHAR2(128 CHAR); "
        "v_tx VARCHAR2(64); BEGIN "
        f"IF ORA_DICT_OBJ_OWNER = '{o.owner}' AND ORA_DICT_OBJ_TYPE = 'TABLE' AND "
        f"ORA_DICT_OBJ_NAME IN ({listed}) THEN " + _END_USER + " "
        "v_tx := DBMS_TRANSACTION.LOCAL_TRANSACTION_ID(TRUE); "
        f"INSERT INTO {audit_table(o)} (id, tx_time, clock_time, operation, record_table, "
        "end_user, db_login, txid) VALUES ("
        f"{_object(o, SEQUENCE_SUFFIX)}.NEXTVAL, SYSTIMESTAMP, SYSTIMESTAMP, 'truncate', "
        f"CASE ORA_DICT_OBJ_NAME {cases} END, v_user, SYS_CONTEXT('USERENV', 'SESSION_USER'), "
        "v_tx); COMMIT; END IF; END;")


def trigger_names(o: OracleObjects) -> dict[str, str]:
    """The unquoted name of every audit trigger: each managed table's, then ``""`` for the
    truncate trigger."""
    names = {o.object_name(trigger_suffix(t)): t for t in MANAGED_TABLES}
    names[o.object_name(TRUNCATE_TRIGGER_SUFFIX)] = ""
    return names


def drop_trigger_statements(o: OracleObjects) -> list[str]:
    """Drop every audit trigger. The tables stay (and could not be dropped: Oracle refuses
    ``DROP TABLE`` on a blockchain table with rows until it has been idle for the period of
    ``NO DROP UNTIL n DAYS IDLE``); the sequence and the package stay for a later enable."""
    return [f"DROP TRIGGER IF EXISTS {_object(o, suffix)}"
            for suffix in (*(trigger_suffix(t) for t in MANAGED_TABLES),
                           TRUNCATE_TRIGGER_SUFFIX)]


def trigger_state(o: OracleObjects) -> Statement:
    """``trigger_name, status`` of the store's audit triggers (``ENABLED``/``DISABLED``)."""
    names = list(trigger_names(o))
    binds = {f"g{i}": name for i, name in enumerate(names)}
    placeholders = ", ".join(f":{key}" for key in binds)
    return Statement(f"SELECT trigger_name, status FROM all_triggers WHERE owner = :owner "
                     f"AND trigger_name IN ({placeholders})", {"owner": o.owner, **binds})


def mandatory_access_control(o: OracleObjects) -> list[str]:
    """``SET USE DATA GRANTS ONLY ... ENABLED`` on the three audit tables.

    Not run by the adapter (:data:`~.write_audit.ENABLE_MANDATORY_ACCESS_CONTROL`): Deep Data
    Security documents that with it on, end users reach the object *only* through data grants
    "regardless of any database privileges they hold ... across all access paths, including
    views defined on the protected object" (Deep Data Security Guide, 16.5), which reads as
    covering the owner's definer-rights trigger too: with no data grant (and a data grant would
    let end users insert forged rows), every audited write of an end user would then fail.
    Whether a trigger is such a path is *unverified*; a live test decides.
    """
    return [f"SET USE DATA GRANTS ONLY ON {table} ENABLED"
            for table in (audit_table(o), chain_table(o), checkpoint_table(o))]


def audit_event(o: OracleObjects, operation: str) -> Statement:
    """An ``audit_enabled`` / ``audit_disabled`` row (who switched the audit, and when)."""
    if operation not in ("audit_enabled", "audit_disabled"):
        raise ValueError(f"not an audit event: {operation!r}")
    return Statement(
        "DECLARE v_tx VARCHAR2(64) := DBMS_TRANSACTION.LOCAL_TRANSACTION_ID(TRUE); BEGIN "
        f"INSERT INTO {audit_table(o)} (id, tx_time, clock_time, operation, db_login, txid) "
        f"VALUES ({_object(o, SEQUENCE_SUFFIX)}.NEXTVAL, SYSTIMESTAMP, SYSTIMESTAMP, "
        ":operation, SYS_CONTEXT('USERENV', 'SESSION_USER'), v_tx); END;",
        {"operation": operation})


DDL_LOCK_TIMEOUT_SECONDS = 10
"""How long each trigger DDL waits for the record table's in-flight writers."""


def ddl_lock_timeout(seconds: int = DDL_LOCK_TIMEOUT_SECONDS) -> str:
    """``ALTER SESSION SET DDL_LOCK_TIMEOUT``: a trigger's DDL waits this long for writers
    (``0``, Oracle's default, is set again afterwards)."""
    return f"ALTER SESSION SET DDL_LOCK_TIMEOUT = {int(seconds)}"


def compile_errors(o: OracleObjects, object_name: str) -> Statement:
    """The first compilation errors of one PL/SQL object of the owner (``line, position,
    text``): python-oracledb reports "success with compilation error" (ORA-24344) as
    ``Cursor.warning``, not as an exception, and an invalid trigger fails every write to its
    table (ORA-04098)."""
    return Statement("SELECT line, position, text FROM all_errors WHERE owner = :owner "
                     "AND name = :name ORDER BY sequence FETCH FIRST 5 ROWS ONLY",
                     {"owner": o.owner, "name": object_name})


_ROW = ("a.id, SYS_EXTRACT_UTC(a.tx_time), SYS_EXTRACT_UTC(a.clock_time), a.operation, "
        "a.record_table, a.record_type, a.record_id, a.record_owner, a.end_user, "
        "a.application, a.db_login, a.txid")
"""The audit row's columns in :class:`AuditRow` order; times in UTC (the adapter marks them)."""


def lock_and_horizon(o: OracleObjects, timeout_seconds: int) -> list[Statement]:
    """Wait for every transaction that wrote audit rows, then read the highest id.

    ``SHARE`` mode conflicts with the ``ROW EXCLUSIVE`` lock each inserting transaction holds
    until it ends, and an id is drawn (``ORDER`` sequence) while that lock is held: once
    granted, every row up to the highest id is committed or gone, and later rows get higher
    ids. ``WAIT n`` gives up after ``n`` seconds (ORA-30006). *Unverified*: that Oracle lets a
    blockchain table be locked explicitly (it refuses only the row-changing operations).
    """
    seconds = max(1, int(timeout_seconds))
    return [Statement(f"LOCK TABLE {audit_table(o)} IN SHARE MODE WAIT {seconds}"),
            Statement(f"SELECT MAX(id) FROM {audit_table(o)}")]


def lock_checkpoints(o: OracleObjects) -> Statement:
    """One sealer at a time (until the transaction ends)."""
    return Statement(f"LOCK TABLE {checkpoint_table(o)} IN EXCLUSIVE MODE")


def select_checkpoints(o: OracleObjects, *, last_only: bool = False) -> Statement:
    """Every checkpoint by ``seq`` (or the newest): the :class:`CheckpointRow` columns."""
    order = "seq DESC FETCH FIRST 1 ROWS ONLY" if last_only else "seq"
    return Statement("SELECT seq, first_id, last_id, row_count, head_hash, prev_head, "
                     "SYS_EXTRACT_UTC(sealed_at), sealed_by, key_id, signature "
                     f"FROM {checkpoint_table(o)} ORDER BY {order}")


def list_rows(o: OracleObjects, after_id: int, limit: int) -> Statement:
    """At most ``limit`` audit rows after ``after_id``, by id."""
    return Statement(f"SELECT {_ROW} FROM {audit_table(o)} a WHERE a.id > :after_id ORDER BY a.id "
                     "FETCH FIRST :row_limit ROWS ONLY", {"after_id": after_id, "row_limit": limit})


def rows_in_range(o: OracleObjects, after_id: int, through_id: int, limit: int) -> Statement:
    """At most ``limit`` audit rows with ``after_id < id <= through_id``, by id (to seal)."""
    return Statement(f"SELECT {_ROW} FROM {audit_table(o)} a WHERE a.id > :after_id "
                     "AND a.id <= :through_id ORDER BY a.id FETCH FIRST :row_limit ROWS ONLY",
                     {"after_id": after_id, "through_id": through_id, "row_limit": limit})


def sealed_rows(o: OracleObjects, after_id: int, through_id: int) -> Statement:
    """Audit rows and chain entries in ``(after_id, through_id]`` matched by id (either may be
    missing), by id: the row's columns, then ``audit_id, prev_id, row_hash, checkpoint_seq``."""
    return Statement(
        f"SELECT {_ROW}, ch.audit_id, ch.prev_id, ch.row_hash, ch.checkpoint_seq "
        f"FROM {audit_table(o)} a FULL OUTER JOIN {chain_table(o)} ch ON ch.audit_id = a.id "
        "WHERE COALESCE(a.id, ch.audit_id) > :after_id "
        "AND COALESCE(a.id, ch.audit_id) <= :through_id "
        "ORDER BY COALESCE(a.id, ch.audit_id)", {"after_id": after_id, "through_id": through_id})


def count_after(o: OracleObjects, after_id: int) -> Statement:
    """How many audit rows have an id above ``after_id``."""
    return Statement(f"SELECT COUNT(*) FROM {audit_table(o)} WHERE id > :after_id",
                     {"after_id": after_id})


SEAL_TIME: Statement = Statement(
    "SELECT CAST(SYS_EXTRACT_UTC(SYSTIMESTAMP) AS TIMESTAMP(3)), "
    "SYS_CONTEXT('USERENV', 'SESSION_USER') FROM dual")
"""The database clock in UTC, to the millisecond, and the session's login."""


def insert_chain(o: OracleObjects, entries: Sequence[ChainEntry]) -> Statement:
    """The chain entries of one seal (``executemany``: one bind mapping per entry; ``prev_id``
    is declared a number, it is ``NULL`` in the first entry of a store)."""
    return Statement(
        f"INSERT INTO {chain_table(o)} (audit_id, prev_id, row_hash, checkpoint_seq) "
        "VALUES (:audit_id, :prev_id, :row_hash, :checkpoint_seq)",
        rows=tuple({"audit_id": e.audit_id, "prev_id": e.prev_id, "row_hash": e.row_hash,
                    "checkpoint_seq": e.checkpoint_seq} for e in entries),
        input_sizes={"prev_id": oracledb.DB_TYPE_NUMBER})


def insert_checkpoint(o: OracleObjects, checkpoint: CheckpointRow) -> Statement:
    """One checkpoint; ``sealed_at`` is bound as a UTC ``TIMESTAMP`` (declared
    ``DB_TYPE_TIMESTAMP``: ``binds.timestamp_input_sizes``)."""
    return Statement(
        f"INSERT INTO {checkpoint_table(o)} (seq, first_id, last_id, row_count, head_hash, "
        "prev_head, sealed_at, sealed_by, key_id, signature) VALUES (:seq, :first_id, "
        f":last_id, :row_count, :head_hash, :prev_head, {utc_timestamp_sql('sealed_at')}, "
        ":sealed_by, :key_id, :signature)",
        {"seq": checkpoint.seq, "first_id": checkpoint.first_id, "last_id": checkpoint.last_id,
         "row_count": checkpoint.row_count, "head_hash": checkpoint.head_hash,
         "prev_head": checkpoint.prev_head, "sealed_at": timestamp_bind(checkpoint.sealed_at),
         "sealed_by": checkpoint.sealed_by, "key_id": checkpoint.key_id,
         "signature": checkpoint.signature},
        input_sizes=timestamp_input_sizes("sealed_at"))


VERIFY_ROWS = (
    "DECLARE v_rows NUMBER; BEGIN DBMS_BLOCKCHAIN_TABLE.VERIFY_ROWS("
    "schema_name => :schema_name, table_name => :table_name, low_timestamp => NULL, "
    "high_timestamp => NULL, instance_id => NULL, chain_id => NULL, "
    "number_of_rows_verified => v_rows, verify_signature => FALSE); :verified := v_rows; END;")
"""Oracle's own verification of every row's hash on every chain of one blockchain table
(``:schema_name``, ``:table_name``; ``:verified`` is an OUT number). Row signatures are not
checked (the SDK signs checkpoints, not rows: no ``SIGN_ROW``). A corrupted row raises
ORA-05737 naming its instance, chain and sequence number."""


def verify_rows(o: OracleObjects, suffix: str) -> Statement:
    """:data:`VERIFY_ROWS` for audit table ``suffix`` (``verified`` is the OUT bind, a
    ``cursor.var(int)``)."""
    if suffix not in TABLE_SUFFIXES:
        raise ValueError(f"not an audit table: {suffix!r}")
    return Statement(VERIFY_ROWS, {"schema_name": o.owner, "table_name": o.object_name(suffix)},
                     out_binds={"verified": int})


VERIFICATION_FAILED = 5737
"""ORA-05737: rows verification failed at instance ID, chain ID, sequence number."""

_FAILED_AT = re.compile(r"instance ID '?(?P<instance>\d+)'?, chain ID '?(?P<chain>\d+)'?, "
                        r"sequence number '?(?P<seq>\d+)'?")


def failed_row_position(message: str) -> tuple[int, int, int] | None:
    """``(instance, chain, sequence)`` an ORA-05737 message names, else ``None``."""
    match = _FAILED_AT.search(message)
    if match is None:
        return None
    return int(match["instance"]), int(match["chain"]), int(match["seq"])


def row_at_position(o: OracleObjects, suffix: str, position: tuple[int, int, int]) -> Statement:
    """The key (``id``, ``audit_id`` or ``seq``) of the row at a chain position, read from the
    blockchain table's hidden columns ``ORABCTAB_INST_ID$``, ``ORABCTAB_CHAIN_ID$`` and
    ``ORABCTAB_SEQ_NUM$``."""
    key = {AUDIT_SUFFIX: "id", CHAIN_SUFFIX: "audit_id", CHECKPOINT_SUFFIX: "seq"}[suffix]
    instance, chain, seq = position
    return Statement(
        f"SELECT {key} FROM {_object(o, suffix)} WHERE ORABCTAB_INST_ID$ = :instance_id "
        "AND ORABCTAB_CHAIN_ID$ = :chain_id AND ORABCTAB_SEQ_NUM$ = :seq_num",
        {"instance_id": instance, "chain_id": chain, "seq_num": seq})
