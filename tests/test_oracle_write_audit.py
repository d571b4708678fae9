"""The database write audit on Oracle (``engines/oracle/audit_sql.py``, ``write_audit.py``).

No Oracle database is reachable here: every statement is pinned by a reviewed golden file
(``tests/golden/oracle_audit/``, rewritten with ``OAM_UPDATE_GOLDEN=1``). Queries and DML are
parsed with sqlglot's Oracle dialect. sqlglot does not parse ``CREATE BLOCKCHAIN TABLE`` (it
falls back to an opaque command), ``LOCK TABLE``, ``SET USE DATA GRANTS ONLY``, ``ALTER
SESSION`` or PL/SQL (triggers, the package, the ``VERIFY_ROWS`` block): their shapes are checked
by strict patterns, the blockchain tables' column lists are parsed as ordinary ``CREATE TABLE``
statements, and the ``INSERT`` inside each trigger is parsed on its own. The dispatch and
``oam-admin audit`` are run up to a closed port.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import oracledb
import pytest
import sqlglot
from cli_harness import Cli, cli, one_error
from golden_files import assert_matches_golden, golden_text
from local_ports import closed_port
from oracleagentmemory.core.deepsec.audit_chain import GENESIS, chain_hash
from oracleagentmemory.engines.identifiers import MANAGED_TABLES
from oracleagentmemory.engines.oracle import audit_sql
from oracleagentmemory.engines.oracle import write_audit as oracle_audit
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.engines.write_audit import (
    AuditRow,
    ChainEntry,
    CheckpointRow,
    write_audit_admin_for,
)
from oracleagentmemory.errors import DatabaseUnavailableError, InvalidArgumentTypeError
from sqlglot import exp

__all__ = ["cli"]

GOLDEN = Path(__file__).parent / "golden" / "oracle_audit"
BIND = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")
QUOTED = r'"[A-Z][A-Z0-9_$#]*"'
QUALIFIED = rf"{QUOTED}\.{QUOTED}"


SEALED_AT = datetime(2026, 12, 2, 1, 30, 0, 123000, tzinfo=timezone.utc)
CHECKPOINT = CheckpointRow(3, 8, 42, 30, bytes(range(32)), bytes(32), SEALED_AT, "OAM_OWNER",
                           "kid-1", "eyJ.payload.sig")
ENTRIES = [ChainEntry(8, 7, bytes([1]) * 32, 3), ChainEntry(9, 8, bytes([2]) * 32, 3)]


def objects(store: str = "st") -> OracleObjects:
    return OracleObjects.of(derive_store_names(
        memory_store_id=store, table_name_prefix=None, schema_owner="oam_owner"))


def queries(o: OracleObjects) -> list[Statement]:
    """Every statement with binds (or none), in a fixed order."""
    return [
        audit_sql.existing_tables(o)[0], audit_sql.trigger_state(o),
        audit_sql.audit_event(o, "audit_enabled"), audit_sql.audit_event(o, "audit_disabled"),
        *audit_sql.lock_and_horizon(o, 30), audit_sql.lock_checkpoints(o),
        audit_sql.select_checkpoints(o), audit_sql.select_checkpoints(o, last_only=True),
        audit_sql.list_rows(o, 7, 100), audit_sql.rows_in_range(o, 7, 42, 1000),
        audit_sql.sealed_rows(o, 7, 42), audit_sql.count_after(o, 7), audit_sql.SEAL_TIME,
        audit_sql.insert_checkpoint(o, CHECKPOINT),
        *(audit_sql.verify_rows(o, s) for s in audit_sql.TABLE_SUFFIXES),
        *(audit_sql.row_at_position(o, s, (1, 3, 17)) for s in audit_sql.TABLE_SUFFIXES),
        audit_sql.compile_errors(o, "ST_MEMORY_AUDIT_TRG"), audit_sql.package_state(o),
    ]


def ddl(o: OracleObjects) -> list[str]:
    return [*audit_sql.create_tables(o).values(), *audit_sql.install_statements(o),
            *audit_sql.drop_trigger_statements(o), *audit_sql.mandatory_access_control(o),
            audit_sql.ddl_lock_timeout()]


def rendered(o: OracleObjects) -> list[str]:
    chain = audit_sql.insert_chain(o, ENTRIES)
    assert chain.rows is not None
    return [*ddl(o), *(f"{s.sql}\n-- binds: {sorted(s.binds.items())!r}" for s in queries(o)),
            f"{chain.sql}\n-- binds (executemany): {[sorted(e.items()) for e in chain.rows]!r}"]


@pytest.mark.parametrize("store", ["st", "Other_Store"])
def test_every_statement_matches_the_reviewed_golden_file(store: str) -> None:
    assert_matches_golden(GOLDEN / f"{store.lower()}.sql", golden_text(
        "Oracle write audit statements", store, "oracleagentmemory.engines.oracle.audit_sql",
        "tests/test_oracle_write_audit.py", rendered(objects(store))))


# --- the blockchain tables ----------------------------------------------------------------------
BLOCKCHAIN = re.compile(
    rf"CREATE BLOCKCHAIN TABLE (?P<name>{QUALIFIED}) (?P<columns>\(.*\)) "
    r"NO DROP UNTIL (?P<idle>\d+) DAYS IDLE NO DELETE UNTIL (?P<retention>\d+) DAYS AFTER "
    r'INSERT HASHING USING "SHA2_512" VERSION "v2"')


@pytest.mark.parametrize(("suffix", "record"), [(audit_sql.AUDIT_SUFFIX, AuditRow),
                                                (audit_sql.CHAIN_SUFFIX, ChainEntry),
                                                (audit_sql.CHECKPOINT_SUFFIX, CheckpointRow)])
def test_each_audit_table_is_a_blockchain_table_with_the_contracts_columns(
        suffix: str, record: type) -> None:
    o = objects()
    statement = audit_sql.create_tables(o)[suffix]
    match = BLOCKCHAIN.fullmatch(statement)
    assert match, statement
    assert match["name"] == f'"OAM_OWNER"."ST_{suffix.upper()}"'
    assert (int(match["idle"]), int(match["retention"])) == (16, 16)
    # sqlglot cannot parse the blockchain clauses: the column list is parsed as a plain table.
    parsed = sqlglot.parse_one(f"CREATE TABLE t {match['columns']}", read="oracle")
    columns = [c.name for c in parsed.find_all(exp.ColumnDef)]
    fields = [f.name for f in dataclasses.fields(record)]
    assert columns == fields
    if record is AuditRow:
        assert tuple(columns) == audit_sql.AUDIT_COLUMNS


def test_retention_below_oracles_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        audit_sql.create_tables(objects(), retention_days=15)
    longer = audit_sql.create_tables(objects(), retention_days=365, idle_days=30)
    assert "NO DROP UNTIL 30 DAYS IDLE NO DELETE UNTIL 365 DAYS AFTER INSERT" in \
        longer[audit_sql.AUDIT_SUFFIX]


def test_the_audit_tables_are_never_dropped_and_only_triggers_are() -> None:
    o = objects()
    drops = audit_sql.drop_trigger_statements(o)
    assert len(drops) == len(MANAGED_TABLES) + 1
    assert all(re.fullmatch(rf"DROP TRIGGER IF EXISTS {QUALIFIED}", d) for d in drops)
    everything = "\n".join(ddl(o))
    assert "DROP TABLE" not in everything and "TRUNCATE TABLE" not in everything


# --- the triggers -------------------------------------------------------------------------------
ROW_TRIGGER = re.compile(
    rf"CREATE OR REPLACE TRIGGER (?P<name>{QUALIFIED}) AFTER INSERT OR UPDATE OR DELETE ON "
    rf"(?P<table>{QUALIFIED}) FOR EACH ROW DECLARE v_user VARCHAR2\(128 CHAR\); BEGIN "
    r"BEGIN EXECUTE IMMEDIATE 'SELECT ORA_END_USER_CONTEXT\.username FROM dual' INTO v_user; "
    r"EXCEPTION WHEN OTHERS THEN IF SQLCODE IN \(-900, -904, -942\) THEN v_user := NULL; "
    r"ELSE RAISE; END IF; END; "
    r"IF DELETING THEN (?P<delete>INSERT INTO [^;]*;) "
    r"ELSE (?P<write>INSERT INTO [^;]*;) END IF; END;")


def _parse_trigger_insert(text: str) -> exp.Insert:
    """The trigger's INSERT with ``:OLD.x`` / ``:NEW.x`` as plain columns, parsed by sqlglot."""
    plain = re.sub(r":(OLD|NEW)\.", r"\1_", text.rstrip(";"))
    parsed = sqlglot.parse_one(plain, read="oracle")
    assert isinstance(parsed, exp.Insert)
    return parsed


