"""An honest fake of an identity provider's OAuth 2.0 token endpoint (OCI IAM, Entra ID).

A real HTTP server on loopback implementing the client-credentials grant (RFC 6749, 4.4) with
HTTP Basic client authentication (2.3.1), answering 5.1 token responses (JWTs with ``exp``) and
5.2 error responses. Tests of the database access token provider talk HTTP to it.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

CLIENT_ID = "gateway-client"
CLIENT_SECRET = "s3cr3t-Client-Value-7f2c"  # noqa: S105  (the fake provider's secret)
SCOPE = "https://example.com/memorypdb/.default"


class FakeIdentityProvider:
    """A client-credentials token endpoint on 127.0.0.1 (a thread of this process)."""

    def __init__(self, expires_in: int | None = 3600) -> None:
        self.expires_in = expires_in
        self.issued: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.fail_next = 0
        """Answer this many next requests with HTTP 503 (a provider outage)."""
        self.delay_seconds = 0.0
        self.clock_skew_seconds = 0
        """How far the tokens' ``exp`` is behind ``expires_in`` (a provider clock ahead)."""
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  (http.server's name)
                provider._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def token_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/oauth2/v2.0/token"

    def __enter__(self) -> FakeIdentityProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(request.rfile.read(length).decode()).items()}
        with self._lock:
            self.requests.append({"form": form, "authorization": request.headers.get(
                "Authorization", "")})
            failing = self.fail_next > 0
            self.fail_next -= 1 if failing else 0
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        if failing:
            return self._reply(request, 503, {"error": "temporarily_unavailable"})
        client_id, secret = basic_credentials(request.headers.get("Authorization", ""))
        if client_id != CLIENT_ID or secret != CLIENT_SECRET:
            # RFC 6749 5.2: invalid_client with 401; echo the (wrong) secret in the description,
            # as a careless provider might, to prove the provider never repeats provider text.
            return self._reply(request, 401, {"error": "invalid_client",
                                              "error_description": f"bad secret {secret}"})
        if form.get("grant_type") != "client_credentials":
            return self._reply(request, 400, {"error": "unsupported_grant_type"})
        if form.get("scope") != SCOPE:
            return self._reply(request, 400, {"error": "invalid_scope"})
        with self._lock:
            token = unsigned_jwt({"sub": CLIENT_ID, "aud": "memorypdb", "n": len(self.issued),
                          "exp": int(time.time()) + (self.expires_in or 3600)
                          - self.clock_skew_seconds})
            self.issued.append(token)
        body: dict[str, Any] = {"access_token": token, "token_type": "Bearer"}
        if self.expires_in is not None:
            body["expires_in"] = self.expires_in
        self._reply(request, 200, body)

    @staticmethod
    def _reply(request: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.send_header("Cache-Control", "no-store")
        request.end_headers()
        request.wfile.write(data)


def basic_credentials(header: str) -> tuple[str, str]:
    if not header.startswith("Basic "):
        return "", ""
    user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    return unquote(user), unquote(password)  # RFC 6749 2.3.1: form-urlencoded, then Basic


def unsigned_jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"
