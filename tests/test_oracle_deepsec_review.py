"""Attack review of the Oracle Deep Data Security statements, offline (issue 12).

No Oracle database is reachable here: each test pins a property of the statements the Oracle
engine and its security admin emit, one per hole the review found, and fails on the code
before the fix. The live twins of the PostgreSQL attack suite are in
``tests/test_deepsec_oracle_attacks.py``.
"""

from __future__ import annotations

import re

import pytest
import sqlglot
from oam_policies import SHIPPED_POLICIES, DataRolePolicy
from oam_policies.model import AllOf, AnyOf, EndUserIs, Equals, ExistsVisible, IsNull
from oracleagentmemory.engines.identifiers import MANAGED_TABLES
from oracleagentmemory.engines.oracle import admin_ddl, admin_sql, audit_sql, security_admin
from oracleagentmemory.engines.oracle.admin_names import group_data_role, group_mapping
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names, normalise
from oracleagentmemory.engines.oracle.open_sessions import OpenSessions
from oracleagentmemory.errors import InvalidArgumentError, SecurityContextError
from sqlglot import exp

GROUP_ROLE = group_data_role(group_mapping("oci_iam:memory-users"))
CREATED_GRANT = re.compile(r'^CREATE OR REPLACE DATA GRANT "[^"]+"\."([^"]+)"')


def store(store_id: str | None, owner: str = "oam_owner") -> OracleObjects:
    return OracleObjects.of(derive_store_names(memory_store_id=store_id, table_name_prefix=None,
                                               schema_owner=owner))


def created_grants(objects: OracleObjects, policy: DataRolePolicy, role: str) -> set[str]:
    """The names of the data grants granting ``policy`` on one store to ``role`` creates."""
    statements = admin_ddl.install_policy(policy, security_admin._target(objects, role), None)
    return {m.group(1) for s in statements if (m := CREATED_GRANT.match(s))}


# --- a group's mapped role carries the grants of several stores ----------------------------
@pytest.mark.parametrize("policy", SHIPPED_POLICIES.values(), ids=lambda p: p.name)
def test_a_groups_grants_on_one_store_never_pass_for_its_grants_on_another(
        policy: DataRolePolicy) -> None:
    """Store A and store B of one schema share the registry table. Named after the table
    alone, the group's registry grant of A was also B's: installing B's policy then found the
    group among B's holders and gave it B's rows, and revoking the group from B dropped A's
    grant."""
    a, b, default = store("a"), store("b"), store(None)
    for one, other in ((a, b), (a, default), (b, default)):
        assert not created_grants(one, policy, GROUP_ROLE) & created_grants(
            other, policy, GROUP_ROLE)
        # what the admin looks for when it decides that a group holds the policy on a store
        assert not security_admin._grant_names(other, policy, GROUP_ROLE) & created_grants(
            one, policy, GROUP_ROLE)


@pytest.mark.parametrize("policy", SHIPPED_POLICIES.values(), ids=lambda p: p.name)
def test_the_grant_names_the_admin_looks_for_are_those_it_creates(
        policy: DataRolePolicy) -> None:
    for objects in (store("a"), store(None)):
        # every grant of the shipped policies grants something on a store with every column
        assert security_admin._grant_names(objects, policy, GROUP_ROLE) == created_grants(
            objects, policy, GROUP_ROLE)


def test_the_default_stores_grants_keep_their_names() -> None:
    default = security_admin._target(store(None), GROUP_ROLE)
    assert default.grant_label("registry") == default.physical("registry")
    assert security_admin._target(store("b"), GROUP_ROLE).grant_label("registry") == \
        "B_agent_memory_store_registry"


