"""SQL of the database write audit on PostgreSQL: the audit tables and their triggers.

Installed by ``enable_write_audit`` outside the versioned store schema (a store without audit is
unchanged; enabling and disabling need no schema upgrade), in the store's schema, all owned by the
owner of the store's tables:

- ``<prefix>write_audit``: one row per record written, inserted only by the triggers below;
- ``<prefix>write_audit_chain``: the hash of each sealed row and the row it follows;
- ``<prefix>write_audit_checkpoint``: signed checkpoints (chain head, last sealed id).

Every managed table of the store gets statement-level ``AFTER INSERT``, ``AFTER UPDATE`` and
``AFTER DELETE`` triggers with transition tables (one ``INSERT ... SELECT`` per statement, however
many rows it wrote) and an ``AFTER TRUNCATE`` trigger, all ``ENABLE ALWAYS`` (they fire under
``session_replication_role = replica`` too). Their functions are ``SECURITY DEFINER`` (owned by
the tables' owner) with a fixed ``search_path``, so the runtime login needs, and has, no privilege
on the audit tables; only the tables' owner (or a superuser) can drop or disable a trigger.

The end user is the database's verified one: the row of ``oam_sec.session_end_user`` that the
row-security policies' ``oam_sec.verified_user`` reads, under the same verification rule
(:data:`~.security_schema._CURRENT_VERIFICATION`: unexpired, no grant changed since, READ
COMMITTED), without the data-role filter. The application is read from that same verified
assertion (its digest matched the row, so its text is the one the database verified).
The audit tables refuse ``UPDATE``, ``DELETE`` and ``TRUNCATE`` (a guard trigger): changing them
takes the owner dropping the guard, which the seal's hash chain then exposes.
"""

from __future__ import annotations

from psycopg import sql

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, StoreNames
from oracleagentmemory.engines.postgres.security_schema import _CURRENT_VERIFICATION

AUDIT_TABLE = "write_audit"
CHAIN_TABLE = "write_audit_chain"
CHECKPOINT_TABLE = "write_audit_checkpoint"
GUARD_FUNCTION = "write_audit_append_only"
TRIGGER_PREFIX = "oam_write_audit_"
"""Triggers on the record tables: ``oam_write_audit_insert`` / ``_update`` / ``_delete`` /
``_truncate``."""
OPERATIONS = ("insert", "update", "delete")

_SHAPES: dict[str, tuple[str, str, str]] = {
    "thread": ("'thread'", "r.id", "r.user_id"),
    "thread_summary": ("'thread_summary'", "r.id", "r.user_id"),
    "actor_profile": ("r.actor_type || '_profile'", "r.actor_id",
                      "CASE WHEN r.actor_type = 'user' THEN r.actor_id END"),
    "message": ("'message'", "r.id", "r.user_id"),
    "document": ("'image'", "r.id", "r.user_id"),
    "memory": ("r.record_type", "r.id", "r.user_id"),
    "memory_link": ("'relation'", "r.id", "r.user_id"),
    "record_chunks": ("r.record_type", "r.record_id", "r.user_id"),
}
"""Per managed table: the record type, record id and record owner of a row ``r`` (never its
contents). Chunks name the record they belong to."""
assert set(_SHAPES) == set(MANAGED_TABLES)

AUDIT_COLUMNS = ("id", "tx_time", "clock_time", "operation", "record_table", "record_type",
                 "record_id", "record_owner", "end_user", "application", "db_login", "txid")
"""The audit row's columns, in the order the hash chain encodes them."""


def audit_table(names: StoreNames) -> sql.Identifier:
    return _qualified(names, AUDIT_TABLE)


def chain_table(names: StoreNames) -> sql.Identifier:
    return _qualified(names, CHAIN_TABLE)


def checkpoint_table(names: StoreNames) -> sql.Identifier:
    return _qualified(names, CHECKPOINT_TABLE)


