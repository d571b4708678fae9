"""The OpenAPI 3.1 document, generated from the declared endpoints and their pydantic models,
and an offline HTML page describing it (no script, no external asset)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from oam_gateway.config.limits import LimitSettings
from oam_gateway.errors.problems import PROBLEM_CONTENT_TYPE, PROBLEM_TYPES, TYPE_PREFIX
from oam_gateway.rest.endpoints import Endpoint
from oam_gateway.rest.models import Problem

__all__ = ["docs_page", "openapi_document"]

_PATH_PARAMETER = re.compile(r"{([a-z_]+)}")
_QUERY_TYPES = {int: "integer", str: "string", bool: "boolean"}
_ERRORS = {"400": "Invalid request", "401": "No valid bearer token",
           "403": "Missing scope, or a user_id that is not the caller's",
           "404": "No such record visible to the caller", "413": "Body too large",
           "429": "Rate limited (see Retry-After)",
           "503": "Database unavailable (see Retry-After)"}


def openapi_document(endpoints: Sequence[Endpoint], prefix: str, version: str,
                     limits: LimitSettings) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``endpoints`` served under ``prefix``, with the bounds
    ``limits`` sets on their bodies and query parameters."""
    models: set[type[BaseModel]] = {Problem}
    for endpoint in endpoints:
        models.update(m for m in (endpoint.body, endpoint.response) if m is not None)
    ordered = sorted(models, key=lambda m: m.__name__)
    _, schemas = models_json_schema([(m, "validation") for m in ordered],
                                    ref_template="#/components/schemas/{model}")
    definitions = schemas.get("$defs", {})
    for (model, field), bound in _body_bounds(limits).items():
        if model in definitions:
            definitions[model]["properties"][field].update(bound)
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        paths.setdefault(prefix + endpoint.path, {})[endpoint.method.lower()] = _operation(
            endpoint, _query_bounds(limits))
    return {
        "openapi": "3.1.0",
        "info": {"title": "Oracle AI Agent Memory gateway", "version": version,
                 "description": "Agent memory of the verified caller: every operation runs "
                 "inside the caller's end-user security context, and the database's row "
                 "security decides what it sees. Errors are RFC 9457 problem documents; "
                 f"their type URIs start with {TYPE_PREFIX}."},
        "paths": paths,
        "components": {
            "schemas": definitions,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "bearerFormat": "JWT"}},
        },
        "security": [{"bearer": []}],
        "x-problem-types": {TYPE_PREFIX + slug: title for slug, title in PROBLEM_TYPES.items()},
    }


def _body_bounds(limits: LimitSettings) -> dict[tuple[str, str], dict[str, int]]:
    """The JSON-schema bounds the routes enforce from ``limits``, by (body model, field)."""
    return {("SearchIn", "k"): {"maximum": limits.max_k},
            ("SearchIn", "query"): {"maxLength": limits.max_query_chars},
            ("BatchIn", "operations"): {"maxItems": limits.max_batch_operations},
            ("MessagesIn", "messages"): {"maxItems": limits.max_batch_operations}}


def _query_bounds(limits: LimitSettings) -> dict[str, dict[str, int]]:
    """The JSON-schema bounds the routes enforce from ``limits``, by query parameter."""
    return {"limit": {"minimum": 1, "maximum": limits.max_page_size,
                      "default": limits.default_page_size}}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _operation(endpoint: Endpoint, query_bounds: dict[str, dict[str, int]]) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PATH_PARAMETER.findall(endpoint.path)]
    parameters += [{"name": q.name, "in": "query", "required": False,
                    "description": q.description,
                    "schema": {"type": _QUERY_TYPES.get(q.kind, "string"),
                               **query_bounds.get(q.name, {})}}
                   for q in endpoint.query]
    success: dict[str, Any] = {"description": "Success"}
    if endpoint.response is not None:
        success["content"] = {"application/json": {"schema": _ref(endpoint.response)}}
    elif endpoint.response_media_type != "application/json":
        success["content"] = {endpoint.response_media_type: {"schema": {"type": "string"}}}
    responses: dict[str, Any] = {str(endpoint.status): success}
    for status, description in _ERRORS.items():
        responses[status] = {"description": description,
                             "content": {PROBLEM_CONTENT_TYPE: {"schema": _ref(Problem)}}}
    operation: dict[str, Any] = {"operationId": endpoint.operation, "summary": endpoint.summary,
                                 "parameters": parameters, "responses": responses,
                                 "x-required-scope": endpoint.scope}
    if endpoint.description:
        operation["description"] = endpoint.description
    if endpoint.body is not None:
        operation["requestBody"] = {"required": True, "content": {
            "application/json": {"schema": _ref(endpoint.body)}}}
        responses["415"] = {
            "description": "The body's Content-Type is not application/json (nor a +json type)",
            "content": {PROBLEM_CONTENT_TYPE: {"schema": _ref(Problem)}}}
    return operation


def docs_page(document: dict[str, Any]) -> str:
    """A self-contained HTML page listing every operation of ``document`` with its schemas."""
    rows = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get(
                "application/json", {}).get("schema", {}).get("$ref", "")
            rows.append(
                f"<tr><td><code>{html.escape(method.upper())}</code></td>"
                f"<td><code>{html.escape(path)}</code></td>"
                f"<td>{html.escape(operation['summary'])}</td>"
                f"<td><code>{html.escape(operation['x-required-scope'])}</code></td>"
                f"<td>{html.escape(body.rsplit('/', 1)[-1])}</td></tr>")
    schemas = "".join(
        f"<h3 id='{html.escape(name)}'>{html.escape(name)}</h3><pre>"
        f"{html.escape(json.dumps(schema, indent=2))}</pre>"
        for name, schema in document["components"]["schemas"].items())
    title = html.escape(document["info"]["title"])
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}"
            "</title><style>body{font-family:sans-serif;margin:2em;max-width:70em}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em}"
            "pre{background:#f6f6f6;padding:.6em;overflow:auto}</style></head><body>"
            f"<h1>{title}</h1><p>{html.escape(document['info']['description'])}</p>"
            "<p>Machine-readable: <a href='/openapi.json'>/openapi.json</a> (OpenAPI 3.1).</p>"
            "<table><tr><th>Method</th><th>Path</th><th>What</th><th>Scope</th><th>Body</th>"
            f"</tr>{''.join(rows)}</table><h2>Schemas</h2>{schemas}</body></html>")
