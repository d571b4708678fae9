"""The summary and context-card methods of a thread."""

from __future__ import annotations

import builtins
import logging
from typing import TYPE_CHECKING, Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.asynctwin import AsyncTwin
from oracleagentmemory.apis.records import MessageRecord
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.core._extraction import ThreadScope
from oracleagentmemory.core._messages import to_message
from oracleagentmemory.core._postsearch import apply_token_budgets
from oracleagentmemory.core._summaries import (
    DEFAULT_SUMMARY_TOKEN_BUDGET,
    ThreadDigest,
    durable_digest,
    save_digest,
    summarize,
    transcript,
    within_budget,
)
from oracleagentmemory.core._thread_settings import ThreadSettings
from oracleagentmemory.core.contextcard import OracleContextCard, OracleSummary
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError
from oracleagentmemory.observability._operation import THREAD, observed

LOG = logging.getLogger("oracleagentmemory.thread")


class ThreadContext:
    """Summaries and context cards; the thread supplies its store, ids, model and search."""

    if TYPE_CHECKING:
        _store: Any
        _thread_id: str
        _llm: Any
        _settings: ThreadSettings
        _search_config: Any

        def _scope(self) -> ThreadScope:
            raise NotImplementedError

        def search(self, /, query: str, *args: Any,
                   **arguments: Any) -> builtins.list[SearchResult]:
            raise NotImplementedError

    @observed(THREAD)
    def get_summary(self, /, except_last: Any = NOT_SET_MARKER,
                    token_budget: Any = NOT_SET_MARKER, **kwargs: Any) -> OracleSummary:
        """A summary of the thread (``except_last``: of all but its newest messages).

        The whole thread's summary is the durable one, refreshed by the model when messages came
        after it; a prefix (``except_last``) is summarized without changing it. Without a model,
        or when the model fails, it is the transcript of the newest messages (4,000 characters
        at most). ``token_budget`` (default 2,000; <= 0: none) cuts a longer summary.
        """
        if kwargs:
            raise InvalidArgumentTypeError(f"unexpected arguments: {', '.join(sorted(kwargs))}")
        tail = _count(except_last, "except_last", 0)
        budget = DEFAULT_SUMMARY_TOKEN_BUDGET if token_budget is NOT_SET_MARKER else _count(
            token_budget, "token_budget", None)
        digest = self._digest(tail)
        return OracleSummary(within_budget(digest.summary, budget))

    def _digest(self, except_last: int) -> ThreadDigest:
        """The summary of all messages but the newest ``except_last`` (see get_summary)."""
        messages = self._store.list_thread_messages(self._thread_id)
        if except_last:
            messages = messages[:-except_last]
        if not messages:
            return ThreadDigest("", (), None)
        if self._llm is None:
            return ThreadDigest(transcript(messages), (), messages[-1].seq_no)
        durable = durable_digest(self._store, self._thread_id)
        if durable is not None and durable.covered_through_seq_no == messages[-1].seq_no:
            return durable
        try:
            if except_last:
                return summarize(self._llm, messages, None,
                                 self._settings.extraction.memory_extraction_token_limit,
                                 self._settings.max_message_token_length)
            return self._refresh_summary(durable, messages)
        except Exception:  # the transcript stands in for a failing model
            LOG.warning("summary of thread %r failed", self._thread_id, exc_info=True)
            return ThreadDigest(transcript(messages), (), messages[-1].seq_no)

    def _refresh_summary(self, durable: ThreadDigest | None,
                         messages: builtins.list[MessageRecord]) -> ThreadDigest:
        """Summarize the messages after the durable summary and save the result."""
        assert self._llm is not None
        covered = durable.covered_through_seq_no if durable is not None else None
        newer = [m for m in messages if covered is None or m.seq_no > covered]
        digest = summarize(self._llm, newer or messages, durable,
                           self._settings.extraction.memory_extraction_token_limit,
                           self._settings.max_message_token_length)
        save_digest(self._store, self._scope(), digest, exists=durable is not None)
        return digest

    def _summary_due(self) -> None:
        """Automatic summary refresh (``enable_context_summary``): when enough messages came
        after the durable summary (``context_summary_update_frequency``; <= 0: every time)."""
        settings = self._settings.extraction
        if not settings.enable_context_summary or self._llm is None:
            return
        messages = self._store.list_thread_messages(self._thread_id)
        if not messages:
            return
        durable = durable_digest(self._store, self._thread_id)
        covered = durable.covered_through_seq_no if durable is not None else None
        waiting = sum(1 for m in messages if covered is None or m.seq_no > covered)
        if waiting and waiting >= settings.context_summary_update_frequency:
            self._refresh_summary(durable, messages)

    @observed(THREAD)
    def get_context_card(self, /, fallback_message_count: Any = NOT_SET_MARKER,
                         max_relevant_results: Any = NOT_SET_MARKER,
                         max_recent_messages: Any = NOT_SET_MARKER,
                         except_last_messages: Any = NOT_SET_MARKER,
                         min_relevant_results_by_type: Any = NOT_SET_MARKER,
                         metadata_filter: Any = NOT_SET_MARKER,
                         include_invalid_results: Any = NOT_SET_MARKER,
                         token_budget: Any = NOT_SET_MARKER,
                         soft_token_budget: Any = NOT_SET_MARKER,
                         **kwargs: Any) -> OracleContextCard:
        """Prompt-ready context: the thread's summary and topics, the records most relevant to
        it (memories of the thread's user and agent, and this thread's messages) and, when
        asked, its newest messages.

        ``except_last_messages=N`` keeps the newest N messages out of the summary and the
        relevant records (they go to the prompt separately, or into the card with
        ``max_recent_messages=N``).
        """
        if kwargs:
            raise InvalidArgumentTypeError(f"unexpected arguments: {', '.join(sorted(kwargs))}")
        fallback = _count(fallback_message_count, "fallback_message_count", 5)
        recent = _count(max_recent_messages, "max_recent_messages", 0)
        tail = _count(except_last_messages, "except_last_messages", 0)
        if tail and recent not in (0, tail):
            raise InvalidArgumentError(
                "max_recent_messages must be 0 or equal to except_last_messages",
                argument="max_recent_messages")
        minimums = _minimums(min_relevant_results_by_type)
        default_max = 5 if not minimums else 0
        limit = max(_count(max_relevant_results, "max_relevant_results", default_max),
                    sum(minimums.values()))
        messages = self._store.list_thread_messages(self._thread_id)
        considered = messages[:-tail] if tail else messages
        excluded = {m.id for m in messages[len(considered):]}
        if self._llm is not None and considered:
            digest = self._digest(tail)
        else:
            digest = ThreadDigest(transcript(considered[-fallback:]) if fallback else "", (),
                                  None)
        query = digest.summary or "\n".join(str(m.content) for m in considered[-fallback:])
        relevant = self._relevant(query, limit, minimums, excluded, metadata_filter,
                                  include_invalid_results, token_budget, soft_token_budget)
        recent_messages = [to_message(m) for m in messages[-recent:]] if recent else []
        return OracleContextCard(digest.summary, digest.topics, relevant, recent_messages)

    def _relevant(self, query: str, limit: int, minimums: dict[str, int], excluded: set[str],
                  metadata_filter: Any, include_invalid_results: Any, token_budget: Any,
                  soft_token_budget: Any) -> builtins.list[SearchResult]:
        """Per-type minimums first, then the best of every type up to ``limit``."""
        if not query.strip() or limit <= 0:
            return []
        chosen: builtins.list[SearchResult] = []
        seen: set[str | None] = set(excluded)
        requests = [({t}, n) for t, n in minimums.items() if n > 0]
        requests.append((set(CONTEXT_CARD_TYPES), limit))
        for record_types, count in requests:
            room = min(count, limit - len(chosen))
            if room <= 0:
                break
            found = self.search(query, max_results=room + len(seen),
                                record_types=sorted(record_types),
                                metadata_filter=metadata_filter,
                                include_invalid_results=include_invalid_results,
                                token_budget=None, soft_token_budget=None)
            for result in found:
                if result.id in seen or not self._in_card_scope(result):
                    continue
                chosen.append(result)
                seen.add(result.id)
                room -= 1
                if room == 0:
                    break
        return apply_token_budgets(chosen, self._search_config, token_budget=token_budget,
                                   soft_token_budget=soft_token_budget)

    def _in_card_scope(self, result: SearchResult) -> bool:
        """Messages in a context card come from this thread only."""
        record = result.record
        return record.record_type != "message" or getattr(record, "thread_id", None) \
            == self._thread_id

    get_summary_async = AsyncTwin(get_summary)
    get_context_card_async = AsyncTwin(get_context_card)


CONTEXT_CARD_TYPES = ("memory", "fact", "guideline", "preference", "message")
"""Record types a context card draws relevant records from."""


def _count(value: Any, name: str, default: int | None) -> int:
    """A non-negative int argument (``NOT_SET_MARKER``: ``default``; ``None``: 0)."""
    if value is NOT_SET_MARKER:
        return 0 if default is None else default
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(f"{name} must be an int", argument=name)
    if value < 0 and default is not None:
        raise InvalidArgumentError(f"{name} must be >= 0, got {value}", argument=name)
    return value


def _minimums(value: Any) -> dict[str, int]:
    if value is NOT_SET_MARKER or value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgumentTypeError("min_relevant_results_by_type must be a mapping",
                                       argument="min_relevant_results_by_type")
    unknown = set(value) - set(CONTEXT_CARD_TYPES)
    if unknown:
        raise InvalidArgumentError(
            f"min_relevant_results_by_type: unsupported record types {sorted(unknown)}",
            argument="min_relevant_results_by_type")
    return {t: _count(n, f"min_relevant_results_by_type[{t!r}]", 0) for t, n in value.items()}
