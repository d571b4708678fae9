"""Graph expansion of search results over memory links (breadth-first, shortest-path tree)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from oracleagentmemory.apis.records import MEMORY_TYPES, LinkedResults, Record
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.core._records import record_from_row
from oracleagentmemory.core._relations import relation_from_row
from oracleagentmemory.engines.interfaces import EngineSession, SearchPlan
from oracleagentmemory.errors import OperationTimeoutError

GRAPH_EXPANSION_TIMEOUT_SECONDS = 5.0
"""Wall-clock bound of one search's graph expansion; past it, ``search`` raises TimeoutError."""

Children = dict[str, list[tuple[RecordRelation, dict[str, Any]]]]
"""One root's tree: record id -> ``(relation, linked row)`` pairs, in attachment order."""


def expand_results(session: EngineSession,
                   results: list[tuple[Record, float]], plan: SearchPlan, num_hops: int,
                   max_linked: int, timeout: float = GRAPH_EXPANSION_TIMEOUT_SECONDS,
                   ) -> list[tuple[Record, float]]:
    """``results`` with linked memories attached to each direct memory result.

    From each root, links are followed in both directions for up to ``num_hops`` hops; each
    linked memory appears once per root, at its shortest distance, under the record it was
    reached from (``linked_results`` holds ``(relation, record)`` pairs, nested by hop). Every
    linked memory obeys the search's scope, metadata, record-type and expiry filters; at most
    ``max_linked`` are attached per root, across all hops. Records are immutable: expanded
    results are new records (built complete); the others are returned as they are.
    """
    roots = [n for n, (record, _) in enumerate(results) if record.record_type in MEMORY_TYPES]
    if num_hops == 0 or max_linked == 0 or not roots:
        return results
    trees = _shortest_path_trees(session, [results[n][0] for n in roots], plan,
                                 num_hops, max_linked, timeout)
    expanded = list(results)
    for n, children in zip(roots, trees, strict=True):
        record, distance = results[n]
        if children:
            linked = _linked_results(children, record.id)
            expanded[n] = (dataclasses.replace(record, linked_results=linked), distance)
    return expanded


def _shortest_path_trees(session: EngineSession, roots: list[Record],
                         plan: SearchPlan, num_hops: int, max_linked: int,
                         timeout: float) -> list[Children]:
    """One breadth-first tree per root (hop by hop, every root's frontier in one query)."""
    deadline = time.monotonic() + timeout
    trees: list[Children] = [{} for _ in roots]
    visited = [{root.id} for root in roots]
    attached = [0] * len(roots)
    frontiers = [[root.id] for root in roots]
    for _hop in range(num_hops):
        frontier_ids = sorted({node for nodes in frontiers for node in nodes})
        if not frontier_ids:
            break
        links = session.links_touching(frontier_ids)
        others = sorted({link["source_id"] for link in links}
                        | {link["target_id"] for link in links})
        allowed: dict[str, dict[str, Any]] = {
            row["id"]: row for row in session.select_linked_memories(others, plan)
        }
        _check_deadline(deadline, timeout)
        for key, tree in enumerate(trees):
            next_frontier: list[str] = []
            for node in frontiers[key]:
                for link in links:
                    if attached[key] >= max_linked:
                        break
                    if link["source_id"] == node:
                        other = link["target_id"]
                    elif link["target_id"] == node:
                        other = link["source_id"]
                    else:
                        continue
                    if other in visited[key] or other not in allowed:
                        continue
                    tree.setdefault(node, []).append((relation_from_row(link), allowed[other]))
                    visited[key].add(other)
                    attached[key] += 1
                    next_frontier.append(other)
            frontiers[key] = next_frontier
        _check_deadline(deadline, timeout)
    return trees


def _linked_results(children: Children, record_id: str) -> LinkedResults:
    """The ``linked_results`` of ``record_id``: its children, each built with its own subtree."""
    return tuple(
        (relation, record_from_row(row, linked_results=_linked_results(children, row["id"])))
        for relation, row in children.get(record_id, ())
    )


def _check_deadline(deadline: float, timeout: float) -> None:
    if time.monotonic() > deadline:
        raise OperationTimeoutError(f"graph expansion took longer than {timeout:g} seconds")