@pytest.mark.parametrize("logical", MANAGED_TABLES)
def test_each_managed_table_has_a_row_trigger_writing_one_audit_row_per_record(
        logical: str) -> None:
    o = objects()
    trigger = audit_sql.record_trigger(o, logical)
    match = ROW_TRIGGER.fullmatch(trigger)
    assert match, trigger
    assert match["table"] == o.table(logical)
    assert match["name"] == f'"OAM_OWNER"."ST_{logical.upper()}_AUDIT_TRG"'
    for branch, row, other in (("delete", ":OLD.", ":NEW."), ("write", ":NEW.", ":OLD.")):
        insert = match[branch]
        assert row in insert and other not in insert
        parsed = _parse_trigger_insert(insert)
        assert parsed.this.this.sql(dialect="oracle") == audit_sql.audit_table(o)
        assert [c.name for c in parsed.this.expressions] == list(audit_sql.AUDIT_COLUMNS)
        assert (f"{audit_sql.audit_table(o)[:-1]}_SEQ\".NEXTVAL, "
                f"{audit_sql.audit_table(o)[:-1]}_TX\".tx_time, SYSTIMESTAMP") in insert
        assert f"'{logical}'" in insert  # record_table: the logical name
        assert "v_user, NULL, SYS_CONTEXT('USERENV', 'SESSION_USER'), " \
               "DBMS_TRANSACTION.LOCAL_TRANSACTION_ID)" in insert
    assert "'delete'" in match["delete"]
    assert "CASE WHEN INSERTING THEN 'insert' ELSE 'update' END" in match["write"]