# --- the write audit names the end user the database reports, or refuses the write ---------
def test_an_audited_write_whose_end_user_cannot_be_read_fails_rather_than_goes_unattributed(
        ) -> None:
    """The trigger recorded ``NULL`` (no end user: the owner's or an administrator's write) on
    any error of the end-user lookup; only a database without Deep Data Security may."""
    o = store("st")
    triggers = [audit_sql.record_trigger(o, t) for t in MANAGED_TABLES]
    triggers.append(audit_sql.truncate_trigger(o))
    handler = ("EXCEPTION WHEN OTHERS THEN IF SQLCODE IN (-900, -904, -942) THEN "
               "v_user := NULL; ELSE RAISE; END IF; END;")
    for trigger in triggers:
        assert trigger.count("ORA_END_USER_CONTEXT.username") == 1
        assert trigger.count("EXCEPTION WHEN OTHERS") == 1
        assert handler in trigger, trigger


# --- mandatory data grants: no table of a store is reachable by an ordinary privilege -------
MAC = re.compile(r'^SET USE DATA GRANTS ONLY ON "[^"]+"\."([^"]+)" ENABLED$')


@pytest.mark.parametrize("policy", SHIPPED_POLICIES.values(), ids=lambda p: p.name)
def test_any_policy_install_puts_every_table_of_the_store_under_mandatory_data_grants(
        policy: DataRolePolicy) -> None:
    """A store given only ``global_memories`` kept its threads, messages, documents and
    profiles without mandatory data grants (an ordinary object privilege, e.g. to PUBLIC,
    reached them as an end user)."""
    o = store("st")
    statements = admin_ddl.install_policy(policy, security_admin._target(o, GROUP_ROLE),
                                          "CREATE DATA ROLE X")
    first_other = next(i for i, s in enumerate(statements) if not MAC.match(s))
    protected = {m.group(1) for s in statements[:first_other] if (m := MAC.match(s))}
    assert protected == {o.names.table(t).upper() for t in MANAGED_TABLES} | {
        "AGENT_MEMORY_STORE_REGISTRY"}
    assert not any(MAC.match(s) for s in statements[first_other:])


# --- names: a look-alike never stands for another end user, role or login --------------------
@pytest.mark.parametrize("lookalike", ["alıce", "ſam", "ﬀion", "bob\u0130"])
def test_a_name_that_upper_cases_to_another_is_refused_not_folded(lookalike: str) -> None:
    """``"alıce".upper() == "ALICE"``: the admin granted, revoked and dropped ALICE when told
    ``alıce``."""
    with pytest.raises(InvalidArgumentError):
        normalise(lookalike, what="end user name")
    with pytest.raises(InvalidArgumentError):
        admin_ddl.grant_role("SOME_ROLE", lookalike)
    with pytest.raises(InvalidArgumentError):
        admin_ddl.drop_end_user(lookalike)
    assert admin_ddl.drop_end_user("alice") == 'DROP END USER IF EXISTS "ALICE"'  # control


# --- drift: what PUBLIC holds reaches the runtime login outside any end-user context -------
BIND = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


def test_the_drift_check_reads_what_public_holds_on_protected_tables() -> None:
    """Deep Data Security filters end-user sessions only: a SELECT granted to PUBLIC on a
    protected table let every runtime login, outside a context, read every user's rows, and
    the drift check (which read the logins' own grants only) did not say so."""
    statement = admin_sql.public_grants()
    text, binds = statement.sql, statement.binds
    parsed = sqlglot.parse_one(text, read="oracle")
    assert isinstance(parsed, exp.Union)
    assert set(BIND.findall(text)) == set(binds)
    assert binds["public_grantee"] == "PUBLIC" and "'PUBLIC'" not in text
    assert {t.name.lower() for t in parsed.find_all(exp.Table)} == {
        "dba_tab_privs", "all_data_grants", "dba_sys_privs", "dba_role_privs"}
    finding = security_admin._public_finding("object", "OAM_OWNER.ST_MEMORY SELECT")
    assert "PUBLIC" in finding and "OAM_OWNER.ST_MEMORY SELECT" in finding


