"""Per-engine test provisioning (the pattern of SQLAlchemy's ``provision.py``).

Each engine module here offers one :class:`Provisioner`: whether its database is reachable
(and why not), and how to start or reach it for a test session. ``tests/conftest.py``
parametrises the behavioural fixtures (``make_store``, ``store``...) over every reachable engine,
so the same suite runs on each; engine-specific tests ask for their engine's fixture directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol


class Provisioner(Protocol):
    """How the suite reaches one engine's database."""

    name: str
    """The engine name (``EngineCapabilities.name``), used as the test parameter id."""

    def unavailable(self) -> str | None:
        """Why this engine cannot run here (``None``: it can)."""

    def database(self) -> AbstractContextManager[object]:
        """Start or reach the database for a test session; yields the admin's connection
        source that ``OracleDBMemoryStore`` accepts as ``pool`` (a URL, or a driver pool)."""


@dataclass(frozen=True)
class EngineStatus:
    """One engine's availability, as the pytest header reports it."""

    name: str
    reason: str | None


def provisioners() -> list[Provisioner]:
    """Every engine the suite knows, PostgreSQL first."""
    from .oracle import ORACLE
    from .postgres import POSTGRES

    return [POSTGRES, ORACLE]


def reachable() -> list[Provisioner]:
    """The engines whose database this run can use."""
    return [p for p in provisioners() if p.unavailable() is None]


def statuses() -> Iterator[EngineStatus]:
    """Every engine with the reason it is not run (``None`` when it is)."""
    for provisioner in provisioners():
        yield EngineStatus(provisioner.name, provisioner.unavailable())
