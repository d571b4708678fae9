"""``oam-admin``: every command on the embedded database, as a subprocess and in-process.

Store commands run as the schema owner (``dds.owner_url``); security commands as the policy
administrator (``dds.secadmin_url``). The embedded server requires passwords: the tests check a
runtime login's password was stored (SCRAM verifier), log in with it (``dds.url_as`` names a
password file with the tests' password) and that the login's privileges are what the policies
give, nothing more.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from cli_harness import SECRET_ENV, Cli, Result, cli, unique
from dds import IDP, OWNER, TEST_PASSWORD, url_as
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    IdentityProviderUser,
    OracleMemoryEndUserSecurityContext,
    create_end_user_security_context,
)
from oracleagentmemory.engines.postgres import deepsec_admin
from oracleagentmemory.errors import SecurityContextError

_SECRET_ENV = SECRET_ENV


def run_cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Result:
    """Run ``oam-admin`` as a subprocess."""
    environment = {k: v for k, v in os.environ.items() if k not in _SECRET_ENV}
    environment.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "oracleagentmemory.admin_cli.main", *args],
        input=stdin or "", capture_output=True, text=True, env=environment, timeout=300,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


__all__ = ["cli"]  # the fixture, re-exported for pytest


def assert_one_line_error(result: Result, code: int, fragment: str) -> None:
    """The command failed with ``code`` and one ``error: ...`` line containing ``fragment``."""
    assert result.code == code, result
    errors = [line for line in result.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.err
    assert fragment in errors[0], result.err
    assert "Traceback" not in result.err


def owner_args(dds: Any) -> list[str]:
    return ["--url", dds.owner_url]


def sec_args(dds: Any, store_id: str) -> list[str]:
    return ["--url", dds.secadmin_url, "--memory-store-id", store_id, "--owner-schema", OWNER]


def create_store(cli: Cli, dds: Any, *extra: str) -> str:
    store_id = unique("c")
    result = cli("store", "create", "--memory-store-id", store_id, *owner_args(dds), *extra)
    assert result.code == 0, result
    return store_id


def protected_store(cli: Cli, dds: Any) -> str:
    """A store created by the owner with both policies installed by the policy administrator."""
    store_id = create_store(cli, dds, "--vector-dim", "3")
    assert cli("policies", "add", *sec_args(dds, store_id)).code == 0
    dds.bind(store_id)
    return store_id


def fields(out: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in out.splitlines())


# --- parsing, exit codes, secrets on the command line ----------------------------------------
def test_help_lists_every_command() -> None:
    result = run_cli("--help")
    assert result.code == 0
    for command in ("db", "store", "policies", "runtime-login", "application", "end-user",
                    "grant", "revoke", "grants", "purge-expired"):
        assert re.search(rf"^\s+{command}\b", result.out, re.M), command


def test_in_process_usage_errors_return_2(cli: Cli) -> None:
    missing = cli()
    assert missing.code == 2
    assert "error: the following arguments are required: COMMAND" in missing.err
    bad_policy = cli("policies", "add", "--memory-store-id", "x", "--owner-schema", "s",
                     "--policy", "everything")
    assert bad_policy.code == 2
    assert "invalid choice: 'everything'" in bad_policy.err


def test_password_flag_is_refused_and_nothing_is_created(dds: Any) -> None:
    login = unique("cli_rt")
    result = run_cli("runtime-login", "create", "--url", dds.secadmin_url, "--login", login,
                     "--owner-schema", OWNER, "--password", "hunter2-secret")
    assert_one_line_error(result, 2, "--password is refused")
    assert "hunter2-secret" not in result.err + result.out
    with psycopg.connect(dds.superuser_url) as conn:
        assert not deepsec_admin.role_exists(conn, login)
    prefixed = run_cli("runtime-login", "create", "--login", login, "--owner-schema", OWNER,
                       "--password=hunter2-secret")
    assert_one_line_error(prefixed, 2, "--password is refused")


def test_url_with_a_password_is_refused(cli: Cli) -> None:
    result = cli("store", "check", "--memory-store-id", "x",
                 "--url", "postgresql://owner:s3cret@localhost/db")
    assert_one_line_error(result, 2, "--url must not contain a password")
    assert "s3cret" not in result.err


# --- store -----------------------------------------------------------------------------------
def test_store_create_check_upgrade(cli: Cli, dds: Any) -> None:
    store_id = unique("c")
    created = cli("store", "create", "--memory-store-id", store_id, "--vector-dim", "3",
                  "--default-ttl-days", "30", *owner_args(dds))
    assert created.code == 0, created
    info = fields(created.out)
    assert info["memory_store_id"] == store_id
    assert (info["vector_dim"], info["search_strategy"]) == ("3", "vector")
    assert (info["default_ttl_days"], info["max_ttl_days"]) == ("30", "none")
    assert int(info["schema_version"]) >= 1
    assert f"oam-admin: creating (when absent) and validating memory store {store_id!r}" \
        in created.err
    checked = cli("store", "check", "--memory-store-id", store_id, *owner_args(dds))
    assert checked.code == 0 and fields(checked.out) == info
    by_policy_admin = cli("store", "check", "--memory-store-id", store_id, "--owner-schema",
                          OWNER, "--url", dds.secadmin_url)
    assert by_policy_admin.code == 0 and fields(by_policy_admin.out) == info
    upgraded = cli("store", "upgrade", "--memory-store-id", store_id, *owner_args(dds))
    assert upgraded.code == 0 and fields(upgraded.out) == info
    again = cli("store", "create", "--memory-store-id", store_id, *owner_args(dds))
    assert again.code == 0 and fields(again.out) == info


def test_store_create_with_another_dimension_fails(cli: Cli, dds: Any) -> None:
    store_id = create_store(cli, dds, "--vector-dim", "3")
    result = cli("store", "create", "--memory-store-id", store_id, "--vector-dim", "5",
                 *owner_args(dds))
    assert_one_line_error(result, 1, f"memory store {store_id!r} cannot be opened with "
                                     "create_if_empty")
    assert fields(cli("store", "check", "--memory-store-id", store_id,
                      *owner_args(dds)).out)["vector_dim"] == "3"


def test_store_check_of_a_missing_store_fails_in_one_line(dds: Any) -> None:
    result = run_cli("store", "check", "--memory-store-id", "nosuchstore", *owner_args(dds))
    assert_one_line_error(result, 1, "memory store 'nosuchstore' cannot be opened with "
                                     "require_existing")
    assert result.out == ""


def test_store_recreate_needs_yes(cli: Cli, dds: Any) -> None:
    store_id = create_store(cli, dds)
    with dds.owner_store(store_id) as owner:
        owner.add(["keep me"], "memory", user_ids="alice", record_ids="m1")
    refused = cli("store", "recreate", "--memory-store-id", store_id, *owner_args(dds))
    assert_one_line_error(refused, 2, f"store recreate drops every record of memory store "
                                      f"{store_id!r}; pass --yes to confirm")
    with dds.owner_store(store_id) as owner:
        assert owner.get("memory", "m1") is not None
    done = cli("store", "recreate", "--memory-store-id", store_id, "--yes", *owner_args(dds))
    assert done.code == 0, done
    assert "dropping its managed objects" in done.err
    with dds.owner_store(store_id) as owner:
        assert owner.get("memory", "m1") is None


# --- policies --------------------------------------------------------------------------------
def test_policies_add_list_remove(cli: Cli, dds: Any) -> None:
    store_id = create_store(cli, dds)
    assert cli("policies", "list", *sec_args(dds, store_id)).out == ""
    added = cli("policies", "add", *sec_args(dds, store_id))
    assert added.code == 0, added
    assert added.out.strip() == "installed: own_user_rows, global_memories"
    listed = cli("policies", "list", *sec_args(dds, store_id))
    assert listed.out.split() == ["global_memories", "own_user_rows"]
    refused = cli("policies", "remove", *sec_args(dds, store_id), "--policy", "global_memories")
    assert_one_line_error(refused, 2, "pass --yes to confirm")
    assert cli("policies", "list", *sec_args(dds, store_id)).out.split() == [
        "global_memories", "own_user_rows"]
    removed = cli("policies", "remove", *sec_args(dds, store_id), "--policy", "global_memories",
                  "--yes")
    assert removed.code == 0 and removed.out.strip() == "removed: global_memories"
    assert cli("policies", "list", *sec_args(dds, store_id)).out.split() == ["own_user_rows"]


def test_policies_add_on_a_missing_store_fails(cli: Cli, dds: Any) -> None:
    result = cli("policies", "add", *sec_args(dds, "nosuchstore"))
    assert_one_line_error(result, 1, "memory store 'nosuchstore' does not exist in schema "
                                     f"'{OWNER}'")


# --- runtime logins --------------------------------------------------------------------------
def scram_matches(verifier: str, password: str) -> bool:
    """Whether a PostgreSQL SCRAM-SHA-256 verifier was made from ``password``."""
    match = re.fullmatch(r"SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)", verifier)
    assert match, verifier
    iterations, salt, stored_key = int(match[1]), base64.b64decode(match[2]), match[3]
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    return base64.b64encode(hashlib.sha256(client_key).digest()).decode() == stored_key


def stored_verifier(dds: Any, login: str) -> str:
    with psycopg.connect(dds.superuser_url) as conn:
        row = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                           [login]).fetchone()
    assert row is not None and row[0] is not None
    return str(row[0])


def create_login(dds: Any, password: str = TEST_PASSWORD) -> str:
    login = unique("cli_rt")
    result = run_cli("runtime-login", "create", "--url", dds.secadmin_url, "--login", login,
                     "--owner-schema", OWNER, env={"OAM_RUNTIME_PASSWORD": password})
    assert result.code == 0, result
    return login


def test_runtime_login_password_from_stdin(dds: Any) -> None:
    login = unique("cli_rt")
    result = run_cli("runtime-login", "create", "--url", dds.secadmin_url, "--login", login,
                     "--owner-schema", OWNER, "--password-stdin", stdin="piped pass phrase\n")
    assert result.code == 0, result
    assert result.out.startswith(f"runtime login {login!r} created: member of "
                                 f"'{OWNER}_oam_runtime' only")
    assert scram_matches(stored_verifier(dds, login), "piped pass phrase")


def test_runtime_login_password_from_environment(dds: Any) -> None:
    login = create_login(dds, password="env pass phrase")
    assert scram_matches(stored_verifier(dds, login), "env pass phrase")
    assert not scram_matches(stored_verifier(dds, login), "another phrase")


def test_runtime_login_without_a_password_source_fails(dds: Any) -> None:
    login = unique("cli_rt")
    result = run_cli("runtime-login", "create", "--url", dds.secadmin_url, "--login", login,
                     "--owner-schema", OWNER)
    assert_one_line_error(result, 2, "no runtime login password: pipe it to --password-stdin "
                                     "or set OAM_RUNTIME_PASSWORD")
    empty = run_cli("runtime-login", "create", "--url", dds.secadmin_url, "--login", login,
                    "--owner-schema", OWNER, "--password-stdin", stdin="\n")
    assert_one_line_error(empty, 2, "read from standard input is empty")
    with psycopg.connect(dds.superuser_url) as conn:
        assert not deepsec_admin.role_exists(conn, login)


def test_runtime_login_twice_fails(dds: Any) -> None:
    login = create_login(dds)
    again = run_cli("runtime-login", "create", "--url", dds.secadmin_url, "--login", login,
                    "--owner-schema", OWNER, env={"OAM_RUNTIME_PASSWORD": "x" * 12})
    assert_one_line_error(again, 1, f"role {login!r} already exists")


def test_runtime_login_reaches_tables_only_through_policies(cli: Cli, dds: Any) -> None:
    store_id = protected_store(cli, dds)
    with dds.owner_store(store_id) as owner:
        owner.add(["alice's row"], "memory", user_ids="alice", record_ids="a1")
    login = create_login(dds)
    runtime_role = f"{OWNER}_oam_runtime"
    with psycopg.connect(dds.superuser_url) as conn:
        flags = conn.execute(
            "SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, rolinherit, rolcanlogin "
            "FROM pg_roles WHERE rolname = %s", [login]).fetchone()
        assert flags == (False, False, False, False, False, True)
        memberships = conn.execute(
            "SELECT r.rolname, m.admin_option, m.inherit_option, m.set_option "
            "FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid "
            "JOIN pg_roles u ON u.oid = m.member WHERE u.rolname = %s", [login]).fetchall()
        assert memberships == [(runtime_role, False, True, False)]
        for view in ("table_privileges", "column_privileges", "routine_privileges",
                     "usage_privileges"):
            direct = conn.execute(f"SELECT count(*) FROM information_schema.{view} "
                                  "WHERE grantee = %s", [login]).fetchone()
            assert direct == (0,), view
        reachable = conn.execute(
            "SELECT DISTINCT p.table_schema, p.table_name, c.relrowsecurity "
            "FROM (SELECT table_schema, table_name FROM information_schema.table_privileges "
            "      WHERE grantee = %(r)s UNION "
            "      SELECT table_schema, table_name FROM information_schema.column_privileges "
            "      WHERE grantee = %(r)s) p "
            "JOIN pg_namespace n ON n.nspname = p.table_schema "
            "JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = p.table_name",
            {"r": runtime_role}).fetchall()
        own_tables = {t for s, t, _ in reachable if t.startswith(f"{store_id}_")}
        assert len(own_tables) >= 8
        assert {s for s, _, _ in reachable} == {OWNER}
        assert all(rls for _, _, rls in reachable), reachable
        for table in ("application", "end_user", "data_role", "data_role_grant"):
            assert conn.execute("SELECT has_table_privilege(%s, %s, 'SELECT')",
                                [login, f"oam_sec.{table}"]).fetchone() == (False,)
    with psycopg.connect(url_as(dds.superuser_url, login)) as rt:
        assert rt.execute(f"SELECT count(*) FROM {OWNER}.{store_id}_memory").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege,
                           match="violates row-level security policy"):
            rt.execute(f"INSERT INTO {OWNER}.{store_id}_memory (id, record_type, user_id, "
                       "content) VALUES ('x1', 'memory', 'alice', 'forged')")


# --- applications ----------------------------------------------------------------------------
def test_application_token_printed_once_and_usable(cli: Cli, dds: Any) -> None:
    store_id = protected_store(cli, dds)
    assert cli("grant", *sec_args(dds, store_id), "--user", "alice").code == 0
    login = create_login(dds)
    app = unique("cliapp")
    result = run_cli("application", "create", "--url", dds.secadmin_url, "--name", app,
                     "--login", login, "--store", store_id, "--owner-schema", OWNER)
    assert result.code == 0, result
    token = result.out.strip()
    assert result.out == token + "\n"
    assert re.fullmatch(rf"oamapp1\.{app}\.[0-9a-f]{{64}}", token)
    assert "warning: the database access token (on standard output) is shown only this once" \
        in result.err
    assert token not in result.err and token.split(".")[2] not in result.err
    context = create_end_user_security_context(token, ("alice", None))
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(None, url_as(dds.superuser_url, login),
                                    schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=store_id, schema_owner=OWNER)
        store.add(["written with the CLI's token"], "memory", record_ids="t1")
        listed = [(r.id, getattr(r, "user_id", None)) for r in store.list("memory")]
        assert listed == [("t1", "alice")]
        store.close()
    again = run_cli("application", "create", "--url", dds.secadmin_url, "--name", app,
                    "--login", login)
    assert_one_line_error(again, 1, f"application {app!r} already exists")
    assert again.out == ""


def test_application_token_is_bound_to_its_login(cli: Cli, dds: Any) -> None:
    store_id = protected_store(cli, dds)
    assert cli("grant", *sec_args(dds, store_id), "--user", "alice").code == 0
    token = cli("application", "create", "--url", dds.secadmin_url, "--name", unique("cliapp"),
                "--login", create_login(dds)).out.strip()
    context = create_end_user_security_context(token, ("alice", None))
    refused = "does not accept the end-user context for 'alice'"
    with OracleMemoryEndUserSecurityContext(context), \
            pytest.raises(SecurityContextError, match=refused):
        OracleDBMemoryStore(None, dds.runtime_url, schema_policy=SchemaPolicy.NO_CHECK,
                            memory_store_id=store_id, schema_owner=OWNER)


def test_application_for_an_unknown_login_fails(cli: Cli, dds: Any) -> None:
    result = cli("application", "create", "--url", dds.secadmin_url, "--name", unique("cliapp"),
                 "--login", "no_such_login")
    assert_one_line_error(result, 1, "login role 'no_such_login' does not exist")
    assert result.out == ""


# --- end users -------------------------------------------------------------------------------
def end_user_exists(dds: Any, name: str) -> bool:
    with psycopg.connect(dds.secadmin_url) as conn:
        return deepsec_admin.end_user_exists(conn, name)


def test_end_user_create_and_drop(cli: Cli, dds: Any) -> None:
    name = unique("erin")
    sec = ["--url", dds.secadmin_url]
    assert cli("end-user", "create", name, *sec).out.strip() == f"local end user {name!r} created"
    assert cli("end-user", "create", name, *sec).out.strip() == \
        f"local end user {name!r} already exists"
    store_id = protected_store(cli, dds)
    assert cli("grant", *sec_args(dds, store_id), "--user", name).code == 0
    refused = cli("end-user", "drop", name, *sec)
    assert_one_line_error(refused, 2, f"end-user drop removes local end user {name!r}")
    assert end_user_exists(dds, name)
    dropped = cli("end-user", "drop", name, "--yes", *sec)
    assert dropped.code == 0 and dropped.out.strip() == f"local end user {name!r} dropped"
    assert not end_user_exists(dds, name)
    assert name not in cli("grants", "list", *sec_args(dds, store_id)).out
    missing = cli("end-user", "drop", name, "--yes", *sec)
    assert_one_line_error(missing, 1, f"local end user {name!r} does not exist")


def test_end_user_create_refused_to_an_identity_that_does_not_own_oam_sec(cli: Cli,
                                                                           dds: Any) -> None:
    name = unique("erin")
    result = cli("end-user", "create", name, "--url", dds.owner_url)
    assert_one_line_error(result, 1, "the oam_sec security schema belongs to "
                                     "'oam_test_secadmin'")
    assert not end_user_exists(dds, name)


# --- grants ----------------------------------------------------------------------------------
@pytest.fixture
def idp_store(dds: Any) -> Callable[[str, str, str], Any]:
    """Open a runtime store as an identity-provider user of one group."""

    @contextmanager
    def open_store(store_id: str, user: str, group: str) -> Iterator[OracleDBMemoryStore]:
        context = create_end_user_security_context(
            dds.token, IdentityProviderUser(user, (group,), IDP))
        with OracleMemoryEndUserSecurityContext(context):
            store = OracleDBMemoryStore(None, dds.runtime_url,
                                        schema_policy=SchemaPolicy.NO_CHECK,
                                        memory_store_id=store_id, schema_owner=OWNER)
            try:
                yield store
            finally:
                store.close()

    return open_store


def test_grant_list_and_revoke(cli: Cli, dds: Any, idp_store: Any) -> None:
    store_id = protected_store(cli, dds)
    group = unique("support")
    listed = run_cli("grants", "list", "--memory-store-id", store_id, "--owner-schema", OWNER,
                     env={"OAM_ADMIN_URL": dds.secadmin_url})
    assert listed.code == 0 and listed.out == ""
    granted = cli("grant", *sec_args(dds, store_id), "--group", group, "--idp", IDP)
    assert granted.code == 0, granted
    assert granted.out.strip() == (f"granted global_memories, own_user_rows on memory store "
                                   f"{store_id!r} to group {IDP}:{group}")
    assert cli("grant", *sec_args(dds, store_id), "--user", "alice", "--user", "bob",
               "--policy", "own_user_rows").code == 0
    listed = run_cli("grants", "list", "--memory-store-id", store_id, "--owner-schema", OWNER,
                     env={"OAM_ADMIN_URL": dds.secadmin_url})
    assert listed.out.splitlines() == [
        f"group {IDP}:{group}: global_memories, own_user_rows",
        "user alice: own_user_rows",
        "user bob: own_user_rows",
    ]
    with idp_store(store_id, "zed", group) as store:
        store.add(["zed's note"], "memory", record_ids="z1")
        assert [r.id for r in store.list("memory")] == ["z1"]
    revoked = cli("revoke", *sec_args(dds, store_id), "--group", group, "--idp", IDP)
    assert revoked.code == 0 and revoked.out.strip() == (
        f"revoked global_memories, own_user_rows on memory store {store_id!r} from group "
        f"{IDP}:{group}")
    with idp_store(store_id, "zed", group) as store:
        assert store.list("memory") == []
    assert cli("grants", "list", *sec_args(dds, store_id)).out.splitlines() == [
        "user alice: own_user_rows", "user bob: own_user_rows"]


def test_grant_failures(cli: Cli, dds: Any) -> None:
    store_id = protected_store(cli, dds)
    nobody = cli("grant", *sec_args(dds, store_id))
    assert_one_line_error(nobody, 2, "grant needs at least one --user NAME or --group NAME")
    unknown = cli("grant", *sec_args(dds, store_id), "--user", "no_such_user")
    assert_one_line_error(unknown, 1, "local end user 'no_such_user' does not exist")
    bare = create_store(cli, dds)
    no_policy = cli("grant", *sec_args(dds, bare), "--group", "g", "--idp", IDP)
    assert_one_line_error(no_policy, 1, f"no policy is installed on memory store {bare!r}")
    assert cli("grants", "list", *sec_args(dds, store_id)).out == ""


# --- purge -----------------------------------------------------------------------------------
def test_purge_expired_removes_expired_rows_and_reports_them(cli: Cli, dds: Any) -> None:
    store_id = create_store(cli, dds)
    with dds.owner_store(store_id) as owner:
        owner.add(["old 1", "old 2", "fresh"], "memory", user_ids="alice",
                  record_ids=["m1", "m2", "m3"])
        owner.add(["old message", "new message"], "message", user_ids="alice",
                  thread_ids="t1", record_ids=["x1", "x2"])
    with psycopg.connect(dds.owner_url) as conn:
        for table, ids in (("memory", ["m1", "m2"]), ("message", ["x1"])):
            conn.execute(f"UPDATE {store_id}_{table} SET expires_at = now() - interval '1 day' "
                         "WHERE id = ANY(%s)", [ids])
    result = run_cli("purge-expired", "--memory-store-id", store_id, *owner_args(dds))
    assert result.code == 0, result
    assert result.out.strip() == f"removed 3 expired rows from memory store {store_id!r}"
    assert f"oam-admin: purged 2 expired rows from {store_id}_memory" in result.err
    assert f"oam-admin: purged 1 expired rows from {store_id}_message" in result.err
    assert f"oam-admin: purged 0 expired rows from {store_id}_document" in result.err
    with dds.owner_store(store_id) as owner:
        assert [r.id for r in owner.list("memory")] == ["m3"]
        assert [r.id for r in owner.list("message")] == ["x2"]
    with psycopg.connect(dds.owner_url) as conn:
        assert conn.execute(f"SELECT count(*) FROM {store_id}_memory").fetchone() == (1,)
    again = cli("purge-expired", "--memory-store-id", store_id, *owner_args(dds), "--quiet")
    assert again.code == 0 and again.err == ""
    assert again.out.strip() == f"removed 0 expired rows from memory store {store_id!r}"


def test_purge_expired_of_a_missing_store_fails(cli: Cli, dds: Any) -> None:
    result = cli("purge-expired", "--memory-store-id", "nosuchstore", *owner_args(dds))
    assert_one_line_error(result, 1, "memory store 'nosuchstore' cannot be opened")


# --- embedded database -----------------------------------------------------------------------
@pytest.fixture
def private_data_dir() -> Iterator[Path]:
    parent = Path(tempfile.mkdtemp(prefix="oam-admin-db-"))
    try:
        yield parent / "data"
    finally:
        run_cli("db", "stop", "--data-dir", str(parent / "data"))
        shutil.rmtree(parent, ignore_errors=True)


def test_db_start_url_stop(private_data_dir: Path) -> None:
    data = ["--data-dir", str(private_data_dir)]
    not_running = run_cli("db", "url", *data)
    assert_one_line_error(not_running, 1, "is not running; start it with `oam-admin db start`")
    started = run_cli("db", "start", *data)
    assert started.code == 0, started
    url = started.out.strip()
    assert url.startswith("postgresql://")
    assert "password" not in url.replace("passfile=", "") and urlsplit(url).password is None
    assert f"passfile={private_data_dir / 'oam-admin.pgpass'}" in url
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT extname FROM pg_extension WHERE extname = 'vector'"
                            ).fetchone() == ("vector",)
    assert run_cli("db", "url", *data).out.strip() == url
    as_user = run_cli("db", "url", *data, "--user", "support_rt").out.strip()
    assert as_user.startswith("postgresql://support_rt@") and as_user != url
    assert "passfile" not in as_user and "password" not in as_user
    by_default = run_cli("store", "create", "--memory-store-id", "dflt", "--vector-dim", "4",
                         env={"OAM_EMBEDDED_PGDATA": str(private_data_dir)})
    assert by_default.code == 0, by_default
    assert f"no --url or OAM_ADMIN_URL: using the embedded database in {private_data_dir}" \
        in by_default.err
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT vector_dim FROM agent_memory_store_registry "
                            "WHERE store_key = 'dflt'").fetchone() == (4,)
    stopped = run_cli("db", "stop", *data)
    assert (stopped.code, stopped.out.strip()) == (0, "stopped")
    assert run_cli("db", "stop", *data).out.strip().startswith("not running")


# --- identity providers, bindings, token mode, drift -------------------------------------------
def test_idp_add_list_refresh_remove_with_a_dev_issuer(cli: Cli, dds: Any,
                                                      tmp_path: Path) -> None:
    name, issuer = unique("cidp"), f"https://{unique('iss')}.oam.test"
    assert cli("dev-issuer", "init", "--dir", str(tmp_path / "iss"), "--issuer", issuer
               ).out.strip() == issuer
    jwks = cli("dev-issuer", "jwks", "--dir", str(tmp_path / "iss")).out
    (tmp_path / "jwks.json").write_text(jwks)
    url = ["--url", dds.secadmin_url]
    added = cli("idp", "add", *url, "--name", name, "--issuer", issuer, "--audience", "aud",
                "--jwks-file", str(tmp_path / "jwks.json"))
    assert added.code == 0, added
    assert f"its users' rows carry '{name}:<sub>'" in added.out
    again = cli("idp", "add", *url, "--name", name, "--issuer", issuer, "--audience", "aud",
                "--jwks-file", str(tmp_path / "jwks.json"))
    assert_one_line_error(again, 1, "already registered")
    [line] = [x for x in cli("idp", "list", *url).out.splitlines() if x.startswith(name)]
    kid = json.loads(jwks)["keys"][0]["kid"]
    assert f"issuer {issuer}, audience aud" in line and f"keys {kid}" in line
    (tmp_path / "private.json").write_text(json.dumps({"keys": [{"kty": "oct", "k": "x"}]}))
    bad = cli("idp", "refresh", *url, "--name", name, "--jwks-file",
              str(tmp_path / "private.json"))
    assert_one_line_error(bad, 1, "no public RSA key")
    both = cli("idp", "refresh", *url, "--name", name, "--jwks-file", "a", "--jwks-url", "b")
    assert_one_line_error(both, 2, "argument --jwks-url: not allowed with argument --jwks-file")
    neither = cli("idp", "refresh", *url, "--name", name)
    assert_one_line_error(neither, 2, "one of the arguments --jwks-file --jwks-url is required")
    assert "(--jwks-file PATH | --jwks-url URL)" in neither.err  # the usage says so
    assert cli("idp", "refresh", *url, "--name", name, "--jwks-file",
               str(tmp_path / "jwks.json")).code == 0
    assert_one_line_error(cli("idp", "remove", *url, "--name", name), 2, "--yes")
    assert cli("idp", "remove", *url, "--name", name, "--yes").code == 0
    assert_one_line_error(cli("idp", "remove", *url, "--name", name, "--yes"), 1,
                          "no identity provider")


def test_application_bind_token_mode_and_show(cli: Cli, dds: Any, tmp_path: Path) -> None:
    store_id = protected_store(cli, dds)
    assert cli("grant", *sec_args(dds, store_id), "--group", "team", "--idp", IDP).code == 0
    login, app = create_login(dds), unique("capp")
    url = ["--url", dds.secadmin_url]
    token = cli("application", "create", *url, "--name", app, "--login", login).out.strip()
    assert "acts for no store" in cli("check", *url).out
    bound = cli("application", "bind", *url, "--name", app, "--store", store_id,
                "--owner-schema", OWNER, "--idp", IDP)
    assert bound.code == 0, bound
    assert_one_line_error(cli("application", "bind", *url, "--name", app, "--store", store_id),
                          2, "--schema-owner")
    assert cli("application", "token-mode", *url, "--name", app, "--on").code == 0
    assert cli("application", "show", *url, "--name", app).out.strip() == (
        f"{app}: login {login}, token mode on, stores {OWNER}.{store_id}, identity providers "
        f"{IDP}")
    runtime = url_as(dds.superuser_url, login)

    def who(identity: Any) -> str | None:
        context = create_end_user_security_context(token, identity)
        with psycopg.connect(runtime) as conn:
            row = conn.execute("SELECT oam_sec.apply_assertion(%s)",
                               [context.assertion()]).fetchone()
        return None if row is None else row[0]

    jwt = dds.issuer.token("tia", audience="oam-tests", groups=["team"])
    assert who(jwt) == f"{IDP}:tia"
    assert who(IdentityProviderUser("tia", ("team",), IDP)) is None  # token mode: refused
    assert cli("application", "token-mode", *url, "--name", app, "--off").code == 0
    assert who(IdentityProviderUser("tia", ("team",), IDP)) == f"{IDP}:tia"
    assert cli("application", "unbind", *url, "--name", app, "--idp", IDP).code == 0
    assert who(IdentityProviderUser("tia", ("team",), IDP)) is None


def test_check_reports_what_a_runtime_login_changed_on_itself(cli: Cli, dds: Any) -> None:
    login = create_login(dds)
    url = ["--url", dds.secadmin_url]
    assert not [x for x in cli("check", *url).out.splitlines() if f" {login}:" in x]
    with psycopg.connect(url_as(dds.superuser_url, login), autocommit=True) as conn:
        conn.execute(f"ALTER ROLE {login} SET search_path = pg_temp, public".encode())
    result = cli("check", *url)
    assert result.code == 1
    assert f"runtime login {login}: role-level setting search_path=pg_temp, public" in result.out
    with psycopg.connect(dds.superuser_url, autocommit=True) as conn:
        conn.execute(f"ALTER ROLE {login} RESET ALL".encode())
        conn.execute(f"ALTER ROLE {login} BYPASSRLS".encode())
    assert f"runtime login {login}: has BYPASSRLS" in cli("check", *url).out
    with psycopg.connect(dds.superuser_url, autocommit=True) as conn:
        conn.execute(f"DROP ROLE {login}".encode())


def test_check_on_a_database_without_deep_data_security_reports_it(cli: Cli, dds: Any) -> None:
    # A database where nothing protects the rows is not "no drift": the check says so, fails.
    name = unique("nodds")
    with psycopg.connect(dds.superuser_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    try:
        bare = urlsplit(dds.superuser_url)._replace(path=f"/{name}").geturl()
        result = cli("check", "--url", bare)
        assert result.code == 1, result
        assert "Deep Data Security is not installed in this database" in result.out, result
        # Positive control: the database with the security schema has no such finding.
        installed = cli("check", "--url", dds.secadmin_url)
        assert "Deep Data Security is not installed" not in installed.out, installed
    finally:
        with psycopg.connect(dds.superuser_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)".encode())
