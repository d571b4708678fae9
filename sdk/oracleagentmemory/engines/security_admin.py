"""The engine-neutral contract of security administration (the admin side of Deep Data Security).

A :class:`SecurityAdmin` is bound to one connection of the admin identity (the schema owner or
the policy administrator) and speaks for it: it installs the security schema, installs and
removes policies on a store (row-level security, column privileges, one data role per policy),
grants data roles to end users and identity-provider groups, and manages the identities the
database trusts (local end users, identity providers, applications, runtime logins).

It validates nothing the caller could check without the database (``core.deepsec`` does that)
and runs no transaction of its own: the caller opens one with :meth:`SecurityAdmin.transaction`.
Each engine implements the contract; :func:`security_admin_for` picks it for a connection.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Literal

from oam_policies.model import DataRolePolicy

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.errors import InvalidArgumentTypeError, UnsupportedEngineError

PrincipalKind = Literal["user", "group"]
"""A local end user (``user``) or an identity-provider group (``group``)."""


@dataclass(frozen=True)
class DataRoleGrant:
    """One grant of a store's data role: who holds which policy.

    ``principal`` is a local end user's name or ``"<provider>:<group>"``.
    """

    principal_kind: PrincipalKind
    principal: str
    policy_name: str


@dataclass(frozen=True)
class IdentityProviderInfo:
    """A registered identity provider: how its tokens are checked, who may act for its users."""

    name: str
    issuer: str
    audience: str
    user_claim: str
    groups_claim: str
    key_ids: tuple[str, ...]
    applications: tuple[str, ...]
    updated_at: datetime


@dataclass(frozen=True)
class ApplicationInfo:
    """An application identity: its runtime login, token mode and what it may act for.

    ``stores`` are ``"<owner schema>.<store key>"``.
    """

    name: str
    login: str
    require_token: bool
    stores: tuple[str, ...]
    identity_providers: tuple[str, ...]


class SecurityAdmin(ABC):
    """Security administration on one admin connection (see the module docstring).

    Use it as a context manager: on exit it closes the connection it opened itself (from a URL)
    and leaves a connection it was given open.
    """

    # --- connection and transaction ----------------------------------------------------------
    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """A transaction (or a savepoint inside one): committed on success, else rolled back."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection if this object opened it."""

    def __enter__(self) -> SecurityAdmin:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    @abstractmethod
    def session_identity(self) -> str:
        """The database identity this session runs as (its own schema's default name)."""

    # --- security schema and stores ----------------------------------------------------------
    @abstractmethod
    def install_security_schema(self) -> None:
        """Create or refresh the security schema (idempotent).

        Raises :class:`PermissionError` when another policy administrator owns it.
        """

    @abstractmethod
    def security_schema_installed(self) -> bool:
        """Whether the security schema exists."""

    @abstractmethod
    def may_administer_security(self) -> bool:
        """Whether this identity may manage the security schema (absent, or its owner's)."""

    @abstractmethod
    def store_exists(self, names: StoreNames) -> bool:
        """Whether every managed table of the store exists."""

    @abstractmethod
    def store_has_row_security(self, names: StoreNames) -> bool:
        """Whether any managed table of the store has row-level security on (it is protected).

        Readable by any identity, including a schema owner that is not the policy administrator.
        """

    @abstractmethod
    def runtime_role_name(self, owner_schema: str) -> str:
        """The role whose privileges the runtime logins of ``owner_schema`` hold."""

    # --- policies and grants -----------------------------------------------------------------
    @abstractmethod
    def installed_policy_names(self, names: StoreNames) -> list[str]:
        """Names of the policies installed on a store, sorted (empty without a schema)."""

    @abstractmethod
    def install_policy(self, names: StoreNames, policy: DataRolePolicy) -> None:
        """Install (or reinstall over the current columns) one policy on a store."""

    @abstractmethod
    def remove_policy(self, names: StoreNames, policy: DataRolePolicy,
                      remaining: Sequence[DataRolePolicy]) -> None:
        """Remove one policy (its data role and grants) and keep what ``remaining`` needs."""

    @abstractmethod
    def data_role(self, names: StoreNames, policy_name: str) -> str | None:
        """The data role of a policy installed on a store (``None`` when not installed)."""

    @abstractmethod
    def grant_data_role(self, role: str, kind: PrincipalKind, principal: str) -> None:
        """Grant a data role (granting it twice is not an error)."""

    @abstractmethod
    def revoke_data_role(self, role: str, kind: PrincipalKind, principal: str) -> int:
        """Revoke a data role; returns how many grants were removed."""

    @abstractmethod
    def data_role_grants(self, names: StoreNames) -> list[DataRoleGrant]:
        """Every grant of a store's data roles, by principal kind, principal and policy."""

    # --- local end users ---------------------------------------------------------------------
    @abstractmethod
    def end_user_exists(self, username: str) -> bool:
        """Whether a local end user exists."""

    @abstractmethod
    def create_end_user(self, username: str) -> bool:
        """Create a local end user; ``False`` when it already existed."""

    @abstractmethod
    def drop_end_user(self, username: str) -> bool:
        """Drop a local end user and its grants; ``False`` when it did not exist."""

    @abstractmethod
    def end_users(self) -> list[str]:
        """Names of the local end users, sorted."""

    # --- identity providers ------------------------------------------------------------------
    @abstractmethod
    def identity_provider_names(self) -> list[str]:
        """Names of the registered identity providers, sorted."""

    @abstractmethod
    def add_identity_provider(self, name: str, issuer: str, audience: str,
                              jwks: Mapping[str, Any], user_claim: str,
                              groups_claim: str) -> None:
        """Register an identity provider: its namespace ``name`` and how its tokens are checked."""

    @abstractmethod
    def refresh_identity_provider_keys(self, name: str, jwks: Mapping[str, Any]) -> None:
        """Replace a provider's signing keys (key rotation)."""

    @abstractmethod
    def identity_providers(self) -> list[IdentityProviderInfo]:
        """Every registered identity provider, by name."""

    @abstractmethod
    def remove_identity_provider(self, name: str) -> bool:
        """Unregister a provider (its bindings go, group grants stay); ``False`` if unknown."""

    # --- applications ------------------------------------------------------------------------
    @abstractmethod
    def create_application(self, name: str, login: str) -> str:
        """Register an application bound to runtime login ``login``; returns its access token.

        The token is the application's secret: the database keeps only what verifies it.
        """

    @abstractmethod
    def rotate_application_key(self, name: str) -> str:
        """Give an application a new key; returns the new token (the old one stops working)."""

    @abstractmethod
    def drop_application(self, name: str) -> bool:
        """Drop an application and its bindings; ``False`` when it did not exist."""

    @abstractmethod
    def applications(self) -> list[ApplicationInfo]:
        """Every application, by name."""

    @abstractmethod
    def application(self, name: str) -> ApplicationInfo:
        """One application (:class:`~oracleagentmemory.errors.InvalidArgumentError` if unknown)."""

    @abstractmethod
    def bind_application(self, name: str, stores: Sequence[StoreNames],
                         identity_providers: Sequence[str]) -> None:
        """Let an application act for more stores and identity providers."""

    @abstractmethod
    def unbind_application(self, name: str, stores: Sequence[StoreNames],
                           identity_providers: Sequence[str]) -> int:
        """Withdraw stores and identity providers from an application; returns how many."""

    @abstractmethod
    def set_token_mode(self, name: str, required: bool) -> None:
        """Token mode on or off: whether the application key alone may speak for end users."""

    # --- runtime logins ----------------------------------------------------------------------
    @abstractmethod
    def create_runtime_login(self, login: str, password: str, owner_schema: str) -> None:
        """Create a login whose only privilege is membership of the schema's runtime role."""

    @abstractmethod
    def drop_runtime_login(self, login: str) -> None:
        """Drop a runtime login; refused while an application uses it or if it is not one."""

    @abstractmethod
    def runtime_login_drift(self) -> list[str]:
        """One line per change found on the runtime logins and applications since creation."""

    # --- the session's end user --------------------------------------------------------------
    @abstractmethod
    def current_end_user(self) -> str | None:
        """The end user the database sees on this connection (``None`` outside a context)."""


