"""Readiness: can the gateway reach its database right now?

The probe opens (and closes) one connection to the tenant's database as its runtime login: a
successful handshake and authentication is the answer, so no SQL is sent.
"""

from __future__ import annotations

import asyncio
import logging

import psycopg

_log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
"""What ``Retry-After`` tells a client while the database cannot be reached."""


async def database_reachable(url: str, timeout_seconds: float) -> bool:
    """Whether a connection to ``url`` opens within ``timeout_seconds``."""
    try:
        connection = await asyncio.wait_for(
            psycopg.AsyncConnection.connect(url, connect_timeout=max(2, int(timeout_seconds))),
            timeout_seconds)
    except (psycopg.Error, OSError, asyncio.TimeoutError) as error:
        _log.warning("readiness: database unreachable (%s)", type(error).__name__)
        return False
    await connection.close()
    return True
