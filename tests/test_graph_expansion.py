"""Graph expansion of search results (``store.search(..., num_hops=..., max_linked_results=...)``).

Spec 004 "graph expansion" and 001 ``search``: from each direct *memory* result, links are
followed in both directions for up to ``num_hops`` hops; the linked memories form a
shortest-path tree in ``linked_results`` (``(RecordRelation, record)`` pairs, nested by hop);
scope, metadata, record-type and expiry filters apply to every linked memory;
``include_invalid_results`` only affects top-level matches; ``max_linked_results`` caps the
linked memories of each direct result across all hops; a run past the documented bound raises
``TimeoutError``.

Each graph is built on a 3-dimensional vector store with explicit vectors: the memory meant to
be the direct hit sits on the query vector ``Q``; the others have no vector (they can never be
direct hits) unless a test says otherwise.
"""

from __future__ import annotations

import asyncio
import inspect
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from conftest import HashEmbedder, StoreFactory
from oracleagentmemory.apis import (
    Record,
    RecordRelation,
    RecordStatus,
    ScopedRecord,
    TimeToLiveAnchor,
)
from oracleagentmemory.core import OracleDBMemoryStore, _graph
from oracleagentmemory.engines.interfaces import SearchPlan

Q = [1.0, 0.0, 0.0]
NEAR = [0.9, 0.1, 0.0]
FAR = [0.0, 0.0, 1.0]

Tree = list[tuple[str, str, "Tree"]]


# --- helpers --------------------------------------------------------------------------------


def add(store: OracleDBMemoryStore, record_id: str, vector: list[float] | None = None,
        record_type: str = "memory", **kwargs: Any) -> None:
    """Add one memory-like record; only records with a vector can be direct hits."""
    store.add([f"text of {record_id}"], record_type, record_ids=record_id,
              embeddings=[vector] if vector is not None else None, **kwargs)


def link(store: OracleDBMemoryStore, source: str, target: str, relation_type: str = "supports",
         source_type: str = "memory", target_type: str = "memory") -> str:
    [relation_id] = store.add_relations(source, source_type, target, target_type, relation_type,
                                        relation_ids=f"{source}->{target}")
    return relation_id


def tree(record: Record) -> Tree:
    """``linked_results`` as nested ``(relation id, linked record id, subtree)`` triples."""
    return [(relation.id, linked.id, tree(linked)) for relation, linked in record.linked_results]


def linked_ids(record: Record) -> list[str]:
    """Every linked record id in the tree, depth first."""
    found: list[str] = []
    for _, linked in record.linked_results:
        found.append(linked.id)
        found.extend(linked_ids(linked))
    return found


def depths(record: Record, depth: int = 1) -> dict[str, int]:
    """Depth of each linked record id in the tree."""
    found: dict[str, int] = {}
    for _, linked in record.linked_results:
        found[linked.id] = depth
        found.update(depths(linked, depth + 1))
    return found


def top(store: OracleDBMemoryStore, **kwargs: Any) -> Record:
    """The single direct result of a ``k=1`` memory search for ``Q``."""
    kwargs.setdefault("record_types", {"memory"})
    results = store.search(None, 1, query_vector=Q, **kwargs)
    assert len(results) == 1
    return results[0][0]


