"""``oam-admin`` conventions and the commands issue 9 added, on the embedded server.

Conventions: ``--version``, bare commands print help, ``--schema-owner`` (``--owner-schema``
a hidden alias), help on every option, one error line for a database that is down. Commands:
``application list|rotate|drop``, ``runtime-login drop``, ``end-user list``, and ``store
recreate`` of a protected store (refused for an identity that could not re-protect it; the
runtime keeps working when it re-applies the policies).
"""

from __future__ import annotations

import argparse
import re
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_harness import Cli, cli, one_error, unique
from dds import OWNER, SECADMIN, TEST_PASSWORD, url_as
from oracleagentmemory import __version__
from oracleagentmemory.admin_cli.main import build_parser
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    OracleMemoryEndUserSecurityContext,
    create_end_user_security_context,
)
from oracleagentmemory.errors import SecurityContextError

__all__ = ["cli"]  # the fixture, re-exported for pytest


# --- conventions -----------------------------------------------------------------------------
def test_version(cli: Cli) -> None:
    result = cli("--version")
    assert (result.code, result.out.strip()) == (0, f"oam-admin {__version__}")


def test_bare_command_prints_the_help_with_usage_status(cli: Cli) -> None:
    bare = cli()
    assert bare.code == 2 and bare.out == ""
    assert bare.err.startswith("usage: oam-admin")
    for command in ("store", "policies", "application", "end-user", "purge-expired"):
        assert f"\n    {command}" in bare.err, command
    one_error(bare, 2, "the following arguments are required: COMMAND")
    group = cli("application")
    assert group.code == 2 and group.err.startswith("usage: oam-admin application")
    for action in ("create", "list", "rotate", "drop", "show"):
        assert f"\n    {action}" in group.err, action
    one_error(group, 2, "the following arguments are required: ACTION")
    # Positive control: a complete command does not print the help.
    assert "usage:" not in cli("dev-issuer", "jwks", "--help").err


