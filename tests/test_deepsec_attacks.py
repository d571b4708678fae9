"""Deep Data Security under attack: what the runtime login and end users can never do.

Every attack runs against the real embedded server. Raw SQL attacks connect as the runtime login
``oam_test_rt`` (with the tests' password, through ``url_as``: what is tested is the privileges,
not authentication) and set the assertion setting by hand, exactly as a
compromised gateway could. Store-API attacks use a ``NO_CHECK`` store inside another user's
context. Each negative test has a positive control in the same file showing that the same
statement succeeds with a valid context, so a test cannot pass because the statement is broken.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from dds import OWNER, POLICIES, RUNTIME
from oam_policies import SHIPPED_POLICIES
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    EndUserContextError,
    GlobalMemoriesDeepDataSecurityPolicy,
    LocalEndUserPrincipal,
    OracleMemoryEndUserSecurityContext,
    Principal,
    UserOwnRowsDeepDataSecurityPolicy,
    add_deep_data_security_policies,
    create_end_user_security_context,
    grant_agent_memory_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE, store_names
from oracleagentmemory.engines.postgres import deepsec_admin
from oracleagentmemory.errors import NotPermittedError, SecurityContextError
from psycopg import errors, sql
from psycopg.pq import TransactionStatus
from store_operations import each_store_operation

APPLY = "SELECT oam_sec.apply_assertion(%s)"
SET_BY_HAND = "SELECT set_config('oam.end_user_assertion', %s, true)"

RLS_VIOLATION = "new row violates row-level security policy"
NOT_GRANTED = "no data role of this memory store granted to the end user"
"""What the SDK says of a write the row security refused (no table name)."""
PERMISSION_DENIED = "permission denied for table"
NO_USER = "no_grants_user"
"""A local end user that exists but holds no data role on any store."""

Conn = psycopg.Connection[Any]


# --- the protected store ------------------------------------------------------------------------
@dataclass(frozen=True)
class Seeded:
    """A protected store with rows of alice, bob and global rows in every managed table."""

    store_id: str

    def table(self, logical: str) -> sql.Composable:
        """Schema-qualified identifier of a managed table (or ``registry``)."""
        if logical == "registry":
            return sql.Identifier(OWNER, REGISTRY_TABLE)
        names = store_names(memory_store_id=self.store_id, table_name_prefix=None,
                            schema_owner=OWNER, fold="lower")
        return sql.Identifier(OWNER, names.table(logical))


RELATIONS = {
    # relation id: (source, target); created by the owner, whatever the endpoints' users
    "r-a1-a2": ("a1", "a2"),
    "r-b1-b2": ("b1", "b2"),
    "r-a2-g1": ("a2", "g1"),
    "r-g1-g2": ("g1", "g2"),
    "r-b2-g2": ("b2", "g2"),
}
MEMORIES = {"a1": "alice", "a2": "alice", "a3": "alice", "b1": "bob", "b2": "bob", "b3": "bob",
            "g1": None, "g2": None}


def seed(dds: Any, profiles: tuple[str, ...] = ("alice", "bob")) -> Seeded:
    """Create a protected store and fill every managed table as the owner."""
    store_id = dds.new_store()
    owner = dds.owner_store(store_id)
    try:
        owner.add([None, None], "thread", record_ids=["t-alice", "t-bob"],
                  user_ids=["alice", "bob"], agent_ids=["agent-x", "agent-x"])
        owner.add(["hello from alice", "hello from bob"], "message",
                  record_ids=["m-alice", "m-bob"], thread_ids=["t-alice", "t-bob"],
                  user_ids=["alice", "bob"], agent_ids=["agent-x", "agent-x"],
                  roles=["user", "user"], embeddings=[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
        owner.add([{"text": "alice summary"}, {"text": "bob summary"}], "thread_summary",
                  record_ids=["s-alice", "s-bob"], thread_ids=["t-alice", "t-bob"],
                  user_ids=["alice", "bob"])
        ids = list(MEMORIES)
        owner.add([f"memory {i} of {MEMORIES[i] or 'everyone'}" for i in ids], "memory",
                  record_ids=ids, user_ids=[MEMORIES[i] for i in ids],
                  agent_ids=["agent-x"] * len(ids),
                  thread_ids=[f"t-{MEMORIES[i]}" if MEMORIES[i] else None for i in ids],
                  embeddings=[[1.0, 0.1 * n, 0.0] for n in range(len(ids))])
        owner.add_relations([s for s, _ in RELATIONS.values()], "memory",
                            [t for _, t in RELATIONS.values()], "memory", "related",
                            relation_ids=list(RELATIONS))
        for user in profiles:
            owner.add_user(user, f"profile of {user}")
    finally:
        owner.close()
    seeded = Seeded(store_id)
    with psycopg.connect(dds.owner_url) as conn:
        conn.execute(
            sql.SQL("INSERT INTO {} (id, user_id, description) VALUES "
                    "('doc-alice', 'alice', 'a'), ('doc-bob', 'bob', 'b')")
            .format(seeded.table("document")))
    return seeded


def owner_rows(dds: Any, seeded: Seeded) -> dict[str, list[str]]:
    """Every row of every managed table as JSON, as the owner sees them (to prove nothing
    changed); ``updated_at`` is left out."""
    out: dict[str, list[str]] = {}
    with psycopg.connect(dds.owner_url) as conn:
        for logical in MANAGED_TABLES:
            rows = conn.execute(
                sql.SQL("SELECT to_jsonb(t) - 'updated_at' FROM {} t")
                .format(seeded.table(logical))).fetchall()
            out[logical] = sorted(json.dumps(r[0], sort_keys=True) for r in rows)
    return out


@pytest.fixture(scope="module")
def shared(dds: Any) -> Seeded:
    """One seeded store for the read-only and refused-write attacks (no profile of alice, so a
    valid alice context can insert hers in the positive control)."""
    return seed(dds, profiles=("bob",))


@pytest.fixture
def fresh(dds: Any) -> Seeded:
    """A seeded store of its own, for tests that change rows."""
    return seed(dds)


# --- assertions an attacker can produce ---------------------------------------------------------
def _split(assertion: str) -> tuple[dict[str, Any], str]:
    body, signature = assertion.split(".")
    return json.loads(bytes.fromhex(body)), signature


def _join(claims: dict[str, Any], signature: str) -> str:
    body = json.dumps(claims, separators=(",", ":"), sort_keys=True).encode().hex()
    return f"{body}.{signature}"


def _edited(assertion: str, **changes: Any) -> str:
    """The claims edited, the original signature kept."""
    claims, signature = _split(assertion)
    claims.update(changes)
    return _join(claims, signature)


def _resigned_with_random_key(assertion: str) -> str:
    body = assertion.split(".")[0]
    return f"{body}." + hmac.new(secrets.token_bytes(32), body.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Forgery:
    """An assertion value, the user it claims, and the login it is used on."""

    value: str | None
    user: str
    other_login: bool = False


def forgeries(dds: Any) -> dict[str, Forgery]:
    """Every assertion the database must reject, by name."""
    alice = dds.context("alice")
    valid = alice.assertion()
    expired = alice.assertion(now=time.time() - 3600)
    idp_no_group = dds.idp_context("u01", groups=()).assertion()
    return {
        "none": Forgery(None, "alice"),
        "empty": Forgery("", "alice"),
        "garbage": Forgery("not-an-assertion", "alice"),
        "garbage_two_parts": Forgery("abc.def", "alice"),
        "json_not_hex": Forgery('{"u":"alice"}.00', "alice"),
        "unsigned_claims": Forgery(valid.split(".")[0] + ".", "alice"),
        "bad_signature": Forgery(_resigned_with_random_key(valid), "alice"),
        "claims_user_changed": Forgery(_edited(valid, u="bob"), "bob"),
        "claims_kind_changed": Forgery(_edited(valid, k="idp", g=["team"]), "alice"),
        "idp_groups_added": Forgery(_edited(idp_no_group, g=["team"]), "u01"),
        "expired": Forgery(expired, "alice"),
        "expired_with_edited_expiry": Forgery(_edited(expired, exp=time.time() + 3600), "alice"),
        "other_application": Forgery(
            create_end_user_security_context(dds.other_app_token, ("alice", None)).assertion(),
            "alice"),
        "gw_assertion_on_other_login": Forgery(valid, "alice", other_login=True),
        "unknown_local_user": Forgery(dds.context("mallory").assertion(), "mallory"),
        "uppercase_signature": Forgery(valid.split(".")[0] + "." + valid.split(".")[1].upper(),
                                       "alice"),
    }


FORGERY_NAMES = [
    "none", "empty", "garbage", "garbage_two_parts", "json_not_hex", "unsigned_claims",
    "bad_signature", "claims_user_changed", "claims_kind_changed", "idp_groups_added", "expired",
    "expired_with_edited_expiry", "other_application", "gw_assertion_on_other_login",
    "unknown_local_user", "uppercase_signature",
]


@contextmanager
def with_assertion(conn: Conn, assertion: str | None, by_hand: bool = False) -> Iterator[Conn]:
    """One transaction with ``assertion`` applied as the SDK does (``oam_sec.apply_assertion``)
    or, ``by_hand``, only written into the transaction-local setting."""
    with conn.transaction():
        if assertion is not None:
            conn.execute(SET_BY_HAND if by_hand else APPLY, [assertion])
        yield conn


@contextmanager
def refused(conn: Conn, assertion: str | None, message: str) -> Iterator[Conn]:
    """Like :func:`with_assertion`, expecting the statement to be refused with ``message``."""
    with pytest.raises(errors.InsufficientPrivilege, match=message), \
            with_assertion(conn, assertion):
        yield conn


# --- raw statements on every table --------------------------------------------------------------
def insert_statement(seeded: Seeded, logical: str, user: str) -> sql.Composed:
    """An INSERT that a valid context of ``user`` may run (only writable columns; the link joins
    the user's memories ``<initial>1`` and ``<initial>3``)."""
    values: dict[str, tuple[str, str]] = {
        "thread": ("id, user_id", f"'x-thread', '{user}'"),
        "thread_summary": ("id, user_id, content", f"'x-summary', '{user}', jsonb_build_object()"),
        "actor_profile": ("actor_type, actor_id, content", f"'user', '{user}', 'x'"),
        "message": ("id, user_id, content, seq_no", f"'x-message', '{user}', 'x', 0"),
        "document": ("id, user_id, description", f"'x-document', '{user}', 'x'"),
        "memory": ("id, record_type, user_id, content", f"'x-memory', 'memory', '{user}', 'x'"),
        "memory_link": ("id, user_id, source_id, source_type, target_id, target_type, "
                        "relation_type, opposite_relation_type",
                        f"'x-link', '{user}', '{user[0]}1', 'memory', '{user[0]}3', 'memory', "
                        "'related', 'related'"),
        "record_chunks": ("record_type, record_id, chunk_no, user_id",
                          f"'memory', 'a1', 99, '{user}'"),
        "registry": ("store_key, schema_version, search_mode, search_index_sync",
                     "'x', 1, 'vector', 'on_commit'"),
    }
    columns, row = values[logical]
    return sql.SQL("INSERT INTO {} (" + columns + ") VALUES (" + row + ")").format(
        seeded.table(logical))


def update_statement(seeded: Seeded, logical: str, where: str = "true") -> sql.Composed:
    """An UPDATE of a column the runtime role may update, on every row matching ``where``."""
    column = {"record_chunks": "embedding", "registry": "updated_at"}.get(logical, "metadata")
    return sql.SQL(f"UPDATE {{}} SET {column} = {column} WHERE {where}").format(
        seeded.table(logical))


def delete_statement(seeded: Seeded, logical: str, where: str = "true") -> sql.Composed:
    return sql.SQL(f"DELETE FROM {{}} WHERE {where}").format(seeded.table(logical))


def count_statement(seeded: Seeded, logical: str) -> sql.Composed:
    return sql.SQL("SELECT count(*) FROM {}").format(seeded.table(logical))


ALL_TABLES = [*MANAGED_TABLES, "registry"]


def assert_sees_and_writes_nothing(conn: Conn, seeded: Seeded, run: Callable[[], Any],
                                   user: str) -> None:
    """Under whatever ``run`` establishes per transaction: no row read, none written."""
    for logical in ALL_TABLES:
        with run():
            assert conn.execute(count_statement(seeded, logical)).fetchone() == (0,), logical
        message = PERMISSION_DENIED if logical == "registry" else RLS_VIOLATION
        with pytest.raises(errors.InsufficientPrivilege, match=message), run():
            conn.execute(insert_statement(seeded, logical, user))
        for statement in (update_statement(seeded, logical), delete_statement(seeded, logical)):
            if logical == "registry":
                with pytest.raises(errors.InsufficientPrivilege, match=PERMISSION_DENIED), run():
                    conn.execute(statement)
            else:
                with run():
                    assert conn.execute(statement).rowcount == 0, (logical, statement)


@pytest.mark.parametrize("by_hand", [False, True], ids=["applied", "set_by_hand"])
@pytest.mark.parametrize("name", FORGERY_NAMES)
def test_forged_assertion_set_per_transaction_reads_and_writes_nothing(
        dds: Any, shared: Seeded, name: str, by_hand: bool) -> None:
    forgery = forgeries(dds)[name]
    before = owner_rows(dds, shared)
    url = dds.other_runtime_url if forgery.other_login else dds.runtime_url
    with psycopg.connect(url, autocommit=True) as conn:
        assert_sees_and_writes_nothing(
            conn, shared, lambda: with_assertion(conn, forgery.value, by_hand), forgery.user)
    assert owner_rows(dds, shared) == before


def test_valid_assertion_set_by_hand_without_applying_it_reads_and_writes_nothing(
        dds: Any, shared: Seeded) -> None:
    """Policies trust only assertions that ``apply_assertion`` verified in this very session:
    a valid assertion written into the setting by hand, or applied in another session, counts
    for nothing."""
    before = owner_rows(dds, shared)
    assertion = dds.context("alice").assertion()
    with psycopg.connect(dds.runtime_url) as other:
        assert other.execute(APPLY, [assertion]).fetchone() == ("alice",)
        with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
            assert_sees_and_writes_nothing(
                conn, shared, lambda: with_assertion(conn, assertion, by_hand=True), "alice")
    assert owner_rows(dds, shared) == before


def test_applied_assertion_stops_counting_when_it_expires(dds: Any, shared: Seeded) -> None:
    """A verified assertion set again by hand after its expiry reads nothing."""
    soon = dataclasses.replace(dds.context("alice"), lifetime_seconds=1)
    assertion = soon.assertion()
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        with with_assertion(conn, assertion):
            row = conn.execute(count_statement(shared, "memory")).fetchone()
            assert row is not None and row[0] > 0
        time.sleep(1.2)
        assert_sees_and_writes_nothing(
            conn, shared, lambda: with_assertion(conn, assertion, by_hand=True), "alice")


@pytest.mark.parametrize("name", [n for n in FORGERY_NAMES if n != "none"])
def test_forged_assertion_set_for_the_session_reads_and_writes_nothing(
        dds: Any, shared: Seeded, name: str) -> None:
    forgery = forgeries(dds)[name]
    assert forgery.value is not None
    before = owner_rows(dds, shared)
    url = dds.other_runtime_url if forgery.other_login else dds.runtime_url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET oam.end_user_assertion = {}").format(
            sql.Literal(forgery.value)))
        assert conn.execute("SELECT current_setting('oam.end_user_assertion')").fetchone() == (
            forgery.value,)
        assert_sees_and_writes_nothing(conn, shared, conn.transaction, forgery.user)
    assert owner_rows(dds, shared) == before


