"""Render data-role policies to PostgreSQL row-level security: policies and column privileges.

Pure text rendering, no I/O. Identifiers arrive already quoted by the engine (the one place that
quotes); role and column names are validated here against a strict pattern.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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

_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")



def end_user_sql(data_role: str) -> str:
    """The end user's name if the data role is theirs, else NULL: one lookup per statement.

    The subquery makes it an InitPlan, evaluated once per statement; see
    ``oracleagentmemory.engines.postgres.security_schema``.
    """
    return f"(SELECT oam_sec.verified_user('{_name(data_role, 'data role')}'))"


def role_check_sql(data_role: str) -> str:
    """True when the current end user holds ``data_role``."""
    return f"{end_user_sql(data_role)} IS NOT NULL"


def implies_end_user(predicate: Predicate) -> bool:
    """Whether ``predicate`` can only hold for an end user holding the data role.

    Such a predicate compares a column with :func:`end_user_sql`, which is NULL without the
    role, so no separate role check is needed.
    """
    if isinstance(predicate, EndUserIs):
        return True
    if isinstance(predicate, AllOf):
        return any(implies_end_user(p) for p in predicate.parts)
    if isinstance(predicate, AnyOf):
        return all(implies_end_user(p) for p in predicate.parts)
    if isinstance(predicate, ExistsVisible):
        return predicate.where is not None and implies_end_user(predicate.where)
    return False


def _name(value: str, what: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError(f"invalid {what} {value!r}: use lower-case letters, digits, underscores")
    return value


@dataclass(frozen=True)
class PostgresTarget:
    """Where a policy is installed.

    ``tables`` maps logical table names to quoted, schema-qualified names; ``bare_tables`` maps
    them to the quoted unqualified name used to correlate subqueries; ``runtime_role`` is the
    quoted database role of the runtime logins; ``data_role`` the data role's name. ``columns``,
    when given, maps logical table names to the columns that exist: column privileges then name
    only those (a store created without vector storage has no ``embedding`` column).
    """

    tables: Mapping[str, str]
    bare_tables: Mapping[str, str]
    runtime_role: str
    data_role: str
    columns: Mapping[str, frozenset[str]] | None = None


def render_predicate(predicate: Predicate, target: PostgresTarget, table: str,
                     alias: str | None = None) -> str:
    """SQL boolean expression of ``predicate`` on rows of logical ``table``.

    With ``alias`` the columns belong to that alias of an ``EXISTS`` subquery, where only
    simple predicates (column tests and their conjunctions) may be used.
    """
    def column(name: str) -> str:
        checked = _name(name, "column")
        return f"{alias}.{checked}" if alias else checked

    if isinstance(predicate, EndUserIs):
        return f"{column(predicate.column)} = {end_user_sql(target.data_role)}"
    if isinstance(predicate, IsNull):
        return f"{column(predicate.column)} IS NULL"
    if isinstance(predicate, Equals):
        return f"{column(predicate.column)} = '{_name(predicate.value, 'value')}'"
    if isinstance(predicate, AllOf):
        return "(" + " AND ".join(render_predicate(p, target, table, alias)
                                  for p in predicate.parts) + ")"
    if alias is not None:
        raise TypeError(f"predicate {predicate!r} cannot be used inside a subquery")
    if isinstance(predicate, Always):
        return "true"
    if isinstance(predicate, AnyOf):
        return "(" + " OR ".join(render_predicate(p, target, table) for p in predicate.parts) + ")"
    if isinstance(predicate, ExistsVisible):
        inner = f"x.{_name(predicate.key, 'column')} = " \
                f"{target.bare_tables[table]}.{_name(predicate.column, 'column')}"
        if predicate.where is not None:
            inner += " AND " + render_predicate(predicate.where, target, table, alias="x")
        return f"EXISTS (SELECT 1 FROM {target.tables[predicate.table]} x WHERE {inner})"
    raise TypeError(f"unknown predicate {predicate!r}")


def policy_name(data_role: str, table: str, operation: str, index: int) -> str:
    """Name of one RLS policy (unique per table)."""
    return _name(f"{data_role}_{operation}{index}"[-63:].lstrip("_") or "p", "policy name")


def render_policy(policy: DataRolePolicy, target: PostgresTarget) -> list[str]:
    """Statements that install ``policy``: enable RLS, create policies, grant privileges."""
    statements: list[str] = []
    for table in policy.tables():
        statements.append(f"ALTER TABLE {target.tables[table]} ENABLE ROW LEVEL SECURITY")
    for index, grant in enumerate(policy.grants):
        table_sql = target.tables[grant.table]
        condition = render_predicate(grant.predicate, target, grant.table)
        if not implies_end_user(grant.predicate):
            condition = f"{condition} AND {role_check_sql(target.data_role)}"
        condition = f"({condition})"
        for operation, clause in _operations(grant):
            name = policy_name(target.data_role, grant.table, operation, index)
            statements.append(
                f"CREATE POLICY \"{name}\" ON {table_sql} AS PERMISSIVE FOR {clause} "
                f"TO {target.runtime_role} "
                + (f"WITH CHECK {condition}" if clause == "INSERT" else
                   f"USING {condition} WITH CHECK {condition}" if clause == "UPDATE" else
                   f"USING {condition}")
            )
    statements.extend(render_privileges([policy], target))
    return statements


def _operations(grant: TableGrant) -> list[tuple[str, str]]:
    operations: list[tuple[str, str]] = []
    if grant.select:
        operations.append(("sel", "SELECT"))
    if grant.insert_columns is not None:
        operations.append(("ins", "INSERT"))
    if grant.update_columns is not None:
        operations.append(("upd", "UPDATE"))
    if grant.delete:
        operations.append(("del", "DELETE"))
    return operations


def render_privileges(policies: list[DataRolePolicy], target: PostgresTarget) -> list[str]:
    """GRANT statements giving the runtime role the union of the policies' privileges."""
    select: set[str] = set()
    delete: set[str] = set()
    insert: dict[str, set[str]] = {}
    update: dict[str, set[str]] = {}
    for policy in policies:
        for grant in policy.grants:
            if grant.select:
                select.add(grant.table)
            if grant.delete:
                delete.add(grant.table)
            if grant.insert_columns is not None:
                insert.setdefault(grant.table, set()).update(grant.insert_columns)
            if grant.update_columns is not None:
                update.setdefault(grant.table, set()).update(grant.update_columns)
    if target.columns is not None:
        existing = target.columns
        insert = {t: c & existing.get(t, frozenset()) for t, c in insert.items()}
        update = {t: c & existing.get(t, frozenset()) for t, c in update.items()}
    statements: list[str] = []
    role = target.runtime_role
    for table in sorted(select):
        statements.append(f"GRANT SELECT ON {target.tables[table]} TO {role}")
    for table in sorted(delete):
        statements.append(f"GRANT DELETE ON {target.tables[table]} TO {role}")
    for table, columns in sorted(insert.items()):
        if not columns:
            continue
        cols = ", ".join(_name(c, "column") for c in sorted(columns))
        statements.append(f"GRANT INSERT ({cols}) ON {target.tables[table]} TO {role}")
    for table, columns in sorted(update.items()):
        if not columns:
            continue
        cols = ", ".join(_name(c, "column") for c in sorted(columns))
        statements.append(f"GRANT UPDATE ({cols}) ON {target.tables[table]} TO {role}")
    return statements


def render_removal(policy: DataRolePolicy, target: PostgresTarget) -> list[str]:
    """Statements that drop ``policy``'s RLS policies (privileges are re-granted by the caller)."""
    statements: list[str] = []
    for index, grant in enumerate(policy.grants):
        for operation, _clause in _operations(grant):
            name = policy_name(target.data_role, grant.table, operation, index)
            statements.append(
                f"DROP POLICY IF EXISTS \"{name}\" ON {target.tables[grant.table]}")
    return statements


def render_revoke_all(tables: list[str], target: PostgresTarget) -> list[str]:
    """Revoke every privilege of the runtime role on ``tables``."""
    return [f"REVOKE ALL ON {target.tables[t]} FROM {target.runtime_role}" for t in tables]
