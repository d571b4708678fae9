"""The gateway's version: the installed package's (OpenAPI ``info.version``, MCP ``serverInfo``)."""

from __future__ import annotations

from importlib import metadata

__all__ = ["DISTRIBUTION", "gateway_version"]

DISTRIBUTION = "oam-secure-gateway"


def gateway_version() -> str:
    """The installed version of the gateway's distribution (``"0"`` when not installed)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0"
