"""Dictionary queries of the Oracle security admin: pure :class:`~.statement.Statement` builders.

Every value is a bind variable; the only names written into the text are dictionary views from
the fixed lists below and nothing a caller chose. Sources (Oracle AI Database 26ai Database
Reference, Release Update 23.26.2, unless said otherwise; checked with the docs search):

- ``DBA_END_USERS`` (``USERNAME``), ``DBA_DATA_ROLES`` (``DATA_ROLE``, ``MAPPED_TO``),
  ``DBA_DATA_ROLE_GRANTS`` (``DATA_ROLE``, ``GRANTEE``, ``GRANTEE_TYPE`` = ``'END USER'`` ...),
  ``ALL_DATA_GRANTS`` (``OWNER``, ``GRANT_NAME``, ``OBJECT_OWNER``, ``OBJECT_NAME``; it shows every
  data grant to a holder of ``ADMINISTER ANY DATA GRANT`` and the owner's own to the owner). The
  grantee column of ``ALL_DATA_GRANTS`` could not be verified (the reference page is cut off
  after ``OBJECT_TYPE``), so no query here uses it: a grant's role is known from its name
  (:func:`oam_policies.oracle.grant_name`).
- ``SESSION_PRIVS``, ``DBA_SYS_PRIVS``, ``DBA_ROLE_PRIVS``, ``DBA_TAB_PRIVS``, ``DBA_USERS``,
  ``DBA_OBJECTS``, ``DBA_TABLES`` / ``ALL_TABLES``, ``DBA_TAB_COLUMNS`` / ``ALL_TAB_COLUMNS``,
  ``V$PARAMETER`` (long-standing views, their usual columns).
- No dictionary view showing whether ``SET USE DATA GRANTS ONLY`` is enabled on a table was
  found; a store counts as protected when data grants exist on its tables (the admin enables
  mandatory data grants before it creates any grant: :mod:`.admin_ddl`).

Reading ``DBA_`` views needs ``SELECT`` on each (``deploy/oracle/bootstrap.sql`` grants the Deep
Data Security ones to the policy administrator); the schema owner reads its own tables through
the ``ALL_`` views, which is why the table queries take ``own``.
"""

from __future__ import annotations

from collections.abc import Sequence

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE
from oracleagentmemory.engines.oracle.admin_names import GROUP_ROLE_PREFIX
from oracleagentmemory.engines.oracle.context import USERNAME_QUERY
from oracleagentmemory.engines.oracle.names import OracleObjects, normalise
from oracleagentmemory.engines.oracle.statement import Statement

RUNTIME_PRIVILEGES = ("CREATE SESSION", "CREATE END USER SECURITY CONTEXT")
"""Everything a runtime login holds (Deep Data Security Guide 9.1.1; deploy/oracle)."""

CONTEXT_PRIVILEGE = "CREATE END USER SECURITY CONTEXT"
"""The privilege that makes a database user a runtime login (it may attach end users)."""

END_USER_GRANTEE = "END USER"
"""``DBA_DATA_ROLE_GRANTS.GRANTEE_TYPE`` of a grant to a local end user."""

LIKE_ESCAPE = "\\"


def _in_list(prefix: str, values: Sequence[str]) -> tuple[str, dict[str, str]]:
    binds = {f"{prefix}{i}": value for i, value in enumerate(values)}
    return ", ".join(f":{name}" for name in binds), binds


def like_prefix(prefix: str) -> str:
    """A ``LIKE`` pattern matching names that start with ``prefix`` (``_``/``%`` escaped)."""
    escaped = "".join(LIKE_ESCAPE + c if c in "_%" + LIKE_ESCAPE else c for c in prefix)
    return escaped + "%"


def store_table_names(objects: OracleObjects) -> dict[str, str]:
    """Dictionary (upper-case) name -> logical name of every managed table and the registry."""
    found = {normalise(objects.names.table(t), what="table name"): t for t in MANAGED_TABLES}
    found[normalise(REGISTRY_TABLE, what="table name")] = "registry"
    return found


# --- the session -------------------------------------------------------------------------------
def end_user_probe() -> Statement:
    """The session's end user; fails (ORA-00904/00942) where Deep Data Security is absent."""
    return Statement(USERNAME_QUERY)


def session_user() -> Statement:
    """The database user this session logged in as."""
    return Statement("SELECT USER FROM dual")


