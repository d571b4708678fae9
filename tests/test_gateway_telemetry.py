"""OpenTelemetry spans of the gateway over real HTTP: request, SDK operation, database call.

Spans go to an in-memory exporter through the gateway's own provider (one per app, never the
process-wide one). Each test that shows a value is *absent* from the exported spans also shows
it reached the server (the response echoes it, or an unredacted exporter on the same provider
saw it), so a gateway that traced nothing would fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from dds import DdsEnvironment
from gateway_harness import (
    audit_events,
    bearer,
    capture_audit,
    gateway_settings,
    live_server,
    make_issuer,
    token_for,
    wait_for,
)
from gateway_live import live_gateway
from oam_gateway.app import create_app
from oam_gateway.auth.verifier import TokenVerifier
from oam_gateway.middleware import stack
from oam_gateway.middleware.stack import build_stack
from oam_gateway.observability import telemetry
from oam_gateway.observability.request_events import event_of
from oam_gateway.observability.telemetry import (
    TelemetrySettings,
    operation_span,
    tracer_provider_for,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from oracleagentmemory.devissuer import DevIssuer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SECRET = "s3cr3t-c0ntent-7f1e"
"""A value that must never appear in a span: query strings, bound parameters, errors."""


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[DevIssuer, Path]:
    return make_issuer(tmp_path_factory.mktemp("telemetry-issuer"))


@pytest.fixture(scope="module", autouse=True)
def _database_tracing_undone() -> Iterator[None]:
    """The psycopg instrumentation is process-wide: undo it after this module."""
    yield
    telemetry.uninstrument_database()


class Traced:
    """A provider with the gateway's (redacting) in-memory exporter, and a raw one beside."""

    def __init__(self) -> None:
        self.exported = InMemorySpanExporter()
        self.raw = InMemorySpanExporter()
        provider = tracer_provider_for(TelemetrySettings(), exporter=self.exported)
        assert provider is not None
        provider.add_span_processor(SimpleSpanProcessor(self.raw))  # unredacted, for controls
        self.provider: TracerProvider = provider

    def spans(self, trace_id: int | None = None) -> list[ReadableSpan]:
        spans = list(self.exported.get_finished_spans())
        return spans if trace_id is None else [s for s in spans
                                               if s.context.trace_id == trace_id]

    def server_span(self, path: str) -> ReadableSpan:
        [span] = [s for s in self.spans() if s.kind == SpanKind.SERVER
                  and (s.attributes or {}).get("url.path") == path]
        return span

    def clear(self) -> None:
        self.exported.clear()
        self.raw.clear()


def everything_in(spans: list[ReadableSpan]) -> str:
    """Every exported text of ``spans`` (names, attributes, events, status, resource)."""
    return "\n".join(span.to_json() for span in spans)


def _select_echo(database_url: str, value: str) -> str:
    with psycopg.connect(database_url) as connection:
        row = connection.execute("SELECT %s::text AS echoed", (value,)).fetchone()
    assert row is not None
    return str(row[0])


def _select_int(database_url: str, value: str) -> None:
    with psycopg.connect(database_url) as connection:
        connection.execute("SELECT %s::int AS number", (value,))


def traced_app(keys: tuple[DevIssuer, Path], database_url: str,
               provider: TracerProvider) -> Starlette:
    """Test routes inside the gateway's stack, calling the database like the SDK does."""

    async def sql(request: Request) -> Response:
        event_of(request).operation = "test.sql"
        with operation_span("test.sql"):
            echoed = await asyncio.to_thread(_select_echo, database_url,
                                             request.query_params["value"])
        return JSONResponse({"echoed": echoed})

    async def sql_error(request: Request) -> Response:
        with operation_span("test.sql_error"):
            await asyncio.to_thread(_select_int, database_url, request.query_params["value"])
        return JSONResponse({})

    async def item(request: Request) -> Response:
        return JSONResponse({"item": request.path_params["item_id"],
                             "q": request.query_params.get("q")})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    settings = gateway_settings(keys[1], database_url)
    return Starlette(
        routes=[Route("/v1/sql", sql), Route("/v1/sql-error", sql_error),
                Route("/v1/items/{item_id}", item), Route("/healthz", healthz)],
        middleware=build_stack(settings, TokenVerifier.from_settings(settings),
                               tracer_provider=provider))


@pytest.fixture(scope="module")
def traced() -> Traced:
    return Traced()


@pytest.fixture(scope="module")
def served(keys: tuple[DevIssuer, Path], pg_url: str, traced: Traced) -> Iterator[str]:
    with live_server(traced_app(keys, pg_url, traced.provider)) as base:
        yield base


