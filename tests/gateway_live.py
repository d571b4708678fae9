"""A running gateway over a protected store, for tests that call it over real HTTP.

:func:`serve` runs an app with uvicorn (lifespan on) in a thread on a free loopback port
(``gateway_harness.live_server``).
:class:`LiveGateway` is a gateway for one protected store of the Deep Data Security test
environment (``tests/dds.py``): tenant ``acme``, callers are users of the test identity provider
vouched for by application ``gw``, the hashing embedder; :meth:`LiveGateway.client` is an
``httpx`` client carrying a token for a user.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
from dds import AUDIENCE, GROUP, IDP, ISSUER, DdsEnvironment
from gateway_harness import live_server
from oam_gateway.app import create_app
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.errors.problems import PROBLEM_CONTENT_TYPE, problem_type
from psycopg import sql
from pydantic import SecretStr
from starlette.types import ASGIApp

VECTOR_DIM = 64
BOTH_SCOPES = "memory:read memory:write"


@contextmanager
def serve(app: ASGIApp) -> Iterator[str]:
    """Serve ``app`` (lifespan on, as in production) on a free loopback port; yield its URL."""
    with live_server(app) as url:
        yield url


def gateway_settings(dds: DdsEnvironment, store_id: str, jwks_file: Path,
                     **overrides: Any) -> GatewaySettings:
    """Settings of a one-tenant gateway over the protected store ``store_id``."""
    values: dict[str, Any] = {
        "database_url": SecretStr(dds.runtime_url), "memory_store_id": store_id,
        "schema_owner": "oam_test_owner", "app_token": SecretStr(dds.token),
        "tenant": "acme", "issuer": ISSUER, "audience": AUDIENCE, "jwks_file": jwks_file,
        "identity_provider": IDP, "embedder": "hashing", "embedding_dimension": VECTOR_DIM,
        "pool_max_size": 4}
    values.update(overrides)
    return GatewaySettings(**values)


@dataclass
class LiveGateway:
    """A gateway serving one protected store at :attr:`url`."""

    url: str
    dds: DdsEnvironment
    store_id: str

    def token(self, user: str, scope: str = BOTH_SCOPES, **claims: Any) -> str:
        """A token of the test identity provider for ``user`` (in the group that holds the
        store's roles)."""
        return self.dds.issuer.token(user, audience=AUDIENCE, groups=[GROUP], scope=scope,
                                     **claims)

    def client(self, user: str, scope: str = BOTH_SCOPES) -> httpx.Client:
        """An HTTP client of the gateway carrying ``user``'s token."""
        return httpx.Client(base_url=self.url, timeout=30, headers={
            "Authorization": f"Bearer {self.token(user, scope)}"})

    def owner_rows(self, record_type: str) -> list[Any]:
        """Every row of ``record_type`` in the store, read by its owner (no row security)."""
        with self.dds.owner_store(self.store_id) as store:
            return list(store.list(record_type, limit=None))


@contextmanager
def live_gateway(dds: DdsEnvironment, tmp_path: Path, **overrides: Any) -> Iterator[LiveGateway]:
    """A fresh protected store and a gateway serving it."""
    store_id = dds.new_store(vector_dim=VECTOR_DIM)
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps(dds.issuer.jwks()), encoding="utf-8")
    app = create_app(gateway_settings(dds, store_id, jwks_file, **overrides))
    with serve(app) as url:
        yield LiveGateway(url, dds, store_id)


@contextmanager
def memory_row_locked(gateway: LiveGateway, memory_id: str) -> Iterator[None]:
    """The store's owner holds a row lock on memory ``memory_id`` (from a thread of its own)
    from the start of the block until its end; requests that write the row wait meanwhile."""
    table = sql.Identifier("oam_test_owner", f"{gateway.store_id}_memory")
    locked, release = threading.Event(), threading.Event()

    def hold_the_row() -> None:
        with psycopg.connect(gateway.dds.owner_url) as conn, conn.transaction():
            conn.execute(sql.SQL("SELECT 1 FROM {} WHERE id = %s FOR UPDATE").format(table),
                         [memory_id])
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    try:
        assert locked.wait(30), "the owner could not lock the row"
        yield
    finally:
        release.set()
        holder.join(30)


def problem(response: httpx.Response, status: int, slug: str) -> dict[str, Any]:
    """The problem document of ``response``, checked to be a ``status`` of type ``slug``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
    body: dict[str, Any] = response.json()
    assert body["type"] == problem_type(slug), body
    return body
