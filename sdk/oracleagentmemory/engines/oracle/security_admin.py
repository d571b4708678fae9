"""Oracle's :class:`~oracleagentmemory.engines.security_admin.SecurityAdmin`: Deep Data
Security administration on one python-oracledb connection of the admin identity.

The statements come from :mod:`.admin_sql` (dictionary queries, values bound) and
:mod:`.admin_ddl` (DDL through the ``oam_policies.oracle`` renderer, names validated); this
class runs them in order and reads the answers. What maps how:

- **Security schema.** Oracle has Deep Data Security built in (26ai, Release Update 23.26.2):
  there is nothing to install. "Installed" means the database knows ``ORA_END_USER_CONTEXT``;
  "may administer" means the session holds the privileges policies need (``SESSION_PRIVS``).
- **Policies.** One local data role per store and policy (:func:`.admin_names.store_data_role`)
  carries the policy's data grants; the store's tables get ``SET USE DATA GRANTS ONLY``.
- **Grants.** A local end user gets ``GRANT DATA ROLE``. An identity-provider group cannot be
  granted a role (mapped roles are not grantable, ORA-52512): it gets one data role ``MAPPED TO``
  its group claim, carrying a copy of the data grants of every store and policy granted to it.
- **Identity providers and applications** are the database's own on Oracle (the
  ``IDENTITY_PROVIDER_TYPE`` parameter, ``CREATE APPLICATION IDENTITY``), set up by the DBA as
  ``deploy/oracle/README.md`` shows: their methods raise
  :class:`~oracleagentmemory.errors.UnsupportedFeatureError`.

**Transactions.** Every administrative statement here is DDL, and Oracle commits before and
after each DDL statement: :meth:`transaction` commits or rolls back only what is not DDL (nothing
this class issues), it cannot undo a DDL statement that ran. Safety comes from the order of the
statements instead (:mod:`.admin_ddl`): a sequence cut short leaves a state that running the
same call again repairs, and never a protected table without mandatory data grants.

Not run against a live database: no Oracle database is reachable where this was written. Its
statements are pinned by golden files (``tests/golden/oracle_admin/``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any

import oracledb
from oam_policies import SHIPPED_POLICIES
from oam_policies.model import DataRolePolicy
from oam_policies.oracle import OracleTarget, grant_name

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE, StoreNames
from oracleagentmemory.engines.oracle import admin_ddl as ddl
from oracleagentmemory.engines.oracle import admin_sql as sql
from oracleagentmemory.engines.oracle.admin_names import (
    MAPPING_KEYS,
    group_data_role,
    group_mapping,
    principal_of_mapping,
    store_data_role,
)
from oracleagentmemory.engines.oracle.context import seen_username
from oracleagentmemory.engines.oracle.driver_errors import error_info, translate
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names, normalise
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.engines.oracle.url import admin_connection
from oracleagentmemory.engines.security_admin import (
    ApplicationInfo,
    DataRoleGrant,
    IdentityProviderInfo,
    PrincipalKind,
    SecurityAdmin,
)
from oracleagentmemory.errors import (
    DatabaseError,
    EndUserContextError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)

ADMIN_PRIVILEGES = frozenset({"CREATE DATA ROLE", "DROP DATA ROLE", "GRANT ANY DATA ROLE",
                              "CREATE ANY DATA GRANT", "ADMINISTER ANY DATA GRANT",
                              "DROP ANY DATA GRANT", "SET USE DATA GRANTS ONLY"})
"""System privileges installing and removing policies on another schema's store needs (Deep
Data Security Guide; deploy/oracle/bootstrap.sql). Privileges granted per schema (``... ON
SCHEMA``) are not in ``SESSION_PRIVS`` and are not counted: such an administrator is told it
may not administer, and the commands that need the privileges fail with the database's error."""

