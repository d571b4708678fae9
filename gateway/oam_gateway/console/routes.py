"""The console's routes under ``/console``: sign-in, sign-out and the pages.

:class:`Console` signs people in with their tenant's identity provider
(:mod:`~oam_gateway.console.signin`), keeps their session on the server
(:mod:`~oam_gateway.console.sessions`) and answers each page
(:mod:`~oam_gateway.console.views`) with the REST operations run as them
(:mod:`~oam_gateway.console.operations`). A page without a live session (none, signed out,
expired, or its token no longer verifies) sends the browser to the sign-in page; a form
without the session's CSRF token is refused with 403. The session cookie is HttpOnly,
``SameSite=Lax`` and ``Secure`` (with the ``__Host-`` prefix) unless the console is served over
plain HTTP on a loopback address, as ``oam-gateway dev`` does.

Sessions and the sign-ins used are kept where ``console_session_store_uri`` says (this
process, or a Redis every replica shares); while a shared store does not answer, every console
route answers a 503 page with ``Retry-After``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from importlib.resources import files

from authlib.common.security import generate_token  # type: ignore[import-untyped]
from oracleagentmemory.errors import OracleAgentMemoryError
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from oam_gateway.auth.jwks import KeysUnavailable
from oam_gateway.auth.verifier import TokenRejected, TokenVerifier
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.console import pages, views
from oam_gateway.console.headers import secured
from oam_gateway.console.operations import PersonOperations
from oam_gateway.console.rate_limits import ConsoleLimits
from oam_gateway.console.sessions import (
    SESSION_LIFETIME_SECONDS,
    SIGN_IN_SECONDS,
    ConsoleKeys,
    ConsoleSession,
    ConsoleState,
    MemoryState,
    RedisState,
    SessionStore,
    SignIns,
    StateUnavailable,
)
from oam_gateway.console.signin import IdentityProvider, SignInFailed
from oam_gateway.errors.sdk_problems import sdk_problem
from oam_gateway.middleware.bearer import PRINCIPAL_SCOPE_KEY
from oam_gateway.observability.request_events import event_of
from oam_gateway.rest.endpoints import Endpoint, RequestRefused
from oam_gateway.rest.routes import ENDPOINTS
from oam_gateway.tenancy.principal import Principal
from oam_gateway.tenancy.tenants import Tenants

__all__ = ["CONSOLE_PATH", "COOKIE_NAME", "SECURE_COOKIE_NAME", "SIGN_IN_COOKIE", "Console",
           "unshared_console"]

_log = logging.getLogger(__name__)

CONSOLE_PATH = "/console"
COOKIE_NAME = "oam_console"
"""The session cookie over plain HTTP on a loopback address (development)."""
SECURE_COOKIE_NAME = "__Host-oam_console"
"""The session cookie everywhere else: ``Secure``, for the whole host only."""
SIGN_IN_COOKIE = "oam_console_sign_in"
"""The sign-in under way, signed, in the browser that started it (sent only to the
callback)."""
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
_STYLESHEET = files("oam_gateway.console").joinpath("static/console.css").read_bytes()


def _secure(request: Request) -> bool:
    """Whether the session cookie must be ``Secure`` (all but plain HTTP to loopback)."""
    return not (request.url.scheme == "http" and request.url.hostname in _LOOPBACK)


def _cookie_name(request: Request) -> str:
    return SECURE_COOKIE_NAME if _secure(request) else COOKIE_NAME


class Console:
    """The console of every tenant whose settings name a console client."""

    def __init__(self, settings: GatewaySettings, tenants: Tenants, verifier: TokenVerifier,
                 endpoints: tuple[Endpoint, ...] = ENDPOINTS) -> None:
        self._settings = settings
        self._tenants = tenants
        self._verifier = verifier
        self._endpoints = {e.operation: e for e in endpoints}
        self._providers = {
            name: IdentityProvider(settings.issuer, tenant.console_client_id,
                                   tenant.console_client_secret.get_secret_value()
                                   if tenant.console_client_secret else None)
            for name, tenant in settings.tenant_settings().items()
            if tenant.console_client_id is not None}
        keys = ConsoleKeys(settings.console_key())
        state: ConsoleState = (
            MemoryState() if settings.console_session_store_uri == "memory://"
            else RedisState(settings.console_session_store_uri,
                            settings.console_session_store_timeout_seconds))
        self.sessions = SessionStore(state, keys)
        self.sign_ins = SignIns(state, keys)
        self._limits = ConsoleLimits(settings.limits)
        if self._providers and settings.limits.rate_limit_storage_uri != "memory://":
            unshared = unshared_console(settings)
            if unshared:
                _log.warning("the limits are shared through a store, so this gateway has "
                             "replicas, but the console's %s: people signed in on one "
                             "replica are signed out on another", unshared)

    @property
    def routes(self) -> list[BaseRoute]:
        """The console's Starlette routes."""
        p = CONSOLE_PATH
        person = self._person
        return [Route(r.path, _answering_503(r.endpoint), methods=r.methods, name=r.name)
                if isinstance(r, Route) else r for r in self._routes(p, person)]

    def _routes(self, p: str, person: Callable[[str, views.Handler],
                                               Callable[[Request], Awaitable[Response]]]
                ) -> list[BaseRoute]:
        return [
            Route(p, self._landing, methods=["GET"], name="console"),
            Route(p + "/static/console.css", self._stylesheet, methods=["GET"]),
            Route(p + "/sign-in", self._sign_in, methods=["GET"]),
            Route(p + "/callback", self._callback, methods=["GET"], name="console.callback"),
            Route(p + "/sign-out", self._sign_out, methods=["POST"]),
            Route(p + "/memories", person("memories", views.memories_page), methods=["GET"]),
            Route(p + "/memories", person("memories.add", views.add), methods=["POST"]),
            Route(p + "/memories/{memory_id}", person("memory", views.memory_page),
                  methods=["GET"]),
            Route(p + "/memories/{memory_id}", person("memory.edit", views.edit),
                  methods=["POST"]),
            Route(p + "/memories/{memory_id}/delete", person("memory.delete", views.delete),
                  methods=["POST"]),
            Route(p + "/timeline", person("timeline", views.timeline_page), methods=["GET"]),
            Route(p + "/threads", person("threads", views.threads_page), methods=["GET"]),
            Route(p + "/threads/{thread_id}", person("thread", views.thread_page),
                  methods=["GET"]),
            Route(p + "/profile", person("profile", views.profile_page), methods=["GET"]),
            Route(p + "/data", person("data", views.data_page), methods=["GET"]),
            Route(p + "/export", person("export", views.export), methods=["GET"]),
            Route(p + "/erase", person("erase", views.erase), methods=["POST"]),
        ]

    # -- signing in and out ------------------------------------------------------------------

    def _links(self, request: Request) -> pages.Links:
        return pages.Links(request.scope.get("root_path", "") + CONSOLE_PATH)

    def _signed_out(self, request: Request, notice: str = "", status: int = 200) -> Response:
        body = pages.signed_out_page(self._links(request), sorted(self._providers), notice)
        response = HTMLResponse(body, status_code=status)
        if _cookie_name(request) in request.cookies:
            response.delete_cookie(_cookie_name(request), path="/", secure=_secure(request),
                                   httponly=True, samesite="lax")
        return secured(response)

    def _failure(self, request: Request, status: int, detail: str) -> Response:
        return secured(HTMLResponse(pages.error_page(self._links(request), status, detail,
                                                     None), status_code=status))

    async def _landing(self, request: Request) -> Response:
        if await self._visitor(request) is not None:
            return secured(RedirectResponse(self._links(request).to("/memories"), 303))
        return self._signed_out(request)

    async def _stylesheet(self, request: Request) -> Response:
        return secured(Response(_STYLESHEET, media_type="text/css"), cacheable=True)

    def _too_many(self, request: Request, retry_after: int, detail: str) -> Response:
        response = self._failure(request, 429, f"{detail}: try again in {retry_after} "
                                 f"seconds.")
        response.headers["Retry-After"] = str(retry_after)
        return response

    async def _sign_in(self, request: Request) -> Response:
        event_of(request).operation = "console.sign-in"
        retry_after = await self._limits.sign_in(request.client.host if request.client
                                                 else None)
        if retry_after is not None:
            return self._too_many(request, retry_after, "Too many sign-ins from your address")
        tenant = request.query_params.get("tenant")
        if tenant is None and len(self._providers) == 1:
            [tenant] = self._providers
        if tenant is None or tenant not in self._providers:
            return self._failure(request, 404, "The console is not set up for that tenant.")
        provider = self._providers[tenant]
        verifier, nonce = generate_token(64), generate_token(32)
        pending, cookie = self.sign_ins.start(tenant, verifier, nonce)
        try:
            url = await provider.authorization_url(self._redirect_uri(request), pending.state,
                                                   verifier, nonce)
        except SignInFailed as failed:
            _log.warning("console sign-in for tenant %s: %s", tenant, failed)
            return self._failure(request, 502, "The identity provider cannot be reached.")
        response = RedirectResponse(url, status_code=303)
        response.set_cookie(SIGN_IN_COOKIE, cookie, max_age=SIGN_IN_SECONDS,
                            path=CONSOLE_PATH + "/callback", secure=_secure(request),
                            httponly=True, samesite="lax")
        return secured(response)

    def _redirect_uri(self, request: Request) -> str:
        return str(request.url_for("console.callback"))

    async def _callback(self, request: Request) -> Response:
        event_of(request).operation = "console.callback"
        pending = await self.sign_ins.take(request.query_params.get("state"),
                                           request.cookies.get(SIGN_IN_COOKIE))
        if pending is None or pending.tenant not in self._providers:
            return self._signed_out(request, "That sign-in has expired, was already used or "
                                    "was started in another browser: sign in again.",
                                    status=400)
        provider = self._providers[pending.tenant]
        try:
            from_issuer = await provider.answered_by_issuer(request.query_params.get("iss"))
        except SignInFailed:
            from_issuer = False
        if not from_issuer:
            return self._signed_out(request, "That answer did not come from your identity "
                                    "provider: sign in again.", status=400)
        code = request.query_params.get("code")
        if not code:
            return self._signed_out(request, "The identity provider did not sign you in.",
                                    status=401)
        try:
            signed_in = await provider.exchange(
                self._redirect_uri(request), code, pending.code_verifier, pending.nonce)
            principal = await self._verifier.verify(signed_in.access_token)
        except SignInFailed as failed:
            _log.warning("console sign-in for tenant %s: %s", pending.tenant, failed)
            return self._failure(request, 502, "The identity provider did not sign you in.")
        except (TokenRejected, KeysUnavailable):
            return self._signed_out(request, "The identity provider's token was not accepted.",
                                    status=401)
        if signed_in.identity.get(self._settings.user_claim) != principal.subject:
            return self._signed_out(request, "The identity provider's tokens name different "
                                    "people.", status=403)
        if principal.tenant != pending.tenant:
            return self._signed_out(request, "That account belongs to another tenant.",
                                    status=403)
        session_id = await self.sessions.open(ConsoleSession(pending.tenant,
                                                             signed_in.access_token))
        response = RedirectResponse(self._links(request).to("/memories"), status_code=303)
        response.set_cookie(_cookie_name(request), session_id, max_age=SESSION_LIFETIME_SECONDS,
                            path="/", secure=_secure(request), httponly=True, samesite="lax")
        response.delete_cookie(SIGN_IN_COOKIE, path=CONSOLE_PATH + "/callback",
                               secure=_secure(request), httponly=True, samesite="lax")
        return secured(response)

    async def _sign_out(self, request: Request) -> Response:
        event_of(request).operation = "console.sign-out"
        session_id = request.cookies.get(_cookie_name(request))
        session = await self.sessions.get(session_id)
        if session is not None:
            form = await request.form()
            if not session.csrf_matches(_text(form.get(pages.CSRF_FIELD))):
                return self._failure(request, 403, "The form has expired: reload the page.")
            await self.sessions.close(session_id)
        return self._signed_out(request, "You are signed out.")

    # -- the signed-in pages -----------------------------------------------------------------

    async def _visitor(self, request: Request) -> tuple[ConsoleSession, Principal] | None:
        """The session and verified principal of ``request``; ``None`` (the session closed)
        when it has none or its token no longer verifies."""
        session_id = request.cookies.get(_cookie_name(request))
        session = await self.sessions.get(session_id)
        if session is None:
            return None
        try:
            principal = await self._verifier.verify(session.access_token)
        except (TokenRejected, KeysUnavailable):
            principal = None
        if principal is None or principal.tenant != session.tenant:
            await self.sessions.close(session_id)
            return None
        return session, principal

    def _person(self, name: str, handler: views.Handler
                ) -> Callable[[Request], Awaitable[Response]]:
        """The route of a page for signed-in people only; forms must carry the CSRF token."""

        async def handle(request: Request) -> Response:
            event_of(request).operation = f"console.{name}"
            links = self._links(request)
            visitor = await self._visitor(request)
            if visitor is None:
                if request.method == "GET":
                    return self._signed_out(request, "Sign in to see your memories (a "
                                            "session ends after eight hours, or when its "
                                            "sign-in expires).", status=401)
                return self._failure(request, 403, "You are not signed in.")
            session, principal = visitor
            request.scope[PRINCIPAL_SCOPE_KEY] = principal  # the audit event names them
            retry_after = await self._limits.person(principal)
            if retry_after is not None:
                return self._too_many(request, retry_after, "Too many requests")
            form = None
            if request.method == "POST":
                form = await request.form()
                if not session.csrf_matches(_text(form.get(pages.CSRF_FIELD))):
                    return self._failure(request, 403, "The form has expired: reload the page.")
            operations = PersonOperations(request, principal, self._endpoints, self._tenants,
                                          self._settings.limits, self._settings.require_scopes)
            visit = views.Visit(request, links, session, principal, operations, form)
            try:
                response = await handler(visit)
            except RequestRefused as refused:
                response = visit.page(pages.error_page(links, refused.status, refused.detail,
                                                       session.csrf_token), refused.status)
            except OracleAgentMemoryError as error:
                answer = sdk_problem(error, request.url.path)
                problem = json.loads(bytes(answer.body))
                status = int(problem["status"])
                response = visit.page(pages.error_page(links, status, str(problem["detail"]),
                                                       session.csrf_token), status)
                if "retry-after" in answer.headers:  # the database is away: when to retry
                    response.headers["Retry-After"] = answer.headers["retry-after"]
            except Exception as error:  # a page, never a stack trace
                _log.error("unhandled %s on console page %s", type(error).__name__, name)
                response = visit.page(pages.error_page(links, 500, "The console failed to "
                                                       "answer.", session.csrf_token), 500)
            return secured(response)

        return handle


