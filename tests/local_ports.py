"""A local TCP port nothing listens on: where tests reach a database that is not there."""

from __future__ import annotations

import socket


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