def days_ago(days: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()


@pytest.fixture
def chain(vector_store: OracleDBMemoryStore) -> OracleDBMemoryStore:
    """``a -> b -> c -> d`` (supports), ``a`` on the query vector."""
    add(vector_store, "a", Q)
    for record_id in "bcd":
        add(vector_store, record_id)
    for source, target in ("ab", "bc", "cd"):
        link(vector_store, source, target)
    return vector_store


# --- depth ------------------------------------------------------------------------------------


def test_num_hops_zero_attaches_nothing(chain: OracleDBMemoryStore) -> None:
    assert top(chain).linked_results == ()
    assert top(chain, num_hops=0).linked_results == ()


def test_one_hop_attaches_only_the_neighbour(chain: OracleDBMemoryStore) -> None:
    assert tree(top(chain, num_hops=1)) == [("a->b", "b", [])]


def test_two_hops_nest_the_second_level_under_the_first(chain: OracleDBMemoryStore) -> None:
    assert tree(top(chain, num_hops=2)) == [("a->b", "b", [("b->c", "c", [])])]


def test_three_hops_reach_the_end_of_the_chain(chain: OracleDBMemoryStore) -> None:
    assert tree(top(chain, num_hops=3)) == [
        ("a->b", "b", [("b->c", "c", [("c->d", "d", [])])])]


def test_more_hops_than_the_graph_is_deep_stop_at_its_end(chain: OracleDBMemoryStore) -> None:
    assert tree(top(chain, num_hops=5)) == tree(top(chain, num_hops=3))


def test_linked_results_carry_the_relation_and_the_full_record(
        vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q)
    add(vector_store, "b", record_type="fact", user_ids="u1", metadata={"k": "v"})
    vector_store.add_relations("a", "memory", "b", "fact", "refines", relation_ids="r1",
                               metadata={"why": "test"}, timestamps="2024-01-01T00:00:00Z")
    [(relation, linked)] = top(vector_store, num_hops=1, record_types={"memory", "fact"}
                               ).linked_results
    assert relation == vector_store.get_relation(relation_id="r1")
    assert isinstance(relation, RecordRelation)
    assert (linked.id, linked.record_type, linked.content, linked.metadata) == (
        "b", "fact", "text of b", {"k": "v"})
    assert isinstance(linked, ScopedRecord) and linked.user_id == "u1"
    assert linked.status is RecordStatus.INVALID  # a refines b


def test_expansion_does_not_change_the_direct_results(chain: OracleDBMemoryStore) -> None:
    plain = chain.search(None, 1, query_vector=Q, record_types={"memory"})
    expanded = chain.search(None, 1, query_vector=Q, record_types={"memory"}, num_hops=3)
    assert [(r.id, d) for r, d in plain] == [(r.id, d) for r, d in expanded]


# --- both directions ----------------------------------------------------------------------------


def test_incoming_and_outgoing_links_are_both_followed(vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q)
    add(vector_store, "out")
    add(vector_store, "in")
    link(vector_store, "a", "out", "supports")
    link(vector_store, "in", "a", "supersedes")
    result = top(vector_store, num_hops=1)
    by_id = {linked.id: relation for relation, linked in result.linked_results}
    assert set(by_id) == {"out", "in"}
    outgoing, incoming = by_id["out"], by_id["in"]
    assert (outgoing.source_record_id, outgoing.relation_type, outgoing.target_record_id) == (
        "a", "supports", "out")
    # The incoming link keeps its stored orientation: in supersedes a.
    assert (incoming.source_record_id, incoming.relation_type, incoming.target_record_id) == (
        "in", "supersedes", "a")
    assert incoming.opposite_relation_type == "is_superseded_by"


def test_mixed_directions_are_followed_along_a_path(vector_store: OracleDBMemoryStore) -> None:
    # b -> a and b -> c: c is two hops from a through b, against and then along the links.
    add(vector_store, "a", Q)
    add(vector_store, "b")
    add(vector_store, "c")
    link(vector_store, "b", "a")
    link(vector_store, "b", "c")
    assert tree(top(vector_store, num_hops=2)) == [("b->a", "b", [("b->c", "c", [])])]


# --- shortest-path tree -----------------------------------------------------------------------


def test_a_memory_reachable_at_two_depths_appears_once_at_the_shorter(
        vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q)
    add(vector_store, "b")
    add(vector_store, "c")
    link(vector_store, "a", "b")
    link(vector_store, "b", "c")
    link(vector_store, "c", "a")  # c is also one hop from a
    result = top(vector_store, num_hops=3)
    assert sorted(linked_ids(result)) == ["b", "c"]
    assert depths(result) == {"b": 1, "c": 1}


def test_a_long_cycle_does_not_loop(vector_store: OracleDBMemoryStore) -> None:
    ids = ["a", "b", "c", "d", "e"]
    add(vector_store, "a", Q)
    for record_id in ids[1:]:
        add(vector_store, record_id)
    for n, source in enumerate(ids):
        link(vector_store, source, ids[(n + 1) % len(ids)])
    result = top(vector_store, num_hops=5)
    assert sorted(linked_ids(result)) == ["b", "c", "d", "e"]
    assert depths(result) == {"b": 1, "e": 1, "c": 2, "d": 2}
    assert "a" not in linked_ids(result)


def test_a_diamond_attaches_the_far_corner_once(vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q)
    for record_id in "bcd":
        add(vector_store, record_id)
    for source, target in ("ab", "ac", "bd", "cd"):
        link(vector_store, source, target)
    result = top(vector_store, num_hops=4)
    assert sorted(linked_ids(result)) == ["b", "c", "d"]
    assert depths(result) == {"b": 1, "c": 1, "d": 2}


def test_each_direct_result_gets_its_own_tree(vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q)
    add(vector_store, "b", NEAR)
    add(vector_store, "c")
    link(vector_store, "a", "b")
    link(vector_store, "b", "c")
    results = vector_store.search(None, 2, query_vector=Q, record_types={"memory"}, num_hops=2)
    assert [r.id for r, _ in results] == ["a", "b"]
    first, second = results[0][0], results[1][0]
    assert tree(first) == [("a->b", "b", [("b->c", "c", [])])]
    assert sorted(linked_ids(second)) == ["a", "c"]
    assert depths(second) == {"a": 1, "c": 1}


# --- filters on linked memories -----------------------------------------------------------------


@pytest.mark.parametrize("dimension", ["user", "agent", "thread"])
def test_an_exact_scope_filter_skips_linked_memories_of_another_scope(
        vector_store: OracleDBMemoryStore, dimension: str) -> None:
    mine: dict[str, Any] = {f"{dimension}_ids": "mine"}
    theirs: dict[str, Any] = {f"{dimension}_ids": "theirs"}
    add(vector_store, "a", Q, **mine)
    add(vector_store, "same", **mine)
    add(vector_store, "other", **theirs)
    add(vector_store, "unscoped")
    for target in ("same", "unscoped"):
        link(vector_store, "a", target)
    if dimension == "user":
        # Record ids are unique per user: a relation never links two users' memories.
        with pytest.raises(ValueError, match="memories of one user"):
            link(vector_store, "a", "other")
    else:
        link(vector_store, "a", "other")
    exact = {f"{dimension}_id": "mine", f"exact_{dimension}_match": True}
    assert linked_ids(top(vector_store, num_hops=1, **exact)) == ["same"]
    loose = {f"{dimension}_id": "mine", f"exact_{dimension}_match": False}
    assert sorted(linked_ids(top(vector_store, num_hops=1, **loose))) == (
        ["same", "unscoped"] if dimension == "user" else ["other", "same", "unscoped"])


def test_an_exact_none_scope_keeps_only_unscoped_linked_memories(
        vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q)
    add(vector_store, "scoped", user_ids="u1")
    add(vector_store, "unscoped")
    link(vector_store, "a", "scoped")
    link(vector_store, "a", "unscoped")
    result = top(vector_store, num_hops=1, user_id=None, exact_user_match=True)
    assert linked_ids(result) == ["unscoped"]


def test_metadata_filter_applies_to_linked_memories(vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q, metadata={"team": "x", "tags": ["prod"]})
    add(vector_store, "match", metadata={"team": "x", "tags": ["prod", "eu"]})
    add(vector_store, "other-team", metadata={"team": "y", "tags": ["prod"]})
    add(vector_store, "no-metadata")
    for target in ("match", "other-team", "no-metadata"):
        link(vector_store, "a", target)
    result = top(vector_store, num_hops=1,
                 metadata_filter={"team": "x", "tags": {"$array_contains": "prod"}})
    assert linked_ids(result) == ["match"]
    assert sorted(linked_ids(top(vector_store, num_hops=1))) == ["match", "no-metadata",
                                                                 "other-team"]


def test_an_expired_linked_memory_is_skipped(vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q)
    add(vector_store, "alive")
    add(vector_store, "expired")
    link(vector_store, "a", "alive")
    link(vector_store, "a", "expired")
    assert sorted(linked_ids(top(vector_store, num_hops=1))) == ["alive", "expired"]
    assert vector_store.update("memory", "expired", timestamp=days_ago(3), ttl_days=1,
                               ttl_anchor=TimeToLiveAnchor.TIMESTAMP) == 1
    assert linked_ids(top(vector_store, num_hops=1)) == ["alive"]


@pytest.mark.parametrize("record_types,expected", [
    ({"memory"}, ["m"]),
    ({"memory", "message"}, ["m"]),
    ({"memory", "fact"}, ["f", "m"]),
    ({"memory", "fact", "guideline", "preference"}, ["f", "g", "m", "p"]),
    (None, ["f", "g", "m", "p"]),
])
def test_record_types_apply_to_linked_memories(vector_store: OracleDBMemoryStore,
                                               record_types: set[str] | None,
                                               expected: list[str]) -> None:
    add(vector_store, "a", Q)
    for record_id, record_type in (("m", "memory"), ("f", "fact"), ("g", "guideline"),
                                   ("p", "preference")):
        add(vector_store, record_id, record_type=record_type)
        link(vector_store, "a", record_id, target_type=record_type)
    results = vector_store.search(None, 1, query_vector=Q, record_types=record_types,
                                  num_hops=1)
    assert [r.id for r, _ in results] == ["a"]
    assert sorted(linked_ids(results[0][0])) == expected


def test_a_skipped_memory_also_hides_what_lies_only_behind_it(
        vector_store: OracleDBMemoryStore) -> None:
    # Agents, not users: a relation never links two users' memories.
    add(vector_store, "a", Q, agent_ids="u1")
    add(vector_store, "foreign", agent_ids="u2")
    add(vector_store, "behind", agent_ids="u1")
    link(vector_store, "a", "foreign")
    link(vector_store, "foreign", "behind")
    assert linked_ids(top(vector_store, num_hops=2, agent_id="u1", exact_agent_match=True)) == []
    assert linked_ids(top(vector_store, num_hops=2)) == ["foreign", "behind"]


def test_invalid_linked_memories_stay_when_invalid_results_are_excluded(
        vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q)
    add(vector_store, "old", NEAR)  # close to the query, so it would be a direct hit
    link(vector_store, "a", "old", "supersedes")
    results = vector_store.search(None, 2, query_vector=Q, record_types={"memory"}, num_hops=1,
                                  include_invalid_results=False)
    assert [r.id for r, _ in results] == ["a"]  # the INVALID memory is not a direct result
    [(relation, linked)] = results[0][0].linked_results
    assert (linked.id, linked.status) == ("old", RecordStatus.INVALID)
    assert relation.relation_type == "supersedes"
    with_invalid = vector_store.search(None, 2, query_vector=Q, record_types={"memory"},
                                       num_hops=1)
    assert [r.id for r, _ in with_invalid] == ["a", "old"]


# --- max_linked_results ------------------------------------------------------------------------


@pytest.fixture
def star(vector_store: OracleDBMemoryStore) -> OracleDBMemoryStore:
    """``hub`` on the query vector, linked to ``n0`` .. ``n9``."""
    add(vector_store, "hub", Q)
    for n in range(10):
        add(vector_store, f"n{n}")
        link(vector_store, "hub", f"n{n}")
    return vector_store


@pytest.mark.parametrize("cap,expected", [(0, 0), (1, 1), (3, 3), (10, 10), (11, 10), (100, 10)])
def test_max_linked_results_caps_the_neighbours(star: OracleDBMemoryStore, cap: int,
                                                expected: int) -> None:
    result = top(star, num_hops=1, max_linked_results=cap)
    assert len(result.linked_results) == expected
    assert len(set(linked_ids(result))) == expected


def test_max_linked_results_defaults_to_one_hundred(vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "hub", Q)
    spokes = [f"n{n:03d}" for n in range(101)]
    vector_store.add([f"text of {s}" for s in spokes], "memory", record_ids=spokes)
    vector_store.add_relations("hub", "memory", spokes, "memory", "supports")
    assert len(top(vector_store, num_hops=1).linked_results) == 100
    assert len(top(vector_store, num_hops=1, max_linked_results=101).linked_results) == 101


def test_max_linked_results_counts_across_hops(chain: OracleDBMemoryStore) -> None:
    assert tree(top(chain, num_hops=3, max_linked_results=2)) == [
        ("a->b", "b", [("b->c", "c", [])])]


def test_max_linked_results_applies_per_direct_result(vector_store: OracleDBMemoryStore) -> None:
    add(vector_store, "a", Q)
    add(vector_store, "b", NEAR)
    for n in range(3):
        add(vector_store, f"a{n}")
        add(vector_store, f"b{n}")
        link(vector_store, "a", f"a{n}")
        link(vector_store, "b", f"b{n}")
    results = vector_store.search(None, 2, query_vector=Q, record_types={"memory"}, num_hops=1,
                                  max_linked_results=2)
    assert [len(r.linked_results) for r, _ in results] == [2, 2]


# --- records that are never expanded ------------------------------------------------------------


def test_a_direct_message_is_never_expanded(vector_store: OracleDBMemoryStore) -> None:
    # The message shares its id with a linked memory: expansion must not confuse the two.
    vector_store.add(["a message"], "message", record_ids="shared", embeddings=[Q])
    add(vector_store, "shared", FAR)
    add(vector_store, "n")
    link(vector_store, "shared", "n")
    [(message, _)] = vector_store.search(None, 1, query_vector=Q, num_hops=2)
    assert (message.record_type, message.id) == ("message", "shared")
    assert message.linked_results == ()
    [(memory, _)] = vector_store.search(None, 1, query_vector=FAR, num_hops=2)
    assert (memory.record_type, linked_ids(memory)) == ("memory", ["n"])


def test_a_direct_profile_is_never_expanded(make_store: StoreFactory) -> None:
    embedder = HashEmbedder(8)
    store = make_store(embedder=embedder)
    query = embedder.embed(["tea drinker"])[0].tolist()
    far = [0.0] * 8
    far[next(i for i, v in enumerate(query) if v == 0)] = 1.0
    store.add_user("alice", "tea drinker")
    # A memory with the profile's id, linked onward: a profile result must not pick it up.
    store.add(["alice memory"], "memory", record_ids="alice", embeddings=[far])
    store.add(["neighbour"], "memory", record_ids="n", embeddings=[far])
    link(store, "alice", "n")
    results = store.search(None, 1, query_vector=query, num_hops=2,
                           record_types={"user_profile", "memory"})
    [(profile, distance)] = results
    assert (profile.record_type, profile.id) == ("user_profile", "alice")
    assert distance == pytest.approx(0.0, abs=1e-6)
    assert profile.linked_results == ()


# --- argument rules ------------------------------------------------------------------------------


@pytest.mark.parametrize("argument,value,error", [
    ("num_hops", -1, ValueError),
    ("num_hops", 6, ValueError),
    ("num_hops", 1.0, TypeError),
    ("num_hops", "2", TypeError),
    ("num_hops", True, TypeError),
    ("max_linked_results", -1, ValueError),
    ("max_linked_results", 2.5, TypeError),
    ("max_linked_results", None, TypeError),
])
def test_bad_expansion_arguments_are_rejected(chain: OracleDBMemoryStore, argument: str,
                                              value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match=argument):
        chain.search(None, 1, query_vector=Q, **{argument: value})


@pytest.mark.parametrize("num_hops", [0, 1, 2, 3, 4, 5])
def test_every_supported_num_hops_is_accepted(chain: OracleDBMemoryStore, num_hops: int) -> None:
    assert len(linked_ids(top(chain, num_hops=num_hops))) == min(num_hops, 3)


def test_search_async_expands_too(chain: OracleDBMemoryStore) -> None:
    results = asyncio.run(chain.search_async(None, 1, query_vector=Q, record_types={"memory"},
                                             num_hops=2, max_linked_results=5))
    assert tree(results[0][0]) == [("a->b", "b", [("b->c", "c", [])])]


# --- the time bound ----------------------------------------------------------------------------


def test_the_time_bound_is_documented_and_is_the_default() -> None:
    bound = _graph.GRAPH_EXPANSION_TIMEOUT_SECONDS
    assert isinstance(bound, float) and bound > 0
    default = inspect.signature(_graph.expand_results).parameters["timeout"].default
    assert default == bound


def memory_plan() -> SearchPlan:
    return SearchPlan(mode="vector", k=1, record_types=("memory",))


def test_expansion_past_its_bound_raises_timeout_error(chain: OracleDBMemoryStore) -> None:
    root = chain.get("memory", "a")
    assert root is not None
    with chain._engine.session(chain._names) as session, pytest.raises(TimeoutError,
                                                           match="graph expansion"):
        _graph.expand_results(session, [(root, 0.0)], memory_plan(), num_hops=3,
                              max_linked=100, timeout=0.0)


def test_expansion_within_its_bound_attaches_the_tree(chain: OracleDBMemoryStore) -> None:
    root = chain.get("memory", "a")
    assert root is not None
    with chain._engine.session(chain._names) as session:
        [(expanded, _)] = _graph.expand_results(session, [(root, 0.0)],
                                                memory_plan(), num_hops=3, max_linked=100)
    assert linked_ids(expanded) == ["b", "c", "d"]
    assert root.linked_results == ()  # records are immutable: the expanded result is a copy
