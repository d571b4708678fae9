"""The console's data calls: the REST operations themselves, run as the signed-in person.

Every read and change a console page makes is a declared REST operation
(:class:`~oam_gateway.rest.endpoints.Endpoint`) run by :class:`PersonOperations` with the
person's verified :class:`~oam_gateway.tenancy.principal.Principal`: the same scope check, the
same handler and so the same end-user context as ``/v1``, so the database decides what the
console shows. Path and query parameters come from the page, the body is the operation's own
pydantic model, and the answer is parsed back into the operation's response model. Refusals
and SDK errors propagate as :class:`~oam_gateway.rest.endpoints.RequestRefused` and the SDK's
typed errors, for the page to show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from oam_gateway.config.limits import LimitSettings
from oam_gateway.observability.request_events import event_of
from oam_gateway.rest.endpoints import Endpoint, GivenCall, RequestRefused, refuse_unstorable_text
from oam_gateway.tenancy.principal import Principal
from oam_gateway.tenancy.tenants import Tenants

__all__ = ["PersonOperations"]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class PersonOperations:
    """Runs REST operations for one console request as its signed-in person."""

    request: Request
    principal: Principal
    endpoints: Mapping[str, Endpoint]
    tenants: Tenants
    limits: LimitSettings
    enforce_scopes: bool

    async def response(self, operation: str, *, path: Mapping[str, str] | None = None,
                       query: Mapping[str, str | None] | None = None,
                       body: BaseModel | None = None) -> Response:
        """The HTTP answer of ``operation`` (a 2xx; refusals and SDK errors are raised)."""
        endpoint = self.endpoints[operation]
        if not self.principal.may(endpoint.scope, enforced=self.enforce_scopes):
            raise RequestRefused(403, "insufficient-scope",
                                 f"this needs the scope {endpoint.scope!r}")
        given = {name: value for name, value in (query or {}).items() if value}
        refuse_unstorable_text([dict(path or {}), given], "the address")
        if body is not None:
            refuse_unstorable_text(body.model_dump(), "the form")
        if (endpoint.body is None) != (body is None):
            raise RequestRefused(500, "internal-error", "the page sends the wrong body")
        call = GivenCall(self.request, self.principal, self.tenants[self.principal.tenant],
                             self.limits, event_of(self.request), body,
                             path_values=dict(path or {}), query_values=given)
        return await endpoint.handler(call)

    async def answer(self, operation: str, model: type[M], **arguments: Any) -> M:
        """The answer of ``operation`` parsed as ``model`` (its declared response)."""
        response = await self.response(operation, **arguments)
        return model.model_validate_json(bytes(response.body))
