"""Admin API of the identities Deep Data Security trusts.

Local end users, identity providers (token issuers and their users' namespaces), applications
(a key bound to one runtime login, the stores and providers it may act for) and runtime logins.
Like :mod:`.admin`, every function runs as the admin identity in one transaction on the
``connection`` it is given and refuses to run inside an end-user context. The database's own
naming rules (role names, provider names) are checked by the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oracleagentmemory.core._validation import check_required_id
from oracleagentmemory.core.deepsec._admin_session import admin_transaction, store_names_of
from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.security_admin import (
    ApplicationInfo,
    IdentityProviderInfo,
    SecurityAdmin,
)
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

StoreRef = tuple[str, str]
"""A memory store as ``(owner schema, memory store id)``."""


def _name(value: object, argument: str) -> str:
    return check_required_id(value, argument)


def _text(value: object, argument: str) -> str:
    """A non-empty ``str`` of any length (an issuer URL, an audience, a claim name)."""
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(f"{argument} must be a str, got {type(value).__name__}",
                                       argument=argument)
    if not value.strip():
        raise InvalidArgumentError(f"{argument} must not be empty or blank", argument=argument)
    return value


def _stores(stores: Sequence[StoreRef]) -> list[StoreNames]:
    if not isinstance(stores, (list, tuple)):
        raise InvalidArgumentTypeError("stores must be a list of (owner schema, memory store id)",
                                       argument="stores")
    found = []
    for n, store in enumerate(stores):
        if not isinstance(store, tuple) or len(store) != 2:
            raise InvalidArgumentTypeError(
                f"stores[{n}] must be an (owner schema, memory store id) tuple",
                argument=f"stores[{n}]")
        found.append(store_names_of(store[0], store[1]))
    return found


def _providers(identity_providers: Sequence[str]) -> list[str]:
    if not isinstance(identity_providers, (list, tuple)):
        raise InvalidArgumentTypeError("identity_providers must be a list of names",
                                       argument="identity_providers")
    return [_name(p, f"identity_providers[{n}]") for n, p in enumerate(identity_providers)]


def _no_application(admin: SecurityAdmin, name: str) -> None:
    if not admin.security_schema_installed():
        raise InvalidArgumentError(f"no application {name!r} exists", argument="name")


# --- local end users -------------------------------------------------------------------------
def create_end_user(connection: object, username: str) -> bool:
    """Create a local end user; ``False`` when it already existed."""
    name = _name(username, "username")
    if ":" in name:
        raise InvalidArgumentError(
            "a local end user's name never contains ':' (identity-provider users are "
            f"'<provider>:<name>'); got {name!r}", argument="username")
    with admin_transaction(connection, "create_end_user") as admin:
        admin.install_security_schema()
        return admin.create_end_user(name)


def drop_end_user(connection: object, username: str) -> bool:
    """Drop a local end user and every grant to it; ``False`` when it did not exist."""
    name = _name(username, "username")
    with admin_transaction(connection, "drop_end_user") as admin:
        return admin.security_schema_installed() and admin.drop_end_user(name)


def list_end_users(connection: object) -> list[str]:
    """Names of the local end users, sorted."""
    with admin_transaction(connection, "list_end_users") as admin:
        return admin.end_users() if admin.security_schema_installed() else []


# --- identity providers ----------------------------------------------------------------------
def add_identity_provider(connection: object, name: str, *, issuer: str, audience: str,
                          jwks: Mapping[str, Any], user_claim: str = "sub",
                          groups_claim: str = "groups") -> None:
    """Register an identity provider whose tokens the database verifies (token mode).

    ``name`` is its users' namespace: their rows carry ``"<name>:<user>"``.
    """
    checked = (_name(name, "name"), _text(issuer, "issuer"), _text(audience, "audience"),
               _text(user_claim, "user_claim"), _text(groups_claim, "groups_claim"))
    if not isinstance(jwks, Mapping):
        raise InvalidArgumentTypeError("jwks must be a JWKS mapping", argument="jwks")
    with admin_transaction(connection, "add_identity_provider") as admin:
        admin.install_security_schema()
        admin.add_identity_provider(checked[0], checked[1], checked[2], jwks, checked[3],
                                    checked[4])


def refresh_identity_provider_keys(connection: object, name: str,
                                   jwks: Mapping[str, Any]) -> None:
    """Replace a registered provider's signing keys (key rotation)."""
    provider = _name(name, "name")
    if not isinstance(jwks, Mapping):
        raise InvalidArgumentTypeError("jwks must be a JWKS mapping", argument="jwks")
    with admin_transaction(connection, "refresh_identity_provider_keys") as admin:
        if not admin.security_schema_installed():
            raise InvalidArgumentError(f"no identity provider {provider!r} is registered",
                                       argument="name")
        admin.refresh_identity_provider_keys(provider, jwks)


def list_identity_providers(connection: object) -> list[IdentityProviderInfo]:
    """Every registered identity provider, by name."""
    with admin_transaction(connection, "list_identity_providers") as admin:
        return admin.identity_providers() if admin.security_schema_installed() else []


def remove_identity_provider(connection: object, name: str) -> bool:
    """Unregister a provider (its bindings go, group grants stay); ``False`` if unknown."""
    provider = _name(name, "name")
    with admin_transaction(connection, "remove_identity_provider") as admin:
        return admin.security_schema_installed() and admin.remove_identity_provider(provider)


