"""Deep Data Security test environment on Oracle AI Database 26ai (the twin of ``tests/dds.py``).

NOT YET RUN AGAINST A LIVE DATABASE: no Oracle database was reachable where this was written.
Every call is python-oracledb 26.1's real API (type-checked); the end users, policies and grants
are set up through the SDK's admin API (``OracleSecurityAdmin`` under it), so a live run
exercises that too; every other statement is plain documented Oracle SQL.

Identities (``deploy/oracle/bootstrap.sql`` creates them; ``deploy/oracle/README.md`` says why
three), each named by an environment variable in SQL*Plus form ``user/password@connect_string``:

``OAM_TEST_ORACLE_DSN``
    the schema owner (``OAM_OWNER``): creates and seeds the stores; never filtered.
``OAM_TEST_ORACLE_ADMIN_DSN``
    the policy administrator (``OAM_POLICY_ADMIN``): data roles, data grants, ``SET USE DATA
    GRANTS ONLY``, the local end users and their data roles.
``OAM_TEST_ORACLE_RUNTIME_DSN``
    the runtime pool account (``OAM_RUNTIME``, exactly ``CREATE SESSION`` and ``CREATE END USER
    SECURITY CONTEXT``), over **TCPS**: python-oracledb refuses an end-user context on plain TCP
    (DPY-2073). Wallet settings go in the connect string (Easy Connect
    ``tcps://host:2484/service?wallet_location=/path&ssl_server_dn_match=true``) or a
    ``tnsnames.ora`` alias.
``OAM_TEST_ORACLE_ACCESS_TOKEN_FILE``
    a file holding the application's **database access token** (OCI IAM or Entra ID client
    credentials, README step 2; e.g. the ``curl ... | jq -r .access_token`` output). The
    database refuses an end-user security context without a valid one (ORA-52602), even for
    local end users, and documents no local token mechanism. The file is read again for each
    context, so a refresher outside the tests may rotate it (tokens last about an hour).

Why this token story and not direct logon as the end user with a password (the other documented
path, needing no identity provider): the attacks below must run the way the SDK and the gateway
run, on the runtime account's pooled sessions with contexts attached and cleared
(``Connection.set_end_user_security_context``), because the cleared-context, statement-cache and
shared-pool attacks exist only there. Local end users are created without a password
(``identities.create_end_user``: authentication type NONE, application-mediated).

End users ``ALICE``, ``BOB``, ``CAROL`` and ``DAVE``, and ``OAM_NO_GRANTS`` who holds no data
role (upper case: unquoted names fold, and
``ORA_END_USER_CONTEXT.username`` returns the stored spelling, which every ``user_id`` holds).
Each store gets one local data role per shipped policy (named by
``engines/oracle/admin_names.store_data_role``), granted to all of them.

Identity-provider attacks (groups ``MAPPED TO`` an IAM group, requested data roles) need end
users the database's own identity provider (OCI IAM or Entra ID) authenticated; none can be made
here. They run only when ``OAM_TEST_ORACLE_IAM_TOKENS_FILE`` names a JSON file (read anew for
each context, so a refresher may rotate it)::

    {"identity_provider": "oci_iam",      # or "azure_ad": the database's IDENTITY_PROVIDER_TYPE
     "group": "oam-test-members",         # an IAM group (Entra ID: an app role)
     "member": "<end-user token of an IAM user in the group>",
     "outsider": "<end-user token of an IAM user not in it>"}

Without it those tests are skipped with :data:`IAM_NOT_TESTED` (also kept in
:data:`NOT_TESTED`, so the run's summary says so): never a pass.

Support probe (:func:`probe_database`, :func:`probe_context`): ``SELECT
ORA_END_USER_CONTEXT.username FROM dual`` as the runtime account (ORA-00904 / ORA-00942 /
ORA-00900: no Deep Data Security), then a context attached (DPY-3041: the server lacks the
capability; DPY-2073: not TLS; ORA-52602: the token was refused) and verified. Its reason is
kept in :data:`NOT_TESTED` for the run's summary line, and the tests fail with it: a database
without Deep Data Security never counts as a pass.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import oracledb
import pytest
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    LocalEndUserPrincipal,
    OracleMemoryEndUserSecurityContext,
    add_deep_data_security_policies,
    grant_agent_memory_policies,
    identities,
    remove_deep_data_security_policies,
)
from oracleagentmemory.core.deepsec.policies import POLICY_BY_NAME
from oracleagentmemory.engines.oracle.context import USERNAME_QUERY, seen_username
from oracleagentmemory.engines.oracle.driver_errors import error_info
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from oracleagentmemory.engines.oracle.schema_ops import drop_store
from oracleagentmemory.errors import OracleAgentMemoryError
from provision.oracle import parse_dsn

OWNER_DSN = "OAM_TEST_ORACLE_DSN"
ADMIN_DSN = "OAM_TEST_ORACLE_ADMIN_DSN"
RUNTIME_DSN = "OAM_TEST_ORACLE_RUNTIME_DSN"
ACCESS_TOKEN_FILE = "OAM_TEST_ORACLE_ACCESS_TOKEN_FILE"
SETTINGS = (OWNER_DSN, ADMIN_DSN, RUNTIME_DSN, ACCESS_TOKEN_FILE)
IAM_TOKENS_FILE = "OAM_TEST_ORACLE_IAM_TOKENS_FILE"

IAM_NOT_TESTED = (
    f"its identity-provider, group (MAPPED TO) and data-role attacks need {IAM_TOKENS_FILE} "
    "(end-user tokens of two IAM users, see tests/oracle_dds.py): no test identity provider "
    "exists to twin them against")
"""Why the identity-provider attacks were skipped (the variable is unset)."""

USERS = ("ALICE", "BOB", "CAROL", "DAVE")
"""The local end users, as the database stores them (and as ``user_id`` holds them)."""

NO_GRANTS_USER = "OAM_NO_GRANTS"
"""A local end user that exists but holds no data role on any store."""

RUNTIME_POOL_MAX = 2
"""A small pool, so that interleaved end users share its sessions."""

NO_DEEP_SEC_CODES = frozenset({900, 904, 942})
"""ORA_END_USER_CONTEXT unknown: ORA-00900 invalid statement, ORA-00904 invalid identifier,
ORA-00942 no such table or view."""

NOT_TESTED: list[str] = []
"""Why Oracle's Deep Data Security was not tested although Oracle is reachable (filled by the
session fixture; ``tests/conftest.py`` prints it after the results)."""

_ids = itertools.count(1)


@dataclass(frozen=True)
class Login:
    """One database account: ``user/password@dsn`` parsed."""

    user: str
    password: str
    dsn: str

    @classmethod
    def from_env(cls, variable: str) -> Login:
        user, password, dsn = parse_dsn(os.environ[variable])
        return cls(user, password, dsn)

    def connect(self, conn_class: type[oracledb.Connection] = oracledb.Connection
                ) -> oracledb.Connection:
        return oracledb.connect(user=self.user, password=self.password, dsn=self.dsn,
                                conn_class=conn_class)


def missing_settings() -> str | None:
    """Which settings are missing or unusable (``None``: all are there)."""
    missing = [name for name in SETTINGS if not os.environ.get(name)]
    if missing:
        return f"Deep Data Security needs {', '.join(missing)} set (see tests/oracle_dds.py)"
    token_file = Path(os.environ[ACCESS_TOKEN_FILE])
    if not token_file.is_file() or not token_file.read_text(encoding="utf-8").strip():
        return f"{ACCESS_TOKEN_FILE} names no file holding a database access token"
    return None


def read_access_token() -> str:
    """The database access token (read anew each time: a refresher may rotate the file)."""
    return Path(os.environ[ACCESS_TOKEN_FILE]).read_text(encoding="utf-8").strip()


def end_user_context(user: str, access_token: str | None = None) -> oracledb.EndUserSecurityContext:
    """python-oracledb's context for local end user ``user`` (no lookup key)."""
    return oracledb.create_end_user_security_context(
        access_token if access_token is not None else read_access_token(),
        end_user_identity=(user, None))


