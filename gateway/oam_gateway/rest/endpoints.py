"""Declared endpoints: each route's method, path, scope, body and response models in one place.

The app builds its Starlette routes and its OpenAPI document from the same
:class:`Endpoint` declarations, so the two cannot disagree. A handler receives a :class:`Call`:
the verified principal, the tenant's runtime, the validated body and query, and
:meth:`Call.sdk`, which runs SDK work inside the caller's end-user security context.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from oam_gateway.config.limits import LimitSettings
from oam_gateway.middleware.bearer import principal_of
from oam_gateway.observability.request_events import RequestEvent, event_of
from oam_gateway.observability.telemetry import operation_span
from oam_gateway.rest.models import OwnedBody
from oam_gateway.tenancy.database_wait import database_wait
from oam_gateway.tenancy.principal import Principal
from oam_gateway.tenancy.tenant_runtime import Runtime
from oam_gateway.tenancy.tenants import Tenants
from oam_gateway.tenancy.unstorable_text import describe, unstorable_character

__all__ = ["JSON_MEDIA_TYPE", "MAX_BODY_DEPTH", "Call", "Endpoint", "GivenCall", "QueryParameter",
           "RequestRefused", "describe_validation", "json_data_response", "json_response",
           "refuse_unstorable_text", "route_handler", "validated_body"]

T = TypeVar("T")
B = TypeVar("B", bound=BaseModel)

JSON_MEDIA_TYPE = "application/json"
"""The media type of every request and response body (errors: ``application/problem+json``)."""

MAX_BODY_DEPTH = 100
"""Request bodies nesting objects and arrays deeper than this answer 400: deeper JSON would
exhaust the recursion of the parser, the SDK or the database (a 500) long before it is useful.
"""


class RequestRefused(Exception):
    """The gateway refuses the request before the SDK sees it (a 4xx problem)."""

    def __init__(self, status: int, slug: str, detail: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail
        self.headers = headers


@dataclass(frozen=True)
class Endpoint:
    """One REST operation."""

    method: str
    path: str
    operation: str
    """The stable name of the operation (audit events, spans, OpenAPI ``operationId``)."""
    summary: str
    handler: Callable[[Call], Awaitable[Response]]
    scope: str
    body: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    status: int = 200
    query: tuple[QueryParameter, ...] = ()
    response_media_type: str = "application/json"
    description: str = ""
    """What a caller should know beyond the summary (OpenAPI ``description``)."""


@dataclass(frozen=True)
class QueryParameter:
    """A query parameter of an endpoint (for validation and for OpenAPI)."""

    name: str
    description: str
    kind: type = str


@dataclass
class Call:
    """One request to a declared endpoint."""

    request: Request
    principal: Principal
    runtime: Runtime
    limits: LimitSettings
    event: RequestEvent
    _body: Any = field(default=None)

    def body(self, model: type[B]) -> B:
        """The request body validated as ``model`` (a 400 problem when it is not)."""
        if not isinstance(self._body, model):
            raise RequestRefused(500, "internal-error", "the endpoint declares another body")
        return self._body

    def path(self, name: str) -> str:
        """The path parameter ``name``."""
        return str(self.request.path_params[name])

    def query(self, name: str) -> str | None:
        """The query parameter ``name`` (``None`` when absent)."""
        return self.request.query_params.get(name)

    async def sdk(self, work: Callable[[OracleAgentMemory], T]) -> T:
        """Run ``work(client)`` inside the caller's end-user context, the tenant engine's way
        (PostgreSQL: on the event loop with its database waits awaited there; Oracle: in a
        worker thread). Waiting for an operation slot and for pooled connections
        takes at most the tenant's ``pool_timeout_seconds`` in all (a 503 past it)."""
        context = await self.runtime.context_for(self.principal)
        with operation_span(self.event.operation or "unknown"):
            async with database_wait(self.runtime.operation_slots,
                                     self.runtime.settings.pool_timeout_seconds), \
                    OracleMemoryEndUserSecurityContext(context):
                client = await self.runtime.client()
                return await self.runtime.run(work, client)


@dataclass
class GivenCall(Call):
    """A :class:`Call` whose path and query parameters are given by its caller (an MCP tool's
    arguments, a console page's values) rather than read from the HTTP request."""

    path_values: Mapping[str, str] = field(default_factory=dict)
    query_values: Mapping[str, Any] = field(default_factory=dict)

    def path(self, name: str) -> str:
        """The given value of the path parameter ``name``."""
        return self.path_values[name]

    def query(self, name: str) -> str | None:
        """The given value of the query parameter ``name`` as text (``None`` when unset)."""
        value = self.query_values.get(name)
        return None if value is None else str(value)


def json_response(model: BaseModel, status: int = 200) -> Response:
    """``model`` as a JSON response (``None`` fields left out), serialised by pydantic in one
    call (no intermediate Python objects)."""
    return Response(model.model_dump_json(exclude_none=True), status_code=status,
                    media_type="application/json")


def json_data_response(data: Any, status: int = 200) -> Response:
    """``data`` (JSON-ready values, such as :func:`~oam_gateway.rest.views.record_data` gives)
    as a JSON response, serialised as pydantic serialises a model's values."""
    return Response(to_json(data), status_code=status, media_type="application/json")


