"""The Deep Data Security admin API (``core/deepsec/admin.py``) on the embedded server.

The store belongs to ``oam_test_owner``; policies are installed and granted by the policy
administrator ``oam_test_secadmin``; the end users reach rows through the runtime login
``oam_test_rt``, each logging in with the tests' password (``url_as``): what these tests check
is what each role's privileges let it do.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from dds import GROUP, IDP, OWNER, POLICIES, SECADMIN, TEST_PASSWORD, USERS, url_as
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    EndUserContextError,
    GlobalMemoriesDeepDataSecurityPolicy,
    LocalEndUserPrincipal,
    OciGroupPrincipal,
    OracleMemoryEndUserSecurityContext,
    Principal,
    UserOwnRowsDeepDataSecurityPolicy,
    add_deep_data_security_policies,
    grant_agent_memory_policies,
    list_agent_memory_granted_policies,
    list_deep_data_security_policies,
    remove_deep_data_security_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.engines.postgres import deepsec_admin
from oracleagentmemory.errors import NotPermittedError

OWN = UserOwnRowsDeepDataSecurityPolicy()
GLOBAL = GlobalMemoriesDeepDataSecurityPolicy()
RLS_REFUSAL = "no data role of this memory store granted to the end user"
"""What a write the row security refused says (the SDK's words, no table)."""


# --- helpers -------------------------------------------------------------------------------
def bare_store(dds: Any) -> str:
    """A store created by its owner, with no policy installed."""
    store_id = f"adm{secrets.token_hex(4)}"
    with psycopg.connect(dds.owner_url) as conn:
        OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id)
    dds.bind(store_id)
    return store_id


@pytest.fixture
def store_id(dds: Any) -> str:
    """A protected store: both policies installed, granted to alice, bob, carol and ``team``."""
    return str(dds.new_store())


def policies(dds: Any, store_id: str) -> set[Any]:
    return set(list_deep_data_security_policies(dds.secadmin_url, OWNER, store_id))


def grants(dds: Any, store_id: str) -> dict[Principal, set[Any]]:
    listed = list_agent_memory_granted_policies(dds.secadmin_url, store_id, OWNER)
    return {principal: set(granted) for principal, granted in listed}


def visible(dds: Any, store_id: str, context: Any) -> list[str]:
    """Memory ids the end user of ``context`` sees through the runtime login."""
    with dds.context_store(store_id, context) as store:
        return sorted(r.id for r in store.list("memory"))


def add_as(dds: Any, store_id: str, context: Any, record_id: str) -> None:
    with dds.context_store(store_id, context) as store:
        store.add([f"note {record_id}"], "memory", record_ids=record_id)


def add_global(dds: Any, store_id: str, record_id: str) -> None:
    with dds.owner_store(store_id) as owner:
        owner.add(["shared knowledge"], "memory", user_ids=None, record_ids=record_id)


def pg_policy_names(dds: Any, store_id: str, table: str) -> set[str]:
    with psycopg.connect(dds.secadmin_url) as conn:
        rows = conn.execute("SELECT policyname FROM pg_policies WHERE schemaname = %s AND "
                            "tablename = %s", [OWNER, f"{store_id}_{table}"]).fetchall()
    return {r[0] for r in rows}


# --- install, list, remove -----------------------------------------------------------------
def test_list_reflects_what_is_installed(dds: Any) -> None:
    store_id = bare_store(dds)
    assert policies(dds, store_id) == set()
    assert pg_policy_names(dds, store_id, "memory") == set()

    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, [OWN])
    assert policies(dds, store_id) == {OWN}
    own_policies = pg_policy_names(dds, store_id, "memory")
    assert own_policies and all("own_user_rows" in name for name in own_policies)

    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, [GLOBAL, GLOBAL])
    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, [GLOBAL])  # idempotent
    assert policies(dds, store_id) == {OWN, GLOBAL}
    assert len(list_deep_data_security_policies(dds.secadmin_url, OWNER, store_id)) == 2
    both = pg_policy_names(dds, store_id, "memory")
    assert own_policies < both and any("global_memories" in name for name in both)

    remove_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, [OWN])
    assert policies(dds, store_id) == {GLOBAL}
    assert pg_policy_names(dds, store_id, "memory") == both - own_policies


