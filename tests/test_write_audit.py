"""The database write audit on the embedded server: written by the database, never by the runtime.

Raw SQL attacks connect as the runtime login ``oam_test_rt`` (application ``gw``) and apply
assertions as the SDK does (``oam_sec.apply_assertion``); store operations use a ``NO_CHECK``
store inside an end user's context. Tampering runs as the superuser. Every refused probe has a
positive control showing the same statement succeeds for an identity allowed to run it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from dds import OWNER, RUNTIME
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from oracleagentmemory.core.deepsec.audit import (
    AuditChainError,
    AuditRow,
    disable_write_audit,
    enable_write_audit,
    list_write_audit,
    seal_write_audit,
    verify_write_audit,
    write_audit_status,
)
from oracleagentmemory.core.deepsec.audit_chain import (
    GENESIS,
    chain_hash,
    generate_signing_key,
    public_jwk,
)
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, store_names
from oracleagentmemory.errors import (
    EndUserContextError,
    InvalidArgumentError,
    OperationTimeoutError,
)
from psycopg import errors, sql

Conn = psycopg.Connection[Any]
APPLY = "SELECT oam_sec.apply_assertion(%s)"
KEY = generate_signing_key()
PUBLIC = public_jwk(KEY)


def table(store_id: str, logical: str) -> sql.Identifier:
    names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=OWNER,
                        fold="lower")
    if logical in MANAGED_TABLES:
        return sql.Identifier(OWNER, names.table(logical))
    return sql.Identifier(OWNER, names.object_name(logical))


def rows(dds: Any, store_id: str, since: int = 0) -> list[AuditRow]:
    return list_write_audit(dds.owner_url, OWNER, store_id, since_id=since, limit=100_000)


def writes(found: list[AuditRow]) -> list[tuple[str, str | None, str | None, str | None]]:
    """``(operation, record table, record id, end user)`` of the record writes."""
    return [(r.operation, r.record_table, r.record_id, r.end_user) for r in found
            if not r.operation.startswith("audit_")]


def last_id(dds: Any, store_id: str) -> int:
    found = rows(dds, store_id)
    return found[-1].id if found else 0


@pytest.fixture
def audited(dds: Any) -> str:
    """A protected store (both policies granted to alice, bob, carol) with the audit on."""
    store_id: str = dds.new_store()
    status = enable_write_audit(dds.secadmin_url, OWNER, store_id)
    assert status.enabled and status.audited_tables == MANAGED_TABLES
    return store_id


@contextmanager
def runtime_tx(dds: Any, user: str | None, commit: bool = True) -> Iterator[Conn]:
    """One transaction of the runtime login, in ``user``'s context (none for ``None``)."""
    with psycopg.connect(dds.runtime_url) as conn:
        if user is not None:
            seen = conn.execute(APPLY, [dds.context(user).assertion()]).fetchone()
            assert seen == (user,)
        yield conn
        if commit:
            conn.commit()
        else:
            conn.rollback()


# --- store operations -------------------------------------------------------------------------
def test_store_writes_are_audited_with_the_verified_end_user(dds: Any, audited: str) -> None:
    before = last_id(dds, audited)
    with dds.runtime_store(audited, "alice") as store:
        store.add(["one", "two", "three"], "memory", record_ids=["m1", "m2", "m3"],
                  embeddings=[[1.0, 0.0, 0.0]] * 3)
        store.update("memory", "m2", content="two!", embedding=[0.0, 1.0, 0.0])
        store.delete("memory", "m3")
    found = rows(dds, audited, before)
    memory = [(op, rid, who) for op, t, rid, who in writes(found) if t == "memory"]
    assert memory == [("insert", "m1", "alice"), ("insert", "m2", "alice"),
                      ("insert", "m3", "alice"), ("update", "m2", "alice"),
                      ("delete", "m3", "alice")]
    chunks = {(op, rid) for op, t, rid, _ in writes(found) if t == "record_chunks"}
    assert {("insert", "m1"), ("insert", "m3"), ("delete", "m3")} <= chunks
    for row in found:
        assert (row.end_user, row.application, row.db_login) == ("alice", "gw", RUNTIME)
        assert row.record_owner == "alice" and row.record_type == "memory"
    # One transaction per store call: the batch add shares one transaction id.
    assert len({r.txid for r in found if r.record_id in ("m1", "m2", "m3")
                and r.operation == "insert" and r.record_table == "memory"}) == 1
    ids = [r.id for r in found]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_bob_is_named_for_bobs_writes_and_owners_writes_name_no_end_user(
        dds: Any, audited: str) -> None:
    before = last_id(dds, audited)
    with dds.runtime_store(audited, "bob") as store:
        store.add(["bob's"], "memory", record_ids=["b1"])
    owner = dds.owner_store(audited)
    try:
        owner.add(["global"], "memory", record_ids=["g1"], user_ids=[None])
    finally:
        owner.close()
    found = [r for r in rows(dds, audited, before) if r.record_table == "memory"]
    assert [(r.record_id, r.end_user, r.application, r.db_login) for r in found] == [
        ("b1", "bob", "gw", RUNTIME), ("g1", None, None, OWNER)]