@dataclass(frozen=True)
class IamUsers:
    """Two end users of the database's identity provider: ``member`` is in ``group``,
    ``outsider`` is not (their end-user tokens, as :data:`IAM_TOKENS_FILE` holds them)."""

    identity_provider: str
    group: str
    member_token: str
    outsider_token: str

    def context(self, token: str, data_roles: list[str] | None = None
                ) -> oracledb.EndUserSecurityContext:
        """python-oracledb's context for the IAM end user of ``token`` (a str identity: the
        database verifies the token and enables the data roles mapped to its groups)."""
        return oracledb.create_end_user_security_context(
            read_access_token(), end_user_identity=token, data_roles=data_roles)


def iam_users() -> IamUsers | None:
    """The IAM end users of :data:`IAM_TOKENS_FILE` (``None``: the variable is unset).

    Raises :class:`ValueError` when the file is missing or malformed: a misconfigured run fails.
    """
    setting = os.environ.get(IAM_TOKENS_FILE)
    if not setting:
        return None
    try:
        data = json.loads(Path(setting).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{IAM_TOKENS_FILE}={setting!r} is not a readable JSON file: "
                         f"{exc}") from exc
    keys = ("identity_provider", "group", "member", "outsider")
    if not isinstance(data, dict) or not all(
            isinstance(data.get(k), str) and data[k].strip() for k in keys):
        raise ValueError(f"{IAM_TOKENS_FILE} must hold a JSON object with the non-empty "
                         f"strings {', '.join(keys)}")
    return IamUsers(data["identity_provider"], data["group"], data["member"].strip(),
                    data["outsider"].strip())


