"""The write audit on a live Oracle AI Database 26ai: the twin of ``test_write_audit.py``.

NOT YET RUN AGAINST A LIVE DATABASE: no Oracle database was reachable where this was written.
The module is not collected (``conftest.ORACLE_ONLY_MODULES``), and skipped as a whole when
named, unless ``OAM_TEST_ORACLE_ADMIN_DSN`` is set (with the other settings of
``tests/oracle_dds.py``); once set, a database that cannot run Deep Data Security
fails the tests with the probe's reason, never passes them.

An end user (BOB) writes through the SDK on the runtime pool with his verified context; the
owner reads the audit rows the database wrote in the same transaction. The runtime account, with
and without an end-user context, can neither read nor delete audit rows; the positive controls
are the owner's same ``SELECT`` (which sees the rows) and the owner's same ``DELETE``, which
Oracle itself refuses as a blockchain table's (ORA-05715), a different refusal from the
runtime's (no privilege: the table is invisible to it).

The audit's blockchain tables outlive the session's stores: Oracle refuses to drop them until
they have been idle for ``audit_sql.IDLE_DAYS_BEFORE_DROP`` days (``env.close`` drops the record
tables, and their triggers with them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import oracledb
import pytest
from oracle_dds import ADMIN_DSN, OracleDdsEnvironment, OracleSeeded, environment_or_fail

if not os.environ.get(ADMIN_DSN):  # conftest.ORACLE_ONLY_MODULES leaves it out before this
    pytest.skip(f"Oracle write audit not tested: {ADMIN_DSN} is not set (tests/oracle_dds.py)",
                allow_module_level=True)

from oracleagentmemory.core.deepsec.audit import (  # noqa: E402
    disable_write_audit,
    enable_write_audit,
    list_write_audit,
    seal_write_audit,
    verify_write_audit,
)
from oracleagentmemory.core.deepsec.audit_chain import (  # noqa: E402
    generate_signing_key,
    public_jwk,
)
from oracleagentmemory.engines.oracle import audit_sql  # noqa: E402
from oracleagentmemory.engines.oracle.driver_errors import error_info  # noqa: E402

BOB = "BOB"
KEY = generate_signing_key()
BLOCKCHAIN_REFUSAL = 5715  # ORA-05715: operation not allowed on the blockchain or immutable table


@pytest.fixture(scope="module")
def env() -> Iterator[OracleDdsEnvironment]:
    yield from environment_or_fail()


@pytest.fixture(scope="module")
def audited(env: OracleDdsEnvironment) -> OracleSeeded:
    """A protected store with its write audit enabled by the owner."""
    seeded = env.new_store()
    with env.owner.connect() as conn:
        status = enable_write_audit(conn, env.owner_schema, seeded.store_id)
    assert status.enabled and not status.missing_tables
    return seeded


def audit_table(seeded: OracleSeeded) -> str:
    return audit_sql.audit_table(seeded.objects)


def test_an_end_users_write_is_audited_with_the_verified_end_user(
        env: OracleDdsEnvironment, audited: OracleSeeded) -> None:
    with env.owner.connect() as conn:
        before = list_write_audit(conn, env.owner_schema, audited.store_id, limit=100_000)
    since = before[-1].id if before else 0
    with env.runtime_store(audited, BOB) as store:
        store.add(["audited by oracle"], "memory", record_ids=["aud-1"], user_ids=[BOB],
                  embeddings=[[1.0, 0.0, 0.0]])
    with env.owner.connect() as conn:
        rows = list_write_audit(conn, env.owner_schema, audited.store_id, since_id=since)
    memory = [r for r in rows if r.record_table == "memory" and r.record_id == "aud-1"]
    assert len(memory) == 1, rows
    row = memory[0]
    assert (row.operation, row.record_type, row.record_owner, row.end_user) == (
        "insert", "memory", BOB, BOB)
    assert row.db_login == env.runtime.user.upper()
    assert row.application is None and row.txid
    # Positive control of the end-user column: the owner's own write names no end user.
    with env.owner.connect() as conn, conn.cursor() as cur:
        cur.execute(f"UPDATE {audited.table('memory')} SET status = 'valid' WHERE id = 'aud-1'")
        conn.commit()
        owner_rows = list_write_audit(conn, env.owner_schema, audited.store_id,
                                      since_id=row.id)
    assert [(r.operation, r.end_user, r.db_login) for r in owner_rows
            if r.record_table == "memory"] == [("update", None, env.owner_schema)]


def refusal(conn: oracledb.Connection, statement: str) -> int:
    """The ORA number ``statement`` fails with (0 if it succeeds); rolled back."""
    with conn.cursor() as cur:
        try:
            cur.execute(statement)
        except oracledb.DatabaseError as exc:
            return error_info(exc).code
        finally:
            conn.rollback()
    return 0


def test_the_runtime_can_neither_read_nor_delete_audit_rows(
        env: OracleDdsEnvironment, audited: OracleSeeded) -> None:
    select = f"SELECT COUNT(*) FROM {audit_table(audited)}"
    delete = f"DELETE FROM {audit_table(audited)}"
    with env.owner.connect() as conn, conn.cursor() as cur:
        cur.execute(select)
        count = cur.fetchone()
        assert count is not None and count[0] > 0  # positive control: the rows are there
        assert refusal(conn, delete) == BLOCKCHAIN_REFUSAL  # Oracle itself refuses the owner
    with env.as_user(BOB) as conn:
        assert refusal(conn, select) not in (0, BLOCKCHAIN_REFUSAL)
        assert refusal(conn, delete) not in (0, BLOCKCHAIN_REFUSAL)
    plain = env.runtime.connect()
    try:
        assert refusal(plain, select) not in (0, BLOCKCHAIN_REFUSAL)
        assert refusal(plain, delete) not in (0, BLOCKCHAIN_REFUSAL)
    finally:
        plain.close()
    with env.owner.connect() as conn, conn.cursor() as cur:
        cur.execute(select)
        assert cur.fetchone() == count


def test_seal_and_verify_with_oracles_chain_checked_first(
        env: OracleDdsEnvironment, audited: OracleSeeded) -> None:
    with env.owner.connect() as conn:
        sealed = seal_write_audit(conn, env.owner_schema, audited.store_id, KEY)
        assert sealed
        result = verify_write_audit(conn, env.owner_schema, audited.store_id, public_jwk(KEY))
    assert result.ok, result.problem
    assert result.records_checked == sum(c.row_count for c in sealed)
    assert result.unsealed_records == 0


def test_disable_removes_the_triggers_and_keeps_the_rows(
        env: OracleDdsEnvironment, audited: OracleSeeded) -> None:
    with env.owner.connect() as conn:
        kept = list_write_audit(conn, env.owner_schema, audited.store_id, limit=100_000)
        status = disable_write_audit(conn, env.owner_schema, audited.store_id)
        assert not status.enabled and status.audited_tables == ()
        after = list_write_audit(conn, env.owner_schema, audited.store_id, limit=100_000)
    assert after[:len(kept)] == kept
    assert after[-1].operation == "audit_disabled"
