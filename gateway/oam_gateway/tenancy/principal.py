"""The verified caller of a request."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["READ_SCOPE", "WRITE_SCOPE", "Principal"]

READ_SCOPE = "memory:read"
WRITE_SCOPE = "memory:write"


@dataclass(frozen=True)
class Principal:
    """The verified caller: who they are, their groups, their tenant and scopes."""

    user_name: str
    """The end user as the database names them: ``<identity provider>:<subject>`` when the
    tenant vouches for identity-provider users, the subject itself otherwise."""
    groups: tuple[str, ...]
    tenant: str
    expires_at: int
    """The token's ``exp`` (seconds since the epoch)."""
    subject: str = ""
    """The token's user claim, as the identity provider wrote it."""
    scopes: frozenset[str] = frozenset()
    token: str = field(default="", repr=False, compare=False)
    """The bearer token itself (forwarded to the database in token mode; never logged)."""

    def may(self, scope: str, *, enforced: bool = True) -> bool:
        """Whether the caller holds ``scope`` (always, when scopes are not enforced)."""
        return not enforced or scope in self.scopes
