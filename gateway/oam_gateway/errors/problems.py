"""RFC 9457 problem details: every error the gateway answers is ``application/problem+json``.

Each kind of problem has a stable ``type`` URI (a ``tag:`` URI, RFC 4151: stable, not meant to be
dereferenced), listed in :data:`PROBLEM_TYPES`; clients branch on it, never on ``title`` or
``detail``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.responses import Response

__all__ = ["PROBLEM_CONTENT_TYPE", "PROBLEM_TYPES", "TYPE_PREFIX", "problem_response",
           "problem_type"]

PROBLEM_CONTENT_TYPE = "application/problem+json"
TYPE_PREFIX = "tag:oracleagentmemory.gateway,2026:problem/"

PROBLEM_TYPES: dict[str, str] = {
    "invalid-token": "Authentication required",
    "insufficient-scope": "Insufficient scope",
    "user-id-mismatch": "Another user's id",
    "invalid-request": "Invalid request",
    "invalid-argument": "Invalid argument",
    "invalid-argument-type": "Invalid argument type",
    "duplicate-record": "Duplicate record",
    "duplicate-relation": "Duplicate relation",
    "record-not-found": "Record not found",
    "record-key-not-found": "Record not found",
    "not-permitted": "Not permitted",
    "end-user-context": "End-user context refused",
    "security-context": "Security context refused",
    "security-context-setup": "Security context unavailable",
    "schema": "Memory store schema error",
    "database-error": "Database error",
    "timeout": "Operation timed out",
    "unsupported-engine": "Unsupported engine",
    "unsupported-feature": "Unsupported feature",
    "embedding-service": "Embedding service failed",
    "oracle-agent-memory-error": "Agent memory error",
    "not-found": "Not found",
    "method-not-allowed": "Method not allowed",
    "database-unavailable": "Database unavailable",
    "identity-provider-unavailable": "Identity provider unavailable",
    "internal-error": "Internal error",
    "payload-too-large": "Payload too large",
    "unsupported-media-type": "Unsupported media type",
    "rate-limited": "Too many requests",
    "request-timeout": "Request timed out",
}
"""Slug of each problem type and its title (the ``type`` URI is :data:`TYPE_PREFIX` + slug)."""


def problem_type(slug: str) -> str:
    """The stable ``type`` URI of the problem ``slug`` (one of :data:`PROBLEM_TYPES`)."""
    if slug not in PROBLEM_TYPES:
        raise KeyError(f"unknown problem type {slug!r}")
    return TYPE_PREFIX + slug


def problem_response(status: int, slug: str, detail: str, *, instance: str | None = None,
                     headers: Mapping[str, str] | None = None,
                     code: str | None = None) -> Response:
    """An ``application/problem+json`` response for the problem ``slug``."""
    body: dict[str, object] = {"type": problem_type(slug), "title": PROBLEM_TYPES[slug],
                               "status": status, "detail": detail}
    if instance is not None:
        body["instance"] = instance
    if code is not None:
        body["code"] = code
    return Response(json.dumps(body), status_code=status, headers=dict(headers or {}),
                    media_type=PROBLEM_CONTENT_TYPE)
