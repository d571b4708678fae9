"""Engine-neutral post-search steps of a memory search configuration.

The client calls, in this order:

1. :func:`retrieval_limit` for the ``k`` of the store search;
2. :func:`apply_post_search` (or :func:`run_post_search` from synchronous code) on the store's
   ``(record, distance)`` candidates: reranking, then the top-k cut or LLM pruning;
3. building :class:`~oracleagentmemory.core.searchresult.OracleSearchResult` objects, then
   :func:`apply_token_budgets` on them (per-call budgets override the configuration's).

Distances are carried through unchanged; only the order and the membership change.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Sequence

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.records import Record
from oracleagentmemory.apis.reranker import IReranker
from oracleagentmemory.apis.searchconfig import ISearchConfig
from oracleagentmemory.core._pruning import prune
from oracleagentmemory.core._tokens import ResultT, apply_token_budget
from oracleagentmemory.core.searchconfig import (
    MemorySearchConfig,
    PruningMemorySearchConfig,
    TopKMemorySearchConfig,
    _RerankingMemorySearchConfig,
    check_budget,
    check_positive_int,
)
from oracleagentmemory.core.searchresult import record_text
from oracleagentmemory.errors import InvalidArgumentTypeError

Candidate = tuple[Record, float]
"""A store search hit: the record and its distance (smaller is better)."""


def _checked_config(config: object) -> ISearchConfig | None:
    if config is None or isinstance(config, _NotSetMarker):
        return None
    if not isinstance(config, ISearchConfig):
        raise InvalidArgumentTypeError(
            f"search_config must be an ISearchConfig, got {type(config).__name__}",
            argument="search_config")
    return config


def retrieval_limit(config: ISearchConfig | None | _NotSetMarker,
                    max_results: int | _NotSetMarker, default: int) -> int:
    """The number of direct results to ask the store for.

    The call's ``max_results`` when given, else a :class:`TopKMemorySearchConfig`'s
    ``max_results`` when set, else ``default``.

    Raises:
        InvalidArgumentTypeError / InvalidArgumentError: ``max_results`` is not an int >= 1.
    """
    check_positive_int(max_results, "max_results")
    if not isinstance(max_results, _NotSetMarker):
        return max_results
    checked = _checked_config(config)
    if isinstance(checked, TopKMemorySearchConfig) and not isinstance(
            checked.max_results, _NotSetMarker):
        return checked.max_results
    return default


async def rerank_candidates(query: str, candidates: Sequence[Candidate],
                            reranker: IReranker | None | _NotSetMarker,
                            max_candidates: int | _NotSetMarker = NOT_SET_MARKER,
                            ) -> list[Candidate]:
    """``candidates`` with the first ``max_candidates`` (all when omitted) reordered by the
    reranker's relevance, highest first; the others follow in their order.

    Scores for an index out of range or already scored are ignored; candidates the reranker
    did not score follow the scored ones in their order. A reranker error propagates.
    """
    if reranker is None or isinstance(reranker, _NotSetMarker) or not candidates:
        return list(candidates)
    count = len(candidates) if isinstance(max_candidates, _NotSetMarker) else min(
        max_candidates, len(candidates))
    head = list(candidates[:count])
    response = await reranker.rerank_async(query, [record_text(record) for record, _ in head])
    scores: dict[int, float] = {}
    for result in response.results:
        if 0 <= result.index < count and result.index not in scores:
            scores[result.index] = float(result.relevance_score)
    order = sorted(scores, key=lambda index: (-scores[index], index))
    order += [index for index in range(count) if index not in scores]
    return [head[index] for index in order] + list(candidates[count:])


async def apply_post_search(config: ISearchConfig | None | _NotSetMarker, query: str,
                            candidates: Sequence[Candidate]) -> list[Candidate]:
    """Apply ``config`` to a store search's candidates (best first); returns the kept ones.

    A reranking configuration reranks first. A :class:`TopKMemorySearchConfig` then keeps
    its ``max_results`` first candidates (when set); a :class:`PruningMemorySearchConfig` asks
    its pruner which to keep (a failing or invalid judge keeps them). ``None``, an omitted
    config or a plain :class:`MemorySearchConfig` return the candidates unchanged.

    Raises:
        InvalidArgumentTypeError: ``config`` is not an ``ISearchConfig``.
    """
    checked = _checked_config(config)
    results = list(candidates)
    if isinstance(checked, _RerankingMemorySearchConfig):
        results = await rerank_candidates(query, results, checked.reranker,
                                          checked.reranker_max_candidates)
    if isinstance(checked, TopKMemorySearchConfig) and not isinstance(
            checked.max_results, _NotSetMarker):
        results = results[:checked.max_results]
    if isinstance(checked, PruningMemorySearchConfig):
        results = await prune(query, results, checked.pruner,
                              mode=checked.resolved_evaluation_mode,
                              num_probe_points=checked.resolved_num_probe_points,
                              protected_fraction=checked.resolved_protected_fraction)
    return results


def run_post_search(config: ISearchConfig | None | _NotSetMarker, query: str,
                    candidates: Sequence[Candidate]) -> list[Candidate]:
    """Synchronous :func:`apply_post_search` (in a worker thread, with the caller's context
    variables, when called from inside a running event loop)."""
    checked = _checked_config(config)
    if not _calls_a_model(checked):  # no reranker, no pruner: no event loop to pay for
        if isinstance(checked, TopKMemorySearchConfig) and not isinstance(
                checked.max_results, _NotSetMarker):
            return list(candidates[:checked.max_results])
        return list(candidates)
    coroutine = apply_post_search(config, query, candidates)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coroutine).result()


def _calls_a_model(config: ISearchConfig | None) -> bool:
    """Whether applying ``config`` asks a reranker or a pruning model."""
    if isinstance(config, PruningMemorySearchConfig):
        return True
    return isinstance(config, _RerankingMemorySearchConfig) and not isinstance(
        config.reranker, _NotSetMarker) and config.reranker is not None


def resolve_token_budgets(config: ISearchConfig | None | _NotSetMarker,
                          token_budget: int | None | _NotSetMarker = NOT_SET_MARKER,
                          soft_token_budget: int | None | _NotSetMarker = NOT_SET_MARKER,
                          ) -> tuple[int | None, int | None]:
    """The ``(hard, soft)`` budgets of a call: each per-call value overrides the config's
    (``None`` or a non-positive value disables it); omitted everywhere means no budget.

    Raises:
        InvalidArgumentTypeError / InvalidArgumentError: a per-call budget is not a
            non-negative int or ``None``.
    """
    check_budget(token_budget, "token_budget")
    check_budget(soft_token_budget, "soft_token_budget")
    checked = _checked_config(config)
    base = checked if isinstance(checked, MemorySearchConfig) else MemorySearchConfig()

    def pick(call: int | None | _NotSetMarker, configured: int | None | _NotSetMarker,
             ) -> int | None:
        value = configured if isinstance(call, _NotSetMarker) else call
        return None if isinstance(value, _NotSetMarker) or value is None or value <= 0 \
            else value

    return (pick(token_budget, base.token_budget),
            pick(soft_token_budget, base.soft_token_budget))


def apply_token_budgets(results: Sequence[ResultT],
                        config: ISearchConfig | None | _NotSetMarker,
                        *, token_budget: int | None | _NotSetMarker = NOT_SET_MARKER,
                        soft_token_budget: int | None | _NotSetMarker = NOT_SET_MARKER,
                        ) -> list[ResultT]:
    """The results that fit the call's budgets (see :func:`resolve_token_budgets` and
    :func:`oracleagentmemory.core._tokens.apply_token_budget`)."""
    hard, soft = resolve_token_budgets(config, token_budget, soft_token_budget)
    return apply_token_budget(results, hard, soft)