def test_identity_provider_users_are_named_in_their_namespace(dds: Any, audited: str) -> None:
    before = last_id(dds, audited)
    with dds.context_store(audited, dds.token_context("dora")) as store:
        store.add(["dora's"], "memory", record_ids=["d1"])
    found = [r for r in rows(dds, audited, before) if r.record_table == "memory"]
    assert [(r.record_id, r.end_user) for r in found] == [("d1", "test_idp:dora")]


def test_the_end_user_is_the_verified_one_not_what_the_client_claims(
        dds: Any, audited: str) -> None:
    before = last_id(dds, audited)
    with runtime_tx(dds, "alice") as conn:
        # Whatever the client sets in its own session, the database names the verified user.
        conn.execute("SELECT set_config('oam.end_user', 'bob', true), "
                     "set_config('application_name', 'bob', true), "
                     "set_config('search_path', 'pg_temp, public', true)")
        conn.execute(sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                             "('claim', 'memory', 'alice', 'x')").format(
            table(audited, "memory")))
    assert writes(rows(dds, audited, before)) == [("insert", "memory", "claim", "alice")]
    # Claiming bob's rows is refused by row security, and so leaves no audit row.
    with pytest.raises(errors.InsufficientPrivilege), runtime_tx(dds, "alice") as conn:
        conn.execute(sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                             "('claim2', 'memory', 'bob', 'x')").format(
            table(audited, "memory")))
    assert writes(rows(dds, audited, before)) == [("insert", "memory", "claim", "alice")]


def test_a_rolled_back_transaction_leaves_no_audit_rows(dds: Any, audited: str) -> None:
    before = last_id(dds, audited)
    insert = sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                     "(%s, 'memory', 'alice', 'x')").format(table(audited, "memory"))
    with runtime_tx(dds, "alice", commit=False) as conn:
        assert conn.execute(insert, ["rolled-back"]).rowcount == 1
        assert conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE id = 'rolled-back'").format(
            table(audited, "memory"))).fetchone() == (1,)
    assert writes(rows(dds, audited, before)) == []
    with runtime_tx(dds, "alice") as conn:  # positive control
        conn.execute(insert, ["committed"])
    assert writes(rows(dds, audited, before)) == [("insert", "memory", "committed", "alice")]