def session_privileges() -> Statement:
    """The system privileges in effect in this session (direct and through enabled roles)."""
    return Statement("SELECT privilege FROM session_privs")


def identity_provider_type() -> Statement:
    """The database's ``IDENTITY_PROVIDER_TYPE`` (``AZURE_AD``, ``OCI_IAM`` or ``NONE``)."""
    return Statement("SELECT value FROM v$parameter WHERE name = :name",
                     {"name": "identity_provider_type"})


# --- the store's tables --------------------------------------------------------------------------
def existing_tables(objects: OracleObjects, *, own: bool) -> Statement:
    """Which of the store's tables (and the registry) exist in the owner's schema."""
    view = "all_tables" if own else "dba_tables"
    placeholders, binds = _in_list("t", list(store_table_names(objects)))
    return Statement(f"SELECT table_name FROM {view} WHERE owner = :owner "
                     f"AND table_name IN ({placeholders})", {"owner": objects.owner, **binds})


def table_columns(objects: OracleObjects, *, own: bool) -> Statement:
    """``(table_name, column_name)`` of every column of the store's tables and the registry."""
    view = "all_tab_columns" if own else "dba_tab_columns"
    placeholders, binds = _in_list("t", list(store_table_names(objects)))
    return Statement(f"SELECT table_name, column_name FROM {view} WHERE owner = :owner "
                     f"AND table_name IN ({placeholders})", {"owner": objects.owner, **binds})


def store_data_grants(objects: OracleObjects, *, managed_only: bool = False) -> Statement:
    """Names of the data grants (in the owner's schema) on the store's tables and the
    registry; ``managed_only``: on the store's own tables alone (the registry is every store's
    of the schema, so a grant on it says nothing of this store)."""
    tables = [name for name, logical in store_table_names(objects).items()
              if not (managed_only and logical == "registry")]
    placeholders, binds = _in_list("t", tables)
    return Statement(
        "SELECT grant_name FROM all_data_grants WHERE owner = :owner AND object_owner = "
        f":owner AND object_name IN ({placeholders}) ORDER BY grant_name",
        {"owner": objects.owner, **binds})


def data_grants_named_like(prefix: str) -> Statement:
    """How many data grants (in any schema) have a name starting with ``prefix``."""
    return Statement(f"SELECT COUNT(*) FROM all_data_grants WHERE grant_name LIKE :pattern "
                     f"ESCAPE '{LIKE_ESCAPE}'", {"pattern": like_prefix(prefix)})


# --- data roles and their grants ---------------------------------------------------------------
def data_roles(roles: Sequence[str]) -> Statement:
    """``(data_role, mapped_to)`` of those of ``roles`` that exist."""
    placeholders, binds = _in_list("r", list(roles))
    return Statement(f"SELECT data_role, mapped_to FROM dba_data_roles WHERE data_role IN "
                     f"({placeholders}) ORDER BY data_role", binds)


def group_data_roles() -> Statement:
    """``(data_role, mapped_to)`` of every data role the SDK mapped to a group."""
    return Statement(
        "SELECT data_role, mapped_to FROM dba_data_roles WHERE data_role LIKE :pattern "
        f"ESCAPE '{LIKE_ESCAPE}' AND mapped_to IS NOT NULL ORDER BY data_role",
        {"pattern": like_prefix(GROUP_ROLE_PREFIX)})


def end_user_role_grants(roles: Sequence[str]) -> Statement:
    """``(data_role, grantee)`` of the grants of ``roles`` to local end users."""
    placeholders, binds = _in_list("r", list(roles))
    return Statement(f"SELECT data_role, grantee FROM dba_data_role_grants WHERE grantee_type = "
                     f":grantee_type AND data_role IN ({placeholders}) ORDER BY grantee, data_role",
                     {"grantee_type": END_USER_GRANTEE, **binds})


def end_user_holds_role(role: str, end_user: str) -> Statement:
    """1 when ``role`` is granted to local end user ``end_user``, else 0."""
    return Statement(
        "SELECT COUNT(*) FROM dba_data_role_grants WHERE data_role = :role AND grantee = "
        ":grantee AND grantee_type = :grantee_type",
        {"role": role, "grantee": end_user, "grantee_type": END_USER_GRANTEE})


# --- local end users -----------------------------------------------------------------------------
def end_user_count(end_user: str) -> Statement:
    """1 when the local end user exists, else 0."""
    return Statement("SELECT COUNT(*) FROM dba_end_users WHERE username = :username",
                     {"username": end_user})


