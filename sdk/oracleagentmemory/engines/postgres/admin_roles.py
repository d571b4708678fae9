"""Database roles of Deep Data Security on PostgreSQL: their names and how they are made.

A schema's runtime role holds the runtime privileges of its stores (runtime logins are its
members); each installed policy has a data role per store. Names fit PostgreSQL's 63 characters.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import psycopg
from oam_policies.model import DataRolePolicy
from psycopg import sql

from oracleagentmemory.engines.identifiers import StoreNames

ROLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
"""A role name the admin tools create: lower-case letters, digits and underscores."""
Conn = psycopg.Connection[Any]


def ident(conn: Conn, value: str) -> str:
    """Quote an identifier for DDL text (psycopg's quoting, the engine's one place)."""
    return sql.Identifier(value).as_string(conn)


def literal(conn: Conn, value: str) -> str:
    """Quote a literal for DDL text that cannot take a bound value (a role password)."""
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


def role_exists(conn: Conn, role: str) -> bool:
    """Whether a database role exists."""
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone() is not None


def ensure_runtime_role(conn: Conn, owner_schema: str) -> str:
    """Create the runtime role of ``owner_schema`` if needed; returns its name."""
    role = runtime_role_name(owner_schema)
    if not role_exists(conn, role):
        conn.execute(f"CREATE ROLE {ident(conn, role)} NOLOGIN".encode())
    conn.execute(
        f"GRANT USAGE ON SCHEMA {ident(conn, owner_schema)} TO {ident(conn, role)}".encode())
    return role