def _qualified(names: StoreNames, suffix: str) -> sql.Identifier:
    assert names.schema is not None
    return sql.Identifier(names.schema, names.object_name(suffix))


def _function(names: StoreNames, logical: str) -> sql.Identifier:
    return _qualified(names, f"write_audit_{logical}_fn")


def _record_table(names: StoreNames, logical: str) -> sql.Identifier:
    assert names.schema is not None
    return sql.Identifier(names.schema, names.table(logical))


def install_statements(names: StoreNames) -> list[sql.Composed]:
    """Idempotent statements creating the audit tables, the guard and every record trigger."""
    audit, chain, checkpoint = audit_table(names), chain_table(names), checkpoint_table(names)
    guard = _qualified(names, GUARD_FUNCTION)
    statements: list[sql.Composed] = [
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "tx_time timestamptz NOT NULL, clock_time timestamptz NOT NULL, "
            "operation text NOT NULL CHECK (operation IN ('insert', 'update', 'delete', "
            "'truncate', 'audit_enabled', 'audit_disabled')), "
            "record_table text, record_type text, record_id text, record_owner text, "
            "end_user text, application text, db_login text NOT NULL, txid xid8 NOT NULL)"
        ).format(audit),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (audit_id bigint PRIMARY KEY, prev_id bigint, "
            "row_hash bytea NOT NULL CHECK (length(row_hash) = 32), "
            "checkpoint_seq bigint NOT NULL)"
        ).format(chain),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (seq bigint PRIMARY KEY, first_id bigint NOT NULL, "
            "last_id bigint NOT NULL, row_count bigint NOT NULL, head_hash bytea NOT NULL, "
            "prev_head bytea NOT NULL, sealed_at timestamptz NOT NULL, sealed_by text NOT NULL, "
            "key_id text NOT NULL, signature text NOT NULL)"
        ).format(checkpoint),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql "
            "SET search_path = pg_catalog, pg_temp AS $fn$ BEGIN "
            "RAISE EXCEPTION 'the write audit is append-only: % refused on %', TG_OP, "
            "TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege'; END $fn$"
        ).format(guard),
        sql.SQL("REVOKE ALL ON FUNCTION {}() FROM PUBLIC").format(guard),
    ]
    for table in (audit, chain, checkpoint):
        statements += [
            sql.SQL("REVOKE ALL ON {} FROM PUBLIC").format(table),
            sql.SQL("CREATE OR REPLACE TRIGGER oam_append_only BEFORE UPDATE OR DELETE ON {} "
                    "FOR EACH ROW EXECUTE FUNCTION {}()").format(table, guard),
            sql.SQL("CREATE OR REPLACE TRIGGER oam_append_only_truncate BEFORE TRUNCATE ON {} "
                    "FOR EACH STATEMENT EXECUTE FUNCTION {}()").format(table, guard),
            sql.SQL("ALTER TABLE {} ENABLE ALWAYS TRIGGER oam_append_only").format(table),
            sql.SQL("ALTER TABLE {} ENABLE ALWAYS TRIGGER oam_append_only_truncate")
            .format(table),
        ]
    for logical in MANAGED_TABLES:
        statements += _record_triggers(names, logical, audit)
    return statements