def test_the_records_type_id_and_owner_follow_the_postgresql_engine() -> None:
    o = objects()
    expected = {
        "thread": ("'thread'", ":NEW.id", ":NEW.user_id"),
        "document": ("'image'", ":NEW.id", ":NEW.user_id"),
        "memory": (":NEW.record_type", ":NEW.id", ":NEW.user_id"),
        "memory_link": ("'relation'", ":NEW.id", ":NEW.user_id"),
        "record_chunks": (":NEW.record_type", ":NEW.record_id", ":NEW.user_id"),
        "actor_profile": (":NEW.actor_type || '_profile'", ":NEW.actor_id",
                          "CASE WHEN :NEW.actor_type = 'user' THEN :NEW.actor_id END"),
    }
    for logical, (kind, ident, owner) in expected.items():
        match = ROW_TRIGGER.fullmatch(audit_sql.record_trigger(o, logical))
        assert match
        assert f"'{logical}', {kind}, {ident}, {owner}, v_user" in match["write"]


def test_install_creates_the_sequence_package_every_trigger_and_the_truncate_trigger() -> None:
    o = objects()
    statements = audit_sql.install_statements(o)
    assert statements[0] == ('CREATE SEQUENCE IF NOT EXISTS "OAM_OWNER"."ST_WRITE_AUDIT_SEQ" '
                             "START WITH 1 INCREMENT BY 1 NOCYCLE ORDER")
    assert isinstance(sqlglot.parse_one(statements[0], read="oracle"), exp.Create)
    assert re.fullmatch(r'CREATE OR REPLACE PACKAGE "OAM_OWNER"\."ST_WRITE_AUDIT_TX" AUTHID '
                        r"DEFINER AS FUNCTION tx_time RETURN TIMESTAMP WITH TIME ZONE; END;",
                        statements[1])
    assert statements[2].startswith('CREATE OR REPLACE PACKAGE BODY "OAM_OWNER".'
                                    '"ST_WRITE_AUDIT_TX" AS ')
    assert "g_txid := v_txid; g_time := SYSTIMESTAMP;" in statements[2]
    triggers = statements[3:3 + len(MANAGED_TABLES)]
    assert triggers == [audit_sql.record_trigger(o, t) for t in MANAGED_TABLES]
    assert statements[-1] == audit_sql.truncate_trigger(o)
    assert len(statements) == 3 + len(MANAGED_TABLES) + 1


