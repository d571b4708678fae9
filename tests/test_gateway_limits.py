"""The gateway's request limits over real HTTP: body size (413), rate (429), time (504).

Most tests serve small test-only routes inside the gateway's own middleware stack
(:func:`oam_gateway.middleware.stack.build_stack`), so each limit has an exact positive control; the
last ones call the real app of :func:`oam_gateway.app.create_app`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_harness import (
    bearer,
    gateway_settings,
    live_server,
    make_issuer,
    token_for,
)
from oam_gateway.app import create_app
from oam_gateway.auth.verifier import TokenVerifier
from oam_gateway.errors.problems import PROBLEM_CONTENT_TYPE, problem_type
from oam_gateway.middleware.stack import build_stack
from oracleagentmemory.devissuer import DevIssuer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MAX_BODY = 2048
TIMEOUT_SECONDS = 0.5


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[DevIssuer, Path]:
    return make_issuer(tmp_path_factory.mktemp("limits-issuer"))


async def _echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse({"bytes": len(body)})


async def _echo_forgiving(request: Request) -> Response:
    """Reads the body and, like a careless route, turns every failure into a 400."""
    try:
        body = await request.body()
    except Exception:
        return JSONResponse({"error": "bad body"}, status_code=400)
    return JSONResponse({"bytes": len(body)})


async def _slow(request: Request) -> Response:
    await asyncio.sleep(5 * TIMEOUT_SECONDS)
    return JSONResponse({"slow": True})


async def _fast(request: Request) -> Response:
    return JSONResponse({"fast": True})


async def _streams_past_deadline(request: Request) -> Response:
    async def chunks() -> Any:
        yield b"first,"
        await asyncio.sleep(3 * TIMEOUT_SECONDS)
        yield b"second"
    return StreamingResponse(chunks(), media_type="text/plain")


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def stack_app(keys: tuple[DevIssuer, Path], database_url: str, **limits: Any) -> Starlette:
    """Test routes inside the gateway's middleware stack, with ``limits`` overridden."""
    values: dict[str, Any] = {"max_body_bytes": MAX_BODY,
                              "request_timeout_seconds": TIMEOUT_SECONDS,
                              "rate_limit": None}
    values.update(limits)
    settings = gateway_settings(keys[1], database_url, limits=values)
    return Starlette(
        routes=[Route("/v1/echo", _echo, methods=["POST"]),
                Route("/v1/echo-forgiving", _echo_forgiving, methods=["POST"]),
                Route("/v1/slow", _slow), Route("/v1/fast", _fast),
                Route("/v1/stream", _streams_past_deadline),
                Route("/healthz", _healthz)],
        middleware=build_stack(settings, TokenVerifier.from_settings(settings)))