def _record_triggers(names: StoreNames, logical: str,
                     audit: sql.Identifier) -> list[sql.Composed]:
    """The trigger function of one record table and its four triggers."""
    function, table = _function(names, logical), _record_table(names, logical)
    record_type, record_id, owner = (sql.SQL(part) for part in _SHAPES[logical])

    def write(operation: str, rows: str) -> sql.Composed:
        return sql.SQL(
            "INSERT INTO {audit} (tx_time, clock_time, operation, record_table, record_type, "
            "record_id, record_owner, end_user, application, db_login, txid) "
            "SELECT now(), clock_timestamp(), {op}, {logical}, {type}, {id}, {owner}, v_user, "
            "v_app, session_user, pg_current_xact_id() FROM {rows} r;"
        ).format(audit=audit, op=sql.Literal(operation), logical=sql.Literal(logical),
                 type=record_type, id=record_id, owner=owner, rows=sql.Identifier(rows))

    body = sql.SQL(
        "CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql "
        "SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$ "
        "DECLARE v_user text; v_app text; BEGIN "
        "SELECT c.username INTO v_user FROM oam_sec.session_end_user c WHERE {verified}; "
        "IF v_user IS NOT NULL THEN v_app := convert_from(decode(split_part(current_setting("
        "'oam.end_user_assertion', true), '.', 1), 'hex'), 'UTF8')::jsonb ->> 'app'; END IF; "
        "IF TG_OP = 'INSERT' THEN {insert} "
        "ELSIF TG_OP = 'UPDATE' THEN {update} "
        "ELSIF TG_OP = 'DELETE' THEN {delete} "
        "ELSE INSERT INTO {audit} (tx_time, clock_time, operation, record_table, end_user, "
        "application, db_login, txid) VALUES (now(), clock_timestamp(), 'truncate', {logical}, "
        "v_user, v_app, session_user, pg_current_xact_id()); END IF; "
        "RETURN NULL; END $fn$"
    ).format(function=function, verified=sql.SQL(_CURRENT_VERIFICATION),
             insert=write("insert", "new_rows"), update=write("update", "new_rows"),
             delete=write("delete", "old_rows"), audit=audit, logical=sql.Literal(logical))
    statements: list[sql.Composed] = [
        body, sql.SQL("REVOKE ALL ON FUNCTION {}() FROM PUBLIC").format(function)]
    transitions = {"insert": "REFERENCING NEW TABLE AS new_rows",
                   "update": "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
                   "delete": "REFERENCING OLD TABLE AS old_rows"}
    for operation in OPERATIONS:
        statements.append(sql.SQL(
            "CREATE OR REPLACE TRIGGER {name} AFTER {op} ON {table} {transition} "
            "FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        ).format(name=sql.Identifier(TRIGGER_PREFIX + operation), op=sql.SQL(operation.upper()),
                 table=table, transition=sql.SQL(transitions[operation]), function=function))
    statements.append(sql.SQL(
        "CREATE OR REPLACE TRIGGER {name} AFTER TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
    ).format(name=sql.Identifier(TRIGGER_PREFIX + "truncate"), table=table, function=function))
    for operation in (*OPERATIONS, "truncate"):
        statements.append(sql.SQL("ALTER TABLE {} ENABLE ALWAYS TRIGGER {}").format(
            table, sql.Identifier(TRIGGER_PREFIX + operation)))
    return statements


def drop_trigger_statements(names: StoreNames) -> list[sql.Composed]:
    """Statements removing every record trigger and its function (the audit tables stay)."""
    statements: list[sql.Composed] = []
    for logical in MANAGED_TABLES:
        table = _record_table(names, logical)
        for operation in (*OPERATIONS, "truncate"):
            statements.append(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(
                sql.Identifier(TRIGGER_PREFIX + operation), table))
        statements.append(sql.SQL("DROP FUNCTION IF EXISTS {}()").format(
            _function(names, logical)))
    return statements


def audit_event_statement(names: StoreNames, operation: str) -> sql.Composed:
    """An ``audit_enabled`` / ``audit_disabled`` row (who switched the audit, and when)."""
    return sql.SQL(
        "INSERT INTO {} (tx_time, clock_time, operation, db_login, txid) "
        "VALUES (now(), clock_timestamp(), {}, session_user, pg_current_xact_id())"
    ).format(audit_table(names), sql.Literal(operation))


TRIGGER_STATE = (
    "SELECT c.relname, t.tgname, t.tgenabled FROM pg_trigger t "
    "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = %s AND c.relname = ANY(%s) AND t.tgname LIKE 'oam\\_write\\_audit\\_%%'"
)
"""Name, trigger and ``tgenabled`` of the store's audit triggers (schema, table names)."""