def test_install_enables_row_level_security_on_every_table_it_protects(dds: Any) -> None:
    store_id = bare_store(dds)
    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, POLICIES)
    with psycopg.connect(dds.secadmin_url) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relrowsecurity FROM pg_class c JOIN pg_namespace n ON "
            "n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname LIKE %s AND "
            "c.relkind IN ('r', 'p') AND NOT c.relispartition",
            [OWNER, f"{store_id}\\_%"]).fetchall()
    assert len(rows) == 8
    assert all(enabled for _, enabled in rows)


def test_removing_global_keeps_own_rows_and_hides_global_memories(dds: Any,
                                                                  store_id: str) -> None:
    add_global(dds, store_id, "g1")
    add_as(dds, store_id, dds.context("alice"), "a1")
    assert visible(dds, store_id, dds.context("alice")) == ["a1", "g1"]

    remove_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, [GLOBAL])
    assert visible(dds, store_id, dds.context("alice")) == ["a1"]
    assert visible(dds, store_id, dds.idp_context("zoe")) == []
    add_as(dds, store_id, dds.context("alice"), "a2")  # own rows still writable
    assert visible(dds, store_id, dds.context("alice")) == ["a1", "a2"]
    assert all(policy == {OWN} for policy in grants(dds, store_id).values())

    # Re-adding installs the policy again; its grants went with the removal.
    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, [GLOBAL])
    assert policies(dds, store_id) == {OWN, GLOBAL}
    assert visible(dds, store_id, dds.context("alice")) == ["a1", "a2"]
    grant_agent_memory_policies(dds.secadmin_url, store_id, OWNER,
                                [LocalEndUserPrincipal("alice")], [GLOBAL])
    assert visible(dds, store_id, dds.context("alice")) == ["a1", "a2", "g1"]
    assert visible(dds, store_id, dds.context("bob")) == []


def test_removing_both_policies_cuts_the_runtime_off_and_re_adding_restores(
    dds: Any, store_id: str,
) -> None:
    add_global(dds, store_id, "g1")
    add_as(dds, store_id, dds.context("alice"), "a1")
    remove_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, POLICIES)
    assert policies(dds, store_id) == set()
    assert grants(dds, store_id) == {}

    with pytest.raises(NotPermittedError, match="permission denied"):
        visible(dds, store_id, dds.context("alice"))
    with psycopg.connect(dds.runtime_url) as conn, conn.transaction():
        conn.execute("SELECT oam_sec.apply_assertion(%s)", [dds.context("alice").assertion()])
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
            conn.execute(f"SELECT count(*) FROM {OWNER}.{store_id}_memory")

    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, POLICIES)
    assert visible(dds, store_id, dds.context("alice")) == []  # installed, not yet granted
    grant_agent_memory_policies(dds.secadmin_url, store_id, OWNER,
                                [LocalEndUserPrincipal("alice")], POLICIES)
    assert visible(dds, store_id, dds.context("alice")) == ["a1", "g1"]


# --- grants ----------------------------------------------------------------------------------
def test_grant_revoke_and_list_for_local_users_and_groups(dds: Any) -> None:
    store_id = bare_store(dds)
    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, POLICIES)
    add_global(dds, store_id, "g1")
    assert grants(dds, store_id) == {}
    with pytest.raises(NotPermittedError, match=RLS_REFUSAL):
        add_as(dds, store_id, dds.context("alice"), "a1")

    alice, crew = LocalEndUserPrincipal("alice"), OciGroupPrincipal("crew", IDP)
    grant_agent_memory_policies(dds.secadmin_url, store_id, OWNER, [alice, crew], [OWN])
    grant_agent_memory_policies(dds.secadmin_url, store_id, OWNER, [crew], [GLOBAL])
    assert grants(dds, store_id) == {alice: {OWN}, crew: {OWN, GLOBAL}}

    add_as(dds, store_id, dds.context("alice"), "a1")
    assert visible(dds, store_id, dds.context("alice")) == ["a1"]  # no global role
    add_as(dds, store_id, dds.idp_context("zoe", ("crew",)), "z1")
    assert visible(dds, store_id, dds.idp_context("zoe", ("crew",))) == ["g1", "z1"]
    assert visible(dds, store_id, dds.idp_context("yan", ("other",))) == []
    with pytest.raises(NotPermittedError, match=RLS_REFUSAL):
        add_as(dds, store_id, dds.context("bob"), "b1")

    revoke_agent_memory_policies(dds.secadmin_url, store_id, OWNER, [alice], [OWN])
    revoke_agent_memory_policies(dds.secadmin_url, store_id, OWNER,
                                 [LocalEndUserPrincipal("bob")], POLICIES)  # never granted
    assert grants(dds, store_id) == {crew: {OWN, GLOBAL}}
    assert visible(dds, store_id, dds.context("alice")) == []
    with dds.owner_store(store_id) as owner:  # the rows are hidden, not deleted
        assert sorted(r.id for r in owner.list("memory")) == ["a1", "g1", "z1"]