@pytest.mark.parametrize("name", [n for n in FORGERY_NAMES if n != "none"])
def test_security_functions_reject_forged_assertions(dds: Any, shared: Seeded,
                                                    name: str) -> None:
    names = store_names(memory_store_id=shared.store_id, table_name_prefix=None,
                        schema_owner=OWNER, fold="lower")
    role = deepsec_admin.data_role_name(names, OWNER, SHIPPED_POLICIES["own_user_rows"])
    query = "SELECT oam_sec.apply_assertion(%s), oam_sec.end_user(), oam_sec.has_data_role(%s)"
    with psycopg.connect(dds.runtime_url) as conn:
        valid = dds.context("alice").assertion()
        # Controls: a valid assertion, and one taken apart and rebuilt without any change.
        for control in (valid, _edited(valid)):
            assert conn.execute(query, [control, role]).fetchone() == ("alice", "alice", True)
    forgery = forgeries(dds)[name]
    url = dds.other_runtime_url if forgery.other_login else dds.runtime_url
    with psycopg.connect(url) as conn:
        assert conn.execute(query, [forgery.value, role]).fetchone() == (None, None, False)


def test_positive_control_a_valid_assertion_reads_and_writes(dds: Any, shared: Seeded) -> None:
    """The statements of the attacks above succeed with a valid context (so they can fail)."""
    valid = {
        dds.runtime_url: dds.context("alice").assertion(),
        dds.other_runtime_url: create_end_user_security_context(
            dds.other_app_token, ("alice", None)).assertion(),
    }
    for url, assertion in valid.items():
        with psycopg.connect(url, autocommit=True) as conn:
            for logical in ALL_TABLES:
                with with_assertion(conn, assertion):
                    count = conn.execute(count_statement(shared, logical)).fetchone()
                    # The shared store holds no profile of alice (her insert below is the control).
                    assert count is not None
                    assert count == (0,) if logical == "actor_profile" else count[0] > 0, logical
                if logical == "registry":
                    continue
                conn.execute("BEGIN")
                try:
                    conn.execute(APPLY, [assertion])
                    assert conn.execute(insert_statement(shared, logical, "alice")
                                        ).rowcount == 1, logical
                    assert conn.execute(update_statement(shared, logical)).rowcount >= 1, logical
                    assert conn.execute(delete_statement(shared, logical)).rowcount >= 1, logical
                finally:
                    conn.execute("ROLLBACK")


