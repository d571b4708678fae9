"""Graph expansion of search results over memory links (breadth-first, shortest-path tree)."""

from __future__ import annotations

import time
from typing import Any

from oracleagentmemory.apis.records import MEMORY_TYPES, Record
from oracleagentmemory.core._records import record_from_row
from oracleagentmemory.core._relations import relation_from_row
from oracleagentmemory.engines.base import EngineSession, SearchPlan
from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.errors import OperationTimeoutError

GRAPH_EXPANSION_TIMEOUT_SECONDS = 5.0
"""Wall-clock bound of one search's graph expansion; past it, ``search`` raises TimeoutError."""


def expand_results(session: EngineSession, names: StoreNames, roots: list[Record],
                   plan: SearchPlan, num_hops: int, max_linked: int,
                   timeout: float = GRAPH_EXPANSION_TIMEOUT_SECONDS) -> None:
    """Attach linked memories to each direct memory result, in place.

    From each root, links are followed in both directions for up to ``num_hops`` hops; each
    linked memory appears once per root, at its shortest distance, under the record it was
    reached from (``linked_results`` holds ``(relation, record)`` pairs, nested by hop). Every
    linked memory obeys the search's scope, metadata, record-type and expiry filters; at most
    ``max_linked`` are attached per root, across all hops.
    """
    roots = [r for r in roots if r.record_type in MEMORY_TYPES]
    if num_hops == 0 or max_linked == 0 or not roots:
        return
    deadline = time.monotonic() + timeout
    visited = {id(root): {root.id} for root in roots}
    attached = {id(root): 0 for root in roots}
    frontiers: dict[int, list[Record]] = {id(root): [root] for root in roots}
    for _hop in range(num_hops):
        frontier_ids = sorted({node.id for nodes in frontiers.values() for node in nodes})
        if not frontier_ids:
            return
        links = session.links_touching(names, frontier_ids)
        others = sorted({link["source_id"] for link in links}
                        | {link["target_id"] for link in links})
        allowed: dict[str, dict[str, Any]] = {
            row["id"]: row for row in session.select_linked_memories(names, others, plan)
        }
        _check_deadline(deadline, timeout)
        for root in roots:
            key = id(root)
            next_frontier: list[Record] = []
            for node in frontiers[key]:
                for link in links:
                    if attached[key] >= max_linked:
                        break
                    if link["source_id"] == node.id:
                        other = link["target_id"]
                    elif link["target_id"] == node.id:
                        other = link["source_id"]
                    else:
                        continue
                    if other in visited[key] or other not in allowed:
                        continue
                    linked = record_from_row(allowed[other])
                    node.linked_results.append(  # type: ignore[attr-defined]
                        (relation_from_row(link), linked))
                    visited[key].add(other)
                    attached[key] += 1
                    next_frontier.append(linked)
            frontiers[key] = next_frontier
        _check_deadline(deadline, timeout)


def _check_deadline(deadline: float, timeout: float) -> None:
    if time.monotonic() > deadline:
        raise OperationTimeoutError(f"graph expansion took longer than {timeout:g} seconds")