def test_the_truncate_trigger_logs_only_the_stores_tables_in_its_own_transaction() -> None:
    o = objects()
    trigger = audit_sql.truncate_trigger(o)
    assert trigger.startswith('CREATE OR REPLACE TRIGGER "OAM_OWNER"."ST_WRITE_AUDIT_TRUNCATE_TRG"'
                              ' AFTER TRUNCATE ON "OAM_OWNER".SCHEMA DECLARE PRAGMA '
                              "AUTONOMOUS_TRANSACTION;")
    listed = re.search(r"ORA_DICT_OBJ_NAME IN \(([^)]*)\)", trigger)
    assert listed is not None
    assert listed[1].split(", ") == [f"'ST_{t.upper()}'" for t in MANAGED_TABLES]
    assert "ORA_DICT_OBJ_OWNER = 'OAM_OWNER'" in trigger
    for logical in MANAGED_TABLES:
        assert f"WHEN 'ST_{logical.upper()}' THEN '{logical}'" in trigger
    assert trigger.endswith("'truncate', CASE ORA_DICT_OBJ_NAME " + " ".join(
        f"WHEN 'ST_{t.upper()}' THEN '{t}'" for t in MANAGED_TABLES) +
        " END, v_user, SYS_CONTEXT('USERENV', 'SESSION_USER'), v_tx); COMMIT; END IF; END;")


def test_a_compilation_error_names_the_plsql_object_it_came_from() -> None:
    o = objects()
    created = [oracle_audit._created_name(s) for s in audit_sql.install_statements(o)[1:]]
    assert created == ["ST_WRITE_AUDIT_TX", "ST_WRITE_AUDIT_TX",
                       *(f"ST_{t.upper()}_AUDIT_TRG" for t in MANAGED_TABLES),
                       "ST_WRITE_AUDIT_TRUNCATE_TRG"]
    assert oracle_audit._created_name(audit_sql.install_statements(o)[0]) is None
    statement = audit_sql.compile_errors(o, "ST_MEMORY_AUDIT_TRG")
    sql, binds = statement.sql, statement.binds
    assert isinstance(sqlglot.parse_one(sql, read="oracle"), exp.Select)
    assert binds == {"owner": "OAM_OWNER", "name": "ST_MEMORY_AUDIT_TRG"}


def test_trigger_names_cover_every_table_and_the_truncate_trigger() -> None:
    names = audit_sql.trigger_names(objects())
    assert names == {**{f"ST_{t.upper()}_AUDIT_TRG": t for t in MANAGED_TABLES},
                     "ST_WRITE_AUDIT_TRUNCATE_TRG": ""}


def test_mandatory_access_control_is_rendered_but_not_run() -> None:
    assert audit_sql.mandatory_access_control(objects()) == [
        f'SET USE DATA GRANTS ONLY ON "OAM_OWNER"."ST_{s.upper()}" ENABLED'
        for s in audit_sql.TABLE_SUFFIXES]
    assert oracle_audit.ENABLE_MANDATORY_ACCESS_CONTROL is False