# --- what the runtime login can never do, whatever it sets ----------------------------------------
@pytest.mark.parametrize("statement, message", [
    ("SELECT * FROM oam_sec.application", "permission denied for table application"),
    ("SELECT * FROM oam_sec.end_user", "permission denied for table end_user"),
    ("SELECT * FROM oam_sec.data_role", "permission denied for table data_role"),
    ("SELECT * FROM oam_sec.data_role_grant", "permission denied for table data_role_grant"),
    ("INSERT INTO oam_sec.end_user (username) VALUES ('mallory')",
     "permission denied for table end_user"),
    ("INSERT INTO oam_sec.data_role_grant (role_name, principal_type, principal) "
     "SELECT 'x', 'user', 'mallory'", "permission denied for table data_role_grant"),
    ("UPDATE oam_sec.application SET login_role = 'oam_test_rt'",
     "permission denied for table application"),
    ("DELETE FROM oam_sec.data_role_grant", "permission denied for table data_role_grant"),
    ("SELECT oam_sec.claims()", "permission denied for function claims"),
    ("CREATE OR REPLACE FUNCTION oam_sec.end_user() RETURNS text LANGUAGE sql "
     "AS $$ SELECT 'bob' $$", "permission denied for schema oam_sec"),
    ("CREATE TABLE oam_sec.evil (x int)", "permission denied for schema oam_sec"),
    (f"SET ROLE {OWNER}", f'permission denied to set role "{OWNER}"'),
    (f"SET ROLE {OWNER}_oam_runtime", f'permission denied to set role "{OWNER}_oam_runtime"'),
    (f"SET SESSION AUTHORIZATION {OWNER}", "permission denied to set session authorization"),
    ("SET ROLE oam_test_secadmin", 'permission denied to set role "oam_test_secadmin"'),
    (f"CREATE TABLE {OWNER}.evil (x int)", f"permission denied for schema {OWNER}"),
])
def test_runtime_login_cannot_touch_the_security_schema_or_become_another_role(
        dds: Any, statement: str, message: str) -> None:
    # Even with a valid end-user context.
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn, \
            refused(conn, dds.context("alice").assertion(), message):
        conn.execute(statement.encode())