# --- applications ----------------------------------------------------------------------------
def create_application(connection: object, name: str, login: str, *,
                       stores: Sequence[StoreRef] = (), identity_providers: Sequence[str] = (),
                       require_token: bool = False) -> str:
    """Register an application bound to runtime login ``login``; returns its access token.

    The token is shown only here: the database keeps what verifies it, never the token. The
    application acts for ``stores`` and the users of ``identity_providers`` only (bind more
    later); in token mode (``require_token``) its key alone speaks for nobody.
    """
    app, runtime_login = _name(name, "name"), _name(login, "login")
    targets, providers = _stores(stores), _providers(identity_providers)
    with admin_transaction(connection, "create_application") as admin:
        admin.install_security_schema()
        if any(a.name == app for a in admin.applications()):
            raise InvalidArgumentError(
                f"application {app!r} already exists; its token was shown when it was created "
                "and cannot be shown again (rotate it with rotate_application_key)",
                argument="name")
        token = admin.create_application(app, runtime_login)
        admin.bind_application(app, targets, providers)
        if require_token:
            admin.set_token_mode(app, True)
    return token


def bind_application(connection: object, name: str, *, stores: Sequence[StoreRef] = (),
                     identity_providers: Sequence[str] = ()) -> None:
    """Let an application act for more stores and identity providers."""
    app = _name(name, "name")
    targets, providers = _stores(stores), _providers(identity_providers)
    with admin_transaction(connection, "bind_application") as admin:
        _no_application(admin, app)
        admin.bind_application(app, targets, providers)


def unbind_application(connection: object, name: str, *, stores: Sequence[StoreRef] = (),
                       identity_providers: Sequence[str] = ()) -> int:
    """Withdraw stores and identity providers from an application; returns how many."""
    app = _name(name, "name")
    targets, providers = _stores(stores), _providers(identity_providers)
    with admin_transaction(connection, "unbind_application") as admin:
        _no_application(admin, app)
        return admin.unbind_application(app, targets, providers)


def set_application_token_mode(connection: object, name: str, required: bool) -> None:
    """Token mode on (``required``) or off: may the application key alone speak for users?"""
    app = _name(name, "name")
    if not isinstance(required, bool):
        raise InvalidArgumentTypeError("required must be a bool", argument="required")
    with admin_transaction(connection, "set_application_token_mode") as admin:
        _no_application(admin, app)
        admin.set_token_mode(app, required)


def describe_application(connection: object, name: str) -> ApplicationInfo:
    """An application's login, token mode, stores and identity providers."""
    app = _name(name, "name")
    with admin_transaction(connection, "describe_application") as admin:
        _no_application(admin, app)
        return admin.application(app)


def list_applications(connection: object) -> list[ApplicationInfo]:
    """Every application, by name."""
    with admin_transaction(connection, "list_applications") as admin:
        return admin.applications() if admin.security_schema_installed() else []


def rotate_application_key(connection: object, name: str) -> str:
    """Give an application a new key; returns its new token. The old token stops working at
    the runtime's next statement (a context signed with it no longer verifies)."""
    app = _name(name, "name")
    with admin_transaction(connection, "rotate_application_key") as admin:
        _no_application(admin, app)
        return admin.rotate_application_key(app)


def drop_application(connection: object, name: str) -> bool:
    """Drop an application and its bindings; ``False`` when it did not exist."""
    app = _name(name, "name")
    with admin_transaction(connection, "drop_application") as admin:
        return admin.security_schema_installed() and admin.drop_application(app)


# --- runtime logins --------------------------------------------------------------------------
def create_runtime_login(connection: object, login: str, password: str,
                         owner_schema: str) -> str:
    """Create a login whose only privilege is the runtime role of ``owner_schema``.

    Returns that role's name: the login reaches the schema's tables only through the policies.
    """
    runtime_login = _name(login, "login")
    if not isinstance(password, str) or not password:
        raise InvalidArgumentError("password must be a non-empty str", argument="password")
    owner = store_names_of(owner_schema, None).schema
    assert owner is not None
    with admin_transaction(connection, "create_runtime_login") as admin:
        admin.create_runtime_login(runtime_login, password, owner)
        return admin.runtime_role_name(owner)


def drop_runtime_login(connection: object, login: str) -> None:
    """Drop a runtime login (refused while an application uses it, and for any other role)."""
    runtime_login = _name(login, "login")
    with admin_transaction(connection, "drop_runtime_login") as admin:
        admin.drop_runtime_login(runtime_login)


NOT_INSTALLED_FINDING = (
    "Deep Data Security is not installed in this database: no data grant protects any store's "
    "rows (PostgreSQL: install a store's policies with oam-admin policies add; Oracle: the "
    "database must support Deep Data Security, see deploy/oracle/README.md)")
"""The finding of :func:`runtime_login_drift` on a database without Deep Data Security."""


def runtime_login_drift(connection: object) -> list[str]:
    """One line per change found on runtime logins and applications (empty when none).

    A runtime login may alter its own password and role-level settings; the database cannot
    forbid it, so the admin checks. A database without Deep Data Security is a finding too
    (:data:`NOT_INSTALLED_FINDING`): nothing there would stop a runtime login from reading every
    row, so "no drift" would mislead.
    """
    with admin_transaction(connection, "runtime_login_drift") as admin:
        if not admin.security_schema_installed():
            return [NOT_INSTALLED_FINDING]
        return admin.runtime_login_drift()
