"""The gateway as an ASGI application factory, for servers that start several worker processes.

``oam-gateway serve --workers N`` runs uvicorn with ``oam_gateway.asgi:app_from_environment``
(``factory=True``): each worker process builds its own app (its own pools, caches and, with
``memory://``, rate-limit counters) from the settings file named by :data:`SETTINGS_FILE_ENV`
and the ``OAM_GATEWAY_*`` variables.
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.applications import Starlette

from oam_gateway.app import create_app
from oam_gateway.config.settings import load_settings
from oam_gateway.middleware.request_log import configure_audit_log

__all__ = ["SETTINGS_FILE_ENV", "app_from_environment"]

SETTINGS_FILE_ENV = "OAM_GATEWAY_SETTINGS_FILE"
"""The settings file of every worker (unset: the environment alone)."""


def app_from_environment() -> Starlette:
    """The gateway of the settings file in :data:`SETTINGS_FILE_ENV` and the environment."""
    path = os.environ.get(SETTINGS_FILE_ENV)
    configure_audit_log()
    return create_app(load_settings(Path(path) if path else None))