def describe(exc: BaseException) -> str:
    """``ORA-00904: ...``: the first line of a driver error (or of the SDK's typed error)."""
    return error_info(exc).first_line


def probe_database(runtime: Login) -> str | None:
    """Why the database has no Deep Data Security for the runtime account (``None``: it has):
    ``ORA_END_USER_CONTEXT`` must be known, and name no end user outside a context."""
    try:
        with runtime.connect() as conn, conn.cursor() as cur:
            cur.execute(USERNAME_QUERY)
            row = cur.fetchone()
    except oracledb.DatabaseError as exc:
        if error_info(exc).code in NO_DEEP_SEC_CODES:
            return f"the database has no Deep Data Security ({describe(exc)})"
        return f"the runtime account cannot run the support probe: {describe(exc)}"
    outside = seen_username(row[0] if row else None)
    if outside is not None:
        return f"the runtime account already runs as end user {outside!r}"
    return None


def probe_context(runtime: Login) -> str | None:
    """Why no end-user context can be attached (``None``: one can): ``ALICE``'s context is
    attached to a runtime connection, verified by a round trip and cleared again."""
    with runtime.connect() as conn, conn.cursor() as cur:
        try:
            conn.set_end_user_security_context(end_user_context(USERS[0]))
        except oracledb.Error as exc:  # DPY-3041 no capability, DPY-2073 not TLS
            return f"no end-user security context on this connection ({describe(exc)})"
        try:
            cur.execute(USERNAME_QUERY)
            row = cur.fetchone()
        except oracledb.DatabaseError as exc:  # ORA-52602: the access token was refused
            return f"the end-user security context was refused ({describe(exc)})"
        inside = seen_username(row[0] if row else None)
        if inside != USERS[0]:
            return f"a context for {USERS[0]} ran as {inside!r}"
        conn.clear_end_user_security_context()
    return None


@dataclass(frozen=True)
class OracleSeeded:
    """A protected store on Oracle; physical names resolved with the engine's own rules."""

    store_id: str
    owner: str

    @property
    def objects(self) -> OracleObjects:
        return OracleObjects.of(derive_store_names(memory_store_id=self.store_id,
                                                   table_name_prefix=None,
                                                   schema_owner=self.owner))

    def table(self, logical: str) -> str:
        """``"OWNER"."TABLE"`` of a managed table (or ``registry``)."""
        if logical == "registry":
            return self.objects.registry()
        return self.objects.table(logical)


SHIPPED = list(POLICY_BY_NAME.values())
"""Every shipped policy, installed on each test store and granted to every test end user."""


