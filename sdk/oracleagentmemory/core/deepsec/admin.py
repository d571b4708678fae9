"""Admin API of Deep Data Security: install policies on a store, grant them to principals.

Every function runs as the admin identity (the schema owner or a policy administrator) on the
connection it is given, in one transaction, and refuses to run inside an end-user context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oracleagentmemory.core._validation import check_required_id
from oracleagentmemory.core.deepsec._admin_session import (
    admin_transaction,
    connect_admin,
    require_store,
    store_names_of,
)
from oracleagentmemory.core.deepsec.policies import POLICY_BY_NAME, DeepDataSecurityPolicy
from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.security_admin import (
    PrincipalKind,
    SecurityAdmin,
    security_admin_for,
)
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "LocalEndUserPrincipal",
    "OciGroupPrincipal",
    "Principal",
    "StoreProtection",
    "add_deep_data_security_policies",
    "connect_admin",
    "deep_data_security_protection",
    "get_end_user_username",
    "grant_agent_memory_policies",
    "list_agent_memory_granted_policies",
    "list_deep_data_security_policies",
    "remove_deep_data_security_policies",
    "revoke_agent_memory_policies",
]


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


def _policies(policies: Sequence[DeepDataSecurityPolicy]) -> list[DeepDataSecurityPolicy]:
    if isinstance(policies, DeepDataSecurityPolicy) or not isinstance(policies, (list, tuple)):
        raise InvalidArgumentTypeError("policies must be a list of DeepDataSecurityPolicy",
                                       argument="policies")
    if not policies:
        raise InvalidArgumentError("policies must not be empty", argument="policies")
    for n, policy in enumerate(policies):
        if not isinstance(policy, DeepDataSecurityPolicy) or type(policy) is DeepDataSecurityPolicy:
            raise InvalidArgumentTypeError(
                f"policies[{n}] must be UserOwnRowsDeepDataSecurityPolicy or "
                "GlobalMemoriesDeepDataSecurityPolicy", argument=f"policies[{n}]")
    return list(dict.fromkeys(policies))


def _principal(admin: SecurityAdmin, principal: Principal, n: int) -> tuple[PrincipalKind, str]:
    """``(kind, stored name)``: a local user's name, or ``"<provider>:<group>"``."""
    if isinstance(principal, LocalEndUserPrincipal):
        name = check_required_id(principal.username, f"principals[{n}].username")
        if ":" in name:
            raise InvalidArgumentError(f"principals[{n}].username: a local end user's name never "
                                       "contains ':'", argument=f"principals[{n}].username")
        return "user", name
    if isinstance(principal, OciGroupPrincipal):
        group = check_required_id(principal.group_name, f"principals[{n}].group_name")
        provider = principal.identity_provider
        registered = admin.identity_provider_names() if admin.security_schema_installed() \
            else []
        if provider is None:
            if len(registered) != 1:
                raise InvalidArgumentError(
                    f"principals[{n}]: name the identity provider of group {group!r} "
                    f"(identity_provider=...); registered: {registered or 'none'}",
                    argument=f"principals[{n}].identity_provider")
            provider = registered[0]
        elif provider not in registered:
            raise InvalidArgumentError(f"principals[{n}].identity_provider: no identity provider "
                                       f"{provider!r} is registered (oam-admin idp add)",
                                       argument=f"principals[{n}].identity_provider")
        return "group", f"{provider}:{group}"
    raise InvalidArgumentTypeError(
        f"principals[{n}] must be a LocalEndUserPrincipal or an OciGroupPrincipal",
        argument=f"principals[{n}]")


def add_deep_data_security_policies(connection: object, owner_schema: str, memory_store_id: str,
                                    policies: list[DeepDataSecurityPolicy]) -> None:
    """Install policies on a store: row-level security, column privileges, data roles.

    Installs the security schema and the schema's runtime role when missing. Once a table has a
    policy, the runtime role reaches its rows only through the policies. Installing a policy
    again re-applies it over the store's current columns (after an upgrade or a recreate).
    """
    chosen = _policies(policies)
    names = store_names_of(owner_schema, memory_store_id)
    with admin_transaction(connection, "add_deep_data_security_policies") as admin:
        require_store(admin, names, memory_store_id)
        admin.install_security_schema()
        for policy in chosen:
            admin.install_policy(names, policy.declaration)


def remove_deep_data_security_policies(connection: object, owner_schema: str,
                                       memory_store_id: str,
                                       policies: list[DeepDataSecurityPolicy]) -> None:
    """Remove policies from a store (their grants to principals go with them)."""
    chosen = _policies(policies)
    names = store_names_of(owner_schema, memory_store_id)
    with admin_transaction(connection, "remove_deep_data_security_policies") as admin:
        require_store(admin, names, memory_store_id)
        installed = set(admin.installed_policy_names(names))
        for policy in chosen:
            installed.discard(policy.declaration.name)
            remaining = [POLICY_BY_NAME[n].declaration for n in sorted(installed)]
            admin.remove_policy(names, policy.declaration, remaining)


def list_deep_data_security_policies(connection: object, owner_schema: str,
                                     memory_store_id: str) -> list[DeepDataSecurityPolicy]:
    """Policies installed on a store."""
    names = store_names_of(owner_schema, memory_store_id)
    with admin_transaction(connection, "list_deep_data_security_policies") as admin:
        require_store(admin, names, memory_store_id)
        found = admin.installed_policy_names(names)
    return [POLICY_BY_NAME[n] for n in found if n in POLICY_BY_NAME]


