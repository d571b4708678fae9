"""A server process for a bench: started on a free loopback port, waited for until its
``/healthz`` answers, and stopped when the block ends (its stderr kept in a log file)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["ServedProcess", "free_port", "served_process"]

START_SECONDS = 120.0
"""How long a server may take to answer its first ``/healthz``."""


@dataclass(frozen=True)
class ServedProcess:
    """A running server: its base URL, its process id and its log file."""

    base: str
    pid: int
    log_path: Path


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served_process(name: str, command: list[str], port: int, log_path: Path,
                   env: dict[str, str] | None = None) -> Iterator[ServedProcess]:
    """Run ``command`` (which serves on ``port``) with stderr in ``log_path``; yield once its
    ``/healthz`` answers 200. Raises ``RuntimeError`` with the log's end if it exits or does
    not answer within :data:`START_SECONDS`."""
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen(command, env=env or {**os.environ},
                                   stdout=subprocess.DEVNULL, stderr=log, text=True)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_SECONDS
            while True:
                try:
                    if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the {name} did not start: "
                                       f"{log_path.read_text(encoding='utf-8')[-2000:]}")
                time.sleep(0.1)
            yield ServedProcess(base, process.pid, log_path)
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
