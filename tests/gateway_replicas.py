"""Gateway replicas for tests: ``oam-gateway serve`` processes over one protected store.

:func:`gateway_replicas` writes one settings file (the tenant ``acme`` of ``tests/dds.py``'s
protected store, the test identity provider's keys, the hashing embedder; the secrets in the
environment, as deployed) and starts ``count`` gateway processes with it, each on its own free
loopback port, as replicas behind a load balancer would run: they share the database and, when
the settings name one, the rate-limit store, and nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from dds import AUDIENCE, GROUP, IDP, ISSUER, OWNER, DdsEnvironment
from gateway_live import BOTH_SCOPES, VECTOR_DIM
from local_ports import closed_port

__all__ = ["Replica", "bearer", "gateway_replicas"]

START_SECONDS = 120.0


@dataclass(frozen=True)
class Replica:
    """A running gateway process: its URL, process id and log (its standard error)."""

    url: str
    pid: int
    log_path: Path

    def log(self) -> str:
        """What the process has written to standard error so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def _settings_file(dds: DdsEnvironment, store_id: str, directory: Path,
                   limits: dict[str, str], top: dict[str, str]) -> Path:
    jwks = directory / "jwks.json"
    jwks.write_text(json.dumps(dds.issuer.jwks()), encoding="utf-8")
    lines = ['tenant = "acme"', f'memory_store_id = "{store_id}"', f'schema_owner = "{OWNER}"',
             f'issuer = "{ISSUER}"', f'audience = "{AUDIENCE}"', f'jwks_file = "{jwks}"',
             f'identity_provider = "{IDP}"', 'embedder = "hashing"',
             f"embedding_dimension = {VECTOR_DIM}", "pool_max_size = 4",
             *(f"{key} = {json.dumps(value)}" for key, value in top.items()), "[limits]",
             *(f"{key} = {json.dumps(value)}" for key, value in limits.items()), ""]
    path = directory / "gateway.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@contextmanager
def _replica(command: list[str], env: dict[str, str], port: int,
             log_path: Path) -> Iterator[Replica]:
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen([*command, "--port", str(port)], env=env,
                                   stdout=subprocess.DEVNULL, stderr=log)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_SECONDS
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert process.poll() is None and time.monotonic() < deadline, (
                    f"the gateway did not start: {log_path.read_text(encoding='utf-8')[-2000:]}")
                time.sleep(0.1)
            yield Replica(url, process.pid, log_path)
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)


@contextmanager
def gateway_replicas(dds: DdsEnvironment, store_id: str, directory: Path, count: int = 2,
                     limits: dict[str, str] | None = None, *,
                     settings: dict[str, str] | None = None,
                     workers: int = 1) -> Iterator[list[Replica]]:
    """``count`` gateway processes (each of ``workers`` worker processes) over the protected
    store ``store_id``, with the ``[limits]`` settings ``limits`` and the top-level
    ``settings``; stopped at the end of the block."""
    directory.mkdir(parents=True, exist_ok=True)
    settings_file = _settings_file(dds, store_id, directory, limits or {}, settings or {})
    command = [str(Path(sys.executable).with_name("oam-gateway")), "serve", "--settings",
               str(settings_file), "--host", "127.0.0.1", "--workers", str(workers)]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OAM_GATEWAY_")},
           "OAM_GATEWAY_DATABASE_URL": dds.runtime_url, "OAM_GATEWAY_APP_TOKEN": dds.token}
    with ExitStack() as stack:
        replicas = []
        for _ in range(count):
            port = closed_port()
            replicas.append(stack.enter_context(
                _replica(command, env, port, directory / f"replica-{port}.log")))
        yield replicas


def bearer(dds: DdsEnvironment, user: str, scope: str = BOTH_SCOPES) -> dict[str, str]:
    """The ``Authorization`` header of a token of the test identity provider for ``user``."""
    token = dds.issuer.token(user, audience=AUDIENCE, groups=[GROUP], scope=scope)
    return {"Authorization": f"Bearer {token}"}
