"""A loopback TCP relay in front of the embedded PostgreSQL that counts round trips.

A client connects to the relay's port; every byte goes on unchanged to the server's Unix socket
and back. A **flight** is a time the client sent data after having received data from the
server (or first): the number of round trips the client waited for.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["Relay", "relay"]


class Relay:
    """A running relay to one server; :attr:`flights` counts over all its connections."""

    def __init__(self, server_socket: str) -> None:
        self._server_socket = server_socket
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self.flights = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.socket(socket.AF_UNIX)
            server.connect(self._server_socket)
            state = {"server_spoke_last": True}
            threading.Thread(target=self._pump, args=(client, server, state, True),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, state, False),
                             daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, state: dict[str, bool],
              from_client: bool) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    if from_client and state["server_spoke_last"]:
                        self.flights += 1
                    state["server_spoke_last"] = not from_client
                target.sendall(data)
        except OSError:
            pass  # either end closed
        finally:
            for end in (source, target):
                with suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._listener.close()


@contextmanager
def relay(url: str) -> Iterator[tuple[Relay, str]]:
    """A relay in front of the server of ``url`` (a Unix-socket URL, as the embedded server's)
    and the same URL through it."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    directory = query.pop("host")
    port = query.pop("port", None) or str(parts.port or 5432)
    running = Relay(os.path.join(directory, f".s.PGSQL.{port}"))
    query.update(host="127.0.0.1", port=str(running.port))
    try:
        yield running, urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query),
                                   parts.fragment))
    finally:
        running.close()
