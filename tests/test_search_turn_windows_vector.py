"""Turn windows in the vector ranking of messages (issue 24, item 2).

The squared similarities of the best-matching messages reach the turns up to two either side in
their thread (weights 1, 1/2, 1/4), ``near``; a message's own is ``own``, and its distance
``1 - sqrt((own + near) / (1 + near))``: an answer whose words are far from the question is
found next to the turn that is near it, a message no other match is near keeps its cosine
distance, and only an exact match reaches 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from conftest import StoreFactory
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core import OracleDBMemoryStore, SearchStrategy

POSTGRESQL_ONLY = "checks PostgreSQL's vector ranking of messages (Oracle ranks turns alone)"

QUERY = [1.0, 0.0, 0.0]
FAR = [0.0, 0.0, 1.0]
"""Orthogonal to the query: similarity 0."""


class AxisEmbedder(IEmbedder):
    """Every query embeds to the first axis of a 3-d space; records bring their vectors."""

    @property
    def embedding_dimension(self) -> int:
        return 3

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        return np.tile(np.array(QUERY, dtype=np.float32), (len(texts), 1))


THREAD = {
    # id: vector; one thread t1, in this order. Only m2 is near the query; m3 answers it.
    "m0": FAR, "m1": FAR, "m2": QUERY, "m3": [0.0, 1.0, 0.0], "m4": FAR, "m5": FAR, "m6": FAR,
}


def _store(make_store: StoreFactory, strategy: SearchStrategy = SearchStrategy.VECTOR,
           **options: Any) -> OracleDBMemoryStore:
    return make_store(embedder=AxisEmbedder(), vector_dim=3, search_strategy=strategy,
                      **options)


def _add_thread(store: OracleDBMemoryStore, user: str = "u1", thread: str = "t1",
                vectors: dict[str, list[float]] | None = None) -> None:
    vectors = THREAD if vectors is None else vectors
    store.add([f"turn {n}" for n in range(len(vectors))], "message", record_ids=list(vectors),
              roles=[("Ana", "Ben")[n % 2] for n in range(len(vectors))], user_ids=user,
              thread_ids=thread,
              embeddings=list(vectors.values()), metadata=[{"keep": True}] * len(vectors))


def _ranked(store: OracleDBMemoryStore, user: str = "u1") -> list[tuple[str, float]]:
    found = store.search("q", 20, user_id=user, exact_user_match=True,
                         record_types=["message"])
    return [(record.id, distance) for record, distance in found]


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_the_turns_next_to_a_close_match_rank_by_their_distance_from_it(
        make_store: StoreFactory) -> None:
    store = _store(make_store)
    _add_thread(store)
    # Another thread: a lone message at cosine distance 0.4 (similarity 0.6).
    store.add(["alone"], "message", record_ids=["alone"], roles=["Ana"], user_ids="u1",
              thread_ids="t2", embeddings=[[0.6, 0.8, 0.0]])
    ranked = _ranked(store)
    ids = [i for i, _ in ranked]
    distance = dict(ranked)
    assert ids[0] == "m2" and distance["m2"] == pytest.approx(0.0, abs=1e-6)
    # The lone message keeps its cosine distance, 0.4; one turn from m2: 1 - sqrt(0.5 / 1.5);
    # two turns: 1 - sqrt(0.25 / 1.25). m3 is orthogonal to the query, so without windows it
    # would rank last with m0, m1, m4 and m5.
    assert ids[1] == "alone" and distance["alone"] == pytest.approx(0.4, abs=1e-6)
    assert set(ids[2:4]) == {"m1", "m3"}
    assert distance["m3"] == pytest.approx(1 - (0.5 / 1.5) ** 0.5, abs=1e-6)
    assert set(ids[4:6]) == {"m0", "m4"}
    assert distance["m4"] == pytest.approx(1 - (0.25 / 1.25) ** 0.5, abs=1e-6)
    # Three turns away the window ends: m5 and m6 are as far as their own vectors.
    assert distance["m5"] == distance["m6"] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_window_stays_in_its_thread_its_owner_and_the_filters(
        make_store: StoreFactory) -> None:
    store = _store(make_store)
    _add_thread(store, user="u1")
    # Another owner's thread of the same id and sequence numbers, far from the query: its
    # turns next to position 2 are not reached by u1's match, nor u1's by its own.
    _add_thread(store, user="u2", vectors={f"o{n}": FAR for n in range(len(THREAD))})
    assert dict(_ranked(store, "u2"))["o3"] == pytest.approx(1.0, abs=1e-6)
    assert {i for i, _ in _ranked(store, "u1")} == set(THREAD)  # none of u2's
    # A neighbour that fails the search's filters is not ranked; its turn's neighbour still is.
    store.update("message", "m3", metadata={"keep": False})
    found = store.search("q", 20, user_id="u1", exact_user_match=True,
                         record_types=["message"], metadata_filter={"keep": True})
    ids = [record.id for record, _ in found]
    assert "m3" not in ids and ids[:2] == ["m2", "m1"]


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_hybrid_finds_the_answer_through_the_vector_window(make_store: StoreFactory) -> None:
    # No keyword of the query "q" is in any turn: hybrid ranks by its vector side alone.
    store = _store(make_store, SearchStrategy.HYBRID)
    _add_thread(store)
    ids = [i for i, _ in _ranked(store)]
    assert ids[0] == "m2" and set(ids[1:3]) == {"m1", "m3"}


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_an_exact_match_stays_first_among_close_neighbours(make_store: StoreFactory) -> None:
    # m1 and m3 are close to the query too (similarity 0.8), and each near the exact match m2:
    # their windows hold more similarity than m2's own, yet only m2 reaches distance 0.
    close = [0.8, 0.6, 0.0]
    store = _store(make_store)
    _add_thread(store, vectors={"m0": FAR, "m1": close, "m2": QUERY, "m3": close, "m4": FAR})
    ranked = _ranked(store)
    assert ranked[0][0] == "m2" and ranked[0][1] == pytest.approx(0.0, abs=1e-6)
    assert {i for i, _ in ranked[1:3]} == {"m1", "m3"}
    assert all(d > 0.05 for _, d in ranked[1:])
