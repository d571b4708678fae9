"""Admin API of Deep Data Security: install policies on a store, grant them to principals.

Every function runs as the admin identity (the schema owner or a policy administrator) on the
connection it is given, in one transaction, and refuses to run inside an end-user context.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from oracleagentmemory.core._validation import check_required_id
from oracleagentmemory.core.deepsec.context import has_active_security_context
from oracleagentmemory.core.deepsec.policies import POLICY_BY_NAME, DeepDataSecurityPolicy
from oracleagentmemory.engines.identifiers import (
    StoreNames,
    store_names,
    validate_memory_store_id,
    validate_schema_owner,
)
from oracleagentmemory.engines.postgres import deepsec_admin as sql_admin
from oracleagentmemory.errors import (
    EndUserContextError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)


class Principal:
    """Someone a policy can be granted to."""


@dataclass(frozen=True)
class LocalEndUserPrincipal(Principal):
    """A local end user created by the admin identity."""

    username: str


@dataclass(frozen=True)
class OciGroupPrincipal(Principal):
    """An identity-provider group (OCI IAM group on Oracle; a token ``groups`` claim here).

    ``identity_provider`` names the registered provider whose group it is (groups of two
    providers never meet); ``None`` means the only provider registered.
    """

    group_name: str
    identity_provider: str | None = None


def _refuse_in_context(what: str) -> None:
    if has_active_security_context():
        raise EndUserContextError(
            f"{what} is administrative work and refuses to run inside an end-user security "
            "context; run it as the admin identity"
        )


@contextmanager
def _admin_transaction(connection: Any, what: str) -> Iterator[psycopg.Connection[Any]]:
    _refuse_in_context(what)
    if isinstance(connection, str):
        with psycopg.connect(connection) as conn, conn.transaction():
            yield conn
        return
    if not isinstance(connection, psycopg.Connection):
        raise InvalidArgumentTypeError(
            "connection must be a psycopg Connection or a postgresql:// URL of the admin "
            f"identity, got {type(connection).__name__}"
        )
    with connection.transaction():
        yield connection


def _names(owner_schema: str, memory_store_id: str | None) -> StoreNames:
    owner = validate_schema_owner(owner_schema)
    store_id = None if memory_store_id is None else validate_memory_store_id(memory_store_id)
    return store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=owner,
                       fold="lower")


def _require_store(conn: psycopg.Connection[Any], names: StoreNames,
                   memory_store_id: str | None) -> None:
    """Admin work names an existing store; a typo must not pass silently or fail in SQL."""
    if not sql_admin.store_exists(conn, names):
        raise InvalidArgumentError(
            f"memory store {memory_store_id!r} does not exist in schema {names.schema!r}; "
            "create it first as the schema owner"
        )


def _policies(policies: Sequence[DeepDataSecurityPolicy]) -> list[DeepDataSecurityPolicy]:
    if isinstance(policies, DeepDataSecurityPolicy) or not isinstance(policies, (list, tuple)):
        raise InvalidArgumentTypeError("policies must be a list of DeepDataSecurityPolicy")
    if not policies:
        raise InvalidArgumentError("policies must not be empty")
    for n, policy in enumerate(policies):
        if not isinstance(policy, DeepDataSecurityPolicy) or type(policy) is DeepDataSecurityPolicy:
            raise InvalidArgumentTypeError(
                f"policies[{n}] must be UserOwnRowsDeepDataSecurityPolicy or "
                            "GlobalMemoriesDeepDataSecurityPolicy")
    return list(dict.fromkeys(policies))


def _principal(conn: psycopg.Connection[Any], principal: Principal, n: int) -> tuple[str, str]:
    """``(kind, stored name)``: a local user's name, or ``"<provider>:<group>"``."""
    if isinstance(principal, LocalEndUserPrincipal):
        name = check_required_id(principal.username, f"principals[{n}].username")
        if ":" in name:
            raise InvalidArgumentError(f"principals[{n}].username: a local end user's name never "
                             "contains ':'")
        return "user", name
    if isinstance(principal, OciGroupPrincipal):
        group = check_required_id(principal.group_name, f"principals[{n}].group_name")
        provider = principal.identity_provider
        if provider is None:
            registered = sql_admin.identity_provider_names(conn)
            if len(registered) != 1:
                raise InvalidArgumentError(
                    f"principals[{n}]: name the identity provider of group {group!r} "
                    f"(identity_provider=...); registered: {registered or 'none'}")
            provider = registered[0]
        elif provider not in sql_admin.identity_provider_names(conn):
            raise InvalidArgumentError(f"principals[{n}].identity_provider: no identity provider "
                             f"{provider!r} is registered (oam-admin idp add)")
        return "group", f"{provider}:{group}"
    raise InvalidArgumentTypeError(
        f"principals[{n}] must be a LocalEndUserPrincipal or an OciGroupPrincipal")


def add_deep_data_security_policies(connection: Any, owner_schema: str, memory_store_id: str,
                                    policies: list[DeepDataSecurityPolicy]) -> None:
    """Install policies on a store: row-level security, column privileges, data roles.

    Installs the ``oam_sec`` security schema and the schema's runtime role when missing. Once a
    table has a policy, the runtime role reaches its rows only through the policies.
    """
    chosen = _policies(policies)
    names = _names(owner_schema, memory_store_id)
    assert names.schema is not None
    with _admin_transaction(connection, "add_deep_data_security_policies") as conn:
        _require_store(conn, names, memory_store_id)
        sql_admin.install_security_schema(conn)
        for policy in chosen:
            sql_admin.install_policy(conn, names, names.schema, policy.declaration)