def unshared_console(settings: GatewaySettings) -> str:
    """What of the console's state each process keeps to itself under ``settings`` (empty
    when replicas share it all): said in the WARNING of a gateway with replicas."""
    missing = []
    if settings.console_cookie_secret is None and settings.console_cookie_secret_file is None:
        missing.append("sign-in key is made per process (set console_cookie_secret)")
    if settings.console_session_store_uri == "memory://":
        missing.append("sessions are kept per process (set console_session_store_uri to the "
                       "shared Redis)")
    return " and its ".join(missing)


_STORE_AWAY_SECONDS = 5


def _answering_503(endpoint: Callable[[Request], Awaitable[Response]]
                   ) -> Callable[[Request], Awaitable[Response]]:
    """``endpoint``, answering a 503 page (with ``Retry-After``) while the shared session
    store does not answer."""

    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except StateUnavailable as away:
            _log.warning("console %s: %s", request.url.path, away)
            links = pages.Links(request.scope.get("root_path", "") + CONSOLE_PATH)
            response = HTMLResponse(pages.error_page(
                links, 503, "The console cannot reach its session store just now: try again "
                "in a few seconds.", None), status_code=503)
            response.headers["Retry-After"] = str(_STORE_AWAY_SECONDS)
            return secured(response)

    return answer


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