@pytest.fixture(autouse=True)
def _fresh(traced: Traced) -> None:
    traced.clear()


def test_the_request_span_carries_the_stable_http_conventions_and_no_query(
        served: str, traced: Traced, keys: tuple[DevIssuer, Path]) -> None:
    token = token_for(keys[0], "alice")
    response = httpx.get(f"{served}/v1/items/abc", params={"q": SECRET}, headers=bearer(token))
    assert response.json() == {"item": "abc", "q": SECRET}  # the secret reached the route
    wait_for(lambda: len(traced.spans()) == 1)
    span = traced.server_span("/v1/items/abc")
    attributes = dict(span.attributes or {})
    assert span.name == "GET /v1/items/{item_id}"
    assert attributes["http.request.method"] == "GET"
    assert attributes["http.route"] == "/v1/items/{item_id}"
    assert attributes["http.response.status_code"] == 200
    assert attributes["url.scheme"] == "http"
    assert "url.query" not in attributes and "http.target" not in attributes
    exported = everything_in(traced.spans())
    assert SECRET not in exported and token not in exported
    # control: the instrumentation did see the query; the gateway's redaction removed it
    [raw] = traced.raw.get_finished_spans()
    assert SECRET in str((raw.attributes or {}).get("url.query"))


def test_sdk_operation_and_database_spans_nest_under_the_request_without_values(
        served: str, traced: Traced, keys: tuple[DevIssuer, Path]) -> None:
    response = httpx.get(f"{served}/v1/sql", params={"value": SECRET},
                         headers=bearer(token_for(keys[0], "alice")))
    assert response.json() == {"echoed": SECRET}  # the value went through the database
    wait_for(lambda: len(traced.spans()) >= 3)
    server = traced.server_span("/v1/sql")
    [operation] = [s for s in traced.spans() if s.name == "oam test.sql"]
    database = [s for s in traced.spans() if s.kind == SpanKind.CLIENT]
    assert database, "no database span"
    [query] = [s for s in database if "echoed" in str((s.attributes or {}).get("db.query.text"))]
    assert dict(operation.attributes or {}) == {"oam.operation": "test.sql"}
    assert operation.parent is not None and operation.parent.span_id == server.context.span_id
    assert query.parent is not None and query.parent.span_id == operation.context.span_id
    assert query.context.trace_id == server.context.trace_id
    db = dict(query.attributes or {})
    assert db["db.query.text"] == "SELECT %s::text AS echoed"  # the statement, not the value
    assert db["db.system.name"] == "postgresql"
    assert not any(key.startswith("db.query.parameter") or key == "db.statement.parameters"
                   for key in db)
    assert SECRET not in everything_in(traced.spans())


def test_a_failing_statement_leaves_no_error_message_in_any_span(
        served: str, traced: Traced, keys: tuple[DevIssuer, Path]) -> None:
    """PostgreSQL quotes the offending value in its error; the span keeps only the type."""
    response = httpx.get(f"{served}/v1/sql-error", params={"value": f"nan-{SECRET}"},
                         headers=bearer(token_for(keys[0], "alice")))
    assert response.status_code == 500
    wait_for(lambda: any(s.kind == SpanKind.SERVER for s in traced.spans()))
    [database] = [s for s in traced.spans() if s.kind == SpanKind.CLIENT
                  and "number" in str((s.attributes or {}).get("db.query.text"))]
    assert database.status.status_code == StatusCode.ERROR
    assert database.status.description is None
    [event] = [e for e in database.events if e.name == "exception"]
    assert str((event.attributes or {})["exception.type"]).endswith("InvalidTextRepresentation")
    assert "exception.message" not in (event.attributes or {})
    [operation] = [s for s in traced.spans() if s.name == "oam test.sql_error"]
    assert operation.status.status_code == StatusCode.ERROR
    assert (operation.attributes or {})["error.type"] == "InvalidTextRepresentation"
    server = traced.server_span("/v1/sql-error")
    assert _attributes(server)["http.response.status_code"] == 500
    assert _attributes(server)["error.type"] == "InvalidTextRepresentation"
    assert server.name == "GET /v1/sql-error"
    assert SECRET not in everything_in(traced.spans())
    # control: the unredacted exporter saw the database's message quoting the value
    assert SECRET in everything_in(list(traced.raw.get_finished_spans()))


def test_the_callers_trace_is_followed(served: str, traced: Traced,
                                       keys: tuple[DevIssuer, Path]) -> None:
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    httpx.get(f"{served}/v1/items/x", headers={**bearer(token_for(keys[0], "alice")),
                                               "traceparent": f"00-{trace_id}-{parent_id}-01"})
    wait_for(lambda: len(traced.spans()) == 1)
    span = traced.server_span("/v1/items/x")
    assert f"{span.context.trace_id:032x}" == trace_id
    assert span.parent is not None and f"{span.parent.span_id:016x}" == parent_id