def _options(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_option_has_help_and_one_owner_spelling_is_shown() -> None:
    options = list(_options(build_parser(), "oam-admin"))
    assert len(options) > 100
    hidden = [(path, a.option_strings) for path, a in options if a.help == argparse.SUPPRESS]
    missing = [(path, a.option_strings or a.dest) for path, a in options if not a.help]
    assert missing == []
    assert hidden and all(strings == ["--owner-schema"] for _, strings in hidden)
    shown = {s for _, a in options if a.help != argparse.SUPPRESS for s in a.option_strings}
    assert "--schema-owner" in shown and "--owner-schema" not in shown


def test_schema_owner_is_required_in_either_spelling(cli: Cli, dds: Any) -> None:
    for command in (("policies", "list"), ("audit", "list"), ("audit", "status")):
        missing = cli(*command, "--url", dds.secadmin_url, "--memory-store-id", "x")
        one_error(missing, 2, "the following arguments are required: --schema-owner")
        usage = missing.err.split("error: ")[0]
        assert " --schema-owner SCHEMA" in usage and "[--schema-owner" not in usage, usage
        helped = cli(*command, "--help")
        assert "--schema-owner SCHEMA" in helped.out and "[--schema-owner" not in helped.out
    both = cli("policies", "list", "--url", dds.secadmin_url, "--memory-store-id", "x",
               "--schema-owner", OWNER, "--owner-schema", "other")
    one_error(both, 2, "not allowed with")
    for spelling in ("--schema-owner", "--owner-schema"):
        given = cli("policies", "list", "--url", dds.secadmin_url, "--memory-store-id",
                    "nosuchstore", spelling, OWNER)
        one_error(given, 1, f"memory store 'nosuchstore' does not exist in schema '{OWNER}'")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_COMMON_OPTIONS = {"--url", "-q", "--quiet", "-h", "--help"}


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
            ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every runnable command (``audit list``...) and its parser."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        yield path, parser
    for action in subparsers:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


def _required_options(parser: argparse.ArgumentParser) -> set[str]:
    """The options the parser itself refuses to run without (alone or as a required group)."""
    required = {s for a in parser._actions if a.required for s in a.option_strings}
    for group in parser._mutually_exclusive_groups:
        if group.required:
            required |= {s for a in group._group_actions for s in a.option_strings}
    return required


def _minimal_argv(parser: argparse.ArgumentParser) -> list[str]:
    """What the parser requires (one member of each required group), ``--yes`` when the
    command has it: a value of the right form for each."""
    def value(action: argparse.Action) -> str:
        if action.choices:
            return str(next(iter(action.choices)))
        return "1" if action.type in (int, float) else str(action.dest)

    argv: list[str] = []
    for group in parser._mutually_exclusive_groups:
        if group.required:
            first = group._group_actions[0]
            argv += [first.option_strings[0], value(first)]
    for action in parser._actions:
        if action.option_strings == ["--yes"]:
            argv.append("--yes")
        elif action.required and not action.option_strings:
            argv.append(value(action))
        elif action.required:
            argv += [action.option_strings[0], value(action)]
    return argv


def test_an_option_a_command_refuses_to_run_without_is_marked_required(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every command with only what its parser requires (a database that is down, the
    secret in its environment variable): an error that names one option of the command as
    missing names an option the usage and help show as required. (An error naming two, as in
    "--store or --idp", asks for at least one of them, which argparse cannot express.)"""
    monkeypatch.chdir(tmp_path)  # files the commands write (keys, a dev issuer) land here
    down = f"postgresql://nobody@127.0.0.1:{_closed_port()}/oam"
    mismatches, ran = [], 0
    for path, parser in _leaves(build_parser()):
        if path[0] == "db":  # the embedded server's own commands take no --url
            continue
        result = cli(*path, *_minimal_argv(parser), "--url", down,
                     env={"OAM_RUNTIME_PASSWORD": TEST_PASSWORD})
        ran += 1
        own = {s for a in parser._actions for s in a.option_strings} - _COMMON_OPTIONS
        for line in result.err.splitlines():
            named = set(re.findall(r"--[a-z][a-z-]*", line)) & own
            if line.startswith("error: ") and len(named) == 1 \
                    and not named <= _required_options(parser):
                mismatches.append((" ".join(path), line))
    assert ran > 40
    assert mismatches == [], "\n".join(map(str, mismatches))


@pytest.mark.parametrize("command", [
    ("policies", "list", "--memory-store-id", "s1", "--schema-owner", "o"),
    ("end-user", "list"),
    ("check",),
    ("store", "check", "--memory-store-id", "s1"),
])
def test_a_database_that_is_down_is_one_line_with_the_fix(cli: Cli,
                                                          command: tuple[str, ...]) -> None:
    url = f"postgresql://nobody@127.0.0.1:{_closed_port()}/oam"
    result = cli(*command, "--url", url)
    line = one_error(result, 1, "127.0.0.1")
    assert "oam-admin db start" in line
    assert result.seconds < 10, result.seconds
    assert [x for x in result.err.splitlines()
            if not x.startswith(("oam-admin: ", "error: "))] == []
    assert result.out == ""


# --- end users, applications, runtime logins -------------------------------------------------
def test_end_user_list(cli: Cli, dds: Any) -> None:
    name = unique("eu")
    url = ["--url", dds.secadmin_url]
    assert name not in cli("end-user", "list", *url).out.split()
    assert cli("end-user", "create", *url, name).code == 0
    listed = cli("end-user", "list", *url)
    assert listed.code == 0 and name in listed.out.split() and "alice" in listed.out.split()
    assert cli("end-user", "drop", *url, name, "--yes").code == 0
    assert name not in cli("end-user", "list", *url).out.split()


def _protected_store(cli: Cli, dds: Any) -> str:
    store_id = unique("v")
    assert cli("store", "create", "--url", dds.owner_url, "--memory-store-id", store_id,
               "--vector-dim", "3").code == 0
    sec = ["--url", dds.secadmin_url, "--memory-store-id", store_id, "--schema-owner", OWNER]
    assert cli("policies", "add", *sec).code == 0
    assert cli("grant", *sec, "--user", "alice", "--user", "bob").code == 0
    return store_id


def _login(cli: Cli, url: str, owner: str) -> str:
    login = unique("conv_rt")
    created = cli("runtime-login", "create", "--url", url, "--login", login, "--schema-owner",
                  owner, env={"OAM_RUNTIME_PASSWORD": TEST_PASSWORD})
    assert created.code == 0, created
    return login


def _runtime_rows(dds: Any, login: str, token: str, store_id: str, user: str,
                  owner: str = OWNER) -> list[tuple[str, str | None]]:
    context = create_end_user_security_context(token, (user, None))
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(None, url_as(dds.superuser_url, login),
                                    schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=store_id, schema_owner=owner)
        try:
            return sorted((r.id, getattr(r, "user_id", None)) for r in store.list("memory"))
        finally:
            store.close()


def test_application_list_rotate_drop(cli: Cli, dds: Any) -> None:
    store_id = _protected_store(cli, dds)
    url = ["--url", dds.secadmin_url]
    login, app = _login(cli, dds.secadmin_url, OWNER), unique("capp")
    created = cli("application", "create", *url, "--name", app, "--login", login,
                  "--store", store_id, "--schema-owner", OWNER)
    assert created.code == 0, created
    token = created.out.strip()
    listed = cli("application", "list", *url)
    assert f"{app}: login {login}, token mode off, stores {OWNER}.{store_id}, identity " \
           "providers -" in listed.out.splitlines()
    assert _runtime_rows(dds, login, token, store_id, "alice") == []

    one_error(cli("application", "rotate", *url, "--name", app), 2, "pass --yes to confirm")
    assert _runtime_rows(dds, login, token, store_id, "alice") == []  # nothing changed
    rotated = cli("application", "rotate", *url, "--name", app, "--yes")
    assert rotated.code == 0, rotated
    new_token = rotated.out.strip()
    assert new_token.startswith(f"oamapp1.{app}.") and new_token != token
    assert "shown only this once" in rotated.err and new_token not in rotated.err
    with pytest.raises(SecurityContextError):
        _runtime_rows(dds, login, token, store_id, "alice")
    assert _runtime_rows(dds, login, new_token, store_id, "alice") == []

    one_error(cli("application", "drop", *url, "--name", app), 2, "pass --yes to confirm")
    assert cli("application", "drop", *url, "--name", app, "--yes").code == 0
    assert app not in cli("application", "list", *url).out
    with pytest.raises(SecurityContextError):
        _runtime_rows(dds, login, new_token, store_id, "alice")
    one_error(cli("application", "drop", *url, "--name", app, "--yes"), 1,
              f"no application {app!r} exists")
    one_error(cli("application", "rotate", *url, "--name", app, "--yes"), 1,
              f"no application {app!r} exists")


def _role_exists(dds: Any, role: str) -> bool:
    with psycopg.connect(dds.superuser_url) as conn:
        return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                            [role]).fetchone() is not None


def test_runtime_login_drop(cli: Cli, dds: Any) -> None:
    url = ["--url", dds.secadmin_url]
    login, app = _login(cli, dds.secadmin_url, OWNER), unique("capp")
    assert cli("application", "create", *url, "--name", app, "--login", login).code == 0
    one_error(cli("runtime-login", "drop", *url, "--login", login), 2, "pass --yes to confirm")
    one_error(cli("runtime-login", "drop", *url, "--login", login, "--yes"), 1,
              f"is used by application(s) {app}")
    for other in (OWNER, SECADMIN):  # never drops a role that is not a runtime login
        one_error(cli("runtime-login", "drop", *url, "--login", other, "--yes"), 1,
                  "is not a runtime login")
        assert _role_exists(dds, other)
    assert _role_exists(dds, login)
    assert cli("application", "drop", *url, "--name", app, "--yes").code == 0
    dropped = cli("runtime-login", "drop", *url, "--login", login, "--yes")
    assert dropped.code == 0 and dropped.out.strip() == f"runtime login {login!r} dropped"
    assert not _role_exists(dds, login)
    one_error(cli("runtime-login", "drop", *url, "--login", login, "--yes"), 1,
              f"no runtime login {login!r} exists")


# --- store recreate of a protected store -----------------------------------------------------
def test_recreate_by_an_owner_that_cannot_re_protect_is_refused_before_dropping(
    cli: Cli, dds: Any,
) -> None:
    store_id = _protected_store(cli, dds)
    with OracleDBMemoryStore(None, dds.owner_url, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                             memory_store_id=store_id) as owner:
        owner.add(["kept"], "memory", user_ids="alice", record_ids="k1")
    refused = cli("store", "recreate", "--url", dds.owner_url, "--memory-store-id", store_id,
                  "--yes")
    one_error(refused, 1, f"memory store {store_id!r} is protected by Deep Data Security")
    assert "nothing was changed" in refused.err
    with OracleDBMemoryStore(None, dds.owner_url, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                             memory_store_id=store_id) as owner:
        assert owner.get("memory", "k1") is not None
    # Positive control: an unprotected store of the same owner is recreated.
    bare = unique("b")
    assert cli("store", "create", "--url", dds.owner_url, "--memory-store-id", bare).code == 0
    assert cli("store", "recreate", "--url", dds.owner_url, "--memory-store-id", bare,
               "--yes").code == 0


@pytest.fixture
def owner_and_administrator(dds: Any) -> Iterator[str]:
    """A schema owner that is also a member of the policy administrator role."""
    role = f"oam_test_combo_{secrets.token_hex(3)}"
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        su.execute(f"CREATE ROLE {role} LOGIN CREATEROLE PASSWORD '{TEST_PASSWORD}'".encode())
        su.execute(f"CREATE SCHEMA {role} AUTHORIZATION {role}".encode())
        su.execute(f"GRANT {SECADMIN} TO {role}".encode())
    yield role


def test_recreate_re_applies_policies_and_keeps_grants_so_the_runtime_works(
    cli: Cli, dds: Any, owner_and_administrator: str,
) -> None:
    owner = owner_and_administrator
    url = url_as(dds.superuser_url, owner)
    store_id = unique("r")
    assert cli("store", "create", "--url", url, "--memory-store-id", store_id,
               "--vector-dim", "3").code == 0
    sec = ["--url", url, "--memory-store-id", store_id, "--schema-owner", owner]
    assert cli("policies", "add", *sec).code == 0
    assert cli("grant", *sec, "--user", "alice", "--user", "bob").code == 0
    login, app = _login(cli, url, owner), unique("rapp")
    token = cli("application", "create", "--url", url, "--name", app, "--login", login,
                "--store", store_id, "--schema-owner", owner).out.strip()
    grants_before = cli("grants", "list", *sec).out

    recreated = cli("store", "recreate", "--url", url, "--memory-store-id", store_id, "--yes")
    assert recreated.code == 0, recreated
    assert "re-applying global_memories, own_user_rows" in recreated.err
    assert cli("policies", "list", *sec).out.split() == ["global_memories", "own_user_rows"]
    assert cli("grants", "list", *sec).out == grants_before
    with psycopg.connect(dds.superuser_url) as conn:
        unprotected = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r' AND c.relname LIKE %s "
            "AND NOT c.relrowsecurity", [owner, f"{store_id}\\_%"]).fetchall()
    assert unprotected == []

    context = create_end_user_security_context(token, ("alice", None))
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(None, url_as(dds.superuser_url, login),
                                    schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=store_id, schema_owner=owner)
        try:
            store.add(["alice after the recreate"], "memory", record_ids="a1")
        finally:
            store.close()
    assert _runtime_rows(dds, login, token, store_id, "alice", owner) == [("a1", "alice")]
    assert _runtime_rows(dds, login, token, store_id, "bob", owner) == []
