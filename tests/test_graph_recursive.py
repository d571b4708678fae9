"""Graph expansion by one recursive query (``EngineSession.links_within_hops``).

The core fetches every link within ``num_hops`` of a search's memory results in one recursive
query, and the memories at their ends in one more, then builds the shortest-path trees over
that edge set (``core/_graph.py``). These tests check that the query neither over- nor
under-reaches: its links are exactly what the hop-by-hop walk's ``links_touching`` could fetch
(random graphs with cycles, the hop boundary), the trees are those of the hop-by-hop walk (the
fallback past the row limit, ``edge_limit=0``), another user's links are never followed (with
the owner's walk as positive control), and the statements sent drop from two per hop to two
(counted with libpq's protocol trace on the session's real connection).
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from conftest import StoreFactory
from dds import OWNER
from oracleagentmemory.apis import Record
from oracleagentmemory.core import OracleDBMemoryStore, _graph
from oracleagentmemory.engines.identifiers import store_names
from oracleagentmemory.engines.interfaces import EngineSession, RelationQuery, SearchPlan
from oracleagentmemory.filtertree import parse_metadata_filter
from psycopg import sql
from psycopg.pq import Trace

Q = [1.0, 0.0, 0.0]
Tree = list[tuple[str, str, "Tree"]]


def add(store: OracleDBMemoryStore, record_id: str, vector: list[float] | None = None,
        record_type: str = "memory", **kwargs: Any) -> None:
    store.add([f"text of {record_id}"], record_type, record_ids=record_id,
              embeddings=[vector] if vector is not None else None, **kwargs)


def link(store: OracleDBMemoryStore, source: str, target: str,
         source_type: str = "memory", target_type: str = "memory") -> None:
    store.add_relations(source, source_type, target, target_type, "supports",
                        relation_ids=f"{source}->{target}")


def tree(record: Record) -> Tree:
    return [(relation.id, linked.id, tree(linked)) for relation, linked in record.linked_results]


def reference_reach(session: EngineSession, roots: list[str], hops: int) -> list[str]:
    """The links the hop-by-hop walk could fetch with no visible memory filtered out:
    ``links_touching`` of each hop's frontier, stepping only to visible memories; in creation
    order (the order of ``select_relations``)."""
    seen = set(roots)
    frontier = list(roots)
    fetched: set[str] = set()
    for _ in range(hops):
        if not frontier:
            break
        links = session.links_touching(frontier)
        fetched.update(link["id"] for link in links)
        ends = ({link["source_id"] for link in links}
                | {link["target_id"] for link in links}) - seen
        visible = session.memory_types(sorted(ends))
        frontier = sorted(end for end in ends if end in visible)
        seen.update(frontier)
    return [r["id"] for r in session.select_relations(RelationQuery()) if r["id"] in fetched]


def random_graph(store: OracleDBMemoryStore, rng: random.Random, size: int = 12) -> list[str]:
    """``size`` memories (a mix of types, metadata and scopes) and random links, cycles
    included; returns the ids of the memories on the query vector (the direct hits)."""
    ids = [f"n{n}" for n in range(size)]
    hits = ids[:3]
    types: dict[str, str] = {}
    for record_id in ids:
        types[record_id] = "memory" if record_id in hits else rng.choice(["memory", "fact"])
        add(store, record_id, Q if record_id in hits else None, record_type=types[record_id],
            metadata={"keep": rng.random() < 0.7},
            user_ids=rng.choice(["u1", "u1", None]))  # a global memory links to anyone's
    pairs = {tuple(sorted(rng.sample(ids, 2))) for _ in range(rng.randint(size, 2 * size))}
    for a, b in sorted(pairs):
        source, target = (a, b) if rng.random() < 0.5 else (b, a)
        link(store, source, target, types[source], types[target])
    return hits


def plan(**changes: Any) -> SearchPlan:
    values: dict[str, Any] = dict(mode="vector", k=3, record_types=("memory", "fact"))
    values.update(changes)
    return SearchPlan(**values)


# --- the edge set -------------------------------------------------------------------------------
@pytest.mark.parametrize("trial", range(6))
def test_the_recursive_reach_is_the_hop_by_hop_reach(vector_store: OracleDBMemoryStore,
                                                     trial: int) -> None:
    rng = random.Random(trial)
    hits = random_graph(vector_store, rng)
    with vector_store._session() as session:
        for hops in range(1, 6):
            roots = rng.sample(hits, rng.randint(1, 3))
            links = session.links_within_hops(roots, hops, 1000)
            assert links is not None
            assert [link["id"] for link in links] == reference_reach(session, roots, hops)
            assert links == [r for r in session.links_touching(
                [n for link in links for n in (link["source_id"], link["target_id"])])
                if r["id"] in {link["id"] for link in links}]  # the rows links_touching gives


def test_the_hop_boundary_is_exact_on_a_cycle(vector_store: OracleDBMemoryStore) -> None:
    """``a -> b -> c -> d -> e -> a``: ``h`` hops fetch the links touching nodes nearer than
    ``h``, however many times the cycle comes round."""
    nodes = "abcde"
    for record_id in nodes:
        add(vector_store, record_id, Q if record_id == "a" else None)
    for n, source in enumerate(nodes):
        link(vector_store, source, nodes[(n + 1) % len(nodes)])
    expected = {
        1: {"a->b", "e->a"},
        2: {"a->b", "e->a", "b->c", "d->e"},
        3: {"a->b", "e->a", "b->c", "d->e", "c->d"},
        5: {"a->b", "e->a", "b->c", "d->e", "c->d"},
    }
    with vector_store._session() as session:
        for hops, ids in expected.items():
            links = session.links_within_hops(["a"], hops, 100)
            assert links is not None and len(links) == len(ids)  # each link once
            assert {link["id"] for link in links} == ids
        assert session.links_within_hops([], 3, 100) == []


def test_past_the_row_limit_the_engine_answers_none(vector_store: OracleDBMemoryStore) -> None:
    for record_id in "abcd":
        add(vector_store, record_id, Q if record_id == "a" else None)
    for source, target in ("ab", "bc", "cd"):
        link(vector_store, source, target)
    with vector_store._session() as session:
        exact = session.links_within_hops(["a"], 3, 3)
        assert exact is not None and [r["id"] for r in exact] == ["a->b", "b->c", "c->d"]
        assert session.links_within_hops(["a"], 3, 2) is None


# --- the trees ----------------------------------------------------------------------------------
@pytest.mark.parametrize("trial", range(6))
def test_the_trees_are_those_of_the_hop_by_hop_walk(vector_store: OracleDBMemoryStore,
                                                    trial: int) -> None:
    """The default (one recursive query) against the hop-by-hop fallback (``edge_limit=0``:
    the first link is past the limit), with the search's filters skipping some memories."""
    rng = random.Random(50 + trial)
    hits = random_graph(vector_store, rng)
    results = [(record, 0.0) for record in (vector_store.get("memory", h) for h in hits)
               if record is not None]
    filtered = parse_metadata_filter({"keep": True})
    plans = [plan(), plan(record_types=("memory",)), plan(metadata_filter=filtered),
             plan(scope={"user_id": "u1"})]
    compared = 0
    with vector_store._session() as session:
        for search_plan in plans:
            for hops in (1, 2, 3, 5):
                for cap in (2, 100):
                    recursive = _graph.expand_results(session, results, search_plan, hops, cap)
                    walked = _graph.expand_results(session, results, search_plan, hops, cap,
                                                   edge_limit=0)
                    assert [tree(r) for r, _ in recursive] == [tree(r) for r, _ in walked]
                    compared += sum(1 for r, _ in recursive if r.linked_results)
    assert compared > 0  # the graphs do expand


