"""A real ``redis-server`` for tests: on a free loopback port, no persistence, its own directory.

:func:`redis_server` starts Debian's ``redis-server`` (``.ci/run`` installs it) and stops it at
the end of the block; :meth:`RedisServer.stop` and :meth:`RedisServer.start` stop it and start
it again on the same port mid-test (a Redis outage and its end).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from local_ports import closed_port

__all__ = ["REDIS_SERVER", "RedisServer", "redis_server"]

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
START_SECONDS = 20.0


class RedisServer:
    """A ``redis-server`` process on 127.0.0.1:``port`` writing nothing but its log in
    ``directory``."""

    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The ``redis://`` URL of its database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server; return once it answers ``PING``."""
        assert self._process is None, "already running"
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", "--dir", str(self.directory),
                   "--logfile", str(self.directory / "redis.log"), "--daemonize", "no"]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_SECONDS
        while not self.answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                log = self.directory / "redis.log"
                raise RuntimeError("redis-server did not start: " + (
                    log.read_text(encoding="utf-8")[-2000:] if log.exists() else "no log"))
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and wait for it to exit."""
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def answers(self) -> bool:
        """Whether the server answers ``PING`` with ``+PONG`` now."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False


@contextmanager
def redis_server(directory: Path) -> Iterator[RedisServer]:
    """A running :class:`RedisServer` in ``directory`` on a free port, stopped at the end."""
    directory.mkdir(parents=True, exist_ok=True)
    server = RedisServer(directory, closed_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