def route_handler(endpoint: Endpoint, tenants: Tenants, limits: LimitSettings,
                  enforce_scopes: bool) -> ASGIApp:
    """The ASGI app of ``endpoint``'s Starlette route: scope check, body, ``user_id`` check,
    handler, then its response sent.

    An ASGI app rather than a request function, which Starlette would wrap per request in its
    own exception handling (a request, three closures, two coroutines): the gateway's
    exception middleware, which holds the same handlers, answers what the handler raises.
    """

    async def handle(request: Request) -> Response:
        principal = principal_of(request)
        event = event_of(request)
        event.operation = endpoint.operation
        if not principal.may(endpoint.scope, enforced=enforce_scopes):
            raise RequestRefused(
                403, "insufficient-scope", f"this operation needs the scope {endpoint.scope!r}",
                headers={"WWW-Authenticate": f'Bearer realm="oam-gateway", '
                         f'error="insufficient_scope", scope="{endpoint.scope}"'})
        has_query = bool(request.scope.get("query_string"))  # none: nothing to parse or check
        if has_query:
            _check_query_user(request, principal)
        refuse_unstorable_text(request.path_params, "the path")
        if has_query:
            refuse_unstorable_text(request.query_params.multi_items(), "the query")
        body = await _parsed_body(request, endpoint.body)
        if body is not None:
            _check_owned(body, principal)
        call = Call(request, principal, tenants[principal.tenant], limits, event, body)
        return await endpoint.handler(call)

    return _RouteApp(handle)


class _RouteApp:
    """A request handler as an ASGI app (an object, not a function, which Starlette's
    ``Route`` would wrap in its own request handling)."""

    __slots__ = ("_handle",)

    def __init__(self, handle: Callable[[Request], Awaitable[Response]]) -> None:
        self._handle = handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self._handle(Request(scope, receive))
        await response(scope, receive, send)


async def _parsed_body(request: Request, model: type[BaseModel] | None) -> BaseModel | None:
    if model is None:
        return None
    raw = await request.body()
    if not raw:
        raise RequestRefused(400, "invalid-request", "the request needs a JSON body")
    _refuse_other_media_types(request)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise RequestRefused(400, "invalid-request", "the body is not valid JSON") from None
    except RecursionError:
        data = None  # deeper than the parser goes: refused just below
    if data is None or _json_depth(data) > MAX_BODY_DEPTH:
        raise RequestRefused(400, "invalid-request",
                             f"the body nests deeper than {MAX_BODY_DEPTH} levels")
    refuse_unstorable_text(data, "the body")
    return validated_body(model, data)


def validated_body(model: type[B], data: Any) -> B:
    """``data`` (a decoded body, or a tool call's arguments) validated as ``model``; a 400
    problem naming each broken rule when it is not valid."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise RequestRefused(400, "invalid-request", describe_validation(error)) from None


def _is_json_media_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` names JSON: ``application/json`` or an ``application/*+json``
    type (``application/merge-patch+json``, say), with any parameters."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return media_type == JSON_MEDIA_TYPE or (
        media_type.startswith("application/") and media_type.endswith("+json"))


def _refuse_other_media_types(request: Request) -> None:
    """A 415 for a body whose ``Content-Type`` is not JSON (or is missing), with the media
    type that is accepted (``Accept``, RFC 9110 §15.5.16; ``Accept-Post``, ``Accept-Patch``)."""
    content_type = request.headers.get("content-type")
    if _is_json_media_type(content_type):
        return
    headers = {"Accept": JSON_MEDIA_TYPE}
    if request.method in ("POST", "PATCH"):
        headers[f"Accept-{request.method.title()}"] = JSON_MEDIA_TYPE
    given = f"is {content_type!r}" if content_type else "is missing"
    raise RequestRefused(415, "unsupported-media-type",
                         f"the body's Content-Type {given}; send it as {JSON_MEDIA_TYPE}",
                         headers=headers)


def _json_depth(value: Any) -> int:
    """How deeply ``value`` nests objects and arrays (without recursion: any depth)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1)
                           for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def refuse_unstorable_text(value: Any, where: str) -> None:
    """A 400 when a string in ``value`` (a key or a value, at any depth) holds what the
    database cannot store: U+0000, or a lone UTF-16 surrogate (text that is not valid Unicode,
    which a JSON escape can carry). Either would otherwise fail in the database, the driver or
    a tokenizer as a server error (:mod:`oam_gateway.tenancy.unstorable_text`)."""
    character = unstorable_character(value)
    if character is not None:
        raise RequestRefused(400, "invalid-request", f"{where} holds {describe(character)}")


def describe_validation(error: ValidationError) -> str:
    """A short account of what is wrong with a body (field paths and messages, no values)."""
    parts = []
    for item in error.errors(include_url=False, include_input=False)[:5]:
        where = ".".join(str(part) for part in item["loc"]) or "body"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def _check_query_user(request: Request, principal: Principal) -> None:
    """A ``user_id`` query parameter must name the caller."""
    for value in request.query_params.getlist("user_id"):
        if value != principal.user_name:
            raise RequestRefused(403, "user-id-mismatch",
                                 "user_id names another user; the caller is the token's user")


def _check_owned(body: BaseModel, principal: Principal) -> None:
    """Every ``user_id`` a body (or its nested operations) carries must name the caller."""
    for owned in _owned_parts(body):
        if owned.user_id is not None and owned.user_id != principal.user_name:
            raise RequestRefused(403, "user-id-mismatch",
                                 "user_id names another user; the caller is the token's user")


def _owned_parts(model: BaseModel) -> Iterator[OwnedBody]:
    if isinstance(model, OwnedBody):
        yield model
    for name in type(model).model_fields:
        value = getattr(model, name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, BaseModel):
                yield from _owned_parts(item)