@pytest.mark.parametrize("logical", MANAGED_TABLES)
def test_runtime_login_cannot_alter_drop_or_add_policies(dds: Any, shared: Seeded,
                                                         logical: str) -> None:
    table = shared.table(logical)
    with psycopg.connect(dds.superuser_url) as conn:
        row = conn.execute("SELECT policyname FROM pg_policies WHERE schemaname = %s AND "
                           "tablename = %s LIMIT 1",
                           [OWNER, f"{shared.store_id}_{logical}"]).fetchone()
    assert row is not None
    policy = sql.Identifier(row[0])
    statements = [
        sql.SQL("ALTER TABLE {} DISABLE ROW LEVEL SECURITY").format(table),
        sql.SQL("ALTER TABLE {} NO FORCE ROW LEVEL SECURITY").format(table),
        sql.SQL("ALTER TABLE {} ADD COLUMN evil int").format(table),
        sql.SQL("ALTER TABLE {} OWNER TO {}").format(table, sql.Identifier(RUNTIME)),
        sql.SQL("DROP TABLE {}").format(table),
        sql.SQL("TRUNCATE {}").format(table),
        sql.SQL("CREATE POLICY evil ON {} USING (true)").format(table),
        sql.SQL("ALTER POLICY {} ON {} USING (true)").format(policy, table),
        sql.SQL("DROP POLICY {} ON {}").format(policy, table),
        sql.SQL("CREATE TRIGGER evil BEFORE INSERT ON {} FOR EACH ROW "
                "EXECUTE FUNCTION suppress_redundant_updates_trigger()").format(table),
    ]
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        for statement in statements:
            with pytest.raises(errors.InsufficientPrivilege,
                               match="must be owner of (table|relation)|permission denied for"):
                conn.execute(statement)


def test_row_security_off_is_refused_not_bypassed(dds: Any, shared: Seeded) -> None:
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        conn.execute("SET row_security = off")
        with pytest.raises(errors.InsufficientPrivilege,
                           match="query would be affected by row-level security policy"):
            conn.execute(count_statement(shared, "memory"))


def test_runtime_login_attributes_and_memberships(dds: Any) -> None:
    with psycopg.connect(dds.superuser_url) as conn:
        attributes = conn.execute(
            "SELECT rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolbypassrls, rolreplication"
            " FROM pg_roles WHERE rolname = %s", [RUNTIME]).fetchone()
        assert attributes == (False, False, False, False, False, False)
        memberships = conn.execute(
            "SELECT r.rolname, m.inherit_option, m.set_option, m.admin_option "
            "FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid "
            "JOIN pg_roles u ON u.oid = m.member WHERE u.rolname = %s", [RUNTIME]).fetchall()
        assert memberships == [(f"{OWNER}_oam_runtime", True, False, False)]
        owned = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
            "WHERE r.rolname = ANY(%s)", [[RUNTIME, f"{OWNER}_oam_runtime"]]).fetchone()
        assert owned == (0,)
        functions = conn.execute(
            "SELECT p.proname, has_function_privilege(%s, p.oid, 'EXECUTE') FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'oam_sec' "
            "ORDER BY p.proname", [RUNTIME]).fetchall()
        assert functions == [("apply_assertion", True), ("b64url_decode", False),
                             ("bump_grants_version", False), ("bytes_to_numeric", False),
                             ("claims", False), ("end_user", True), ("granted_roles", False),
                             ("has_data_role", True), ("jwt_rs256_claims", False),
                             ("modexp", False), ("verified_user", True),
                             ("verify_assertion", False)]
        readable = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'oam_sec' AND c.relkind IN ('r', 'v') "
            "AND has_table_privilege(%s, c.oid, 'SELECT') ORDER BY 1", [RUNTIME]).fetchall()
        assert readable == [("grants_version",), ("session_end_user",)]
        writable = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'oam_sec' AND has_table_privilege(%s, c.oid, "
            "'INSERT, UPDATE, DELETE, TRUNCATE')", [RUNTIME]).fetchall()
        assert writable == []


def _expected_privileges() -> tuple[set[tuple[str, str]], set[tuple[str, str, str]]]:
    """Table-level (SELECT, DELETE) and column-level (INSERT, UPDATE) privileges the shipped
    declarations grant, as ``(table, privilege)`` and ``(table, column, privilege)``."""
    tables: set[tuple[str, str]] = set()
    columns: set[tuple[str, str, str]] = set()
    for policy in SHIPPED_POLICIES.values():
        for grant in policy.grants:
            if grant.select:
                tables.add((grant.table, "SELECT"))
            if grant.delete:
                tables.add((grant.table, "DELETE"))
            for column in grant.insert_columns or ():
                columns.add((grant.table, column, "INSERT"))
            for column in grant.update_columns or ():
                columns.add((grant.table, column, "UPDATE"))
    return tables, columns


def test_runtime_privileges_are_exactly_the_declared_ones(dds: Any, shared: Seeded) -> None:
    names = store_names(memory_store_id=shared.store_id, table_name_prefix=None,
                        schema_owner=OWNER, fold="lower")
    logical_of = {names.table(t): t for t in MANAGED_TABLES} | {REGISTRY_TABLE: "registry"}
    runtime_role = f"{OWNER}_oam_runtime"
    expected_tables, expected_columns = _expected_privileges()
    with psycopg.connect(dds.superuser_url) as conn:
        table_rows = conn.execute(
            "SELECT table_name, privilege_type, is_grantable FROM information_schema."
            "table_privileges WHERE grantee = %s AND table_schema = %s AND table_name = ANY(%s)",
            [runtime_role, OWNER, list(logical_of)]).fetchall()
        column_rows = conn.execute(
            "SELECT table_name, column_name, privilege_type FROM information_schema."
            "column_privileges WHERE grantee = %s AND table_schema = %s AND table_name = ANY(%s) "
            "AND privilege_type <> 'SELECT'",
            [runtime_role, OWNER, list(logical_of)]).fetchall()
        select_columns = conn.execute(
            "SELECT DISTINCT table_name FROM information_schema.column_privileges "
            "WHERE grantee = %s AND table_schema = %s AND table_name = ANY(%s) "
            "AND privilege_type = 'SELECT'", [runtime_role, OWNER, list(logical_of)]).fetchall()
        direct = conn.execute(
            "SELECT table_schema, table_name, privilege_type FROM information_schema."
            "table_privileges WHERE grantee = %s UNION ALL SELECT table_schema, table_name, "
            "privilege_type FROM information_schema.column_privileges WHERE grantee = %s",
            [RUNTIME, RUNTIME]).fetchall()
        security = conn.execute(
            "SELECT table_name, privilege_type FROM information_schema.table_privileges "
            "WHERE table_schema = 'oam_sec' AND grantee IN (%s, %s, 'PUBLIC')",
            [RUNTIME, runtime_role]).fetchall()
    assert {(logical_of[t], p) for t, p, _ in table_rows} == expected_tables
    assert all(g == "NO" for _, _, g in table_rows)
    # Column privileges other than SELECT: exactly the declared INSERT and UPDATE columns.
    assert {(logical_of[t], c, p) for t, c, p in column_rows} == expected_columns
    assert {logical_of[t] for (t,) in select_columns} == {t for t, p in expected_tables
                                                           if p == "SELECT"}
    assert direct == []
    # Of the security schema, only the grants version and the caller's own verified
    # assertions (a view filtered to its backend) are readable; nothing is writable.
    assert sorted(security) == [("grants_version", "SELECT"), ("session_end_user", "SELECT")]


