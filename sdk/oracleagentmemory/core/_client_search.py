"""Search for the agent-memory client and its threads: scope defaults per layer, then the store.

Scope rules (spec, "Search scope resolution by API layer"):

- client: ``user_id`` must be explicit with ``exact_user_match=True`` (in a ``NO_CHECK`` store an
  omitted ``user_id`` is the end user of the active context); omitted agent and thread stay broad;
- thread: the thread's user and agent, matched exactly, and its own thread id, not exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.scope import SearchScope
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.core._postsearch import (
    apply_token_budgets,
    retrieval_limit,
    run_post_search,
)
from oracleagentmemory.core.searchresult import OracleSearchResult
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

DEFAULT_MAX_RESULTS = 10
_SCOPE_ARGUMENTS = ("user_id", "agent_id", "thread_id", "exact_user_match",
                    "exact_agent_match", "exact_thread_match")


@dataclass(frozen=True)
class ResolvedScope:
    """A search scope with every field concrete."""

    user_id: str | None
    agent_id: str | None
    thread_id: str | None
    exact_user_match: bool
    exact_agent_match: bool
    exact_thread_match: bool


def given_scope(scope: object, arguments: dict[str, Any]) -> SearchScope:
    """The scope a call gives: ``scope`` or the explicit arguments, never both."""
    explicit = {k: arguments[k] for k in _SCOPE_ARGUMENTS
                if arguments.get(k, NOT_SET_MARKER) is not NOT_SET_MARKER}
    if scope is NOT_SET_MARKER:
        return SearchScope(**explicit)
    if not isinstance(scope, SearchScope):
        raise InvalidArgumentTypeError("scope must be a SearchScope", argument="scope")
    if explicit:
        raise InvalidArgumentError(
            f"pass either scope or {', '.join(sorted(explicit))}, not both", argument="scope")
    return scope


def _pick(value: Any, default: Any) -> Any:
    return default if value is NOT_SET_MARKER else value


def client_scope(scope: SearchScope, default_user: str | _NotSetMarker) -> ResolvedScope:
    """Resolve a client search scope; the user must be explicit and matched exactly."""
    user = _pick(scope.user_id, default_user)
    if user is NOT_SET_MARKER:
        raise InvalidArgumentError(
            "user_id is required: client searches need an explicit user scope (None targets "
            "only records without a user)", argument="user_id")
    if scope.exact_user_match is False:
        raise InvalidArgumentError("exact_user_match=False is not allowed in client searches",
                                   argument="exact_user_match")
    return _resolved(scope, user, True, _pick(scope.agent_id, None), False,
                     _pick(scope.thread_id, None), False)


def thread_scope(scope: SearchScope, user_id: str | None, agent_id: str | None,
                 thread_id: str) -> ResolvedScope:
    """Resolve a thread search scope: the thread's user and agent exactly, its thread broadly."""
    return _resolved(scope, _pick(scope.user_id, user_id), True, _pick(scope.agent_id, agent_id),
                     True, _pick(scope.thread_id, thread_id), False)


def _resolved(scope: SearchScope, user: Any, exact_user: bool, agent: Any, exact_agent: bool,
              thread: Any, exact_thread: bool) -> ResolvedScope:
    flags = {}
    for name, default in (("exact_user_match", exact_user), ("exact_agent_match", exact_agent),
                          ("exact_thread_match", exact_thread)):
        value = _pick(getattr(scope, name), default)
        if not isinstance(value, bool):
            raise InvalidArgumentTypeError(f"{name} must be a bool", argument=name)
        flags[name] = value
    for name, value in (("user_id", user), ("agent_id", agent), ("thread_id", thread)):
        if value is not None and not isinstance(value, str):
            raise InvalidArgumentTypeError(f"{name} must be a str or None", argument=name)
    return ResolvedScope(user, agent, thread, **flags)


def search_records(store_search: Callable[..., list[tuple[Any, float]]], query: str,
                   scope: ResolvedScope, *, config: Any, max_results: object,
                   token_budget: object, soft_token_budget: object, record_types: object,
                   metadata_filter: object, num_hops: object, max_linked_results: object,
                   include_invalid_results: object) -> list[SearchResult]:
    """The store search under ``scope``, then the search configuration: reranking over its
    candidates, the top-k cut or LLM pruning, and the token budgets of the formatted results."""
    if not isinstance(query, str):
        raise InvalidArgumentTypeError("query must be a str", argument="query")
    # The direct-result limit applies to retrieval, before reranking and pruning (spec 004).
    limit = retrieval_limit(config, max_results, DEFAULT_MAX_RESULTS)  # type: ignore[arg-type]
    options: dict[str, Any] = {}
    if record_types is not NOT_SET_MARKER and record_types is not None:
        if isinstance(record_types, str):
            raise InvalidArgumentTypeError("record_types must be a list of record types",
                                           argument="record_types")
        options["record_types"] = set(record_types)  # type: ignore[call-overload]
    for name, value in (("metadata_filter", metadata_filter), ("num_hops", num_hops),
                        ("max_linked_results", max_linked_results),
                        ("include_invalid_results", include_invalid_results)):
        if value is not NOT_SET_MARKER:
            options[name] = value
    candidates = store_search(
        query, limit, user_id=scope.user_id, agent_id=scope.agent_id,
        thread_id=scope.thread_id, exact_user_match=scope.exact_user_match,
        exact_agent_match=scope.exact_agent_match, exact_thread_match=scope.exact_thread_match,
        **options)
    kept = run_post_search(config, query, candidates)
    results = [OracleSearchResult(distance, record) for record, distance in kept]
    return apply_token_budgets(results, config, token_budget=token_budget,  # type: ignore[arg-type]
                               soft_token_budget=soft_token_budget)  # type: ignore[arg-type]
