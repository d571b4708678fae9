"""The Oracle deployment files (``deploy/oracle/``) checked offline: no Oracle database runs here.

``bootstrap.sql`` is read as SQLcl would run it (its ``DEFINE``/``ACCEPT`` substitution variables
replaced), split into statements, and each statement must have one of the documented shapes;
object grants parse with sqlglot's Oracle dialect (sqlglot does not parse ``CREATE USER`` or
grants of system privileges: it falls back to an unparsed command, so those are checked by
pattern, against the list of documented privilege names). The runtime pool account must get
exactly ``CREATE SESSION`` and ``CREATE END USER SECURITY CONTEXT``; a tampered copy of the script
shows the checks catch an extra privilege (the positive control). ``README.md`` must name only
files that exist, and every ``oam-admin`` command it shows must parse with the real CLI parser
and run as the identity that owns its step.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found]

import pytest
import sqlglot
from oam_gateway.config.tenant_settings import TenantSettings
from oracleagentmemory.admin_cli.main import build_parser
from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT / "deploy" / "oracle"
BOOTSTRAP = ORACLE / "bootstrap.sql"
README = ORACLE / "README.md"

RUNTIME_PRIVILEGES = frozenset({"CREATE SESSION", "CREATE END USER SECURITY CONTEXT"})

DOCUMENTED_SYSTEM_PRIVILEGES = frozenset({
    # Database Security Guide / SQL Language Reference (GRANT): ordinary system privileges.
    "CREATE SESSION", "CREATE TABLE", "CREATE SEQUENCE", "CREATE JOB", "CREATE MINING MODEL",
    "CREATE TRIGGER", "CREATE PROCEDURE",
    # Oracle Deep Data Security Guide (26ai, RU 23.26.2).
    "CREATE END USER", "ALTER END USER", "DROP END USER", "CREATE DATA ROLE", "DROP DATA ROLE",
    "GRANT ANY DATA ROLE", "CREATE APPLICATION IDENTITY", "CREATE ANY DATA GRANT",
    "ADMINISTER ANY DATA GRANT", "DROP ANY DATA GRANT", "SET USE DATA GRANTS ONLY",
    "CREATE END USER SECURITY CONTEXT",
})

_SQLPLUS_COMMAND = re.compile(r"(?i)^(WHENEVER|SET|DEFINE|UNDEFINE|ACCEPT|PROMPT)\b")
_NAME = r"[A-Z][A-Z0-9_$#]*"
_CREATE_USER = re.compile(
    rf"CREATE USER IF NOT EXISTS (?P<user>{_NAME}) IDENTIFIED BY \"(?P<password>[^\"]+)\""
    rf"(?: DEFAULT TABLESPACE (?P<ts>{_NAME}) QUOTA (?P<quota>\d+[KMGT]?|UNLIMITED) ON (?P=ts))?")
_ALTER_QUOTA = re.compile(
    rf"ALTER USER (?P<user>{_NAME}) QUOTA (?:\d+[KMGT]?|UNLIMITED) ON {_NAME}")
_SYSTEM_GRANT = re.compile(rf"GRANT (?P<privileges>[A-Z ,]+?) TO (?P<user>{_NAME})")
_OBJECT_GRANT = re.compile(
    rf"GRANT (?P<privilege>SELECT|EXECUTE) ON (?P<object>{_NAME}\.{_NAME}) TO (?P<user>{_NAME})")


# --- reading the script as SQLcl does ---------------------------------------------------------
@dataclass
class Script:
    """What ``bootstrap.sql`` does, once its substitution variables are replaced."""

    defines: dict[str, str]
    accepted: dict[str, str]
    """ACCEPTed variable -> its ACCEPT line."""
    undefined: set[str]
    statements: list[str]
    users: dict[str, str] = field(default_factory=dict)
    """Created user -> its password placeholder."""
    system: dict[str, set[str]] = field(default_factory=dict)
    objects: dict[str, set[str]] = field(default_factory=dict)
    quota_users: set[str] = field(default_factory=set)


def read_script(text: str) -> Script:
    """Substitute, split and classify; raise AssertionError on any statement of no known shape."""
    defines: dict[str, str] = {}
    accepted: dict[str, str] = {}
    undefined: set[str] = set()
    sql_lines: list[str] = []
    for raw in text.splitlines():
        line = raw.split("--", 1)[0].strip()
        if not line:
            continue
        if _SQLPLUS_COMMAND.match(line):
            words = line.split()
            verb = words[0].upper()
            if verb == "DEFINE":
                name, _, value = line[len("DEFINE"):].partition("=")
                defines[name.strip().lower()] = value.strip()
            elif verb == "ACCEPT":
                accepted[words[1].lower()] = line
            elif verb == "UNDEFINE":
                undefined.add(words[1].lower())
            continue
        sql_lines.append(line)

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1).lower()
        if name in defines:
            return defines[name]
        assert name in accepted, f"&{name} is neither DEFINEd nor ACCEPTed"
        return f"<{name}>"

    body = re.sub(r"&&?([A-Za-z_][A-Za-z0-9_]*)\.?", substitute, " ".join(sql_lines))
    statements = [re.sub(r"\s+", " ", s).strip() for s in body.split(";") if s.strip()]
    script = Script(defines, accepted, undefined, statements)
    for statement in statements:
        classify(script, statement)
    return script


def classify(script: Script, statement: str) -> None:
    if m := _CREATE_USER.fullmatch(statement):
        script.users[m["user"]] = m["password"]
        if m["quota"]:
            script.quota_users.add(m["user"])
    elif m := _ALTER_QUOTA.fullmatch(statement):
        script.quota_users.add(m["user"])
    elif m := _OBJECT_GRANT.fullmatch(statement):
        parsed = sqlglot.parse_one(statement, read="oracle")
        assert isinstance(parsed, exp.Grant), statement
        script.objects.setdefault(m["user"], set()).add(f"{m['privilege']} ON {m['object']}")
    elif m := _SYSTEM_GRANT.fullmatch(statement):
        privileges = {p.strip() for p in m["privileges"].split(",")}
        unknown = privileges - DOCUMENTED_SYSTEM_PRIVILEGES
        assert not unknown, f"undocumented system privileges {sorted(unknown)} in: {statement}"
        script.system.setdefault(m["user"], set()).update(privileges)
    else:
        raise AssertionError(f"a statement of no known shape: {statement}")


@pytest.fixture(scope="module")
def script() -> Script:
    return read_script(BOOTSTRAP.read_text(encoding="utf-8"))


def names(script: Script) -> tuple[str, str, str]:
    d = script.defines
    return d["oam_policy_admin"], d["oam_owner"], d["oam_runtime"]


# --- bootstrap.sql -------------------------------------------------------------------------------
def check_identities(script: Script) -> None:
    admin, owner, runtime = names(script)
    assert len({admin, owner, runtime}) == 3
    assert set(script.users) == {admin, owner, runtime}
    assert set(script.system) == {admin, owner, runtime}


def check_runtime(script: Script) -> None:
    _, _, runtime = names(script)
    assert script.system[runtime] == RUNTIME_PRIVILEGES
    assert runtime not in script.objects
    assert runtime not in script.quota_users


def check_owner(script: Script) -> None:
    _, owner, _ = names(script)
    assert {"CREATE SESSION", "CREATE TABLE", "CREATE SEQUENCE", "CREATE JOB",
            "CREATE MINING MODEL", "CREATE TRIGGER", "CREATE PROCEDURE"} <= script.system[owner]
    assert owner in script.quota_users
    assert script.objects[owner] == {"EXECUTE ON CTXSYS.CTX_DDL"}
    assert not {p for p in script.system[owner] if "DATA" in p or "END USER" in p}


def check_policy_admin(script: Script) -> None:
    admin, _, _ = names(script)
    assert {"CREATE END USER", "DROP END USER", "CREATE DATA ROLE", "GRANT ANY DATA ROLE",
            "CREATE ANY DATA GRANT", "ADMINISTER ANY DATA GRANT", "DROP ANY DATA GRANT",
            "SET USE DATA GRANTS ONLY", "CREATE APPLICATION IDENTITY"} <= script.system[admin]
    assert "CREATE TABLE" not in script.system[admin]
    assert admin not in script.quota_users
    assert all(grant.startswith("SELECT ON SYS.DBA_") for grant in
               script.objects[admin] - {"SELECT ON SYS.V_$PARAMETER"})
    assert "CREATE USER" not in script.system[admin]


def check_passwords(script: Script) -> None:
    assert set(script.users.values()) == {f"<{name}>" for name in script.accepted}
    for name, line in script.accepted.items():
        assert name.endswith("_password") and line.upper().endswith(" HIDE"), line
    assert script.undefined == set(script.accepted)


CHECKS = [check_identities, check_runtime, check_owner, check_policy_admin, check_passwords]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_bootstrap_sql(script: Script, check: Callable[[Script], None]) -> None:
    """Three distinct identities; the runtime account gets exactly its two privileges, no object
    privilege and no quota; the owner can build the store (and its job, models, Oracle Text
    sync) but holds no Deep Data Security privilege; the policy administrator holds those and
    no table privilege; passwords are prompted hidden, never written, and forgotten."""
    check(script)


def test_the_script_stops_at_the_first_error() -> None:
    first = next(line for line in BOOTSTRAP.read_text(encoding="utf-8").splitlines()
                 if line.strip() and not line.startswith("--"))
    assert first.strip() == "WHENEVER SQLERROR EXIT SQL.SQLCODE"


RUNTIME_GRANT = "GRANT CREATE SESSION, CREATE END USER SECURITY CONTEXT TO &oam_runtime;"


@pytest.mark.parametrize("original,tampered", [
    (RUNTIME_GRANT, RUNTIME_GRANT.replace(" TO", ", CREATE TABLE TO")),
    (RUNTIME_GRANT, RUNTIME_GRANT + "\nGRANT SELECT ON SYS.DBA_DATA_GRANTS TO &oam_runtime;"),
    (RUNTIME_GRANT, RUNTIME_GRANT + "\nALTER USER &oam_runtime QUOTA 1G ON USERS;"),
    ("GRANT CREATE JOB TO &oam_owner;", "GRANT DBA TO &oam_owner;"),
    ("GRANT CREATE JOB TO &oam_owner;", "GRANT CREATE JOB TO &oam_owner WITH ADMIN OPTION;"),
    ('IDENTIFIED BY "&oam_runtime_password"', 'IDENTIFIED BY "hunter2"'),
], ids=["runtime-extra-privilege", "runtime-object-privilege", "runtime-quota",
        "undocumented-role", "admin-option", "password-in-file"])
def test_the_checks_catch_a_tampered_script(original: str, tampered: str) -> None:
    text = BOOTSTRAP.read_text(encoding="utf-8")
    assert original in text
    with pytest.raises(AssertionError):  # while reading it, or in one of the checks
        changed = read_script(text.replace(original, tampered))
        for check in CHECKS:
            check(changed)


# --- README.md -----------------------------------------------------------------------------------
def readme() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_says_it_was_not_run_against_a_live_database() -> None:
    assert "Not yet run against a live database." in readme()
    assert "NOT YET RUN AGAINST A LIVE DATABASE" in BOOTSTRAP.read_text(encoding="utf-8")


def test_every_file_the_readme_names_exists() -> None:
    paths = set(re.findall(r"`([\w./-]+\.(?:sql|py|md|toml))`", readme()))
    paths |= set(re.findall(r"@([\w./-]+\.sql)", readme())) - {"owner.sql", "admin.sql"}
    assert paths, "the README names no file"
    missing = [p for p in sorted(paths)
               if not any((base / p).exists() for base in (ORACLE, ROOT))]
    assert not missing, f"the README names files that do not exist: {missing}"


def test_the_readme_lists_every_file_of_the_folder() -> None:
    text = readme()
    for path in ORACLE.iterdir():
        if path.is_file():
            assert f"`{path.name}`" in text, f"{path.name} is not described in the README"


def oam_admin_commands() -> list[str]:
    commands: list[str] = []
    pending = ""
    for line in readme().splitlines():
        line = pending + line.split("#", 1)[0].strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("oam-admin "):
            commands.append(line)
    return commands


def test_the_readme_shows_oam_admins_store_sequence() -> None:
    verbs = {" ".join(shlex.split(c)[1:3]) for c in oam_admin_commands()}
    assert {"store create", "policies add", "end-user create"} <= verbs
    assert any(c.startswith("oam-admin grant ") for c in oam_admin_commands())


@pytest.mark.parametrize("command", oam_admin_commands())
def test_every_oam_admin_command_in_the_readme_parses_with_the_real_cli(command: str) -> None:
    build_parser().parse_args(shlex.split(command)[1:])  # SystemExit on an unknown name


def test_the_readme_says_plainly_what_never_ran_against_a_live_database() -> None:
    text = readme()
    assert "have not run live" in " ".join(text.replace(">", " ").split())  # oam-admin on Oracle
    assert "has **not been run**" in text  # the gateway-to-Oracle path, never run live


def test_the_readme_runs_each_oam_admin_step_as_its_identity_over_an_oracle_url() -> None:
    for command in oam_admin_commands():
        args = build_parser().parse_args(shlex.split(command)[1:])
        assert args.url in ('$OWNER', '$ADMIN'), command
        owner_steps = {"store", "audit", "model"}
        assert (args.url == "$OWNER") is (args.command in owner_steps), command


def test_the_readmes_gateway_settings_load_as_an_oracle_tenant() -> None:
    [block] = re.findall(r"```toml\n(.*?)```", readme(), re.S)
    tenants = tomllib.loads(block)["tenants"]
    tenant = TenantSettings.model_validate(tenants["acme"])
    assert tenant.oracle is not None and tenant.oracle.dsn.startswith("tcps://")
    assert tenant.oracle.user == "OAM_RUNTIME"
    assert tenant.end_user_mode == "local"