# --- another user's links -----------------------------------------------------------------------
@pytest.fixture
def crossing_store(dds: Any) -> str:
    """alice: a1 (on the query vector), a2, a3, x; bob: x, b1, b2 (ids repeat across owners).
    Links, written as the owner: alice's a1-a2, a2-x, and the planted a1-b1 and b1-a3 (alice's
    rows through bob's memory b1); bob's x-b1 and b1-b2."""
    store_id: str = dds.new_store()
    with dds.owner_store(store_id) as owner:
        owner.add(["a1", "a2", "a3", "alice x"], "memory", record_ids=["a1", "a2", "a3", "x"],
                  user_ids="alice", embeddings=[Q] + [[0.0, 1.0, 0.0]] * 3)
        owner.add(["bob x", "b1", "b2"], "memory", record_ids=["x", "b1", "b2"],
                  user_ids="bob", embeddings=[[0.0, 1.0, 0.0]] * 3)
    names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=OWNER,
                        fold="lower")
    table = sql.Identifier(OWNER, names.table("memory_link"))
    with psycopg.connect(dds.owner_url) as conn:
        for relation_id, owner_id, source, target in (
                ("r-a1-a2", "alice", "a1", "a2"), ("r-a2-x", "alice", "a2", "x"),
                ("r-a1-b1", "alice", "a1", "b1"), ("r-b1-a3", "alice", "b1", "a3"),
                ("r-x-b1", "bob", "x", "b1"),
                ("r-b1-b2", "bob", "b1", "b2")):
            conn.execute(sql.SQL(
                "INSERT INTO {} (id, user_id, source_id, source_type, target_id, target_type, "
                "relation_type, opposite_relation_type) VALUES (%s, %s, %s, 'memory', %s, "
                "'memory', 'supports', 'supported_by')").format(table),
                [relation_id, owner_id, source, target])
    return store_id