def test_no_row_leaks_through_user_functions_or_statistics(dds: Any, shared: Seeded) -> None:
    """A leaky function in WHERE sees only visible rows; planner statistics stay hidden."""
    with psycopg.connect(dds.owner_url, autocommit=True) as conn:
        conn.execute(sql.SQL("ANALYZE {}").format(shared.table("memory")))
        owner_stats = conn.execute(
            "SELECT count(*) FROM pg_stats WHERE schemaname = %s AND tablename = %s",
            [OWNER, f"{shared.store_id}_memory"]).fetchone()
    assert owner_stats is not None and owner_stats[0] > 0
    leaked: list[str] = []
    leak = ("CREATE FUNCTION pg_temp.leak(t text) RETURNS boolean LANGUAGE plpgsql "
            "COST 0.0000001 AS $$ BEGIN RAISE NOTICE '%', t; RETURN true; END $$")
    query = sql.SQL("SELECT id FROM {} WHERE pg_temp.leak(content)").format(
        shared.table("memory"))
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        conn.add_notice_handler(lambda notice: leaked.append(str(notice.message_primary)))
        conn.execute(leak)
        with with_assertion(conn, None):
            assert conn.execute(query).fetchall() == []
        assert leaked == []
        # A session holding temp objects gets no assertion at all: nothing is visible.
        with with_assertion(conn, dds.context("alice").assertion()):
            assert conn.execute(query).fetchall() == []
        assert leaked == []
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        conn.add_notice_handler(lambda notice: leaked.append(str(notice.message_primary)))
        with with_assertion(conn, dds.context("alice").assertion()):
            conn.execute(leak)  # created inside the context: sees only visible rows
            seen = sorted(r[0] for r in conn.execute(query).fetchall())
        assert seen == ["a1", "a2", "a3", "g1", "g2"]
        assert sorted(leaked) == sorted(f"memory {i} of {MEMORIES[i] or 'everyone'}"
                                        for i in seen)
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        for assertion in (None, dds.context("alice").assertion()):
            with with_assertion(conn, assertion):
                stats = conn.execute(
                    "SELECT count(*) FROM pg_stats WHERE schemaname = %s AND tablename = %s",
                    [OWNER, f"{shared.store_id}_memory"]).fetchone()
            assert stats == (0,)


# --- user A against user B ----------------------------------------------------------------------
def test_other_users_rows_are_invisible_through_the_store_api(dds: Any, shared: Seeded) -> None:
    with dds.runtime_store(shared.store_id, "alice") as store:
        assert store.get("memory", "b1") is None
        assert store.get("thread", "t-bob") is None
        assert store.get("message", "m-bob") is None
        assert store.get("thread_summary", "s-bob") is None
        assert store.get("user_profile", "bob") is None
        assert sorted(r.id for r in store.list("memory")) == ["a1", "a2", "a3", "g1", "g2"]
        assert store.list("memory", user_id="bob") == []
        assert [r.id for r in store.list("thread")] == ["t-alice"]
        assert [r.id for r in store.list("message")] == ["m-alice"]
        assert [r.id for r in store.list("thread_summary")] == ["s-alice"]
        assert store.list("user_profile") == []
        assert store.list_thread_messages("t-bob") == []
        found = store.search(None, 50, query_vector=[1.0, 0.0, 0.0])
        assert sorted(r.id for r, _ in found) == ["a1", "a2", "a3", "g1", "g2", "m-alice"]
        assert {r.user_id for r, _ in found} == {"alice", None}
        assert store.get_relation(relation_id="r-a1-b1") is None
        assert store.get_relation(relation_id="r-b1-b2") is None


def test_links_are_visible_only_when_both_endpoints_are(dds: Any, shared: Seeded) -> None:
    visible = {
        "alice": ["r-a1-a2", "r-a2-g1", "r-g1-g2"],
        "bob": ["r-b1-b2", "r-b2-g2", "r-g1-g2"],
        "carol": ["r-g1-g2"],
    }
    for user, expected in visible.items():
        with dds.runtime_store(shared.store_id, user) as store:
            assert sorted(r.id for r in store.list_relations()) == expected
        with psycopg.connect(dds.runtime_url, autocommit=True) as conn, \
                with_assertion(conn, dds.context(user).assertion()):
            rows = conn.execute(sql.SQL("SELECT id FROM {} ORDER BY id").format(
                shared.table("memory_link"))).fetchall()
        assert [r[0] for r in rows] == expected
    with dds.runtime_store(shared.store_id, "alice") as store:
        [(hit, _)] = store.search(None, 1, query_vector=[1.0, 0.0, 0.0], record_types=["memory"],
                                  metadata_filter=None, user_id="alice", num_hops=3)
        reached: set[str] = set()

        def walk(record: Any) -> None:
            for relation, linked in getattr(record, "linked_results", []):
                assert relation.id in visible["alice"]
                reached.add(linked.id)
                walk(linked)

        walk(hit)
        assert hit.id == "a1"
        assert reached == {"a2", "g1", "g2"}


