"""Token estimates and token budgets of formatted search output.

The estimate is model-neutral: about 3.5 characters per token, at least one token per text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from oracleagentmemory.apis.searchresult import SearchResult

CHARACTERS_PER_TOKEN = 3.5
"""Characters one estimated token stands for."""

ResultT = TypeVar("ResultT", bound=SearchResult)


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text`` (``len / 3.5`` rounded, never below 1)."""
    return max(1, round(len(text) / CHARACTERS_PER_TOKEN))


def apply_token_budget(results: Sequence[ResultT], token_budget: int | None,
                       soft_token_budget: int | None = None) -> list[ResultT]:
    """The leading complete results that fit the budgets, in rank order.

    Each result costs the estimate of its ``formatted_content``. With a hard ``token_budget``,
    results are kept while their cumulative estimate fits it: if the first does not fit,
    nothing is returned. With a ``soft_token_budget``, results are kept through the first
    whose cumulative estimate reaches or exceeds it (so the first result is kept unless the hard
    budget excludes it). ``None`` disables a budget.
    """
    if token_budget is None and soft_token_budget is None:
        return list(results)
    kept: list[ResultT] = []
    used = 0
    for result in results:
        cost = estimate_tokens(result.formatted_content)
        if token_budget is not None and used + cost > token_budget:
            break
        kept.append(result)
        used += cost
        if soft_token_budget is not None and used >= soft_token_budget:
            break
    return kept
