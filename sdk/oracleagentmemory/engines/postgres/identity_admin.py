"""Identities Deep Data Security trusts on PostgreSQL, as the admin identity manages them.

Local end users, identity providers (token issuers and their users' namespaces), applications
(an HMAC key bound to one runtime login, the stores and providers it may act for) and runtime
logins (LOGIN roles whose only privilege is a schema's runtime role), with the drift check.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from oracleagentmemory.engines.postgres.admin_roles import (
    ROLE_NAME,
    Conn,
    ensure_runtime_role,
    ident,
    literal,
    role_exists,
)
from oracleagentmemory.engines.postgres.assertion import ApplicationCredential, padded_keys
from oracleagentmemory.errors import InvalidArgumentError

_PROVIDER = re.compile(r"[a-z][a-z0-9_]{0,30}")


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


def list_end_users(conn: Conn) -> list[str]:
    """Names of the local end users, sorted."""
    return [r[0] for r in conn.execute(
        "SELECT username FROM oam_sec.end_user ORDER BY username").fetchall()]

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
    if not ROLE_NAME.fullmatch(app_name):
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


def list_applications(conn: Conn) -> list[dict[str, Any]]:
    """Every application with its login, token mode, stores and identity providers."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT a.app_name, a.login_role, a.require_token, "
            "ARRAY(SELECT s.schema_name || '.' || s.store_key FROM oam_sec.application_store s "
            "WHERE s.app_name = a.app_name ORDER BY 1) AS stores, "
            "ARRAY(SELECT b.idp_name FROM oam_sec.application_idp b "
            "WHERE b.app_name = a.app_name ORDER BY 1) AS identity_providers "
            "FROM oam_sec.application a ORDER BY a.app_name").fetchall()


def rotate_application_key(conn: Conn, app_name: str) -> ApplicationCredential:
    """Give an application a new key; contexts signed with the old one stop verifying."""
    key = secrets.token_bytes(32)
    ipad, opad = padded_keys(key)
    if conn.execute("UPDATE oam_sec.application SET ipad_key = %s, opad_key = %s "
                    "WHERE app_name = %s", [ipad, opad, app_name]).rowcount == 0:
        raise InvalidArgumentError(f"no application {app_name!r} exists", argument="name")
    return ApplicationCredential(app_name, key)


def drop_application(conn: Conn, app_name: str) -> bool:
    """Drop an application with its bindings; returns False when it did not exist."""
    return conn.execute("DELETE FROM oam_sec.application WHERE app_name = %s",
                        [app_name]).rowcount == 1

def create_runtime_login(conn: Conn, login: str, password: str, owner_schema: str) -> None:
    """Create a LOGIN role that holds nothing but membership of the schema's runtime role."""
    if not ROLE_NAME.fullmatch(login):
        raise InvalidArgumentError(
            f"login must be lower-case letters, digits and underscores; got {login!r}")
    if role_exists(conn, login):
        raise InvalidArgumentError(f"role {login!r} already exists")
    runtime_role = ensure_runtime_role(conn, owner_schema)
    conn.execute(
        f"CREATE ROLE {ident(conn, login)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
        f"NOINHERIT NOBYPASSRLS PASSWORD {literal(conn, password)}".encode()
    )
    conn.execute(f"GRANT {ident(conn, runtime_role)} TO {ident(conn, login)} "
                 "WITH INHERIT TRUE, SET FALSE".encode())


def drop_runtime_login(conn: Conn, login: str) -> None:
    """Drop a runtime login: a LOGIN role whose only memberships are runtime roles.

    Refused while an application is bound to it (drop or re-create the application first) and
    for any other role, so the command cannot drop the schema owner or an administrator.
    """
    row = conn.execute(
        "SELECT r.rolcanlogin, ARRAY(SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g "
        "ON g.oid = m.roleid WHERE m.member = r.oid ORDER BY 1) "
        "FROM pg_roles r WHERE r.rolname = %s", [login]).fetchone()
    if row is None:
        raise InvalidArgumentError(f"no runtime login {login!r} exists", argument="login")
    can_login, memberships = row
    if not can_login or not memberships or not all(
            m.endswith("_oam_runtime") for m in memberships):
        raise InvalidArgumentError(
            f"role {login!r} is not a runtime login (a login that is only a member of a "
            "schema's runtime role); drop it with your own tools if you mean it",
            argument="login")
    users = [r[0] for r in conn.execute(
        "SELECT app_name FROM oam_sec.application WHERE login_role = %s ORDER BY 1",
        [login]).fetchall()] if conn.execute(
        "SELECT to_regclass('oam_sec.application') IS NOT NULL").fetchone() == (True,) else []
    if users:
        raise InvalidArgumentError(
            f"runtime login {login!r} is used by application(s) {', '.join(users)}; drop "
            "them first (oam-admin application drop)", argument="login")
    conn.execute(f"DROP ROLE {ident(conn, login)}".encode())

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