def remove_deep_data_security_policies(connection: Any, owner_schema: str, memory_store_id: str,
                                       policies: list[DeepDataSecurityPolicy]) -> None:
    """Remove policies from a store (their grants to principals go with them)."""
    chosen = _policies(policies)
    names = _names(owner_schema, memory_store_id)
    assert names.schema is not None
    with _admin_transaction(connection, "remove_deep_data_security_policies") as conn:
        _require_store(conn, names, memory_store_id)
        installed = set(sql_admin.installed_policy_names(conn, names.schema, names.store_key))
        for policy in chosen:
            installed.discard(policy.declaration.name)
            remaining = [POLICY_BY_NAME[n].declaration for n in sorted(installed)]
            sql_admin.remove_policy(conn, names, names.schema, policy.declaration, remaining)


def list_deep_data_security_policies(connection: Any, owner_schema: str,
                                     memory_store_id: str) -> list[DeepDataSecurityPolicy]:
    """Policies installed on a store."""
    names = _names(owner_schema, memory_store_id)
    assert names.schema is not None
    with _admin_transaction(connection, "list_deep_data_security_policies") as conn:
        _require_store(conn, names, memory_store_id)
        if not _security_schema_exists(conn):
            return []
        found = sql_admin.installed_policy_names(conn, names.schema, names.store_key)
    return [POLICY_BY_NAME[n] for n in found if n in POLICY_BY_NAME]


def _security_schema_exists(conn: psycopg.Connection[Any]) -> bool:
    return conn.execute("SELECT to_regclass('oam_sec.data_role') IS NOT NULL").fetchone() == (True,)


def _roles(conn: psycopg.Connection[Any], names: StoreNames,
           policies: list[DeepDataSecurityPolicy]) -> list[str]:
    assert names.schema is not None
    installed = set(sql_admin.installed_policy_names(conn, names.schema, names.store_key)) \
        if _security_schema_exists(conn) else set()
    roles = []
    for policy in policies:
        role = sql_admin.installed_data_role(conn, names.schema, names.store_key,
                                             policy.declaration.name) if installed else None
        if role is None:
            raise InvalidArgumentError(
                f"policy {policy.declaration.name!r} is not installed on memory store "
                f"{names.store_key!r}; add it with add_deep_data_security_policies first"
            )
        roles.append(role)
    return roles


def _principals(conn: psycopg.Connection[Any], principals: Sequence[Principal]
                ) -> list[tuple[str, str]]:
    """``(kind, stored name)`` of each principal; the list must not be empty."""
    return [_principal(conn, p, n) for n, p in enumerate(_principal_list(principals))]


def _principal_list(principals: Sequence[Principal]) -> Sequence[Principal]:
    if not isinstance(principals, (list, tuple)) or not principals:
        raise InvalidArgumentError("principals must be a non-empty list")
    return principals


def grant_agent_memory_policies(connection: Any, memory_store_id: str, owner_schema: str,
                                principals: list[Principal],
                                policies: list[DeepDataSecurityPolicy]) -> None:
    """Grant installed policies to local end users and identity-provider groups."""
    chosen = _policies(policies)
    names = _names(owner_schema, memory_store_id)
    _principal_list(principals)
    with _admin_transaction(connection, "grant_agent_memory_policies") as conn:
        _require_store(conn, names, memory_store_id)
        targets = _principals(conn, principals)
        roles = _roles(conn, names, chosen)
        for kind, name in targets:
            if kind == "user" and not sql_admin.end_user_exists(conn, name):
                raise InvalidArgumentError(
                    f"local end user {name!r} does not exist; create it first")
            for role in roles:
                sql_admin.grant_role(conn, role, kind, name)


def revoke_agent_memory_policies(connection: Any, memory_store_id: str, owner_schema: str,
                                 principals: list[Principal],
                                 policies: list[DeepDataSecurityPolicy]) -> None:
    """Revoke policies from principals (revoking what was never granted is not an error)."""
    chosen = _policies(policies)
    names = _names(owner_schema, memory_store_id)
    _principal_list(principals)
    with _admin_transaction(connection, "revoke_agent_memory_policies") as conn:
        _require_store(conn, names, memory_store_id)
        targets = _principals(conn, principals)
        roles = _roles(conn, names, chosen)
        for kind, name in targets:
            for role in roles:
                sql_admin.revoke_role(conn, role, kind, name)


def list_agent_memory_granted_policies(
    connection: Any, memory_store_id: str, owner_schema: str,
) -> list[tuple[Principal, list[DeepDataSecurityPolicy]]]:
    """Each principal with the policies granted to it on a store."""
    names = _names(owner_schema, memory_store_id)
    assert names.schema is not None
    with _admin_transaction(connection, "list_agent_memory_granted_policies") as conn:
        _require_store(conn, names, memory_store_id)
        if not _security_schema_exists(conn):
            return []
        rows = sql_admin.list_role_grants(conn, names.schema, names.store_key)
    grouped: dict[Principal, list[DeepDataSecurityPolicy]] = {}
    for kind, name, policy_name in rows:
        principal: Principal = LocalEndUserPrincipal(name) if kind == "user" \
            else OciGroupPrincipal(name.split(":", 1)[-1], name.split(":", 1)[0])
        grouped.setdefault(principal, []).append(POLICY_BY_NAME[policy_name])
    return list(grouped.items())


def get_end_user_username(connection: Any) -> str | None:
    """The end user the database sees on ``connection`` (``None`` outside an end-user context)."""
    if not isinstance(connection, psycopg.Connection):
        raise InvalidArgumentTypeError("connection must be a psycopg Connection")
    return sql_admin.current_end_user(connection)
