"""A loopback TCP relay in front of a PostgreSQL server that counts round trips and records the
protocol messages, for the benches.

A client (the gateway's pool, say) connects to the relay's port instead of the server's; every
byte is forwarded unchanged, in both directions, to the server's TCP port or Unix socket. Per
connection the relay counts **flights**: the times the client sent data after having received
data from the server (or first), which is the number of round trips the client waited for. With
``record`` it also keeps each protocol message (type and payload) of both directions from the
connection's start, so a bench can see exactly which statements a request ran (``pg_wire``).

The relay runs on its own event loop in a daemon thread; it adds latency and CPU to whatever
runs through it, so throughput is never measured through it.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = ["Message", "Relay", "RelayConnection", "relayed_url"]

_ANSWERED_REQUESTS = {80877103, 80877104}
"""SSLRequest and GSSENCRequest: untyped, and the server answers each with one byte."""
_CANCEL_REQUEST = 80877102


@dataclass(frozen=True)
class Message:
    """One protocol message: who sent it (``"F"`` the client, ``"B"`` the server), its type
    byte (``""`` for the untyped startup messages) and its payload (without the length)."""

    sender: str
    kind: str
    payload: bytes


@dataclass
class RelayConnection:
    """One client connection through the relay."""

    number: int
    flights: int = 0
    """Times the client sent data after receiving data from the server (or first)."""
    messages: list[Message] = field(default_factory=list)
    """Messages of both directions, in the order the relay saw them (when recording)."""
    _server_spoke_last: bool = True
    _typed_client: bool = False
    _answers_due: int = 0
    _buffers: dict[str, bytearray] = field(
        default_factory=lambda: {"F": bytearray(), "B": bytearray()})

    def _seen(self, sender: str, data: bytes, recording: bool) -> None:
        if sender == "F":
            if self._server_spoke_last:
                self.flights += 1
            self._server_spoke_last = False
        else:
            self._server_spoke_last = True
        buffer = self._buffers[sender]
        buffer += data
        while True:
            message = self._next_message(sender, buffer)
            if message is None:
                return
            if recording:
                self.messages.append(message)

    def _next_message(self, sender: str, buffer: bytearray) -> Message | None:
        if sender == "B" and self._answers_due:  # the one-byte answer to SSL/GSS requests
            if not buffer:
                return None
            self._answers_due -= 1
            kind = chr(buffer[0])
            del buffer[:1]
            return Message(sender, kind, b"")
        if sender == "F" and not self._typed_client:
            if len(buffer) < 8:
                return None
            length, code = struct.unpack("!ii", buffer[:8])
            if len(buffer) < length:
                return None
            payload = bytes(buffer[4:length])
            del buffer[:length]
            if code in _ANSWERED_REQUESTS:
                self._answers_due += 1
            elif code != _CANCEL_REQUEST:
                self._typed_client = True
            return Message(sender, "", payload)
        if len(buffer) < 5:
            return None
        length = struct.unpack("!i", buffer[1:5])[0]
        if len(buffer) < 1 + length:
            return None
        message = Message(sender, chr(buffer[0]), bytes(buffer[5:1 + length]))
        del buffer[:1 + length]
        return message


class Relay:
    """Forwards loopback TCP connections to a PostgreSQL server, counting and recording."""

    def __init__(self, server_url: str, record: bool = False) -> None:
        params = conninfo_to_dict(server_url)
        host = str(params.get("host") or "/tmp")
        port = int(params.get("port") or 5432)
        self._target: tuple[str, int] | str = (
            f"{host}/.s.PGSQL.{port}" if host.startswith("/") else (host, port))
        self.connections: list[RelayConnection] = []
        self._recording = record
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._run, name="pg-relay", daemon=True)

    def __enter__(self) -> Relay:
        self._thread.start()
        self._ready.wait(10)
        if not self.port:
            raise RuntimeError("the relay did not start")
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            sock: socket.socket = self._server.sockets[0]
            self.port = int(sock.getsockname()[1])
            self._ready.set()

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if isinstance(self._target, str):
            up_reader, up_writer = await asyncio.open_unix_connection(self._target)
        else:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        connection = RelayConnection(len(self.connections))
        self.connections.append(connection)

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter,
                       sender: str) -> None:
            try:
                while data := await source.read(65536):
                    connection._seen(sender, data, self._recording)
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pump(reader, up_writer, "F"), pump(up_reader, writer, "B"))

    def flights(self) -> int:
        """Client flights so far, over every connection."""
        return sum(c.flights for c in self.connections)

    def mark(self) -> dict[int, int]:
        """Messages recorded so far, by connection number: slice ``messages`` from a mark to
        see what came after it."""
        return {c.number: len(c.messages) for c in self.connections}


def relayed_url(url: str, relay: Relay) -> str:
    """``url`` pointed at the relay (plain TCP on loopback: no SSL or GSS negotiation)."""
    return make_conninfo(url, host="127.0.0.1", port=str(relay.port), sslmode="disable",
                         gssencmode="disable")
