"""Helpers of the gateway's middleware tests: a live uvicorn server, settings, tokens.

The app runs under uvicorn in a thread on a free loopback port (lifespan on, as in
production) and is called with httpx over real HTTP. Tokens are RS256 JWTs signed by the
SDK's development issuer, whose public key is the gateway's JWKS file.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
import uvicorn
from joserfc import jwt
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.middleware.request_log import AUDIT_LOGGER_NAME
from oracleagentmemory.devissuer import DevIssuer
from pydantic import SecretStr
from starlette.types import ASGIApp

ISSUER = "https://issuer.middleware.test"
AUDIENCE = "oam-gateway-middleware-test"
TENANT = "acme"
IDENTITY_PROVIDER = "testidp"
ALL_SCOPES = "memory:read memory:write"


@contextmanager
def live_server(app: ASGIApp, *, lifespan: Literal["on", "off"] = "on") -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread on a free loopback port; yield its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, lifespan=lifespan, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def gateway_settings(jwks_file: Path, database_url: str, **overrides: Any) -> GatewaySettings:
    """One-tenant settings over ``database_url`` with the development issuer's keys."""
    values: dict[str, Any] = {
        "database_url": SecretStr(database_url), "memory_store_id": "gw_mw_test",
        "schema_owner": "oam_gw_mw_test", "issuer": ISSUER, "audience": AUDIENCE,
        "jwks_file": jwks_file, "identity_provider": IDENTITY_PROVIDER, "tenant": TENANT,
        "app_token": SecretStr("middleware-test-application-token")}
    values.update(overrides)
    return GatewaySettings(**values)


def make_issuer(directory: Path) -> tuple[DevIssuer, Path]:
    """A development issuer and the JWKS file holding its public key."""
    issuer = DevIssuer.create(directory, ISSUER)
    jwks_file = directory / "jwks.json"
    jwks_file.write_text(json.dumps({"keys": [issuer.key.as_dict(private=False)]}),
                         encoding="utf-8")
    return issuer, jwks_file


def token_for(issuer: DevIssuer, subject: str, scope: str = ALL_SCOPES) -> str:
    """A valid RS256 access token of ``subject`` for five minutes."""
    now = int(time.time())
    claims = {"iss": issuer.issuer, "aud": AUDIENCE, "sub": subject, "groups": ["support"],
              "scope": scope, "iat": now, "nbf": now, "exp": now + 300}
    return jwt.encode({"alg": "RS256", "typ": "JWT", "kid": issuer.key.kid}, claims,
                      issuer.key, algorithms=["RS256"])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def audit_events(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """Every audit event captured so far, parsed."""
    return [json.loads(record.getMessage()) for record in caplog.records
            if record.name == AUDIT_LOGGER_NAME]


def wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Wait until ``condition()`` holds (the server logs after the response is sent)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.01)


def capture_audit(caplog: pytest.LogCaptureFixture) -> None:
    """Capture the audit logger's INFO records."""
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER_NAME)
