"""The search method of the database store: argument checks, query plans, ranking, expansion."""

from __future__ import annotations

import builtins
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.apis.records import Record
from oracleagentmemory.core._graph import expand_results
from oracleagentmemory.core._records import record_from_row
from oracleagentmemory.core._search import SearchArguments, base_plan, check_search_arguments
from oracleagentmemory.core._search_loop import fuse, run_search
from oracleagentmemory.core._writeplan import Chunker
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.engines.interfaces import EngineSession, RegistryRow, SearchPlan
from oracleagentmemory.errors import InvalidArgumentError
from oracleagentmemory.observability._operation import MEMORY_STORE, observed
from oracleagentmemory.observability._operation import embed as observed_embed


class StoreSearch:
    """Search over a store's records; the store supplies its strategy, registry row, chunker,
    embedder and :meth:`_session`."""

    if TYPE_CHECKING:
        _strategy: SearchStrategy
        _registry: RegistryRow
        _chunker: Chunker | None
        _embedder: IEmbedder | None

        def _session(self) -> AbstractContextManager[EngineSession]:
            raise NotImplementedError

        def _in_transaction_block(self) -> bool:
            raise NotImplementedError

    @observed(MEMORY_STORE)
    def search(self, query: str | None, k: int, query_vector: Any = None,
               thread_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, exact_user_match: bool = False,
               exact_agent_match: bool = False, exact_thread_match: bool = False,
               record_types: Any = None, metadata_filter: Any = None, num_hops: int = 0,
               max_linked_results: int = 100,
               include_invalid_results: bool = True) -> builtins.list[tuple[Record, float]]:
        """Rank visible records by the store's search strategy; ``(record, distance)`` ascending.

        A query longer than the chunk size is searched chunk by chunk and the rankings are merged
        by reciprocal-rank fusion (the distance then derives from the fused score). Direct memory
        results gain ``linked_results`` when ``num_hops`` > 0.

        Raises:
            ValueError: an argument breaks its rule, or the query cannot be embedded.
            TimeoutError: graph expansion ran longer than its bound.
        """
        strategy = self._strategy
        arguments = check_search_arguments(
            strategy, self._registry.vector_dim, query=query, k=k, query_vector=query_vector,
            thread_id=thread_id, user_id=user_id, agent_id=agent_id,
            exact_user_match=exact_user_match, exact_agent_match=exact_agent_match,
            exact_thread_match=exact_thread_match, record_types=record_types,
            metadata_filter=metadata_filter, include_invalid_results=include_invalid_results,
            num_hops=num_hops, max_linked_results=max_linked_results,
        )
        plans = self._search_plans(strategy, arguments)
        with self._session() as session:
            rankings = [run_search(session.candidate_source(plan), plan.k)
                        for plan in plans]
            hits = fuse(rankings)[: arguments.k]
            # The session's last statement when nothing follows it (no graph expansion, no
            # transaction block around the search): the engine may commit with it.
            last = arguments.num_hops == 0 and not self._in_transaction_block()
            rows = session.select_records_by_keys([(h.record_type, h.record_id) for h in hits],
                                                   last=last)
            results: builtins.list[tuple[Record, float]] = []
            for hit in hits:
                row = rows.get((hit.record_type, hit.record_id))
                if row is not None:
                    results.append((record_from_row(row), hit.distance))
            results = expand_results(session, results, plans[0],
                                     arguments.num_hops, arguments.max_linked_results)
        return results

    def _search_plans(self, strategy: SearchStrategy,
                      arguments: SearchArguments) -> builtins.list[SearchPlan]:
        """One engine plan per query chunk (one plan for a query vector or a short query)."""
        needs_vectors = strategy is not SearchStrategy.KEYWORD
        if needs_vectors and self._registry.vector_dim is None:
            raise InvalidArgumentError(
                f"{strategy.value} search needs local vector storage, which this store does not "
                "have; use SearchStrategy.KEYWORD or create the store with vector_dim"
            )
        if arguments.query_vector is not None:
            plan = base_plan(arguments, "vector")
            plan.vector = arguments.query_vector
            return [plan]
        assert arguments.query is not None
        texts = (self._chunker(arguments.query) if self._chunker else []) or [arguments.query]
        vectors: builtins.list[Any] = [None] * len(texts)
        if needs_vectors:
            if self._embedder is None:
                raise InvalidArgumentError(
                    f"{strategy.value} search needs an embedder to embed query; pass "
                    "query_vector or open the store with an embedder"
                )
            vectors = list(observed_embed(self._embedder, texts, is_query=True))
        plans = []
        for text, vector in zip(texts, vectors, strict=True):
            plan = base_plan(arguments, strategy.value)
            plan.text = text
            plan.vector = vector
            plans.append(plan)
        return plans