@dataclass
class OracleDdsEnvironment:
    """The Oracle identities of a test session, and the runtime account's small pool."""

    owner: Login
    admin: Login
    runtime: Login
    owner_pool: oracledb.ConnectionPool
    runtime_pool: oracledb.ConnectionPool
    stores: list[OracleSeeded] = field(default_factory=list)

    @property
    def owner_schema(self) -> str:
        return self.owner.user.upper()

    def context(self, user: str) -> oracledb.EndUserSecurityContext:
        return end_user_context(user)

    def new_store(self, vector_dim: int | None = 3) -> OracleSeeded:
        """Create a store as the owner, then, as the policy administrator through the SDK's
        admin API (the Oracle security admin), install the shipped policies and grant them to
        every test end user."""
        store_id = f"o{os.getpid() % 10000}_{next(_ids)}"
        with self.owner.connect() as conn:
            OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id=store_id, vector_dim=vector_dim).close()
        seeded = OracleSeeded(store_id, self.owner_schema)
        self.stores.append(seeded)
        with self.admin.connect() as conn:
            add_deep_data_security_policies(conn, self.owner_schema, store_id, SHIPPED)
            grant_agent_memory_policies(conn, store_id, self.owner_schema,
                                        [LocalEndUserPrincipal(u) for u in USERS], SHIPPED)
        return seeded

    def drop_stores(self) -> None:
        """Drop the stores this session made: their data grants and data roles (as the policy
        administrator, through the admin API), then their tables (as the owner). The end users
        stay."""
        with self.admin.connect() as conn:
            for seeded in self.stores:
                remove_deep_data_security_policies(conn, self.owner_schema, seeded.store_id,
                                                   SHIPPED)
        with self.owner.connect() as conn:
            for seeded in self.stores:
                drop_store(conn, seeded.objects)
            conn.commit()
        self.stores.clear()

    def owner_store(self, seeded: OracleSeeded) -> OracleDBMemoryStore:
        """The store opened by its owner (no row security applies); close it after use."""
        return OracleDBMemoryStore(None, self.owner_pool,
                                   schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                                   memory_store_id=seeded.store_id)

    @contextmanager
    def runtime_store(self, seeded: OracleSeeded, user: str,
                      pool: oracledb.ConnectionPool | None = None
                      ) -> Iterator[OracleDBMemoryStore]:
        """A NO_CHECK runtime store opened and used inside end user ``user``'s context."""
        with OracleMemoryEndUserSecurityContext(self.context(user)):
            store = OracleDBMemoryStore(None, pool or self.runtime_pool,
                                        schema_policy=SchemaPolicy.NO_CHECK,
                                        memory_store_id=seeded.store_id,
                                        schema_owner=self.owner_schema)
            try:
                yield store
            finally:
                store.close()

    @contextmanager
    def as_user(self, user: str, stmtcachesize: int = 0) -> Iterator[oracledb.Connection]:
        """A runtime-account connection in ``user``'s verified context, as a compromised
        gateway holds it; its transaction is rolled back and the context cleared at the end."""
        conn = self.runtime.connect()
        try:
            conn.stmtcachesize = stmtcachesize
            conn.set_end_user_security_context(self.context(user))
            with conn.cursor() as cur:
                cur.execute(USERNAME_QUERY)
                row = cur.fetchone()
                assert row is not None and seen_username(row[0]) == user
            try:
                yield conn
            finally:
                conn.rollback()
                conn.clear_end_user_security_context()
        finally:
            conn.close()

    def end_user_of(self, context: oracledb.EndUserSecurityContext) -> str | None:
        """The end user the database runs ``context`` as (``None``: it runs as none)."""
        with self.runtime.connect() as conn, conn.cursor() as cur:
            conn.set_end_user_security_context(context)
            cur.execute(USERNAME_QUERY)
            row = cur.fetchone()
            conn.clear_end_user_security_context()
        return seen_username(row[0] if row else None)

    def runtime_pool_of(self, connection_class: type[oracledb.Connection],
                        size: int = 1) -> oracledb.ConnectionPool:
        """A pool of the runtime account whose connections are ``connection_class``'s (a
        subclass of :class:`oracledb.Connection`: the real driver, with the test's code on the
        connection); close it after use."""
        return oracledb.create_pool(user=self.runtime.user, password=self.runtime.password,
                                    dsn=self.runtime.dsn, min=1, max=size, increment=1,
                                    connectiontype=connection_class)

    def close(self) -> None:
        """Close the pools, then drop the session's stores."""
        self.runtime_pool.close(force=True)
        self.owner_pool.close(force=True)
        self.drop_stores()


def create_end_users(admin: Login) -> None:
    """The test end users, through the admin API (``CREATE END USER IF NOT EXISTS``: a rerun
    keeps them)."""
    with admin.connect() as conn:
        for user in (*USERS, NO_GRANTS_USER):
            identities.create_end_user(conn, user)


def setup_environment() -> OracleDdsEnvironment:
    """Reach the three accounts, create the end users, and probe support.

    Raises :class:`RuntimeError` with the reason (also kept in :data:`NOT_TESTED`) when the
    settings are missing or the database cannot run Deep Data Security.
    """
    reason = missing_settings()
    if reason is None:
        owner, admin, runtime = (Login.from_env(v) for v in (OWNER_DSN, ADMIN_DSN, RUNTIME_DSN))
        reason = probe_database(runtime)
    if reason is None:
        try:
            create_end_users(admin)
        except (oracledb.Error, OracleAgentMemoryError) as exc:
            reason = f"the policy administrator cannot create end users ({describe(exc)})"
    if reason is None:
        reason = probe_context(runtime)
    if reason is not None:
        NOT_TESTED.append(reason)
        raise RuntimeError(f"Oracle Deep Data Security cannot be tested: {reason}")
    return OracleDdsEnvironment(
        owner=owner, admin=admin, runtime=runtime,
        owner_pool=oracledb.create_pool(user=owner.user, password=owner.password,
                                        dsn=owner.dsn, min=1, max=2, increment=1),
        runtime_pool=oracledb.create_pool(user=runtime.user, password=runtime.password,
                                          dsn=runtime.dsn, min=1, max=RUNTIME_POOL_MAX,
                                          increment=1))



def environment_or_fail() -> Iterator[OracleDdsEnvironment]:
    """A fixture body: the environment, closed afterwards; a database that cannot run Deep Data
    Security fails the test with the probe's reason (never skips it)."""
    reason: str | None = None
    try:
        env = setup_environment()
    except RuntimeError as exc:
        reason = str(exc)
    if reason is not None:
        pytest.fail(reason, pytrace=False)
    yield env
    env.close()