TABLE_OWNER = (
    "SELECT pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_namespace n "
    "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s"
)

_SELECT_ROW = sql.SQL(
    "a.id, a.tx_time, a.clock_time, a.operation, a.record_table, a.record_type, a.record_id, "
    "a.record_owner, a.end_user, a.application, a.db_login, a.txid::text")


def list_rows(names: StoreNames) -> sql.Composed:
    """Audit rows after an id (``%s``), by id, at most ``%s``."""
    return sql.SQL("SELECT {} FROM {} a WHERE a.id > %s ORDER BY a.id LIMIT %s").format(
        _SELECT_ROW, audit_table(names))


def rows_in_range(names: StoreNames) -> sql.Composed:
    """Audit rows with ``%s < id <= %s`` (at most ``%s``), by id (to seal)."""
    return sql.SQL("SELECT {} FROM {} a WHERE a.id > %s AND a.id <= %s ORDER BY a.id "
                   "LIMIT %s").format(_SELECT_ROW, audit_table(names))


def sealed_rows(names: StoreNames) -> sql.Composed:
    """Audit rows and chain entries with ``%s < id <= %s`` matched by id (either may be
    missing), by id: the row's columns, then the chain's ``audit_id, prev_id, row_hash,
    checkpoint_seq``."""
    return sql.SQL(
        "SELECT {row}, ch.audit_id, ch.prev_id, ch.row_hash, ch.checkpoint_seq "
        "FROM {audit} a FULL JOIN {chain} ch ON ch.audit_id = a.id "
        "WHERE coalesce(a.id, ch.audit_id) > %s AND coalesce(a.id, ch.audit_id) <= %s "
        "ORDER BY coalesce(a.id, ch.audit_id)"
    ).format(row=_SELECT_ROW, audit=audit_table(names), chain=chain_table(names))


def count_after(names: StoreNames) -> sql.Composed:
    """How many audit rows have an id above ``%s``."""
    return sql.SQL("SELECT count(*) FROM {} WHERE id > %s").format(audit_table(names))


def lock_and_horizon(names: StoreNames) -> list[sql.Composed]:
    """Wait for every transaction that wrote audit rows, then read the highest id.

    ``SHARE`` conflicts with the ``ROW EXCLUSIVE`` lock each writing transaction holds until it
    ends, and a row's id is drawn while that lock is held: once granted, every row with an id up
    to the highest visible one is committed (or gone for good), and later rows get higher ids.
    """
    return [sql.SQL("LOCK TABLE {} IN SHARE MODE").format(audit_table(names)),
            sql.SQL("SELECT max(id) FROM {}").format(audit_table(names))]


def lock_checkpoints(names: StoreNames) -> sql.Composed:
    """One sealer at a time."""
    return sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(checkpoint_table(names))


def select_checkpoints(names: StoreNames, last_only: bool = False) -> sql.Composed:
    return sql.SQL(
        "SELECT seq, first_id, last_id, row_count, head_hash, prev_head, sealed_at, sealed_by, "
        "key_id, signature FROM {} ORDER BY seq {}"
    ).format(checkpoint_table(names), sql.SQL("DESC LIMIT 1" if last_only else ""))


def copy_chain(names: StoreNames) -> sql.Composed:
    return sql.SQL("COPY {} (audit_id, prev_id, row_hash, checkpoint_seq) FROM STDIN").format(
        chain_table(names))


def insert_checkpoint(names: StoreNames) -> sql.Composed:
    return sql.SQL(
        "INSERT INTO {} (seq, first_id, last_id, row_count, head_hash, prev_head, sealed_at, "
        "sealed_by, key_id, signature) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    ).format(checkpoint_table(names))


SEAL_TIME = "SELECT date_trunc('milliseconds', clock_timestamp()), session_user"
