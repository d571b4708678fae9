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
- Identity-provider users, groups (``MAPPED TO``) and requested data roles: the database's own
  identity provider (OCI IAM or Entra ID) authenticates them, and no test identity provider
  exists; their twins here run only with ``OAM_TEST_ORACLE_IAM_TOKENS_FILE`` (end-user tokens
  of two IAM users, ``tests/oracle_dds.py``) and are skipped without it (the summary says so).
  An identity-provider user never reading the local end user of the same name has no twin: on
  Oracle both share one namespace of names (``deploy/oracle/README.md``). Two providers,
  applications bound to stores and token mode through the local issuer are PostgreSQL's own.
- A context that cannot be cleared, and nested operations on one connection, need code running
  on the connection during an operation: the real driver's connection subclassed
  (``conn_class``/``connectiontype``), re-attaching a context after the engine's clear, or
  calling the store back just before the engine commits.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, ClassVar

import oracledb
import pytest
from oracle_dds import (
    IAM_NOT_TESTED,
    NO_GRANTS_USER,
    NOT_TESTED,
    SHIPPED,
    USERS,
    IamUsers,
    OracleDdsEnvironment,
    OracleSeeded,
    describe,
    end_user_context,
    environment_or_fail,
    iam_users,
    read_access_token,
)
from oracleagentmemory.core import (
    MemoryExtractionConfig,
    OracleAgentMemory,
    OracleDBMemoryStore,
    SchemaPolicy,
)
from oracleagentmemory.core.deepsec import (
    GlobalMemoriesDeepDataSecurityPolicy,
    LocalEndUserPrincipal,
    OciGroupPrincipal,
    OracleMemoryEndUserSecurityContext,
    grant_agent_memory_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.core.deepsec.policies import POLICY_BY_NAME
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.engines.identifiers import MANAGED_TABLES
from oracleagentmemory.engines.oracle.admin_names import (
    group_data_role,
    group_mapping,
    store_data_role,
)
from oracleagentmemory.engines.oracle.context import USERNAME_QUERY, seen_username
from oracleagentmemory.engines.oracle.driver_errors import error_info
from oracleagentmemory.engines.oracle.security_admin import OracleSecurityAdmin
from oracleagentmemory.errors import (
    EndUserContextError,
    OracleAgentMemoryError,
    SecurityContextError,
)
from store_operations import each_store_operation

ALICE, BOB, CAROL, DAVE = USERS

MEMORIES = {"a1": ALICE, "a2": ALICE, "a3": ALICE, "b1": BOB, "b2": BOB, "b3": BOB,
            "c1": CAROL, "d1": DAVE, "g1": None, "g2": None}
# Relations the owner creates, whatever their endpoints' users (a link to a global memory is
# its other endpoint's user's).
RELATIONS = {"r-a1-a2": ("a1", "a2"), "r-b1-b2": ("b1", "b2"), "r-a2-g1": ("a2", "g1"),
             "r-g1-g2": ("g1", "g2"), "r-b2-g2": ("b2", "g2")}

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
    yield from environment_or_fail()


@pytest.fixture(scope="module")
def seeded(oracle_dds: OracleDdsEnvironment) -> OracleSeeded:
    """A protected store with rows of ALICE, BOB (every table), CAROL, DAVE and global rows,
    shared by the attacks that change nothing (or roll back)."""
    return seed(oracle_dds)


@pytest.fixture
def fresh(oracle_dds: OracleDdsEnvironment) -> OracleSeeded:
    """A seeded store of its own, for attacks that change rows or grants."""
    return seed(oracle_dds)


def seed(oracle_dds: OracleDdsEnvironment) -> OracleSeeded:
    """A new protected store, filled as the owner: every managed table holds rows of ALICE and
    BOB, the memories also CAROL's, DAVE's and global ones."""
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


# --- twins added by the second Oracle attack review (H9) ---------------------------------------
def seen_or_refused(call: Callable[[], Any]) -> Any:
    """What ``call`` returns, or :data:`REFUSED` when the SDK raises its typed error (an end
    user without any data grant on a table gets ORA-00942 under SET USE DATA GRANTS ONLY)."""
    try:
        return call()
    except OracleAgentMemoryError:
        return REFUSED


REFUSED = "refused"


def memory_ids(store: OracleDBMemoryStore) -> list[str] | str:
    """The memory ids ``store`` lists, or :data:`REFUSED`."""
    seen: list[str] | str = seen_or_refused(lambda: sorted(r.id for r in store.list("memory")))
    return seen


def owner_of(record: object) -> object:
    """The ``user_id`` of a scoped record (``None`` for another kind)."""
    return getattr(record, "user_id", None)


def no_check_store(oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded,
                   source: object) -> OracleDBMemoryStore:
    """A NO_CHECK runtime store on ``source`` (opened inside the caller's context)."""
    return OracleDBMemoryStore(None, source, schema_policy=SchemaPolicy.NO_CHECK,
                               memory_store_id=seeded.store_id,
                               schema_owner=oracle_dds.owner_schema)


def username_on(conn: oracledb.Connection) -> str | None:
    """The end user the database runs ``conn``'s session as (``None``: none)."""
    with conn.cursor() as cur:
        return seen_username((rows(cur, USERNAME_QUERY) or [(None,)])[0][0])


def store_operations(store: OracleDBMemoryStore) -> list[Callable[[], Any]]:
    """One of each store operation, as ALICE, including a refused write (twin of
    ``test_deepsec_attacks._operations``)."""
    def refused() -> None:
        with pytest.raises(OracleAgentMemoryError):
            store.add(["planted"], "memory", user_ids=BOB, embeddings=[[0.0, 1.0, 0.0]])

    return each_store_operation(store, refused)


OPEN_A_TRANSACTION = ("BEGIN :tx := DBMS_TRANSACTION.LOCAL_TRANSACTION_ID("
                      "create_transaction => TRUE); END;")
"""Starts a transaction without touching a table (DBMS_TRANSACTION runs with the caller's rights
and is PUBLIC's: PL/SQL Packages and Types Reference, DBMS_TRANSACTION.LOCAL_TRANSACTION_ID)."""


def test_the_context_is_cleared_inside_the_callers_own_transaction(
        oracle_dds: OracleDdsEnvironment, fresh: OracleSeeded) -> None:
    """Twin of ``test_the_assertion_is_cleared_inside_the_callers_own_transaction``: on a
    standalone connection whose caller holds a transaction open, each operation runs from the
    engine's savepoint, leaves the caller's transaction open, and leaves the session running as
    no end user (reaching no protected row); the caller's commit keeps ALICE's writes."""
    memory = fresh.table("memory")
    with oracle_dds.runtime.connect() as conn:
        with conn.cursor() as cur:
            tx = cur.var(str)
            cur.execute(OPEN_A_TRANSACTION, {"tx": tx})
        assert tx.getvalue() and conn.transaction_in_progress  # positive control: it is open
        with OracleMemoryEndUserSecurityContext(oracle_dds.context(ALICE)):
            store = no_check_store(oracle_dds, fresh, conn)
            try:
                for operation in store_operations(store):
                    assert conn.transaction_in_progress
                    operation()
                    assert conn.transaction_in_progress
                    assert username_on(conn) is None
                    with conn.cursor() as cur:
                        seen = refused_or_empty(cur, f"SELECT id FROM {memory}")
                    assert seen == [] or isinstance(seen, str), seen
            finally:
                store.close()
        conn.commit()
    with oracle_dds.runtime_store(fresh, ALICE) as alices:  # the caller's commit kept them
        got = alices.get("memory", "c-1")
        assert got is not None and got.content == "changed" and owner_of(got) == ALICE
        assert alices.get("memory", "c-2") is None


class ReplantingConnection(oracledb.Connection):
    """A runtime connection (the real driver) on which other code re-attaches an end-user
    context right after the next clear, once :attr:`replant` is set: the context then stays
    attached whatever the engine cleared, as a session-level assertion does on PostgreSQL.
    Subclass it per test (:func:`replanting_class`): its state lives on the class, so pooled
    connections share it."""

    replant: ClassVar[oracledb.EndUserSecurityContext | None] = None
    replanted_on: ClassVar[list[oracledb.Connection]]

    def clear_end_user_security_context(self) -> None:
        super().clear_end_user_security_context()
        replant, type(self).replant = type(self).replant, None  # one shot
        if replant is not None:
            type(self).replanted_on.append(self)
            self.set_end_user_security_context(replant)


def replanting_class() -> type[ReplantingConnection]:
    class Replanting(ReplantingConnection):
        replanted_on: ClassVar[list[oracledb.Connection]] = []

    return Replanting


def test_a_pooled_connection_whose_context_stays_attached_is_dropped(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    """Twin of ``test_a_connection_carrying_a_session_assertion_is_discarded``: when BOB's
    context is still attached after the engine cleared ALICE's (the database answers BOB to the
    check), the operation fails and the connection is dropped from the pool, never released to
    serve anyone; the next operation gets a fresh connection and runs as ALICE."""
    replanting = replanting_class()
    pool = oracle_dds.runtime_pool_of(replanting)
    try:
        with OracleMemoryEndUserSecurityContext(oracle_dds.context(ALICE)):
            store = no_check_store(oracle_dds, seeded, pool)
            try:
                # Positive control: the pool's connection served ALICE and was cleared.
                assert memory_ids(store) == ["a1", "a2", "a3", "g1", "g2"]
                replanting.replant = oracle_dds.context(BOB)
                with pytest.raises(SecurityContextError, match="still attached"):
                    store.list("memory")
                (carrier,) = replanting.replanted_on
                assert not carrier.is_healthy()  # dropped (ConnectionPool.drop closes it)
                record = store.get("memory", "a1")  # a fresh connection serves ALICE
                assert record is not None and owner_of(record) == ALICE
            finally:
                store.close()
        with pool.acquire() as conn:  # what the pool holds now runs as nobody
            assert username_on(conn) is None
    finally:
        pool.close(force=True)


def test_a_standalone_connection_whose_context_stays_attached_is_refused_afterwards(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    """The same on a borrowed standalone connection, which the engine cannot drop: the
    operation fails, and every later operation on it is refused (it would otherwise run BOB's
    work as ALICE); the engine clears what it can, so the session runs as no end user."""
    replanting = replanting_class()
    conn = oracle_dds.runtime.connect(conn_class=replanting)
    try:
        with OracleMemoryEndUserSecurityContext(oracle_dds.context(BOB)):
            store = no_check_store(oracle_dds, seeded, conn)
            try:
                assert "b1" in memory_ids(store)  # positive control: it served BOB
                replanting.replant = oracle_dds.context(ALICE)
                with pytest.raises(SecurityContextError, match="still attached"):
                    store.list("memory")
                assert replanting.replanted_on == [conn]
                for later in (lambda: store.list("memory"), lambda: store.get("memory", "a1"),
                              lambda: store.add(["after"], "memory",
                                                embeddings=[[1.0, 0.0, 0.0]])):
                    with pytest.raises(SecurityContextError, match="serves nobody"):
                        later()
            finally:
                store.close()
        assert username_on(conn) is None
    finally:
        conn.close()


def test_revoking_the_policies_takes_effect_on_the_next_operation(
        oracle_dds: OracleDdsEnvironment, fresh: OracleSeeded) -> None:
    """Twin of ``test_deepsec_attacks``: one open store and one context object of ALICE (as a
    gateway keeps them); after the administrator revokes her data roles, her next operations
    read nothing (or are refused) and write nothing. Revoking only BOB's global-memories role
    takes the global memories from him and leaves him his own rows."""
    alice = OracleMemoryEndUserSecurityContext(oracle_dds.context(ALICE))
    with alice:
        store = no_check_store(oracle_dds, fresh, oracle_dds.runtime_pool)
    before = owner_rows(oracle_dds, fresh)
    try:
        with alice:  # positive control: the same probe before the revoke
            assert memory_ids(store) == ["a1", "a2", "a3", "g1", "g2"]
        with oracle_dds.admin.connect() as conn:
            revoke_agent_memory_policies(conn, fresh.store_id, oracle_dds.owner_schema,
                                         [LocalEndUserPrincipal(ALICE)], SHIPPED)
        with alice:
            assert memory_ids(store) in ([], REFUSED)
            assert seen_or_refused(lambda: store.get("memory", "a1")) in (None, REFUSED)
            assert seen_or_refused(lambda: store.update("memory", "a1", content="after revoke")
                                   ) in (0, REFUSED)
            assert seen_or_refused(lambda: store.delete("memory", "a1")) in (0, REFUSED)
            with pytest.raises(OracleAgentMemoryError):
                store.add(["after revoke"], "memory", record_ids="x-revoked",
                          embeddings=[[1.0, 0.0, 0.0]])
    finally:
        store.close()
    assert owner_rows(oracle_dds, fresh) == before
    bobs = ["b1", "b2", "b3"]
    with oracle_dds.runtime_store(fresh, BOB) as bob:
        assert memory_ids(bob) == [*bobs, "g1", "g2"]
    with oracle_dds.admin.connect() as conn:
        revoke_agent_memory_policies(conn, fresh.store_id, oracle_dds.owner_schema,
                                     [LocalEndUserPrincipal(BOB)],
                                     [GlobalMemoriesDeepDataSecurityPolicy()])
    with oracle_dds.runtime_store(fresh, BOB) as bob:
        assert memory_ids(bob) == bobs


def test_a_local_end_user_cannot_request_data_roles_it_does_not_hold(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded, unchanged: None) -> None:
    """Twin of ``test_requested_data_roles_restrict_the_context`` for local end users (whose
    ``(name, key)`` contexts the Deep Data Security Guide says take no ``data_roles``): the end
    user without any data role, asking for the store's roles (and for one that does not exist),
    is refused or reads and writes nothing; BOB, asking for none, reads his rows."""
    roles = [store_data_role(seeded.objects, name) for name in POLICY_BY_NAME]
    for requested in (roles, ["OAM_NO_SUCH_ROLE"]):
        try:
            context = oracledb.create_end_user_security_context(
                read_access_token(), end_user_identity=(NO_GRANTS_USER, None),
                data_roles=requested)
            with context_store(oracle_dds, seeded, context) as store:
                seen = memory_ids(store)
                with pytest.raises(OracleAgentMemoryError):
                    store.add(["asked for roles"], "memory", record_ids="x-roles",
                              embeddings=[[1.0, 0.0, 0.0]])
        except OracleAgentMemoryError:
            seen = REFUSED
        assert seen in ([], REFUSED), (requested, seen)
    with oracle_dds.runtime_store(seeded, BOB) as store:  # positive control
        assert "b1" in memory_ids(store)


LINKS_SEEN = {ALICE: ["r-a1-a2", "r-a2-g1", "r-g1-g2"], BOB: ["r-b1-b2", "r-b2-g2", "r-g1-g2"],
              CAROL: ["r-g1-g2"]}
"""The links each user may see: those whose two endpoints they see."""


def walked(record: object, allowed: list[str]) -> set[str]:
    """The ids of the records graph expansion linked to ``record`` (nested by hop), checking
    that every link it followed is one of ``allowed``."""
    reached: set[str] = set()
    for relation, linked in getattr(record, "linked_results", []):
        assert relation.id in allowed, relation.id
        reached |= {linked.id} | walked(linked, allowed)
    return reached


def test_links_are_visible_only_when_both_endpoints_are(oracle_dds: OracleDdsEnvironment,
                                                        seeded: OracleSeeded) -> None:
    """Twin of ``test_deepsec_attacks``: listed through the store, read by raw SQL, and
    followed by graph expansion (the engine's recursive ``links_within_hops``), a user meets
    only the links between memories they see: ALICE's walk from ``a1`` reaches ``g2`` through
    the global link and never BOB's ``b2`` through his link ``r-b2-g2``."""
    for user, expected in LINKS_SEEN.items():
        with oracle_dds.runtime_store(seeded, user) as store:
            assert sorted(r.id for r in store.list_relations()) == expected, user
            for other in set(RELATIONS) - set(expected):
                assert store.get_relation(relation_id=other) is None, (user, other)
        with oracle_dds.as_user(user) as conn, conn.cursor() as cur:
            assert [i for (i,) in rows(cur, f"SELECT id FROM {seeded.table('memory_link')} "
                                            "ORDER BY id")] == expected, user
    for user, start, reach in ((ALICE, "a1", {"a2", "g1", "g2"}),
                               (BOB, "b1", {"b2", "g2", "g1"})):
        with oracle_dds.runtime_store(seeded, user) as store:
            [(hit, _)] = store.search(None, 1, query_vector=[1.0, 0.3 if user == BOB else 0.0,
                                                             0.0],
                                      record_types=["memory"], user_id=user, num_hops=3)
            reached = walked(hit, LINKS_SEEN[user])
            # Positive control: the walk ran (it reached the user's own and global memories).
            assert (hit.id, reached) == (start, reach), user


@pytest.mark.parametrize("thread_row", [False, True], ids=["no_thread_row", "thread_row"])
def test_concurrent_writers_to_one_thread_get_distinct_sequence_numbers(
        oracle_dds: OracleDdsEnvironment, thread_row: bool) -> None:
    """Twin of ``test_deepsec_holes``: four writers as ALICE, on the runtime pool of two
    sessions, add five messages each to one thread (numbered from its thread row, or, without
    one, from the stored messages): her sequence numbers are 0 to 19. BOB writing to his own
    thread of the same id at the same time gets his own 0 to 4 and moves none of hers."""
    seeded = oracle_dds.new_store()
    if thread_row:
        for user in (ALICE, BOB):
            with oracle_dds.runtime_store(seeded, user) as store:
                store.add([None], "thread", record_ids="t")
    errors_seen: list[BaseException] = []
    writers = [ALICE] * 4 + [BOB]
    barrier = threading.Barrier(len(writers))

    def write(n: int, user: str) -> None:
        try:
            barrier.wait()
            with oracle_dds.runtime_store(seeded, user) as store:
                for i in range(5):
                    store.add([f"w{n} m{i}"], "message", thread_ids="t", roles="user",
                              embeddings=[[1.0, 0.0, 0.0]])
        except BaseException as exc:  # reported below
            errors_seen.append(exc)

    workers = [threading.Thread(target=write, args=(n, user))
               for n, user in enumerate(writers)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert errors_seen == []
    for user, count in ((ALICE, 20), (BOB, 5)):
        with oracle_dds.runtime_store(seeded, user) as store:
            messages = store.list_thread_messages("t")
        assert sorted(m.seq_no for m in messages) == list(range(count)), user
        assert {m.user_id for m in messages} == {user}


def test_no_check_refuses_a_connection_that_row_security_does_not_bind(
        oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded) -> None:
    """Twin of ``test_no_check_refuses_a_connection_that_bypasses_row_security``: inside
    ALICE's context, a NO_CHECK store on the owner's or the policy administrator's connection
    (neither holds CREATE END USER SECURITY CONTEXT) is refused, or, should the database attach
    the context after all, runs as ALICE and sees only her rows; outside any context it is
    refused before any statement."""
    alices = {i for i, u in MEMORIES.items() if u in (ALICE, None)}
    with OracleMemoryEndUserSecurityContext(oracle_dds.context(ALICE)):
        for login in (oracle_dds.owner, oracle_dds.admin):
            with login.connect() as conn:
                try:
                    store = no_check_store(oracle_dds, seeded, conn)
                except OracleAgentMemoryError:  # refused (TLS, privilege, context or grants)
                    continue
                try:
                    assert set(memory_ids(store)) <= alices, login.user
                finally:
                    store.close()
        # Positive control: the runtime account is bound by the grants and opens the store.
        no_check_store(oracle_dds, seeded, oracle_dds.runtime_pool).close()
    with pytest.raises(EndUserContextError, match="NO_CHECK"):
        no_check_store(oracle_dds, seeded, oracle_dds.owner_pool)


class NestingConnection(oracledb.Connection):
    """A runtime connection (the real driver) that runs :attr:`nested` once, just before the
    engine commits the operation under way: code called back from inside an operation, on the
    same thread and connection (what ``engines/oracle/open_sessions.py`` guards)."""

    nested: ClassVar[Callable[[oracledb.Connection], None] | None] = None

    def commit(self) -> None:
        nested, type(self).nested = type(self).nested, None  # one shot
        if nested is not None:
            nested(self)
        super().commit()


def test_a_nested_operation_on_a_standalone_connection_keeps_the_outer_context(
        oracle_dds: OracleDdsEnvironment, fresh: OracleSeeded) -> None:
    """An operation of ALICE's started inside another of hers on the same connection runs as
    ALICE and clears nothing: after it, the outer operation's session still runs as ALICE (its
    write is hers); one started in BOB's context there is refused. After the outer operation
    the session runs as no end user."""
    class Nesting(NestingConnection):
        pass

    observed: dict[str, object] = {}
    conn = oracle_dds.runtime.connect(conn_class=Nesting)
    try:
        alice = oracle_dds.context(ALICE)
        with OracleMemoryEndUserSecurityContext(alice):
            store = no_check_store(oracle_dds, fresh, conn)
            try:
                def inside(on: oracledb.Connection) -> None:
                    got = store.get("memory", "a1")  # nested, in the same context
                    observed["nested_read"] = owner_of(got)
                    observed["after_nested"] = username_on(on)
                    with OracleMemoryEndUserSecurityContext(oracle_dds.context(BOB)):
                        try:
                            store.get("memory", "b1")
                        except SecurityContextError:
                            observed["bob"] = "refused"
                    observed["after_bob"] = username_on(on)

                Nesting.nested = inside
                (added,) = store.add(["outer write"], "memory", record_ids="nested-outer",
                                     embeddings=[[1.0, 0.0, 0.0]])
                assert Nesting.nested is None  # the hook ran
                assert observed["nested_read"] == ALICE  # positive control: it ran as ALICE
                assert observed["after_nested"] == ALICE, observed
                assert observed.get("bob") == "refused", observed
                assert observed["after_bob"] == ALICE, observed
                got = store.get("memory", added)
                assert got is not None and owner_of(got) == ALICE
            finally:
                store.close()
        assert username_on(conn) is None
    finally:
        conn.close()


# --- through the client API (OracleAgentMemory) ------------------------------------------------
CLIENT_DIM = 64
SECRET = "zanzibar"
"""A word only ALICE's rows contain."""


@pytest.fixture
def gateway(oracle_dds: OracleDdsEnvironment) -> Iterator[OracleAgentMemory]:
    """One client over one NO_CHECK store on the runtime pool, opened once (in CAROL's
    context) and shared by every user's requests (twin of ``test_client_attacks.gateway``)."""
    seeded = oracle_dds.new_store(vector_dim=CLIENT_DIM)
    with OracleMemoryEndUserSecurityContext(oracle_dds.context(CAROL)):
        store = OracleDBMemoryStore(HashingEmbedder(CLIENT_DIM), oracle_dds.runtime_pool,
                                    schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=seeded.store_id,
                                    schema_owner=oracle_dds.owner_schema)
    client = OracleAgentMemory(store=store, llm=None, memory_extraction_config=(
        MemoryExtractionConfig(extract_memories=False)))
    yield client
    store.close()


def request(oracle_dds: OracleDdsEnvironment, user: str) -> OracleMemoryEndUserSecurityContext:
    """One request of ``user``: the client calls inside run in that user's context."""
    return OracleMemoryEndUserSecurityContext(oracle_dds.context(user))


def seed_alice(oracle_dds: OracleDdsEnvironment, client: OracleAgentMemory) -> str:
    """ALICE's thread (with metadata and settings), message and memories; her message's id."""
    with request(oracle_dds, ALICE):
        thread = client.create_thread(thread_id="alice-t", agent_id="agent-a",
                                      metadata={"topic": "travel"},
                                      max_message_token_length=777)
        [message] = thread.add_messages([{"role": "user",
                                          "content": f"my passport is in {SECRET}"}])
        client.add_memory(f"alice keeps her passport in {SECRET}", memory_id="alice-m",
                          user_id=ALICE, agent_id="agent-a", thread_id="alice-t")
    return str(message)


def alice_intact(oracle_dds: OracleDdsEnvironment, client: OracleAgentMemory) -> None:
    """ALICE's rows are as seeded (read in her own context)."""
    with request(oracle_dds, ALICE):
        thread = client.get_thread("alice-t")
        assert (thread.user_id, thread.metadata) == (ALICE, {"topic": "travel"})
        assert thread.max_message_token_length == 777
        assert [m.content for m in thread.get_messages()] == [f"my passport is in {SECRET}"]
        assert [m.id for m in client.list_memories()] == ["alice-m"]


def test_bobs_client_cannot_get_update_or_delete_alices_thread(
        oracle_dds: OracleDdsEnvironment, gateway: OracleAgentMemory) -> None:
    """Twin of ``test_client_attacks.test_bob_cannot_get_update_or_delete_alices_thread``."""
    client = gateway
    seed_alice(oracle_dds, client)
    with request(oracle_dds, BOB):
        with pytest.raises(KeyError):
            client.get_thread("alice-t")
        with pytest.raises(KeyError):
            client.update_thread("alice-t", metadata={"topic": "owned by bob"})
        with pytest.raises(KeyError):
            client.update_thread("alice-t", max_message_token_length=1)
        assert client.delete_thread("alice-t") == 0
        assert client.list_messages(thread_id="alice-t") == []
        assert client.list_threads(user_id=ALICE) == []
        # Positive control: the same calls on BOB's own thread work.
        client.create_thread(thread_id="bob-t", metadata={"topic": "x"})
        assert client.get_thread("bob-t").user_id == BOB
        updated = client.update_thread("bob-t", metadata={"topic": "y"},
                                       max_message_token_length=5)
        assert (updated.metadata, updated.max_message_token_length) == ({"topic": "y"}, 5)
        assert client.delete_thread("bob-t") == 1
    alice_intact(oracle_dds, client)


def test_a_thread_object_of_alice_used_in_bobs_request_reaches_nothing(
        oracle_dds: OracleDdsEnvironment, gateway: OracleAgentMemory) -> None:
    """Twin of ``test_client_attacks``: ALICE's thread object handed to BOB's request answers
    for BOB: her messages are not found, not changed, not deleted, and a write as her is
    refused."""
    client = gateway
    message = seed_alice(oracle_dds, client)
    with request(oracle_dds, ALICE):
        alices = client.get_thread("alice-t")
    with request(oracle_dds, BOB):
        assert alices.get_messages() == []
        with pytest.raises(KeyError):
            alices.get_message(message)
        with pytest.raises(KeyError):
            alices.update_message(message, content="rewritten by bob")
        assert alices.delete_message(message) == 0
        assert alices.search(SECRET) == []
        with pytest.raises(OracleAgentMemoryError):  # a write as ALICE is refused
            alices.add_messages([{"role": "user", "content": "planted by bob"}])
    alice_intact(oracle_dds, client)
    with request(oracle_dds, ALICE):  # positive control: the same object works for ALICE
        assert alices.get_message(message).content == f"my passport is in {SECRET}"
        assert "alice-m" in {r.id for r in alices.search(SECRET, record_types=["memory"])}


# --- identity-provider users (need IAM end-user tokens) ----------------------------------------
@pytest.fixture(scope="session")
def iam(oracle_dds: OracleDdsEnvironment) -> IamUsers:
    """The two IAM end users of ``OAM_TEST_ORACLE_IAM_TOKENS_FILE``; skipped (with the reason
    also kept for the run's summary, never a pass) when it is unset; fails when it is unusable."""
    try:
        users = iam_users()
    except ValueError as exc:
        pytest.fail(str(exc), pytrace=False)
    if users is None:
        if IAM_NOT_TESTED not in NOT_TESTED:
            NOT_TESTED.append(IAM_NOT_TESTED)
        pytest.skip(IAM_NOT_TESTED)
    return users


def group_store(oracle_dds: OracleDdsEnvironment, iam: IamUsers) -> OracleSeeded:
    """A seeded store whose shipped policies are also granted to the IAM group (through the
    admin API: a data role MAPPED TO the group, carrying the store's grants)."""
    fresh = seed(oracle_dds)
    with oracle_dds.admin.connect() as conn:
        grant_agent_memory_policies(conn, fresh.store_id, oracle_dds.owner_schema,
                                    [OciGroupPrincipal(iam.group, iam.identity_provider)],
                                    SHIPPED)
    return fresh


@contextmanager
def context_store(oracle_dds: OracleDdsEnvironment, seeded: OracleSeeded,
                  context: oracledb.EndUserSecurityContext) -> Iterator[OracleDBMemoryStore]:
    """A NO_CHECK runtime store used inside ``context`` (any end user's)."""
    with OracleMemoryEndUserSecurityContext(context):
        store = no_check_store(oracle_dds, seeded, oracle_dds.runtime_pool)
        try:
            yield store
        finally:
            store.close()


def test_identity_provider_users_get_rows_only_through_their_groups(
        oracle_dds: OracleDdsEnvironment, iam: IamUsers) -> None:
    """Twin of ``test_deepsec_attacks``: the group's member writes a memory of their own and
    reads it and the global memories, nothing of ALICE's; the IAM user outside the group reads
    nothing and writes nothing; ALICE (a local end user) still reads hers."""
    fresh = group_store(oracle_dds, iam)
    member = oracle_dds.end_user_of(iam.context(iam.member_token))
    assert member is not None  # the database verified the member's token
    with context_store(oracle_dds, fresh, iam.context(iam.member_token)) as store:
        (note,) = store.add(["member's note"], "memory", record_ids="iam-note",
                            embeddings=[[1.0, 0.0, 0.0]])
        got = store.get("memory", note)
        assert got is not None and owner_of(got) == member
        assert memory_ids(store) == ["g1", "g2", "iam-note"]
        assert store.get("memory", "a1") is None
    before = owner_rows(oracle_dds, fresh)
    try:
        with context_store(oracle_dds, fresh, iam.context(iam.outsider_token)) as store:
            seen = memory_ids(store)
            with pytest.raises(OracleAgentMemoryError):
                store.add(["outsider's note"], "memory", record_ids="x-outsider",
                          embeddings=[[1.0, 0.0, 0.0]])
    except OracleAgentMemoryError:  # refused as soon as the store is opened
        seen = REFUSED
    assert seen in ([], REFUSED), seen
    assert owner_rows(oracle_dds, fresh) == before
    with oracle_dds.runtime_store(fresh, ALICE) as store:  # positive control
        assert memory_ids(store) == ["a1", "a2", "a3", "g1", "g2"]


def test_requested_data_roles_never_widen_the_context(oracle_dds: OracleDdsEnvironment,
                                                      iam: IamUsers) -> None:
    """Twin of ``test_requested_data_roles_restrict_the_context`` for what Oracle documents:
    a token context's requested ``data_roles`` switch on roles the end user may use; they never
    give the IAM user outside the group the group's mapped role or the local end users' store
    roles, and never give the member more than it sees without them. (Whether requesting a
    subset *restricts* a token's mapped roles, as on PostgreSQL, is not documented; only the
    never-wider half is asserted.)"""
    fresh = group_store(oracle_dds, iam)
    mapped = group_data_role(group_mapping(f"{iam.identity_provider}:{iam.group}"))
    local_roles = [store_data_role(fresh.objects, name) for name in POLICY_BY_NAME]
    with context_store(oracle_dds, fresh, iam.context(iam.member_token)) as store:
        unrequested = memory_ids(store)
    assert unrequested == ["g1", "g2"]  # positive control: the member reads through the group

    def seen_by(token: str, requested: list[str]) -> list[str] | str:
        """The memory ids ``token``'s bearer reads when requesting ``requested``, or
        ``REFUSED`` when the context is refused."""
        try:
            context = iam.context(token, data_roles=requested)
            with context_store(oracle_dds, fresh, context) as store:
                return memory_ids(store)
        except OracleAgentMemoryError:
            return REFUSED

    for requested in ([mapped], local_roles, [mapped, *local_roles], ["OAM_NO_SUCH_ROLE"]):
        seen = seen_by(iam.member_token, requested)
        assert seen == REFUSED or set(seen) <= set(unrequested), (requested, seen)
        seen = seen_by(iam.outsider_token, requested)
        assert seen in ([], REFUSED), (requested, seen)