def end_user_names() -> Statement:
    """Every local end user, by name."""
    return Statement("SELECT username FROM dba_end_users ORDER BY username")


# --- runtime logins ------------------------------------------------------------------------------
_LOGINS = ("SELECT p.grantee FROM dba_sys_privs p JOIN dba_users u ON u.username = p.grantee "
           "WHERE p.privilege = :context_privilege")


def _logins_binds() -> dict[str, str]:
    return {"context_privilege": CONTEXT_PRIVILEGE}


def user_exists(login: str) -> Statement:
    """1 when database user ``login`` exists, else 0."""
    return Statement("SELECT COUNT(*) FROM dba_users WHERE username = :login", {"login": login})


def runtime_logins() -> Statement:
    """Every database user holding ``CREATE END USER SECURITY CONTEXT`` directly."""
    return Statement(f"{_LOGINS} ORDER BY p.grantee", _logins_binds())


def extra_system_privileges() -> Statement:
    """``(login, privilege)``: system privileges of runtime logins beyond the two they need."""
    return Statement("SELECT grantee, privilege FROM dba_sys_privs WHERE grantee IN "
                     f"({_LOGINS}) AND privilege NOT IN (:session_privilege, :context_privilege) "
                     "ORDER BY grantee, privilege",
                     {"session_privilege": RUNTIME_PRIVILEGES[0], **_logins_binds()})


def granted_roles() -> Statement:
    """``(login, role)``: every role granted to a runtime login."""
    return Statement(
        f"SELECT grantee, granted_role FROM dba_role_privs WHERE grantee IN ({_LOGINS}) "
        "ORDER BY grantee, granted_role", _logins_binds())


def object_privileges() -> Statement:
    """``(login, owner, object, privilege)``: every object privilege of a runtime login."""
    return Statement(
        "SELECT grantee, owner, table_name, privilege FROM dba_tab_privs WHERE grantee IN "
        f"({_LOGINS}) ORDER BY grantee, owner, table_name, privilege", _logins_binds())


def owned_objects() -> Statement:
    """``(login, count)``: how many objects each runtime login owns (it should own none)."""
    return Statement(f"SELECT owner, COUNT(*) FROM dba_objects WHERE owner IN ({_LOGINS}) "
                     "GROUP BY owner ORDER BY owner", _logins_binds())


PUBLIC_GRANTEE = "PUBLIC"
"""The grantee every database user holds the privileges of, runtime logins included."""


def public_grants() -> Statement:
    """``(kind, name)`` of what ``PUBLIC`` holds that reaches protected rows outside any
    end-user context: object privileges on a table that has data grants (``owner.table
    privilege``), ``ANY`` system privileges, and roles.

    Deep Data Security filters end-user sessions only: a runtime login outside a context is
    an ordinary database user, so whatever ``PUBLIC`` may do on a protected table it may do
    on every user's rows (where PostgreSQL's row security binds every role but the owner)."""
    return Statement(
        "SELECT 'object', p.owner || '.' || p.table_name || ' ' || p.privilege "
        "FROM dba_tab_privs p WHERE p.grantee = :public_grantee AND EXISTS (SELECT 1 FROM "
        "all_data_grants g WHERE g.object_owner = p.owner AND g.object_name = p.table_name) "
        "UNION ALL SELECT 'privilege', privilege FROM dba_sys_privs WHERE grantee = "
        ":public_grantee AND privilege LIKE :any_privilege "
        "UNION ALL SELECT 'role', granted_role FROM dba_role_privs WHERE grantee = "
        ":public_grantee", {"public_grantee": PUBLIC_GRANTEE, "any_privilege": "% ANY %"})


def login_grants(login: str) -> Statement:
    """``(kind, name)`` of everything granted to ``login``: system privileges, roles, object
    privileges (``owner.object privilege``) and owned objects (``count``)."""
    return Statement(
        "SELECT 'privilege', privilege FROM dba_sys_privs WHERE grantee = :login "
        "UNION ALL SELECT 'role', granted_role FROM dba_role_privs WHERE grantee = :login "
        "UNION ALL SELECT 'object', owner || '.' || table_name || ' ' || privilege "
        "FROM dba_tab_privs WHERE grantee = :login "
        "UNION ALL SELECT 'owns', TO_CHAR(COUNT(*)) FROM dba_objects WHERE owner = :login "
        "HAVING COUNT(*) > 0", {"login": login})
