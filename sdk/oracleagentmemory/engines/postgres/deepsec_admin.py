"""Admin-side SQL of Deep Data Security on PostgreSQL: security schema, roles, policies, grants.

Runs as the admin identity (the schema owner or a policy administrator), never as an end user.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from typing import Any

import psycopg
from oam_policies.model import DataRolePolicy
from oam_policies.postgres import (
    PostgresTarget,
    render_policy,
    render_privileges,
    render_removal,
    render_revoke_all,
)
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE, StoreNames
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.assertion import ApplicationCredential, padded_keys
from oracleagentmemory.engines.postgres.security_schema import INSTALL_STATEMENTS
from oracleagentmemory.errors import InvalidArgumentError

_ROLE = re.compile(r"[a-z][a-z0-9_]{0,62}")
_PROVIDER = re.compile(r"[a-z][a-z0-9_]{0,30}")
Conn = psycopg.Connection[Any]


def _ident(conn: Conn, value: str) -> str:
    """Quote an identifier for DDL text (psycopg's quoting, the engine's one place)."""
    return sql.Identifier(value).as_string(conn)


def _literal(conn: Conn, value: str) -> str:
    return sql.Literal(value).as_string(conn)


def bounded_name(text: str, identity: str | None = None) -> str:
    """A lower-case name of at most 63 characters for ``text``.

    Folding (lower case, ``_`` for other characters) and truncation can map different texts to
    one name; such a name, and every name given an ``identity`` (the exact thing it names),
    keeps a hash suffix of that identity, so distinct identities never share a name.
    """
    name = re.sub(r"[^a-z0-9_]", "_", text.lower())
    if not name or not name[0].isalpha():
        name = "r_" + name
    if identity is None and (name != text or len(name) > 63):
        identity = text
    if identity is not None:
        name = name[:54] + "_" + hashlib.sha256(identity.encode()).hexdigest()[:8]
    return name


def runtime_role_name(owner_schema: str) -> str:
    """The NOLOGIN role that holds the runtime privileges of one schema's stores."""
    return bounded_name(f"{owner_schema.lower()}_oam_runtime")


def data_role_name(names: StoreNames, owner_schema: str, policy: DataRolePolicy) -> str:
    """The name a new data role of ``policy`` on one store gets (unique to that triple: the
    store key and schema may contain ``_`` themselves)."""
    store = names.store_key or "default"
    return bounded_name(f"{owner_schema}_{store}_oam_{policy.name}",
                        identity="\0".join((owner_schema, names.store_key, policy.name)))


def installed_data_role(conn: Conn, owner_schema: str, store_key: str,
                        policy_name: str) -> str | None:
    """The data role of a policy installed on a store (looked up by store, never by name)."""
    row = conn.execute(
        "SELECT role_name FROM oam_sec.data_role WHERE schema_name = %s AND store_key = %s "
        "AND policy_name = %s", [owner_schema, store_key, policy_name]).fetchone()
    return None if row is None else str(row[0])


def role_exists(conn: Conn, role: str) -> bool:
    """Whether a database role exists."""
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone() is not None


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


def ensure_runtime_role(conn: Conn, owner_schema: str) -> str:
    """Create the runtime role of ``owner_schema`` if needed; returns its name."""
    role = runtime_role_name(owner_schema)
    if not role_exists(conn, role):
        conn.execute(f"CREATE ROLE {_ident(conn, role)} NOLOGIN".encode())
    conn.execute(
        f"GRANT USAGE ON SCHEMA {_ident(conn, owner_schema)} TO {_ident(conn, role)}".encode())
    return role


