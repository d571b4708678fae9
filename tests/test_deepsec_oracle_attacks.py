"""The Deep Data Security attacks of ``test_deepsec_holes.py``, ``test_deepsec_attacks.py`` and
``test_deepsec_context.py``, twinned on Oracle AI Database 26ai (issue 12).

NOT YET RUN AGAINST A LIVE DATABASE. ``tests/conftest.py`` does not even collect this module
unless Oracle is reachable (``OAM_TEST_ORACLE_DSN``); its settings and the support probe are
described in ``tests/oracle_dds.py``. When Oracle is reachable but Deep Data Security cannot be
tested, every test here fails with the probe's reason.

Raw SQL runs on the runtime account's session with BOB's verified context attached, exactly as a
compromised gateway could; every probe has a positive control on BOB's own rows showing the
probe works, so no test passes because its probe is broken. Positive-control writes are rolled
back, and every attack ends by checking that the owner sees the same rows as before.

Oracle semantics relied on (Oracle Deep Data Security Guide, "About Data Grants"): rows a
predicate hides are filtered silently on SELECT; UPDATE and DELETE skip them silently (rowcount
0); an INSERT of a row the end user may not own is refused with an error whose code is not
documented (any ``oracledb.DatabaseError`` counts here; the message of the test says which it
was when the assertion fails).

PostgreSQL attacks with no Oracle meaning, and why:

- ``pg_temp`` leak functions (ON CONFLICT ... WHERE leak(x), the WHERE-clause leak): an end-user
  session runs as ``XS$NULL`` and owns no schema, so it cannot create a function.
- ``ON CONFLICT DO UPDATE / DO NOTHING`` arbiters: Oracle has no ON CONFLICT; its twins are the
  MERGE and unique-key probes here.
- Forged, hand-set, expired or suffixed assertions (``oam_sec.apply_assertion``,
  ``set_config('oam.end_user_assertion')``), the assertion cache on a reused backend pid, the
  maximum assertion lifetime: the context is the driver's piggyback, checked by the database
  against the identity provider's token; the twin is the forged-access-token test here.
- ``SET row_security = off``, snapshot transactions started before a revoke, the
  security schema's privileges, role and runtime-role name collisions, advisory locks on
  message sequence numbers: PostgreSQL mechanisms with no Oracle counterpart (the runtime
  account's privileges are checked here instead).
- The scope tests of ``test_deepsec_context.py`` (nested scopes, threads and tasks outliving
  their scope, lifecycle policies inside a context) exercise core's engine-neutral context
  variable; their database-facing twins here are the unknown end user, the end user without a
  data role, the pooled session keeping no context and the interleaved users.
- Identity-provider namespaces, applications bound to stores, token mode through the local
  issuer: on Oracle the identity provider is the database's own (OCI IAM or Entra ID); no test
  identity provider exists to twin them against.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import oracledb
import pytest
from oracle_dds import (
    NO_GRANTS_USER,
    USERS,
    OracleDdsEnvironment,
    OracleSeeded,
    describe,
    end_user_context,
    setup_environment,
)
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from oracleagentmemory.engines.identifiers import MANAGED_TABLES
from oracleagentmemory.engines.oracle.admin_names import store_data_role
from oracleagentmemory.engines.oracle.context import USERNAME_QUERY, seen_username
from oracleagentmemory.engines.oracle.driver_errors import error_info
from oracleagentmemory.engines.oracle.security_admin import OracleSecurityAdmin
from oracleagentmemory.errors import EndUserContextError, OracleAgentMemoryError

ALICE, BOB, CAROL, DAVE = USERS

MEMORIES = {"a1": ALICE, "a2": ALICE, "a3": ALICE, "b1": BOB, "b2": BOB, "b3": BOB,
            "c1": CAROL, "d1": DAVE, "g1": None, "g2": None}
RELATIONS = {"r-a1-a2": ("a1", "a2"), "r-b1-b2": ("b1", "b2"), "r-g1-g2": ("g1", "g2")}

# Per managed table: the key column, ALICE's row, BOB's row, the column an UPDATE may set, the
# owner column. record_chunks rows are keyed by the record they index.
PROBES: dict[str, tuple[str, str, str, str, str]] = {
    "thread": ("id", "t-alice", "t-bob", "metadata", "user_id"),
    "thread_summary": ("id", "s-alice", "s-bob", "metadata", "user_id"),
    "actor_profile": ("actor_id", ALICE, BOB, "metadata", "actor_id"),
    "message": ("id", "m-alice", "m-bob", "metadata", "user_id"),
    "document": ("id", "doc-alice", "doc-bob", "metadata", "user_id"),
    "memory": ("id", "a1", "b1", "metadata", "user_id"),
    "memory_link": ("id", "r-a1-a2", "r-b1-b2", "metadata", "user_id"),
    "record_chunks": ("record_id", "a1", "b1", "embedding", "user_id"),
}
assert set(PROBES) == set(MANAGED_TABLES)

# Per table: an INSERT an end user may run (only granted columns), with the owner as :owner_id.
INSERTS: dict[str, tuple[str, str, dict[str, object]]] = {
    "thread": ("id, user_id", ":id, :owner_id", {"id": "t-new"}),
    "thread_summary": ("id, user_id, status", ":id, :owner_id, 'valid'", {"id": "s-new"}),
    "actor_profile": ("actor_type, actor_id, content", "'user', :owner_id, 'x'", {}),
    "message": ("id, user_id, content, seq_no", ":id, :owner_id, 'x', 1000", {"id": "m-new"}),
    "document": ("id, user_id, description", ":id, :owner_id, 'x'", {"id": "doc-new"}),
    "memory": ("id, record_type, user_id, content", ":id, 'memory', :owner_id, 'x'",
               {"id": "new"}),
    "memory_link": ("id, user_id, source_id, source_type, target_id, target_type, "
                    "relation_type, opposite_relation_type",
                    ":id, :owner_id, :source_id, 'memory', :target_id, 'memory', 'related', "
                    "'related'", {"id": "r-new"}),
    "record_chunks": ("record_type, record_id, chunk_no, chunk_text, user_id",
                      "'memory', :record_id, 99, 'x', :owner_id", {}),
}
# The rows each owner may index or link: ALICE's own memories for ALICE, BOB's for BOB.
OWN_ENDPOINTS = {ALICE: {"source_id": "a1", "target_id": "a3", "record_id": "a1"},
                 BOB: {"source_id": "b1", "target_id": "b3", "record_id": "b1"}}
INSERT_BINDS = {"memory_link": ("source_id", "target_id"), "record_chunks": ("record_id",)}

# What the owner compares before and after each attack (updated_at left out, as on PostgreSQL:
# a positive control's rolled-back write must not count, and nothing else may change).
SNAPSHOT_COLUMNS: dict[str, str] = {
    "thread": "id, user_id, agent_id, JSON_SERIALIZE(metadata)",
    "thread_summary": "id, user_id, thread_id, status, JSON_SERIALIZE(content)",
    "actor_profile": "actor_type, actor_id, DBMS_LOB.SUBSTR(content, 2000, 1)",
    "message": "id, user_id, thread_id, seq_no, status, DBMS_LOB.SUBSTR(content, 2000, 1)",
    "document": "id, user_id, status, DBMS_LOB.SUBSTR(description, 2000, 1)",
    "memory": "id, user_id, record_type, status, DBMS_LOB.SUBSTR(content, 2000, 1)",
    "memory_link": "id, user_id, source_id, target_id, relation_type",
    "record_chunks": "record_type, record_id, user_id, chunk_no",
}
assert set(SNAPSHOT_COLUMNS) == set(MANAGED_TABLES)


# --- the environment and the protected store ---------------------------------------------------
@pytest.fixture(scope="session")
def oracle_dds() -> Iterator[OracleDdsEnvironment]:
    """The Oracle environment; fails (never skips) with the probe's reason."""
    reason: str | None = None
    try:
        env = setup_environment()
    except RuntimeError as exc:
        reason = str(exc)
    if reason is not None:
        pytest.fail(reason, pytrace=False)
    yield env
    env.close()