# --- every form of write ----------------------------------------------------------------------
def test_every_form_of_write_is_audited(dds: Any, audited: str) -> None:
    memory = table(audited, "memory")
    before = last_id(dds, audited)
    with runtime_tx(dds, "alice") as conn:
        conn.execute(sql.SQL("INSERT INTO {} (id, record_type, user_id, content) SELECT "
                             "'bulk' || g, 'memory', 'alice', 'x' FROM generate_series(1, 50) g"
                             ).format(memory))
    bulk = writes(rows(dds, audited, before))
    assert bulk == [("insert", "memory", f"bulk{n}", "alice") for n in range(1, 51)]

    steps: list[tuple[str, list[tuple[str, str]]]] = [
        ("INSERT INTO {t} (id, record_type, user_id, content) VALUES ('u1', 'memory', 'alice', "
         "'x') ON CONFLICT (user_id, id) DO UPDATE SET content = 'y'", [("insert", "u1")]),
        ("INSERT INTO {t} (id, record_type, user_id, content) VALUES ('u1', 'memory', 'alice', "
         "'x') ON CONFLICT (user_id, id) DO UPDATE SET content = 'y'", [("update", "u1")]),
        ("INSERT INTO {t} (id, record_type, user_id, content) VALUES ('u1', 'memory', 'alice', "
         "'x') ON CONFLICT DO NOTHING", []),
        ("UPDATE {t} SET content = 'z' WHERE id = 'u1' RETURNING id", [("update", "u1")]),
        ("WITH d AS (DELETE FROM {t} WHERE id = 'bulk1' RETURNING id) INSERT INTO {t} "
         "(id, record_type, user_id, content) SELECT 'cte', 'memory', 'alice', 'x' FROM d",
         [("delete", "bulk1"), ("insert", "cte")]),
        ("MERGE INTO {t} m USING (VALUES ('bulk2', 'del'), ('bulk3', 'upd'), ('mnew', 'ins')) "
         "AS s(id, what) ON m.id = s.id AND m.user_id = 'alice' "
         "WHEN MATCHED AND s.what = 'del' THEN DELETE "
         "WHEN MATCHED THEN UPDATE SET content = 'merged' "
         "WHEN NOT MATCHED THEN INSERT (id, record_type, user_id, content) "
         "VALUES (s.id, 'memory', 'alice', 'x')",
         [("insert", "mnew"), ("update", "bulk3"), ("delete", "bulk2")]),
        ("DELETE FROM {t} WHERE id LIKE 'bulk4%%' RETURNING id",
         [("delete", "bulk4"), ("delete", "bulk40")] + [("delete", f"bulk4{n}")
                                                        for n in range(1, 10)]),
    ]
    for statement, expected in steps:
        start = last_id(dds, audited)
        with runtime_tx(dds, "alice") as conn:
            conn.execute(sql.SQL(statement).format(t=memory))
        found = sorted((op, rid) for op, _, rid, who in writes(rows(dds, audited, start))
                       if who == "alice")
        assert found == sorted(expected), statement
        assert len(writes(rows(dds, audited, start))) == len(expected), statement


def test_copy_is_refused_to_the_runtime_and_audited_for_the_owner(dds: Any,
                                                                    audited: str) -> None:
    memory = table(audited, "memory")
    copy = sql.SQL("COPY {} (id, record_type, user_id, content) FROM STDIN").format(memory)
    before = last_id(dds, audited)
    with pytest.raises(psycopg.Error), runtime_tx(dds, "alice") as conn, \
            conn.cursor().copy(copy) as out:
        out.write_row(("copied", "memory", "alice", "x"))
    assert writes(rows(dds, audited, before)) == []
    with psycopg.connect(dds.owner_url) as conn, conn.cursor().copy(copy) as out:
        out.write_row(("copied", "memory", "alice", "x"))  # positive control
    assert [(r.operation, r.record_id, r.end_user, r.db_login)
            for r in rows(dds, audited, before)] == [("insert", "copied", None, OWNER)]


def test_owner_truncate_is_audited(dds: Any, audited: str) -> None:
    before = last_id(dds, audited)
    with psycopg.connect(dds.owner_url) as conn:
        conn.execute(sql.SQL("TRUNCATE {}").format(table(audited, "thread_summary")))
    assert [(r.operation, r.record_table, r.record_id) for r in rows(dds, audited, before)] == [
        ("truncate", "thread_summary", None)]


