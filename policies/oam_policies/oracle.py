"""Render data-role policies to Oracle AI Database 26ai Deep Data Security DDL.

Pure text rendering, no I/O. Every identifier passes through :func:`quote_identifier`, the one
place that validates, upper-cases and double-quotes a name; every object reference is
schema-qualified, because an end-user session runs as ``XS$NULL`` and would resolve an
unqualified name against no schema. Grammar: ``CREATE DATA ROLE``, ``CREATE DATA GRANT``,
``DROP DATA GRANT``, ``SET USE DATA GRANTS ONLY``, ``CREATE END USER``, ``GRANT DATA ROLE`` as
documented in the Oracle Deep Data Security guide and SQL reference (26ai, RU 23.26.2).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from oam_policies.model import (
    AllOf,
    Always,
    AnyOf,
    DataRolePolicy,
    EndUserIs,
    Equals,
    ExistsVisible,
    IsNull,
    Predicate,
    TableGrant,
)

MAX_IDENTIFIER_BYTES = 128
"""Oracle's limit on an identifier (12.2 and later)."""

MAX_PREDICATE_CHARS = 4000
"""Oracle's limit on a data grant predicate (ORA-52562)."""

END_USER_NAME = "ORA_END_USER_CONTEXT.username"
"""The current end user's name, as the data grant predicates of the Deep Data Security guide
spell it."""

SUBQUERY_ALIAS = "T"
"""Alias of the table an ``EXISTS`` subquery reads; outer columns are named by their
schema-qualified table, so the alias never shadows them."""

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_$#]*")
_VALUE = re.compile(r"[A-Za-z0-9_]{1,128}")
_MAPPING = re.compile(r"(IAM_OAUTH_GROUP|AZURE_ROLE|AZURE_APP|AZURE_CLIENT_ID)=[^'\x00-\x1f\x7f]+")
_MAX_MAPPING_BYTES = 1023
_HASH_CHARS = 12


def quote_identifier(value: str, what: str) -> str:
    """Validate ``value`` as an Oracle identifier and return it upper-cased and double-quoted.

    Accepted: a letter, then letters, digits, ``_``, ``$`` or ``#``, at most 128 bytes. Lower
    case is upper-cased, as Oracle folds an unquoted name (``user_id`` is ``"USER_ID"``), so a
    name means the same object quoted or not. Anything else raises ``ValueError``.
    """
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value) or \
            len(value.encode()) > MAX_IDENTIFIER_BYTES:
        raise ValueError(
            f"invalid {what} {value!r}: use a letter, then letters, digits, _, $ or #, at most "
            f"{MAX_IDENTIFIER_BYTES} bytes")
    return f'"{value.upper()}"'


def _literal(value: str) -> str:
    # A strict pattern, not quote doubling: the value needs no escaping under any quoting rule
    # (Oracle's q'...' literals, client-side substitution), and the PostgreSQL renderer refuses
    # the same values, so one declaration renders on both engines or on neither.
    if not isinstance(value, str) or not _VALUE.fullmatch(value):
        raise ValueError(f"invalid value {value!r}: use letters, digits and underscores, "
                         "1 to 128 characters")
    return f"'{value}'"


@dataclass(frozen=True)
class OracleTarget:
    """Where a policy is installed.

    ``owner`` is the schema owning the tables and the data grants; ``tables`` maps logical table
    names (``memory``, ``registry``...) to physical, unqualified table names in that schema;
    ``data_role`` is the grantee (a local data role, or one mapped to an identity-provider
    group). ``columns``, when given, maps logical table names to the columns that exist: column
    lists then name only those (a store created without vector storage has no ``embedding``).
    ``grant_labels``, when given, maps logical table names to the table part of their data
    grants' names, where it must differ from the physical name: a table several stores share
    (the registry) is labelled per store, so that a role carrying the grants of several stores
    (a group's mapped role) holds one grant per store, and a grant of one store is never taken
    for, replaced or dropped as another store's. Names are plain (unquoted); the renderer
    validates and quotes them.
    """

    owner: str
    tables: Mapping[str, str]
    data_role: str
    columns: Mapping[str, frozenset[str]] | None = None
    grant_labels: Mapping[str, str] | None = None

    def physical(self, table: str) -> str:
        """Unquoted physical name of logical ``table``."""
        if table not in self.tables:
            raise ValueError(f"invalid table {table!r}: the target names no physical table "
                             "for it")
        return self.tables[table]

    def grant_label(self, table: str) -> str:
        """Unquoted table part of the names of the data grants on logical ``table``."""
        if self.grant_labels is not None and table in self.grant_labels:
            return self.grant_labels[table]
        return self.physical(table)

    def qualified(self, table: str) -> str:
        """Quoted ``"OWNER"."TABLE"`` of logical ``table``."""
        return (f"{quote_identifier(self.owner, 'schema')}."
                f"{quote_identifier(self.physical(table), 'table')}")


