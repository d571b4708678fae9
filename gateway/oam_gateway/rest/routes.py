"""Every REST endpoint under ``/v1``, in the order the OpenAPI document lists them."""

from __future__ import annotations

from oam_gateway.rest import me, memories, search, threads
from oam_gateway.rest.endpoints import Endpoint

__all__ = ["ENDPOINTS"]

ENDPOINTS: tuple[Endpoint, ...] = (*me.ENDPOINTS, *threads.ENDPOINTS,
                                   *memories.ENDPOINTS, *search.ENDPOINTS)