# --- what the runtime login can never do ------------------------------------------------------
def _runtime_probes(store_id: str) -> list[tuple[str, sql.SQL | sql.Composed]]:
    audit, chain, checkpoint = (table(store_id, t) for t in
                                ("write_audit", "write_audit_chain", "write_audit_checkpoint"))
    memory = table(store_id, "memory")
    fn = sql.Identifier(OWNER, f"{store_id}_write_audit_memory_fn")
    probes: list[tuple[str, sql.SQL | sql.Composed]] = [
        ("select", sql.SQL("SELECT count(*) FROM {}").format(audit)),
        ("insert", sql.SQL("INSERT INTO {} (tx_time, clock_time, operation, db_login, txid) "
                           "VALUES (now(), now(), 'insert', 'x', pg_current_xact_id())"
                           ).format(audit)),
        ("update", sql.SQL("UPDATE {} SET end_user = 'bob'").format(audit)),
        ("delete", sql.SQL("DELETE FROM {}").format(audit)),
        ("truncate", sql.SQL("TRUNCATE {}").format(audit)),
        ("chain", sql.SQL("DELETE FROM {}").format(chain)),
        ("checkpoint", sql.SQL("UPDATE {} SET signature = ''").format(checkpoint)),
        ("sequence", sql.SQL("SELECT nextval(pg_get_serial_sequence({}, 'id'))").format(
            sql.Literal(f"{OWNER}.{store_id}_write_audit"))),
        ("disable trigger", sql.SQL("ALTER TABLE {} DISABLE TRIGGER oam_write_audit_insert"
                                    ).format(memory)),
        ("disable all", sql.SQL("ALTER TABLE {} DISABLE TRIGGER ALL").format(memory)),
        ("drop trigger", sql.SQL("DROP TRIGGER oam_write_audit_insert ON {}").format(memory)),
        ("replace function", sql.SQL("CREATE OR REPLACE FUNCTION {}() RETURNS trigger "
                                     "LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
                                     ).format(fn)),
        ("replica", sql.SQL("SET LOCAL session_replication_role = replica")),
        ("call function", sql.SQL("SELECT {}()").format(fn)),
    ]
    return probes


@pytest.mark.parametrize("user", [None, "alice"])
def test_runtime_cannot_read_write_or_switch_off_the_audit(dds: Any, audited: str,
                                                           user: str | None) -> None:
    snapshot = rows(dds, audited)
    for name, statement in _runtime_probes(audited):
        with pytest.raises(psycopg.Error) as refused, runtime_tx(dds, user) as conn:
            conn.execute(statement)
        assert isinstance(refused.value, (errors.InsufficientPrivilege,
                                          errors.FeatureNotSupported)), (name, refused.value)
    assert rows(dds, audited) == snapshot
    assert write_audit_status(dds.owner_url, OWNER, audited).enabled
    # Positive control: the audit still records the runtime's next write.
    with runtime_tx(dds, "alice") as conn:
        conn.execute(sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                             "('after', 'memory', 'alice', 'x')").format(
            table(audited, "memory")))
    assert writes(rows(dds, audited, snapshot[-1].id)) == [("insert", "memory", "after",
                                                              "alice")]


def test_probes_are_real_statements_the_owner_may_run(dds: Any, audited: str) -> None:
    """Positive control: the probes succeed for the tables' owner (then rolled back), except the
    append-only guard, which refuses changes to the audit rows to the owner too."""
    allowed = {"select", "insert", "sequence", "disable trigger", "disable all", "drop trigger",
               "replace function"}
    guarded = {"update", "delete", "truncate", "chain", "checkpoint"}
    seal_write_audit(dds.owner_url, OWNER, audited, KEY)  # rows in the chain and checkpoints
    for name, statement in _runtime_probes(audited):
        if name not in allowed | guarded:
            continue
        with psycopg.connect(dds.owner_url) as conn:
            if name in guarded:
                with pytest.raises(errors.InsufficientPrivilege, match="append-only"):
                    conn.execute(statement)
                conn.rollback()
                if name in ("update", "delete"):
                    conn.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER oam_append_only").format(
                        table(audited, "write_audit")))
                    conn.execute(statement)
            else:
                conn.execute(statement)
            conn.rollback()
    with psycopg.connect(dds.superuser_url) as conn:  # the superuser may set replica mode
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.rollback()


def test_replica_mode_does_not_silence_the_audit(dds: Any, audited: str) -> None:
    before = last_id(dds, audited)
    with psycopg.connect(dds.superuser_url) as conn:
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                             "('replica', 'memory', 'alice', 'x')").format(
            table(audited, "memory")))
    assert writes(rows(dds, audited, before)) == [("insert", "memory", "replica", None)]