def _target(conn: Conn, names: StoreNames, runtime_role: str, data_role: str) -> PostgresTarget:
    tables = {t: q.table(names, t).as_string(conn) for t in MANAGED_TABLES}
    tables["registry"] = q.registry(names).as_string(conn)
    bare = {t: _ident(conn, names.table(t)) for t in MANAGED_TABLES}
    bare["registry"] = _ident(conn, REGISTRY_TABLE)
    return PostgresTarget(tables=tables, bare_tables=bare,
                          runtime_role=_ident(conn, runtime_role), data_role=data_role,
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


def end_user_exists(conn: Conn, username: str) -> bool:
    """Whether a local end user exists."""
    return conn.execute("SELECT 1 FROM oam_sec.end_user WHERE username = %s",
                        [username]).fetchone() is not None


def create_end_user(conn: Conn, username: str) -> bool:
    """Create a local end user; returns False when it already existed."""
    if ":" in username:
        raise InvalidArgumentError(
            f"a local end user's name never contains ':' (identity-provider users "
                         f"are '<provider>:<name>'); got {username!r}")
    cur = conn.execute(
        "INSERT INTO oam_sec.end_user (username) VALUES (%s) ON CONFLICT DO NOTHING", [username])
    return cur.rowcount == 1


def drop_end_user(conn: Conn, username: str) -> bool:
    """Drop a local end user and its grants."""
    conn.execute("DELETE FROM oam_sec.data_role_grant WHERE principal_type = 'user' AND "
                 "principal = %s", [username])
    cur = conn.execute("DELETE FROM oam_sec.end_user WHERE username = %s", [username])
    return cur.rowcount == 1


def identity_provider_names(conn: Conn) -> list[str]:
    """Names of the registered identity providers."""
    return [r[0] for r in conn.execute(
        "SELECT name FROM oam_sec.identity_provider ORDER BY name").fetchall()]


def add_identity_provider(conn: Conn, name: str, issuer: str, audience: str,
                          jwks: dict[str, Any], user_claim: str = "sub",
                          groups_claim: str = "groups") -> None:
    """Register an identity provider: the namespace ``name`` and how its tokens are checked."""
    if not _PROVIDER.fullmatch(name):
        raise InvalidArgumentError("identity provider name must be lower-case letters, digits and "
                         f"underscores (at most 31), starting with a letter; got {name!r}")
    if name in identity_provider_names(conn):
        raise InvalidArgumentError(
            f"identity provider {name!r} is already registered; refresh its keys "
                         "or remove it first")
    if conn.execute("SELECT 1 FROM oam_sec.identity_provider WHERE issuer = %s",
                    [issuer]).fetchone() is not None:
        raise InvalidArgumentError(f"issuer {issuer!r} is already registered under another name")
    conn.execute(
        "INSERT INTO oam_sec.identity_provider (name, issuer, audience, jwks, user_claim, "
        "groups_claim) VALUES (%s, %s, %s, %s, %s, %s)",
        [name, issuer, audience, Jsonb(jwks), user_claim, groups_claim])


def refresh_identity_provider_keys(conn: Conn, name: str, jwks: dict[str, Any]) -> None:
    """Replace a registered identity provider's signing keys (key rotation)."""
    if conn.execute("UPDATE oam_sec.identity_provider SET jwks = %s, updated_at = now() "
                    "WHERE name = %s", [Jsonb(jwks), name]).rowcount == 0:
        raise InvalidArgumentError(f"no identity provider {name!r} is registered")


def list_identity_providers(conn: Conn) -> list[dict[str, Any]]:
    """Every registered identity provider (its keys by id) with the applications bound to it."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT i.name, i.issuer, i.audience, i.user_claim, i.groups_claim, "
            "ARRAY(SELECT coalesce(k->>'kid', '') FROM jsonb_array_elements(i.jwks->'keys') k) "
            "AS key_ids, ARRAY(SELECT b.app_name FROM oam_sec.application_idp b WHERE "
            "b.idp_name = i.name ORDER BY b.app_name) AS applications, i.updated_at "
            "FROM oam_sec.identity_provider i ORDER BY i.name").fetchall()


def remove_identity_provider(conn: Conn, name: str) -> bool:
    """Unregister an identity provider (its bindings go with it; group grants stay)."""
    return conn.execute("DELETE FROM oam_sec.identity_provider WHERE name = %s",
                        [name]).rowcount == 1


def bind_application(conn: Conn, app_name: str, *, stores: Sequence[tuple[str, str]] = (),
                     identity_providers: Sequence[str] = ()) -> None:
    """Let an application act for ``(owner schema, store key)`` stores and identity providers."""
    if conn.execute("SELECT 1 FROM oam_sec.application WHERE app_name = %s",
                    [app_name]).fetchone() is None:
        raise InvalidArgumentError(f"no application {app_name!r} exists")
    for schema_name, store_key in stores:
        conn.execute(
            "INSERT INTO oam_sec.application_store (app_name, schema_name, store_key) "
            "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", [app_name, schema_name, store_key])
    for provider in identity_providers:
        if provider not in identity_provider_names(conn):
            raise InvalidArgumentError(f"no identity provider {provider!r} is registered")
        conn.execute(
            "INSERT INTO oam_sec.application_idp (app_name, idp_name) VALUES (%s, %s) "
            "ON CONFLICT DO NOTHING", [app_name, provider])


def unbind_application(conn: Conn, app_name: str, *, stores: Sequence[tuple[str, str]] = (),
                       identity_providers: Sequence[str] = ()) -> int:
    """Withdraw stores and identity providers from an application; returns how many."""
    removed = 0
    for schema_name, store_key in stores:
        removed += conn.execute(
            "DELETE FROM oam_sec.application_store WHERE app_name = %s AND schema_name = %s "
            "AND store_key = %s", [app_name, schema_name, store_key]).rowcount
    for provider in identity_providers:
        removed += conn.execute(
            "DELETE FROM oam_sec.application_idp WHERE app_name = %s AND idp_name = %s",
            [app_name, provider]).rowcount
    return removed


def set_require_token(conn: Conn, app_name: str, required: bool) -> None:
    """Token mode on or off: whether the application key alone may speak for end users."""
    if conn.execute("UPDATE oam_sec.application SET require_token = %s WHERE app_name = %s",
                    [required, app_name]).rowcount == 0:
        raise InvalidArgumentError(f"no application {app_name!r} exists")


def application_bindings(conn: Conn, app_name: str) -> dict[str, Any]:
    """An application's login, token mode, stores and identity providers."""
    row = conn.execute(
        "SELECT login_role, require_token, ARRAY(SELECT s.schema_name || '.' || s.store_key "
        "FROM oam_sec.application_store s WHERE s.app_name = a.app_name ORDER BY 1), "
        "ARRAY(SELECT b.idp_name FROM oam_sec.application_idp b WHERE b.app_name = a.app_name "
        "ORDER BY 1) FROM oam_sec.application a WHERE a.app_name = %s", [app_name]).fetchone()
    if row is None:
        raise InvalidArgumentError(f"no application {app_name!r} exists")
    return {"login": row[0], "require_token": row[1], "stores": list(row[2]),
            "identity_providers": list(row[3])}


def create_application(conn: Conn, app_name: str, login_role: str) -> ApplicationCredential:
    """Register an application identity bound to a runtime login; returns its credential.

    It acts for no store and no identity provider until :func:`bind_application` says so.
    """
    if not _ROLE.fullmatch(app_name):
        raise InvalidArgumentError("app_name must be lower-case letters, digits and underscores, "
                         f"starting with a letter; got {app_name!r}")
    if not role_exists(conn, login_role):
        raise InvalidArgumentError(
            f"login role {login_role!r} does not exist; create the runtime login first"
        )
    key = secrets.token_bytes(32)
    ipad, opad = padded_keys(key)
    conn.execute(
        "INSERT INTO oam_sec.application (app_name, login_role, ipad_key, opad_key) "
        "VALUES (%s, %s, %s, %s)",
        [app_name, login_role, ipad, opad],
    )
    return ApplicationCredential(app_name, key)


def create_runtime_login(conn: Conn, login: str, password: str, owner_schema: str) -> None:
    """Create a LOGIN role that holds nothing but membership of the schema's runtime role."""
    if not _ROLE.fullmatch(login):
        raise InvalidArgumentError(
            f"login must be lower-case letters, digits and underscores; got {login!r}")
    if role_exists(conn, login):
        raise InvalidArgumentError(f"role {login!r} already exists")
    runtime_role = ensure_runtime_role(conn, owner_schema)
    conn.execute(
        f"CREATE ROLE {_ident(conn, login)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
        f"NOINHERIT NOBYPASSRLS PASSWORD {_literal(conn, password)}".encode()
    )
    conn.execute(f"GRANT {_ident(conn, runtime_role)} TO {_ident(conn, login)} "
                 "WITH INHERIT TRUE, SET FALSE".encode())


def current_end_user(conn: Conn) -> str | None:
    """The end user the database sees on ``conn`` (``None`` without a valid assertion)."""
    try:
        row = conn.execute("SELECT oam_sec.end_user()").fetchone()
    except psycopg.errors.UndefinedFunction:
        conn.rollback()
        return None
    return None if row is None else row[0]


def runtime_login_drift(conn: Conn) -> list[str]:
    """What changed on the runtime logins since ``create_runtime_login`` made them.

    A runtime login may alter itself (its password and role-level settings): each finding is a
    line naming the login. Checked: attributes beyond LOGIN, role-level settings, memberships
    other than its schema's runtime role, objects it owns, and applications whose login is
    gone or that act for no store, and schemas it may create objects in.
    """
    findings: list[str] = []
    rows = conn.execute(
        "WITH logins AS (SELECT DISTINCT r.oid, r.rolname FROM pg_roles r WHERE r.rolname IN "
        "(SELECT login_role FROM oam_sec.application) OR r.oid IN (SELECT m.member FROM "
        "pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE g.rolname LIKE "
        "'%\\_oam\\_runtime')) "
        "SELECT l.rolname, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, "
        "r.rolbypassrls, r.rolinherit, "
        "ARRAY(SELECT unnest(s.setconfig) FROM pg_db_role_setting s WHERE s.setrole = l.oid), "
        "ARRAY(SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid "
        "WHERE m.member = l.oid AND g.rolname NOT LIKE '%\\_oam\\_runtime' ORDER BY 1), "
        "(SELECT count(*) FROM pg_class c WHERE c.relowner = l.oid), "
        "ARRAY(SELECT n.nspname FROM pg_namespace n WHERE n.nspname !~ '^pg_(toast_)?temp_' "
        "AND has_schema_privilege(l.oid, n.oid, 'CREATE') ORDER BY 1) "
        "FROM logins l JOIN pg_roles r ON r.oid = l.oid ORDER BY l.rolname").fetchall()
    attributes = ("SUPERUSER", "CREATEROLE", "CREATEDB", "REPLICATION", "BYPASSRLS", "INHERIT")
    for name, *flags, settings, memberships, owned, creatable in rows:
        for attribute, value in zip(attributes, flags[:6], strict=True):
            if value:
                findings.append(f"runtime login {name}: has {attribute}")
        for setting in settings:
            findings.append(f"runtime login {name}: role-level setting {setting} "
                            f"(RESET with ALTER ROLE {name} RESET ...)")
        for role in memberships:
            findings.append(f"runtime login {name}: member of {role}")
        if owned:
            findings.append(f"runtime login {name}: owns {owned} relation(s)")
        for schema in creatable:
            # Objects it could create there would shadow unqualified names for the SDK.
            findings.append(f"runtime login {name}: may CREATE in schema {schema}")
    for app, login, stores in conn.execute(
            "SELECT a.app_name, a.login_role, (SELECT count(*) FROM oam_sec.application_store s "
            "WHERE s.app_name = a.app_name) FROM oam_sec.application a ORDER BY 1").fetchall():
        if not role_exists(conn, login):
            findings.append(f"application {app}: its login {login} does not exist")
        if not stores:
            findings.append(f"application {app}: acts for no store")
    return findings
