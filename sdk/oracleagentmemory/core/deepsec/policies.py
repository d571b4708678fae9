"""The Deep Data Security policies an admin installs on a memory store."""

from __future__ import annotations

from dataclasses import dataclass

from oam_policies import GLOBAL_MEMORIES, OWN_USER_ROWS, DataRolePolicy


@dataclass(frozen=True)
class DeepDataSecurityPolicy:
    """A data role with its data grants, installed per memory store."""

    @property
    def declaration(self) -> DataRolePolicy:
        """The engine-neutral declaration from :mod:`oam_policies`."""
        raise NotImplementedError


@dataclass(frozen=True)
class UserOwnRowsDeepDataSecurityPolicy(DeepDataSecurityPolicy):
    """End users read and write only the rows whose ``user_id`` is their own name (and their
    own user profile, and links between their own memories)."""

    @property
    def declaration(self) -> DataRolePolicy:
        return OWN_USER_ROWS


@dataclass(frozen=True)
class GlobalMemoriesDeepDataSecurityPolicy(DeepDataSecurityPolicy):
    """End users read memories with no ``user_id`` (shared knowledge); they cannot write them."""

    @property
    def declaration(self) -> DataRolePolicy:
        return GLOBAL_MEMORIES


POLICY_BY_NAME: dict[str, DeepDataSecurityPolicy] = {
    OWN_USER_ROWS.name: UserOwnRowsDeepDataSecurityPolicy(),
    GLOBAL_MEMORIES.name: GlobalMemoriesDeepDataSecurityPolicy(),
}