def test_audit_is_administrative_work(dds: Any, audited: str) -> None:
    with OracleMemoryEndUserSecurityContext(dds.context("alice")), \
            pytest.raises(EndUserContextError):
        enable_write_audit(dds.secadmin_url, OWNER, audited)
    with OracleMemoryEndUserSecurityContext(dds.context("alice")), \
            pytest.raises(EndUserContextError):
        seal_write_audit(dds.owner_url, OWNER, audited, KEY)
    with pytest.raises(PermissionError):  # the runtime login cannot seal: it reads nothing
        seal_write_audit(dds.runtime_url, OWNER, audited, KEY)
    with pytest.raises(InvalidArgumentError, match="private"):
        seal_write_audit(dds.owner_url, OWNER, audited, PUBLIC)
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        enable_write_audit(dds.secadmin_url, OWNER, "nosuchstore")


def test_disable_keeps_the_rows_and_enable_resumes(dds: Any, audited: str) -> None:
    insert = sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                     "(%s, 'memory', 'alice', 'x')").format(table(audited, "memory"))
    with runtime_tx(dds, "alice") as conn:
        conn.execute(insert, ["on1"])
    status = disable_write_audit(dds.owner_url, OWNER, audited)
    assert not status.enabled and status.audited_tables == ()
    before = last_id(dds, audited)
    with runtime_tx(dds, "alice") as conn:
        conn.execute(insert, ["off"])
    assert writes(rows(dds, audited, before)) == []
    enable_write_audit(dds.owner_url, OWNER, audited)
    with runtime_tx(dds, "alice") as conn:
        conn.execute(insert, ["on2"])
    found = rows(dds, audited)
    assert [r.operation for r in found if r.operation.startswith("audit_")] == [
        "audit_enabled", "audit_disabled", "audit_enabled"]
    assert [rid for _, _, rid, _ in writes(found)] == ["on1", "on2"]
    assert verify_write_audit(dds.owner_url, OWNER, audited, PUBLIC).ok


def test_recreate_keeps_the_audit_rows_and_enable_re_arms_it(dds: Any, audited: str) -> None:
    from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy

    with runtime_tx(dds, "alice") as conn:
        conn.execute(sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                             "('kept', 'memory', 'alice', 'x')").format(table(audited, "memory")))
    seal_write_audit(dds.owner_url, OWNER, audited, KEY)
    OracleDBMemoryStore(None, dds.owner_url, schema_policy=SchemaPolicy.RECREATE,
                        memory_store_id=audited, vector_dim=3).close()
    status = write_audit_status(dds.owner_url, OWNER, audited)
    assert not status.enabled and status.missing_tables == MANAGED_TABLES
    assert "kept" in {r.record_id for r in rows(dds, audited)}
    assert verify_write_audit(dds.owner_url, OWNER, audited, PUBLIC).ok
    assert enable_write_audit(dds.owner_url, OWNER, audited).enabled


# --- sealing and verification -----------------------------------------------------------------
def _fill(dds: Any, store_id: str, count: int = 6) -> None:
    with dds.runtime_store(store_id, "alice") as store:
        store.add([f"memory {n}" for n in range(count)], "memory",
                  record_ids=[f"s{n}" for n in range(count)])
        store.update("memory", "s1", content="changed")
        store.delete("memory", "s2")


def _superuser(dds: Any, store_id: str, statement: str, params: list[Any] | None = None) -> None:
    """Tamper as the superuser, switching the append-only guard off first."""
    with psycopg.connect(dds.superuser_url) as conn:
        for logical in ("write_audit", "write_audit_chain", "write_audit_checkpoint"):
            conn.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(
                table(store_id, logical)))
        conn.execute(sql.SQL(statement).format(
            audit=table(store_id, "write_audit"), chain=table(store_id, "write_audit_chain"),
            checkpoint=table(store_id, "write_audit_checkpoint")), params)


@pytest.fixture
def sealed(dds: Any, audited: str) -> tuple[str, list[int]]:
    """An audited store with rows sealed in two checkpoints; returns its id and the row ids."""
    _fill(dds, audited)
    first = seal_write_audit(dds.owner_url, OWNER, audited, KEY)
    _fill_more(dds, audited)
    second = seal_write_audit(dds.secadmin_url, OWNER, audited, KEY)
    assert [c.seq for c in first + second] == [1, 2]
    return audited, [r.id for r in rows(dds, audited)]