def assert_problem(response: httpx.Response, status: int, slug: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
    body: dict[str, Any] = response.json()
    assert body["type"] == problem_type(slug) and body["status"] == status
    return body


def chunked(data: bytes, size: int = 500) -> Iterator[bytes]:
    """``data`` as a streamed body (httpx sends it chunked, without Content-Length)."""
    for start in range(0, len(data), size):
        yield data[start:start + size]


# -- body size ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def limited(keys: tuple[DevIssuer, Path], pg_url: str) -> Iterator[str]:
    with live_server(stack_app(keys, pg_url)) as base:
        yield base


def test_a_content_length_over_the_limit_is_refused_before_reading(
        limited: str, keys: tuple[DevIssuer, Path]) -> None:
    headers = bearer(token_for(keys[0], "alice"))
    ok = httpx.post(f"{limited}/v1/echo", content=b"x" * MAX_BODY, headers=headers)
    assert ok.status_code == 200 and ok.json() == {"bytes": MAX_BODY}  # positive control
    refused = httpx.post(f"{limited}/v1/echo", content=b"x" * (MAX_BODY + 1), headers=headers)
    assert_problem(refused, 413, "payload-too-large")


def test_an_oversized_content_length_is_refused_without_a_token(limited: str) -> None:
    """The size check runs before authentication: no token verification for a huge upload."""
    refused = httpx.post(f"{limited}/v1/echo", content=b"x" * (MAX_BODY + 1))
    assert_problem(refused, 413, "payload-too-large")
    small = httpx.post(f"{limited}/v1/echo", content=b"x")
    assert small.status_code == 401  # positive control: a small body meets authentication


def test_a_chunked_body_is_counted_as_it_streams(
        limited: str, keys: tuple[DevIssuer, Path]) -> None:
    headers = bearer(token_for(keys[0], "alice"))
    ok = httpx.post(f"{limited}/v1/echo", content=chunked(b"y" * MAX_BODY), headers=headers)
    assert ok.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in ok.request.headers
    assert ok.status_code == 200 and ok.json() == {"bytes": MAX_BODY}  # positive control
    refused = httpx.post(f"{limited}/v1/echo", content=chunked(b"y" * (MAX_BODY + 1)),
                         headers=headers)
    assert refused.request.headers.get("transfer-encoding") == "chunked"
    assert_problem(refused, 413, "payload-too-large")


def test_a_route_that_swallows_the_error_still_answers_413(
        limited: str, keys: tuple[DevIssuer, Path]) -> None:
    headers = bearer(token_for(keys[0], "alice"))
    ok = httpx.post(f"{limited}/v1/echo-forgiving", content=chunked(b"z" * 100),
                    headers=headers)
    assert ok.status_code == 200 and ok.json() == {"bytes": 100}
    refused = httpx.post(f"{limited}/v1/echo-forgiving",
                         content=chunked(b"z" * (MAX_BODY + 600)), headers=headers)
    assert_problem(refused, 413, "payload-too-large")


# -- request timeout ---------------------------------------------------------------------

def test_a_route_that_does_not_answer_in_time_answers_504(
        limited: str, keys: tuple[DevIssuer, Path]) -> None:
    headers = bearer(token_for(keys[0], "alice"))
    assert httpx.get(f"{limited}/v1/fast", headers=headers).status_code == 200
    started = time.monotonic()
    slow = httpx.get(f"{limited}/v1/slow", headers=headers, timeout=10)
    elapsed = time.monotonic() - started
    body = assert_problem(slow, 504, "request-timeout")
    assert "0.5 seconds" in body["detail"]
    assert TIMEOUT_SECONDS <= elapsed < 4 * TIMEOUT_SECONDS  # cut at the deadline, not at 2.5 s
    # the server is fine afterwards
    assert httpx.get(f"{limited}/v1/fast", headers=headers).status_code == 200


def test_a_response_started_in_time_may_stream_past_the_deadline(
        limited: str, keys: tuple[DevIssuer, Path]) -> None:
    streamed = httpx.get(f"{limited}/v1/stream", headers=bearer(token_for(keys[0], "alice")),
                         timeout=10)
    assert streamed.status_code == 200 and streamed.text == "first,second"


# -- rate limit --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rate_limited(keys: tuple[DevIssuer, Path], pg_url: str) -> Iterator[str]:
    # moving-window counts exactly: the default sliding-window counter weighs the previous
    # minute's hits down just after a boundary, so a run crossing :00 would get a 4th hit in
    with live_server(stack_app(keys, pg_url, rate_limit="3/minute",
                               rate_limit_strategy="moving-window")) as base:
        yield base


def test_an_end_user_over_the_rate_limit_answers_429_with_retry_after(
        rate_limited: str, keys: tuple[DevIssuer, Path]) -> None:
    carol = bearer(token_for(keys[0], "carol"))
    dave = bearer(token_for(keys[0], "dave"))
    for _ in range(3):
        assert httpx.get(f"{rate_limited}/v1/fast", headers=carol).status_code == 200
    refused = httpx.get(f"{rate_limited}/v1/fast", headers=carol)
    assert_problem(refused, 429, "rate-limited")
    retry_after = int(refused.headers["Retry-After"])
    assert 1 <= retry_after <= 60
    assert refused.headers["RateLimit-Policy"] == '"3-per-60s";q=3;w=60'
    assert refused.headers["RateLimit"] == f'"3-per-60s";r=0;t={retry_after}'
    # positive control: another end user is not limited by carol's use
    assert httpx.get(f"{rate_limited}/v1/fast", headers=dave).status_code == 200
    # a new token of the same user is the same end user: still limited
    again = httpx.get(f"{rate_limited}/v1/fast", headers=bearer(token_for(keys[0], "carol")))
    assert again.status_code == 429


def test_probes_and_unauthenticated_requests_are_not_rate_limited(rate_limited: str) -> None:
    for _ in range(6):
        assert httpx.get(f"{rate_limited}/healthz").status_code == 200
        assert httpx.get(f"{rate_limited}/v1/fast").status_code == 401  # never 429


def test_a_shared_rate_limit_store_is_named_by_uri(pg_url: str,
                                                   keys: tuple[DevIssuer, Path]) -> None:
    """An unknown storage scheme is refused when the app is built, not on the first request."""
    with pytest.raises(Exception, match="nosuchstore"):
        stack_app(keys, pg_url, rate_limit="3/minute", rate_limit_storage_uri="nosuchstore://x")


# -- the real app --------------------------------------------------------------------------

def test_the_gateway_applies_the_limits_to_its_routes(keys: tuple[DevIssuer, Path],
                                                      pg_url: str) -> None:
    settings = gateway_settings(keys[1], pg_url,
                                limits={"max_body_bytes": MAX_BODY, "rate_limit": "2/minute",
                                        "rate_limit_strategy": "moving-window"})
    with live_server(create_app(settings)) as base:
        erin = bearer(token_for(keys[0], "erin"))
        refused = httpx.post(f"{base}/v1/memories", content=b"{" + b" " * MAX_BODY + b"}",
                             headers={**erin, "Content-Type": "application/json"})
        assert_problem(refused, 413, "payload-too-large")
        streamed = httpx.post(f"{base}/v1/memories", content=chunked(b" " * (MAX_BODY + 1)),
                              headers={**erin, "Content-Type": "application/json"})
        assert_problem(streamed, 413, "payload-too-large")  # read by the route, cut at the limit
        # the Content-Length refusal came before authentication, the chunked one after it:
        # erin has used one of her two requests
        assert httpx.get(f"{base}/v1/me", headers=erin).status_code == 200
        assert_problem(httpx.get(f"{base}/v1/me", headers=erin), 429, "rate-limited")
        frank = bearer(token_for(keys[0], "frank"))
        assert httpx.get(f"{base}/v1/me", headers=frank).status_code == 200  # positive control
        assert httpx.get(f"{base}/healthz").status_code == 200