RUNTIME_GRANT_LABEL = "CREATE SESSION + CREATE END USER SECURITY CONTEXT"
"""What a runtime login holds on Oracle (there is no runtime role to be a member of)."""

_NO_DEEP_SEC_CODES = frozenset({900, 904, 942})
_NO_VIEW_CODES = frozenset({942, 1031})

_SEE = "see deploy/oracle/README.md"
NO_IDENTITY_PROVIDERS = (
    "identity providers are not registered per store on Oracle: the database trusts OCI IAM "
    "or Microsoft Entra ID through its IDENTITY_PROVIDER_TYPE parameter, which a DBA sets "
    f"(step 2, {_SEE}); grant to a group as oci_iam:<group> or azure_ad:<app role>")
NO_APPLICATIONS = (
    "applications with keys do not exist on Oracle: the gateway proves itself with a database "
    "access token from OCI IAM or Entra ID, and the DBA registers it with CREATE APPLICATION "
    f"IDENTITY (steps 2 and 3, {_SEE})")


class OracleSecurityAdmin(SecurityAdmin):
    """Security administration on one python-oracledb connection (see the module docstring).

    Build it with :meth:`for_connection`: a connection it is given stays open, one it opened
    from an ``oracle://`` URL is closed by :meth:`close`.
    """

    def __init__(self, conn: oracledb.Connection, *, owned: bool) -> None:
        self._conn = conn
        self._owned = owned
        self._deep_sec: bool | None = None
        self._user: str | None = None
        self._resolved: dict[str, tuple[OracleObjects, DataRolePolicy]] = {}

    @classmethod
    def for_connection(cls, connection: object) -> OracleSecurityAdmin:
        """Bind to an ``oracledb.Connection`` (left open) or connect to an ``oracle://`` URL
        (closed on exit; an unreachable database raises ``DatabaseUnavailableError``)."""
        conn, owned = admin_connection(connection, "the admin identity")
        return cls(conn, owned=owned)

    # --- running statements ----------------------------------------------------------------
    def _rows(self, statement: Statement) -> list[tuple[Any, ...]]:
        try:
            with self._conn.cursor() as cursor:
                cursor.execute(statement.sql, dict(statement.binds))
                return [tuple(row) for row in cursor.fetchall()]
        except oracledb.Error as exc:
            raise _dictionary_error(exc, statement.sql) from exc

    def _scalar(self, statement: Statement) -> Any:
        rows = self._rows(statement)
        return rows[0][0] if rows else None

    def _column(self, statement: Statement) -> list[str]:
        return [str(row[0]) for row in self._rows(statement)]

    def _ddl(self, statements: Sequence[str]) -> None:
        try:
            with self._conn.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        except oracledb.Error as exc:
            raise translate(exc) from exc

    # --- connection and transaction --------------------------------------------------------
    def transaction(self) -> AbstractContextManager[None]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """Refuse an end-user session, run the work, commit (or roll back). DDL has committed
        itself already: see the module docstring. A transaction the caller left open on a
        connection it gave is neither committed nor rolled back here (but Oracle commits it at
        the first DDL statement, as it commits any transaction)."""
        caller_transaction = self._conn.transaction_in_progress
        end_user = self.current_end_user()
        if end_user is not None:
            raise EndUserContextError(
                f"this admin connection runs inside the end-user security context of "
                f"{end_user!r}: administrative work refuses to run as an end user; use a "
                "connection of the admin identity without a context")
        try:
            yield
        except BaseException:
            if not caller_transaction:
                with suppress(oracledb.Error):
                    self._conn.rollback()
            raise
        if not caller_transaction:
            try:
                self._conn.commit()
            except oracledb.Error as exc:
                raise translate(exc) from exc

    def close(self) -> None:
        if self._owned:
            with suppress(oracledb.Error):
                self._conn.close()

    def session_identity(self) -> str:
        if self._user is None:
            self._user = str(self._scalar(sql.session_user()))
        return self._user

    # --- security schema and stores ----------------------------------------------------------
    def install_security_schema(self) -> None:
        """Nothing to create: Deep Data Security is part of the database. A database without it
        raises :class:`UnsupportedFeatureError`."""
        if not self.security_schema_installed():
            raise UnsupportedFeatureError(
                "this Oracle database has no Deep Data Security (ORA_END_USER_CONTEXT is "
                "unknown): Oracle AI Database 26ai, Release Update 23.26.2 or later, with "
                f"COMPATIBLE 20 or higher is needed ({_SEE})")

    def security_schema_installed(self) -> bool:
        """Whether the database has Deep Data Security (``ORA_END_USER_CONTEXT`` is known)."""
        if self._deep_sec is None:
            self.current_end_user()
        return bool(self._deep_sec)

    def may_administer_security(self) -> bool:
        """Whether the session holds every privilege of :data:`ADMIN_PRIVILEGES`."""
        if not self.security_schema_installed():
            return False
        return set(self._column(sql.session_privileges())) >= ADMIN_PRIVILEGES

    def store_exists(self, names: StoreNames) -> bool:
        objects = _objects(names)
        lookup = sql.store_table_names(objects)
        found = {lookup[name] for name in self._column(
            sql.existing_tables(objects, own=self._own(objects))) if name in lookup}
        return set(MANAGED_TABLES) <= found

    def store_has_row_security(self, names: StoreNames) -> bool:
        """Whether data grants exist on the store's own tables (the admin makes their mandatory
        data grants first, so a table with grants is reachable only through them). Grants on
        the registry do not count: every store of the schema shares it, so another store's
        policies would make an unprotected store look protected."""
        return bool(self._column(sql.store_data_grants(_objects(names), managed_only=True)))

    def runtime_role_name(self, owner_schema: str) -> str:
        """Oracle has no runtime role: the runtime login holds two system privileges itself."""
        return RUNTIME_GRANT_LABEL

    # --- policies ----------------------------------------------------------------------------
    def installed_policy_names(self, names: StoreNames) -> list[str]:
        if not self.security_schema_installed():
            return []
        roles = {store_data_role(_objects(names), name): name for name in SHIPPED_POLICIES}
        return sorted(roles[str(row[0])] for row in self._rows(sql.data_roles(list(roles)))
                      if str(row[0]) in roles)

    def install_policy(self, names: StoreNames, policy: DataRolePolicy) -> None:
        """Mandatory data grants, the store's data role, its data grants over the current
        columns; the copies a group's mapped role carries are rewritten too."""
        objects = _objects(names)
        role = store_data_role(objects, policy.name)
        mapping = self._role_mapping(role)
        if mapping:
            raise InvalidArgumentError(
                f"data role {role} exists but is mapped to {mapping!r}: it is not this store's "
                "local data role; drop it (DROP DATA ROLE) first", argument="policies")
        create = None if mapping is not None else ddl.create_local_role(role)
        columns = self._columns(objects)
        self._ddl(ddl.install_policy(policy, _target(objects, role, columns), create))
        self._resolved[role] = (objects, policy)
        for group_role in self._group_roles_holding(objects, policy):
            self._ddl(ddl.policy_grants(policy, _target(objects, group_role, columns)))

    def remove_policy(self, names: StoreNames, policy: DataRolePolicy,
                      remaining: Sequence[DataRolePolicy]) -> None:
        """Drop the policy's data grants (the store's role and every group's copy), then its
        data role. ``remaining`` needs nothing: on Oracle each policy's grants are its own."""
        objects = _objects(names)
        for group_role in self._group_roles_holding(objects, policy):
            self._drop_group_grants(objects, policy, group_role)
        role = store_data_role(objects, policy.name)
        exists = self._role_mapping(role) is not None
        self._ddl(ddl.remove_policy(policy, _target(objects, role), drop_role=exists))
        self._resolved.pop(role, None)

    def data_role(self, names: StoreNames, policy_name: str) -> str | None:
        policy = SHIPPED_POLICIES.get(policy_name)
        if policy is None or not self.security_schema_installed():
            return None
        objects = _objects(names)
        role = store_data_role(objects, policy_name)
        if self._role_mapping(role) is None:
            return None
        self._resolved[role] = (objects, policy)
        return role

    # --- grants --------------------------------------------------------------------------------
    def grant_data_role(self, role: str, kind: PrincipalKind, principal: str) -> None:
        if kind == "user":
            end_user = normalise(principal, what="end user name")
            if not self._scalar(sql.end_user_holds_role(role, end_user)):
                self._ddl([ddl.grant_role(role, end_user)])
            return
        objects, policy = self._policy_of(role)
        mapping = group_mapping(principal)
        group_role = group_data_role(mapping)
        existing = self._role_mapping(group_role)
        if existing is not None and existing != mapping:
            raise InvalidArgumentError(
                f"data role {group_role} is mapped to {existing!r}, not {mapping!r}; drop it "
                "(DROP DATA ROLE) before granting to this group", argument="principals")
        create = ddl.create_group_role(group_role, mapping) if existing is None else None
        target = _target(objects, group_role, self._columns(objects))
        self._ddl(ddl.install_policy(policy, target, create))

    def revoke_data_role(self, role: str, kind: PrincipalKind, principal: str) -> int:
        if kind == "user":
            end_user = normalise(principal, what="end user name")
            if not self._scalar(sql.end_user_holds_role(role, end_user)):
                return 0
            self._ddl([ddl.revoke_role(role, end_user)])
            return 1
        objects, policy = self._policy_of(role)
        group_role = group_data_role(group_mapping(principal))
        if not _grant_names(objects, policy, group_role) & self._store_grants(objects):
            return 0
        self._drop_group_grants(objects, policy, group_role)
        return 1

    def data_role_grants(self, names: StoreNames) -> list[DataRoleGrant]:
        if not self.security_schema_installed():
            return []
        objects = _objects(names)
        roles = {store_data_role(objects, name): name for name in SHIPPED_POLICIES}
        grants = [DataRoleGrant("user", str(grantee), roles[str(role)])
                  for role, grantee in self._rows(sql.end_user_role_grants(list(roles)))
                  if str(role) in roles]
        for policy in SHIPPED_POLICIES.values():
            grants.extend(DataRoleGrant("group", principal, policy.name)
                          for _, principal in self._groups_holding(objects, policy))
        return sorted(grants, key=lambda g: (g.principal_kind, g.principal, g.policy_name))

    # --- local end users ---------------------------------------------------------------------
    def end_user_exists(self, username: str) -> bool:
        return bool(self._scalar(sql.end_user_count(normalise(username, what="end user name"))))

    def create_end_user(self, username: str) -> bool:
        """``CREATE END USER IF NOT EXISTS``, upper case: the spelling ``ORA_END_USER_CONTEXT
        .username`` returns and the owner column must hold."""
        existed = self.end_user_exists(username)
        self._ddl([ddl.create_end_user(username)])
        return not existed

    def drop_end_user(self, username: str) -> bool:
        if not self.end_user_exists(username):
            return False
        self._ddl([ddl.drop_end_user(username)])
        return True

    def end_users(self) -> list[str]:
        return self._column(sql.end_user_names())

    # --- identity providers: the database's own ----------------------------------------------
    def identity_provider_names(self) -> list[str]:
        """The provider group principals may name: the database's ``IDENTITY_PROVIDER_TYPE``
        (``oci_iam`` or ``azure_ad``), both when this session cannot read the parameter, none
        when it is ``NONE``."""
        try:
            value = self._scalar(sql.identity_provider_type())
        except DatabaseError as exc:
            if error_info(exc.__cause__ or exc).code not in _NO_VIEW_CODES:
                raise
            return sorted(MAPPING_KEYS)
        provider = str(value or "NONE").lower()
        return [provider] if provider in MAPPING_KEYS else []

    def add_identity_provider(self, name: str, issuer: str, audience: str,
                              jwks: Mapping[str, Any], user_claim: str,
                              groups_claim: str) -> None:
        raise UnsupportedFeatureError(NO_IDENTITY_PROVIDERS)

    def refresh_identity_provider_keys(self, name: str, jwks: Mapping[str, Any]) -> None:
        raise UnsupportedFeatureError(NO_IDENTITY_PROVIDERS)

    def identity_providers(self) -> list[IdentityProviderInfo]:
        raise UnsupportedFeatureError(NO_IDENTITY_PROVIDERS)

    def remove_identity_provider(self, name: str) -> bool:
        raise UnsupportedFeatureError(NO_IDENTITY_PROVIDERS)

    # --- applications: the database's own ------------------------------------------------------
    def create_application(self, name: str, login: str) -> str:
        raise UnsupportedFeatureError(NO_APPLICATIONS)

    def rotate_application_key(self, name: str) -> str:
        raise UnsupportedFeatureError(NO_APPLICATIONS)

    def drop_application(self, name: str) -> bool:
        raise UnsupportedFeatureError(NO_APPLICATIONS)

    def applications(self) -> list[ApplicationInfo]:
        raise UnsupportedFeatureError(NO_APPLICATIONS)

    def application(self, name: str) -> ApplicationInfo:
        raise UnsupportedFeatureError(NO_APPLICATIONS)

    def bind_application(self, name: str, stores: Sequence[StoreNames],
                         identity_providers: Sequence[str]) -> None:
        raise UnsupportedFeatureError(NO_APPLICATIONS)

    def unbind_application(self, name: str, stores: Sequence[StoreNames],
                           identity_providers: Sequence[str]) -> int:
        raise UnsupportedFeatureError(NO_APPLICATIONS)

    def set_token_mode(self, name: str, required: bool) -> None:
        raise UnsupportedFeatureError(NO_APPLICATIONS)

    # --- runtime logins ----------------------------------------------------------------------
    def create_runtime_login(self, login: str, password: str, owner_schema: str) -> None:
        """A user holding exactly ``CREATE SESSION`` and ``CREATE END USER SECURITY CONTEXT``
        (``owner_schema`` changes nothing: the login reaches every store only as an end user).
        Cut short between its two statements, it leaves a user holding nothing (it cannot log
        in), which :meth:`drop_runtime_login` accepts."""
        user = normalise(login, what="login")
        statements = ddl.create_runtime_login(user, password)  # validates the password first
        if self._scalar(sql.user_exists(user)):
            raise InvalidArgumentError(f"database user {user} already exists", argument="login")
        self._ddl(statements)

    def drop_runtime_login(self, login: str) -> None:
        """Drop a runtime login: a user holding ``CREATE END USER SECURITY CONTEXT`` and at most
        ``CREATE SESSION`` besides, no role, no object privilege, no object (or holding nothing,
        as a creation cut short leaves it). Any other user is refused, so this cannot drop the
        schema owner or an administrator."""
        user = normalise(login, what="login")
        if not self._scalar(sql.user_exists(user)):
            raise InvalidArgumentError(f"no runtime login {user} exists", argument="login")
        held = {(str(kind), str(name)) for kind, name in self._rows(sql.login_grants(user))}
        privileges = {name for kind, name in held if kind == "privilege"}
        others = {(kind, name) for kind, name in held if kind != "privilege"}
        if others or not privileges <= set(sql.RUNTIME_PRIVILEGES) or (
                privileges and sql.CONTEXT_PRIVILEGE not in privileges):
            raise InvalidArgumentError(
                f"user {user} is not a runtime login (one holding only "
                f"{' and '.join(sql.RUNTIME_PRIVILEGES)}); drop it with your own tools if you "
                "mean it", argument="login")
        self._ddl([ddl.drop_runtime_login(user)])

    def runtime_login_drift(self) -> list[str]:
        """One line per grant a runtime login holds beyond its two privileges: system
        privileges, roles, object privileges, owned objects, and what every login holds
        through ``PUBLIC`` (:func:`.admin_sql.public_grants`: outside an end-user context no
        data grant filters it). (A changed password cannot be seen in the dictionary.)"""
        findings = [f"runtime login {login}: has {privilege}"
                    for login, privilege in self._rows(sql.extra_system_privileges())]
        findings += [f"runtime login {login}: granted role {role}"
                     for login, role in self._rows(sql.granted_roles())]
        findings += [f"runtime login {login}: {privilege} on {owner}.{name}"
                     for login, owner, name, privilege in self._rows(sql.object_privileges())]
        findings += [f"runtime login {login}: owns {count} object(s)"
                     for login, count in self._rows(sql.owned_objects())]
        findings += [_public_finding(str(kind), str(name))
                     for kind, name in self._rows(sql.public_grants())]
        return findings

    # --- the session's end user --------------------------------------------------------------
    def current_end_user(self) -> str | None:
        """``ORA_END_USER_CONTEXT.username`` (``None`` outside a context, and on a database
        without Deep Data Security, which has no end users)."""
        probe = sql.end_user_probe()
        try:
            with self._conn.cursor() as cursor:
                cursor.execute(probe.sql, dict(probe.binds))
                row = cursor.fetchone()
        except oracledb.DatabaseError as exc:
            if error_info(exc).code in _NO_DEEP_SEC_CODES:
                self._deep_sec = False
                return None
            raise translate(exc) from exc
        self._deep_sec = True
        return seen_username(row[0] if row else None)

    # --- helpers ---------------------------------------------------------------------------------
    def _own(self, objects: OracleObjects) -> bool:
        return objects.owner == normalise(self.session_identity(), what="session user")

    def _role_mapping(self, role: str) -> str | None:
        """``None`` when ``role`` does not exist, else its mapping (``""`` for a local role)."""
        for name, mapped_to in self._rows(sql.data_roles([role])):
            if name == role:
                return "" if mapped_to is None else str(mapped_to)
        return None

    def _columns(self, objects: OracleObjects) -> dict[str, frozenset[str]]:
        lookup = sql.store_table_names(objects)
        found: dict[str, set[str]] = {logical: set() for logical in lookup.values()}
        for table, column in self._rows(sql.table_columns(objects, own=self._own(objects))):
            if table in lookup:
                found[lookup[table]].add(str(column).lower())
        return {table: frozenset(columns) for table, columns in found.items()}

    def _store_grants(self, objects: OracleObjects) -> set[str]:
        return set(self._column(sql.store_data_grants(objects)))

    def _groups_holding(self, objects: OracleObjects,
                        policy: DataRolePolicy) -> list[tuple[str, str]]:
        """``(group role, principal)`` of every group role holding grants of ``policy`` on the
        store whose mapping names a group this SDK maps (for listing grants)."""
        present = self._store_grants(objects)
        found = []
        for role, mapped_to in self._rows(sql.group_data_roles()):
            principal = principal_of_mapping(str(mapped_to))
            if principal is not None and _grant_names(objects, policy, str(role)) & present:
                found.append((str(role), principal))
        return found

    def _group_roles_holding(self, objects: OracleObjects, policy: DataRolePolicy) -> list[str]:
        """Every SDK group role holding grants of ``policy`` on the store, whatever its mapping
        reads like: removing (or rewriting) a policy must reach every copy, also one whose
        ``MAPPED_TO`` text :func:`.admin_names.principal_of_mapping` does not parse (its form in
        the dictionary is not verified live), or the group would keep the store's rows after
        the policy is removed."""
        present = self._store_grants(objects)
        return [str(role) for role, _ in self._rows(sql.group_data_roles())
                if _grant_names(objects, policy, str(role)) & present]

    def _drop_group_grants(self, objects: OracleObjects, policy: DataRolePolicy,
                           group_role: str) -> None:
        """Drop a group role's copy of ``policy`` on the store, then the role once it carries
        no data grant anywhere (grant names start with their role's name)."""
        self._ddl(ddl.remove_policy(policy, _target(objects, group_role), drop_role=False))
        if not self._scalar(sql.data_grants_named_like(f"{group_role}_")):
            self._ddl([ddl.drop_data_role(group_role)])

    def _policy_of(self, role: str) -> tuple[OracleObjects, DataRolePolicy]:
        resolved = self._resolved.get(role)
        if resolved is None:
            raise InvalidArgumentError(
                f"data role {role!r} is not one this admin session resolved (data_role()) "
                "for a store and policy", argument="role")
        return resolved