def _fill_more(dds: Any, store_id: str) -> None:
    with dds.runtime_store(store_id, "bob") as store:
        store.add(["bob 1", "bob 2"], "memory", record_ids=["x1", "x2"])


def test_untampered_audit_verifies_clean(dds: Any, sealed: tuple[str, list[int]]) -> None:
    store_id, ids = sealed
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert result.ok and result.problem is None, result
    assert result.records_checked == len(ids) and result.checkpoints_checked == 2
    assert result.unsealed_records == 0
    assert seal_write_audit(dds.owner_url, OWNER, store_id, KEY) == []  # nothing new
    _fill_more_unique(dds, store_id)
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert result.ok and result.unsealed_records > 0
    status = write_audit_status(dds.owner_url, OWNER, store_id)
    assert (status.checkpoints, status.sealed_through) == (2, ids[-1])


def _fill_more_unique(dds: Any, store_id: str) -> None:
    with dds.runtime_store(store_id, "carol") as store:
        store.add(["carol"], "memory", record_ids=["c1"])


def test_seal_refuses_to_sign_on_top_of_a_changed_record(
        dds: Any, sealed: tuple[str, list[int]]) -> None:
    store_id, ids = sealed
    _fill_more_unique(dds, store_id)
    _superuser(dds, store_id, "UPDATE {audit} SET end_user = 'bob' WHERE id = %s", [ids[3]])
    with pytest.raises(AuditChainError) as refused:
        seal_write_audit(dds.owner_url, OWNER, store_id, KEY)
    assert (refused.value.problem.kind, refused.value.problem.record_id) == ("changed", ids[3])
    assert write_audit_status(dds.owner_url, OWNER, store_id).checkpoints == 2
    # From a trusted checkpoint on, only what follows it is checked (here: nothing changed).
    trusted = (2, _head_of(dds, store_id, 2))
    assert [c.seq for c in seal_write_audit(dds.owner_url, OWNER, store_id, KEY,
                                            trusted_checkpoint=trusted)] == [3]


def test_a_changed_record_is_named(dds: Any, sealed: tuple[str, list[int]]) -> None:
    store_id, ids = sealed
    _superuser(dds, store_id, "UPDATE {audit} SET end_user = 'bob' WHERE id = %s", [ids[3]])
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert not result.ok and result.problem is not None
    assert (result.problem.kind, result.first_bad_record) == ("changed", ids[3])


def test_a_changed_record_in_the_second_checkpoint_is_named(
        dds: Any, sealed: tuple[str, list[int]]) -> None:
    store_id, ids = sealed
    _superuser(dds, store_id, "UPDATE {audit} SET record_id = 'zz' WHERE id = %s", [ids[-1]])
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert (result.problem and result.problem.kind, result.first_bad_record) == (
        "changed", ids[-1])


def test_a_deleted_record_is_named(dds: Any, sealed: tuple[str, list[int]]) -> None:
    store_id, ids = sealed
    _superuser(dds, store_id, "DELETE FROM {audit} WHERE id = %s", [ids[2]])
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert (result.problem and result.problem.kind, result.first_bad_record) == (
        "deleted", ids[2])


def test_a_record_deleted_with_its_chain_entry_is_named(
        dds: Any, sealed: tuple[str, list[int]]) -> None:
    store_id, ids = sealed
    _superuser(dds, store_id, "DELETE FROM {audit} WHERE id = %s", [ids[4]])
    _superuser(dds, store_id, "DELETE FROM {chain} WHERE audit_id = %s", [ids[4]])
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert (result.problem and result.problem.kind, result.first_bad_record) == (
        "deleted", ids[4])


def test_the_last_sealed_record_deleted_is_named(dds: Any,
                                                 sealed: tuple[str, list[int]]) -> None:
    store_id, ids = sealed
    _superuser(dds, store_id, "DELETE FROM {audit} WHERE id = %s", [ids[-1]])
    _superuser(dds, store_id, "DELETE FROM {chain} WHERE audit_id = %s", [ids[-1]])
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert (result.problem and result.problem.kind, result.first_bad_record) == (
        "deleted", ids[-1])