@pytest.fixture(scope="module")
def seeded(oracle_dds: OracleDdsEnvironment) -> OracleSeeded:
    """A protected store with rows of ALICE, BOB (every table), CAROL, DAVE and global rows."""
    seeded = oracle_dds.new_store()
    owner = oracle_dds.owner_store(seeded)
    try:
        owner.add([None, None], "thread", record_ids=["t-alice", "t-bob"],
                  user_ids=[ALICE, BOB], agent_ids=["agent-x", "agent-x"])
        owner.add(["hello from alice", "hello from bob"], "message",
                  record_ids=["m-alice", "m-bob"], thread_ids=["t-alice", "t-bob"],
                  user_ids=[ALICE, BOB], agent_ids=["agent-x", "agent-x"],
                  roles=["user", "user"], embeddings=[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
        owner.add([{"text": "alice summary"}, {"text": "bob summary"}], "thread_summary",
                  record_ids=["s-alice", "s-bob"], thread_ids=["t-alice", "t-bob"],
                  user_ids=[ALICE, BOB])
        ids = list(MEMORIES)
        owner.add([memory_text(i) for i in ids], "memory", record_ids=ids,
                  user_ids=[MEMORIES[i] for i in ids], agent_ids=["agent-x"] * len(ids),
                  embeddings=[[1.0, 0.1 * n, 0.0] for n in range(len(ids))])
        owner.add_relations([s for s, _ in RELATIONS.values()], "memory",
                            [t for _, t in RELATIONS.values()], "memory", "related",
                            relation_ids=list(RELATIONS))
        for user in (ALICE, BOB):
            owner.add_user(user, f"profile of {user}")
    finally:
        owner.close()
    with oracle_dds.owner.connect() as conn, conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {seeded.table('document')} (id, user_id, description) "
                        "VALUES (:id, :owner_id, :description)",
                        [{"id": "doc-alice", "owner_id": ALICE, "description": "a"},
                         {"id": "doc-bob", "owner_id": BOB, "description": "b"}])
        conn.commit()
    return seeded


def memory_text(memory_id: str) -> str:
    return f"memory {memory_id} of {MEMORIES[memory_id] or 'everyone'}"


def owner_rows(env: OracleDdsEnvironment, seeded: OracleSeeded) -> dict[str, list[str]]:
    """Every row of every managed table, as the owner sees them (to prove nothing changed)."""
    out: dict[str, list[str]] = {}
    with env.owner.connect() as conn, conn.cursor() as cur:
        for logical in MANAGED_TABLES:
            cur.execute(f"SELECT {SNAPSHOT_COLUMNS[logical]} FROM {seeded.table(logical)}")
            out[logical] = sorted(json.dumps(list(row), default=str) for row in cur.fetchall())
    return out


@pytest.fixture
def unchanged(oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> Iterator[None]:
    """Check, after the test, that the owner sees exactly the rows seen before it."""
    before = owner_rows(oracle_dds, seeded)
    assert before["memory"], "positive control: the owner sees the seeded rows"
    yield
    assert owner_rows(oracle_dds, seeded) == before


def rows(cur: oracledb.Cursor, statement: str, binds: dict[str, object] | None = None
         ) -> list[tuple[Any, ...]]:
    cur.execute(statement, binds or {})
    return [tuple(r) for r in cur.fetchall()]


def refused_or_empty(cur: oracledb.Cursor, statement: str,
                     binds: dict[str, object] | None = None) -> str | list[tuple[Any, ...]]:
    """The rows, or the error text when the database refuses the statement."""
    try:
        return rows(cur, statement, binds)
    except oracledb.DatabaseError as exc:
        return describe(exc)


def insert_sql(seeded: OracleSeeded, logical: str, returning: bool = False) -> str:
    columns, values, _ = INSERTS[logical]
    key = PROBES[logical][0]
    tail = f" RETURNING {key} INTO :out" if returning else ""
    return f"INSERT INTO {seeded.table(logical)} ({columns}) VALUES ({values}){tail}"


def insert_binds(logical: str, owner: str, **extra: object) -> dict[str, object]:
    binds: dict[str, object] = {"owner_id": owner, **INSERTS[logical][2]}
    for name in INSERT_BINDS.get(logical, ()):
        binds[name] = OWN_ENDPOINTS[owner][name]
    binds.update(extra)
    return binds


def key_filter(logical: str) -> str:
    key = PROBES[logical][0]
    return f"{key} = :k" + (" AND record_type = 'memory'" if logical == "record_chunks" else "")


# --- raw SQL as BOB on every protected table ---------------------------------------------------
@pytest.mark.parametrize("logical", list(PROBES))
def test_select_sees_none_of_alices_rows(oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded,
                                         logical: str) -> None:
    key, alices, bobs, _, owner_column = PROBES[logical]
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        table = seeded.table(logical)
        assert rows(cur, f"SELECT {key} FROM {table} WHERE {key_filter(logical)}",
                    {"k": alices}) == []
        owners = {o for (o,) in rows(cur, f"SELECT {owner_column} FROM {table}")}
        assert ALICE not in owners and owners <= {BOB, None}, owners
        # Positive control: the same probe finds BOB's own row.
        assert rows(cur, f"SELECT {key} FROM {table} WHERE {key_filter(logical)}",
                    {"k": bobs})[:1] == [(bobs,)]


@pytest.mark.parametrize("logical", list(PROBES))
def test_update_and_delete_change_none_of_alices_rows(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None,
        logical: str) -> None:
    _, alices, bobs, column, _ = PROBES[logical]
    table = seeded.table(logical)
    update = f"UPDATE {table} SET {column} = {column} WHERE {key_filter(logical)}"
    delete = f"DELETE FROM {table} WHERE {key_filter(logical)}"
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        cur.execute(update, {"k": alices})
        assert cur.rowcount == 0
        cur.execute(delete, {"k": alices})
        assert cur.rowcount == 0
        # An unfiltered UPDATE touches BOB's rows only (ALICE's are skipped silently).
        cur.execute(f"SELECT COUNT(*) FROM {table}")
        (visible,) = cur.fetchone() or (None,)
        cur.execute(f"UPDATE {table} SET {column} = {column}")
        assert cur.rowcount <= (visible or 0)
        # Positive controls (rolled back): the same statements reach BOB's row.
        cur.execute(update, {"k": bobs})
        assert cur.rowcount >= 1
        cur.execute(delete, {"k": bobs})
        assert cur.rowcount >= 1


def test_global_memories_are_readable_and_never_writable(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    table = seeded.table("memory")
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        assert rows(cur, f"SELECT id FROM {table} WHERE id = 'g1'") == [("g1",)]  # readable
        cur.execute(f"UPDATE {table} SET metadata = metadata WHERE id = 'g1'")
        assert cur.rowcount == 0
        cur.execute(f"DELETE FROM {table} WHERE id = 'g1'")
        assert cur.rowcount == 0
        with pytest.raises(oracledb.DatabaseError):
            cur.execute(insert_sql(seeded, "memory"), {"id": "g9", "owner_id": None})


@pytest.mark.parametrize("logical", list(PROBES))
def test_merge_never_matches_alices_rows(oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded,
                                         unchanged: None, logical: str) -> None:
    key, alices, bobs, column, _ = PROBES[logical]
    extra = " AND x.record_type = 'memory'" if logical == "record_chunks" else ""
    merge = (f"MERGE INTO {seeded.table(logical)} x USING (SELECT :k AS k FROM dual) s "
             f"ON (x.{key} = s.k{extra}) WHEN MATCHED THEN UPDATE SET x.{column} = x.{column}")
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        cur.execute(merge, {"k": alices})
        assert cur.rowcount == 0
        cur.execute(merge, {"k": bobs})  # positive control
        assert cur.rowcount >= 1


def test_merge_cannot_insert_a_row_owned_by_alice(oracle_dds: OracleDdsEnvironment,
                                                  seeded: OracleSeeded, unchanged: None) -> None:
    merge = (f"MERGE INTO {seeded.table('memory')} x USING (SELECT :k AS k, :owner_id AS u "
             "FROM dual) s ON (x.id = s.k AND x.user_id = s.u) WHEN NOT MATCHED THEN "
             "INSERT (id, record_type, user_id, content) VALUES (s.k, 'memory', s.u, 'forged')")
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        with pytest.raises(oracledb.DatabaseError):
            cur.execute(merge, {"k": "merged", "owner_id": ALICE})
        conn.rollback()
        cur.execute(merge, {"k": "merged", "owner_id": BOB})  # positive control
        assert cur.rowcount == 1


@pytest.mark.parametrize("logical", list(PROBES))
def test_insert_with_alices_user_id_is_refused(oracle_dds: OracleDdsEnvironment,
                                               seeded: OracleSeeded, unchanged: None,
                                               logical: str) -> None:
    statement = insert_sql(seeded, logical)
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        with pytest.raises(oracledb.DatabaseError):
            cur.execute(statement, insert_binds(logical, ALICE))
        conn.rollback()
        if logical == "actor_profile":
            # The key is the owner: ALICE's existing profile and CAROL's missing one must be
            # refused alike (an ORA-00001 for ALICE alone would tell that her profile exists).
            with pytest.raises(oracledb.DatabaseError) as alices:
                cur.execute(statement, insert_binds(logical, ALICE))
            with pytest.raises(oracledb.DatabaseError) as carols:
                cur.execute(statement, {"owner_id": CAROL})
            assert error_info(alices.value).code == error_info(carols.value).code != 1, (
                describe(alices.value), describe(carols.value))
            # Positive control: BOB's profile exists, so his own insert meets its key.
            with pytest.raises(oracledb.IntegrityError):
                cur.execute(statement, insert_binds(logical, BOB))
            return
        cur.execute(statement, insert_binds(logical, BOB))  # positive control
        assert cur.rowcount == 1


@pytest.mark.parametrize("logical", ["thread", "message", "memory"])
def test_returning_shows_none_of_alices_rows(oracle_dds: OracleDdsEnvironment,
                                             seeded: OracleSeeded, unchanged: None,
                                             logical: str) -> None:
    key, alices, bobs, column, _ = PROBES[logical]
    table = seeded.table(logical)
    update = (f"UPDATE {table} SET {column} = {column} WHERE {key} = :k "
              f"RETURNING user_id INTO :out")
    delete = f"DELETE FROM {table} WHERE {key} = :k RETURNING user_id INTO :out"
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        for statement in (update, delete):
            out = cur.var(str)
            cur.execute(statement, {"k": alices, "out": out})
            assert cur.rowcount == 0 and out.getvalue() in ([], None), statement
        with pytest.raises(oracledb.DatabaseError):
            cur.execute(insert_sql(seeded, logical, returning=True),
                        insert_binds(logical, ALICE, out=cur.var(str)))
        conn.rollback()
        for statement in (update, delete):  # positive controls (rolled back)
            out = cur.var(str)
            cur.execute(statement, {"k": bobs, "out": out})
            assert out.getvalue() == [BOB], statement


def test_explain_plan_learns_and_changes_nothing(oracle_dds: OracleDdsEnvironment,
                                                 seeded: OracleSeeded, unchanged: None) -> None:
    """EXPLAIN PLAN parses without running: it may be refused (the end user owns no plan
    table), and when it runs, the plan rows name no value of ALICE's rows."""
    table = seeded.table("memory")
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        for n, statement in enumerate((f"DELETE FROM {table} WHERE id = 'a1'",
                                       f"UPDATE {table} SET content = 'x' WHERE id = 'a1'",
                                       f"SELECT content FROM {table} WHERE id = 'a1'")):
            try:
                cur.execute(f"EXPLAIN PLAN SET STATEMENT_ID = 'oam{n}' FOR {statement}")
            except oracledb.DatabaseError:
                continue  # refused: nothing learned
            plan = refused_or_empty(cur, "SELECT * FROM plan_table WHERE statement_id = :s",
                                    {"s": f"oam{n}"})
            assert memory_text("a1") not in json.dumps(plan, default=str)
        # Positive control: the statement EXPLAIN PLAN was given really reads BOB's row.
        assert rows(cur, f"SELECT DBMS_LOB.SUBSTR(content, 2000, 1) FROM {table} "
                         "WHERE id = 'b1'") == [(memory_text("b1"),)]


def test_a_unique_key_probe_does_not_tell_that_alices_id_exists(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    """Keys contain the owner: BOB's insert of ALICE's id is a new row of his, never a
    duplicate-key error that would tell him her id exists."""
    statement = insert_sql(seeded, "memory")
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        cur.execute(statement, insert_binds("memory", BOB, id="a1"))
        assert cur.rowcount == 1
        conn.rollback()
        with pytest.raises(oracledb.IntegrityError):  # positive control: his own id collides
            cur.execute(statement, insert_binds("memory", BOB, id="b1"))


def test_a_conflict_probe_never_locks_alices_row(oracle_dds: OracleDdsEnvironment,
                                                 seeded: OracleSeeded) -> None:
    """BOB's skipped UPDATE of ALICE's row takes no lock on it (the owner's NOWAIT lock
    succeeds); his UPDATE of his own row does (ORA-00054 for the owner)."""
    table = seeded.table("memory")
    lock = f"SELECT id FROM {table} WHERE id = :k FOR UPDATE NOWAIT"
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur, \
            oracle_dds.owner.connect() as other, other.cursor() as other_cur:
        cur.execute(f"UPDATE {table} SET metadata = metadata WHERE id IN ('a1', 'b1')")
        assert cur.rowcount == 1
        assert rows(other_cur, lock, {"k": "a1"}) == [("a1",)]
        other.rollback()
        with pytest.raises(oracledb.DatabaseError) as locked:  # positive control
            other_cur.execute(lock, {"k": "b1"})
        assert error_info(locked.value).code == 54


# --- the context itself ------------------------------------------------------------------------
def test_a_connection_whose_context_was_cleared_sees_nothing(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    query = f"SELECT id FROM {seeded.table('memory')}"
    with oracle_dds.runtime.connect() as conn, conn.cursor() as cur:
        conn.stmtcachesize = 0
        conn.set_end_user_security_context(end_user_context(ALICE))
        assert {i for (i,) in rows(cur, query)} == {"a1", "a2", "a3", "g1", "g2"}  # control
        conn.clear_end_user_security_context()
        assert seen_username((rows(cur, USERNAME_QUERY) or [(None,)])[0][0]) is None
        seen = refused_or_empty(cur, query)
        # ORA-00942 (no privilege path reaches the table) or no rows.
        assert seen == [] or isinstance(seen, str), seen


def test_a_statement_prepared_under_one_context_never_serves_another(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    """With statement caching on (the engine turns it off), a statement parsed under ALICE and
    run again under BOB fails (ORA-52607) or sees only BOB's rows."""
    query = f"SELECT id FROM {seeded.table('memory')}"
    with oracle_dds.runtime.connect() as conn:
        conn.stmtcachesize = 20
        cur = conn.cursor()
        conn.set_end_user_security_context(end_user_context(ALICE))
        assert {i for (i,) in rows(cur, query)} == {"a1", "a2", "a3", "g1", "g2"}  # control
        conn.clear_end_user_security_context()
        conn.set_end_user_security_context(end_user_context(BOB))
        for again in (cur, conn.cursor()):  # the same cursor, and the statement cache
            seen = refused_or_empty(again, query)
            assert isinstance(seen, str) or {i for (i,) in seen} <= {"b1", "b2", "b3", "g1",
                                                                      "g2"}, seen
        conn.clear_end_user_security_context()


def test_a_forged_access_token_reads_nothing(oracle_dds: OracleDdsEnvironment,
                                             seeded: OracleSeeded) -> None:
    query = f"SELECT id FROM {seeded.table('memory')}"
    with oracle_dds.runtime.connect() as conn, conn.cursor() as cur:
        conn.set_end_user_security_context(end_user_context(BOB, access_token="forged.token"))
        with pytest.raises(oracledb.DatabaseError):  # ORA-52602 on the first round trip
            cur.execute(query)
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:  # positive control
        assert "b1" in {i for (i,) in rows(cur, query)}


def test_an_end_user_without_any_data_role_sees_nothing(oracle_dds: OracleDdsEnvironment,
                                                        seeded: OracleSeeded) -> None:
    for logical in MANAGED_TABLES:
        query = f"SELECT {PROBES[logical][0]} FROM {seeded.table(logical)}"
        try:
            with oracle_dds.as_user(NO_GRANTS_USER) as conn, conn.cursor() as cur:
                seen = refused_or_empty(cur, query)  # ORA-00942 under SET USE DATA GRANTS ONLY
        except oracledb.DatabaseError as exc:  # or no context at all for a roleless end user
            seen = describe(exc)
        assert seen == [] or isinstance(seen, str), (logical, seen)
        with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:  # positive control
            assert PROBES[logical][2] in {k for (k,) in rows(cur, query)}, logical


def test_a_context_for_an_unknown_end_user_fails_and_writes_nothing(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    with pytest.raises(OracleAgentMemoryError), \
            oracle_dds.runtime_store(seeded, "OAM_NOT_AN_END_USER") as store:
        store.add(["forged"], "memory", record_ids=["z1"], user_ids=["OAM_NOT_AN_END_USER"],
                  embeddings=[[1.0, 0.0, 0.0]])
    with oracle_dds.runtime_store(seeded, BOB) as store:  # positive control: the same path
        assert store.get("memory", "b1") is not None


def test_the_runtime_account_holds_exactly_its_two_privileges(
        oracle_dds: OracleDdsEnvironment) -> None:
    with oracle_dds.runtime.connect() as conn, conn.cursor() as cur:
        privileges = {p for (p,) in rows(cur, "SELECT privilege FROM user_sys_privs")}
        objects = rows(cur, "SELECT table_name, privilege FROM user_tab_privs")
    assert privileges == {"CREATE SESSION", "CREATE END USER SECURITY CONTEXT"}
    assert objects == []


# --- through the SDK ---------------------------------------------------------------------------
def test_bobs_client_cannot_read_update_or_delete_alices_memories(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    with oracle_dds.runtime_store(seeded, BOB) as store:
        for memory_id in ("a1", "a2", "a3"):
            assert store.get("memory", memory_id) is None
            assert store.update("memory", memory_id, content="owned by bob") == 0
            assert store.delete("memory", memory_id) == 0
        assert store.get("thread", "t-alice") is None
        assert store.get("message", "m-alice") is None
        assert store.get("user_profile", ALICE) is None
        assert store.list("memory", user_id=ALICE) == []
        assert sorted(r.id for r in store.list("memory")) == ["b1", "b2", "b3", "g1", "g2"]
        found = store.search(None, 50, query_vector=[1.0, 0.0, 0.0])
        assert {getattr(r, "user_id", None) for r, _ in found} <= {BOB, None}
        assert "b1" in {r.id for r, _ in found}  # positive control
        # Positive controls: BOB's own memory is his to read, and to update (its metadata,
        # which the owner's snapshot leaves out).
        b1 = store.get("memory", "b1")
        assert b1 is not None and b1.content == memory_text("b1")
        assert store.update("memory", "b1", metadata={"seen_by": "bob"}) == 1


def test_many_users_interleaved_on_a_small_pool_each_see_only_their_rows(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    own = {user: sorted(i for i, u in MEMORIES.items() if u in (user, None)) for user in USERS}
    barrier = threading.Barrier(len(USERS))
    failures: list[str] = []

    def work(user: str) -> None:
        barrier.wait()
        for _ in range(10):
            with oracle_dds.runtime_store(seeded, user) as store:
                seen = sorted(r.id for r in store.list("memory"))
            if seen != own[user]:
                failures.append(f"{user} saw {seen}")

    with ThreadPoolExecutor(max_workers=len(USERS)) as executor:
        for future in [executor.submit(work, user) for user in USERS]:
            future.result()
    assert failures == []
    with oracle_dds.runtime_pool.acquire() as conn, conn.cursor() as cur:
        # Every pooled session came back without a context.
        assert seen_username((rows(cur, USERNAME_QUERY) or [(None,)])[0][0]) is None


# --- twins added by the Oracle attack review (H7) ----------------------------------------------
def test_a_chunk_can_only_index_the_users_own_record(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    """Twin of ``test_deepsec_holes``: a retrieval row of BOB's naming ALICE's memory, a global
    memory or ALICE's message is refused, though its owner column is his."""
    statement = (f"INSERT INTO {seeded.table('record_chunks')} (record_type, record_id, "
                 "chunk_no, chunk_text, user_id) VALUES (:record_type, :record_id, 99, 'x', "
                 ":owner_id)")
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        for record_type, record_id in (("memory", "a1"), ("memory", "g1"),
                                       ("message", "m-alice"), ("user_profile", ALICE)):
            with pytest.raises(oracledb.DatabaseError):
                cur.execute(statement, {"record_type": record_type, "record_id": record_id,
                                        "owner_id": BOB})
            conn.rollback()
        for record_type, record_id in (("memory", "b1"), ("message", "m-bob"),
                                       ("user_profile", BOB)):  # positive controls
            cur.execute(statement, {"record_type": record_type, "record_id": record_id,
                                    "owner_id": BOB})
            assert cur.rowcount == 1, (record_type, record_id)


def test_a_link_can_only_join_the_users_own_memories(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    statement = insert_sql(seeded, "memory_link")
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        for source, target in (("b1", "a1"), ("a1", "b1"), ("b1", "g1"), ("a1", "a2")):
            with pytest.raises(oracledb.DatabaseError):
                cur.execute(statement, insert_binds("memory_link", BOB, source_id=source,
                                                    target_id=target))
            conn.rollback()
        cur.execute(statement, insert_binds("memory_link", BOB))  # positive control: b1-b3
        assert cur.rowcount == 1


# Per table: the columns no end user may change, even on their own rows.
FROZEN_COLUMNS: dict[str, tuple[str, ...]] = {
    "thread": ("id", "user_id", "created_at"),
    "thread_summary": ("id", "user_id", "thread_id", "created_at"),
    "actor_profile": ("actor_type", "actor_id", "created_at"),
    "message": ("id", "user_id", "thread_id", "seq_no", "created_at"),
    "document": ("id", "user_id", "created_at"),
    "memory": ("id", "user_id", "record_type", "created_at"),
    "memory_link": ("id", "user_id", "source_id", "target_id", "created_at"),
    "record_chunks": ("record_id", "record_type", "user_id", "chunk_text", "created_at"),
}
assert set(FROZEN_COLUMNS) == set(MANAGED_TABLES)


@pytest.mark.parametrize("logical", list(PROBES))
def test_owner_identity_and_type_columns_cannot_be_changed_even_on_own_rows(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None,
        logical: str) -> None:
    """Twin of ``test_deepsec_attacks``: no UPDATE column list names them, so the database
    refuses the statement or leaves the row unchanged (rowcount 0); the owner's snapshot, which
    holds these columns, proves nothing moved."""
    _, _, bobs, allowed, _ = PROBES[logical]
    table = seeded.table(logical)
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        for column in FROZEN_COLUMNS[logical]:
            try:
                cur.execute(f"UPDATE {table} SET {column} = {column} WHERE "
                            f"{key_filter(logical)}", {"k": bobs})
                assert cur.rowcount == 0, column
            except oracledb.DatabaseError:
                conn.rollback()
        cur.execute(f"UPDATE {table} SET {allowed} = {allowed} WHERE {key_filter(logical)}",
                    {"k": bobs})  # positive control (rolled back)
        assert cur.rowcount >= 1


def policy_changing_statements(seeded: OracleSeeded) -> list[str]:
    role = store_data_role(seeded.objects, "own_user_rows")
    memory = seeded.table("memory")
    return [f"SET USE DATA GRANTS ONLY ON {memory} DISABLED",
            f'CREATE OR REPLACE DATA GRANT "{seeded.owner}"."OAM_ATTACK_DG" AS SELECT ON '
            f'{memory} TO "{role}"',
            'CREATE DATA ROLE "OAM_ATTACK_ROLE"',
            f'GRANT DATA ROLE "{role}" TO "{NO_GRANTS_USER}"',
            f'REVOKE DATA ROLE "{role}" FROM "{ALICE}"']


def test_neither_the_runtime_account_nor_an_end_user_can_change_the_policies(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    """Twin of ``test_runtime_login_cannot_alter_drop_or_add_policies``."""
    statements = policy_changing_statements(seeded)
    with oracle_dds.runtime.connect() as conn, conn.cursor() as cur:
        for statement in statements:
            with pytest.raises(oracledb.DatabaseError):
                cur.execute(statement)
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        for statement in statements:
            with pytest.raises(oracledb.DatabaseError):
                cur.execute(statement)
    # Positive controls: the statements' grammar is right (the administrator's idempotent
    # re-enable runs), and nothing changed: ALICE still reads her memory, the end user without
    # a role still reads nothing.
    with oracle_dds.admin.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SET USE DATA GRANTS ONLY ON {seeded.table('memory')} ENABLED")
    with oracle_dds.as_user(ALICE) as conn, conn.cursor() as cur:
        assert ("a1",) in rows(cur, f"SELECT id FROM {seeded.table('memory')}")
    try:
        with oracle_dds.as_user(NO_GRANTS_USER) as conn, conn.cursor() as cur:
            seen = refused_or_empty(cur, f"SELECT id FROM {seeded.table('memory')}")
    except oracledb.DatabaseError as exc:
        seen = describe(exc)
    assert seen == [] or isinstance(seen, str), seen


def test_the_runtime_account_outside_a_context_reaches_no_table(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    """Twin of ``test_no_check_store_outside_a_context_is_refused`` at the SQL level."""
    with oracle_dds.runtime.connect() as conn, conn.cursor() as cur:
        for logical in (*MANAGED_TABLES, "registry"):
            seen = refused_or_empty(cur, f"SELECT COUNT(*) FROM {seeded.table(logical)}")
            assert isinstance(seen, str), (logical, seen)  # ORA-00942: no privilege path
        for logical in MANAGED_TABLES:
            with pytest.raises(oracledb.DatabaseError):
                cur.execute(insert_sql(seeded, logical), insert_binds(logical, BOB))
        conn.rollback()
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:  # positive control
        assert ("b1",) in rows(cur, f"SELECT id FROM {seeded.table('memory')}")


def test_admin_work_inside_an_end_user_context_is_refused(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    """Twin of ``test_admin_calls_inside_a_context_are_refused`` on the admin's own check."""
    with oracle_dds.as_user(BOB) as conn:
        admin = OracleSecurityAdmin.for_connection(conn)
        with pytest.raises(EndUserContextError), admin.transaction():
            pass
    with oracle_dds.admin.connect() as conn:  # positive control: the admin's own session
        admin = OracleSecurityAdmin.for_connection(conn)
        with admin.transaction():
            assert admin.current_end_user() is None


# --- Oracle Text's own packages read the index and the base rows themselves -----------------
def text_probes(seeded: OracleSeeded) -> dict[str, str]:
    """Oracle Text calls that take the store's CONTEXT index and return text or hit counts
    computed by Oracle Text itself (not by a query of the protected table in the session)."""
    return {"snippet": "SELECT CTX_DOC.SNIPPET(:idx, :rid, :word) FROM dual",
            "count_hits": "SELECT CTX_QUERY.COUNT_HITS(:idx, :word, TRUE) FROM dual"}


def chunk_rowid(oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, record_id: str) -> str:
    """The ROWID of a memory's retrieval row, read by the owner (an attacker would guess it:
    ROWIDs are block and slot numbers next to his own)."""
    with oracle_dds.owner.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT ROWIDTOCHAR(ROWID) FROM {seeded.table('record_chunks')} WHERE "
                    "record_type = 'memory' AND record_id = :k", {"k": record_id})
        row = cur.fetchone()
    assert row is not None, record_id
    return str(row[0])


def test_oracle_text_packages_give_no_other_users_text_or_hit_counts(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    """CTX_DOC.SNIPPET fetches a document by ROWID and CTX_QUERY.COUNT_HITS counts every
    indexed row: run as BOB (or the runtime account outside a context) on ALICE's row and a
    word only her memory holds, each must be refused, or return nothing of hers."""
    index = f"{seeded.owner}.{seeded.objects.object_name('record_chunks_text_ix')}"
    alices = {"idx": index, "rid": chunk_rowid(oracle_dds, seeded, "a1"), "word": "a1"}
    bobs = {"idx": index, "rid": chunk_rowid(oracle_dds, seeded, "b1"), "word": "b1"}
    probes = text_probes(seeded)

    def answers(cur: oracledb.Cursor, name: str,
                binds: dict[str, str]) -> str | list[tuple[Any, ...]]:
        """The probe's rows, or the error text (a str) when the database refuses it."""
        statement = probes[name]
        used: dict[str, object] = {k: v for k, v in binds.items() if f":{k}" in statement}
        return refused_or_empty(cur, statement, used)

    def learned_nothing(seen: str | list[tuple[Any, ...]]) -> bool:
        """Refused, no row, a NULL or zero: nothing of ALICE's memory came back."""
        return isinstance(seen, str) or all(v in (None, 0, "") for row in seen for v in row)

    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        for name in probes:
            seen = answers(cur, name, alices)
            assert learned_nothing(seen), (name, seen)
        # Positive control: the same probes on BOB's own row either work (his text, his hit)
        # or are refused alike, so a refusal above is not a broken probe.
        own = answers(cur, "snippet", bobs)
        assert isinstance(own, str) or f"of {BOB}" in json.dumps(own, default=str), own
        own_hits = answers(cur, "count_hits", bobs)
        assert isinstance(own_hits, str) or own_hits == [(1,)], own_hits
    with oracle_dds.runtime.connect() as conn, conn.cursor() as cur:
        for name in probes:
            seen = answers(cur, name, alices)
            assert learned_nothing(seen), (name, seen)


# --- through the SDK: writes that name another user's records --------------------------------
def test_a_message_in_another_users_thread_id_stays_the_writers(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    """Twin of ``test_deepsec_holes``: BOB's message naming ALICE's thread is his own row;
    ALICE never reads it in her thread, and BOB never reads hers."""
    with oracle_dds.runtime_store(seeded, BOB) as store:
        (planted,) = store.add(["planted by bob"], "message", thread_ids="t-alice",
                               roles="user", embeddings=[[1.0, 0.0, 0.0]])
        try:
            assert [m.content for m in store.list_thread_messages("t-alice")] == [
                "planted by bob"]
            with oracle_dds.runtime_store(seeded, ALICE) as alices:  # positive control
                assert [m.content for m in alices.list_thread_messages("t-alice")] == [
                    "hello from alice"]
        finally:
            assert store.delete("message", planted) == 1


def test_the_same_record_id_is_each_users_own_and_deleting_one_spares_the_other(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    """Twin of ``test_record_ids_are_unique_per_owner_through_the_sdk`` and of the cascade
    test: BOB's memory may reuse ALICE's id ``a1``; deleting it (with its retrieval rows and
    links) deletes none of ALICE's ``a1``, its chunk or her link ``r-a1-a2`` (the owner's
    snapshot after the test proves it)."""
    with oracle_dds.runtime_store(seeded, BOB) as store:
        store.add(["bob's own a1"], "memory", record_ids=["a1"],
                  embeddings=[[1.0, 0.0, 0.0]])
        store.add_relations(["a1"], "memory", ["b1"], "memory", "related",
                            relation_ids=["r-a1-b1"])
        got = store.get("memory", "a1")
        assert got is not None and got.content == "bob's own a1"
        assert store.delete("memory", "a1", cascade=True) == 1
        assert store.get("memory", "a1") is None
    with oracle_dds.runtime_store(seeded, ALICE) as alices:  # positive control: hers is there
        got = alices.get("memory", "a1")
        assert got is not None and got.content == memory_text("a1")


def test_a_primed_pooled_connection_serves_nobody(oracle_dds: OracleDdsEnvironment,
                                                  seeded: OracleSeeded) -> None:
    """Twin of ``test_deepsec_holes``: a pooled session some other code left in ALICE's
    context (released without clearing it, as the driver then clears it) serves BOB as BOB."""
    conn = oracle_dds.runtime_pool.acquire()
    conn.set_end_user_security_context(oracle_dds.context(ALICE))
    with conn.cursor() as cur:
        assert seen_username((rows(cur, USERNAME_QUERY) or [(None,)])[0][0]) == ALICE
    oracle_dds.runtime_pool.release(conn)
    own = sorted(i for i, u in MEMORIES.items() if u in (BOB, None))
    for _ in range(3):  # every session of the small pool
        with oracle_dds.runtime_store(seeded, BOB) as store:
            assert sorted(r.id for r in store.list("memory")) == own


# --- the optimizer's statistics hold column values -------------------------------------------
def test_no_other_users_value_leaks_through_optimizer_statistics(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    """Twin of ``test_no_row_leaks_through_user_functions_or_statistics``: column statistics
    (LOW_VALUE / HIGH_VALUE) and histograms (ENDPOINT_ACTUAL_VALUE) hold values of every row.
    BOB must be refused them, or see none of another user's values; the owner, who gathered
    them, sees ALICE (lowest) and DAVE (highest) in ``user_id`` (the positive control)."""
    table = seeded.objects.names.table("memory").upper()
    others = (ALICE, CAROL, DAVE)
    statistics = ("SELECT column_name, UTL_RAW.CAST_TO_VARCHAR2(low_value), "
                  "UTL_RAW.CAST_TO_VARCHAR2(high_value) FROM all_tab_col_statistics "
                  "WHERE owner = :o AND table_name = :t")
    histograms = ("SELECT column_name, endpoint_actual_value FROM all_tab_histograms "
                  "WHERE owner = :o AND table_name = :t")
    binds: dict[str, object] = {"o": seeded.owner, "t": table}
    with oracle_dds.owner.connect() as conn, conn.cursor() as cur:
        cur.execute("BEGIN DBMS_STATS.GATHER_TABLE_STATS(ownname => :o, tabname => :t, "
                    "method_opt => 'FOR ALL COLUMNS SIZE 254'); END;", binds)
        owners_view = json.dumps(rows(cur, statistics, binds), default=str)
        assert ALICE in owners_view and DAVE in owners_view, owners_view  # positive control
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        for statement in (statistics, histograms):
            seen = refused_or_empty(cur, statement, binds)
            text = seen if isinstance(seen, str) else json.dumps(seen, default=str)
            assert isinstance(seen, str) or not any(u in text for u in others), text


def test_flashback_queries_see_none_of_alices_rows(oracle_dds: OracleDdsEnvironment,
                                                   seeded: OracleSeeded) -> None:
    """A query of the table as it was (``AS OF``, ``VERSIONS BETWEEN``) reads undo, not the
    current rows: it must be refused, or filtered by BOB's grants as a plain query is."""
    table = seeded.table("memory")
    probes = (f"SELECT id FROM {table} AS OF TIMESTAMP SYSTIMESTAMP - INTERVAL '1' SECOND",
              f"SELECT id FROM {table} VERSIONS BETWEEN TIMESTAMP SYSTIMESTAMP - "
              "INTERVAL '1' MINUTE AND SYSTIMESTAMP")
    with oracle_dds.as_user(BOB) as conn, conn.cursor() as cur:
        for statement in probes:
            seen = refused_or_empty(cur, statement)
            assert isinstance(seen, str) or {i for (i,) in seen} <= {
                i for i, u in MEMORIES.items() if u in (BOB, None)}, (statement, seen)
        # Positive control: the plain query reads BOB's rows.
        assert ("b1",) in rows(cur, f"SELECT id FROM {table}")


def test_the_context_is_cleared_after_every_operation_on_a_standalone_connection(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    """Twin of ``test_the_assertion_is_cleared_after_every_operation_on_a_raw_connection``:
    the store borrows one runtime connection; after each of its operations in BOB's context,
    the connection runs as no end user and reaches no protected row."""
    memory = seeded.table("memory")
    with oracle_dds.runtime.connect() as conn, \
            OracleMemoryEndUserSecurityContext(oracle_dds.context(BOB)):
        store = OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=seeded.store_id,
                                    schema_owner=oracle_dds.owner_schema)
        try:
            for _ in range(2):
                # Positive control: the operation itself ran as BOB.
                assert "b1" in {r.id for r in store.list("memory")}
                with conn.cursor() as cur:
                    assert seen_username((rows(cur, USERNAME_QUERY) or [(None,)])[0][0]) is None
                    seen = refused_or_empty(cur, f"SELECT id FROM {memory}")
                    assert seen == [] or isinstance(seen, str), seen
        finally:
            store.close()
