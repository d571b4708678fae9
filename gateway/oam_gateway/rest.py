"""Every REST endpoint under ``/v1``, in the order the OpenAPI document lists them."""

from __future__ import annotations

from oam_gateway import rest_me, rest_memories, rest_search, rest_threads
from oam_gateway.endpoints import Endpoint

ENDPOINTS: tuple[Endpoint, ...] = (*rest_me.ENDPOINTS, *rest_threads.ENDPOINTS,
                                   *rest_memories.ENDPOINTS, *rest_search.ENDPOINTS)