def test_a_record_inserted_into_a_sealed_range_is_named(dds: Any, audited: str) -> None:
    insert = sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                     "(%s, 'memory', 'alice', 'x')").format(table(audited, "memory"))
    with runtime_tx(dds, "alice") as conn:
        conn.execute(insert, ["before"])
    with runtime_tx(dds, "alice", commit=False) as conn:
        conn.execute(insert, ["gap"])  # draws an id that never commits
    with runtime_tx(dds, "alice") as conn:
        conn.execute(insert, ["after"])
    seal_write_audit(dds.owner_url, OWNER, audited, KEY)
    found = rows(dds, audited)
    gap = next(a.id + 1 for a, b in zip(found, found[1:], strict=False) if b.id != a.id + 1)
    assert verify_write_audit(dds.owner_url, OWNER, audited, PUBLIC).ok  # gaps are fine
    _superuser(dds, audited,
               "INSERT INTO {audit} OVERRIDING SYSTEM VALUE SELECT %s, tx_time, clock_time, "
               "operation, record_table, record_type, 'forged', record_owner, end_user, "
               "application, db_login, txid FROM {audit} WHERE id = %s", [gap, gap - 1])
    result = verify_write_audit(dds.owner_url, OWNER, audited, PUBLIC)
    assert (result.problem and result.problem.kind, result.first_bad_record) == (
        "inserted", gap)


def test_a_rewritten_chain_is_caught_by_the_signed_head(
        dds: Any, sealed: tuple[str, list[int]]) -> None:
    store_id, ids = sealed
    _superuser(dds, store_id, "UPDATE {audit} SET end_user = 'mallory' WHERE id = %s",
               [ids[1]])
    # Recompute every stored hash of the first checkpoint over the changed row.
    with psycopg.connect(dds.superuser_url) as conn:
        first_last = conn.execute(sql.SQL("SELECT last_id FROM {} WHERE seq = 1").format(
            table(store_id, "write_audit_checkpoint"))).fetchone()
    assert first_last is not None
    head = GENESIS
    for row in rows(dds, store_id):
        if row.id > first_last[0]:
            break
        head = chain_hash(head, row)
        _superuser(dds, store_id, "UPDATE {chain} SET row_hash = %s WHERE audit_id = %s",
                   [head, row.id])
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert result.problem is not None and result.problem.kind == "rewritten"
    assert result.problem.checkpoint_seq == 1


@pytest.mark.parametrize("change", [
    "UPDATE {checkpoint} SET last_id = last_id - 1 WHERE seq = 1",
    "UPDATE {checkpoint} SET head_hash = sha256(head_hash) WHERE seq = 2",
    "UPDATE {checkpoint} SET sealed_by = 'mallory' WHERE seq = 1",
    "UPDATE {checkpoint} SET signature = (SELECT signature FROM {checkpoint} WHERE seq = 1) "
    "WHERE seq = 2",
])
def test_an_altered_checkpoint_is_named(dds: Any, sealed: tuple[str, list[int]],
                                        change: str) -> None:
    store_id, _ = sealed
    _superuser(dds, store_id, change)
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert result.problem is not None and result.problem.kind == "bad_signature", result
    assert result.problem.checkpoint_seq == (2 if "seq = 2" in change else 1)


def test_another_key_does_not_verify(dds: Any, sealed: tuple[str, list[int]]) -> None:
    store_id, _ = sealed
    other = public_jwk(generate_signing_key("ES256"))
    result = verify_write_audit(dds.owner_url, OWNER, store_id, other)
    assert result.problem is not None and result.problem.kind == "bad_signature"
    assert result.problem.checkpoint_seq == 1


def test_a_trusted_checkpoint_detects_a_rollback(dds: Any,
                                                 sealed: tuple[str, list[int]]) -> None:
    store_id, _ = sealed
    status = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert status.head is not None and status.last_checkpoint_seq == 2
    trusted = (2, status.head)
    assert verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC,
                              trusted_checkpoint=trusted).ok
    first = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC,
                               trusted_checkpoint=(1, _head_of(dds, store_id, 1)))
    assert first.ok and first.checkpoints_checked == 1  # only the second one walked
    _superuser(dds, store_id, "DELETE FROM {checkpoint} WHERE seq = 2")
    _superuser(dds, store_id, "DELETE FROM {chain} WHERE checkpoint_seq = 2")
    untrusted = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert untrusted.ok  # without an anchor outside the database a rollback looks clean
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC,
                                trusted_checkpoint=trusted)
    assert result.problem is not None and result.problem.kind == "untrusted"


