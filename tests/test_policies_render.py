"""The shipped Deep Data Security policies (``oam_policies``) and their PostgreSQL renderer.

Most tests are pure: the declarations are data and the renderer is text. The tests at the end use
the ``dds`` environment to check what the rendered SQL does on the real server (how often the
security functions run, which column privileges the runtime role gets, which chunks are visible).
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest
from dds import OWNER
from oam_policies import (
    GLOBAL_MEMORIES,
    OWN_USER_ROWS,
    SHIPPED_POLICIES,
    DataRolePolicy,
    TableGrant,
)
from oam_policies.declarations import CHUNK_PARENT_OWNED, LINK_ENDPOINTS_OWNED
from oam_policies.model import (
    AllOf,
    Always,
    AnyOf,
    EndUserIs,
    Equals,
    ExistsVisible,
    IsNull,
)
from oam_policies.postgres import (
    PostgresTarget,
    render_policy,
    render_predicate,
    render_privileges,
    render_removal,
    render_revoke_all,
)
from oracleagentmemory.engines.identifiers import MANAGED_TABLES
from oracleagentmemory.engines.postgres.deepsec_admin import runtime_role_name

OWNED_RECORD_TABLES = ("thread", "thread_summary", "message", "document", "memory",
                       "record_chunks")
NEVER_UPDATED = {"id", "user_id", "thread_id", "agent_id", "record_type", "record_id",
                 "chunk_no", "actor_type", "actor_id", "source_id", "target_id",
                 "source_type", "target_type", "created_at", "row_seq"}
NEVER_INSERTED = {"created_at", "row_seq", "search_tsv"}
ROLE = "s_store_oam_own_user_rows"
END_USER = f"(SELECT oam_sec.verified_user('{ROLE}'))"


def target(data_role: str = ROLE, columns: dict[str, frozenset[str]] | None = None
           ) -> PostgresTarget:
    """A target like the engine builds: quoted, schema-qualified names of store ``st``."""
    logical = [*MANAGED_TABLES, "registry"]
    return PostgresTarget(
        tables={t: f'"sch"."st_{t}"' for t in logical},
        bare_tables={t: f'"st_{t}"' for t in logical},
        runtime_role='"sch_oam_runtime"',
        data_role=data_role,
        columns=columns,
    )


def grants_on(policy: DataRolePolicy, table: str) -> list[TableGrant]:
    return [g for g in policy.grants if g.table == table]


def only_grant(policy: DataRolePolicy, table: str) -> TableGrant:
    found = grants_on(policy, table)
    assert len(found) == 1, found
    return found[0]


# --- the declarations cover exactly what the issue lists -------------------------------------
def test_shipped_policies_are_the_two_declared() -> None:
    assert SHIPPED_POLICIES == {"own_user_rows": OWN_USER_ROWS, "global_memories": GLOBAL_MEMORIES}


def test_own_rows_covers_every_managed_table_and_the_registry() -> None:
    assert set(OWN_USER_ROWS.tables()) == {*MANAGED_TABLES, "registry"}


@pytest.mark.parametrize("table", [t for t in OWNED_RECORD_TABLES if t != "record_chunks"])
def test_own_rows_reads_and_writes_rows_whose_user_id_is_the_end_user(table: str) -> None:
    grant = only_grant(OWN_USER_ROWS, table)
    assert grant.predicate == EndUserIs("user_id")
    assert grant.select and grant.delete
    assert grant.insert_columns is not None and "user_id" in grant.insert_columns
    assert grant.update_columns is not None


def test_own_rows_covers_only_the_end_users_own_profile() -> None:
    grant = only_grant(OWN_USER_ROWS, "actor_profile")
    assert grant.predicate == AllOf((Equals("actor_type", "user"), EndUserIs("actor_id")))
    assert grant.select and grant.delete
    assert grant.insert_columns is not None and {"actor_type", "actor_id"} <= set(
        grant.insert_columns)


def test_own_rows_links_are_the_users_own_and_writable_only_between_own_memories() -> None:
    read, write = grants_on(OWN_USER_ROWS, "memory_link")
    assert read.predicate == EndUserIs("user_id")
    assert read.select and read.delete
    assert read.insert_columns is None and read.update_columns is None
    assert write.predicate == LINK_ENDPOINTS_OWNED == AllOf((
        EndUserIs("user_id"),
        ExistsVisible("memory", key="id", column="source_id", where=EndUserIs("user_id")),
        ExistsVisible("memory", key="id", column="target_id", where=EndUserIs("user_id")),
    ))
    assert not write.select and not write.delete
    assert write.insert_columns is not None and "user_id" in write.insert_columns
    assert write.update_columns is not None and "user_id" not in write.update_columns


def test_own_rows_chunks_are_written_only_for_the_users_own_records() -> None:
    read, write = grants_on(OWN_USER_ROWS, "record_chunks")
    assert read.predicate == EndUserIs("user_id") and read.select and read.delete
    assert read.insert_columns is None and read.update_columns is None
    assert write.predicate == CHUNK_PARENT_OWNED
    assert isinstance(write.predicate, AllOf) and write.predicate.parts[0] == EndUserIs("user_id")
    assert not write.select and not write.delete
    assert write.insert_columns is not None and write.update_columns == ("embedding",)


@pytest.mark.parametrize("policy", [OWN_USER_ROWS, GLOBAL_MEMORIES])
def test_both_policies_only_read_the_registry(policy: DataRolePolicy) -> None:
    grant = only_grant(policy, "registry")
    assert grant == TableGrant("registry", Always(), select=True)


def test_global_memories_reads_null_user_memories_their_chunks_and_their_links() -> None:
    assert set(GLOBAL_MEMORIES.tables()) == {"registry", "memory", "record_chunks", "memory_link"}
    assert only_grant(GLOBAL_MEMORIES, "memory").predicate == IsNull("user_id")
    chunks = only_grant(GLOBAL_MEMORIES, "record_chunks").predicate
    assert chunks == AllOf((
        AnyOf(tuple(Equals("record_type", t) for t in ("memory", "fact", "guideline",
                                                        "preference"))),
        IsNull("user_id"),
    ))
    assert only_grant(GLOBAL_MEMORIES, "memory_link").predicate == IsNull("user_id")


def test_global_memories_grants_no_write_at_all() -> None:
    for grant in GLOBAL_MEMORIES.grants:
        assert grant.select
        assert (grant.insert_columns, grant.update_columns, grant.delete) == (None, None, False)


# --- column lists ----------------------------------------------------------------------------
@pytest.mark.parametrize("grant", [g for p in SHIPPED_POLICIES.values() for g in p.grants],
                         ids=lambda g: g.table)
def test_column_lists_never_let_ownership_type_or_creation_change(grant: TableGrant) -> None:
    assert not NEVER_UPDATED & set(grant.update_columns or ())
    assert not NEVER_INSERTED & set(grant.insert_columns or ())
    for columns in (grant.insert_columns, grant.update_columns):
        if columns is not None:
            assert columns and len(set(columns)) == len(columns)


# --- rendering -------------------------------------------------------------------------------
CREATE = re.compile(r'^CREATE POLICY "(?P<name>[a-z0-9_]+)" ON (?P<table>\S+) AS PERMISSIVE '
                    r'FOR (?P<op>SELECT|INSERT|UPDATE|DELETE) TO "sch_oam_runtime" (?P<rest>.*)$')
DROP = re.compile(r'^DROP POLICY IF EXISTS "(?P<name>[a-z0-9_]+)" ON (?P<table>\S+)$')


def created(statements: list[str]) -> list[re.Match[str]]:
    return [m for s in statements if (m := CREATE.match(s))]


@pytest.mark.parametrize("policy", [OWN_USER_ROWS, GLOBAL_MEMORIES], ids=lambda p: p.name)
def test_render_enables_rls_and_creates_one_policy_per_operation(policy: DataRolePolicy) -> None:
    statements = render_policy(policy, target())
    enabled = [s for s in statements if s.endswith("ENABLE ROW LEVEL SECURITY")]
    assert enabled == [f'ALTER TABLE "sch"."st_{t}" ENABLE ROW LEVEL SECURITY'
                       for t in policy.tables()]
    operations = [(g.table, op) for g in policy.grants for op, wanted in (
        ("SELECT", g.select), ("INSERT", g.insert_columns is not None),
        ("UPDATE", g.update_columns is not None), ("DELETE", g.delete)) if wanted]
    policies = created(statements)
    assert [(m["table"], m["op"]) for m in policies] == [
        (f'"sch"."st_{t}"', op) for t, op in operations]
    assert len({(m["name"], m["table"]) for m in policies}) == len(policies)
    statement_kinds = {s.split(" ", 1)[0] for s in statements}
    assert statement_kinds == {"ALTER", "CREATE", "GRANT"}


def test_render_clauses_match_the_operation() -> None:
    for match in created(render_policy(OWN_USER_ROWS, target())):
        rest, op = match["rest"], match["op"]
        if op == "INSERT":
            assert rest.startswith("WITH CHECK (") and "USING" not in rest
        elif op == "UPDATE":
            assert rest.startswith("USING (") and " WITH CHECK (" in rest
        else:
            assert rest.startswith("USING (") and "WITH CHECK" not in rest


@pytest.mark.parametrize("policy", [OWN_USER_ROWS, GLOBAL_MEMORIES], ids=lambda p: p.name)
def test_security_functions_are_wrapped_in_select_for_once_per_statement(
    policy: DataRolePolicy,
) -> None:
    for match in created(render_policy(policy, target())):
        text = match["rest"]
        # Every lookup is an uncorrelated subquery naming this policy's data role: an
        # InitPlan, evaluated once per statement.
        calls = re.findall(r"(\(SELECT )?oam_sec\.verified_user\('([a-z0-9_]+)'\)", text)
        assert calls and all(prefix for prefix, _ in calls), calls
        assert {role for _, role in calls} == {ROLE}
        assert "end_user()" not in text and "has_data_role" not in text


def test_own_rows_predicates_compare_with_the_end_user() -> None:
    by_table = {m["table"]: m["rest"] for m in created(render_policy(OWN_USER_ROWS, target()))}
    for table in OWNED_RECORD_TABLES:
        assert f"user_id = {END_USER}" in by_table[f'"sch"."st_{table}"']
        # Comparing with the end user already requires the data role: no separate check.
        assert f"{END_USER} IS NOT NULL" not in by_table[f'"sch"."st_{table}"']
    assert (f"actor_type = 'user' AND actor_id = {END_USER}"
            in by_table['"sch"."st_actor_profile"'])


def test_predicates_without_the_end_user_check_the_data_role() -> None:
    by_table = {m["table"]: m["rest"] for m in created(render_policy(GLOBAL_MEMORIES, target()))}
    memory = by_table['"sch"."st_memory"']
    assert f"user_id IS NULL AND {END_USER} IS NOT NULL" in memory


def test_exists_predicate_correlates_with_the_outer_table() -> None:
    rendered = render_predicate(LINK_ENDPOINTS_OWNED, target(), "memory_link")
    assert rendered == (
        f'(user_id = {END_USER} AND '
        'EXISTS (SELECT 1 FROM "sch"."st_memory" x WHERE x.id = "st_memory_link".source_id '
        f"AND x.user_id = {END_USER}) AND "
        'EXISTS (SELECT 1 FROM "sch"."st_memory" x WHERE x.id = "st_memory_link".target_id '
        f"AND x.user_id = {END_USER}))"
    )


def test_privileges_are_column_listed_for_insert_and_update() -> None:
    statements = render_privileges([OWN_USER_ROWS], target())
    assert not [s for s in statements if re.match(r"GRANT (INSERT|UPDATE) ON ", s)]
    memory_update = 'GRANT UPDATE (content, event_ts, expires_at, metadata, status, updated_at) ' \
                    'ON "sch"."st_memory" TO "sch_oam_runtime"'
    assert memory_update in statements
    memory_insert = [s for s in statements if s.startswith("GRANT INSERT (")
                     and '"sch"."st_memory" ' in s]
    assert memory_insert == [
        "GRANT INSERT (agent_id, content, event_ts, expires_at, id, metadata, record_type, "
        'status, thread_id, user_id) ON "sch"."st_memory" TO "sch_oam_runtime"']
    assert 'GRANT SELECT ON "sch"."st_registry" TO "sch_oam_runtime"' in statements
    assert not [s for s in statements if "st_registry" in s and "SELECT" not in s]


def test_privileges_of_several_policies_are_their_union() -> None:
    both = set(render_privileges([OWN_USER_ROWS, GLOBAL_MEMORIES], target()))
    assert both == set(render_privileges([OWN_USER_ROWS], target())) | set(
        render_privileges([GLOBAL_MEMORIES], target()))
    assert render_privileges([GLOBAL_MEMORIES], target()) == [
        f'GRANT SELECT ON "sch"."st_{t}" TO "sch_oam_runtime"'
        for t in sorted(("memory", "memory_link", "record_chunks", "registry"))]


def test_privileges_name_only_existing_columns_when_the_target_lists_them() -> None:
    columns = {t: frozenset({"record_type", "record_id", "chunk_no", "chunk_text", "thread_id",
                             "user_id", "agent_id"}) if t == "record_chunks" else frozenset(
        {"id", "content", "metadata", "user_id"}) for t in MANAGED_TABLES}
    statements = render_privileges([OWN_USER_ROWS], target(columns=columns))
    chunk_grants = [s for s in statements if '"st_record_chunks"' in s]
    assert ('GRANT INSERT (agent_id, chunk_no, chunk_text, record_id, record_type, thread_id, '
            'user_id) ON "sch"."st_record_chunks" TO "sch_oam_runtime"') in chunk_grants
    assert not [s for s in chunk_grants if "UPDATE" in s or "embedding" in s]
    assert ('GRANT UPDATE (content, metadata) ON "sch"."st_memory" TO "sch_oam_runtime"'
            in statements)


def test_render_removal_drops_exactly_what_render_policy_creates() -> None:
    for policy in (OWN_USER_ROWS, GLOBAL_MEMORIES):
        made = {(m["name"], m["table"]) for m in created(render_policy(policy, target()))}
        dropped = [DROP.match(s) for s in render_removal(policy, target())]
        assert all(dropped)
        assert {(m["name"], m["table"]) for m in dropped if m} == made
        assert len(dropped) == len(made)


def test_policy_names_of_two_data_roles_never_collide() -> None:
    own = {(m["name"], m["table"]) for m in created(render_policy(OWN_USER_ROWS, target(ROLE)))}
    other_role = "s_store_oam_global_memories"
    glob = {(m["name"], m["table"]) for m in created(render_policy(GLOBAL_MEMORIES,
                                                                   target(other_role)))}
    assert not own & glob
    long_role = "r" * 63
    names = [m["name"] for m in created(render_policy(OWN_USER_ROWS, target(long_role)))]
    assert all(len(n) <= 63 for n in names)


def test_render_revoke_all() -> None:
    assert render_revoke_all(["memory", "message"], target()) == [
        'REVOKE ALL ON "sch"."st_memory" FROM "sch_oam_runtime"',
        'REVOKE ALL ON "sch"."st_message" FROM "sch_oam_runtime"',
    ]


# --- invalid names -----------------------------------------------------------------------------
@pytest.mark.parametrize("role", ["Upper", "1role", "role-x", "r'); DROP TABLE x; --", "",
                                  "r" * 64])
def test_invalid_data_role_names_are_rejected(role: str) -> None:
    with pytest.raises(ValueError, match="invalid data role"):
        render_policy(GLOBAL_MEMORIES, target(role))


@pytest.mark.parametrize("grant", [
    TableGrant("memory", EndUserIs("user id")),
    TableGrant("memory", IsNull("user_id OR true")),
    TableGrant("memory", Equals("Status", "valid")),
    TableGrant("memory", ExistsVisible("memory", key="id;", column="id")),
    TableGrant("memory", EndUserIs("user_id"), insert_columns=("content); DROP TABLE x; --",)),
    TableGrant("memory", EndUserIs("user_id"), update_columns=("Content",)),
], ids=["space", "injection", "upper", "semicolon", "insert-column", "update-column"])
def test_invalid_column_names_are_rejected(grant: TableGrant) -> None:
    with pytest.raises(ValueError, match="invalid column"):
        render_policy(DataRolePolicy("p", "bad", (grant,)), target())


def test_invalid_constant_values_are_rejected() -> None:
    grant = TableGrant("actor_profile", Equals("actor_type", "user' OR '1'='1"))
    with pytest.raises(ValueError, match="invalid value"):
        render_policy(DataRolePolicy("p", "bad", (grant,)), target())


def test_predicates_that_cannot_be_rendered_are_type_errors() -> None:
    nested = ExistsVisible("memory", key="id", column="source_id",
                           where=AnyOf((IsNull("user_id"), EndUserIs("user_id"))))
    with pytest.raises(TypeError, match="cannot be used inside a subquery"):
        render_predicate(nested, target(), "memory_link")
    with pytest.raises(TypeError, match="unknown predicate"):
        render_predicate("user_id = 1", target(), "memory")  # type: ignore[arg-type]


# --- on the real server ------------------------------------------------------------------------
def _runtime_transaction_plan(dds: Any, sql: str, user: str = "alice") -> list[str]:
    with psycopg.connect(dds.runtime_url) as conn, conn.transaction():
        conn.execute("SELECT oam_sec.apply_assertion(%s)", [dds.context(user).assertion()])
        return [r[0] for r in conn.execute(f"EXPLAIN (costs off) {sql}").fetchall()]


def test_rls_functions_run_as_initplans_once_per_statement(dds: Any) -> None:
    store_id = dds.new_store()
    plan = _runtime_transaction_plan(dds, f"SELECT * FROM {OWNER}.{store_id}_memory")
    assert any("InitPlan" in line for line in plan), plan
    filters = [line for line in plan if "Filter:" in line]
    assert filters and all("InitPlan" in line for line in filters), plan
    assert not [line for line in plan if "end_user()" in line or "has_data_role" in line], plan
    assert not [line for line in plan if "SubPlan" in line], plan


def test_runtime_role_column_privileges_mirror_the_declarations(dds: Any) -> None:
    store_id = dds.new_store()
    role = runtime_role_name(OWNER)
    checks = [
        ("memory", "content", "UPDATE", True), ("memory", "user_id", "UPDATE", False),
        ("memory", "record_type", "UPDATE", False), ("memory", "id", "UPDATE", False),
        ("memory", "created_at", "UPDATE", False), ("memory", "row_seq", "UPDATE", False),
        ("memory", "user_id", "INSERT", True), ("memory", "created_at", "INSERT", False),
        ("message", "seq_no", "INSERT", True), ("message", "seq_no", "UPDATE", False),
        ("actor_profile", "actor_id", "UPDATE", False),
        ("record_chunks", "embedding", "UPDATE", True),
        ("record_chunks", "user_id", "UPDATE", False),
        ("memory_link", "source_id", "UPDATE", False),
    ]
    with psycopg.connect(dds.secadmin_url) as conn:
        for table, column, privilege, expected in checks:
            row = conn.execute("SELECT has_column_privilege(%s, %s, %s, %s)",
                               [role, f"{OWNER}.{store_id}_{table}", column, privilege]).fetchone()
            assert row == (expected,), (table, column, privilege)


def test_declared_columns_exist_in_a_store_with_vectors(dds: Any) -> None:
    store_id = dds.new_store(vector_dim=3)
    with psycopg.connect(dds.secadmin_url) as conn:
        for policy in SHIPPED_POLICIES.values():
            for grant in policy.grants:
                if grant.table == "registry":
                    continue
                wanted = set(grant.insert_columns or ()) | set(grant.update_columns or ())
                rows = conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                    "AND table_name = %s", [OWNER, f"{store_id}_{grant.table}"]).fetchall()
                assert wanted <= {r[0] for r in rows}, (grant.table, wanted)


def test_global_chunks_are_only_chunks_of_global_memories(dds: Any) -> None:
    """A message that shares a global memory's id does not borrow its visibility."""
    store_id = dds.new_store()
    with dds.owner_store(store_id) as owner:
        owner.add(["global one", "global two"], "memory", user_ids=None, record_ids=["g1", "g2"])
        owner.add(["unscoped message"], "message", user_ids=None, record_ids="g1",
                  thread_ids="tx")
    with dds.runtime_store(store_id, "bob") as bob:
        bob.add(["bob private message"], "message", record_ids="g2", thread_ids="t1")
    with psycopg.connect(dds.runtime_url) as conn, conn.transaction():
        conn.execute("SELECT oam_sec.apply_assertion(%s)", [dds.context("alice").assertion()])
        rows = conn.execute(f"SELECT record_type, record_id, chunk_text FROM "
                            f"{OWNER}.{store_id}_record_chunks ORDER BY record_id").fetchall()
    assert rows == [("memory", "g1", "global one"), ("memory", "g2", "global two")]
