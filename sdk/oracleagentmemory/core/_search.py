"""Validate ``search`` arguments and turn them into engine search plans."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.core._validation import check_bool, check_id, to_vector
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.engines.interfaces import UNSET, SearchPlan
from oracleagentmemory.engines.layout import SEARCHABLE_TYPES
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError
from oracleagentmemory.filtertree import parse_metadata_filter

SEARCHABLE_RECORD_TYPES = SEARCHABLE_TYPES
DEFAULT_SEARCH_RECORD_TYPES: tuple[str, ...] = (
    "message", "memory", "guideline", "fact", "preference", "user_profile", "agent_profile",
    "image",
)
MAX_NUM_HOPS = 5


@dataclass
class SearchArguments:
    """Validated ``search`` arguments."""

    query: str | None
    query_vector: Any
    k: int
    scope: dict[str, Any]
    record_types: tuple[str, ...]
    metadata_filter: Any
    include_invalid: bool
    num_hops: int
    max_linked_results: int


def check_search_arguments(
    strategy: SearchStrategy, vector_dim: int | None, *, query: object, k: object,
    query_vector: object, thread_id: object, user_id: object, agent_id: object,
    exact_user_match: object, exact_agent_match: object, exact_thread_match: object,
    record_types: object, metadata_filter: object, include_invalid_results: object,
    num_hops: object, max_linked_results: object,
) -> SearchArguments:
    """Check every argument rule; raises ``ValueError``/``TypeError`` naming the argument."""
    if (query is None) == (query_vector is None):
        raise InvalidArgumentError("pass exactly one of query and query_vector")
    text: str | None = None
    vector = None
    if query is not None:
        if not isinstance(query, str):
            raise InvalidArgumentTypeError(f"query must be a str, got {type(query).__name__}")
        if not query.strip():
            raise InvalidArgumentError("query must contain at least one non-whitespace character")
        text = query
    else:
        if strategy is SearchStrategy.KEYWORD:
            raise InvalidArgumentError("query_vector is not accepted by keyword search; pass query")
        vector = to_vector(query_vector, "query_vector")
        if not vector.any():
            raise InvalidArgumentError(
                "query_vector must not be the zero vector: its cosine distance to "
                             "any record is undefined")
        if vector_dim is not None and vector.size != vector_dim:
            raise InvalidArgumentError(
                f"query_vector has dimension {vector.size} but the store's vector_dim is "
                f"{vector_dim}"
            )
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidArgumentTypeError(f"k must be an int, got {type(k).__name__}")
    if k < 1:
        raise InvalidArgumentError(f"k must be at least 1, got {k}")
    scope: dict[str, Any] = {}
    for column, value, exact, flag in (
        ("thread_id", thread_id, exact_thread_match, "exact_thread_match"),
        ("user_id", user_id, exact_user_match, "exact_user_match"),
        ("agent_id", agent_id, exact_agent_match, "exact_agent_match"),
    ):
        check_id(value, column, allow_none=True)
        scope[column] = value if check_bool(exact, flag) else UNSET
    if record_types is None:
        types = DEFAULT_SEARCH_RECORD_TYPES
    else:
        if isinstance(record_types, str) or not isinstance(record_types, Iterable):
            raise InvalidArgumentTypeError(
                "record_types must be a set of record type names or None")
        chosen = list(record_types)
        if not chosen:
            raise InvalidArgumentError(
                "record_types must not be empty; pass None for the default types")
        unknown = sorted(str(t) for t in chosen if t not in SEARCHABLE_RECORD_TYPES)
        if unknown:
            raise InvalidArgumentError(
                f"record_types: {', '.join(unknown)} cannot be searched; searchable types are "
                f"{', '.join(sorted(SEARCHABLE_RECORD_TYPES))}"
            )
        types = tuple(t for t in DEFAULT_SEARCH_RECORD_TYPES if t in chosen)
    parsed_filter = None if metadata_filter is None else parse_metadata_filter(metadata_filter)
    if isinstance(num_hops, bool) or not isinstance(num_hops, int):
        raise InvalidArgumentTypeError(f"num_hops must be an int, got {type(num_hops).__name__}")
    if not 0 <= num_hops <= MAX_NUM_HOPS:
        raise InvalidArgumentError(f"num_hops must be between 0 and {MAX_NUM_HOPS}, got {num_hops}")
    if isinstance(max_linked_results, bool) or not isinstance(max_linked_results, int):
        raise InvalidArgumentTypeError(
            f"max_linked_results must be an int, got {type(max_linked_results).__name__}")
    if max_linked_results < 0:
        raise InvalidArgumentError(
            f"max_linked_results must be at least 0, got {max_linked_results}")
    return SearchArguments(
        query=text, query_vector=vector, k=k, scope=scope, record_types=types,
        metadata_filter=parsed_filter,
        include_invalid=check_bool(include_invalid_results, "include_invalid_results"),
        num_hops=num_hops, max_linked_results=max_linked_results,
    )


def base_plan(arguments: SearchArguments, mode: str) -> SearchPlan:
    """The engine plan shared by every query chunk."""
    return SearchPlan(
        mode=mode, k=arguments.k, record_types=arguments.record_types, scope=arguments.scope,
        metadata_filter=arguments.metadata_filter, include_invalid=arguments.include_invalid,
    )
