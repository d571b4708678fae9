"""The middleware stack around the gateway's routes, outermost first.

1. :class:`~oam_gateway.middleware.request_tracing.RequestTracingMiddleware` (only when tracing
   is on): the request span encloses everything below, so the audit event can name its trace.
2. :class:`~oam_gateway.middleware.request_log.RequestLogMiddleware`: sees every answer,
   including the 413, 504, 401 and 429 of the layers below, and emits one audit event per request.
3. :class:`~oam_gateway.middleware.body_size.BodySizeLimitMiddleware`: an oversized
   ``Content-Length`` is refused before any other work (no token verification for it).
4. :class:`~oam_gateway.middleware.request_timeout.RequestTimeoutMiddleware`: the deadline covers
   authentication (a slow key fetch) and the route.
5. :class:`~oam_gateway.middleware.bearer.BearerAuthMiddleware`: the verified principal.
6. :class:`~oam_gateway.middleware.rate_limit.RateLimitMiddleware`: keyed by that principal (so
   after authentication), before any route work.
"""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from starlette.middleware import Middleware

from oam_gateway.auth.verifier import TokenVerifier
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.middleware.bearer import BearerAuthMiddleware
from oam_gateway.middleware.body_size import BodySizeLimitMiddleware
from oam_gateway.middleware.rate_limit import RateLimitMiddleware, rate_limiter_for
from oam_gateway.middleware.request_log import RequestLogMiddleware
from oam_gateway.middleware.request_timeout import RequestTimeoutMiddleware
from oam_gateway.middleware.request_tracing import RequestTracingMiddleware
from oam_gateway.observability.telemetry import tracer_provider_for

__all__ = ["build_stack"]


def build_stack(settings: GatewaySettings, verifier: TokenVerifier, *,
                tracer_provider: TracerProvider | None = None) -> list[Middleware]:
    """The gateway's middleware for ``Starlette(middleware=...)``, outermost first.

    ``tracer_provider`` replaces the one :attr:`GatewaySettings.telemetry` describes.
    """
    limits = settings.limits
    provider = tracer_provider or tracer_provider_for(settings.telemetry)
    stack: list[Middleware] = []
    if provider is not None:
        stack.append(Middleware(RequestTracingMiddleware, tracer_provider=provider))
    stack += [Middleware(RequestLogMiddleware),
              Middleware(BodySizeLimitMiddleware, max_body_bytes=limits.max_body_bytes),
              Middleware(RequestTimeoutMiddleware, seconds=limits.request_timeout_seconds),
              Middleware(BearerAuthMiddleware, verifier=verifier)]
    rate_items = limits.rate_limit_items()
    if rate_items:
        stack.append(Middleware(RateLimitMiddleware, items=rate_items,
                                limiter=rate_limiter_for(limits)))
    return stack
