"""After start-up the gateway's long-lived objects are frozen out of the garbage collector's
scans (:func:`gc.freeze`), so collections during requests walk only what requests create."""

from __future__ import annotations

import gc
from pathlib import Path

import httpx
from gateway_harness import gateway_settings, live_server, make_issuer
from oam_gateway.app import create_app


def test_start_up_freezes_what_it_built(tmp_path: Path) -> None:
    _, jwks_file = make_issuer(tmp_path)
    # A database URL nothing listens on: start-up opens pools in the background only.
    app = create_app(gateway_settings(jwks_file, "postgresql://nobody@127.0.0.1:1/none"))
    gc.unfreeze()
    assert gc.get_freeze_count() == 0  # positive control: nothing frozen before start-up
    with live_server(app) as base:
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
        assert gc.get_freeze_count() > 0
    gc.unfreeze()  # the test process's own objects go back to the collector
