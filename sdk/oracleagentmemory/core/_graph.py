"""Graph expansion of search results over memory links (breadth-first, shortest-path tree).

The links come from one recursive query (:meth:`EngineSession.links_within_hops`: every visible
link within ``num_hops`` of the roots, at most :data:`GRAPH_EDGE_LIMIT`), and the memories at
their ends from one more; the breadth-first walk then runs here, over that edge set, exactly as
it runs hop by hop. Past the limit, or on an engine without the recursive query, the expansion
walks hop by hop instead (two round trips per hop: the links touching the frontier, and the
memories at their other ends); both ways build the same trees.
"""

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

GRAPH_EDGE_LIMIT = 10_000
"""The most links the recursive query of one search fetches; past it the expansion falls back to
the hop-by-hop walk (which fetches only what each hop's frontier touches)."""

Children = dict[str, list[tuple[RecordRelation, dict[str, Any]]]]
"""One root's tree: record id -> ``(relation, linked row)`` pairs, in attachment order."""


def expand_results(session: EngineSession,
                   results: list[tuple[Record, float]], plan: SearchPlan, num_hops: int,
                   max_linked: int, timeout: float = GRAPH_EXPANSION_TIMEOUT_SECONDS,
                   edge_limit: int = GRAPH_EDGE_LIMIT) -> list[tuple[Record, float]]:
    """``results`` with linked memories attached to each direct memory result.

    From each root, links are followed in both directions for up to ``num_hops`` hops; each
    linked memory appears once per root, at its shortest distance, under the record it was
    reached from (``linked_results`` holds ``(relation, record)`` pairs, nested by hop). Every
    linked memory obeys the search's scope, metadata, record-type and expiry filters; at most
    ``max_linked`` are attached per root, across all hops. Records are immutable: expanded
    results are new records (built complete); the others are returned as they are. The links
    come from one recursive query of at most ``edge_limit`` rows, else hop by hop.
    """
    roots = [n for n, (record, _) in enumerate(results) if record.record_type in MEMORY_TYPES]
    if num_hops == 0 or max_linked == 0 or not roots:
        return results
    trees = _shortest_path_trees(session, [results[n][0] for n in roots], plan,
                                 num_hops, max_linked, timeout, edge_limit)
    expanded = list(results)
    for n, children in zip(roots, trees, strict=True):
        record, distance = results[n]
        if children:
            linked = _linked_results(children, record.id)
            expanded[n] = (dataclasses.replace(record, linked_results=linked), distance)
    return expanded


class _Reach:
    """Every link within reach of the roots (creation order) and the allowed memories at their
    ends, fetched once; each hop then reads what :meth:`EngineSession.links_touching` and
    :meth:`EngineSession.select_linked_memories` would have returned for its frontier."""

    def __init__(self, links: list[dict[str, Any]], allowed: dict[str, dict[str, Any]]) -> None:
        self.links = links
        self.allowed = allowed

    def touching(self, node_ids: list[str]) -> list[dict[str, Any]]:
        nodes = set(node_ids)
        return [link for link in self.links
                if link["source_id"] in nodes or link["target_id"] in nodes]


def _reach(session: EngineSession, roots: list[Record], plan: SearchPlan, num_hops: int,
           edge_limit: int) -> _Reach | None:
    """The links within ``num_hops`` of the roots from one recursive query, or ``None`` (past
    ``edge_limit``, or an engine without it: walk hop by hop)."""
    links = session.links_within_hops(sorted({root.id for root in roots}), num_hops, edge_limit)
    if links is None:
        return None
    return _Reach(links, _allowed(session, links, plan))


def _allowed(session: EngineSession, links: list[dict[str, Any]], plan: SearchPlan
             ) -> dict[str, dict[str, Any]]:
    """The memories at the ends of ``links`` that the search's filters let through, by id."""
    ends = sorted({link["source_id"] for link in links} | {link["target_id"] for link in links})
    return {row["id"]: row for row in session.select_linked_memories(ends, plan)}


def _shortest_path_trees(session: EngineSession, roots: list[Record],
                         plan: SearchPlan, num_hops: int, max_linked: int,
                         timeout: float, edge_limit: int) -> list[Children]:
    """One breadth-first tree per root (every root's frontier at once, hop by hop, over the
    links of one recursive query or, past its limit, of one query per hop)."""
    deadline = time.monotonic() + timeout
    trees: list[Children] = [{} for _ in roots]
    visited = [{root.id} for root in roots]
    attached = [0] * len(roots)
    frontiers = [[root.id] for root in roots]
    reach = _reach(session, roots, plan, num_hops, edge_limit)
    _check_deadline(deadline, timeout)
    for _hop in range(num_hops):
        frontier_ids = sorted({node for nodes in frontiers for node in nodes})
        if not frontier_ids:
            break
        if reach is not None:
            links, allowed = reach.touching(frontier_ids), reach.allowed
        else:
            links = session.links_touching(frontier_ids)
            allowed = _allowed(session, links, plan)
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
