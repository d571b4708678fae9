"""The verified caller of a request."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    """The verified caller: who they are, their groups, their tenant."""

    user_name: str
    """The end user, namespaced ``<identity provider>:<user>`` when a provider is configured."""
    groups: tuple[str, ...]
    tenant: str
    expires_at: int
    """The token's ``exp`` (seconds since the epoch)."""