# --- queries, DML and verification --------------------------------------------------------------
def test_queries_parse_and_bind_exactly_their_values() -> None:
    for statement in queries(objects()):
        sql, binds = statement.sql, statement.binds
        assert set(BIND.findall(sql)) >= set(binds), sql
        if sql.startswith(("SELECT", "INSERT")):
            parsed = sqlglot.parse_one(sql, read="oracle")
            assert isinstance(parsed, (exp.Select, exp.Insert)), sql
            assert set(BIND.findall(sql)) == set(binds), sql
        elif sql.startswith("LOCK TABLE"):
            assert re.fullmatch(rf"LOCK TABLE {QUALIFIED} IN (SHARE|EXCLUSIVE) MODE"
                                r"( WAIT \d+)?", sql), sql
        else:  # PL/SQL blocks
            assert re.fullmatch(r"DECLARE .* END;", sql), sql


def test_values_are_bound_never_formatted() -> None:
    o = objects()
    assert audit_sql.list_rows(o, 123456, 789).binds == {"after_id": 123456, "row_limit": 789}
    assert "123456" not in audit_sql.list_rows(o, 123456, 789).sql
    assert audit_sql.rows_in_range(o, 5, 99999, 3).binds == {
        "after_id": 5, "through_id": 99999, "row_limit": 3}
    assert audit_sql.verify_rows(o, audit_sql.CHAIN_SUFFIX).binds == {
        "schema_name": "OAM_OWNER", "table_name": "ST_WRITE_AUDIT_CHAIN"}
    assert audit_sql.audit_event(o, "audit_enabled").binds == {"operation": "audit_enabled"}
    with pytest.raises(ValueError):
        audit_sql.audit_event(o, "insert")
    with pytest.raises(ValueError):
        audit_sql.verify_rows(o, "thread")


def test_verify_rows_calls_the_documented_procedure() -> None:
    statement = audit_sql.verify_rows(objects(), audit_sql.AUDIT_SUFFIX)
    sql, binds = statement.sql, statement.binds
    assert statement.out_binds == {"verified": int}
    assert sql == (
        "DECLARE v_rows NUMBER; BEGIN DBMS_BLOCKCHAIN_TABLE.VERIFY_ROWS(schema_name => "
        ":schema_name, table_name => :table_name, low_timestamp => NULL, high_timestamp => NULL, "
        "instance_id => NULL, chain_id => NULL, number_of_rows_verified => v_rows, "
        "verify_signature => FALSE); :verified := v_rows; END;")
    assert binds == {"schema_name": "OAM_OWNER", "table_name": "ST_WRITE_AUDIT"}


@pytest.mark.parametrize("message", [
    "ORA-05737: rows verification failed at instance ID '1', chain ID '3', sequence number '17'",
    "ORA-05737: rows verification failed at pluggable database GUID 'AB12', instance ID '1', "
    "chain ID '3', sequence number '17'",
])
def test_a_failed_verification_names_the_row_position(message: str) -> None:
    assert audit_sql.failed_row_position(message) == (1, 3, 17)
    statement = audit_sql.row_at_position(objects(), audit_sql.AUDIT_SUFFIX, (1, 3, 17))
    sql, binds = statement.sql, statement.binds
    assert sql == ('SELECT id FROM "OAM_OWNER"."ST_WRITE_AUDIT" WHERE ORABCTAB_INST_ID$ = '
                   ":instance_id AND ORABCTAB_CHAIN_ID$ = :chain_id AND ORABCTAB_SEQ_NUM$ = "
                   ":seq_num")
    assert binds == {"instance_id": 1, "chain_id": 3, "seq_num": 17}
    assert audit_sql.failed_row_position("ORA-00942: table or view does not exist") is None


