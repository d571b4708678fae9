"""LLM pruning of ranked search candidates.

The judge (an :class:`~oracleagentmemory.apis.llms.ILlm`) gets the query and numbered
candidate texts and answers ``{"relevant": [numbers]}`` (a JSON schema is sent). Pruning never
loses results by accident: when the judge fails or answers something that is not that JSON,
every candidate it was asked about is kept.

The top ``ceil(n * protected_fraction)`` candidates are never judged. The rest, in rank order,
are pruned according to the mode:

- ``EXHAUSTIVE``: every candidate is judged; the relevant ones are kept.
- ``FAST``: the unprotected candidates are split into ``num_probe_points`` contiguous regions
  and the last candidate of each region (its probe) is judged, in one call. Ranks are taken to
  be monotonic: everything through the lowest-ranked relevant probe is kept, the rest dropped.
- ``EXTENDED``: as FAST, then every candidate of the first region after the cut (its probe
  excepted, already judged irrelevant) is judged, and the relevant ones are kept too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import Sequence

from oracleagentmemory.apis.llms import ILlm, JsonSchema
from oracleagentmemory.apis.records import Record
from oracleagentmemory.core._xmltext import escape_text
from oracleagentmemory.core.searchconfig import PruningEvaluationMode
from oracleagentmemory.core.searchresult import record_text
from oracleagentmemory.observability._operation import generate_async as observed_generate_async

_log = logging.getLogger(__name__)

JUDGE_BATCH_SIZE = 20
"""Candidates judged in one LLM call (EXHAUSTIVE mode splits into batches of this size)."""

MAX_CONCURRENT_JUDGE_CALLS = 4
"""Judge calls of one pruning run in flight at once."""

JUDGE_RESPONSE_SCHEMA: JsonSchema = {
    "type": "object",
    "properties": {"relevant": {"type": "array", "items": {"type": "integer"}}},
    "required": ["relevant"],
    "additionalProperties": False,
}
"""The JSON schema the judge's answer must follow."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)

Candidate = tuple[Record, float]


def judge_prompt(query: str, texts: Sequence[str]) -> str:
    """The judge's prompt: the query and the candidates numbered from 1 (escaped text)."""
    candidates = "\n".join(
        f'<candidate number="{number}">{escape_text(text)}</candidate>'
        for number, text in enumerate(texts, start=1))
    return (
        "You decide which search results are relevant to a query. A result is relevant when "
        "it helps answer the query or gives context needed to answer it.\n"
        f"<query>{escape_text(query)}</query>\n"
        f"<candidates>\n{candidates}\n</candidates>\n"
        'Answer with JSON only: {"relevant": [the numbers of the relevant candidates]}. '
        'Answer {"relevant": []} when none is relevant.')


def parse_judgement(text: str, count: int) -> set[int] | None:
    """The 0-based indexes the judge called relevant, or ``None`` if the answer is invalid.

    Accepts the JSON object, optionally inside a Markdown code fence; numbers outside
    ``1..count`` are ignored.
    """
    fenced = _FENCE.match(text)
    try:
        answer = json.loads(fenced.group(1) if fenced else text)
    except (ValueError, TypeError):
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("relevant"), list):
        return None
    numbers = answer["relevant"]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        return None
    return {n - 1 for n in numbers if 1 <= n <= count}


async def judge(llm: ILlm, query: str, texts: Sequence[str]) -> set[int]:
    """Indexes of ``texts`` the judge finds relevant; all of them if it fails or answers badly."""
    if not texts:
        return set()
    everything = set(range(len(texts)))
    try:
        response = await observed_generate_async(llm, judge_prompt(query, texts),
                                                 response_json_schema=JUDGE_RESPONSE_SCHEMA)
    except Exception:  # noqa: BLE001 - a failing judge must never lose results
        _log.warning("pruning judge failed; keeping its %d candidates", len(texts),
                     exc_info=True)
        return everything
    relevant = parse_judgement(getattr(response, "text", ""), len(texts))
    if relevant is None:
        _log.warning("pruning judge answered invalid JSON; keeping its %d candidates",
                     len(texts))
        return everything
    return relevant


async def _judge_all(llm: ILlm, query: str, texts: Sequence[str]) -> set[int]:
    """:func:`judge` over batches of :data:`JUDGE_BATCH_SIZE`, a few calls at a time."""
    limit = asyncio.Semaphore(MAX_CONCURRENT_JUDGE_CALLS)

    async def one(start: int) -> set[int]:
        async with limit:
            found = await judge(llm, query, texts[start:start + JUDGE_BATCH_SIZE])
        return {start + index for index in found}

    batches = await asyncio.gather(*(one(start)
                                     for start in range(0, len(texts), JUDGE_BATCH_SIZE)))
    return set().union(*batches)


def protected_count(candidate_count: int, protected_fraction: float) -> int:
    """Candidates protected from pruning: ``ceil(count * fraction)``."""
    return min(candidate_count, math.ceil(candidate_count * protected_fraction - 1e-9))


def probe_regions(count: int, num_probe_points: int) -> list[range]:
    """``count`` positions split into ``min(num_probe_points, count)`` contiguous regions of
    near-equal size (the earlier regions are the larger)."""
    regions = min(num_probe_points, count)
    bounds = [round(i * count / regions) for i in range(regions + 1)] if regions else [0]
    return [range(bounds[i], bounds[i + 1]) for i in range(regions)]


async def prune(query: str, candidates: Sequence[Candidate], llm: ILlm, *,
                mode: PruningEvaluationMode, num_probe_points: int,
                protected_fraction: float) -> list[Candidate]:
    """The candidates pruning keeps, in their rank order (see the module docstring)."""
    protected = protected_count(len(candidates), protected_fraction)
    head, rest = list(candidates[:protected]), list(candidates[protected:])
    if not rest:
        return head
    texts = [record_text(record) for record, _ in rest]
    if mode is PruningEvaluationMode.EXHAUSTIVE:
        relevant = await _judge_all(llm, query, texts)
        return head + [c for i, c in enumerate(rest) if i in relevant]
    regions = probe_regions(len(rest), num_probe_points)
    probes = [region[-1] for region in regions]
    probe_hits = await judge(llm, query, [texts[p] for p in probes])
    hit_regions = [number for number, _ in enumerate(probes) if number in probe_hits]
    cut = regions[hit_regions[-1]].stop if hit_regions else 0
    kept = rest[:cut]
    if mode is PruningEvaluationMode.EXTENDED:
        after = next((r for r in regions if r.start == cut), None)
        if after is not None:
            unjudged = [i for i in after if i != after[-1]]
            found = await judge(llm, query, [texts[i] for i in unjudged])
            kept += [rest[unjudged[j]] for j in sorted(found)]
    return head + kept
