"""``deploy/oracle/bootstrap.sql`` made runnable without SQLcl, for a provisioned test database.

The script is written for SQLcl / SQL*Plus: ``DEFINE`` names the three identities, ``ACCEPT``
prompts for their passwords. Here the ``DEFINE`` values are kept, the ``ACCEPT``ed variables
take the passwords given, the SQL*Plus commands (``WHENEVER``, ``SET``, ``DEFINE``,
``UNDEFINE``, ``ACCEPT``, ``PROMPT``) are dropped, and the rest is split into statements that
python-oracledb can execute one by one (without their ``;``). Nothing is executed here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

BOOTSTRAP_SQL = Path(__file__).resolve().parents[2] / "deploy" / "oracle" / "bootstrap.sql"

IDENTITY_VARIABLES = {"policy_admin": "oam_policy_admin", "owner": "oam_owner",
                      "runtime": "oam_runtime"}
"""Role in the suite -> the script's ``DEFINE`` variable naming that identity."""

_SQLPLUS_COMMAND = re.compile(r"(?i)^(WHENEVER|SET|DEFINE|UNDEFINE|ACCEPT|PROMPT)\b")
_SUBSTITUTION = re.compile(r"&&?([A-Za-z_][A-Za-z0-9_]*)\.?")
_DEEP_DATA_SECURITY = re.compile(
    r"(?i)\b(END USER|DATA ROLE|DATA GRANTS?|APPLICATION IDENTITY|DBA_END_USERS|DBA_DATA_\w+"
    r"|DBA_APPLICATION_IDENTITIES)\b")


@dataclass(frozen=True)
class RenderedBootstrap:
    """The script's statements with every substitution variable replaced."""

    identities: Mapping[str, str]
    """Role (``policy_admin``, ``owner``, ``runtime``) -> the account name the script creates."""
    password_variables: tuple[str, ...]
    """The ``ACCEPT``ed variables (the passwords the script prompts for)."""
    statements: tuple[str, ...]


def needs_deep_data_security(statement: str) -> bool:
    """Whether ``statement`` grants or reads a Deep Data Security privilege or view (it fails
    on a database without the feature; the rest of the script does not need it)."""
    return _DEEP_DATA_SECURITY.search(statement) is not None


def password_variables(text: str) -> tuple[str, ...]:
    """The variables the script ``ACCEPT``s, in order."""
    return tuple(line.split()[1].lower() for line in _sqlplus_lines(text)
                 if line.split()[0].upper() == "ACCEPT")


def render_bootstrap(text: str, passwords: Mapping[str, str]) -> RenderedBootstrap:
    """``text`` (the script) with ``passwords`` (``ACCEPT`` variable -> password) substituted.

    Raises :class:`ValueError` when a variable is neither ``DEFINE``d nor given, or a
    password could not stand inside the script's double quotes.
    """
    defines: dict[str, str] = {}
    for line in _sqlplus_lines(text):
        if line.split()[0].upper() == "DEFINE":
            name, _, value = line[len("DEFINE"):].partition("=")
            defines[name.strip().lower()] = value.strip()
    for name, password in passwords.items():
        if not password or '"' in password or "&" in password:
            raise ValueError(f"{name}: a password must be non-empty, without '\"' or '&'")
    values = {**defines, **{k.lower(): v for k, v in passwords.items()}}

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1).lower()
        if name not in values:
            raise ValueError(f"&{name} is neither DEFINEd in the script nor given")
        return values[name]

    body = "\n".join(_sql_lines(text))
    statements = tuple(re.sub(r"\s+", " ", _SUBSTITUTION.sub(substitute, s)).strip()
                       for s in body.split(";") if s.strip())
    identities = {role: defines[variable] for role, variable in IDENTITY_VARIABLES.items()}
    return RenderedBootstrap(identities, password_variables(text), statements)


def _code_lines(text: str) -> list[str]:
    """Non-empty lines without their ``--`` comments."""
    return [line for raw in text.splitlines() if (line := raw.split("--", 1)[0].strip())]


def _sqlplus_lines(text: str) -> list[str]:
    return [line for line in _code_lines(text) if _SQLPLUS_COMMAND.match(line)]


def _sql_lines(text: str) -> list[str]:
    return [line for line in _code_lines(text) if not _SQLPLUS_COMMAND.match(line)]
