"""PostgreSQL's :class:`~oracleagentmemory.engines.security_admin.SecurityAdmin`.

A thin adapter: the SQL lives in :mod:`.deepsec_admin` and :mod:`.identity_admin`; this class
binds it to one psycopg connection of the admin identity.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

import psycopg
from oam_policies.model import DataRolePolicy
from psycopg.conninfo import conninfo_to_dict

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.postgres import deepsec_admin as sql_admin
from oracleagentmemory.engines.postgres.engine import connect_timeout
from oracleagentmemory.engines.security_admin import (
    ApplicationInfo,
    DataRoleGrant,
    IdentityProviderInfo,
    PrincipalKind,
    SecurityAdmin,
)
from oracleagentmemory.errors import DatabaseUnavailableError, InvalidArgumentTypeError


def connect_admin(url: str) -> psycopg.Connection[Any]:
    """An autocommit connection for ``url``, or :class:`DatabaseUnavailableError` within the
    engine's connect bound (``OAM_CONNECT_TIMEOUT``, default 5 s; a ``connect_timeout`` in the
    URL wins), reported once whatever the number of addresses tried."""
    try:
        options = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise InvalidArgumentTypeError(f"connection: not a valid postgresql:// URL ({exc})",
                                       argument="connection") from None
    extra: dict[str, Any] = {} if "connect_timeout" in options \
        else {"connect_timeout": max(1, math.ceil(connect_timeout()))}
    try:
        return psycopg.connect(url, autocommit=True, **extra)
    except psycopg.OperationalError as exc:
        where = f"{options.get('host') or 'localhost'}:{options.get('port') or 5432}"
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()),
                     type(exc).__name__)
        raise DatabaseUnavailableError(
            f"cannot connect to the database at {where}: {first}",
            hint="check that the server is running (`oam-admin db start` starts the embedded "
                 "one) and that the URL is right") from exc


_Admin = TypeVar("_Admin", bound="AdminConnection")


class AdminConnection:
    """One psycopg connection of the admin identity: given (left open) or opened from a URL
    (closed by :meth:`close`), with :meth:`transaction` around a unit of admin work."""

    def __init__(self, conn: psycopg.Connection[Any], *, owned: bool) -> None:
        self._conn = conn
        self._owned = owned

    @classmethod
    def for_connection(cls: type[_Admin], connection: object) -> _Admin:
        """Bind to a psycopg connection (left open) or connect to a URL (closed on exit)."""
        if isinstance(connection, str):
            return cls(connect_admin(connection), owned=True)
        if not isinstance(connection, psycopg.Connection):
            raise InvalidArgumentTypeError(
                "connection must be a psycopg Connection or a postgresql:// URL of the admin "
                f"identity, got {type(connection).__name__}", argument="connection")
        return cls(connection, owned=False)

    def transaction(self) -> AbstractContextManager[None]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._conn.transaction():
            yield

    def close(self) -> None:
        if self._owned:
            self._conn.close()


class PostgresSecurityAdmin(AdminConnection, SecurityAdmin):
    """Security administration on one psycopg connection."""

    def session_identity(self) -> str:
        return sql_admin.session_identity(self._conn)

    # --- security schema and stores ----------------------------------------------------------
    def install_security_schema(self) -> None:
        sql_admin.install_security_schema(self._conn)

    def security_schema_installed(self) -> bool:
        return sql_admin.security_schema_installed(self._conn)

    def may_administer_security(self) -> bool:
        return sql_admin.may_administer_security(self._conn)

    def store_exists(self, names: StoreNames) -> bool:
        return sql_admin.store_exists(self._conn, names)

    def store_has_row_security(self, names: StoreNames) -> bool:
        return sql_admin.store_has_row_security(self._conn, names)

    def runtime_role_name(self, owner_schema: str) -> str:
        return sql_admin.runtime_role_name(owner_schema)

    # --- policies and grants -----------------------------------------------------------------
    def installed_policy_names(self, names: StoreNames) -> list[str]:
        if not self.security_schema_installed():
            return []
        return sql_admin.installed_policy_names(self._conn, _schema(names), names.store_key)

    def install_policy(self, names: StoreNames, policy: DataRolePolicy) -> None:
        sql_admin.install_policy(self._conn, names, _schema(names), policy)

    def remove_policy(self, names: StoreNames, policy: DataRolePolicy,
                      remaining: Sequence[DataRolePolicy]) -> None:
        sql_admin.remove_policy(self._conn, names, _schema(names), policy, remaining)

    def data_role(self, names: StoreNames, policy_name: str) -> str | None:
        if not self.security_schema_installed():
            return None
        return sql_admin.installed_data_role(self._conn, _schema(names), names.store_key,
                                             policy_name)

    def grant_data_role(self, role: str, kind: PrincipalKind, principal: str) -> None:
        sql_admin.grant_role(self._conn, role, kind, principal)

    def revoke_data_role(self, role: str, kind: PrincipalKind, principal: str) -> int:
        return sql_admin.revoke_role(self._conn, role, kind, principal)

    def data_role_grants(self, names: StoreNames) -> list[DataRoleGrant]:
        if not self.security_schema_installed():
            return []
        rows = sql_admin.list_role_grants(self._conn, _schema(names), names.store_key)
        return [DataRoleGrant("user" if kind == "user" else "group", principal, policy)
                for kind, principal, policy in rows]

    # --- local end users ---------------------------------------------------------------------
    def end_user_exists(self, username: str) -> bool:
        return sql_admin.end_user_exists(self._conn, username)

    def create_end_user(self, username: str) -> bool:
        return sql_admin.create_end_user(self._conn, username)

    def drop_end_user(self, username: str) -> bool:
        return sql_admin.drop_end_user(self._conn, username)

    def end_users(self) -> list[str]:
        return sql_admin.list_end_users(self._conn)

    # --- identity providers ------------------------------------------------------------------
    def identity_provider_names(self) -> list[str]:
        return sql_admin.identity_provider_names(self._conn)

    def add_identity_provider(self, name: str, issuer: str, audience: str,
                              jwks: Mapping[str, Any], user_claim: str,
                              groups_claim: str) -> None:
        sql_admin.add_identity_provider(self._conn, name, issuer, audience, dict(jwks),
                                        user_claim, groups_claim)

    def refresh_identity_provider_keys(self, name: str, jwks: Mapping[str, Any]) -> None:
        sql_admin.refresh_identity_provider_keys(self._conn, name, dict(jwks))

    def identity_providers(self) -> list[IdentityProviderInfo]:
        return [IdentityProviderInfo(
            name=row["name"], issuer=row["issuer"], audience=row["audience"],
            user_claim=row["user_claim"], groups_claim=row["groups_claim"],
            key_ids=tuple(row["key_ids"]), applications=tuple(row["applications"]),
            updated_at=row["updated_at"]) for row in sql_admin.list_identity_providers(self._conn)]

    def remove_identity_provider(self, name: str) -> bool:
        return sql_admin.remove_identity_provider(self._conn, name)

    # --- applications ------------------------------------------------------------------------
    def create_application(self, name: str, login: str) -> str:
        return sql_admin.create_application(self._conn, name, login).token()

    def rotate_application_key(self, name: str) -> str:
        return sql_admin.rotate_application_key(self._conn, name).token()

    def drop_application(self, name: str) -> bool:
        return sql_admin.drop_application(self._conn, name)

    def applications(self) -> list[ApplicationInfo]:
        return [ApplicationInfo(name=row["app_name"], login=row["login_role"],
                                require_token=bool(row["require_token"]),
                                stores=tuple(row["stores"]),
                                identity_providers=tuple(row["identity_providers"]))
                for row in sql_admin.list_applications(self._conn)]

    def application(self, name: str) -> ApplicationInfo:
        shown = sql_admin.application_bindings(self._conn, name)
        return ApplicationInfo(name=name, login=shown["login"],
                               require_token=bool(shown["require_token"]),
                               stores=tuple(shown["stores"]),
                               identity_providers=tuple(shown["identity_providers"]))

    def bind_application(self, name: str, stores: Sequence[StoreNames],
                         identity_providers: Sequence[str]) -> None:
        sql_admin.bind_application(self._conn, name, stores=_store_keys(stores),
                                   identity_providers=identity_providers)

    def unbind_application(self, name: str, stores: Sequence[StoreNames],
                           identity_providers: Sequence[str]) -> int:
        return sql_admin.unbind_application(self._conn, name, stores=_store_keys(stores),
                                            identity_providers=identity_providers)

    def set_token_mode(self, name: str, required: bool) -> None:
        sql_admin.set_require_token(self._conn, name, required)

    # --- runtime logins ----------------------------------------------------------------------
    def create_runtime_login(self, login: str, password: str, owner_schema: str) -> None:
        sql_admin.create_runtime_login(self._conn, login, password, owner_schema)

    def drop_runtime_login(self, login: str) -> None:
        sql_admin.drop_runtime_login(self._conn, login)

    def runtime_login_drift(self) -> list[str]:
        return sql_admin.runtime_login_drift(self._conn)

    # --- the session's end user --------------------------------------------------------------
    def current_end_user(self) -> str | None:
        return sql_admin.current_end_user(self._conn)


def _schema(names: StoreNames) -> str:
    assert names.schema is not None, "admin work always names the owner schema"
    return names.schema


def _store_keys(stores: Sequence[StoreNames]) -> list[tuple[str, str]]:
    return [(_schema(names), names.store_key) for names in stores]