def test_other_users_rows_cannot_be_changed_through_the_store_api(dds: Any,
                                                                  fresh: Seeded) -> None:
    before = owner_rows(dds, fresh)
    with dds.runtime_store(fresh.store_id, "alice") as store:
        assert store.update("memory", "b1", content="owned by alice") == 0
        assert store.update("message", "m-bob", content="owned by alice") == 0
        assert store.update("thread_summary", "s-bob", content={"x": 1}) == 0
        assert store.update("thread", "t-bob", metadata={"x": 1}) == 0
        assert store.update("user_profile", "bob", content="owned by alice") == 0
        assert store.update_relations(["r-b1-b2", "r-a1-b1"], relation_types="hijacked") == []
        assert store.delete("memory", "b1") == 0
        assert store.delete("message", "m-bob") == 0
        assert store.delete("thread_summary", "s-bob") == 0
        assert store.delete("thread", "t-bob") == 0
        assert store.delete_thread("t-bob") == 0
        assert store.delete("user_profile", "bob", cascade=True) == 0
        assert store.delete_relations(["r-b1-b2", "r-a1-b1", "r-b2-g2"]) == 0
        with pytest.raises(ValueError, match="target_record_ids\\[0\\]: no memory record 'b1'"):
            store.add_relations("a1", "memory", "b1", "memory", "related")
        with pytest.raises(ValueError, match="source_record_ids\\[0\\]: no memory record 'b3'"):
            store.add_relations("b3", "memory", "a3", "memory", "related")
    with dds.runtime_store(fresh.store_id, "bob") as store, \
            pytest.raises(ValueError, match="target_record_ids\\[0\\]: no memory record 'a3'"):
        store.add_relations("b3", "memory", "a3", "memory", "related")
    assert owner_rows(dds, fresh) == before


def test_cascade_deletes_stay_within_the_callers_rows(dds: Any, fresh: Seeded) -> None:
    with dds.runtime_store(fresh.store_id, "alice") as store:
        # Agent profiles are not end-user rows: the profile itself is out of reach, the cascade
        # removes only alice's rows of that agent.
        assert store.delete("agent_profile", "agent-x", cascade=True) == 0
        assert store.delete("user_profile", "alice", cascade=True) == 1
    after = owner_rows(dds, fresh)
    users = {
        logical: sorted({json.loads(r).get("user_id", json.loads(r).get("actor_id"))
                         for r in rows}, key=str)
        for logical, rows in after.items() if logical not in ("memory_link", "record_chunks")
    }
    assert users == {"thread": ["bob"], "thread_summary": ["bob"], "message": ["bob"],
                     "document": ["bob"], "memory": [None, "bob"], "actor_profile": ["bob"]}
    links = sorted(json.loads(r)["id"] for r in after["memory_link"])
    assert links == ["r-b1-b2", "r-b2-g2", "r-g1-g2"]


def test_raw_sql_inside_a_valid_context_cannot_reach_other_users(dds: Any,
                                                                  fresh: Seeded) -> None:
    before = owner_rows(dds, fresh)
    alice = dds.context("alice")
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        for logical in MANAGED_TABLES:
            with refused(conn, alice.assertion(), RLS_VIOLATION):
                conn.execute(insert_statement(fresh, logical, "bob"))
            if logical == "memory_link":
                continue
            column = "actor_id" if logical == "actor_profile" else "user_id"
            with with_assertion(conn, alice.assertion()):
                users = conn.execute(sql.SQL(f"SELECT DISTINCT {column} FROM {{}}").format(
                    fresh.table(logical))).fetchall()
                assert {u for (u,) in users} <= {"alice", None}, logical
                assert conn.execute(update_statement(fresh, logical, f"{column} = 'bob'")
                                    ).rowcount == 0, logical
                assert conn.execute(delete_statement(fresh, logical, f"{column} = 'bob'")
                                    ).rowcount == 0, logical
        with with_assertion(conn, alice.assertion()):
            # Only the link between alice's own memories is writable; her links (also the
            # one to a global memory) are hers to delete, no other link is.
            assert conn.execute(update_statement(fresh, "memory_link")).rowcount == 1
            assert conn.execute(delete_statement(
                fresh, "memory_link", "id NOT IN ('r-a1-a2', 'r-a2-g1')")).rowcount == 0
        for owner, source, target in (("alice", "a1", "b1"), ("alice", "b3", "a3"),
                                      ("alice", "b1", "b3"), ("alice", "a3", "g2"),
                                      ("bob", "b1", "b3"), (None, "g1", "g2")):
            link = sql.SQL(
                "INSERT INTO {} (id, user_id, source_id, source_type, target_id, target_type, "
                "relation_type, opposite_relation_type) VALUES ('x', %s, %s, 'memory', %s, "
                "'memory', 'related', 'related')").format(fresh.table("memory_link"))
            with refused(conn, alice.assertion(), RLS_VIOLATION):
                conn.execute(link, [owner, source, target])
    assert owner_rows(dds, fresh) == before


@pytest.mark.parametrize("logical, column, value", [
    ("memory", "user_id", "'bob'"),
    ("memory", "user_id", "NULL"),
    ("memory", "record_type", "'fact'"),
    ("memory", "created_at", "now()"),
    ("memory", "row_seq", "DEFAULT"),
    ("memory", "id", "'renamed'"),
    ("thread", "user_id", "'bob'"),
    ("thread", "created_at", "now()"),
    ("message", "user_id", "'bob'"),
    ("message", "seq_no", "seq_no + 1"),
    ("message", "thread_id", "'t-bob'"),
    ("thread_summary", "user_id", "'bob'"),
    ("document", "user_id", "'bob'"),
    ("record_chunks", "user_id", "'bob'"),
    ("record_chunks", "record_id", "'b1'"),
    ("actor_profile", "actor_id", "'bob'"),
    ("actor_profile", "actor_type", "'agent'"),
    ("memory_link", "source_id", "'b1'"),
    ("memory_link", "created_at", "now()"),
])
def test_ownership_type_and_creation_columns_cannot_be_changed_even_on_own_rows(
        dds: Any, shared: Seeded, logical: str, column: str, value: str) -> None:
    statement = sql.SQL(f"UPDATE {{}} SET {column} = {value}").format(shared.table(logical))
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn, \
            refused(conn, dds.context("alice").assertion(), PERMISSION_DENIED):
        conn.execute(statement)


