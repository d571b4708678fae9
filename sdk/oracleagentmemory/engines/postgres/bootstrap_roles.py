"""The bootstrap superuser's part of a new PostgreSQL tenant: its admin logins and schema.

Before the admin API can run, someone must create the schema owner (a login owning its own
schema) and the policy administrator (a login with ``CREATEROLE`` and ``CREATE`` on the
database, a member of the schema owner's role). ``oam-gateway dev`` does it as the embedded
server's superuser; on a shared server a DBA does the same with their own tools. Every function
is idempotent and runs on the connection it is given (autocommit or inside the caller's
transaction).
"""

from __future__ import annotations

import psycopg

from oracleagentmemory.engines.postgres.admin_roles import (
    ROLE_NAME,
    Conn,
    ident,
    literal,
    role_exists,
)
from oracleagentmemory.errors import InvalidArgumentError

__all__ = [
    "connect",
    "ensure_login",
    "ensure_owned_schema",
    "ensure_policy_administrator",
    "role_exists",
    "security_schema_owner",
    "set_login_password",
]


def _role(role: str) -> str:
    if not ROLE_NAME.fullmatch(role):
        raise InvalidArgumentError(
            f"a role name must be lower-case letters, digits and underscores; got {role!r}",
            argument="role")
    return role


def connect(url: str) -> Conn:
    """An autocommit connection to ``url`` (the superuser's) for the functions here; close it
    (it is a context manager)."""
    return psycopg.connect(url, autocommit=True)


def ensure_login(conn: Conn, role: str, password: str) -> bool:
    """Make ``role`` a LOGIN role with ``password``; returns whether it was created."""
    name = _role(role)
    created = not role_exists(conn, name)
    verb = "CREATE ROLE" if created else "ALTER ROLE"
    conn.execute(f"{verb} {ident(conn, name)} LOGIN PASSWORD {literal(conn, password)}"
                 .encode())
    return created


def set_login_password(conn: Conn, role: str, password: str) -> None:
    """Give the existing login ``role`` the password ``password``."""
    name = _role(role)
    if not role_exists(conn, name):
        raise InvalidArgumentError(f"no role {name!r} exists", argument="role")
    conn.execute(f"ALTER ROLE {ident(conn, name)} PASSWORD {literal(conn, password)}".encode())


def ensure_owned_schema(conn: Conn, owner: str) -> None:
    """The schema named as ``owner``, owned by it (the schema a store owner creates stores in)."""
    name = _role(owner)
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {ident(conn, name)} AUTHORIZATION "
                 f"{ident(conn, name)}".encode())


def ensure_policy_administrator(conn: Conn, administrator: str, schema_owner: str) -> None:
    """Let the login ``administrator`` administer Deep Data Security for ``schema_owner``.

    It gets ``CREATEROLE`` (data roles, runtime logins), ``CREATE`` on the current database
    (the ``oam_sec`` schema) and membership of the schema owner's role (its stores' tables).
    """
    admin, owner = _role(administrator), _role(schema_owner)
    row = conn.execute("SELECT current_database()").fetchone()
    assert row is not None
    conn.execute(f"ALTER ROLE {ident(conn, admin)} CREATEROLE".encode())
    conn.execute(f"GRANT CREATE ON DATABASE {ident(conn, str(row[0]))} TO {ident(conn, admin)}"
                 .encode())
    member = conn.execute(
        "SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid "
        "JOIN pg_roles r ON r.oid = m.member WHERE g.rolname = %s AND r.rolname = %s",
        [owner, admin]).fetchone()
    if member is None:
        conn.execute(f"GRANT {ident(conn, owner)} TO {ident(conn, admin)}".encode())


def security_schema_owner(conn: Conn) -> str | None:
    """The role owning the ``oam_sec`` security schema (``None`` when it is not installed)."""
    row = conn.execute("SELECT pg_get_userbyid(nspowner) FROM pg_namespace "
                       "WHERE nspname = 'oam_sec'").fetchone()
    return None if row is None else str(row[0])
