"""Request limits: body size, list and search sizes, query length, filter depth, rate, time.

The routes enforce the size limits of what they parse (``max_k``, ``max_page_size``...); the
middlewares of :mod:`oam_gateway.middleware.body_size`,
:mod:`oam_gateway.middleware.request_timeout` and :mod:`oam_gateway.middleware.rate_limit`
enforce :attr:`LimitSettings.max_body_bytes`, the request timeout and the per-end-user rate.
"""

from __future__ import annotations

from typing import Literal

import limits
from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["LimitSettings", "RateLimitStrategy"]

RateLimitStrategy = Literal["fixed-window", "moving-window", "sliding-window-counter"]


class LimitSettings(BaseModel):
    """The gateway's limits (``[limits]`` in the settings file, ``OAM_GATEWAY_LIMITS__*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    """Larger request bodies answer 413 (by ``Content-Length`` before reading, or as a chunked
    body streams past it)."""
    max_k: int = Field(default=100, ge=1, le=10_000)
    """The most results one search may ask for."""
    max_page_size: int = Field(default=500, ge=1, le=10_000)
    """The most items one list page may hold."""
    default_page_size: int = Field(default=50, ge=1, le=10_000)
    max_query_chars: int = Field(default=4096, ge=1)
    max_filter_depth: int = Field(default=8, ge=1, le=64)
    max_batch_operations: int = Field(default=100, ge=1, le=10_000)
    """The most operations one ``POST /v1/memories:batch`` may carry."""

    rate_limit: str | None = "1200/minute"
    """Requests each end user (tenant and user name) may make, in the ``limits`` package's
    notation (``"1200/minute"``, several as ``"20/second;1200/minute"``); ``None`` disables the
    limit. Over it the gateway answers 429 with ``Retry-After``."""
    sign_in_rate_limit: str | None = "30/minute"
    """Console sign-ins each client address may start (``/console/sign-in``, which anyone may
    open), in the same notation, over the same storage and strategy; an IPv6 client counts by
    its /64 network. The address is the connection's, or the one a trusted proxy forwards
    (uvicorn believes ``X-Forwarded-For`` from the addresses in ``FORWARDED_ALLOW_IPS``,
    the loopback addresses by default). ``None`` disables the limit. Over it the console answers
    429 with ``Retry-After``."""
    rate_limit_storage_uri: str = "memory://"
    """Where the counters live: ``memory://`` (this process), or a shared store when several
    replicas serve one deployment (``redis://host:6379/0``, ``redis+sentinel://...``; needs
    ``coredis``, the ``limits[async-redis]`` extra, installed by the project's ``redis`` extra).
    An unusable URI fails when the app is built, not on the first request. While a shared store
    does not answer, each replica counts its own requests (the limit holds per replica, no
    request fails for it; logged as a WARNING) and tries the store again every second."""
    rate_limit_storage_timeout_seconds: float = Field(default=0.25, gt=0, le=10)
    """How long a request waits for the shared rate-limit store (to connect, or to answer)
    before counting in this replica instead (Redis only; ``memory://`` never waits)."""
    rate_limit_strategy: RateLimitStrategy = "sliding-window-counter"
    """The ``limits`` strategy: ``sliding-window-counter`` (default, smooth and O(1) memory),
    ``fixed-window`` (cheapest, allows bursts at window edges) or ``moving-window`` (exact)."""
    request_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    """A request whose response has not started by then answers 504 (its work is cancelled)."""

    @field_validator("rate_limit", "sign_in_rate_limit")
    @classmethod
    def _parsable_rate(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                limits.parse_many(value)
            except ValueError as error:
                raise ValueError(f"rate_limit {value!r} is not in the limits notation "
                                 "(e.g. '1200/minute')") from error
        return value

    def rate_limit_items(self) -> list[limits.RateLimitItem]:
        """The parsed :attr:`rate_limit` (empty when disabled)."""
        return [] if self.rate_limit is None else list(limits.parse_many(self.rate_limit))

    def sign_in_rate_limit_items(self) -> list[limits.RateLimitItem]:
        """The parsed :attr:`sign_in_rate_limit` (empty when disabled), counted apart from
        the people's (their own namespace in the store)."""
        if self.sign_in_rate_limit is None:
            return []
        return [type(item)(item.amount, item.multiples, namespace="CONSOLE-SIGN-IN")
                for item in limits.parse_many(self.sign_in_rate_limit)]
