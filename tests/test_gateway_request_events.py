"""Every request leaves exactly one audit event (a JSON line on ``oam_gateway.audit``).

Over real HTTP: test routes inside the gateway's middleware stack fill the event as the REST
routes do; refused requests (401, 404, 413, 429, 500, 504) leave their event too; events hold
no token, query string or error text. The last test reads the real app's event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest
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
from oam_gateway.app import create_app
from oam_gateway.auth.verifier import TokenVerifier
from oam_gateway.middleware.stack import build_stack
from oam_gateway.observability.request_events import event_of
from oracleagentmemory.devissuer import DevIssuer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SECRET = "pr1vate-t3xt-91c2"
EVENT_FIELDS = {"time", "tenant", "end_user", "operation", "record_ids", "result_count",
                "status", "outcome", "trace_id", "method", "route", "duration_ms"}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[DevIssuer, Path]:
    return make_issuer(tmp_path_factory.mktemp("events-issuer"))


async def _record(request: Request) -> Response:
    event = event_of(request)
    event.operation = "records.get"
    event.touched([request.path_params["record_id"], "related-1"])
    event.result_count = 2
    return JSONResponse({"ok": True})


async def _upload(request: Request) -> Response:
    event_of(request).operation = "records.add"
    return JSONResponse({"bytes": len(await request.body())})


async def _boom(request: Request) -> Response:
    event_of(request).operation = "records.boom"
    raise RuntimeError(f"failed on {SECRET}")


async def _slow(request: Request) -> Response:
    await asyncio.sleep(3)
    return JSONResponse({})


@pytest.fixture(scope="module")
def served(keys: tuple[DevIssuer, Path], pg_url: str) -> Iterator[str]:
    settings = gateway_settings(keys[1], pg_url, limits={
        "max_body_bytes": 1024, "request_timeout_seconds": 0.5, "rate_limit": "2/minute",
        "rate_limit_strategy": "moving-window"})  # exact: no minute boundary to cross
    app = Starlette(routes=[Route("/v1/records/{record_id}", _record),
                            Route("/v1/upload", _upload, methods=["POST"]),
                            Route("/v1/boom", _boom), Route("/v1/slow", _slow)],
                    middleware=build_stack(settings, TokenVerifier.from_settings(settings)))
    with live_server(app) as base:
        yield base


def test_an_event_names_who_did_what_to_which_records(
        served: str, keys: tuple[DevIssuer, Path], caplog: pytest.LogCaptureFixture) -> None:
    capture_audit(caplog)
    token = token_for(keys[0], "alice")
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    before = datetime.now(timezone.utc)
    response = httpx.get(f"{served}/v1/records/rec-42", params={"q": SECRET},
                         headers={**bearer(token),
                                  "traceparent": f"00-{trace_id}-b7ad6b7169203331-01"})
    assert response.status_code == 200
    wait_for(lambda: len(audit_events(caplog)) == 1)
    [event] = audit_events(caplog)
    assert set(event) == EVENT_FIELDS
    assert {key: event[key] for key in EVENT_FIELDS - {"time", "duration_ms"}} == {
        "tenant": "acme", "end_user": "testidp:alice", "operation": "records.get",
        "record_ids": ["rec-42", "related-1"], "result_count": 2, "status": 200,
        "outcome": "success", "trace_id": trace_id, "method": "GET",
        "route": "/v1/records/{record_id}"}
    assert event["time"].endswith("Z")
    logged = datetime.fromisoformat(event["time"].replace("Z", "+00:00"))
    assert before.replace(microsecond=0) <= logged <= datetime.now(timezone.utc)
    assert event["duration_ms"] >= 0
    [line] = [record.getMessage() for record in caplog.records]
    assert SECRET not in line and token not in line and "\n" not in line


def test_an_unauthenticated_request_leaves_an_event_without_an_end_user(
        served: str, caplog: pytest.LogCaptureFixture) -> None:
    capture_audit(caplog)
    assert httpx.get(f"{served}/v1/records/rec-1",
                     headers={"Authorization": "Bearer not-a-token"}).status_code == 401
    wait_for(lambda: len(audit_events(caplog)) == 1)
    [event] = audit_events(caplog)
    assert event["status"] == 401 and event["outcome"] == "denied"
    assert event["end_user"] is None and event["tenant"] is None
    assert event["operation"] is None and event["record_ids"] == []
    assert event["route"] == "/v1/records/{record_id}" and event["trace_id"] is None
    assert "not-a-token" not in caplog.text


def test_every_request_leaves_exactly_one_event_whatever_its_answer(
        served: str, keys: tuple[DevIssuer, Path], caplog: pytest.LogCaptureFixture) -> None:
    capture_audit(caplog)
    bob = bearer(token_for(keys[0], "bob"))
    carol = bearer(token_for(keys[0], "carol"))
    answers = [
        httpx.get(f"{served}/v1/nowhere", headers=bob).status_code,                # 404
        httpx.post(f"{served}/v1/upload", content=b"x" * 2000).status_code,       # 413
        httpx.get(f"{served}/v1/boom", headers=bob).status_code,                  # 500
        httpx.get(f"{served}/v1/slow", headers=carol, timeout=10).status_code,    # 504
        httpx.get(f"{served}/v1/records/r", headers=carol).status_code,           # 200
        httpx.get(f"{served}/v1/records/r", headers=carol).status_code,           # 429
    ]
    assert answers == [404, 413, 500, 504, 200, 429]
    wait_for(lambda: len(audit_events(caplog)) >= len(answers))
    time.sleep(0.2)  # no late duplicate
    events = audit_events(caplog)
    assert sorted(e["status"] for e in events) == sorted(answers)
    by_status = {e["status"]: e for e in events}
    assert by_status[404]["route"] is None and by_status[404]["end_user"] == "testidp:bob"
    assert by_status[413]["end_user"] is None  # refused before authentication
    assert by_status[413]["outcome"] == "client-error"
    assert by_status[500]["operation"] == "records.boom"
    assert by_status[500]["outcome"] == "server-error"
    assert by_status[504]["end_user"] == "testidp:carol"
    assert by_status[504]["outcome"] == "server-error"
    assert by_status[429]["end_user"] == "testidp:carol" and by_status[429]["operation"] is None
    assert SECRET not in "\n".join(record.getMessage() for record in caplog.records)


def test_the_gateways_routes_fill_their_events(keys: tuple[DevIssuer, Path], pg_url: str,
                                               caplog: pytest.LogCaptureFixture) -> None:
    capture_audit(caplog)
    with live_server(create_app(gateway_settings(keys[1], pg_url))) as base:
        assert httpx.get(f"{base}/v1/me", headers=bearer(token_for(keys[0], "dora"))
                         ).status_code == 200
        assert httpx.get(f"{base}/healthz").status_code == 200
        wait_for(lambda: len(audit_events(caplog)) == 2)
    me, probe = sorted(audit_events(caplog), key=lambda e: str(e["route"]), reverse=True)
    assert (me["route"], me["operation"], me["end_user"], me["tenant"], me["status"]) == (
        "/v1/me", "me", "testidp:dora", "acme", 200)
    assert (probe["route"], probe["status"], probe["end_user"]) == ("/healthz", 200, None)
