"""The SDK's typed errors as problem documents: one stable ``type`` per SDK error code.

The slug of an SDK error is its ``code`` with ``_`` written ``-`` (``record_not_found`` ->
``.../problem/record-not-found``); :data:`STATUS_OF_CODE` gives each its HTTP status.
A record another user owns is not visible to the caller, so it answers the same 404 as a
record that does not exist.
"""

from __future__ import annotations

import logging

from oracleagentmemory.errors import OracleAgentMemoryError
from starlette.responses import Response

from oam_gateway.errors.problems import PROBLEM_TYPES, problem_response
from oam_gateway.tenancy.health import RETRY_AFTER_SECONDS

__all__ = ["STATUS_OF_CODE", "sdk_problem"]

_log = logging.getLogger(__name__)

STATUS_OF_CODE: dict[str, int] = {
    "invalid_argument": 400,
    "invalid_argument_type": 400,
    "duplicate_record": 409,
    "duplicate_relation": 409,
    "record_not_found": 404,
    "record_key_not_found": 404,
    "not_permitted": 403,
    "end_user_context": 403,
    "security_context": 401,
    "security_context_setup": 500,
    "schema": 500,
    "database_unavailable": 503,
    "database_error": 500,
    "timeout": 504,
    "unsupported_engine": 501,
    "unsupported_feature": 501,
    "embedding_service": 502,
    "oracle_agent_memory_error": 500,
}
"""The HTTP status of each SDK error code."""

_HIDDEN_DETAIL = {500: "the gateway failed to answer", 502: "a model service failed"}
"""Server-side failures answer a fixed detail: their messages may name internals."""


def sdk_problem(error: OracleAgentMemoryError, instance: str | None = None) -> Response:
    """The problem response of an SDK error."""
    code = error.code if error.code in STATUS_OF_CODE else "oracle_agent_memory_error"
    status = STATUS_OF_CODE[code]
    slug = code.replace("_", "-")
    assert slug in PROBLEM_TYPES
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else None
    if status in _HIDDEN_DETAIL:
        _log.error("SDK error %s (%s) on %s", code, type(error).__name__, instance)
        detail = _HIDDEN_DETAIL[status]
    else:
        detail = str(error)
    if status == 401:
        headers = {"WWW-Authenticate": 'Bearer realm="oam-gateway", error="invalid_token"'}
    return problem_response(status, slug, detail, instance=instance, headers=headers, code=code)
