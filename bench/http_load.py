"""A lean HTTP/1.1 load generator in Python, for when ``wrk`` is not installed.

``connections`` keep-alive connections on a uvloop event loop, each sending prepared requests
(raw bytes, in turn) and reading each answer (status line, headers, a ``Content-Length`` or
chunked body) before the next: no HTTP library on the hot path, so the generator costs a few
tens of microseconds per request where an ``httpx`` client costs several hundred, and is less
likely to be what limits the server's measured throughput (the bench still reports its CPU).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import uvloop

__all__ = ["request_bytes", "run_load"]


def request_bytes(method: str, path: str, token: str, body: Any = None) -> bytes:
    """One HTTP/1.1 keep-alive request with a bearer token (and a JSON body)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {token}"]
    payload = b""
    if body is not None:
        payload = json.dumps(body).encode()
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def _answer(reader: asyncio.StreamReader) -> int:
    """Read one response; its status code."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    headers = head.lower()
    at = headers.find(b"\r\ncontent-length:")
    if at >= 0:
        end = headers.index(b"\r\n", at + 2)
        await reader.readexactly(int(headers[at + 17:end]))
    elif b"\r\ntransfer-encoding: chunked" in headers:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return status


def run_load(base: str | Sequence[str], requests: Sequence[bytes], connections: int,
             seconds: float, timeout: float = 10.0) -> tuple[list[float], int, float]:
    """Latencies (s) of the answered requests, the errors (status >= 300, a broken connection
    or a timeout, as ``wrk`` counts them) and the seconds elapsed. ``base`` may be several
    servers (replicas): connection ``i`` goes to the ``i``-th in turn, as a load balancer
    spreads connections."""
    addresses = [(parts.hostname or "127.0.0.1", parts.port or 80) for parts in
                 map(urlsplit, [base] if isinstance(base, str) else base)]

    async def main() -> tuple[list[float], int, float]:
        latencies: list[float] = []
        errors = 0
        deadline = time.perf_counter() + seconds

        async def one(index: int) -> None:
            nonlocal errors
            n = index
            host, port = addresses[index % len(addresses)]
            reader, writer = await asyncio.open_connection(host, port)
            try:
                while True:  # at least one request per connection, however late it opened
                    n += connections
                    started = time.perf_counter()
                    writer.write(requests[n % len(requests)])
                    try:
                        status = await asyncio.wait_for(_answer(reader), timeout)
                    except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                        errors += 1
                        writer.close()
                        if time.perf_counter() >= deadline:
                            break
                        reader, writer = await asyncio.open_connection(host, port)
                        continue
                    latencies.append(time.perf_counter() - started)
                    errors += status >= 300
                    if time.perf_counter() >= deadline:
                        break
            finally:
                writer.close()

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(connections)))
        return latencies, errors, time.perf_counter() - started

    return uvloop.run(main())
