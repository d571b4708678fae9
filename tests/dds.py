"""Deep Data Security test environment on the embedded server: identities, a protected store.

Identities (as in DESIGN §4.1): ``oam_test_owner`` owns the schema and creates stores;
``oam_test_secadmin`` is the policy administrator (owns ``oam_sec``, member of the owner role);
``oam_test_rt`` is the runtime login of application ``gw`` and holds no table privilege except
through the policies; local end users ``alice``, ``bob``, ``carol`` hold the own-rows and
global-memories roles; group ``team`` holds them too (for identity-provider users).
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    GlobalMemoriesDeepDataSecurityPolicy,
    IdentityProviderUser,
    LocalEndUserPrincipal,
    OciGroupPrincipal,
    OracleMemoryEndUserSecurityContext,
    UserOwnRowsDeepDataSecurityPolicy,
    add_deep_data_security_policies,
    create_end_user_security_context,
    grant_agent_memory_policies,
)
from oracleagentmemory.devissuer import DevIssuer
from oracleagentmemory.engines.postgres import deepsec_admin

OWNER = "oam_test_owner"
SECADMIN = "oam_test_secadmin"
RUNTIME = "oam_test_rt"
OTHER_RUNTIME = "oam_test_rt2"
USERS = ("alice", "bob", "carol")
GROUP = "team"
APPLICATIONS = ("gw", "other_app")
"""The tests' applications; both are bound to every store ``new_store`` creates."""
IDP = "test_idp"
"""The identity provider of the tests (a local issuer); its users' rows carry
``test_idp:<name>``."""
ISSUER = "https://issuer.oam.test"
AUDIENCE = "oam-tests"
POLICIES = [UserOwnRowsDeepDataSecurityPolicy(), GlobalMemoriesDeepDataSecurityPolicy()]
TEST_PASSWORD = "oam-test-login-password"
"""The password of every login role the tests create (test-only; never a production secret)."""
_ids = itertools.count(1)
_passfile: Path | None = None


def test_passfile() -> Path:
    """A libpq password file (mode 0600) giving :data:`TEST_PASSWORD` for any role."""
    global _passfile
    if _passfile is None:
        directory = tempfile.mkdtemp(prefix="oam-test-pgpass-")
        atexit.register(shutil.rmtree, directory, True)
        path = Path(directory) / "pgpass"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"*:*:*:*:{TEST_PASSWORD}\n")
        _passfile = path
    return _passfile


def db_user(user: str) -> str:
    """The user name rows carry for a test user: local users as named, others namespaced."""
    return user if user in USERS or ":" in user else f"{IDP}:{user}"


def url_as(url: str, role: str) -> str:
    """``url`` with ``role`` as the user, authenticating with :data:`TEST_PASSWORD`.

    The embedded server requires a password: the URL names :func:`test_passfile` with libpq's
    ``passfile=`` (in place of ``url``'s own password or password file), so it carries no
    password and ``oam-admin --url`` accepts it.
    """
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    query = [p for p in parts.query.split("&")
             if p and p.split("=", 1)[0] not in ("password", "passfile")]
    query.append(f"passfile={quote(str(test_passfile()), safe='/')}")
    return urlunsplit((parts.scheme, f"{role}@{host}", parts.path, "&".join(query),
                       parts.fragment))


def set_test_password(conn: psycopg.Connection[Any], role: str) -> None:
    """Give ``role`` :data:`TEST_PASSWORD` (so :func:`url_as` logs in as it)."""
    conn.execute(psycopg.sql.SQL("ALTER ROLE {} PASSWORD {}").format(
        psycopg.sql.Identifier(role), psycopg.sql.Literal(TEST_PASSWORD)))


