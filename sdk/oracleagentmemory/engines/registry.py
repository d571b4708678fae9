"""The engine registry: which engine serves a connection, a pool or a URL.

Each engine registers one :class:`EngineEntry`. Matching looks only at the source's type and URL
scheme, so choosing an engine never imports another engine's driver; the chosen engine's module
is imported when it is first used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from oracleagentmemory.engines.interfaces import EndUserContext, Engine
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedEngineError,
)


@dataclass(frozen=True)
class EngineEntry:
    """How to recognise an engine's sources and where its :class:`Engine` class lives."""

    name: str
    engine_path: str
    """``"package.module:ClassName"`` of the :class:`Engine` subclass."""
    driver_modules: tuple[str, ...]
    """Top-level modules of the driver objects it takes (connections, pools, contexts)."""
    url_schemes: tuple[str, ...] = ()
    """URL schemes it opens itself (``"postgresql"``)."""
    unavailable: str | None = None
    """Why the engine cannot be used in this release (``None``: it can)."""

    def accepts(self, source: object) -> bool:
        """Whether ``source`` is one of this engine's connections, pools or URLs (a subclass of
        a driver's connection or pool class counts: its classes include the driver's)."""
        if isinstance(source, str):
            return source.split("://", 1)[0] in self.url_schemes and "://" in source
        return any(cls.__module__.split(".", 1)[0] in self.driver_modules
                   for cls in type(source).__mro__)

    def load(self) -> type[Engine]:
        """Import the engine class (raises :class:`UnsupportedEngineError` when unavailable)."""
        if self.unavailable is not None:
            raise UnsupportedEngineError(self.unavailable)
        module_name, class_name = self.engine_path.split(":")
        engine_class = getattr(importlib.import_module(module_name), class_name)
        if not (isinstance(engine_class, type) and issubclass(engine_class, Engine)):
            raise TypeError(f"{self.engine_path} is not an Engine")
        return engine_class


_ENTRIES: list[EngineEntry] = [
    EngineEntry(
        name="postgresql",
        engine_path="oracleagentmemory.engines.postgres.engine:PostgresEngine",
        driver_modules=("psycopg", "psycopg_pool"),
        url_schemes=("postgresql", "postgres"),
    ),
    EngineEntry(
        name="oracle",
        engine_path="oracleagentmemory.engines.oracle.engine:OracleEngine",
        driver_modules=("oracledb",),
        url_schemes=("oracle", "oracle+tcps", "oracle+tcp"),
    ),
]


def register_engine(entry: EngineEntry) -> None:
    """Add (or replace, by name) an engine entry; later entries are matched first."""
    _ENTRIES[:] = [e for e in _ENTRIES if e.name != entry.name]
    _ENTRIES.insert(0, entry)


def engine_entries() -> tuple[EngineEntry, ...]:
    """The registered engines, in matching order."""
    return tuple(_ENTRIES)


def entry_for(source: object) -> EngineEntry:
    """The engine entry that accepts ``source``."""
    for entry in _ENTRIES:
        if entry.accepts(source):
            return entry
    if isinstance(source, str):
        schemes = sorted({s for e in _ENTRIES if e.unavailable is None for s in e.url_schemes})
        raise InvalidArgumentError(
            f"pool: a URL must start with {' or '.join(s + '://' for s in schemes)}",
            argument="pool")
    raise InvalidArgumentTypeError(
        "pool must be a psycopg Connection or psycopg_pool ConnectionPool, a postgresql:// URL, "
        f"or an oracledb connection or pool; got {type(source).__name__}", argument="pool")


def make_engine(source: object) -> Engine:
    """The engine for ``source``: a driver connection or pool, or a URL it opens itself."""
    return entry_for(source).load()(source)


def recognises_context(security_context: object) -> bool:
    """Whether some registered engine can apply ``security_context``."""
    if isinstance(security_context, EndUserContext):
        return True
    module = type(security_context).__module__.split(".", 1)[0]
    return any(module in entry.driver_modules for entry in _ENTRIES)
