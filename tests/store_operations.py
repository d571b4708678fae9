"""One of each store operation, for the attack tests that run every operation of a store in a
context (both engines' twins): the refused write is the caller's, since its error differs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oracleagentmemory.core import OracleDBMemoryStore


def each_store_operation(store: OracleDBMemoryStore,
                         refused: Callable[[], None]) -> list[Callable[[], Any]]:
    """Adds, a list, a get, a search, an update, a relation and its list, ``refused`` (a write
    the policies must refuse) and a delete, on ``store`` (3-dimensional vectors)."""
    return [
        lambda: store.add(["note"], "memory", record_ids="c-1", embeddings=[[0.0, 1.0, 0.0]]),
        lambda: store.add(["note 2"], "memory", record_ids="c-2", embeddings=[[0.0, 1.0, 0.0]]),
        lambda: store.list("memory"),
        lambda: store.get("memory", "c-1"),
        lambda: store.search(None, 3, query_vector=[0.0, 1.0, 0.0]),
        lambda: store.update("memory", "c-1", content="changed"),
        lambda: store.add_relations("c-1", "memory", "c-2", "memory", "related"),
        lambda: store.list_relations(),
        refused,
        lambda: store.delete("memory", "c-2"),
    ]