def test_list_granted_policies_of_the_shared_environment(dds: Any, store_id: str) -> None:
    expected: dict[Principal, set[Any]] = {LocalEndUserPrincipal(u): {OWN, GLOBAL} for u in USERS}
    expected[OciGroupPrincipal(GROUP, IDP)] = {OWN, GLOBAL}
    assert grants(dds, store_id) == expected


def test_granting_a_policy_that_is_not_installed_is_refused(dds: Any) -> None:
    store_id = bare_store(dds)
    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, [OWN])
    with pytest.raises(ValueError, match="'global_memories' is not installed"):
        grant_agent_memory_policies(dds.secadmin_url, store_id, OWNER,
                                    [LocalEndUserPrincipal("alice")], [GLOBAL])
    with pytest.raises(ValueError, match="'global_memories' is not installed"):
        revoke_agent_memory_policies(dds.secadmin_url, store_id, OWNER,
                                     [LocalEndUserPrincipal("alice")], [GLOBAL])
    assert grants(dds, store_id) == {}


def test_granting_to_an_unknown_local_end_user_is_refused_atomically(dds: Any) -> None:
    store_id = bare_store(dds)
    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, POLICIES)
    with pytest.raises(ValueError, match="local end user 'ghost' does not exist"):
        grant_agent_memory_policies(
            dds.secadmin_url, store_id, OWNER,
            [LocalEndUserPrincipal("alice"), LocalEndUserPrincipal("ghost")], POLICIES)
    assert grants(dds, store_id) == {}


# --- argument checks -------------------------------------------------------------------------
ADMIN_CALLS: dict[str, Callable[[Any, str, str], Any]] = {
    "add": lambda c, owner, sid: add_deep_data_security_policies(c, owner, sid, POLICIES),
    "remove": lambda c, owner, sid: remove_deep_data_security_policies(c, owner, sid, POLICIES),
    "list": lambda c, owner, sid: list_deep_data_security_policies(c, owner, sid),
    "grant": lambda c, owner, sid: grant_agent_memory_policies(
        c, sid, owner, [LocalEndUserPrincipal("alice")], POLICIES),
    "revoke": lambda c, owner, sid: revoke_agent_memory_policies(
        c, sid, owner, [OciGroupPrincipal(GROUP)], POLICIES),
    "list_granted": lambda c, owner, sid: list_agent_memory_granted_policies(c, sid, owner),
}


@pytest.mark.parametrize("call", list(ADMIN_CALLS))
def test_unknown_store_is_a_value_error(dds: Any, call: str) -> None:
    with pytest.raises(ValueError, match="memory store 'nosuchstore' does not exist in schema "
                       "'oam_test_owner'"):
        ADMIN_CALLS[call](dds.secadmin_url, OWNER, "nosuchstore")


@pytest.mark.parametrize("call", list(ADMIN_CALLS))
@pytest.mark.parametrize(("owner", "store", "message"), [
    ("bad-owner", "s1", "schema_owner must be an unquoted identifier"),
    ('"Quoted"', "s1", "schema_owner must be an unquoted identifier"),
    ("", "s1", "schema_owner must be an unquoted identifier"),
    (OWNER, "1store", "memory_store_id must start with a letter"),
    (OWNER, "s" * 17, "memory_store_id must start with a letter"),
    (OWNER, "drop;table", "memory_store_id must start with a letter"),
])
def test_bad_owner_schema_or_memory_store_id_is_a_value_error(
    dds: Any, call: str, owner: str, store: str, message: str,
) -> None:
    with pytest.raises(ValueError, match=message):
        ADMIN_CALLS[call](dds.secadmin_url, owner, store)