def test_a_store_counts_as_protected_by_grants_on_its_own_tables_only() -> None:
    """The registry is every store's of the schema: counting grants on it, a store with no
    policy looked protected as soon as another store of its schema had one."""
    o = store("b")
    statement = admin_sql.store_data_grants(o, managed_only=True)
    text, binds = statement.sql, statement.binds
    assert sorted(v for k, v in binds.items() if k != "owner") == sorted(
        o.names.table(t).upper() for t in MANAGED_TABLES)
    assert "AGENT_MEMORY_STORE_REGISTRY" not in binds.values()
    sqlglot.parse_one(text, read="oracle")
    # the full list (used to find a role's grants, whose names are per store) keeps it
    assert "AGENT_MEMORY_STORE_REGISTRY" in admin_sql.store_data_grants(o).binds.values()


# --- a nested operation on a standalone connection keeps the outer one's context ------------
def test_only_the_outermost_session_of_a_connection_attaches_and_clears_its_context() -> None:
    """The engine's lock is re-entrant: an operation started inside another on the same
    thread and connection attached its context over the outer one's and cleared it at its end,
    so the outer operation went on without any end-user context (as the login itself)."""
    alice, bob = object(), object()
    sessions = OpenSessions()
    with sessions.entered(alice) as outer:
        assert outer is True  # the outermost session attaches
        with sessions.entered(alice) as inner:
            assert inner is False  # the nested one runs inside it, and clears nothing
        for other in (bob, None):
            with pytest.raises(SecurityContextError), sessions.entered(other):
                pass
        assert sessions.depth == 1
    assert sessions.depth == 0
    with sessions.entered(None) as plain:
        assert plain is False
        with pytest.raises(SecurityContextError), sessions.entered(bob):
            pass
        with sessions.entered(None) as nested_plain:
            assert nested_plain is False
    with sessions.entered(bob) as again:  # a later outermost session attaches its own
        assert again is True


# --- guards: properties the Oracle grants rely on where Oracle's semantics are not verified --
def _columns(predicate: object) -> set[str]:
    """The columns of the granted table a predicate reads (not those of its subqueries)."""
    if isinstance(predicate, (EndUserIs, IsNull, Equals)):
        return {predicate.column}
    if isinstance(predicate, (AllOf, AnyOf)):
        return set().union(*(_columns(p) for p in predicate.parts))
    if isinstance(predicate, ExistsVisible):
        return {predicate.column}
    return set()


def _subqueries(predicate: object) -> list[ExistsVisible]:
    if isinstance(predicate, ExistsVisible):
        return [predicate]
    if isinstance(predicate, (AllOf, AnyOf)):
        return [s for p in predicate.parts for s in _subqueries(p)]
    return []


@pytest.mark.parametrize("policy", SHIPPED_POLICIES.values(), ids=lambda p: p.name)
def test_no_grant_lets_an_end_user_update_a_column_any_predicate_of_its_table_reads(
        policy: DataRolePolicy) -> None:
    """Whether Oracle checks an UPDATE's new values against the grant's predicate (as
    PostgreSQL's WITH CHECK does) is not documented: no grant of a shipped policy may let an
    end user change a column a predicate on that table reads (the owner, the type, the key a
    subquery correlates on), so the answer cannot matter."""
    read: dict[str, set[str]] = {}
    for grant in policy.grants:
        read.setdefault(grant.table, set()).update(_columns(grant.predicate))
    for grant in policy.grants:
        assert not set(grant.update_columns or ()) & read[grant.table], grant


@pytest.mark.parametrize("policy", SHIPPED_POLICIES.values(), ids=lambda p: p.name)
def test_every_subquery_of_a_grant_names_its_owner_itself(policy: DataRolePolicy) -> None:
    """Whether the EXISTS subquery of a data grant predicate runs under the end user's own
    grants is inferred, not documented: each one compares the parent's owner column with the
    end user itself, so a subquery run with the owner's rights still finds only their rows."""
    for grant in policy.grants:
        for subquery in _subqueries(grant.predicate):
            assert subquery.where is not None and EndUserIs("user_id") in (
                [subquery.where] if not isinstance(subquery.where, AllOf)
                else list(subquery.where.parts)), (grant.table, subquery)