@dataclass
class DdsEnvironment:
    """Identities and tokens shared by a test session."""

    superuser_url: str
    owner_url: str
    secadmin_url: str
    runtime_url: str
    other_runtime_url: str
    token: str
    other_app_token: str
    issuer: DevIssuer

    def context(self, user: str, **kwargs: Any) -> Any:
        """A PostgreSQL end-user security context for a local end user."""
        return create_end_user_security_context(self.token, (user, None), **kwargs)

    def idp_context(self, user: str, groups: tuple[str, ...] = (GROUP,)) -> Any:
        """A context for an identity-provider user in ``groups``, vouched for by the app."""
        return create_end_user_security_context(self.token,
                                                IdentityProviderUser(user, groups, IDP))

    def token_context(self, user: str, groups: tuple[str, ...] = (GROUP,),
                      app_token: str | None = None, **claims: Any) -> Any:
        """A context carrying the test issuer's token for ``user`` (token mode)."""
        jwt = self.issuer.token(user, audience=AUDIENCE, groups=groups, **claims)
        return create_end_user_security_context(app_token or self.token, jwt)

    def new_store(self, vector_dim: int | None = 3, **kwargs: Any) -> str:
        """Create a store as the owner, install both policies, grant them; returns its id."""
        store_id = f"d{next(_ids)}"
        with psycopg.connect(self.owner_url) as conn:
            OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id=store_id, vector_dim=vector_dim, **kwargs)
        with psycopg.connect(self.secadmin_url) as conn:
            add_deep_data_security_policies(conn, OWNER, store_id, POLICIES)
            grant_agent_memory_policies(
                conn, store_id, OWNER,
                [*(LocalEndUserPrincipal(u) for u in USERS), OciGroupPrincipal(GROUP, IDP)],
                POLICIES,
            )
        self.bind(store_id)
        return store_id

    def bind(self, store_id: str) -> None:
        """Let both test applications act for the store ``store_id`` of :data:`OWNER`."""
        with psycopg.connect(self.secadmin_url) as conn:
            for app in APPLICATIONS:
                deepsec_admin.bind_application(conn, app, stores=[(OWNER, store_id)])

    def owner_store(self, store_id: str, **kwargs: Any) -> OracleDBMemoryStore:
        """The store opened by its owner (no row security applies)."""
        return OracleDBMemoryStore(None, self.owner_url,
                                   schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                                   memory_store_id=store_id, **kwargs)

    def runtime_store(self, store_id: str, user: str, pool: Any = None,
                      **kwargs: Any) -> AbstractContextManager[OracleDBMemoryStore]:
        """A NO_CHECK runtime store opened and used inside local end user ``user``'s context."""
        return self.context_store(store_id, self.context(user), pool, **kwargs)

    @contextmanager
    def context_store(self, store_id: str, context: Any, pool: Any = None,
                      **kwargs: Any) -> Iterator[OracleDBMemoryStore]:
        """A NO_CHECK runtime store opened and used inside the end-user ``context``."""
        with OracleMemoryEndUserSecurityContext(context):
            store = OracleDBMemoryStore(None, pool or self.runtime_url,
                                        schema_policy=SchemaPolicy.NO_CHECK,
                                        memory_store_id=store_id, schema_owner=OWNER, **kwargs)
            try:
                yield store
            finally:
                store.close()


def _role(conn: psycopg.Connection[Any], name: str, options: str) -> None:
    if not deepsec_admin.role_exists(conn, name):
        conn.execute(f"CREATE ROLE {name} {options}".encode())


def setup_environment(superuser_url: str) -> DdsEnvironment:
    """Create (idempotently) every identity, the security schema and two applications."""
    with psycopg.connect(superuser_url, autocommit=True) as su:
        _role(su, OWNER, "LOGIN")
        set_test_password(su, OWNER)
        su.execute(f"CREATE SCHEMA IF NOT EXISTS {OWNER} AUTHORIZATION {OWNER}".encode())
        _role(su, SECADMIN, "LOGIN CREATEROLE")
        set_test_password(su, SECADMIN)
        database = su.execute("SELECT current_database()").fetchone()
        assert database is not None
        su.execute(f'GRANT CREATE ON DATABASE "{database[0]}" TO {SECADMIN}'.encode())
        su.execute(f"GRANT {OWNER} TO {SECADMIN}".encode())
    secadmin_url = url_as(superuser_url, SECADMIN)
    with psycopg.connect(secadmin_url) as conn, conn.transaction():
        deepsec_admin.install_security_schema(conn)
        for user in USERS:
            deepsec_admin.create_end_user(conn, user)
        issuer = DevIssuer.create(tempfile.mkdtemp(prefix="oam-test-issuer-"), ISSUER)
        conn.execute("DELETE FROM oam_sec.identity_provider WHERE name = %s", [IDP])
        deepsec_admin.add_identity_provider(conn, IDP, ISSUER, AUDIENCE, issuer.jwks())
        tokens = []
        for login, app in ((RUNTIME, "gw"), (OTHER_RUNTIME, "other_app")):
            if not deepsec_admin.role_exists(conn, login):
                deepsec_admin.create_runtime_login(conn, login, TEST_PASSWORD, OWNER)
            conn.execute("DELETE FROM oam_sec.application WHERE app_name = %s", [app])
            tokens.append(deepsec_admin.create_application(conn, app, login).token())
            deepsec_admin.bind_application(conn, app, identity_providers=[IDP])
    with psycopg.connect(superuser_url, autocommit=True) as su:
        for login in (RUNTIME, OTHER_RUNTIME):  # also when an earlier session created them
            set_test_password(su, login)
    return DdsEnvironment(
        superuser_url=superuser_url,
        owner_url=url_as(superuser_url, OWNER),
        secadmin_url=secadmin_url,
        runtime_url=url_as(superuser_url, RUNTIME),
        other_runtime_url=url_as(superuser_url, OTHER_RUNTIME),
        token=tokens[0],
        other_app_token=tokens[1],
        issuer=issuer,
    )
