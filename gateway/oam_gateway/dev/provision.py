"""Provision the demo tenant of ``oam-gateway dev`` on the embedded database, idempotently.

Every step runs as an admin identity, never as the runtime: the embedded server's superuser
(the bootstrap DBA) creates the schema owner ``oam_demo`` and the policy administrator; the
schema owner creates the protected store ``demo``; the policy administrator installs the
security schema and both shipped policies, registers the development identity provider with
the issuer's JWKS, grants the policies to the provider's group ``demo``, creates the runtime
login and the application, and turns the store's write audit on. A second run finds each of
them and reuses it (the application token and the passwords stay in the state directory).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    GlobalMemoriesDeepDataSecurityPolicy,
    OciGroupPrincipal,
    UserOwnRowsDeepDataSecurityPolicy,
    add_deep_data_security_policies,
    grant_agent_memory_policies,
    identities,
)
from oracleagentmemory.core.deepsec.audit import enable_write_audit, write_audit_status
from oracleagentmemory.devissuer import DevIssuer
from oracleagentmemory.engines.postgres import bootstrap_roles
from oracleagentmemory.errors import InvalidArgumentError, MemoryStoreSchemaError

from oam_gateway.dev.state import DevState, login_url

__all__ = ["APPLICATION", "DEMO_USERS", "GROUP", "IDENTITY_PROVIDER", "MEMORY_STORE_ID", "POLICIES",
           "POLICY_ADMINISTRATOR", "RUNTIME_LOGIN", "SCHEMA_OWNER", "VECTOR_DIM", "DemoTenant",
           "Progress", "provision"]

SCHEMA_OWNER = "oam_demo"
POLICY_ADMINISTRATOR = "oam_demo_admin"
RUNTIME_LOGIN = "oam_demo_rt"
APPLICATION = "oam_demo_gw"
MEMORY_STORE_ID = "demo"
VECTOR_DIM = 256
"""The WordLlama embedder's dimension (the store's ``vector_dim``)."""
IDENTITY_PROVIDER = "dev"
GROUP = "demo"
DEMO_USERS = ("alice", "bob")
POLICIES = [UserOwnRowsDeepDataSecurityPolicy(), GlobalMemoriesDeepDataSecurityPolicy()]

Progress = Callable[[str], None]


@dataclass(frozen=True)
class DemoTenant:
    """What the gateway needs to serve the demo tenant (its secrets stay in files)."""

    runtime_url: str
    """The runtime login's URL: no password, it names the state directory's password file."""
    users: dict[str, list[str]]


@contextmanager
def _step(progress: Progress, what: str) -> Iterator[list[str]]:
    """Report ``what`` and, when it is done, its outcome (appended by the step) and time."""
    started = time.monotonic()
    outcome: list[str] = []
    progress(f"{what} ...")
    yield outcome
    progress(f"{what}: {', '.join(outcome) or 'done'} ({time.monotonic() - started:.1f} s)")


def provision(superuser_url: str, state: DevState, issuer: DevIssuer, audience: str,
              progress: Progress) -> DemoTenant:
    """Provision (or find) the demo tenant on the database of ``superuser_url``."""
    owner_url = login_url(superuser_url, SCHEMA_OWNER, state.admin_passfile)
    admin_url = _admin_identities(superuser_url, state, progress)
    _store(owner_url, progress)
    _policies(admin_url, progress)
    _identity_provider(admin_url, issuer, audience, progress)
    _grant(admin_url, progress)
    runtime_url = _runtime_login(superuser_url, admin_url, state, progress)
    _application(admin_url, state, progress)
    _write_audit(admin_url, progress)
    users = {user: [GROUP] for user in DEMO_USERS}
    with _step(progress, f"demo users {' and '.join(DEMO_USERS)}") as outcome:
        state.save_users(users)
        outcome.append(f"users of identity provider {IDENTITY_PROVIDER!r} in its group "
                       f"{GROUP!r} (rows carry '{IDENTITY_PROVIDER}:<user>')")
    return DemoTenant(runtime_url=runtime_url, users=users)


def _admin_identities(superuser_url: str, state: DevState, progress: Progress) -> str:
    """The schema owner and the policy administrator (as the superuser); returns the URL of
    the identity that administers the security schema."""
    with _step(progress, f"schema owner {SCHEMA_OWNER} and policy administrator "
                         f"{POLICY_ADMINISTRATOR}") as outcome, \
            bootstrap_roles.connect(superuser_url) as su:
        for role in (SCHEMA_OWNER, POLICY_ADMINISTRATOR):
            password, _ = state.password(state.admin_passfile, role)
            created = bootstrap_roles.ensure_login(su, role, password)
            outcome.append(f"{role} {'created' if created else 'exists'}")
        bootstrap_roles.ensure_owned_schema(su, SCHEMA_OWNER)
        bootstrap_roles.ensure_policy_administrator(su, POLICY_ADMINISTRATOR, SCHEMA_OWNER)
        owner = bootstrap_roles.security_schema_owner(su)
    if owner in (None, POLICY_ADMINISTRATOR):
        return login_url(superuser_url, POLICY_ADMINISTRATOR, state.admin_passfile)
    if owner == "postgres":  # an earlier walk-through made the superuser its administrator
        progress(f"the security schema oam_sec belongs to {owner} (the embedded superuser): "
                 "the policy steps run as it")
        return superuser_url
    raise InvalidArgumentError(
        f"the security schema oam_sec of this database belongs to {owner!r}: run "
        "`oam-gateway dev` on its own embedded database (OAM_EMBEDDED_PGDATA=DIR)",
        argument="database")


def _store(owner_url: str, progress: Progress) -> None:
    with _step(progress, f"memory store {MEMORY_STORE_ID!r} of {SCHEMA_OWNER} "
                         f"({VECTOR_DIM} dimensions, the WordLlama embedder)") as outcome:
        try:
            store = OracleDBMemoryStore(None, owner_url,
                                        schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                                        memory_store_id=MEMORY_STORE_ID, vector_dim=VECTOR_DIM)
            outcome.append("exists")
        except MemoryStoreSchemaError:
            store = OracleDBMemoryStore(None, owner_url,
                                        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                        memory_store_id=MEMORY_STORE_ID, vector_dim=VECTOR_DIM)
            outcome.append("created")
        store.close()


def _policies(admin_url: str, progress: Progress) -> None:
    with _step(progress, "security schema and policies own_user_rows, global_memories"):
        add_deep_data_security_policies(admin_url, SCHEMA_OWNER, MEMORY_STORE_ID, POLICIES)


def _identity_provider(admin_url: str, issuer: DevIssuer, audience: str,
                       progress: Progress) -> None:
    with _step(progress, f"identity provider {IDENTITY_PROVIDER!r} (the development issuer "
                         f"{issuer.issuer}, its JWKS)") as outcome:
        found = {p.name: p for p in identities.list_identity_providers(admin_url)}
        known = found.get(IDENTITY_PROVIDER)
        if known is not None and (known.issuer, known.audience) == (issuer.issuer, audience):
            identities.refresh_identity_provider_keys(admin_url, IDENTITY_PROVIDER,
                                                      issuer.jwks())
            outcome.append("exists, keys refreshed")
            return
        if known is not None:  # dev serves another URL: the issuer is named after it
            identities.remove_identity_provider(admin_url, IDENTITY_PROVIDER)
        identities.add_identity_provider(admin_url, IDENTITY_PROVIDER, issuer=issuer.issuer,
                                         audience=audience, jwks=issuer.jwks())
        outcome.append("registered" if known is None else
                       f"issuer changed from {known.issuer} (its group grants kept)")


def _grant(admin_url: str, progress: Progress) -> None:
    with _step(progress, f"grant both policies to group {IDENTITY_PROVIDER}:{GROUP}"):
        grant_agent_memory_policies(admin_url, MEMORY_STORE_ID, SCHEMA_OWNER,
                                    [OciGroupPrincipal(GROUP, IDENTITY_PROVIDER)], POLICIES)


def _runtime_login(superuser_url: str, admin_url: str, state: DevState,
                   progress: Progress) -> str:
    with _step(progress, f"runtime login {RUNTIME_LOGIN}") as outcome:
        password, _ = state.password(state.runtime_passfile, RUNTIME_LOGIN)
        with bootstrap_roles.connect(superuser_url) as su:
            exists = bootstrap_roles.role_exists(su, RUNTIME_LOGIN)
            if exists:  # the password of the state directory, whatever it was
                bootstrap_roles.set_login_password(su, RUNTIME_LOGIN, password)
        if not exists:
            identities.create_runtime_login(admin_url, RUNTIME_LOGIN, password, SCHEMA_OWNER)
        outcome.append("exists" if exists else "created")
        outcome.append(f"password in {state.runtime_passfile}")
    return login_url(superuser_url, RUNTIME_LOGIN, state.runtime_passfile)


def _application(admin_url: str, state: DevState, progress: Progress) -> None:
    with _step(progress, f"application {APPLICATION}") as outcome:
        known = {a.name for a in identities.list_applications(admin_url)}
        store = (SCHEMA_OWNER, MEMORY_STORE_ID)
        if APPLICATION not in known:
            state.save_app_token(identities.create_application(
                admin_url, APPLICATION, RUNTIME_LOGIN, stores=[store],
                identity_providers=[IDENTITY_PROVIDER]))
            outcome.append("created")
        elif state.app_token() is None:  # its token was shown once, to another state dir
            state.save_app_token(identities.rotate_application_key(admin_url, APPLICATION))
            outcome.append("exists, key rotated (no token was saved)")
        else:
            outcome.append("exists")
        identities.bind_application(admin_url, APPLICATION, stores=[store],
                                    identity_providers=[IDENTITY_PROVIDER])
        outcome.append(f"token in {state.app_token_file}")


def _write_audit(admin_url: str, progress: Progress) -> None:
    with _step(progress, f"write audit of {MEMORY_STORE_ID!r}") as outcome:
        if write_audit_status(admin_url, SCHEMA_OWNER, MEMORY_STORE_ID).enabled:
            outcome.append("on")
            return
        enable_write_audit(admin_url, SCHEMA_OWNER, MEMORY_STORE_ID)
        outcome.append("turned on")