def _objects(names: StoreNames) -> OracleObjects:
    """The store's Oracle names: the admin API folds names as PostgreSQL does, Oracle folds them
    upper (the same physical tables, since Oracle's dictionary holds them upper case)."""
    if names.schema is None:
        raise InvalidArgumentError("admin work on Oracle names the owner schema",
                                   argument="owner_schema")
    return OracleObjects.of(derive_store_names(memory_store_id=names.store_key or None,
                                               table_name_prefix=None,
                                               schema_owner=names.schema))


def _target(objects: OracleObjects, role: str,
            columns: Mapping[str, frozenset[str]] | None = None) -> OracleTarget:
    tables = {t: objects.names.table(t) for t in MANAGED_TABLES}
    tables["registry"] = REGISTRY_TABLE
    return OracleTarget(owner=objects.owner, tables=tables, data_role=role, columns=columns,
                        grant_labels={"registry": registry_grant_label(objects)})


def registry_grant_label(objects: OracleObjects) -> str:
    """The table part of the names of a store's data grants on the schema's shared registry:
    the store's table prefix and the registry's name (the default store's, unprefixed, is the
    registry's name). Every store of a schema reads the one registry, and a group's mapped role
    carries the grants of every store granted to it: named after the registry alone, store B's
    registry grant would be store A's, so installing B's policy would find (and extend to) every
    group granted A, and revoking a group from B would drop A's grant."""
    return f"{objects.names.table_prefix}{REGISTRY_TABLE}"


