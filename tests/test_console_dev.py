"""``oam-gateway dev`` serves the memory console: a person opens ``/console``, signs in as a
demo user on the development authorization server's page and sees their own memories only.

One ``oam-gateway dev`` process (its own embedded database and state, as in
``test_gateway_cli``), signed in to over HTTP as a browser does.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from console_live import ConsoleAt, csrf_token, signed_in
from test_gateway_cli import DevPlace, DevRun, dev_gateway


@pytest.fixture(scope="module")
def running() -> Iterator[DevRun]:
    parent = Path(tempfile.mkdtemp(prefix="oam-gateway-dev-console-"))
    place = DevPlace(parent / "pgdata", parent / "xdg")
    try:
        with dev_gateway(place) as run:
            yield run
    finally:
        from oracleagentmemory import embedded

        embedded.stop(place.data_dir)
        shutil.rmtree(parent, ignore_errors=True)


def test_dev_serves_the_console_to_its_demo_users(running: DevRun) -> None:
    console = ConsoleAt(running.base)
    assert any(f"{running.base}/console" in line for line in running.progress())
    alice = signed_in(console, "alice")
    added = alice.post("/console/memories", data={"content": "Alice's dev console note",
                                                  "csrf_token": csrf_token(alice)})
    assert added.status_code == 303
    memory = alice.get(added.headers["location"])
    assert memory.status_code == 200 and "Alice&#x27;s dev console note" in memory.text
    bob = signed_in(console, "bob")
    assert "dev console note" not in bob.get("/console/memories").text
    assert bob.get(added.headers["location"]).status_code == 404
