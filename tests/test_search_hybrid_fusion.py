"""Hybrid fusion weights the keyword side (issue 24, item 2).

A hybrid search fuses its vector and keyword candidates by reciprocal-rank fusion with the
vector side at weight 0.1 and rank constant 5 (``core._hybrid_fusion``): the local embedder's
ranking adds nothing to keyword ranking on LoCoMo, so a keyword leader with a poor vector rank
stays ahead of a vector leader that matches fewer words, and a record no keyword matches is
still found through the vector side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from conftest import StoreFactory, new_store_id
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core import OracleDBMemoryStore, SearchStrategy
from oracleagentmemory.core._search_loop import fuse
from oracleagentmemory.engines.interfaces import SearchHit

POSTGRESQL_ONLY = "the core fuses PostgreSQL's two hybrid sides (Oracle's index fuses its own)"


class AxisEmbedder(IEmbedder):
    """Every query embeds to the first axis of a 3-d space; records bring their vectors."""

    @property
    def embedding_dimension(self) -> int:
        return 3

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        return np.tile(np.array([1.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


RECORDS = {
    # id: (text, vector); the query is "zeppelin" at the first axis.
    "keyword-leader": ("zeppelin zeppelin flight", [0.0, 1.0, 0.0]),
    "vector-leader": ("a zeppelin mentioned once in a long sentence about other things",
                      [1.0, 0.0, 0.0]),
    "vector-only": ("nothing that matches", [0.9, 0.1, 0.0]),
}


def _store(make_store: StoreFactory, strategy: SearchStrategy, store_id: str
           ) -> OracleDBMemoryStore:
    return make_store(embedder=AxisEmbedder(), vector_dim=3, search_strategy=strategy,
                      memory_store_id=store_id)


def _ids(results: Sequence[tuple[Any, float]]) -> list[str]:
    return [record.id for record, _ in results]


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_hybrid_keeps_the_keyword_leader_first_and_finds_vector_only_records(
        make_store: StoreFactory) -> None:
    store_id = new_store_id()
    hybrid = _store(make_store, SearchStrategy.HYBRID, store_id)
    hybrid.add([text for text, _ in RECORDS.values()], "memory", record_ids=list(RECORDS),
               user_ids="u1", embeddings=[vector for _, vector in RECORDS.values()])
    # Positive controls: each arm alone puts its own leader first.
    vector = _store(make_store, SearchStrategy.VECTOR, store_id)
    keyword = _store(make_store, SearchStrategy.KEYWORD, store_id)
    assert _ids(vector.search("zeppelin", 3, user_id="u1"))[0] == "vector-leader"
    assert _ids(keyword.search("zeppelin", 3, user_id="u1")) == ["keyword-leader",
                                                                   "vector-leader"]
    # Fused: the keyword leader first (equal weights at k = 60 would put the vector leader
    # first: 1/61 + 1/62 against 1/61 + 1/63), and the record no keyword matches is found.
    assert _ids(hybrid.search("zeppelin", 3, user_id="u1")) == [
        "keyword-leader", "vector-leader", "vector-only"]


def test_fusion_weights_and_rank_constant() -> None:
    vector = [SearchHit("memory", "v", 0.1), SearchHit("memory", "k", 0.5)]
    keyword = [SearchHit("memory", "k", 0.2), SearchHit("memory", "v", 0.6)]
    # Equal weights: a tie (each first once, second once), broken by id.
    assert [h.record_id for h in fuse([vector, keyword])] == ["k", "v"]
    # The heavier side's leader wins, whichever it is; distances stay in [0, 1).
    weighted = fuse([vector, keyword], weights=(0.2, 1.0), k=10)
    assert [h.record_id for h in weighted] == ["k", "v"]
    reversed_ = fuse([vector, keyword], weights=(1.0, 0.2), k=10)
    assert [h.record_id for h in reversed_] == ["v", "k"]
    assert all(0.0 <= h.distance < 1.0 for h in weighted + reversed_)
    # A record first on both sides has distance 0.
    assert fuse([vector[:1], vector[:1]], weights=(0.2, 1.0), k=10)[0].distance == 0.0
