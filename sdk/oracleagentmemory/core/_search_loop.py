"""The engine-neutral search loop: rounds of candidates until ``k`` distinct records are known,
best chunk per record, and reciprocal-rank fusion (hybrid sides, and the chunks of a long query).

Every engine supplies candidate rounds (:class:`CandidateSource`); the rules that make results
the same on every engine live here: a search never silently under-returns (an approximate round
that comes up short is repeated exactly), a record ranks by its best chunk, ties break by record
id, and fused distances lie in ``[0, 1)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from oracleagentmemory.core._hybrid_fusion import HYBRID_RRF_K, HYBRID_WEIGHTS
from oracleagentmemory.engines.interfaces import Candidate, CandidateSource, SearchHit

RRF_K = 60
"""Reciprocal-rank-fusion constant: a record ranked ``r`` (from 1) scores ``1 / (RRF_K + r)``."""
BUDGET_GROWTH = 4
"""How much a round widens its window when records with many chunks filled it."""


def first_budget(k: int) -> int:
    """The candidate window of the first round."""
    return max(k * 4, 40)


def best_per_record(rows: Sequence[Candidate]) -> list[SearchHit]:
    """Each record once, at its best (smallest) distance; ordered by distance, then id."""
    best: dict[tuple[str, str], float] = {}
    for record_type, record_id, distance in rows:
        key = (record_type, record_id)
        if key not in best or distance < best[key]:
            best[key] = float(distance)
    ordered = sorted(best.items(), key=lambda item: (item[1], item[0][1]))
    return [SearchHit(t, i, d) for (t, i), d in ordered]


def fuse(rankings: Sequence[Sequence[SearchHit]], weights: Sequence[float] | None = None,
         k: int = RRF_K) -> list[SearchHit]:
    """Reciprocal-rank fusion of rankings (each best first, each record at most once).

    A record ranked ``r`` (from 1) in a ranking scores ``weight / (k + r)`` (weights 1 unless
    given, one per ranking); scores add up over the rankings. The fused distance is
    ``1 - score / best_possible``, where ``best_possible`` is the score of a record ranked first
    in every ranking: it lies in ``[0, 1)`` and ascends with the fused rank. Ties break by
    record id.
    """
    if len(rankings) == 1:
        return list(rankings[0])
    weights = [1.0] * len(rankings) if weights is None else list(weights)
    scores: dict[tuple[str, str], float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, hit in enumerate(ranking, start=1):
            key = (hit.record_type, hit.record_id)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    best_possible = sum(weights) / (k + 1)
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0][1]))
    return [SearchHit(t, i, max(0.0, 1.0 - score / best_possible)) for (t, i), score in ordered]


def run_search(source: CandidateSource, k: int) -> list[SearchHit]:
    """Up to ``k`` distinct records, best first, from ``source``'s rounds (a hybrid round's two
    sides fused with the weights of ``core._hybrid_fusion``).

    A round whose sides all came back shorter than the window returned every match: if it was
    exact, that is the answer; if it was approximate, it is repeated exactly before returning
    fewer than ``k``. A full window with fewer than ``k`` records (records with many chunks)
    widens the window.
    """
    budget = first_budget(k)
    exact: bool | None = None
    while True:
        found = source.round(budget, exact)
        sides = [best_per_record(side) for side in found.sides]
        hits = (fuse(sides, HYBRID_WEIGHTS, HYBRID_RRF_K) if len(sides) == len(HYBRID_WEIGHTS)
                else fuse(sides))
        if len(hits) >= k:
            return hits[:k]
        if all(len(side) < budget for side in found.sides):
            if found.exact:
                return hits
            exact = True
            continue
        exact = found.exact
        budget *= BUDGET_GROWTH