def test_probes_make_no_spans(served: str, traced: Traced,
                              keys: tuple[DevIssuer, Path]) -> None:
    assert httpx.get(f"{served}/healthz").status_code == 200
    httpx.get(f"{served}/v1/items/after-probe", headers=bearer(token_for(keys[0], "alice")))
    wait_for(lambda: len(traced.spans()) == 1)  # control: the next request is traced
    assert [s.attributes["url.path"] for s in traced.spans() if s.attributes] == [
        "/v1/items/after-probe"]


def test_the_gateway_traces_its_routes_and_names_the_trace_in_the_audit_event(
        keys: tuple[DevIssuer, Path], pg_url: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    capture_audit(caplog)
    traced = Traced()
    monkeypatch.setattr(stack, "tracer_provider_for", lambda settings: traced.provider)
    token = token_for(keys[0], "alice")
    with live_server(create_app(gateway_settings(keys[1], pg_url))) as base:
        assert httpx.get(f"{base}/v1/me", headers=bearer(token)).status_code == 200
        assert httpx.get(f"{base}/v1/me").status_code == 401
        wait_for(lambda: len(audit_events(caplog)) == 2 and len(traced.spans()) == 2)
    spans = [s for s in traced.spans() if s.kind == SpanKind.SERVER]
    assert sorted(_attributes(s)["http.response.status_code"] for s in spans) == [200, 401]
    assert all(s.name == "GET /v1/me" and _attributes(s)["http.route"] == "/v1/me"
               and _attributes(s)["url.path"] == "/v1/me" for s in spans)
    assert token not in everything_in(traced.spans())
    events = audit_events(caplog)
    assert sorted(e["trace_id"] for e in events) == sorted(
        f"{s.context.trace_id:032x}" for s in spans)


def test_the_sdks_events_are_child_spans_of_the_operation_without_contents(
        dds: DdsEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's observability events, turned into spans by its OpenTelemetry listener, nest
    under the gateway's operation span, and the database calls under the store's span."""
    traced = Traced()
    monkeypatch.setattr(stack, "tracer_provider_for", lambda settings: traced.provider)
    with live_gateway(dds, tmp_path) as gateway, gateway.client("alice") as http:
        created = http.post("/v1/memories", json={"content": f"likes {SECRET}"})
        assert created.status_code == 201, created.text
        wait_for(lambda: any(s.kind == SpanKind.SERVER for s in traced.spans()))
    spans = traced.spans()
    by_name = {s.name: s for s in spans}
    [operation] = [s for s in spans if s.name.startswith("oam ")]
    client, store = by_name["agent_memory.add_memory"], by_name["memory_store.add"]
    embed = by_name["embedder.embed"]
    assert client.parent is not None and client.parent.span_id == operation.context.span_id
    assert store.parent is not None and store.parent.span_id == client.context.span_id
    assert embed.parent is not None and embed.parent.span_id == store.context.span_id
    assert _attributes(store)["oam.operation_kind"] == "create"
    assert any(s.kind == SpanKind.CLIENT and s.parent is not None
               and s.parent.span_id == store.context.span_id for s in spans)
    assert SECRET not in everything_in(spans)
    assert gateway.owner_rows("memory")[0].content == f"likes {SECRET}"  # control


def test_tracing_is_off_by_default_and_the_exporters_come_from_the_settings(
        capsys: pytest.CaptureFixture[str], keys: tuple[DevIssuer, Path], pg_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert tracer_provider_for(TelemetrySettings()) is None
    assert gateway_settings(keys[1], pg_url).telemetry.exporter == "none"
    monkeypatch.setenv("OAM_GATEWAY_TELEMETRY__EXPORTER", "console")
    monkeypatch.setenv("OAM_GATEWAY_TELEMETRY__SERVICE_NAME", "gw-under-test")
    settings = gateway_settings(keys[1], pg_url).telemetry
    assert settings.exporter == "console"
    console = tracer_provider_for(settings)
    assert console is not None
    with console.get_tracer("test").start_as_current_span("printed-span"):
        pass
    printed = capsys.readouterr().out
    assert '"name": "printed-span"' in printed and "gw-under-test" in printed
    otlp = tracer_provider_for(TelemetrySettings(exporter="otlp",
                                                 otlp_endpoint="http://127.0.0.1:1/v1/traces"))
    assert otlp is not None
    otlp.shutdown()


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})
