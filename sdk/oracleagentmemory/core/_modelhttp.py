"""JSON over HTTP to a model service: timeouts, retries with backoff, bounded concurrency.

One :class:`ModelHttpClient` serves one model client (an LLM, an embedder, a reranker). It POSTs
JSON and returns the decoded JSON answer, in a sync and an async flavour:

* every request has a connect timeout and a read timeout;
* HTTP 408, 409, 429 and 5xx answers and transport errors (refused connections, resets,
  timeouts) are retried up to ``max_retries`` times with exponential backoff and jitter; a
  ``Retry-After`` header (seconds or an HTTP date) sets the wait instead, and an answer whose
  ``Retry-After`` exceeds ``max_retry_wait`` seconds is not retried;
* at most ``max_concurrent_requests`` requests are in flight at once (per client for sync calls,
  per event loop for async calls; an async call's connection pool lives for that call);
* every failure is raised as the caller's error type (an ``OracleAgentMemoryError`` subclass),
  naming the status code, when there is one, with the transport error as its cause.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import ssl
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

import httpx

from oracleagentmemory.errors import InvalidArgumentError, OracleAgentMemoryError

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def check_positive_number(value: object, name: str) -> float:
    """``value`` as a float when it is a finite number > 0, else :class:`InvalidArgumentError`."""
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value <= 0):
        raise InvalidArgumentError(f"{name} must be a finite number > 0, got {value!r}",
                                   argument=name)
    return float(value)


def check_int(value: object, name: str, minimum: int) -> int:
    """``value`` when it is an int of at least ``minimum``, else :class:`InvalidArgumentError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError(f"{name} must be an int >= {minimum}, got {value!r}",
                                   argument=name)
    return value


def check_base_url(value: object, name: str = "api_base") -> str:
    """An http(s) base URL without its trailing slash."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise InvalidArgumentError(f"{name} must be an http(s) URL, got {value!r}", argument=name)
    return value.rstrip("/")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait before retrying a failed request."""

    max_retries: int = 3
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_wait: float = 60.0

    def wait_seconds(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        if retry_after is not None:
            return retry_after
        backoff = min(self.max_backoff, self.initial_backoff * 2.0 ** attempt)
        return backoff * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not cryptography


def parse_retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), else ``None``."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = moment.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


class ModelHttpClient:
    """POSTs JSON to a model service and returns the decoded answer (see the module docstring)."""

    def __init__(
        self,
        *,
        service: str,
        error_type: type[OracleAgentMemoryError],
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        max_concurrent_requests: int = 8,
        verify: ssl.SSLContext | bool = True,
        proxy: str | None = None,
        trust_env: bool = True,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.service = service
        self._error_type = error_type
        self._retry = retry or RetryPolicy()
        self._limit = check_int(max_concurrent_requests, "max_concurrent_requests", 1)
        connect = check_positive_number(connect_timeout, "connect_timeout")
        read = check_positive_number(read_timeout, "read_timeout")
        self._timeout = httpx.Timeout(read, connect=connect)
        self._headers = dict(headers or {})
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._verify = verify
        self._proxy = proxy
        self._trust_env = trust_env
        self._async_transport = async_transport
        self._client = httpx.Client(timeout=self._timeout, headers=self._headers, verify=verify,
                                    proxy=proxy, trust_env=trust_env, transport=transport)
        self._sync_slots = threading.BoundedSemaphore(self._limit)
        self._per_loop: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self._per_loop_lock = threading.Lock()

    # -- sync ---------------------------------------------------------------------------------

    def post_json(self, url: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` to ``url``; the decoded JSON answer of the first successful attempt."""
        if self._client.is_closed:
            raise self._error_type(f"the {self.service} client is closed")
        attempt = 0
        while True:
            with self._sync_slots:
                try:
                    response: httpx.Response | None = self._client.post(url, json=body)
                    failure: BaseException | None = None
                except httpx.TransportError as exc:
                    response, failure = None, exc
            wait = self._next_wait(url, attempt, response, failure)
            if wait is None:
                assert response is not None
                return self._decode(url, response)
            time.sleep(wait)
            attempt += 1

    # -- async --------------------------------------------------------------------------------

    async def post_json_async(self, url: str, body: Mapping[str, Any]) -> Any:
        """Asynchronous :meth:`post_json`."""
        [answer] = await self.post_many_json_async(url, [body])
        return answer

    async def post_many_json_async(self, url: str,
                                   bodies: Sequence[Mapping[str, Any]]) -> list[Any]:
        """POST each of ``bodies`` concurrently (within the bound); the answers in order.

        The async connection pool lives for this call only: an event loop may close after
        it, and a pool left open across loops would leak its sockets.
        """
        slots = self._loop_slots()
        async with httpx.AsyncClient(
                timeout=self._timeout, headers=self._headers, verify=self._verify,
                proxy=self._proxy, trust_env=self._trust_env,
                transport=self._async_transport) as client:
            return list(await asyncio.gather(
                *(self._post_async(client, slots, url, body) for body in bodies)))

    async def _post_async(self, client: httpx.AsyncClient, slots: asyncio.Semaphore, url: str,
                          body: Mapping[str, Any]) -> Any:
        attempt = 0
        while True:
            async with slots:
                try:
                    response: httpx.Response | None = await client.post(url, json=body)
                    failure: BaseException | None = None
                except httpx.TransportError as exc:
                    response, failure = None, exc
            wait = self._next_wait(url, attempt, response, failure)
            if wait is None:
                assert response is not None
                return self._decode(url, response)
            await asyncio.sleep(wait)
            attempt += 1

    def _loop_slots(self) -> asyncio.Semaphore:
        """The running event loop's concurrency bound (entries of closed loops are dropped)."""
        loop = asyncio.get_running_loop()
        with self._per_loop_lock:
            for stale in [known for known in self._per_loop if known.is_closed()]:
                del self._per_loop[stale]
            slots = self._per_loop.get(loop)
            if slots is None:
                slots = self._per_loop[loop] = asyncio.Semaphore(self._limit)
            return slots

    # -- shared -------------------------------------------------------------------------------

    def _next_wait(self, url: str, attempt: int, response: httpx.Response | None,
                   failure: BaseException | None) -> float | None:
        """``None`` when ``response`` is a success; the wait before a retry; else raises."""
        if response is not None and response.is_success:
            return None
        retry_after: float | None = None
        if failure is not None:
            retryable = True
            if isinstance(failure, httpx.TimeoutException):
                message = f"{self.service} request to {url} timed out"
            else:
                message = f"{self.service} request to {url} failed: {failure}"
        else:
            assert response is not None
            retryable = response.status_code in RETRYABLE_STATUS or response.status_code >= 500
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            message = (f"{self.service} answered HTTP {response.status_code}: "
                       f"{response.text[:300]}")
            if retry_after is not None and retry_after > self._retry.max_retry_wait:
                retryable = False
                message += f" (Retry-After {retry_after:.0f}s exceeds the retry bound)"
        if not retryable or attempt >= self._retry.max_retries:
            if retryable and attempt:
                message += f" (after {attempt + 1} attempts)"
            raise self._error_type(message) from failure
        return self._retry.wait_seconds(attempt, retry_after)

    def _decode(self, url: str, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise self._error_type(
                f"{self.service} at {url} answered a body that is not JSON: "
                f"{response.text[:200]!r}") from exc

    def close(self) -> None:
        """Close the sync connection pool (async pools live for one call)."""
        self._client.close()


class HttpModelClient:
    """Base of the HTTP model clients: ``close()`` and ``with client: ...`` release the pool."""

    _http: ModelHttpClient

    def close(self) -> None:
        """Close the connection pool of synchronous calls (async calls hold none between calls)."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def build_ssl_context(ca_file: str | None, cert_file: str | None,
                      key_file: str | None) -> ssl.SSLContext | bool:
    """TLS settings for httpx: a context when a CA bundle or client certificate is given."""
    if ca_file is None and cert_file is None:
        if key_file is not None:
            raise InvalidArgumentError("key_file needs cert_file", argument="key_file")
        return True
    context = ssl.create_default_context(cafile=ca_file)
    if cert_file is not None:
        context.load_cert_chain(certfile=cert_file, keyfile=key_file)
    return context
