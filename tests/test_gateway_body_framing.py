"""A request whose body length is declared within the limit passes the body-size middleware
without being counted (``middleware/body_size``): over a raw socket, a body longer than its
``Content-Length`` is still read only up to that length (the rest is the next request's
bytes), and a declared length over the limit, a chunked body over
it and a length declared twice are still refused or counted."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_harness import live_server, make_issuer, token_for
from oracleagentmemory.devissuer import DevIssuer
from test_gateway_limits import MAX_BODY, stack_app


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[tuple[str, str]]:
    keys: tuple[DevIssuer, Path] = make_issuer(tmp_path_factory.mktemp("framing-issuer"))
    with live_server(stack_app(keys, pg_url)) as url:
        yield url, token_for(keys[0], "framing_alice")


def exchange(url: str, raw: bytes, *, half_close: bool = True) -> bytes:
    """Send ``raw`` on a fresh connection; everything the server answers until it closes
    (``half_close``: the client ends its side at once; otherwise the last request must ask
    the server to close, as a pipelined request left unanswered at the client's end could be
    dropped)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(raw)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def post(token: str, headers: str, body: bytes) -> bytes:
    return (f"POST /v1/echo HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\n{headers}\r\n").encode() + body


def test_a_body_is_read_up_to_its_declared_length(served: tuple[str, str]) -> None:
    """The bytes past a declared length are the next request (here a valid one of its own)."""
    url, token = served
    answer = exchange(url, post(token, "Content-Length: 10\r\n", b"x" * 10)
                      + post(token, f"Content-Length: {MAX_BODY}\r\nConnection: close\r\n",
                             b"y" * MAX_BODY), half_close=False)
    assert answer.count(b"HTTP/1.1 200") == 2
    assert answer.index(b'{"bytes":10}') < answer.index(f'{{"bytes":{MAX_BODY}}}'.encode())


def test_a_declared_length_over_the_limit_is_refused(served: tuple[str, str]) -> None:
    url, token = served
    answer = exchange(url, post(token, f"Content-Length: {MAX_BODY + 1}\r\n",
                                b"x" * (MAX_BODY + 1)))
    assert answer.startswith(b"HTTP/1.1 413")


def test_a_chunked_body_over_the_limit_is_refused(served: tuple[str, str]) -> None:
    url, token = served
    body = b"x" * (MAX_BODY + 1)
    answer = exchange(url, post(token, "Transfer-Encoding: chunked\r\n",
                                f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"))
    assert answer.startswith(b"HTTP/1.1 413")
    small = b"x" * 10  # positive control
    answer = exchange(url, post(token, "Transfer-Encoding: chunked\r\n",
                                f"{len(small):x}\r\n".encode() + small + b"\r\n0\r\n\r\n"))
    assert answer.startswith(b"HTTP/1.1 200") and b'{"bytes":10}' in answer


def test_a_length_declared_twice_is_not_trusted(served: tuple[str, str]) -> None:
    url, token = served
    answer = exchange(url, post(token, f"Content-Length: 10\r\nContent-Length: {MAX_BODY * 4}"
                                "\r\n", b"x" * (MAX_BODY * 4)))
    assert not answer.startswith(b"HTTP/1.1 200")
