"""The search-configuration contract."""

from __future__ import annotations

from abc import ABC


class ISearchConfig(ABC):  # noqa: B024 - a contract by role; the core configs carry the behaviour
    """Post-search behaviour of a memory search: reranking, result limits, pruning, budgets.

    Concrete configurations live in :mod:`oracleagentmemory.core` (``MemorySearchConfig``,
    ``TopKMemorySearchConfig``, ``PruningMemorySearchConfig``).
    """


__all__ = ["ISearchConfig"]