def _roles(admin: SecurityAdmin, names: StoreNames,
           policies: list[DeepDataSecurityPolicy]) -> list[str]:
    roles = []
    for policy in policies:
        role = admin.data_role(names, policy.declaration.name)
        if role is None:
            raise InvalidArgumentError(
                f"policy {policy.declaration.name!r} is not installed on memory store "
                f"{names.store_key!r}; add it with add_deep_data_security_policies first",
                argument="policies")
        roles.append(role)
    return roles


def _principals(admin: SecurityAdmin, principals: Sequence[Principal]
                ) -> list[tuple[PrincipalKind, str]]:
    """``(kind, stored name)`` of each principal; the list must not be empty."""
    return [_principal(admin, p, n) for n, p in enumerate(_principal_list(principals))]


def _principal_list(principals: Sequence[Principal]) -> Sequence[Principal]:
    if not isinstance(principals, (list, tuple)) or not principals:
        raise InvalidArgumentError("principals must be a non-empty list", argument="principals")
    return principals


def grant_agent_memory_policies(connection: object, memory_store_id: str, owner_schema: str,
                                principals: Sequence[Principal],
                                policies: list[DeepDataSecurityPolicy]) -> None:
    """Grant installed policies to local end users and identity-provider groups."""
    chosen = _policies(policies)
    names = store_names_of(owner_schema, memory_store_id)
    _principal_list(principals)
    with admin_transaction(connection, "grant_agent_memory_policies") as admin:
        require_store(admin, names, memory_store_id)
        targets = _principals(admin, principals)
        roles = _roles(admin, names, chosen)
        for kind, name in targets:
            if kind == "user" and not admin.end_user_exists(name):
                raise InvalidArgumentError(
                    f"local end user {name!r} does not exist; create it first",
                    argument="principals")
            for role in roles:
                admin.grant_data_role(role, kind, name)


def revoke_agent_memory_policies(connection: object, memory_store_id: str, owner_schema: str,
                                 principals: Sequence[Principal],
                                 policies: list[DeepDataSecurityPolicy]) -> None:
    """Revoke policies from principals (revoking what was never granted is not an error)."""
    chosen = _policies(policies)
    names = store_names_of(owner_schema, memory_store_id)
    _principal_list(principals)
    with admin_transaction(connection, "revoke_agent_memory_policies") as admin:
        require_store(admin, names, memory_store_id)
        targets = _principals(admin, principals)
        roles = _roles(admin, names, chosen)
        for kind, name in targets:
            for role in roles:
                admin.revoke_data_role(role, kind, name)


def list_agent_memory_granted_policies(
    connection: object, memory_store_id: str, owner_schema: str,
) -> list[tuple[Principal, list[DeepDataSecurityPolicy]]]:
    """Each principal with the policies granted to it on a store."""
    names = store_names_of(owner_schema, memory_store_id)
    with admin_transaction(connection, "list_agent_memory_granted_policies") as admin:
        require_store(admin, names, memory_store_id)
        grants = admin.data_role_grants(names)
    grouped: dict[Principal, list[DeepDataSecurityPolicy]] = {}
    for grant in grants:
        principal: Principal
        if grant.principal_kind == "user":
            principal = LocalEndUserPrincipal(grant.principal)
        else:
            provider, _, group = grant.principal.partition(":")
            principal = OciGroupPrincipal(group, provider)
        grouped.setdefault(principal, []).append(POLICY_BY_NAME[grant.policy_name])
    return list(grouped.items())


@dataclass(frozen=True)
class StoreProtection:
    """What protects a store: row-level security, its installed policies, who may re-apply them.

    ``owner_schema`` is the store's schema as the database names it; ``policies`` is empty
    when the identity that asked may not administer the security schema (it cannot read it).
    """

    owner_schema: str
    row_security: bool
    policies: tuple[DeepDataSecurityPolicy, ...]
    may_administer: bool


def deep_data_security_protection(connection: object, owner_schema: str | None,
                                  memory_store_id: str) -> StoreProtection:
    """Whether a store is protected and whether this identity may re-apply its policies.

    Any admin identity may ask (the schema owner too): a store is protected when row-level
    security is on for any of its tables. ``owner_schema=None`` means the identity's own schema.
    """
    with admin_transaction(connection, "deep_data_security_protection") as admin:
        names = store_names_of(owner_schema or admin.session_identity(), memory_store_id)
        assert names.schema is not None
        may_administer = admin.may_administer_security()
        if not admin.store_exists(names):
            return StoreProtection(names.schema, False, (), may_administer)
        protected = admin.store_has_row_security(names)
        found = admin.installed_policy_names(names) if may_administer else []
    return StoreProtection(names.schema, protected,
                           tuple(POLICY_BY_NAME[n] for n in found if n in POLICY_BY_NAME),
                           may_administer)


def get_end_user_username(connection: object) -> str | None:
    """The end user the database sees on ``connection`` (``None`` outside an end-user context).

    ``connection`` is a driver connection (a URL would open a new session, which has none).
    """
    if isinstance(connection, str):
        raise InvalidArgumentTypeError("connection must be a psycopg Connection (a URL opens a "
                                       "session without an end user)", argument="connection")
    return security_admin_for(connection).current_end_user()