def test_global_memories_are_readable_and_never_writable(dds: Any, fresh: Seeded) -> None:
    before = owner_rows(dds, fresh)
    with dds.runtime_store(fresh.store_id, "alice") as store:
        global_memory = store.get("memory", "g1")
        assert global_memory is not None and global_memory.user_id is None
        assert store.update("memory", "g1", content="rewritten") == 0
        assert store.update("memory", "g1", embedding=[0.0, 1.0, 0.0]) == 0
        assert store.delete("memory", "g1") == 0
        with pytest.raises(NotPermittedError, match=NOT_GRANTED):
            store.add(["shared by alice"], "memory", user_ids=None, record_ids="x-global")
        with pytest.raises(NotPermittedError, match=NOT_GRANTED):
            store.add(["shared by alice"], "memory", user_ids=[None], record_ids="x-global")
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        with with_assertion(conn, dds.context("alice").assertion()):
            assert conn.execute(update_statement(fresh, "memory", "user_id IS NULL")
                                ).rowcount == 0
            assert conn.execute(delete_statement(fresh, "memory", "user_id IS NULL")
                                ).rowcount == 0
            assert conn.execute(update_statement(fresh, "record_chunks", "user_id IS NULL")
                                ).rowcount == 0
            assert conn.execute(delete_statement(fresh, "record_chunks", "user_id IS NULL")
                                ).rowcount == 0
        with refused(conn, dds.context("alice").assertion(), RLS_VIOLATION):
            conn.execute(sql.SQL("INSERT INTO {} (id, record_type, user_id, content) "
                                 "VALUES ('x', 'memory', NULL, 'x')")
                         .format(fresh.table("memory")))
    assert owner_rows(dds, fresh) == before


def test_writing_another_users_rows_is_refused(dds: Any, fresh: Seeded) -> None:
    before = owner_rows(dds, fresh)
    with dds.runtime_store(fresh.store_id, "alice") as store:
        with pytest.raises(NotPermittedError, match=NOT_GRANTED):
            store.add(["planted"], "memory", user_ids="bob", record_ids="x-planted")
        with pytest.raises(NotPermittedError, match=NOT_GRANTED):
            store.add([None], "thread", user_ids="bob", record_ids="x-thread")
        with pytest.raises(NotPermittedError, match=NOT_GRANTED):
            store.add(["hi"], "message", user_ids="bob", thread_ids="t-bob", roles="user")
        with pytest.raises(NotPermittedError, match=NOT_GRANTED):
            store.add_user("carol", "profile written by alice")
        # An omitted user id is the context's user: the write succeeds as alice's row.
        [own] = store.add(["mine"], "memory", record_ids="x-own")
        assert store.get("memory", own).user_id == "alice"
    after = owner_rows(dds, fresh)
    assert len(after["memory"]) == len(before["memory"]) + 1
    for logical in ("thread", "message", "actor_profile", "document", "thread_summary"):
        assert after[logical] == before[logical]


# --- store rules and administration -----------------------------------------------------------
def test_no_check_store_outside_a_context_is_refused(dds: Any, shared: Seeded) -> None:
    with pytest.raises(EndUserContextError,
                       match="NO_CHECK opens a Deep Data Security runtime store"):
        OracleDBMemoryStore(None, dds.runtime_url, schema_policy=SchemaPolicy.NO_CHECK,
                            memory_store_id=shared.store_id, schema_owner=OWNER)
    with dds.runtime_store(shared.store_id, "alice") as store:
        escaped = store
        assert escaped.get("memory", "a1") is not None
    calls: list[Callable[[], object]] = [
        lambda: escaped.get("memory", "a1"), lambda: escaped.list("memory"),
        lambda: escaped.add(["x"], "memory"),
        lambda: escaped.search(None, 3, query_vector=[1.0, 0.0, 0.0]),
    ]
    for call in calls:
        with pytest.raises(EndUserContextError, match="needs an active "
                           "OracleMemoryEndUserSecurityContext for every operation"):
            call()
    assert issubclass(EndUserContextError, RuntimeError)


def test_admin_calls_inside_a_context_are_refused(dds: Any, shared: Seeded) -> None:
    principals: list[Principal] = [LocalEndUserPrincipal("carol")]
    with OracleMemoryEndUserSecurityContext(dds.context("alice")):
        with pytest.raises(RuntimeError, match="add_deep_data_security_policies is "
                           "administrative work and refuses to run inside an end-user"):
            add_deep_data_security_policies(dds.secadmin_url, OWNER, shared.store_id, POLICIES)
        with pytest.raises(RuntimeError, match="grant_agent_memory_policies is "
                           "administrative work and refuses to run inside an end-user"):
            grant_agent_memory_policies(dds.secadmin_url, shared.store_id, OWNER, principals,
                                        POLICIES)
        with pytest.raises(RuntimeError, match="SchemaPolicy.CREATE_IF_NECESSARY cannot run "
                           "inside an end-user security context"):
            OracleDBMemoryStore(None, dds.owner_url,
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id=shared.store_id, vector_dim=3)
        with pytest.raises(RuntimeError, match="SchemaPolicy.REQUIRE_EXISTING cannot run "
                           "inside an end-user security context"):
            OracleDBMemoryStore(None, dds.owner_url, memory_store_id=shared.store_id)


def _ensure_end_user(dds: Any, username: str) -> None:
    with psycopg.connect(dds.secadmin_url) as conn:
        deepsec_admin.create_end_user(conn, username)


def _sees(dds: Any, store_id: str, security_context: Any) -> list[str]:
    with OracleMemoryEndUserSecurityContext(security_context):
        store = OracleDBMemoryStore(None, dds.runtime_url, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=store_id, schema_owner=OWNER)
        try:
            return sorted(r.id for t in ("memory", "thread", "message", "thread_summary",
                                         "user_profile") for r in store.list(t))
        finally:
            store.close()


def _add_memory(dds: Any, store_id: str, security_context: Any, record_id: str) -> None:
    with OracleMemoryEndUserSecurityContext(security_context):
        store = OracleDBMemoryStore(None, dds.runtime_url, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=store_id, schema_owner=OWNER)
        try:
            store.add(["x"], "memory", record_ids=record_id)
        finally:
            store.close()


ALICE_SEES = ["a1", "a2", "a3", "alice", "g1", "g2", "m-alice", "s-alice", "t-alice"]


def test_a_user_without_any_granted_role_sees_nothing(dds: Any, fresh: Seeded) -> None:
    _ensure_end_user(dds, NO_USER)
    assert _sees(dds, fresh.store_id, dds.context(NO_USER)) == []
    with pytest.raises(NotPermittedError, match=NOT_GRANTED):
        _add_memory(dds, fresh.store_id, dds.context(NO_USER), "x-nogrant")