def _head_of(dds: Any, store_id: str, seq: int) -> str:
    with psycopg.connect(dds.owner_url) as conn:
        row = conn.execute(sql.SQL("SELECT head_hash FROM {} WHERE seq = %s").format(
            table(store_id, "write_audit_checkpoint")), [seq]).fetchone()
    assert row is not None
    return bytes(row[0]).hex()


def test_a_deleted_middle_checkpoint_is_named(dds: Any, sealed: tuple[str, list[int]]) -> None:
    store_id, _ = sealed
    _fill_more_unique(dds, store_id)
    seal_write_audit(dds.owner_url, OWNER, store_id, KEY)
    _superuser(dds, store_id, "DELETE FROM {checkpoint} WHERE seq = 2")
    result = verify_write_audit(dds.owner_url, OWNER, store_id, PUBLIC)
    assert result.problem is not None and result.problem.kind in ("bad_checkpoint", "inserted")
    assert result.problem.checkpoint_seq == 2 or result.first_bad_record is not None


def test_sealing_waits_for_writers_in_flight(dds: Any, audited: str) -> None:
    """A row whose id was drawn before the seal but commits after it is never skipped: the seal
    waits for its transaction (and times out with a typed error when told to wait briefly)."""
    insert = sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                     "(%s, 'memory', 'alice', 'x')").format(table(audited, "memory"))
    with runtime_tx(dds, "alice") as slow:
        slow.execute(insert, ["slow"])  # its audit id is drawn now, committed later
        with runtime_tx(dds, "alice") as fast:
            fast.execute(insert, ["fast"])
        with pytest.raises(OperationTimeoutError):
            seal_write_audit(dds.owner_url, OWNER, audited, KEY, lock_timeout_seconds=0.3)
        done: list[Any] = []
        thread = threading.Thread(target=lambda: done.append(
            seal_write_audit(dds.owner_url, OWNER, audited, KEY)))
        thread.start()
        time.sleep(0.5)
        assert not done  # still waiting for `slow`
    thread.join(30)
    assert done and done[0]
    sealed_ids = {r.record_id for r in rows(dds, audited) if r.id <= done[0][-1].last_id}
    assert {"slow", "fast"} <= sealed_ids
    assert verify_write_audit(dds.owner_url, OWNER, audited, PUBLIC).ok


@pytest.mark.parametrize("turn_on", [False, True])
def test_switching_the_audit_gives_way_to_a_writer_instead_of_deadlocking(
        dds: Any, audited: str, turn_on: bool) -> None:
    """A writer holds a late record table and then reads an early one while the admin switches
    the audit: the admin waits and retries; neither side fails (no deadlock victim)."""
    if turn_on:
        disable_write_audit(dds.owner_url, OWNER, audited)
    holding = threading.Event()
    failures: list[BaseException] = []

    def writer() -> None:
        try:
            with runtime_tx(dds, "alice") as conn:
                conn.execute(sql.SQL("INSERT INTO {} (id, record_type, user_id, content) VALUES "
                                     "('busy', 'memory', 'alice', 'x')").format(
                                         table(audited, "memory")))
                holding.set()
                time.sleep(0.3)  # the admin is waiting on the memory table by now
                conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table(audited, "thread")))
        except BaseException as error:  # reported below
            failures.append(error)
            holding.set()

    thread = threading.Thread(target=writer)
    thread.start()
    assert holding.wait(30)
    switch = enable_write_audit if turn_on else disable_write_audit
    status = switch(dds.owner_url, OWNER, audited)
    thread.join(30)
    assert failures == []
    assert status.enabled is turn_on
    with psycopg.connect(dds.owner_url) as conn:  # the writer's row committed
        assert conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE id = 'busy'").format(
            table(audited, "memory"))).fetchone() == (1,)
