"""The tenant runtime reuses a caller's end-user context, and never another caller's."""

from __future__ import annotations

from typing import Any

import pytest
from dds import IDP, OWNER, DdsEnvironment
from oam_gateway.config.tenant_settings import TenantSettings
from oam_gateway.tenancy.context_cache import CONTEXT_REUSE_SECONDS, ContextCache
from oam_gateway.tenancy.postgres_tenant import PostgresContexts, postgres_runtime
from oam_gateway.tenancy.principal import Principal
from pydantic import SecretStr


def runtime(dds: DdsEnvironment, cache: ContextCache | None = None,
            **overrides: Any) -> PostgresContexts:
    """The contexts of a PostgreSQL tenant's runtime (built the way the gateway builds it)."""
    values: dict[str, Any] = {
        "database_url": SecretStr(dds.runtime_url), "memory_store_id": "unused",
        "schema_owner": OWNER, "app_token": SecretStr(dds.token), "identity_provider": IDP}
    values.update(overrides)
    settings = TenantSettings(**values)
    built = postgres_runtime("acme", settings, contexts=PostgresContexts("acme", settings, cache))
    assert isinstance(built.contexts, PostgresContexts)
    return built.contexts


def principal(subject: str, groups: tuple[str, ...] = ("team",), token: str = "") -> Principal:
    return Principal(user_name=f"{IDP}:{subject}", groups=groups, tenant="acme",
                     expires_at=2**31, subject=subject, token=token)


def test_the_same_caller_gets_the_same_context(dds: DdsEnvironment) -> None:
    tenant = runtime(dds)
    first = tenant.security_context(principal("ann"))
    assert tenant.security_context(principal("ann")) is first  # reused
    assert first.username == f"{IDP}:ann"


@pytest.mark.parametrize("other", [principal("bea"), principal("ann", groups=("team", "x")),
                                   principal("ann", groups=())])
def test_another_user_or_other_groups_get_their_own_context(
        dds: DdsEnvironment, other: Principal) -> None:
    tenant = runtime(dds)
    ann = tenant.security_context(principal("ann"))
    theirs = tenant.security_context(other)
    assert theirs is not ann
    assert (theirs.username, theirs.groups) == (f"{IDP}:{other.subject}", other.groups)


def test_token_mode_keys_contexts_by_the_token(dds: DdsEnvironment) -> None:
    tenant = runtime(dds, end_user_mode="token")
    one = dds.issuer.token("ann", audience="oam-tests")
    two = dds.issuer.token("ann", audience="oam-tests", lifetime_seconds=400)
    first = tenant.security_context(principal("ann", token=one))
    assert tenant.security_context(principal("ann", token=one)) is first
    assert tenant.security_context(principal("ann", token=two)) is not first


def test_a_context_is_reused_for_a_bounded_time_and_count(dds: DdsEnvironment) -> None:
    clock = [1000.0]
    tenant = runtime(dds, ContextCache(timer=lambda: clock[0]))
    first = tenant.security_context(principal("ann"))
    clock[0] += CONTEXT_REUSE_SECONDS - 1
    assert tenant.security_context(principal("ann")) is first
    clock[0] += 2
    assert tenant.security_context(principal("ann")) is not first  # expired: a fresh one
    tenant = runtime(dds, ContextCache(maxsize=2, timer=lambda: clock[0]))
    kept = tenant.security_context(principal("ann"))
    tenant.security_context(principal("bea"))
    tenant.security_context(principal("cid"))  # ann is the least recently used: dropped
    assert tenant.security_context(principal("ann")) is not kept