def test_revoking_the_policies_takes_effect_on_the_next_operation(dds: Any,
                                                                  fresh: Seeded) -> None:
    alice = OracleMemoryEndUserSecurityContext(dds.context("alice"))
    with alice:
        store = OracleDBMemoryStore(None, dds.runtime_url, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=fresh.store_id, schema_owner=OWNER)
    try:
        with alice:
            assert sorted(r.id for r in store.list("memory")) == ["a1", "a2", "a3", "g1", "g2"]
        revoke_agent_memory_policies(dds.secadmin_url, fresh.store_id, OWNER,
                                     [LocalEndUserPrincipal("alice")], POLICIES)
        with alice:
            assert store.list("memory") == []
            assert store.get("memory", "a1") is None
            assert store.update("memory", "a1", content="after revoke") == 0
            assert store.delete("memory", "a1") == 0
            with pytest.raises(NotPermittedError, match=NOT_GRANTED):
                store.add(["after revoke"], "memory", record_ids="x-revoked")
    finally:
        store.close()
    assert _sees(dds, fresh.store_id, dds.context("bob")) == [
        "b1", "b2", "b3", "bob", "g1", "g2", "m-bob", "s-bob", "t-bob"]
    revoke_agent_memory_policies(dds.secadmin_url, fresh.store_id, OWNER,
                                 [LocalEndUserPrincipal("bob")],
                                 [GlobalMemoriesDeepDataSecurityPolicy()])
    assert _sees(dds, fresh.store_id, dds.context("bob")) == [
        "b1", "b2", "b3", "bob", "m-bob", "s-bob", "t-bob"]


def test_identity_provider_users_get_rows_only_through_their_groups(dds: Any,
                                                                    fresh: Seeded) -> None:
    member = dds.idp_context("u01")
    _add_memory(dds, fresh.store_id, member, "u01-note")
    assert _sees(dds, fresh.store_id, member) == ["g1", "g2", "u01-note"]
    for outsider in (dds.idp_context("u02", groups=()), dds.idp_context("u02", groups=("ops",)),
                     # the same names as a group member and as a local end user with grants
                     dds.idp_context("u01", groups=()), dds.idp_context("alice", groups=())):
        assert _sees(dds, fresh.store_id, outsider) == []
        with pytest.raises(NotPermittedError, match=NOT_GRANTED):
            _add_memory(dds, fresh.store_id, outsider, "x-outsider")
    assert _sees(dds, fresh.store_id, dds.context("alice")) == ALICE_SEES


def test_requested_data_roles_restrict_the_context(dds: Any, fresh: Seeded) -> None:
    names = store_names(memory_store_id=fresh.store_id, table_name_prefix=None,
                        schema_owner=OWNER, fold="lower")
    own = deepsec_admin.data_role_name(names, OWNER,
                                       UserOwnRowsDeepDataSecurityPolicy().declaration)
    shared_role = deepsec_admin.data_role_name(
        names, OWNER, GlobalMemoriesDeepDataSecurityPolicy().declaration)
    assert _sees(dds, fresh.store_id, dds.context("alice", data_roles=[own])) == [
        r for r in ALICE_SEES if not r.startswith("g")]
    assert _sees(dds, fresh.store_id, dds.context("alice", data_roles=[shared_role])) == [
        "g1", "g2"]
    assert _sees(dds, fresh.store_id, dds.context("alice", data_roles=[own, shared_role])
                 ) == ALICE_SEES
    assert _sees(dds, fresh.store_id, dds.context("alice", data_roles=["no_such_role"])) == []
    with pytest.raises(NotPermittedError, match=NOT_GRANTED):
        _add_memory(dds, fresh.store_id, dds.context("alice", data_roles=[shared_role]), "x-g")
    _add_memory(dds, fresh.store_id, dds.context("alice", data_roles=[own]), "x-own")


# --- the context never outlives the operation ---------------------------------------------------
def _assertion_on(conn: Conn) -> tuple[Any, Any]:
    row = conn.execute("SELECT current_setting('oam.end_user_assertion', true), "
                       "oam_sec.end_user()").fetchone()
    assert row is not None
    return row[0], row[1]


def _operations(store: OracleDBMemoryStore) -> list[Callable[[], Any]]:
    """One of each store operation, including a refused write."""
    def refused() -> None:
        with pytest.raises(NotPermittedError, match=NOT_GRANTED):
            store.add(["planted"], "memory", user_ids="bob")

    return each_store_operation(store, refused)


def test_the_assertion_is_cleared_after_every_operation_on_a_raw_connection(
        dds: Any, fresh: Seeded) -> None:
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        assert _assertion_on(conn) == (None, None)
        with dds.runtime_store(fresh.store_id, "alice", pool=conn) as store:
            assert _assertion_on(conn) == ("", None)
            for operation in _operations(store):
                operation()
                assert conn.info.transaction_status == TransactionStatus.IDLE
                assert _assertion_on(conn) == ("", None)
        assert not conn.closed


def test_the_assertion_is_cleared_inside_the_callers_own_transaction(dds: Any,
                                                                     fresh: Seeded) -> None:
    with psycopg.connect(dds.runtime_url) as conn:
        conn.execute("SELECT 1")
        with dds.runtime_store(fresh.store_id, "alice", pool=conn) as store:
            for operation in _operations(store):
                assert conn.info.transaction_status == TransactionStatus.INTRANS
                operation()
                assert conn.info.transaction_status == TransactionStatus.INTRANS
                assert _assertion_on(conn) == ("", None)
                rows = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
                    fresh.table("memory"))).fetchone()
                assert rows == (0,)
        conn.commit()
    with dds.runtime_store(fresh.store_id, "alice") as store:
        assert store.get("memory", "c-1").content == "changed"


def test_a_connection_carrying_a_session_assertion_is_discarded(dds: Any, fresh: Seeded) -> None:
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn, \
            dds.runtime_store(fresh.store_id, "alice", pool=conn) as store:
        conn.execute(sql.SQL("SET oam.end_user_assertion = {}").format(
            sql.Literal(dds.context("bob").assertion())))
        with pytest.raises(SecurityContextError, match="could not be cleared from a connection; "
                           "the connection was discarded"):
            store.list("memory")
        assert conn.closed


def test_a_signed_assertion_without_expiry_is_rejected(dds: Any) -> None:
    """A correctly signed assertion with no ``exp`` claim must not live forever."""
    from oracleagentmemory.engines.postgres.assertion import ApplicationCredential

    credential = ApplicationCredential.parse(dds.token)
    claims = {"app": credential.app_name, "u": "alice", "k": "local", "g": [], "r": [], "a": {},
              "n": "00"}
    body = json.dumps(claims, separators=(",", ":"), sort_keys=True).encode().hex()
    signature = hmac.new(credential.key, body.encode("ascii"), hashlib.sha256).hexdigest()
    with psycopg.connect(dds.runtime_url) as conn:
        row = conn.execute("SELECT oam_sec.apply_assertion(%s)", [f"{body}.{signature}"]).fetchone()
        assert row == (None,)
        valid = conn.execute("SELECT oam_sec.apply_assertion(%s)",
                             [dds.context("alice").assertion()]).fetchone()
        assert valid == ("alice",)
