"""Several tenants in one gateway: the token's tenant claim picks the store, pool and client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from dds import AUDIENCE, GROUP, IDP, ISSUER, OWNER, DdsEnvironment
from gateway_live import BOTH_SCOPES, VECTOR_DIM, serve
from oam_gateway.app import create_app
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.config.tenant_settings import TenantSettings
from oam_gateway.errors.problems import problem_type
from pydantic import SecretStr, ValidationError


def tenant(dds: DdsEnvironment, store_id: str) -> TenantSettings:
    return TenantSettings(
        database_url=SecretStr(dds.runtime_url), memory_store_id=store_id, schema_owner=OWNER,
        app_token=SecretStr(dds.token), identity_provider=IDP, embedder="hashing",
        embedding_dimension=VECTOR_DIM, pool_max_size=2)


@pytest.fixture(scope="module")
def two_tenants(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[tuple[str, dict[str, str]]]:
    stores = {"acme": dds.new_store(vector_dim=VECTOR_DIM),
              "globex": dds.new_store(vector_dim=VECTOR_DIM)}
    jwks = tmp_path_factory.mktemp("tenants") / "jwks.json"
    jwks.write_text(json.dumps(dds.issuer.jwks()), encoding="utf-8")
    settings = GatewaySettings(
        issuer=ISSUER, audience=AUDIENCE, jwks_file=jwks, tenant_claim="org",
        tenants={name: tenant(dds, store_id) for name, store_id in stores.items()})
    with serve(create_app(settings)) as url:
        yield url, stores


def client(dds: DdsEnvironment, url: str, user: str, **claims: Any) -> httpx.Client:
    token = dds.issuer.token(user, audience=AUDIENCE, groups=[GROUP], scope=BOTH_SCOPES,
                             **claims)
    return httpx.Client(base_url=url, timeout=30,
                        headers={"Authorization": f"Bearer {token}"})


def test_each_tenant_claim_reaches_its_own_store(
        dds: DdsEnvironment, two_tenants: tuple[str, dict[str, str]]) -> None:
    url, stores = two_tenants
    with client(dds, url, "tenant_user", org="acme") as acme, \
            client(dds, url, "tenant_user", org="globex") as globex:
        assert acme.get("/v1/me").json()["tenant"] == "acme"
        made = acme.post("/v1/memories", json={"content": "acme's secret plan"})
        assert made.status_code == 201, made.text
        memory_id = made.json()["id"]
        assert acme.get(f"/v1/memories/{memory_id}").status_code == 200  # positive control
        # The same user in the other tenant: another store, where the memory does not exist.
        assert globex.get(f"/v1/memories/{memory_id}").status_code == 404
        assert globex.get("/v1/memories").json()["items"] == []
        globex.post("/v1/memories", json={"content": "globex's own"})
    with dds.owner_store(stores["acme"]) as store:
        assert [r.content for r in store.list("memory", limit=None)] == ["acme's secret plan"]
    with dds.owner_store(stores["globex"]) as store:
        assert [r.content for r in store.list("memory", limit=None)] == ["globex's own"]


@pytest.mark.parametrize("claims", [{}, {"org": "initech"}, {"org": ["acme"]}])
def test_a_token_without_a_known_tenant_is_refused(
        dds: DdsEnvironment, two_tenants: tuple[str, dict[str, str]],
        claims: dict[str, Any]) -> None:
    url, _ = two_tenants
    with client(dds, url, "tenant_user", **claims) as http:
        refused = http.get("/v1/me")
    assert refused.status_code == 401
    assert refused.json()["type"] == problem_type("invalid-token")
    assert "org" in refused.headers["www-authenticate"]


def test_several_tenants_need_a_tenant_claim(dds: DdsEnvironment, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="tenant_claim"):
        GatewaySettings(issuer=ISSUER, audience=AUDIENCE, jwks_file=tmp_path / "j.json",
                        tenants={"a": tenant(dds, "s1"), "b": tenant(dds, "s2")})
    with pytest.raises(ValidationError, match="belongs in a"):
        GatewaySettings(issuer=ISSUER, audience=AUDIENCE, jwks_file=tmp_path / "j.json",
                        memory_store_id="s0", tenants={"a": tenant(dds, "s1")})