def render_predicate(predicate: Predicate, target: OracleTarget, table: str,
                     alias: str | None = None) -> str:
    """SQL condition of ``predicate`` on rows of logical ``table`` (``Always`` renders none).

    With ``alias`` the columns belong to that alias of an ``EXISTS`` subquery, where only
    simple predicates (column tests and their conjunctions) may be used.
    """
    def column(name: str) -> str:
        checked = quote_identifier(name, "column")
        return f"{quote_identifier(alias, 'alias')}.{checked}" if alias else checked

    if isinstance(predicate, EndUserIs):
        return f"{column(predicate.column)} = {END_USER_NAME}"
    if isinstance(predicate, IsNull):
        return f"{column(predicate.column)} IS NULL"
    if isinstance(predicate, Equals):
        return f"{column(predicate.column)} = {_literal(predicate.value)}"
    if isinstance(predicate, AllOf):
        return _join(" AND ", [render_predicate(p, target, table, alias) for p in predicate.parts])
    if alias is not None:
        raise TypeError(f"predicate {predicate!r} cannot be used inside a subquery")
    if isinstance(predicate, Always):
        raise TypeError("Always() has no condition: the grant has no WHERE clause")
    if isinstance(predicate, AnyOf):
        return _join(" OR ", [render_predicate(p, target, table) for p in predicate.parts])
    if isinstance(predicate, ExistsVisible):
        inner = (f"{quote_identifier(SUBQUERY_ALIAS, 'alias')}."
                 f"{quote_identifier(predicate.key, 'column')} = {target.qualified(table)}."
                 f"{quote_identifier(predicate.column, 'column')}")
        if predicate.where is not None:
            inner += " AND " + render_predicate(predicate.where, target, predicate.table,
                                                alias=SUBQUERY_ALIAS)
        return (f"EXISTS (SELECT 1 FROM {target.qualified(predicate.table)} "
                f"{quote_identifier(SUBQUERY_ALIAS, 'alias')} WHERE {inner})")
    raise TypeError(f"unknown predicate {predicate!r}")


def _join(operator: str, parts: list[str]) -> str:
    if not parts:
        raise ValueError("invalid predicate: AllOf/AnyOf needs at least one part")
    return "(" + operator.join(parts) + ")"


def grant_name(data_role: str, policy: str, physical_table: str, index: int) -> str:
    """Unquoted name of grant ``index`` of ``policy`` given to ``data_role`` on
    ``physical_table`` (the table's :meth:`OracleTarget.grant_label`).

    ``<ROLE>_<POLICY>_<TABLE>_DG<index>``: the policy name keeps two policies attached to one
    role (a mapped role carries every policy of its group) from replacing each other's grants,
    and the table label keeps two stores' grants on a shared table apart.
    Over 128 bytes the name is cut and ends with a hash of the full name, so it stays unique
    and deterministic.
    """
    for value, what in ((data_role, "data role"), (policy, "policy name"),
                        (physical_table, "table")):
        quote_identifier(value, what)
    name = f"{data_role}_{policy}_{physical_table}_DG{index}".upper()
    if len(name) > MAX_IDENTIFIER_BYTES:
        digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_CHARS].upper()
        name = f"{name[:MAX_IDENTIFIER_BYTES - _HASH_CHARS - 1]}_{digest}"
    return name


def _qualified_grant(policy: DataRolePolicy, target: OracleTarget, table: str,
                     index: int) -> str:
    name = grant_name(target.data_role, policy.name, target.grant_label(table), index)
    return f"{quote_identifier(target.owner, 'schema')}.{quote_identifier(name, 'grant name')}"


def _privileges(grant: TableGrant, target: OracleTarget) -> list[str]:
    def columns(names: tuple[str, ...]) -> list[str]:
        kept = names
        if target.columns is not None:
            existing = target.columns.get(grant.table, frozenset())
            kept = tuple(c for c in names if c in existing)
        return [quote_identifier(c, "column") for c in kept]

    privileges: list[str] = []
    if grant.select:
        privileges.append("SELECT")
    for keyword, names in (("INSERT", grant.insert_columns), ("UPDATE", grant.update_columns)):
        if names is not None:
            listed = columns(names)
            if listed:
                privileges.append(f"{keyword} ({', '.join(listed)})")
    if grant.delete:
        privileges.append("DELETE")
    return privileges