def _grant_names(objects: OracleObjects, policy: DataRolePolicy, role: str) -> set[str]:
    """The names of the data grants ``policy`` gives ``role`` on the store (dictionary case)."""
    target = _target(objects, role)
    return {grant_name(role, policy.name, target.grant_label(grant.table), index)
            for index, grant in enumerate(policy.grants)}


def _public_finding(kind: str, name: str) -> str:
    """The drift line of one grant to ``PUBLIC`` (see :func:`.admin_sql.public_grants`)."""
    what = {"object": f"{name} (a table with data grants)", "privilege": name,
            "role": f"role {name}"}.get(kind, f"{kind} {name}")
    return (f"every runtime login, through PUBLIC: {what}; outside an end-user context it "
            "reaches every user's rows (REVOKE it FROM PUBLIC)")


def _dictionary_error(exc: oracledb.Error, text: str) -> Exception:
    """A dictionary view this identity may not read says which grant is missing."""
    if error_info(exc).code in _NO_VIEW_CODES:
        view = next((word for word in text.replace(",", " ").split()
                     if word.lower().startswith(("dba_", "all_", "v$", "session_"))), "a view")
        return DatabaseError(
            f"this admin identity cannot read {view.upper()} ({error_info(exc).first_line}): "
            f"grant it SELECT on SYS.{view.upper()} (deploy/oracle/bootstrap.sql grants the "
            "policy administrator what it reads)")
    return translate(exc)
