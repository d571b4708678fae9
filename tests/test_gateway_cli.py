"""``oam-gateway dev`` and ``oam-gateway token``: the printed flow works end to end.

The dev server runs as a subprocess on the test session's embedded database (its data directory
given by ``OAM_EMBEDDED_PGDATA``, so it is reused, not started anew); the shell lines it prints
are run as printed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from oracleagentmemory.devissuer import DevIssuer

GATEWAY = shutil.which("oam-gateway") or str(Path(sys.executable).parent / "oam-gateway")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def data_dir_of(pg_url: str) -> Path:
    """The embedded server's data directory: where its URL's ``passfile`` lives."""
    return Path(parse_qs(urlsplit(pg_url).query)["passfile"][0]).parent


@pytest.fixture
def dev_gateway(pg_url: str, tmp_path: Path) -> Iterator[tuple[str, list[str], Path]]:
    """A running ``oam-gateway dev``: its base URL, the lines it printed, its issuer dir."""
    port = free_port()
    issuer_dir = tmp_path / "issuer"
    env = {**os.environ, "OAM_EMBEDDED_PGDATA": str(data_dir_of(pg_url))}
    process = subprocess.Popen([GATEWAY, "dev", "--port", str(port), "--issuer-dir",
                                str(issuer_dir)], env=env, stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        lines = _wait_until_serving(process, base)
        yield base, lines, issuer_dir
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def _wait_until_serving(process: subprocess.Popen[str], base: str) -> list[str]:
    assert process.stderr is not None
    lines: list[str] = []
    while not any(line.strip().startswith("curl") for line in lines):
        line = process.stderr.readline()
        assert line, f"oam-gateway dev exited early: {''.join(lines)}"
        lines.append(line)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return lines
        except httpx.TransportError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, "dev did not serve"
        time.sleep(0.1)


def test_the_printed_flow_reaches_me(dev_gateway: tuple[str, list[str], Path]) -> None:
    base, lines, _ = dev_gateway
    commands = [line.strip() for line in lines
                if line.strip().startswith(("TOKEN=", "curl -H"))]
    assert len(commands) == 2, lines
    env = {**os.environ, "PATH": f"{Path(GATEWAY).parent}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-euc", " && ".join(commands)], env=env, check=True,
                         capture_output=True, text=True, timeout=60).stdout
    assert json.loads(out) == {"user_name": "dev:alice", "groups": [], "tenant": "default"}
    assert httpx.get(f"{base}/readyz", timeout=10).status_code == 200
    assert httpx.get(f"{base}/v1/me", timeout=10).status_code == 401  # positive control's twin


def test_token_mints_a_token_of_the_dev_issuer(tmp_path: Path) -> None:
    issuer_dir = tmp_path / "issuer"
    out = subprocess.run([GATEWAY, "token", "--user", "dana", "--group", "support",
                          "--issuer-dir", str(issuer_dir)], check=True, capture_output=True,
                         text=True, timeout=60).stdout.strip()
    keys = KeySet.import_key_set(json.loads((issuer_dir / "jwks.json").read_text()))
    claims = jwt.decode(out, keys, algorithms=["RS256"]).claims
    assert claims["sub"] == "dana"
    assert claims["groups"] == ["support"]
    assert claims["aud"] == "oam-gateway-dev"
    assert (issuer_dir / "signing-key.json").stat().st_mode & 0o077 == 0


def test_serve_runs_the_gateway_of_a_settings_file(pg_url: str, tmp_path: Path) -> None:
    issuer = DevIssuer.create(tmp_path / "issuer", "https://issuer.serve.test")
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(issuer.jwks()), encoding="utf-8")
    settings = tmp_path / "gateway.toml"
    settings.write_text(
        'memory_store_id = "serve_test"\nschema_owner = "owner"\n'
        f'issuer = "{issuer.issuer}"\naudience = "serve-aud"\njwks_file = "{jwks}"\n'
        'tenant = "from-file"\n', encoding="utf-8")
    port = free_port()
    env = {**os.environ, "OAM_GATEWAY_DATABASE_URL": pg_url,  # the secrets from the environment
           "OAM_GATEWAY_APP_TOKEN": "oamapp.unused.unused"}
    process = subprocess.Popen([GATEWAY, "serve", "--settings", str(settings), "--port",
                                str(port)], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        token = issuer.token("erin", audience="serve-aud", scope="memory:read")
        me = httpx.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {token}"},
                       timeout=10)
        assert me.json() == {"user_name": "erin", "groups": [], "tenant": "from-file",
                             "subject": "erin", "scopes": ["memory:read"]}
        assert httpx.get(f"{base}/readyz", timeout=10).status_code == 200
        wrong = issuer.token("erin", audience="another")
        assert httpx.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {wrong}"},
                         timeout=10).status_code == 401
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
