"""DDL of the Oracle security admin: pure builders returning statement text.

Policies, data roles, end users and role grants come from the Deep Data Security renderer
(:mod:`oam_policies.oracle`, pinned by ``tests/golden/oracle/``); this module orders them and
adds the runtime login's ``CREATE USER``. DDL takes no bind variables, so every name is
validated (:mod:`.names`) before it is written, and the one value, a runtime login's password,
by :func:`quoted_password`.

**Order, because Oracle DDL commits.** Each DDL statement ends the transaction it runs in, so
a failure between two statements cannot be rolled back: the order is chosen so that any prefix
of a sequence leaves a safe state that running the whole sequence again repairs:

- installing: ``SET USE DATA GRANTS ONLY ... ENABLED`` on every table first (a table with
  mandatory data grants and no grant is invisible to end users, never open), then the data role
  (a role without grants grants nothing), then its data grants (``CREATE OR REPLACE``, so a
  re-run rewrites them over the current columns);
- removing: the data grants first, then the role; mandatory data grants stay enabled (removing a
  policy must never open a table).

Not verified live (no Oracle database here; the guide does not say): that ``SET USE DATA GRANTS
ONLY ... ENABLED`` on a table where it is already enabled succeeds (a re-run issues it again),
and that ``DROP DATA ROLE`` takes the role's grants to end users with it (the guide says so of
``DROP END USER`` and data grants).
"""

from __future__ import annotations

import re

from oam_policies.model import DataRolePolicy
from oam_policies.oracle import (
    OracleTarget,
    render_create_data_role,
    render_create_end_user,
    render_drop_data_role,
    render_drop_end_user,
    render_grant,
    render_grant_data_role,
    render_removal,
    render_revoke_data_role,
    render_use_data_grants_only,
)

from oracleagentmemory.engines.oracle.admin_sql import RUNTIME_PRIVILEGES
from oracleagentmemory.engines.oracle.names import normalise, quote
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_CHARS = 1024
"""Oracle AI Database 26ai accepts passwords of up to 1024 bytes (not verified in the docs
corpus: the database, and its password profile, enforce their own rules on top of this)."""

_PASSWORD = re.compile(r"[A-Za-z0-9_#$!%&()*+,\-./:;<=>?@\[\]^{|}~]+")


def quoted_password(password: object) -> str:
    """``password`` as the double-quoted text of ``IDENTIFIED BY``, the only place a password is
    written into SQL.

    ``CREATE USER`` is DDL and takes no bind variable, so the password must be text. Inside
    double quotes Oracle keeps it exactly (case, punctuation) and a ``"`` cannot be escaped, so
    the password is validated instead of escaped: ASCII letters, digits and punctuation without
    quotes, backslash, backtick or white space, 8 to 1024 characters.
    """
    if not isinstance(password, str):
        raise InvalidArgumentTypeError("password must be a str", argument="password")
    if not MIN_PASSWORD_CHARS <= len(password) <= MAX_PASSWORD_CHARS or \
            not _PASSWORD.fullmatch(password):
        raise InvalidArgumentError(
            f"an Oracle runtime login password has {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} "
            "ASCII letters, digits and punctuation, without quotes, backslash, backtick or "
            "spaces (it is written into CREATE USER, which takes no bind variable)",
            argument="password")
    return f'"{password}"'


# --- policies -----------------------------------------------------------------------------------
def install_policy(policy: DataRolePolicy, target: OracleTarget,
                   create_role: str | None) -> list[str]:
    """Mandatory data grants on every table of the store (the policy's first), then
    ``create_role`` (the role's ``CREATE DATA ROLE``, ``None`` when it exists:
    :func:`create_local_role`, :func:`create_group_role`), then each data grant; a grant left
    with no privilege on the current columns is dropped rather than kept with its old ones.

    Every table, not only those the policy names: a store given only ``global_memories`` would
    otherwise keep its threads, messages, documents and profiles reachable by an end user
    through any ordinary object privilege (one granted to ``PUBLIC``, say), where PostgreSQL
    gives the runtime role no privilege at all on them."""
    statements = render_use_data_grants_only(
        dict.fromkeys((*policy.tables(), *target.tables)), target)
    if create_role is not None:
        statements.append(create_role)
    statements.extend(policy_grants(policy, target))
    return statements


def create_local_role(role: str) -> str:
    """``CREATE DATA ROLE`` of a local data role (granted to local end users)."""
    return render_create_data_role(normalise(role, what="data role"))


def policy_grants(policy: DataRolePolicy, target: OracleTarget) -> list[str]:
    """``CREATE OR REPLACE DATA GRANT`` of each grant of ``policy`` to ``target.data_role``
    (``DROP DATA GRANT IF EXISTS`` for one that grants nothing on the current columns)."""
    drops = render_removal(policy, target)
    return [render_grant(policy, index, target) or drops[index]
            for index in range(len(policy.grants))]


def remove_policy(policy: DataRolePolicy, target: OracleTarget, *, drop_role: bool) -> list[str]:
    """The policy's data grants to ``target.data_role``, then (``drop_role``) the role."""
    statements = render_removal(policy, target)
    if drop_role:
        statements.append(render_drop_data_role(normalise(target.data_role, what="data role")))
    return statements


def create_group_role(role: str, mapping: str) -> str:
    """``CREATE DATA ROLE ... MAPPED TO '<mapping>'`` (enabled by the token's group claim)."""
    return render_create_data_role(normalise(role, what="data role"), mapping)


def drop_data_role(role: str) -> str:
    """``DROP DATA ROLE IF EXISTS``."""
    return render_drop_data_role(normalise(role, what="data role"))


# --- local end users and their roles -----------------------------------------------------------
def create_end_user(end_user: str) -> str:
    """``CREATE END USER IF NOT EXISTS`` (no password: application-mediated)."""
    return render_create_end_user(normalise(end_user, what="end user name"))


def drop_end_user(end_user: str) -> str:
    """``DROP END USER IF EXISTS`` (its data role grants go with it)."""
    return render_drop_end_user(normalise(end_user, what="end user name"))


def grant_role(role: str, end_user: str) -> str:
    """``GRANT DATA ROLE`` of a local data role to one local end user."""
    return render_grant_data_role(normalise(role, what="data role"),
                                  [normalise(end_user, what="end user name")])


def revoke_role(role: str, end_user: str) -> str:
    """``REVOKE DATA ROLE IF EXISTS`` of a data role from one local end user."""
    return render_revoke_data_role(normalise(role, what="data role"),
                                   [normalise(end_user, what="end user name")])


# --- runtime logins ------------------------------------------------------------------------------
def create_runtime_login(login: str, password: str) -> list[str]:
    """A database user with exactly ``CREATE SESSION`` and ``CREATE END USER SECURITY
    CONTEXT``: no quota, no role, no object privilege (every row it reaches, it reaches as an
    end user through data grants)."""
    user = quote(login, what="login")
    return [f"CREATE USER {user} IDENTIFIED BY {quoted_password(password)}",
            f"GRANT {', '.join(RUNTIME_PRIVILEGES)} TO {user}"]


def drop_runtime_login(login: str) -> str:
    """``DROP USER`` without ``CASCADE``: a runtime login owns nothing, and one that does is
    refused by the database rather than emptied."""
    return f"DROP USER {quote(login, what='login')}"
