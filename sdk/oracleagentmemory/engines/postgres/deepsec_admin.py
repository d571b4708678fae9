"""Admin-side SQL of Deep Data Security on PostgreSQL: security schema, policies, grants.

Runs as the admin identity (the schema owner or a policy administrator), never as an end user.
Role names live in :mod:`.admin_roles`, the trusted identities in :mod:`.identity_admin` (both
re-exported here); :class:`.security_admin.PostgresSecurityAdmin` is the engine-neutral contract
on top of these functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from oam_policies.model import DataRolePolicy
from oam_policies.postgres import (
    PostgresTarget,
    render_policy,
    render_privileges,
    render_removal,
    render_revoke_all,
)

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE, StoreNames
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.admin_roles import (
    Conn,
    bounded_name,
    data_role_name,
    ensure_runtime_role,
    ident,
    role_exists,
    runtime_role_name,
)
from oracleagentmemory.engines.postgres.identity_admin import (
    add_identity_provider,
    application_bindings,
    bind_application,
    create_application,
    create_end_user,
    create_runtime_login,
    drop_application,
    drop_end_user,
    drop_runtime_login,
    end_user_exists,
    identity_provider_names,
    list_applications,
    list_end_users,
    list_identity_providers,
    refresh_identity_provider_keys,
    remove_identity_provider,
    rotate_application_key,
    runtime_login_drift,
    set_require_token,
    unbind_application,
)
from oracleagentmemory.engines.postgres.security_schema import INSTALL_STATEMENTS
from oracleagentmemory.errors import InvalidArgumentError

__all__ = [
    "add_identity_provider",
    "application_bindings",
    "bind_application",
    "bounded_name",
    "create_application",
    "create_end_user",
    "create_runtime_login",
    "current_end_user",
    "data_role_name",
    "drop_application",
    "drop_end_user",
    "drop_runtime_login",
    "end_user_exists",
    "ensure_runtime_role",
    "grant_role",
    "identity_provider_names",
    "install_policy",
    "install_security_schema",
    "installed_data_role",
    "installed_policy_names",
    "list_applications",
    "list_end_users",
    "list_identity_providers",
    "list_role_grants",
    "may_administer_security",
    "refresh_identity_provider_keys",
    "remove_identity_provider",
    "remove_policy",
    "revoke_role",
    "role_exists",
    "rotate_application_key",
    "runtime_login_drift",
    "runtime_role_name",
    "security_schema_installed",
    "session_identity",
    "set_require_token",
    "store_exists",
    "store_has_row_security",
    "unbind_application",
]


def installed_data_role(conn: Conn, owner_schema: str, store_key: str,
                        policy_name: str) -> str | None:
    """The data role of a policy installed on a store (looked up by store, never by name)."""
    row = conn.execute(
        "SELECT role_name FROM oam_sec.data_role WHERE schema_name = %s AND store_key = %s "
        "AND policy_name = %s", [owner_schema, store_key, policy_name]).fetchone()
    return None if row is None else str(row[0])


def install_security_schema(conn: Conn) -> None:
    """Create or refresh ``oam_sec`` (idempotent); it must belong to this administrator."""
    row = conn.execute(
        "SELECT pg_get_userbyid(nspowner), pg_has_role(current_user, nspowner, 'USAGE') "
        "FROM pg_namespace WHERE nspname = 'oam_sec'"
    ).fetchone()
    if row is not None and not row[1]:
        raise PermissionError(
            f"the oam_sec security schema belongs to {row[0]!r}; manage Deep Data Security as "
            "that policy administrator (or a member of it)"
        )
    with conn.transaction():  # SET LOCAL in the statements needs a transaction block
        for statement in INSTALL_STATEMENTS:
            conn.execute(statement.encode())


def security_schema_installed(conn: Conn) -> bool:
    """Whether the ``oam_sec`` security schema is installed."""
    return conn.execute("SELECT to_regclass('oam_sec.data_role') IS NOT NULL").fetchone() == (True,)


def session_identity(conn: Conn) -> str:
    """``current_user`` of the connection."""
    row = conn.execute("SELECT current_user").fetchone()
    assert row is not None
    return str(row[0])


def may_administer_security(conn: Conn) -> bool:
    """Whether the current identity may manage ``oam_sec`` (absent, or its owner's)."""
    row = conn.execute("SELECT pg_has_role(current_user, nspowner, 'USAGE') FROM pg_namespace "
                       "WHERE nspname = 'oam_sec'").fetchone()
    return row is None or bool(row[0])

def _target(conn: Conn, names: StoreNames, runtime_role: str, data_role: str) -> PostgresTarget:
    tables = {t: q.table(names, t).as_string(conn) for t in MANAGED_TABLES}
    tables["registry"] = q.registry(names).as_string(conn)
    bare = {t: ident(conn, names.table(t)) for t in MANAGED_TABLES}
    bare["registry"] = ident(conn, REGISTRY_TABLE)
    return PostgresTarget(tables=tables, bare_tables=bare,
                          runtime_role=ident(conn, runtime_role), data_role=data_role,
                          columns=_existing_columns(conn, names))


def _existing_columns(conn: Conn, names: StoreNames) -> dict[str, frozenset[str]]:
    """Columns of each managed table (a store without vectors has no ``embedding`` column)."""
    logical = {names.table(t): t for t in MANAGED_TABLES}
    rows = conn.execute(
        "SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
        "AND c.relname = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped",
        [names.schema, list(logical)],
    ).fetchall()
    found: dict[str, set[str]] = {}
    for relname, column in rows:
        found.setdefault(logical[relname], set()).add(column)
    return {table: frozenset(columns) for table, columns in found.items()}


def store_exists(conn: Conn, names: StoreNames) -> bool:
    """Whether the store's managed tables exist."""
    assert names.schema is not None
    row = conn.execute(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = ANY(%s)",
        [names.schema, [names.table(t) for t in MANAGED_TABLES]],
    ).fetchone()
    return row is not None and int(row[0]) == len(MANAGED_TABLES)


def store_has_row_security(conn: Conn, names: StoreNames) -> bool:
    """Whether any managed table of the store has row-level security on (catalogs only)."""
    row = conn.execute(
        "SELECT bool_or(c.relrowsecurity) FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = ANY(%s)",
        [names.schema, [names.table(t) for t in MANAGED_TABLES]]).fetchone()
    return row is not None and bool(row[0])

def install_policy(conn: Conn, names: StoreNames, owner_schema: str,
                   policy: DataRolePolicy) -> str:
    """Install (or reinstall) one policy on a store; returns its data role name."""
    runtime_role = ensure_runtime_role(conn, owner_schema)
    role = installed_data_role(conn, owner_schema, names.store_key, policy.name)
    if role is None:
        role = data_role_name(names, owner_schema, policy)
        taken = conn.execute("SELECT schema_name, store_key FROM oam_sec.data_role "
                             "WHERE role_name = %s", [role]).fetchone()
        if taken is not None:
            raise InvalidArgumentError(f"data role {role!r} already belongs to memory store "
                             f"{taken[1]!r} in schema {taken[0]!r}")
        conn.execute(
            "INSERT INTO oam_sec.data_role (role_name, schema_name, store_key, policy_name) "
            "VALUES (%s, %s, %s, %s)", [role, owner_schema, names.store_key, policy.name])
    target = _target(conn, names, runtime_role, role)
    for statement in render_removal(policy, target) + render_policy(policy, target):
        conn.execute(statement.encode())
    return role


def installed_policy_names(conn: Conn, owner_schema: str, store_key: str) -> list[str]:
    """Names of the policies installed on a store."""
    rows = conn.execute(
        "SELECT policy_name FROM oam_sec.data_role WHERE schema_name = %s AND store_key = %s "
        "ORDER BY policy_name",
        [owner_schema, store_key],
    ).fetchall()
    return [r[0] for r in rows]


def remove_policy(conn: Conn, names: StoreNames, owner_schema: str, policy: DataRolePolicy,
                  remaining: Sequence[DataRolePolicy]) -> None:
    """Drop one policy's RLS policies and data role, then re-grant what the others need."""
    runtime_role = runtime_role_name(owner_schema)
    role = installed_data_role(conn, owner_schema, names.store_key, policy.name)
    if role is None:
        return
    target = _target(conn, names, runtime_role, role)
    for statement in render_removal(policy, target):
        conn.execute(statement.encode())
    conn.execute("DELETE FROM oam_sec.data_role WHERE schema_name = %s AND store_key = %s "
                 "AND policy_name = %s", [owner_schema, names.store_key, policy.name])
    if role_exists(conn, runtime_role):
        tables = [*MANAGED_TABLES]
        for statement in render_revoke_all(tables, target) + render_privileges(list(remaining),
                                                                               target):
            conn.execute(statement.encode())


def grant_role(conn: Conn, role: str, principal_type: str, principal: str) -> None:
    """Grant a data role to a local end user (``user``) or an identity-provider group."""
    conn.execute(
        "INSERT INTO oam_sec.data_role_grant (role_name, principal_type, principal) "
        "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        [role, principal_type, principal],
    )


def revoke_role(conn: Conn, role: str, principal_type: str, principal: str) -> int:
    """Revoke a data role grant; returns how many grants were removed."""
    cur = conn.execute(
        "DELETE FROM oam_sec.data_role_grant WHERE role_name = %s AND principal_type = %s "
        "AND principal = %s",
        [role, principal_type, principal],
    )
    return cur.rowcount


def list_role_grants(conn: Conn, owner_schema: str, store_key: str) -> list[tuple[str, str, str]]:
    """``(principal_type, principal, policy_name)`` of every grant on a store's data roles."""
    rows = conn.execute(
        "SELECT g.principal_type, g.principal, d.policy_name FROM oam_sec.data_role_grant g "
        "JOIN oam_sec.data_role d ON d.role_name = g.role_name "
        "WHERE d.schema_name = %s AND d.store_key = %s "
        "ORDER BY g.principal_type, g.principal, d.policy_name",
        [owner_schema, store_key],
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def current_end_user(conn: Conn) -> str | None:
    """The end user the database sees on ``conn`` (``None`` without a valid assertion)."""
    try:
        row = conn.execute("SELECT oam_sec.end_user()").fetchone()
    except psycopg.errors.UndefinedFunction:
        conn.rollback()
        return None
    return None if row is None else row[0]