def test_another_users_links_are_never_followed(dds: Any, crossing_store: str) -> None:
    with dds.runtime_store(crossing_store, "alice") as store:
        with store._session() as session:
            links = session.links_within_hops(["a1"], 5, 100)
        assert links is not None
        # a1-b1 touches a1 and is alice's row, but b1 is no memory alice sees: the walk never
        # steps on it, so b1-a3 (alice's row too) is out of reach, as it is hop by hop.
        assert sorted(r["id"] for r in links) == ["r-a1-a2", "r-a1-b1", "r-a2-x"]
        with store._session() as session:
            assert [r["id"] for r in links] == reference_reach(session, ["a1"], 5)
        [(hit, _)] = store.search(None, 1, query_vector=Q, record_types=["memory"],
                                  user_id="alice", num_hops=5)
        assert hit.id == "a1" and tree(hit) == [("r-a1-a2", "a2", [("r-a2-x", "x", [])])]
        assert hit.linked_results[0][1].linked_results[0][1].user_id == "alice"
    # Positive control: the owner's walk (no row security) does reach bob's links.
    with dds.owner_store(crossing_store) as owner, owner._session() as session:
        owner_links = session.links_within_hops(["a1"], 5, 100)
    assert owner_links is not None
    assert {"r-x-b1", "r-b1-b2", "r-b1-a3"} <= {r["id"] for r in owner_links}


# --- statements sent ----------------------------------------------------------------------------
@contextmanager
def counted_statements(conn: psycopg.Connection[Any]) -> Iterator[Callable[[], int]]:
    """Statements the client sends on ``conn`` inside the block (libpq protocol trace: one
    ``Bind`` per extended-protocol execution, one ``Query`` per simple one)."""
    with tempfile.TemporaryFile(mode="w+") as trace:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
        counted: list[int] = []
        try:
            yield lambda: counted[0]
        finally:
            conn.pgconn.untrace()
            trace.seek(0)
            counted.append(sum(1 for line in trace if line.split("\t")[:1] == ["F"]
                               and line.split("\t")[2:3] in (["Bind"], ["Query"])))


@pytest.mark.not_on_engine(
    "oracle", reason="counts statements with libpq's protocol trace on a psycopg connection")
def test_the_expansion_sends_two_statements_instead_of_two_per_hop(
        make_store: StoreFactory) -> None:
    store = make_store(vector_dim=3)
    for record_id in "abcde":
        add(store, record_id, Q if record_id == "a" else None)
    for source, target in ("ab", "bc", "cd", "de"):
        link(store, source, target)
    root = store.get("memory", "a")
    assert root is not None
    counts: dict[str, int] = {}
    trees: dict[str, Tree] = {}
    with store._session() as session:
        conn = session.conn  # type: ignore[attr-defined]
        for label, limit in (("recursive", _graph.GRAPH_EDGE_LIMIT), ("hop by hop", 0)):
            with counted_statements(conn) as count:
                [(expanded, _)] = _graph.expand_results(session, [(root, 0.0)], plan(), 4,
                                                        100, edge_limit=limit)
            counts[label], trees[label] = count(), tree(expanded)
    assert trees["recursive"] == trees["hop by hop"] == [
        ("a->b", "b", [("b->c", "c", [("c->d", "d", [("d->e", "e", [])])])])]
    # One recursive query and one read of the memories at its links' ends; the fallback pays
    # the refused recursive query, then two statements per hop.
    assert counts == {"recursive": 2, "hop by hop": 1 + 2 * 4}