_IMPLEMENTATIONS = {
    "postgresql": "oracleagentmemory.engines.postgres.security_admin:PostgresSecurityAdmin",
    "oracle": "oracleagentmemory.engines.oracle.security_admin:OracleSecurityAdmin",
}
"""Engine name (as registered in :mod:`oracleagentmemory.engines.registry`) -> its admin class."""


def security_admin_for(connection: object) -> SecurityAdmin:
    """The :class:`SecurityAdmin` of the engine that ``connection`` belongs to.

    ``connection`` is a driver connection of the admin identity (left open on exit) or a URL
    the engine opens itself (connected within the engine's bound, closed on exit). An existing
    :class:`SecurityAdmin` is returned as is. The engine is recognised by the registry, and its
    implementation imported only now.
    """
    if isinstance(connection, SecurityAdmin):
        return connection
    from oracleagentmemory.engines.registry import engine_entries

    entry = next((e for e in engine_entries() if e.accepts(connection)), None)
    if entry is not None and entry.unavailable is not None:
        raise UnsupportedEngineError(entry.unavailable)
    path = None if entry is None else _IMPLEMENTATIONS.get(entry.name)
    if path is None:
        raise InvalidArgumentTypeError(
            "connection must be a psycopg or oracledb Connection, or a postgresql:// or "
            f"oracle:// URL of the admin identity, got {type(connection).__name__}",
            argument="connection")
    module_name, class_name = path.split(":")
    implementation = getattr(importlib.import_module(module_name), class_name)
    admin = implementation.for_connection(connection)
    assert isinstance(admin, SecurityAdmin)
    return admin
