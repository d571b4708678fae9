"""Memory search configurations: token budgets, reranking, a top-k limit or LLM pruning.

The configurations only hold validated settings; :mod:`oracleagentmemory.core._postsearch`
applies them to a search's candidates, and :mod:`oracleagentmemory.core._tokens` applies the
budgets to the formatted results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from numbers import Real

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.llms import ILlm
from oracleagentmemory.apis.reranker import IReranker
from oracleagentmemory.apis.searchconfig import ISearchConfig
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

DEFAULT_NUM_PROBE_POINTS = 3
"""Ranked-result regions FAST and EXTENDED pruning probe when ``num_probe_points`` is omitted."""

DEFAULT_PROTECTED_FRACTION = 0.1
"""Fraction of the top direct results never pruned when ``protected_fraction`` is omitted."""


class PruningEvaluationMode(str, Enum):
    """How extensively pruning evaluates the ranked results (a ``str`` enum)."""

    FAST = "fast"
    """Probe a few ranked regions and cut after the lowest relevant probe (one judge call)."""
    EXTENDED = "extended"
    """Probe like FAST, then judge every result of the region after the cut individually."""
    EXHAUSTIVE = "exhaustive"
    """Judge every unprotected result individually (most LLM usage)."""


def check_budget(value: object, name: str) -> None:
    """Raise unless ``value`` is omitted, ``None`` or an int (a non-positive budget disables
    that bound, as ``None`` does).

    Raises:
        InvalidArgumentTypeError: not an int (``bool`` included).
    """
    if value is None or isinstance(value, _NotSetMarker):
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"{name} must be an int or None, got {type(value).__name__}", argument=name)


def check_positive_int(value: object, name: str) -> None:
    """Raise unless ``value`` is omitted or an int >= 1 (``bool`` rejected)."""
    if isinstance(value, _NotSetMarker):
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"{name} must be an int, got {type(value).__name__}", argument=name)
    if value < 1:
        raise InvalidArgumentError(f"{name} must be >= 1, got {value}", argument=name)


@dataclass(slots=True)
class MemorySearchConfig(ISearchConfig):
    """Post-search behaviour shared by every memory search configuration: token budgets.

    Args:
        token_budget: hard limit of the estimated size of the formatted results: complete
            results are kept in rank order while their cumulative estimate fits; if the first
            does not fit, none is returned.
        soft_token_budget: target size: complete results are kept in rank order through the
            first that reaches or exceeds it (the first result is kept unless the hard budget
            excludes it).

    Both are non-negative ints, ``None`` (no budget) or omitted (no budget).

    Raises:
        InvalidArgumentTypeError: a budget is not an int.
        InvalidArgumentError: a budget is negative.
    """

    token_budget: int | None | _NotSetMarker = NOT_SET_MARKER
    soft_token_budget: int | None | _NotSetMarker = NOT_SET_MARKER

    def __post_init__(self) -> None:
        check_budget(self.token_budget, "token_budget")
        check_budget(self.soft_token_budget, "soft_token_budget")


@dataclass(slots=True)
class _RerankingMemorySearchConfig(MemorySearchConfig):
    """A configuration that may rerank its best direct candidates.

    ``reranker`` scores the texts of the first ``reranker_max_candidates`` candidates (all of
    them when omitted) and reorders them by relevance; the others follow in their order.
    """

    reranker: IReranker | None | _NotSetMarker = NOT_SET_MARKER
    reranker_max_candidates: int | _NotSetMarker = NOT_SET_MARKER

    def __post_init__(self) -> None:
        MemorySearchConfig.__post_init__(self)
        if not (self.reranker is None or isinstance(self.reranker, IReranker | _NotSetMarker)):
            raise InvalidArgumentTypeError(
                f"reranker must be an IReranker or None, got {type(self.reranker).__name__}",
                argument="reranker")
        check_positive_int(self.reranker_max_candidates, "reranker_max_candidates")


@dataclass(slots=True)
class TopKMemorySearchConfig(_RerankingMemorySearchConfig):
    """Search with a fixed maximum of direct results, optionally reranked.

    Args:
        max_results: direct results retrieved before reranking (an int >= 1); omitted, the
            search call's own limit applies.

    Raises:
        InvalidArgumentTypeError / InvalidArgumentError: a field breaks its rule (the error's
            ``argument`` names it).
    """

    max_results: int | _NotSetMarker = NOT_SET_MARKER

    def __post_init__(self) -> None:
        _RerankingMemorySearchConfig.__post_init__(self)
        check_positive_int(self.max_results, "max_results")


@dataclass(slots=True)
class PruningMemorySearchConfig(_RerankingMemorySearchConfig):
    """Search that removes less relevant direct results, judged by an LLM.

    Direct-result limits come from each search call and apply before reranking and pruning.

    Args:
        pruner: the LLM that judges which results are relevant (keyword-only, required).
        evaluation_mode: how extensively results are judged (a :class:`PruningEvaluationMode`
            or its value); omitted means ``FAST``.
        num_probe_points: ranked-result regions probed in FAST or EXTENDED mode (int >= 1,
            default 3); it cannot be set with ``EXHAUSTIVE``.
        protected_fraction: fraction (0 to 1, default 0.1) of the highest-ranked direct
            results never pruned, rounded up: 0.1 protects the top 10 percent.

    Raises:
        InvalidArgumentTypeError / InvalidArgumentError: a field breaks its rule (the error's
            ``argument`` names it).
    """

    pruner: ILlm = field(kw_only=True)
    evaluation_mode: PruningEvaluationMode | _NotSetMarker = NOT_SET_MARKER
    num_probe_points: int | _NotSetMarker = NOT_SET_MARKER
    protected_fraction: float | _NotSetMarker = NOT_SET_MARKER

    def __post_init__(self) -> None:
        _RerankingMemorySearchConfig.__post_init__(self)
        if not isinstance(self.pruner, ILlm):
            raise InvalidArgumentTypeError(
                f"pruner must be an ILlm, got {type(self.pruner).__name__}", argument="pruner")
        self.evaluation_mode = _checked_mode(self.evaluation_mode)
        check_positive_int(self.num_probe_points, "num_probe_points")
        if (self.evaluation_mode is PruningEvaluationMode.EXHAUSTIVE
                and not isinstance(self.num_probe_points, _NotSetMarker)):
            raise InvalidArgumentError(
                "num_probe_points cannot be set when evaluation_mode is EXHAUSTIVE",
                argument="num_probe_points")
        fraction = self.protected_fraction
        if not isinstance(fraction, _NotSetMarker):
            if isinstance(fraction, bool) or not isinstance(fraction, Real):
                raise InvalidArgumentTypeError(
                    f"protected_fraction must be a number, got {type(fraction).__name__}",
                    argument="protected_fraction")
            if not 0.0 <= float(fraction) <= 1.0:
                raise InvalidArgumentError(
                    f"protected_fraction must be between 0 and 1, got {fraction}",
                    argument="protected_fraction")

    @property
    def resolved_evaluation_mode(self) -> PruningEvaluationMode:
        """The evaluation mode, ``FAST`` when omitted."""
        mode = self.evaluation_mode
        return PruningEvaluationMode.FAST if isinstance(mode, _NotSetMarker) else mode

    @property
    def resolved_num_probe_points(self) -> int:
        """The number of probe points, :data:`DEFAULT_NUM_PROBE_POINTS` when omitted."""
        points = self.num_probe_points
        return DEFAULT_NUM_PROBE_POINTS if isinstance(points, _NotSetMarker) else points

    @property
    def resolved_protected_fraction(self) -> float:
        """The protected fraction, :data:`DEFAULT_PROTECTED_FRACTION` when omitted."""
        fraction = self.protected_fraction
        return (DEFAULT_PROTECTED_FRACTION if isinstance(fraction, _NotSetMarker)
                else float(fraction))


def _checked_mode(mode: object) -> PruningEvaluationMode | _NotSetMarker:
    if isinstance(mode, PruningEvaluationMode | _NotSetMarker):
        return mode
    if not isinstance(mode, str):
        raise InvalidArgumentTypeError(
            f"evaluation_mode must be a PruningEvaluationMode, got {type(mode).__name__}",
            argument="evaluation_mode")
    try:
        return PruningEvaluationMode(mode)
    except ValueError:
        choices = ", ".join(m.value for m in PruningEvaluationMode)
        raise InvalidArgumentError(
            f"evaluation_mode must be one of {choices}, got {mode!r}",
            argument="evaluation_mode") from None


__all__ = [
    "DEFAULT_NUM_PROBE_POINTS",
    "DEFAULT_PROTECTED_FRACTION",
    "MemorySearchConfig",
    "PruningEvaluationMode",
    "PruningMemorySearchConfig",
    "TopKMemorySearchConfig",
]
