"""A Docker Engine API on a Unix socket that answers like a daemon whose registry refuses a pull.

An honest fake of the daemon's HTTP interface (Docker Engine API, the part testcontainers and
docker-py use before a container exists): ``GET /version`` and ``/_ping`` answer as a daemon
does, an image inspect answers 404 "No such image", and ``POST /images/create`` (the pull)
answers 404 "pull access denied", as the daemon does for an image its registry does not serve.
Anything else answers 500, so a client that goes further than a failed pull shows up. Every
request is recorded. Point ``DOCKER_HOST`` at :attr:`FakeDockerApi.url`.
"""

from __future__ import annotations

import json
import socketserver
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

API_VERSION = "1.45"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]] = field(default_factory=dict)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    requests: list[Request]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    # BaseHTTPRequestHandler asks for a (host, port) client address; a Unix socket has none.
    def address_string(self) -> str:
        return "unix"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base's name)
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        parts = urlsplit(self.path)
        path = parts.path
        if path.startswith("/v1."):
            path = "/" + path.split("/", 2)[2]
        self.server.requests.append(Request(self.command, path, parse_qs(parts.query)))
        if path == "/version":
            self._send(200, {"ApiVersion": API_VERSION, "MinAPIVersion": "1.24",
                             "Version": "fake", "Os": "linux", "Arch": "amd64"})
        elif path == "/_ping":
            self._send(200, "OK")
        elif path.startswith("/images/") and path.endswith("/json"):
            name = path[len("/images/"):-len("/json")]
            self._send(404, {"message": f"No such image: {name}"})
        elif path == "/images/create":
            image = parse_qs(parts.query).get("fromImage", ["?"])[0]
            self._send(404, {"message": f"pull access denied for {image}, repository does not "
                                        "exist or may require 'docker login'"})
        else:
            self._send(500, {"message": f"fake Docker API: {self.command} {path} not served"})

    def _send(self, status: int, body: object) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type",
                         "text/plain" if isinstance(body, str) else "application/json")
        self.send_header("Api-Version", API_VERSION)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


class FakeDockerApi:
    """The fake daemon, serving on a temporary socket while the ``with`` block runs."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="oam-fake-docker-")
        self.socket = Path(self._dir.name) / "docker.sock"
        self._server = _Server(str(self.socket), _Handler)
        self._server.requests = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    @property
    def requests(self) -> list[Request]:
        return list(self._server.requests)

    def __enter__(self) -> FakeDockerApi:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._dir.cleanup()
