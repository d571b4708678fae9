"""The routes of the development authorization server, on the gateway's own origin.

- ``GET /.well-known/oauth-authorization-server`` (RFC 8414) and
  ``GET /.well-known/openid-configuration`` (the same and the OpenID Connect fields);
- ``GET /oauth/authorize``: the request is checked (client, exact redirect URI, PKCE S256,
  scopes) and the sign-in page shown; an error goes back to the client only once its redirect
  URI is verified, else it is a page; ``POST /oauth/authorize``: the person's choice, with the
  page's CSRF token (also in a ``SameSite=Strict`` cookie), ends in a redirect with the code;
- ``POST /oauth/token``: ``authorization_code`` (with ``code_verifier``) and ``refresh_token``;
- ``POST /oauth/register``: RFC 7591 registration of a public client;
- ``GET /oauth/jwks``: the issuer's public keys.

The discovery, token, registration and key routes answer any origin (CORS, no credentials),
as browser-based MCP clients call them from theirs.

Every route answers only requests addressed to the issuer's own host (the ``Host`` header is
the base URL's): anyone who reaches the server can sign a demo user in, so a web page that
rebinds its own name to this loopback address (DNS rebinding) and then talks to it as its
own origin must be refused, or it would register a client, pick a user on the sign-in page
and read the code and tokens that come back.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2 import OAuth2Error  # type: ignore[import-untyped]
from authlib.oauth2.rfc6749 import scope_to_list  # type: ignore[import-untyped]
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from oam_gateway.dev.authorization_server.models import SignIn
from oam_gateway.dev.authorization_server.requests import json_request, oauth2_request
from oam_gateway.dev.authorization_server.server import (
    AUTHORIZE_PATH,
    JWKS_PATH,
    REGISTER_PATH,
    TOKEN_PATH,
    DevAuthorizationServer,
)
from oam_gateway.dev.authorization_server.sign_in_page import DENY, error_page, sign_in_page
from oam_gateway.dev.authorization_server.store import SIGN_IN_SECONDS

__all__ = ["CSRF_COOKIE", "authorization_server_routes"]

CSRF_COOKIE = "oam_dev_sign_in"
_JSON_ERROR = {"error": "invalid_request", "error_description": "the body is not valid"}

Endpoint = Callable[[Request], Coroutine[Any, Any, Response]]


def _on_host(host: str, endpoint: Endpoint) -> Endpoint:
    """``endpoint`` for requests whose ``Host`` is ``host`` (the issuer's), else a 421."""

    async def checked(request: Request) -> Response:
        if request.headers.get("host", "").lower() != host:
            return PlainTextResponse("this server answers only at its issuer's address",
                                     status_code=421)
        return await endpoint(request)

    return checked


def _open_to_any_origin(endpoint: Endpoint, methods: list[str]) -> ASGIApp:
    """``endpoint`` with CORS for every origin (no cookies, so no credentials to lend)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        response = await endpoint(Request(scope, receive))
        await response(scope, receive, send)

    return CORSMiddleware(app, allow_origins=["*"], allow_methods=methods,
                          allow_headers=["Authorization", "Content-Type",
                                         "MCP-Protocol-Version"])


def authorization_server_routes(server: DevAuthorizationServer) -> list[BaseRoute]:
    """Every route of ``server``, for ``create_app(..., extra_routes=...)``."""
    secure_cookie = server.base.startswith("https://")
    host = urlsplit(server.base).netloc.lower()
    csrf_key = secrets.token_bytes(32)

    def csrf_token(browser: str) -> str:
        """The CSRF token of the browser whose cookie holds ``browser`` (an HMAC of it)."""
        return hmac.new(csrf_key, browser.encode(), "sha256").hexdigest()

    async def metadata(request: Request) -> Response:
        return JSONResponse(server.metadata)

    async def openid_configuration(request: Request) -> Response:
        return JSONResponse(server.openid_configuration)

    async def jwks(request: Request) -> Response:
        return JSONResponse(server.issuer.jwks())

    async def authorize_page(request: Request) -> Response:
        query = request.query_params.multi_items()
        try:
            grant = server.get_consent_grant(
                oauth2_request("GET", str(request.url), request.headers, query))
        except OAuth2Error as error:
            return _authorization_error(server, error)
        except ValueError:  # a description Authlib could not build from the request's text
            return error_page(400, "invalid_request", "the request is malformed")
        browser = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        sign_in = SignIn(request_id=secrets.token_urlsafe(32),
                         csrf_token=csrf_token(browser), query=tuple(query),
                         expires_at=time.time() + SIGN_IN_SECONDS)
        server.store.add_sign_in(sign_in)
        client = grant.request.client
        page = sign_in_page(AUTHORIZE_PATH, sign_in.request_id, sign_in.csrf_token,
                            client.client_name or client.client_id,
                            grant.redirect_uri, scope_to_list(grant.request.scope) or [],
                            list(server.users.values()))
        page.set_cookie(CSRF_COOKIE, browser, max_age=SIGN_IN_SECONDS, path=AUTHORIZE_PATH,
                        secure=secure_cookie, httponly=True, samesite="strict")
        return page

    async def authorize(request: Request) -> Response:
        async with request.form() as form:
            fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        sign_in = server.store.take_sign_in(fields.get("request", ""))
        browser = request.cookies.get(CSRF_COOKIE, "")
        if (sign_in is None or not browser or time.time() >= sign_in.expires_at
                or not hmac.compare_digest(fields.get("csrf_token", ""), sign_in.csrf_token)
                or not hmac.compare_digest(csrf_token(browser), sign_in.csrf_token)):
            return error_page(403, "invalid_request", "this sign-in form expired or did not "
                              "come from this browser's sign-in page; start again")
        oauth_request = oauth2_request("GET", f"{server.base}{AUTHORIZE_PATH}",
                                       request.headers, sign_in.query)
        user = None
        if fields.get("decision") != DENY:
            user = server.users.get(fields.get("user", ""))
            if user is None:
                return error_page(400, "invalid_request", "no such demo user")
        try:
            grant = server.get_consent_grant(oauth_request)
        except OAuth2Error as error:  # the client went away meanwhile
            return _authorization_error(server, error)
        response: Response = server.create_authorization_response(
            oauth_request, grant_user=user, grant=grant)
        response.delete_cookie(CSRF_COOKIE, path=AUTHORIZE_PATH)
        return response

    async def token(request: Request) -> Response:
        async with request.form() as form:
            fields = [(k, v) for k, v in form.multi_items() if isinstance(v, str)]
        # Synchronous on the event loop on purpose: checking a code or refresh token and
        # marking it used happen with no other request in between (single use holds).
        response: Response = server.create_token_response(
            oauth2_request("POST", str(request.url), request.headers,
                           request.query_params.multi_items(), fields))
        return response

    async def register(request: Request) -> Response:
        try:
            data = json.loads(await request.body())
        except ValueError:
            data = None
        if not isinstance(data, dict) or not data:
            return JSONResponse({**_JSON_ERROR, "error": "invalid_client_metadata"}, 400)
        response: Response = server.create_endpoint_response(
            "client_registration",
            json_request("POST", str(request.url), request.headers, data))
        return response

    def on_host(endpoint: Endpoint) -> Endpoint:
        return _on_host(host, endpoint)

    def open_on_host(endpoint: Endpoint, methods: list[str]) -> ASGIApp:
        return _open_to_any_origin(_on_host(host, endpoint), methods)

    return [
        Route("/.well-known/oauth-authorization-server",
              open_on_host(metadata, ["GET"]), methods=["GET", "OPTIONS"]),
        Route("/.well-known/openid-configuration",
              open_on_host(openid_configuration, ["GET"]), methods=["GET", "OPTIONS"]),
        Route(JWKS_PATH, open_on_host(jwks, ["GET"]), methods=["GET", "OPTIONS"]),
        Route(AUTHORIZE_PATH, on_host(authorize_page), methods=["GET"]),
        Route(AUTHORIZE_PATH, on_host(authorize), methods=["POST"]),
        Route(TOKEN_PATH, open_on_host(token, ["POST"]), methods=["POST", "OPTIONS"]),
        Route(REGISTER_PATH, open_on_host(register, ["POST"]),
              methods=["POST", "OPTIONS"]),
    ]


def _authorization_error(server: DevAuthorizationServer, error: Any) -> Response:
    """Back to the client when its redirect URI is verified (with ``state``), else a page."""
    if error.redirect_uri:
        response: Response = server.handle_error_response(None, error)
        server.execute_hook("after_create_authorization_response", response)  # its iss
        return response
    return error_page(error.status_code or 400, str(error.error),
                      str(error.description or ""))
