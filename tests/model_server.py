"""A scripted model service on 127.0.0.1 for HTTP client tests (real sockets, no network).

``ModelServer`` answers POSTs from per-path scripts of :class:`Reply` values (the last reply
repeats) or from a handler function, and records every request it received. It runs a
``ThreadingHTTPServer`` in a daemon thread; ``base_url`` is ``http://127.0.0.1:<port>/v1``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Seen:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any
    at: float


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status, a JSON body (or raw bytes), headers and a delay."""

    status: int = 200
    json: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Handler = Callable[[Seen], Reply]


class ModelServer:
    """See the module docstring."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self._scripts: dict[str, list[Reply]] = {}
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the http.server protocol
                owner._serve(self)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, path: str, *replies: Reply) -> None:
        """Answer ``path`` with ``replies`` in order (the last one repeats)."""
        self._scripts[path] = list(replies)

    def handle(self, path: str, handler: Handler) -> None:
        """Answer ``path`` with ``handler(request)``."""
        self._handlers[path] = handler

    def bodies(self, path: str) -> list[Any]:
        """The JSON bodies received on ``path``, in order."""
        return [r.body for r in self.requests if r.path == path]

    def _next_reply(self, seen: Seen) -> Reply:
        handler = self._handlers.get(seen.path)
        if handler is not None:
            return handler(seen)
        with self._lock:
            script = self._scripts.get(seen.path)
            if not script:
                return Reply(404, {"error": f"no script for {seen.path}"})
            return script.pop(0) if len(script) > 1 else script[0]

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        raw = request.rfile.read(length)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        path = request.path.removeprefix("/v1")
        seen = Seen(path, {k.lower(): v for k, v in request.headers.items()}, body,
                    time.monotonic())
        with self._lock:
            self.requests.append(seen)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            reply = self._next_reply(seen)
            if reply.delay:
                time.sleep(reply.delay)
            payload = reply.raw if reply.raw is not None else json.dumps(reply.json).encode()
            try:
                request.send_response(reply.status)
                request.send_header("Content-Type", "application/json")
                request.send_header("Content-Length", str(len(payload)))
                for key, value in reply.headers.items():
                    request.send_header(key, value)
                request.end_headers()
                request.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)
        finally:
            with self._lock:
                self.in_flight -= 1

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def running_model_server() -> Iterator[ModelServer]:
    """A fresh :class:`ModelServer`, stopped on exit (wrap it in a test module's fixture)."""
    server = ModelServer()
    try:
        yield server
    finally:
        server.close()