def render_grant(policy: DataRolePolicy, index: int, target: OracleTarget) -> str | None:
    """``CREATE OR REPLACE DATA GRANT`` of ``policy.grants[index]``, or None if it grants
    nothing.

    Only the privileges the grant has, INSERT and UPDATE with their column lists; no WHERE
    clause for ``Always``.
    """
    grant = policy.grants[index]
    privileges = _privileges(grant, target)
    if not privileges:
        return None
    name = _qualified_grant(policy, target, grant.table, index)
    statement = (f"CREATE OR REPLACE DATA GRANT {name} "
                 f"AS {', '.join(privileges)} ON {target.qualified(grant.table)}")
    if not isinstance(grant.predicate, Always):
        condition = render_predicate(grant.predicate, target, grant.table)
        if len(condition) > MAX_PREDICATE_CHARS:
            raise ValueError(f"invalid predicate on {grant.table!r}: {len(condition)} characters, "
                             f"Oracle allows {MAX_PREDICATE_CHARS}")
        statement += f" WHERE {condition}"
    return f"{statement} TO {quote_identifier(target.data_role, 'data role')}"


def render_policy(policy: DataRolePolicy, target: OracleTarget) -> list[str]:
    """Statements that install ``policy`` for ``target.data_role``: mandatory data grants on
    every table it touches first (no other privilege path reaches them, even if a later
    statement fails: Oracle commits each one), then its data grants."""
    statements = render_use_data_grants_only(policy.tables(), target)
    statements.extend(s for index in range(len(policy.grants))
                      if (s := render_grant(policy, index, target)) is not None)
    return statements


def render_use_data_grants_only(tables: Iterable[str], target: OracleTarget) -> list[str]:
    """``SET USE DATA GRANTS ONLY ... ENABLED`` on each logical table."""
    return [f"SET USE DATA GRANTS ONLY ON {target.qualified(t)} ENABLED" for t in tables]


def render_removal(policy: DataRolePolicy, target: OracleTarget) -> list[str]:
    """``DROP DATA GRANT IF EXISTS`` for every grant :func:`render_policy` may create.

    Mandatory data grants stay enabled: removing a policy must never open a table.
    """
    return [f"DROP DATA GRANT IF EXISTS {_qualified_grant(policy, target, grant.table, index)}"
            for index, grant in enumerate(policy.grants)]


def render_create_data_role(data_role: str, mapped_to: str | None = None) -> str:
    """``CREATE DATA ROLE``: local, or ``MAPPED TO`` an identity-provider group.

    ``mapped_to`` is the whole mapping, e.g. ``IAM_OAUTH_GROUP=memory-users`` (OCI IAM) or
    ``AZURE_ROLE=reader`` (Entra ID); it is validated (a documented key, no quote or control
    character, under 1024 bytes) rather than escaped.
    """
    statement = f"CREATE DATA ROLE {quote_identifier(data_role, 'data role')}"
    if mapped_to is None:
        return statement
    if not isinstance(mapped_to, str) or not _MAPPING.fullmatch(mapped_to) or \
            len(mapped_to.encode()) > _MAX_MAPPING_BYTES:
        raise ValueError(
            f"invalid role mapping {mapped_to!r}: use IAM_OAUTH_GROUP=, AZURE_ROLE=, AZURE_APP= "
            f"or AZURE_CLIENT_ID= and a value without quotes or control characters, at most "
            f"{_MAX_MAPPING_BYTES} bytes")
    return f"{statement} MAPPED TO '{mapped_to}'"


def render_drop_data_role(data_role: str) -> str:
    """``DROP DATA ROLE IF EXISTS``."""
    return f"DROP DATA ROLE IF EXISTS {quote_identifier(data_role, 'data role')}"


def render_create_end_user(end_user: str) -> str:
    """``CREATE END USER IF NOT EXISTS`` without a password: an application-mediated local end
    user (authentication type NONE). The stored name is upper case, and so is
    ``ORA_END_USER_CONTEXT.username``: owner columns must hold that spelling."""
    return f"CREATE END USER IF NOT EXISTS {quote_identifier(end_user, 'end user')}"


def render_drop_end_user(end_user: str) -> str:
    """``DROP END USER IF EXISTS`` (Oracle refuses while the end user has a session)."""
    return f"DROP END USER IF EXISTS {quote_identifier(end_user, 'end user')}"


def render_grant_data_role(data_role: str, end_users: Iterable[str]) -> str:
    """``GRANT DATA ROLE`` of a local data role to end users (a mapped role cannot be granted:
    it is enabled from the token's group claims)."""
    return (f"GRANT DATA ROLE {quote_identifier(data_role, 'data role')} "
            f"TO {_grantees(end_users)}")


def render_revoke_data_role(data_role: str, end_users: Iterable[str]) -> str:
    """``REVOKE DATA ROLE IF EXISTS`` of a data role from end users."""
    return (f"REVOKE DATA ROLE IF EXISTS {quote_identifier(data_role, 'data role')} "
            f"FROM {_grantees(end_users)}")


def _grantees(end_users: Iterable[str]) -> str:
    if isinstance(end_users, str):
        raise TypeError("end_users must be an iterable of names, not one str")
    names = [quote_identifier(u, "end user") for u in end_users]
    if not names:
        raise ValueError("invalid end users: name at least one")
    return ", ".join(names)