def test_empty_policies_and_principals_are_value_errors(dds: Any, store_id: str) -> None:
    alice: list[Principal] = [LocalEndUserPrincipal("alice")]
    url = dds.secadmin_url
    with pytest.raises(ValueError, match="policies must not be empty"):
        add_deep_data_security_policies(url, OWNER, store_id, [])
    with pytest.raises(ValueError, match="policies must not be empty"):
        remove_deep_data_security_policies(url, OWNER, store_id, [])
    with pytest.raises(ValueError, match="policies must not be empty"):
        grant_agent_memory_policies(url, store_id, OWNER, alice, [])
    with pytest.raises(ValueError, match="policies must not be empty"):
        revoke_agent_memory_policies(url, store_id, OWNER, alice, [])
    with pytest.raises(ValueError, match="principals must be a non-empty list"):
        grant_agent_memory_policies(url, store_id, OWNER, [], POLICIES)
    with pytest.raises(ValueError, match="principals must be a non-empty list"):
        revoke_agent_memory_policies(url, store_id, OWNER, [], POLICIES)


def test_wrong_argument_types_are_type_errors(dds: Any, store_id: str) -> None:
    url = dds.secadmin_url
    with pytest.raises(TypeError, match="policies must be a list of DeepDataSecurityPolicy"):
        add_deep_data_security_policies(url, OWNER, store_id, OWN)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"policies\[0\] must be"):
        add_deep_data_security_policies(url, OWNER, store_id, ["own_user_rows"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"principals\[0\] must be a LocalEndUserPrincipal"):
        grant_agent_memory_policies(url, store_id, OWNER, ["alice"], POLICIES)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="connection must be a psycopg or oracledb Connection, "
                       "or a postgresql:// or oracle:// URL"):
        list_deep_data_security_policies(42, OWNER, store_id)


@pytest.mark.parametrize("call", list(ADMIN_CALLS))
def test_admin_functions_refuse_an_end_user_context(dds: Any, store_id: str, call: str) -> None:
    before = (policies(dds, store_id), grants(dds, store_id))
    with OracleMemoryEndUserSecurityContext(dds.context("alice")), pytest.raises(
        EndUserContextError, match="administrative work and refuses to run inside an end-user"
    ):
        ADMIN_CALLS[call](dds.secadmin_url, OWNER, store_id)
    assert issubclass(EndUserContextError, RuntimeError)
    assert (policies(dds, store_id), grants(dds, store_id)) == before


# --- identities ------------------------------------------------------------------------------
def test_schema_owner_and_policy_administrator_are_different_identities(
    dds: Any, store_id: str,
) -> None:
    with psycopg.connect(dds.secadmin_url) as conn:
        table_owner = conn.execute("SELECT tableowner FROM pg_tables WHERE schemaname = %s "
                                   "AND tablename = %s", [OWNER, f"{store_id}_memory"]).fetchone()
        sec_owner = conn.execute("SELECT pg_get_userbyid(nspowner) FROM pg_namespace "
                                 "WHERE nspname = 'oam_sec'").fetchone()
        superusers = conn.execute("SELECT rolname FROM pg_roles WHERE rolsuper AND rolname = "
                                  "ANY(%s)", [[OWNER, SECADMIN]]).fetchall()
    assert table_owner == (OWNER,)
    assert sec_owner == (SECADMIN,)
    assert superusers == []
    # Policies the secadmin installed on the owner's store are what the runtime obeys.
    add_as(dds, store_id, dds.context("carol"), "c1")
    assert visible(dds, store_id, dds.context("carol")) == ["c1"]
    assert visible(dds, store_id, dds.context("alice")) == []
    # The schema owner is not the policy administrator: oam_sec is not its to manage.
    with pytest.raises(PermissionError, match="belongs to 'oam_test_secadmin'"):
        add_deep_data_security_policies(dds.owner_url, OWNER, store_id, POLICIES)


@pytest.fixture
def throwaway_role(dds: Any) -> Iterator[str]:
    """A login role that is neither the owner nor the policy administrator."""
    role = f"oam_test_intruder_{secrets.token_hex(3)}"
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        su.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{TEST_PASSWORD}'".encode())
    yield role
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        su.execute(f"DROP ROLE {role}".encode())


def test_security_schema_of_another_administrator_is_a_permission_error(
    dds: Any, store_id: str, throwaway_role: str,
) -> None:
    url = url_as(dds.superuser_url, throwaway_role)
    with psycopg.connect(url) as conn, pytest.raises(
        PermissionError, match="the oam_sec security schema belongs to 'oam_test_secadmin'; "
        "manage Deep Data Security as that policy administrator"
    ):
        deepsec_admin.install_security_schema(conn)
    with pytest.raises(PermissionError, match="belongs to 'oam_test_secadmin'"):
        add_deep_data_security_policies(url, OWNER, store_id, POLICIES)
    with psycopg.connect(url) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT count(*) FROM oam_sec.application")
    assert policies(dds, store_id) == {OWN, GLOBAL}
