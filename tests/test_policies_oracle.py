"""The Oracle Deep Data Security renderer (``oam_policies.oracle``), without an Oracle database.

Every statement the renderer emits for the shipped policies is pinned by a reviewed golden file
under ``tests/golden/oracle/``; a change to the rendered text fails here until the golden file is
reviewed and rewritten with::

    OAM_UPDATE_GOLDEN=1 python -m pytest tests/test_policies_oracle.py

Each statement is also checked against the grammar of the Oracle Deep Data Security guide (a
strict pattern per statement kind), and every rendered predicate is parsed with sqlglot's Oracle
dialect as ``SELECT 1 FROM owner.table WHERE <predicate>``. sqlglot does not know the Deep Data
Security DDL itself (it falls back to an unparsed command), so the DDL is checked by pattern.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oam_policies import GLOBAL_MEMORIES, OWN_USER_ROWS, SHIPPED_POLICIES, DataRolePolicy
from oam_policies.model import (
    AllOf,
    Always,
    AnyOf,
    EndUserIs,
    Equals,
    ExistsVisible,
    IsNull,
    Predicate,
    TableGrant,
)
from oam_policies.oracle import (
    MAX_IDENTIFIER_BYTES,
    OracleTarget,
    grant_name,
    quote_identifier,
    render_create_data_role,
    render_create_end_user,
    render_drop_data_role,
    render_drop_end_user,
    render_grant_data_role,
    render_policy,
    render_predicate,
    render_removal,
    render_revoke_data_role,
)
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE
from sqlglot import exp
from sqlglot.errors import SqlglotError

GOLDEN = Path(__file__).parent / "golden" / "oracle"
OWNER = "oam_owner"
STORE = "st"
MAPPING = "IAM_OAUTH_GROUP=memory-users"


def role_of(policy: DataRolePolicy) -> str:
    return f"{STORE}_oam_{policy.name}"


def target(data_role: str = "st_oam_own_user_rows",
           columns: dict[str, frozenset[str]] | None = None) -> OracleTarget:
    """A sample store ``st`` in schema ``oam_owner``, as the Oracle engine would name it."""
    tables = {t: f"{STORE}_{t}" for t in MANAGED_TABLES}
    tables["registry"] = REGISTRY_TABLE
    return OracleTarget(owner=OWNER, tables=tables, data_role=data_role, columns=columns)


# --- golden files ------------------------------------------------------------------------------
def scenario_shipped_policies() -> list[str]:
    statements: list[str] = []
    for policy in SHIPPED_POLICIES.values():
        statements.append(render_create_data_role(role_of(policy)))
        statements.extend(render_policy(policy, target(role_of(policy))))
    return statements


def scenario_removal() -> list[str]:
    statements: list[str] = []
    for policy in SHIPPED_POLICIES.values():
        statements.extend(render_removal(policy, target(role_of(policy))))
        statements.append(render_drop_data_role(role_of(policy)))
    return statements


def scenario_role_mapping() -> list[str]:
    mapped = f"{STORE}_oam_group_memory_users"
    statements = [render_create_data_role(mapped, MAPPING)]
    for policy in SHIPPED_POLICIES.values():
        statements.extend(render_policy(policy, target(mapped)))
    for policy in SHIPPED_POLICIES.values():
        statements.extend(render_removal(policy, target(mapped)))
    statements.append(render_drop_data_role(mapped))
    return statements


def scenario_end_users() -> list[str]:
    users = ["alice", "bob"]
    statements = [render_create_end_user(u) for u in users]
    statements += [render_grant_data_role(role_of(p), users) for p in SHIPPED_POLICIES.values()]
    statements += [render_revoke_data_role(role_of(p), ["bob"]) for p in SHIPPED_POLICIES.values()]
    statements += [render_drop_end_user(u) for u in users]
    return statements


SCENARIOS = {
    "shipped_policies": scenario_shipped_policies,
    "removal": scenario_removal,
    "role_mapping": scenario_role_mapping,
    "end_users": scenario_end_users,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_rendered_ddl_matches_the_reviewed_golden_file(name: str) -> None:
    assert_matches_golden(GOLDEN / f"{name}.sql", golden_text(
        "Oracle Deep Data Security DDL", name, "oam_policies.oracle",
        "tests/test_policies_oracle.py", SCENARIOS[name]()))


def test_rendering_is_deterministic() -> None:
    for render in SCENARIOS.values():
        assert render() == render()


# --- grammar of the Deep Data Security statements ----------------------------------------------
IDENT = r'"[A-Z][A-Z0-9_$#]{0,127}"'
QUALIFIED = rf"{IDENT}\.{IDENT}"
COLUMNS = rf"\({IDENT}(?:, {IDENT})*\)"
PRIVILEGES = rf"(?:SELECT)?(?:(?:, )?INSERT {COLUMNS})?(?:(?:, )?UPDATE {COLUMNS})?" \
             r"(?:(?:, )?DELETE)?"
GRANT = re.compile(rf"CREATE OR REPLACE DATA GRANT (?P<name>{QUALIFIED}) AS "
                   rf"(?P<privileges>{PRIVILEGES}) ON (?P<table>{QUALIFIED})"
                   rf"(?: WHERE (?P<predicate>.+))? TO (?P<role>{IDENT})")
GRAMMAR = [
    GRANT,
    re.compile(rf"CREATE DATA ROLE {IDENT}(?: MAPPED TO '(?:IAM_OAUTH_GROUP|AZURE_ROLE|AZURE_APP"
               r"|AZURE_CLIENT_ID)=[^'\x00-\x1f]+')?"),
    re.compile(rf"DROP DATA ROLE IF EXISTS {IDENT}"),
    re.compile(rf"DROP DATA GRANT IF EXISTS {QUALIFIED}"),
    re.compile(rf"SET USE DATA GRANTS ONLY ON {QUALIFIED} ENABLED"),
    re.compile(rf"CREATE END USER IF NOT EXISTS {IDENT}"),
    re.compile(rf"DROP END USER IF EXISTS {IDENT}"),
    re.compile(rf"GRANT DATA ROLE {IDENT} TO {IDENT}(?:, {IDENT})*"),
    re.compile(rf"REVOKE DATA ROLE IF EXISTS {IDENT} FROM {IDENT}(?:, {IDENT})*"),
]


def all_statements() -> list[str]:
    return [s for render in SCENARIOS.values() for s in render()]


def test_every_statement_follows_the_documented_grammar() -> None:
    statements = all_statements()
    assert len(statements) > 40
    for statement in statements:
        assert any(g.fullmatch(statement) for g in GRAMMAR), statement
        assert ";" not in statement and "--" not in statement, statement


def test_every_grant_has_privileges_and_every_protected_table_is_mandatory() -> None:
    for policy in SHIPPED_POLICIES.values():
        statements = render_policy(policy, target(role_of(policy)))
        grants = [m for s in statements if (m := GRANT.fullmatch(s))]
        assert len(grants) == len(policy.grants)
        assert all(m["privileges"] for m in grants)
        assert {m["table"] for m in grants} == {target().qualified(t) for t in policy.tables()}
        mandatory = [s for s in statements if s.startswith("SET USE DATA GRANTS ONLY")]
        assert mandatory == [f"SET USE DATA GRANTS ONLY ON {target().qualified(t)} ENABLED"
                             for t in policy.tables()]
        assert statements[:len(mandatory)] == mandatory, "enforcement comes before any grant"


# --- predicates parse (sqlglot, Oracle dialect) ------------------------------------------------
def parse_predicate(table_sql: str, predicate: str) -> exp.Expression:
    """Parse ``predicate`` as the WHERE clause of a query on ``table_sql``; raise if malformed."""
    tree = sqlglot.parse_one(f"SELECT 1 FROM {table_sql} WHERE {predicate}", read="oracle")
    assert isinstance(tree, exp.Select) and tree.args.get("where") is not None, tree
    return tree


def rendered_predicates() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for statement in all_statements():
        match = GRANT.fullmatch(statement)
        if match and match["predicate"]:
            found.append((match["table"], match["predicate"]))
    return found


def test_every_rendered_predicate_parses_as_oracle_sql() -> None:
    predicates = rendered_predicates()
    assert len(predicates) >= 2 * (len(OWN_USER_ROWS.grants) + len(GLOBAL_MEMORIES.grants) - 2)
    for table_sql, predicate in predicates:
        parse_predicate(table_sql, predicate)


@pytest.mark.parametrize("broken", [
    '("USER_ID" = ORA_END_USER_CONTEXT.username',
    '"USER_ID" = ',
    '"RECORD_TYPE" = \'it\'s\'',
    '"USER_ID" IS NULL AND',
    '"A" = \'x\' OR OR "B" IS NULL',
    'EXISTS (SELECT 1 FROM "OAM_OWNER"."ST_MEMORY" "T" WHERE)',
])
def test_a_malformed_predicate_fails_to_parse(broken: str) -> None:
    """Positive control: the parse check above can fail."""
    with pytest.raises(SqlglotError):
        parse_predicate('"OAM_OWNER"."ST_MEMORY"', broken)


def test_exists_subqueries_read_the_alias_and_correlate_with_the_granted_table() -> None:
    checked = 0
    for table_sql, predicate in rendered_predicates():
        outer_owner, outer_table = (p.strip('"') for p in table_sql.split("."))
        for exists in parse_predicate(table_sql, predicate).find_all(exp.Exists):
            subquery = exists.this
            assert isinstance(subquery, exp.Select)
            source = subquery.args["from_"].this
            assert source.db == "OAM_OWNER" and source.alias == "T"
            columns = [c for c in subquery.args["where"].find_all(exp.Column)
                       if c.table != "ORA_END_USER_CONTEXT"]
            outer = [c for c in columns if c.table != "T"]
            assert len(outer) == 1, predicate
            assert (outer[0].db, outer[0].table) == (outer_owner, outer_table)
            assert all(c.table == "T" for c in columns if c is not outer[0])
            checked += 1
    assert checked >= 6


def test_end_user_comparisons_use_the_end_user_context_username() -> None:
    tree = parse_predicate('"O"."T"', render_predicate(EndUserIs("user_id"), target(), "memory"))
    eq = tree.args["where"].this
    assert isinstance(eq, exp.EQ)
    assert eq.left.sql("oracle") == '"USER_ID"'
    assert eq.right.sql("oracle") == "ORA_END_USER_CONTEXT.username"


# --- each predicate kind -----------------------------------------------------------------------
@pytest.mark.parametrize(("predicate", "expected"), [
    (EndUserIs("user_id"), '"USER_ID" = ORA_END_USER_CONTEXT.username'),
    (IsNull("user_id"), '"USER_ID" IS NULL'),
    (Equals("actor_type", "user"), "\"ACTOR_TYPE\" = 'user'"),
    (AllOf((IsNull("user_id"), Equals("status", "valid"))),
     "(\"USER_ID\" IS NULL AND \"STATUS\" = 'valid')"),
    (AnyOf((IsNull("user_id"), EndUserIs("user_id"))),
     '("USER_ID" IS NULL OR "USER_ID" = ORA_END_USER_CONTEXT.username)'),
    (ExistsVisible("memory", key="id", column="source_id"),
     'EXISTS (SELECT 1 FROM "OAM_OWNER"."ST_MEMORY" "T" WHERE "T"."ID" = '
     '"OAM_OWNER"."ST_MEMORY_LINK"."SOURCE_ID")'),
    (ExistsVisible("memory", key="id", column="target_id",
                   where=AllOf((EndUserIs("user_id"), Equals("status", "valid")))),
     'EXISTS (SELECT 1 FROM "OAM_OWNER"."ST_MEMORY" "T" WHERE "T"."ID" = '
     '"OAM_OWNER"."ST_MEMORY_LINK"."TARGET_ID" AND ("T"."USER_ID" = '
     "ORA_END_USER_CONTEXT.username AND \"T\".\"STATUS\" = 'valid'))"),
], ids=["end-user", "is-null", "equals", "all-of", "any-of", "exists", "exists-where"])
def test_each_predicate_kind_renders(predicate: Predicate, expected: str) -> None:
    rendered = render_predicate(predicate, target(), "memory_link")
    assert rendered == expected
    parse_predicate('"OAM_OWNER"."ST_MEMORY_LINK"', rendered)


def data_grants(policy: DataRolePolicy) -> list[str]:
    """The data grants ``render_policy`` makes for role ``R`` (after the mandatory ones)."""
    return [s for s in render_policy(policy, target("r")) if s.startswith("CREATE OR REPLACE")]


def test_always_renders_a_grant_without_where_clause() -> None:
    policy = DataRolePolicy("p", "registry", (TableGrant("registry", Always(), select=True),))
    assert data_grants(policy)[0] == (
        'CREATE OR REPLACE DATA GRANT "OAM_OWNER"."R_P_AGENT_MEMORY_STORE_REGISTRY_DG0" AS '
        'SELECT ON "OAM_OWNER"."AGENT_MEMORY_STORE_REGISTRY" TO "R"')
    with pytest.raises(TypeError, match="no WHERE clause"):
        render_predicate(Always(), target(), "registry")


def test_a_grant_lists_only_its_own_privileges() -> None:
    only_select = DataRolePolicy("p", "read", (TableGrant("memory", IsNull("user_id")),))
    assert data_grants(only_select)[0] == (
        'CREATE OR REPLACE DATA GRANT "OAM_OWNER"."R_P_ST_MEMORY_DG0" AS SELECT ON '
        '"OAM_OWNER"."ST_MEMORY" WHERE "USER_ID" IS NULL TO "R"')
    write_only = DataRolePolicy("p", "write", (TableGrant(
        "memory", EndUserIs("user_id"), select=False, insert_columns=("id", "content"),
        update_columns=("content",)),))
    assert 'AS INSERT ("ID", "CONTENT"), UPDATE ("CONTENT") ON ' in \
        data_grants(write_only)[0]
    delete_only = DataRolePolicy("p", "del", (TableGrant(
        "memory", EndUserIs("user_id"), select=False, delete=True),))
    assert ' AS DELETE ON ' in data_grants(delete_only)[0]


def test_column_lists_name_only_existing_columns_when_the_target_lists_them() -> None:
    columns = {t: frozenset({"record_type", "record_id", "chunk_no", "chunk_text", "thread_id",
                             "user_id", "agent_id"}) for t in ("record_chunks",)}
    grant = TableGrant("record_chunks", EndUserIs("user_id"), select=False,
                       insert_columns=("record_type", "record_id", "embedding"),
                       update_columns=("embedding",))
    policy = DataRolePolicy("p", "chunks", (grant,))
    rendered = render_policy(policy, target("r", columns))
    assert ' AS INSERT ("RECORD_TYPE", "RECORD_ID") ON ' in rendered[-1]
    assert "EMBEDDING" not in rendered[-1] and "UPDATE" not in rendered[0]
    nothing = DataRolePolicy("p", "none", (TableGrant(
        "record_chunks", EndUserIs("user_id"), select=False, update_columns=("embedding",)),))
    assert render_policy(nothing, target("r", columns)) == [
        'SET USE DATA GRANTS ONLY ON "OAM_OWNER"."ST_RECORD_CHUNKS" ENABLED']


# --- identifiers -------------------------------------------------------------------------------
def test_identifiers_are_upper_cased_and_quoted() -> None:
    assert quote_identifier("user_id", "column") == '"USER_ID"'
    assert quote_identifier("Sys$Tab#1", "table") == '"SYS$TAB#1"'
    assert quote_identifier("a" * MAX_IDENTIFIER_BYTES, "table") == \
        '"' + "A" * MAX_IDENTIFIER_BYTES + '"'


@pytest.mark.parametrize("name", ['a"b', "user id", "a--b", "a;b", "1abc", "_x", "", "a.b",
                                  "n\u00e4me", "a" * (MAX_IDENTIFIER_BYTES + 1), "x'y"])
def test_invalid_identifiers_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="invalid column"):
        quote_identifier(name, "column")


@pytest.mark.parametrize("grant", [
    TableGrant("memory", EndUserIs("user id")),
    TableGrant("memory", IsNull('user_id" OR 1=1 --')),
    TableGrant("memory", ExistsVisible("memory", key="id;", column="id")),
    TableGrant("memory", EndUserIs("user_id"), insert_columns=("content); DROP TABLE x; --",)),
    TableGrant("memory", EndUserIs("user_id"), update_columns=('"content"',)),
], ids=["space", "injection", "semicolon", "insert-column", "update-column"])
def test_invalid_column_names_in_grants_are_refused(grant: TableGrant) -> None:
    with pytest.raises(ValueError, match="invalid column"):
        render_policy(DataRolePolicy("p", "bad", (grant,)), target())


@pytest.mark.parametrize(("bad", "what"), [
    (OracleTarget('own"er', target().tables, "r"), "schema"),
    (OracleTarget(OWNER, {**target().tables, "memory": "st memory"}, "r"), "table"),
    (OracleTarget(OWNER, target().tables, "r--"), "data role"),
    (OracleTarget(OWNER, {"registry": REGISTRY_TABLE}, "r"), "table"),
])
def test_invalid_target_names_are_refused(bad: OracleTarget, what: str) -> None:
    with pytest.raises(ValueError, match=f"invalid {what}"):
        render_policy(OWN_USER_ROWS, bad)


def test_invalid_policy_name_is_refused() -> None:
    policy = DataRolePolicy("own rows", "bad", (TableGrant("memory", IsNull("user_id")),))
    with pytest.raises(ValueError, match="invalid policy name"):
        render_policy(policy, target())


# --- literals ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["user' OR '1'='1", "it's", "", "a b", "x\ny", "v" * 129,
                                   "q'[x]'"])
def test_constant_values_outside_the_strict_pattern_are_refused(value: str) -> None:
    grant = TableGrant("actor_profile", Equals("actor_type", value))
    with pytest.raises(ValueError, match="invalid value"):
        render_policy(DataRolePolicy("p", "bad", (grant,)), target())


# --- grant names -------------------------------------------------------------------------------
def created_names(statements: list[str]) -> list[str]:
    return [m["name"] for s in statements if (m := GRANT.fullmatch(s))]


def test_grant_names_are_unique_per_role_and_policy() -> None:
    mapped = "st_oam_group_memory_users"
    names = [n for p in SHIPPED_POLICIES.values()
             for n in created_names(render_policy(p, target(mapped)))]
    assert len(names) == len(set(names)) == sum(len(p.grants) for p in SHIPPED_POLICIES.values())
    own = set(created_names(render_policy(OWN_USER_ROWS, target("role_a"))))
    other = set(created_names(render_policy(OWN_USER_ROWS, target("role_b"))))
    assert not own & other


def test_long_grant_names_are_cut_with_a_hash_and_stay_distinct() -> None:
    role = "r" * MAX_IDENTIFIER_BYTES
    names = [grant_name(role, "own_user_rows", "st_memory", i) for i in range(12)]
    assert all(len(n.encode()) == MAX_IDENTIFIER_BYTES for n in names)
    assert len(set(names)) == len(names)
    assert names == [grant_name(role, "own_user_rows", "st_memory", i) for i in range(12)]
    assert all(re.fullmatch(r"R+_[0-9A-F]{12}", n) for n in names)
    statements = render_policy(OWN_USER_ROWS, target(role))
    assert all(any(g.fullmatch(s) for g in GRAMMAR) for s in statements)
    assert grant_name("r", "p", "t", 0) == "R_P_T_DG0"


def test_removal_drops_exactly_the_grants_the_policy_creates() -> None:
    for policy in SHIPPED_POLICIES.values():
        t = target(role_of(policy))
        made = created_names(render_policy(policy, t))
        dropped = [s.removeprefix("DROP DATA GRANT IF EXISTS ") for s in render_removal(policy, t)]
        assert dropped == made
        assert not [s for s in render_removal(policy, t) if "USE DATA GRANTS" in s]


# --- data roles, end users ---------------------------------------------------------------------
def test_data_roles_local_and_mapped() -> None:
    assert render_create_data_role("st_oam_own_user_rows") == \
        'CREATE DATA ROLE "ST_OAM_OWN_USER_ROWS"'
    assert render_create_data_role("grp", "AZURE_ROLE=memory.reader") == \
        "CREATE DATA ROLE \"GRP\" MAPPED TO 'AZURE_ROLE=memory.reader'"
    assert render_drop_data_role("grp") == 'DROP DATA ROLE IF EXISTS "GRP"'


@pytest.mark.parametrize("mapping", ["memory-users", "IAM_OAUTH_GROUP=", "IAM_OAUTH_GROUP=a'b",
                                     "IAM_OAUTH_GROUP=a\nb", "LDAP_GROUP=x",
                                     "IAM_OAUTH_GROUP=" + "g" * 1010])
def test_invalid_role_mappings_are_refused(mapping: str) -> None:
    with pytest.raises(ValueError, match="invalid role mapping"):
        render_create_data_role("grp", mapping)


def test_end_users_and_role_grants() -> None:
    assert render_create_end_user("alice") == 'CREATE END USER IF NOT EXISTS "ALICE"'
    assert render_grant_data_role("r", ["alice", "bob"]) == \
        'GRANT DATA ROLE "R" TO "ALICE", "BOB"'
    assert render_revoke_data_role("r", ["alice"]) == 'REVOKE DATA ROLE IF EXISTS "R" FROM "ALICE"'
    with pytest.raises(ValueError, match="at least one"):
        render_grant_data_role("r", [])
    with pytest.raises(TypeError, match="not one str"):
        render_grant_data_role("r", "alice")
    with pytest.raises(ValueError, match="invalid end user"):
        render_grant_data_role("r", ['alice" , "bob'])


# --- predicates that cannot be rendered --------------------------------------------------------
def test_predicates_that_cannot_be_rendered_are_refused() -> None:
    nested = ExistsVisible("memory", key="id", column="source_id",
                           where=AnyOf((IsNull("user_id"), EndUserIs("user_id"))))
    with pytest.raises(TypeError, match="cannot be used inside a subquery"):
        render_predicate(nested, target(), "memory_link")
    with pytest.raises(TypeError, match="unknown predicate"):
        render_predicate("user_id = 1", target(), "memory")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one part"):
        render_predicate(AnyOf(()), target(), "memory")
    huge = AnyOf(tuple(Equals("record_type", f"t{i}") for i in range(200)))
    with pytest.raises(ValueError, match="Oracle allows 4000"):
        render_policy(DataRolePolicy("p", "huge", (TableGrant("memory", huge),)), target())
