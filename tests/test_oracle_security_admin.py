"""The Oracle security admin's statements (``engines/oracle/admin_*.py``), offline.

No Oracle database is reachable here. Every statement the admin issues is pinned by a reviewed
golden file under ``tests/golden/oracle_admin/`` (rewrite with ``OAM_UPDATE_GOLDEN=1`` and
review the diff). Dictionary queries are parsed with sqlglot's Oracle dialect and their bind
names checked against their bind mappings; sqlglot does not know the DDL (Deep Data Security
statements, ``CREATE USER``, system-privilege grants: it falls back to an unparsed command), so
each DDL statement must match the strict pattern of its documented grammar. The order of each
sequence (mandatory data grants before any grant; grants dropped before their role) is what
keeps a sequence cut short by Oracle's implicit commits safe, and is asserted here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oam_policies import GLOBAL_MEMORIES, OWN_USER_ROWS, SHIPPED_POLICIES, DataRolePolicy
from oam_policies.model import Always, TableGrant
from oam_policies.oracle import MAX_IDENTIFIER_BYTES, OracleTarget, grant_name
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE
from oracleagentmemory.engines.oracle import admin_ddl, admin_sql, security_admin
from oracleagentmemory.engines.oracle.admin_names import (
    GROUP_ROLE_PREFIX,
    group_data_role,
    group_mapping,
    principal_of_mapping,
    store_data_role,
)
from oracleagentmemory.engines.oracle.context import local_end_user_name
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from oracleagentmemory.engines.oracle.security_admin import (
    NO_APPLICATIONS,
    NO_IDENTITY_PROVIDERS,
    OracleSecurityAdmin,
)
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedFeatureError,
)
from sqlglot import exp

GOLDEN = Path(__file__).parent / "golden" / "oracle_admin"
TEST_FILE = "tests/test_oracle_security_admin.py"
GROUP = "oci_iam:memory-users"


def objects(store: str | None = "st", owner: str = "oam_owner") -> OracleObjects:
    return OracleObjects.of(derive_store_names(memory_store_id=store, table_name_prefix=None,
                                               schema_owner=owner))


def target(role: str, columns: dict[str, frozenset[str]] | None = None) -> OracleTarget:
    """The target the admin itself renders for store ``st`` (so the golden files pin what it
    runs)."""
    return security_admin._target(objects(), role, columns)


def without_vectors() -> dict[str, frozenset[str]]:
    """The columns of a store created without vector storage: every declared column but
    ``embedding``."""
    found: dict[str, set[str]] = {t: set() for t in (*MANAGED_TABLES, "registry")}
    for policy in SHIPPED_POLICIES.values():
        for grant in policy.grants:
            found[grant.table].update(grant.insert_columns or ())
            found[grant.table].update(grant.update_columns or ())
    return {t: frozenset(c - {"embedding"}) for t, c in found.items()}


LOCAL_ROLE = store_data_role(objects(), OWN_USER_ROWS.name)
GLOBAL_ROLE = store_data_role(objects(), GLOBAL_MEMORIES.name)
GROUP_ROLE = group_data_role(group_mapping(GROUP))


# --- the dictionary queries ----------------------------------------------------------------------
def queries() -> list[Statement]:
    o = objects()
    roles = [LOCAL_ROLE, GLOBAL_ROLE]
    return [admin_sql.end_user_probe(), admin_sql.session_user(),
            admin_sql.session_privileges(), admin_sql.identity_provider_type(),
            admin_sql.existing_tables(o, own=True), admin_sql.existing_tables(o, own=False),
            admin_sql.table_columns(o, own=True), admin_sql.table_columns(o, own=False),
            admin_sql.store_data_grants(o), admin_sql.data_grants_named_like(f"{GROUP_ROLE}_"),
            admin_sql.data_roles(roles), admin_sql.group_data_roles(),
            admin_sql.end_user_role_grants(roles),
            admin_sql.end_user_holds_role(LOCAL_ROLE, "ALICE"),
            admin_sql.end_user_count("ALICE"), admin_sql.end_user_names(),
            admin_sql.user_exists("OAM_RUNTIME"), admin_sql.runtime_logins(),
            admin_sql.extra_system_privileges(), admin_sql.granted_roles(),
            admin_sql.object_privileges(), admin_sql.owned_objects(),
            admin_sql.login_grants("OAM_RUNTIME")]


def test_dictionary_queries_match_the_reviewed_golden_file() -> None:
    rendered = [f"{s.sql}\n-- binds: {sorted(s.binds.items())!r}" for s in queries()]
    assert_matches_golden(GOLDEN / "dictionary_queries.sql", golden_text(
        "Oracle security admin dictionary queries", "dictionary_queries",
        "oracleagentmemory.engines.oracle.admin_sql", TEST_FILE, rendered))


BIND = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


@pytest.mark.parametrize("statement", queries(), ids=lambda s: s.sql[:60])
def test_each_dictionary_query_parses_and_binds_exactly_its_values(statement: Statement) -> None:
    text, binds = statement.sql, statement.binds
    parsed = sqlglot.parse_one(text, read="oracle")
    assert isinstance(parsed, (exp.Select, exp.Union))
    assert set(BIND.findall(text)) == set(binds)
    for value in binds.values():  # every value is bound, none is written into the text
        assert isinstance(value, str)
        assert f"'{value}'" not in text


def test_the_dictionary_queries_read_only_the_documented_views() -> None:
    views = set()
    for statement in queries():
        for table in sqlglot.parse_one(statement.sql, read="oracle").find_all(exp.Table):
            views.add(table.name.lower())
    assert views == {"dual", "session_privs", "v$parameter", "all_tables", "dba_tables",
                     "all_tab_columns", "dba_tab_columns", "all_data_grants", "dba_data_roles",
                     "dba_data_role_grants", "dba_end_users", "dba_users", "dba_sys_privs",
                     "dba_role_privs", "dba_tab_privs", "dba_objects"}


def test_the_owner_reads_its_own_tables_and_an_administrator_the_dba_views() -> None:
    o = objects()
    assert "FROM all_tables" in admin_sql.existing_tables(o, own=True).sql
    assert "FROM dba_tables" in admin_sql.existing_tables(o, own=False).sql
    binds = admin_sql.existing_tables(o, own=False).binds
    assert binds["owner"] == "OAM_OWNER"
    assert sorted(v for k, v in binds.items() if k != "owner") == sorted(
        [f"ST_{t.upper()}" for t in MANAGED_TABLES] + [REGISTRY_TABLE.upper()])


def test_like_patterns_escape_underscores() -> None:
    pattern = admin_sql.data_grants_named_like("OAM_GROUP_X_").binds["pattern"]
    assert pattern == "OAM\\_GROUP\\_X\\_%"
    assert admin_sql.like_prefix("A%B") == "A\\%B%"


# --- the DDL -------------------------------------------------------------------------------------
Q = r'"[A-Z][A-Z0-9_$#]*"'
QQ = rf"{Q}\.{Q}"
DDL_GRAMMAR = [re.compile(p) for p in (
    rf"SET USE DATA GRANTS ONLY ON {QQ} ENABLED",
    rf"CREATE DATA ROLE {Q}( MAPPED TO '(IAM_OAUTH_GROUP|AZURE_ROLE)=[^'\x00-\x1f]+')?",
    rf"CREATE OR REPLACE DATA GRANT {QQ} AS (SELECT|INSERT \(|UPDATE \(|DELETE)[^;]* ON {QQ}"
    rf"( WHERE .+)? TO {Q}",
    rf"DROP DATA GRANT IF EXISTS {QQ}",
    rf"DROP DATA ROLE IF EXISTS {Q}",
    rf"CREATE END USER IF NOT EXISTS {Q}",
    rf"DROP END USER IF EXISTS {Q}",
    rf"GRANT DATA ROLE {Q} TO {Q}",
    rf"REVOKE DATA ROLE IF EXISTS {Q} FROM {Q}",
    rf'CREATE USER {Q} IDENTIFIED BY "[^"\s\'\\`]+"',
    rf"GRANT CREATE SESSION, CREATE END USER SECURITY CONTEXT TO {Q}",
    rf"DROP USER {Q}",
)]


def ddl_scenarios() -> dict[str, list[str]]:
    return {
        "install_policies": [
            *admin_ddl.install_policy(OWN_USER_ROWS, target(LOCAL_ROLE),
                                      admin_ddl.create_local_role(LOCAL_ROLE)),
            *admin_ddl.install_policy(GLOBAL_MEMORIES, target(GLOBAL_ROLE),
                                      admin_ddl.create_local_role(GLOBAL_ROLE))],
        "reinstall_without_vectors": admin_ddl.install_policy(
            OWN_USER_ROWS, target(LOCAL_ROLE, without_vectors()), None),
        "grant_to_group": [
            *admin_ddl.install_policy(OWN_USER_ROWS, target(GROUP_ROLE),
                                      admin_ddl.create_group_role(GROUP_ROLE,
                                                                  group_mapping(GROUP))),
            *admin_ddl.install_policy(GLOBAL_MEMORIES, target(GROUP_ROLE), None)],
        "revoke_from_group": [
            *admin_ddl.remove_policy(GLOBAL_MEMORIES, target(GROUP_ROLE), drop_role=False),
            admin_ddl.drop_data_role(GROUP_ROLE)],
        "remove_policy": admin_ddl.remove_policy(OWN_USER_ROWS, target(LOCAL_ROLE),
                                                 drop_role=True),
        "end_users_and_grants": [
            admin_ddl.create_end_user("alice"), admin_ddl.grant_role(LOCAL_ROLE, "alice"),
            admin_ddl.revoke_role(LOCAL_ROLE, "alice"), admin_ddl.drop_end_user("alice")],
        "runtime_login": [*admin_ddl.create_runtime_login("oam_runtime", "Example-pw_2026"),
                          admin_ddl.drop_runtime_login("oam_runtime")],
    }


@pytest.mark.parametrize("name", sorted(ddl_scenarios()))
def test_ddl_matches_the_reviewed_golden_file(name: str) -> None:
    assert_matches_golden(GOLDEN / f"{name}.sql", golden_text(
        "Oracle security admin DDL", name, "oracleagentmemory.engines.oracle.admin_ddl",
        TEST_FILE, ddl_scenarios()[name]))


@pytest.mark.parametrize("name", sorted(ddl_scenarios()))
def test_every_ddl_statement_matches_its_documented_grammar(name: str) -> None:
    for statement in ddl_scenarios()[name]:
        assert any(p.fullmatch(statement) for p in DDL_GRAMMAR), statement
        assert ";" not in statement and "\n" not in statement


def _kinds(statements: list[str]) -> list[str]:
    return [next(k for k in ("SET USE", "CREATE DATA ROLE", "CREATE OR REPLACE DATA GRANT",
                             "DROP DATA GRANT", "DROP DATA ROLE") if s.startswith(k))
            for s in statements]


def test_installing_enables_mandatory_data_grants_before_the_role_and_any_grant() -> None:
    for name in ("install_policies", "grant_to_group"):
        statements = ddl_scenarios()[name]
        first_half = statements[:len(admin_ddl.install_policy(
            OWN_USER_ROWS, target(LOCAL_ROLE), admin_ddl.create_local_role(LOCAL_ROLE)))]
        kinds = _kinds(first_half)
        tables = len(OWN_USER_ROWS.tables())
        assert kinds[:tables] == ["SET USE"] * tables
        assert kinds[tables] == "CREATE DATA ROLE"
        assert set(kinds[tables + 1:]) <= {"CREATE OR REPLACE DATA GRANT", "DROP DATA GRANT"}
    covered = {s.split(" ON ")[1].split(" ")[0] for s in ddl_scenarios()["install_policies"]
               if s.startswith("SET USE")}
    assert covered == {target(LOCAL_ROLE).qualified(t) for t in (*MANAGED_TABLES, "registry")}


def test_removing_drops_grants_before_the_role_and_never_disables_mandatory_grants() -> None:
    kinds = _kinds(ddl_scenarios()["remove_policy"])
    assert kinds == ["DROP DATA GRANT"] * len(OWN_USER_ROWS.grants) + ["DROP DATA ROLE"]
    for statements in ddl_scenarios().values():
        assert not any("DISABLED" in s for s in statements)


def test_a_grant_left_without_columns_is_dropped_rather_than_kept() -> None:
    policy = DataRolePolicy(name="vectors_only", description="", grants=(
        TableGrant("record_chunks", Always(), select=False, update_columns=("embedding",)),))
    statements = admin_ddl.policy_grants(policy, target(LOCAL_ROLE, without_vectors()))
    assert len(statements) == 1 and statements[0].startswith("DROP DATA GRANT IF EXISTS ")
    kept = admin_ddl.policy_grants(policy, target(LOCAL_ROLE))  # positive control
    assert kept[0].startswith("CREATE OR REPLACE DATA GRANT ") and '"EMBEDDING"' in kept[0]


def test_a_reinstall_over_a_store_without_vectors_names_no_embedding_column() -> None:
    statements = ddl_scenarios()["reinstall_without_vectors"]
    assert not any('"EMBEDDING"' in s for s in statements)
    assert "CREATE DATA ROLE" not in " ".join(statements)  # the role exists: not re-created
    with_vectors = admin_ddl.install_policy(OWN_USER_ROWS, target(LOCAL_ROLE), None)
    assert any('"EMBEDDING"' in s for s in with_vectors)  # positive control
    assert len(statements) == len(with_vectors)


def test_a_group_role_is_mapped_and_carries_its_own_grants() -> None:
    statements = ddl_scenarios()["grant_to_group"]
    assert f"CREATE DATA ROLE \"{GROUP_ROLE}\" MAPPED TO 'IAM_OAUTH_GROUP=memory-users'" \
        in statements
    grants = [s for s in statements if s.startswith("CREATE OR REPLACE DATA GRANT")]
    assert grants and all(s.endswith(f'TO "{GROUP_ROLE}"') for s in grants)
    assert not any("GRANT DATA ROLE" in s for s in statements)  # a mapped role is not granted


def test_the_password_is_validated_and_written_in_one_place() -> None:
    assert admin_ddl.quoted_password("Str0ng#pass!") == '"Str0ng#pass!"'
    for bad in ('pa"ssword1', "pa'ssword1", "pass word1", "back\\slash1", "tick`pass1",
                "short1", "x" * 1025, "pässwörd12", "line\nbreak1"):
        with pytest.raises(InvalidArgumentError):
            admin_ddl.create_runtime_login("oam_runtime", bad)
    with pytest.raises(InvalidArgumentTypeError):
        admin_ddl.quoted_password(12345678)


@pytest.mark.parametrize("bad", ["alice smith", 'al"ice', "1alice", "alice;drop", "", "a-b",
                                 "x" * 129])
def test_names_written_into_ddl_are_validated(bad: str) -> None:
    for build in (admin_ddl.create_end_user, admin_ddl.drop_end_user,
                  admin_ddl.drop_runtime_login):
        with pytest.raises(InvalidArgumentError):
            build(bad)
    with pytest.raises(InvalidArgumentError):
        admin_ddl.grant_role(LOCAL_ROLE, bad)
    with pytest.raises(InvalidArgumentError):
        admin_ddl.create_runtime_login(bad, "Example-pw_2026")


def test_end_users_are_created_with_the_spelling_the_context_returns() -> None:
    statement = admin_ddl.create_end_user("alice")
    assert statement == 'CREATE END USER IF NOT EXISTS "ALICE"'
    assert statement.split('"')[1] == local_end_user_name("alice")


# --- names ---------------------------------------------------------------------------------------
def test_store_data_roles_are_distinct_valid_and_deterministic() -> None:
    assert LOCAL_ROLE.startswith("OAM_OWNER_ST_OAM_OWN_USER_ROWS_")
    assert store_data_role(objects(), "own_user_rows") == LOCAL_ROLE
    assert LOCAL_ROLE != GLOBAL_ROLE
    # owner and store key may contain "_": the hash keeps A_B/C apart from A/B_C
    assert store_data_role(objects("c", "a_b"), "own_user_rows") != \
        store_data_role(objects("b_c", "a"), "own_user_rows")
    assert store_data_role(objects(None), "own_user_rows").startswith(
        "OAM_OWNER_DEFAULT_OAM_OWN_USER_ROWS_")
    long_role = store_data_role(objects("s" * 16, "o" * 128), "global_memories")
    assert len(long_role.encode()) <= MAX_IDENTIFIER_BYTES
    assert re.fullmatch(r"[A-Z][A-Z0-9_]*", long_role)
    assert len(grant_name(long_role, "global_memories", "S" * 16 + "_RECORD_CHUNKS", 3)) \
        <= MAX_IDENTIFIER_BYTES


def test_group_principals_map_to_the_documented_claims_and_back() -> None:
    assert group_mapping("oci_iam:memory-users") == "IAM_OAUTH_GROUP=memory-users"
    assert group_mapping("azure_ad:Memory.Reader") == "AZURE_ROLE=Memory.Reader"
    for principal in ("oci_iam:memory-users", "azure_ad:Memory.Reader"):
        assert principal_of_mapping(group_mapping(principal)) == principal
    assert principal_of_mapping("AZURE_CLIENT_ID=abc") is None
    for bad in ("memory-users", "okta:memory-users", "oci_iam:", "oci_iam:it's",
                "oci_iam:a\x00b", "oci_iam:" + "g" * 1010):
        with pytest.raises(InvalidArgumentError):
            group_mapping(bad)
    role = group_data_role(group_mapping("oci_iam:memory-users"))
    assert role.startswith(f"{GROUP_ROLE_PREFIX}MEMORY_USERS_")
    assert role != group_data_role(group_mapping("azure_ad:memory-users"))
    assert role != group_data_role(group_mapping("oci_iam:memory_users"))


# --- what Oracle does not have -------------------------------------------------------------------
def unbound_admin() -> OracleSecurityAdmin:
    """An admin bound to no connection: the methods below never reach the database."""
    return OracleSecurityAdmin.__new__(OracleSecurityAdmin)


@pytest.mark.parametrize(("method", "args"), [
    ("add_identity_provider", ("corp", "https://idp", "aud", {"keys": []}, "sub", "groups")),
    ("refresh_identity_provider_keys", ("corp", {"keys": []})),
    ("identity_providers", ()), ("remove_identity_provider", ("corp",)),
    ("create_application", ("app", "oam_runtime")), ("rotate_application_key", ("app",)),
    ("drop_application", ("app",)), ("applications", ()), ("application", ("app",)),
    ("bind_application", ("app", [], [])), ("unbind_application", ("app", [], [])),
    ("set_token_mode", ("app", True)),
])
def test_what_oracle_does_not_have_raises_the_typed_error_saying_what_to_do(
        method: str, args: tuple[Any, ...]) -> None:
    with pytest.raises(UnsupportedFeatureError) as raised:
        getattr(unbound_admin(), method)(*args)
    assert "deploy/oracle/README.md" in str(raised.value)
    assert str(raised.value) in (NO_APPLICATIONS, NO_IDENTITY_PROVIDERS)