def test_a_seal_binds_its_chain_entries_and_the_checkpoint_in_utc() -> None:
    chain = audit_sql.insert_chain(objects(), ENTRIES)
    sql, entries = chain.sql, chain.rows
    assert entries is not None
    assert chain.input_sizes == {"prev_id": oracledb.DB_TYPE_NUMBER}
    assert isinstance(sqlglot.parse_one(sql, read="oracle"), exp.Insert)
    assert entries == ({"audit_id": 8, "prev_id": 7, "row_hash": bytes([1]) * 32,
                        "checkpoint_seq": 3},
                       {"audit_id": 9, "prev_id": 8, "row_hash": bytes([2]) * 32,
                        "checkpoint_seq": 3})
    assert set(BIND.findall(sql)) == set(entries[0])
    assert audit_sql.insert_chain(objects(), []).rows == ()
    statement = audit_sql.insert_checkpoint(objects(), CHECKPOINT)
    sql, binds = statement.sql, statement.binds
    assert statement.input_sizes == {"sealed_at": oracledb.DB_TYPE_TIMESTAMP}
    assert "FROM_TZ(CAST(:sealed_at AS TIMESTAMP), 'UTC')" in sql
    assert binds["sealed_at"] == datetime(2026, 12, 2, 1, 30, 0, 123000)  # UTC wall clock
    assert binds["head_hash"] == bytes(range(32)) and binds["signature"] == "eyJ.payload.sig"


def test_the_wait_for_writers_lock_is_in_whole_seconds() -> None:
    lock, horizon = audit_sql.lock_and_horizon(objects(), 0)
    assert lock.sql.endswith("IN SHARE MODE WAIT 1")
    assert horizon.sql == 'SELECT MAX(id) FROM "OAM_OWNER"."ST_WRITE_AUDIT"'


def test_rows_come_back_as_the_contracts_rows_in_utc() -> None:
    naive = datetime(2026, 12, 2, 1, 2, 3, 456789)
    values = (17, naive, naive + timedelta(microseconds=5), "insert", "memory", "fact", "m1",
              "BOB", "BOB", None, "OAM_RUNTIME", "3.12.1234")
    row = oracle_audit._row(values)
    assert row == AuditRow(17, naive.replace(tzinfo=timezone.utc),
                           (naive + timedelta(microseconds=5)).replace(tzinfo=timezone.utc),
                           "insert", "memory", "fact", "m1", "BOB", "BOB", None, "OAM_RUNTIME",
                           "3.12.1234")
    assert chain_hash(GENESIS, row) == chain_hash(GENESIS, oracle_audit._row(values))
    checkpoint = oracle_audit._checkpoint((1, 2, 17, 16, b"h" * 32, bytes(32), naive,
                                           "OAM_OWNER", "kid", "jws"))
    assert checkpoint.sealed_at.tzinfo is timezone.utc and checkpoint.head_hash == b"h" * 32


# --- dispatch and the CLI -----------------------------------------------------------------------


def test_the_oracle_admin_implements_the_whole_contract() -> None:
    assert not oracle_audit.OracleWriteAuditAdmin.__abstractmethods__


def test_an_oracle_url_reaches_the_oracle_admin_and_a_closed_port_is_unavailable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAM_ORACLE_PASSWORD", "not-used")
    with pytest.raises(DatabaseUnavailableError, match="DPY-6005"):
        write_audit_admin_for(f"oracle+tcp://oam_owner@127.0.0.1:{closed_port()}/FREEPDB1")


def test_other_objects_are_refused_with_the_accepted_kinds() -> None:
    with pytest.raises(InvalidArgumentTypeError, match="oracledb Connection or oracle:// URL"):
        write_audit_admin_for("mysql://u@h/db")
    with pytest.raises(InvalidArgumentTypeError, match="oracledb Connection"):
        oracle_audit.OracleWriteAuditAdmin.for_connection(object())


@pytest.mark.parametrize("action", ["enable", "status", "list"])
def test_oam_admin_audit_on_a_closed_oracle_port_says_the_database_is_unavailable(
        cli: Cli, action: str) -> None:
    url = f"oracle+tcp://oam_owner@127.0.0.1:{closed_port()}/FREEPDB1"
    result = cli("audit", action, "--url", url, "--memory-store-id", "st", "--schema-owner",
                 "oam_owner", env={"OAM_ORACLE_PASSWORD": "not-used"})
    one_error(result, 1, "the database is unavailable")
