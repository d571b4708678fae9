"""Relations between memory-like records (spec 001 "Relacionamentos"): ``add_relations``,
``get_relation``, ``list_relations``, ``update_relations``, ``delete_relations`` and their
``*_async`` twins, plus the lifecycle status that ``supersedes``, ``refines`` and ``duplicates``
links impose on their target memory.

Every test runs on the real embedded database. Where the API cannot show what was (not)
written, ``list_relations()`` and ``get`` are used as the observers: a failed batch must leave
both unchanged.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from oracleagentmemory.apis import MAX_LIST_LIMIT, RecordRelation, RecordStatus
from oracleagentmemory.core import OracleDBMemoryStore

BUILT_IN_OPPOSITES = {
    "supersedes": "is_superseded_by",
    "refines": "is_refined_by",
    "supports": "is_supported_by",
    "contradicts": "contradicts",
    "duplicates": "duplicates",
}
LIFECYCLE_TYPES = ["supersedes", "refines", "duplicates"]
NON_LIFECYCLE_TYPES = ["supports", "contradicts", "mentions"]


# --- helpers --------------------------------------------------------------------------------


def add_memories(store: OracleDBMemoryStore, *ids: str, record_type: str = "memory",
                 **kwargs: Any) -> None:
    """Add one record of ``record_type`` per id, its content being ``text of <id>``."""
    store.add([f"text of {i}" for i in ids], record_type, record_ids=list(ids), **kwargs)


def status(store: OracleDBMemoryStore, record_id: str, record_type: str = "memory"
           ) -> RecordStatus:
    record = store.get(record_type, record_id)
    assert record is not None, f"{record_type} {record_id!r} is missing"
    return record.status


def relation_ids(relations: list[RecordRelation]) -> list[str]:
    return [r.id for r in relations]


def edges(relations: list[RecordRelation]) -> list[tuple[str, str, str]]:
    return [(r.source_record_id, r.relation_type, r.target_record_id) for r in relations]


@pytest.fixture
def abc(store: OracleDBMemoryStore) -> OracleDBMemoryStore:
    """A store holding memories ``a``, ``b``, ``c`` and ``d``."""
    add_memories(store, "a", "b", "c", "d")
    return store


# --- the spec's examples ----------------------------------------------------------------------


def test_spec_add_relations_example(store: OracleDBMemoryStore) -> None:
    add_memories(store, "new", "old")
    [relation_id] = store.add_relations("new", "memory", "old", "memory", "supersedes")
    relation = store.get_relation(relation_id=relation_id)
    assert relation is not None
    assert (relation.source_record_id, relation.source_record_type) == ("new", "memory")
    assert (relation.target_record_id, relation.target_record_type) == ("old", "memory")
    assert (relation.relation_type, relation.opposite_relation_type) == (
        "supersedes", "is_superseded_by")
    assert status(store, "old") is RecordStatus.INVALID
    assert status(store, "new") is RecordStatus.VALID


def test_spec_add_relations_returns_the_given_relation_id(store: OracleDBMemoryStore) -> None:
    add_memories(store, "new", "old")
    assert store.add_relations("new", "memory", "old", "memory", "supersedes",
                               relation_ids="relation-id") == ["relation-id"]
    assert relation_ids(store.list_relations()) == ["relation-id"]


def test_spec_add_relations_async_example(store: OracleDBMemoryStore) -> None:
    add_memories(store, "new", "old")
    added = asyncio.run(store.add_relations_async(
        "new", "memory", "old", "memory", "supersedes", relation_ids="relation-id"))
    assert added == ["relation-id"]
    assert edges(store.list_relations()) == [("new", "supersedes", "old")]
    assert status(store, "old") is RecordStatus.INVALID


def test_spec_get_relation_examples(store: OracleDBMemoryStore) -> None:
    add_memories(store, "source-id")
    add_memories(store, "target-id", record_type="fact")
    [relation_id] = store.add_relations("source-id", "memory", "target-id", "fact", "supports",
                                        relation_ids="relation-id")
    by_id = store.get_relation(relation_id="relation-id")
    by_tuple = store.get_relation("source-id", "memory", "target-id", "fact", "supports")
    assert by_id is not None and by_id.id == relation_id == "relation-id"
    assert by_tuple == by_id
    assert by_id.opposite_relation_type == "is_supported_by"
    assert by_id.target_record_type == "fact"


def test_spec_get_relation_async_example(store: OracleDBMemoryStore) -> None:
    add_memories(store, "new", "old")
    store.add_relations("new", "memory", "old", "memory", "refines", relation_ids="relation-id")
    relation = asyncio.run(store.get_relation_async(relation_id="relation-id"))
    assert relation is not None and edges([relation]) == [("new", "refines", "old")]
    assert asyncio.run(store.get_relation_async(relation_id="nope")) is None


def test_spec_list_relations_example(store: OracleDBMemoryStore) -> None:
    add_memories(store, "current-memory", "evidence-1", "evidence-2", "evidence-3", "older")
    store.add_relations(
        "current-memory", "memory", ["evidence-1", "evidence-2", "evidence-3", "older"], "memory",
        ["supports", "supports", "supports", "supersedes"],
        relation_ids=["r1", "r2", "r3", "r4"],
        metadata=[{"source": "manual"}, {"source": "import"}, {"source": "manual"},
                  {"source": "manual"}],
    )
    listed = store.list_relations(
        source_record_id="current-memory",
        relation_type="supports",
        metadata_filter={"source": "manual"},
    )
    assert relation_ids(listed) == ["r1", "r3"]
    assert all(isinstance(r, RecordRelation) for r in listed)


def test_spec_list_relations_async_example(store: OracleDBMemoryStore) -> None:
    add_memories(store, "current-memory", "evidence", "older", "other")
    store.add_relations(["current-memory", "current-memory", "other"], "memory",
                        ["evidence", "older", "evidence"], "memory",
                        ["supports", "supersedes", "supports"], relation_ids=["r1", "r2", "r3"])
    listed = asyncio.run(store.list_relations_async(
        source_record_id="current-memory", relation_type="supports"))
    assert relation_ids(listed) == ["r1"]


def test_spec_update_relations_example(store: OracleDBMemoryStore) -> None:
    add_memories(store, "new", "old")
    store.add_relations("new", "memory", "old", "memory", "supersedes", relation_ids="relation-id")
    assert status(store, "old") is RecordStatus.INVALID
    assert store.update_relations("relation-id", relation_types="supports") == ["relation-id"]
    relation = store.get_relation(relation_id="relation-id")
    assert relation is not None
    assert (relation.relation_type, relation.opposite_relation_type) == (
        "supports", "is_supported_by")
    assert status(store, "old") is RecordStatus.VALID


def test_spec_update_relations_async_example(store: OracleDBMemoryStore) -> None:
    add_memories(store, "new", "old")
    store.add_relations("new", "memory", "old", "memory", "supports", relation_ids="relation-id")
    updated = asyncio.run(store.update_relations_async("relation-id", relation_types="supersedes"))
    assert updated == ["relation-id"]
    relation = store.get_relation(relation_id="relation-id")
    assert relation is not None and relation.opposite_relation_type == "is_superseded_by"
    assert status(store, "old") is RecordStatus.INVALID


def test_spec_delete_relations_example(store: OracleDBMemoryStore) -> None:
    add_memories(store, "new", "old")
    store.add_relations("new", "memory", "old", "memory", "supersedes", relation_ids="relation-id")
    assert store.delete_relations("relation-id") == 1
    assert store.get_relation(relation_id="relation-id") is None
    assert store.list_relations() == []
    assert status(store, "old") is RecordStatus.VALID
    assert store.delete_relations("relation-id") == 0


def test_spec_delete_relations_async_example(store: OracleDBMemoryStore) -> None:
    add_memories(store, "new", "old")
    store.add_relations("new", "memory", "old", "memory", "duplicates", relation_ids="relation-id")
    assert asyncio.run(store.delete_relations_async("relation-id")) == 1
    assert store.list_relations() == []
    assert status(store, "old") is RecordStatus.VALID


def test_async_twins_raise_the_same_errors(abc: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="target_record_ids"):
        asyncio.run(abc.add_relations_async("a", "memory", "missing", "memory", "supports"))
    with pytest.raises(ValueError, match="relation_id"):
        asyncio.run(abc.get_relation_async("a", relation_id="r1"))
    with pytest.raises(ValueError, match="limit"):
        asyncio.run(abc.list_relations_async(limit=0))
    with pytest.raises(ValueError, match="update_relations needs"):
        asyncio.run(abc.update_relations_async("r1"))
    with pytest.raises(ValueError, match="relation_ids"):
        asyncio.run(abc.delete_relations_async(""))
    assert abc.list_relations() == []


# --- the stored relation ----------------------------------------------------------------------


def test_relation_carries_every_field(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1",
                      timestamps="2024-05-01T12:00:00Z", metadata={"source": "manual", "n": 2})
    relation = abc.get_relation(relation_id="r1")
    assert relation == RecordRelation(
        id="r1", source_record_id="a", source_record_type="memory", target_record_id="b",
        target_record_type="memory", relation_type="supports",
        opposite_relation_type="is_supported_by", timestamp="2024-05-01T12:00:00+00:00",
        metadata={"source": "manual", "n": 2}, created_at=relation.created_at if relation else "",
    )
    assert relation is not None and relation.created_at.startswith("20")


def test_generated_relation_ids_are_distinct_strings(abc: OracleDBMemoryStore) -> None:
    generated = abc.add_relations("a", "memory", ["b", "c", "d"], "memory", "supports")
    assert len(set(generated)) == 3 and all(isinstance(i, str) and i for i in generated)
    assert relation_ids(abc.list_relations()) == generated


def test_relation_without_timestamp_or_metadata_stores_none(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1")
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None and (relation.timestamp, relation.metadata) == (None, None)


@pytest.mark.parametrize("source_type,target_type", [
    ("memory", "fact"), ("fact", "guideline"), ("guideline", "preference"),
    ("preference", "memory"),
])
def test_every_memory_like_type_can_be_an_endpoint(store: OracleDBMemoryStore, source_type: str,
                                                   target_type: str) -> None:
    add_memories(store, "s", record_type=source_type)
    add_memories(store, "t", record_type=target_type)
    store.add_relations("s", source_type, "t", target_type, "supports", relation_ids="r1")
    relation = store.get_relation("s", source_type, "t", target_type, "supports")
    assert relation is not None and relation.id == "r1"
    assert (relation.source_record_type, relation.target_record_type) == (source_type,
                                                                          target_type)


# --- relation types and reverse labels ------------------------------------------------------


@pytest.mark.parametrize("relation_type,opposite", sorted(BUILT_IN_OPPOSITES.items()))
def test_built_in_types_get_their_fixed_reverse_label(abc: OracleDBMemoryStore,
                                                      relation_type: str, opposite: str) -> None:
    abc.add_relations("a", "memory", "b", "memory", relation_type, relation_ids="r1")
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None
    assert (relation.relation_type, relation.opposite_relation_type) == (relation_type, opposite)


@pytest.mark.parametrize("relation_type,opposite", sorted(BUILT_IN_OPPOSITES.items()))
def test_built_in_types_accept_their_own_reverse_label(abc: OracleDBMemoryStore,
                                                       relation_type: str, opposite: str) -> None:
    abc.add_relations("a", "memory", "b", "memory", relation_type,
                      opposite_relation_types=opposite, relation_ids="r1")
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None and relation.opposite_relation_type == opposite


@pytest.mark.parametrize("relation_type", sorted(BUILT_IN_OPPOSITES))
def test_built_in_types_reject_a_different_reverse_label(abc: OracleDBMemoryStore,
                                                         relation_type: str) -> None:
    with pytest.raises(ValueError, match=r"opposite_relation_types\[0\]"):
        abc.add_relations("a", "memory", "b", "memory", relation_type,
                          opposite_relation_types="is_related_to")
    assert abc.list_relations() == []
    assert status(abc, "b") is RecordStatus.VALID


def test_custom_type_uses_the_same_label_both_ways_by_default(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "mentions", relation_ids="r1")
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None
    assert (relation.relation_type, relation.opposite_relation_type) == ("mentions", "mentions")


def test_custom_type_takes_the_given_reverse_label(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", ["b", "c"], "memory", ["cites", "mentions"],
                      opposite_relation_types=["is_cited_by", "mentioned_by"],
                      relation_ids=["r1", "r2"])
    assert [(r.relation_type, r.opposite_relation_type) for r in abc.list_relations()] == [
        ("cites", "is_cited_by"), ("mentions", "mentioned_by")]


@pytest.mark.parametrize("bad", ["", "   ", "x" * 129])
def test_blank_or_overlong_relation_types_are_rejected(abc: OracleDBMemoryStore, bad: str) -> None:
    with pytest.raises(ValueError, match=r"relation_types\[0\]"):
        abc.add_relations("a", "memory", "b", "memory", bad)
    assert abc.list_relations() == []


def test_non_string_relation_type_is_rejected(abc: OracleDBMemoryStore) -> None:
    with pytest.raises(TypeError, match=r"relation_types\[0\]"):
        abc.add_relations("a", "memory", "b", "memory", 3)


# --- one orientation per endpoint pair, atomic batches -----------------------------------------


def test_the_reverse_orientation_of_an_existing_pair_is_rejected(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1")
    with pytest.raises(ValueError, match="source_record_ids"):
        abc.add_relations("b", "memory", "a", "memory", "is_supported_by")
    assert relation_ids(abc.list_relations()) == ["r1"]


def test_a_second_relation_with_the_same_orientation_is_rejected(
        abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1")
    with pytest.raises(ValueError, match="source_record_ids"):
        abc.add_relations("a", "memory", "b", "memory", "supersedes")
    assert relation_ids(abc.list_relations()) == ["r1"]
    assert status(abc, "b") is RecordStatus.VALID


def test_both_orientations_in_one_batch_are_rejected(abc: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match=r"source_record_ids\[1\]"):
        abc.add_relations(["a", "b"], "memory", ["b", "a"], "memory", "supports")
    assert abc.list_relations() == []


def test_a_reused_relation_id_is_rejected_naming_relation_ids(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1")
    with pytest.raises(ValueError, match="relation_ids"):
        abc.add_relations("c", "memory", "d", "memory", "supports", relation_ids="r1")
    assert edges(abc.list_relations()) == [("a", "supports", "b")]


def test_duplicate_relation_ids_in_one_batch_are_rejected(abc: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match=r"relation_ids\[1\]"):
        abc.add_relations("a", "memory", ["b", "c"], "memory", "supports",
                          relation_ids=["r1", "r1"])
    assert abc.list_relations() == []


@pytest.mark.parametrize("bad_source,bad_target,bad_type,argument", [
    ("b", "a", "memory", "source_record_ids"),         # reverse of the stored a -> b
    ("a", "missing", "memory", "target_record_ids"),   # the endpoint does not exist
    ("a", "m1", "message", "target_record_types"),     # not a memory-like type
    ("b", "d", "fact", "target_record_ids"),           # d exists, but as a memory
    ("b", "b", "memory", "target_record_ids"),         # a self-link
])
def test_a_batch_with_one_bad_entry_writes_nothing(abc: OracleDBMemoryStore, bad_source: str,
                                                   bad_target: str, bad_type: str,
                                                   argument: str) -> None:
    abc.add(["hello"], "message", record_ids="m1")
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r0")
    with pytest.raises(ValueError, match=argument):
        abc.add_relations(
            ["c", "a", bad_source], "memory", ["d", "c", bad_target],
            ["memory", "memory", bad_type], ["supersedes", "duplicates", "supports"],
            relation_ids=["n1", "n2", "n3"],
        )
    assert relation_ids(abc.list_relations()) == ["r0"]
    assert [status(abc, i) for i in "abcd"] == [RecordStatus.VALID] * 4


# --- broadcasting and alignment ----------------------------------------------------------------


def test_one_source_broadcasts_over_a_list_of_targets(abc: OracleDBMemoryStore) -> None:
    added = abc.add_relations("a", "memory", ["b", "c", "d"], "memory", "supports",
                              metadata={"batch": 1})
    listed = abc.list_relations()
    assert relation_ids(listed) == added
    assert edges(listed) == [("a", "supports", "b"), ("a", "supports", "c"),
                             ("a", "supports", "d")]
    assert [r.metadata for r in listed] == [{"batch": 1}] * 3


def test_a_list_of_sources_broadcasts_one_target(abc: OracleDBMemoryStore) -> None:
    abc.add_relations(["a", "b", "c"], "memory", "d", "memory", "supports")
    assert edges(abc.list_relations()) == [("a", "supports", "d"), ("b", "supports", "d"),
                                           ("c", "supports", "d")]


def test_per_relation_values_align_with_the_batch(store: OracleDBMemoryStore) -> None:
    add_memories(store, "a", "b")
    add_memories(store, "f", record_type="fact")
    store.add_relations(
        ["a", "f"], ["memory", "fact"], ["b", "a"], "memory", ["refines", "mentions"],
        opposite_relation_types=[None, "mentioned_by"], relation_ids=["r1", None],
        timestamps=["2024-01-01T00:00:00+00:00", None], metadata=[None, {"k": "v"}],
    )
    first, second = store.list_relations()
    assert first.id == "r1" and second.id != "r1"
    assert (first.source_record_type, first.opposite_relation_type, first.timestamp,
            first.metadata) == ("memory", "is_refined_by", "2024-01-01T00:00:00+00:00", None)
    assert (second.source_record_type, second.opposite_relation_type, second.timestamp,
            second.metadata) == ("fact", "mentioned_by", None, {"k": "v"})


@pytest.mark.parametrize("argument,kwargs", [
    ("target_record_ids", {"target_record_ids": ["b", "c"]}),
    ("source_record_types", {"source_record_types": ["memory", "memory"]}),
    ("target_record_types", {"target_record_types": ["memory"] * 4}),
    ("relation_types", {"relation_types": ["supports", "supports"]}),
    ("opposite_relation_types", {"opposite_relation_types": ["x", "y"]}),
    ("relation_ids", {"relation_ids": ["r1"]}),
    ("timestamps", {"timestamps": [None, None]}),
    ("metadata", {"metadata": [{}, {}]}),
])
def test_misaligned_lists_are_rejected(abc: OracleDBMemoryStore, argument: str,
                                       kwargs: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {
        "source_record_ids": ["a", "a", "a"], "source_record_types": "memory",
        "target_record_ids": ["b", "c", "d"], "target_record_types": "memory",
        "relation_types": "supports",
    }
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=argument):
        abc.add_relations(**arguments)
    assert abc.list_relations() == []


def test_an_empty_batch_is_rejected(abc: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="source_record_ids"):
        abc.add_relations([], "memory", [], "memory", "supports")


# --- endpoints --------------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["source", "target"])
def test_a_missing_endpoint_is_rejected_naming_its_side(abc: OracleDBMemoryStore,
                                                        side: str) -> None:
    source, target = ("ghost", "a") if side == "source" else ("a", "ghost")
    with pytest.raises(ValueError, match=f"{side}_record_ids"):
        abc.add_relations(source, "memory", target, "memory", "supports")
    assert abc.list_relations() == []


@pytest.mark.parametrize("side", ["source", "target"])
def test_an_endpoint_stored_with_another_type_is_rejected(store: OracleDBMemoryStore,
                                                          side: str) -> None:
    add_memories(store, "m")
    add_memories(store, "f", record_type="fact")
    if side == "source":
        arguments = ("f", "guideline", "m", "memory")
    else:
        arguments = ("m", "memory", "f", "preference")
    with pytest.raises(ValueError, match=f"{side}_record_ids"):
        store.add_relations(*arguments, "supports")
    assert store.list_relations() == []


@pytest.mark.parametrize("record_type", ["message", "user_profile", "agent_profile", "thread",
                                         "thread_summary", "image", "banana"])
@pytest.mark.parametrize("side", ["source", "target"])
def test_non_memory_endpoint_types_are_rejected(abc: OracleDBMemoryStore, record_type: str,
                                                side: str) -> None:
    types = (record_type, "memory") if side == "source" else ("memory", record_type)
    with pytest.raises(ValueError, match=f"{side}_record_types"):
        abc.add_relations("a", types[0], "b", types[1], "supports")
    assert abc.list_relations() == []


def test_existing_message_and_profile_cannot_be_linked(abc: OracleDBMemoryStore) -> None:
    abc.add(["hello"], "message", record_ids="msg")
    abc.add_user("alice", "Likes tea")
    with pytest.raises(ValueError, match="target_record_types"):
        abc.add_relations("a", "memory", "msg", "message", "supports")
    with pytest.raises(ValueError, match="source_record_types"):
        abc.add_relations("alice", "user_profile", "a", "memory", "supports")
    assert abc.list_relations() == []


def test_a_self_link_is_rejected(abc: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="target_record_ids"):
        abc.add_relations("a", "memory", "a", "memory", "supersedes")
    assert abc.list_relations() == []
    assert status(abc, "a") is RecordStatus.VALID


@pytest.mark.parametrize("argument", ["source_record_ids", "target_record_ids"])
@pytest.mark.parametrize("bad", ["", "  ", "x" * 129])
def test_blank_or_overlong_endpoint_ids_are_rejected(abc: OracleDBMemoryStore, argument: str,
                                                     bad: str) -> None:
    arguments: dict[str, Any] = {
        "source_record_ids": "a", "source_record_types": "memory", "target_record_ids": "b",
        "target_record_types": "memory", "relation_types": "supports",
    }
    arguments[argument] = bad
    with pytest.raises(ValueError, match=argument):
        abc.add_relations(**arguments)


def test_non_string_endpoint_id_is_rejected(abc: OracleDBMemoryStore) -> None:
    with pytest.raises(TypeError, match="source_record_ids"):
        abc.add_relations(7, "memory", "b", "memory", "supports")


def test_bad_relation_timestamp_or_metadata_is_rejected(abc: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match=r"timestamps\[0\]"):
        abc.add_relations("a", "memory", "b", "memory", "supports", timestamps="yesterday")
    with pytest.raises(TypeError, match=r"metadata\[0\]"):
        abc.add_relations("a", "memory", "b", "memory", "supports", metadata="not a dict")
    with pytest.raises(ValueError, match=r"metadata\[0\]"):
        abc.add_relations("a", "memory", "b", "memory", "supports", metadata={1: "x"})
    assert abc.list_relations() == []


# --- get_relation -------------------------------------------------------------------------------

TUPLE_FIELDS = ["source_record_id", "source_record_type", "target_record_id",
                "target_record_type", "relation_type"]
FULL_TUPLE = {"source_record_id": "a", "source_record_type": "memory", "target_record_id": "b",
              "target_record_type": "memory", "relation_type": "supports"}


@pytest.fixture
def linked(abc: OracleDBMemoryStore) -> OracleDBMemoryStore:
    """``a supports b`` as ``r1`` and ``c supersedes d`` as ``r2``."""
    abc.add_relations(["a", "c"], "memory", ["b", "d"], "memory", ["supports", "supersedes"],
                      relation_ids=["r1", "r2"])
    return abc


def test_get_relation_by_id_alone(linked: OracleDBMemoryStore) -> None:
    relation = linked.get_relation(relation_id="r2")
    assert relation is not None and edges([relation]) == [("c", "supersedes", "d")]


def test_get_relation_by_the_full_tuple_as_keywords(linked: OracleDBMemoryStore) -> None:
    relation = linked.get_relation(**FULL_TUPLE)
    assert relation is not None and relation.id == "r1"


@pytest.mark.parametrize("field,value", [
    ("source_record_id", "c"), ("source_record_type", "fact"), ("target_record_id", "c"),
    ("target_record_type", "fact"), ("relation_type", "supersedes"),
])
def test_get_relation_with_a_non_matching_tuple_returns_none(linked: OracleDBMemoryStore,
                                                             field: str, value: str) -> None:
    assert linked.get_relation(**{**FULL_TUPLE, field: value}) is None


def test_get_relation_uses_the_stored_orientation(linked: OracleDBMemoryStore) -> None:
    assert linked.get_relation("b", "memory", "a", "memory", "supports") is None
    assert linked.get_relation("b", "memory", "a", "memory", "is_supported_by") is None


def test_get_relation_of_an_unknown_id_returns_none(linked: OracleDBMemoryStore) -> None:
    assert linked.get_relation(relation_id="nope") is None


@pytest.mark.parametrize("field", TUPLE_FIELDS)
def test_get_relation_rejects_relation_id_with_a_tuple_field(linked: OracleDBMemoryStore,
                                                             field: str) -> None:
    with pytest.raises(ValueError, match=f"relation_id.*{field}"):
        linked.get_relation(relation_id="r1", **{field: FULL_TUPLE[field]})


def test_get_relation_rejects_relation_id_with_the_full_tuple(linked: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="relation_id"):
        linked.get_relation(relation_id="r1", **FULL_TUPLE)


@pytest.mark.parametrize("missing", TUPLE_FIELDS)
def test_get_relation_rejects_a_partial_tuple(linked: OracleDBMemoryStore, missing: str) -> None:
    partial = {k: v for k, v in FULL_TUPLE.items() if k != missing}
    with pytest.raises(ValueError, match=missing):
        linked.get_relation(**partial)


def test_get_relation_without_arguments_is_rejected(linked: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="relation_id"):
        linked.get_relation()


@pytest.mark.parametrize("field", TUPLE_FIELDS)
def test_get_relation_rejects_a_blank_tuple_field(linked: OracleDBMemoryStore, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        linked.get_relation(**{**FULL_TUPLE, field: " "})


def test_get_relation_rejects_a_blank_relation_id(linked: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="relation_id"):
        linked.get_relation(relation_id="")


# --- list_relations -----------------------------------------------------------------------------


@pytest.fixture
def web(store: OracleDBMemoryStore) -> OracleDBMemoryStore:
    """Relations r1..r5 added one call at a time, in that order.

    r1 a -supports-> b      {"source": "manual", "tags": ["prod", "urgent"]}
    r2 c -supersedes-> a    {"source": "import", "review": {"status": "open"}}
    r3 a -mentions-> f(fact) (no metadata)
    r4 f(fact) -supports-> d {"source": "manual", "tags": ["dev"]}
    r5 e -refines-> b       (no metadata)
    """
    add_memories(store, "a", "b", "c", "d", "e")
    add_memories(store, "f", record_type="fact")
    for source, source_type, target, target_type, kind, rid, meta in [
        ("a", "memory", "b", "memory", "supports", "r1",
         {"source": "manual", "tags": ["prod", "urgent"]}),
        ("c", "memory", "a", "memory", "supersedes", "r2",
         {"source": "import", "review": {"status": "open"}}),
        ("a", "memory", "f", "fact", "mentions", "r3", None),
        ("f", "fact", "d", "memory", "supports", "r4", {"source": "manual", "tags": ["dev"]}),
        ("e", "memory", "b", "memory", "refines", "r5", None),
    ]:
        store.add_relations(source, source_type, target, target_type, kind, relation_ids=rid,
                            metadata=meta)
    return store


def test_list_relations_returns_creation_order(web: OracleDBMemoryStore) -> None:
    assert relation_ids(web.list_relations()) == ["r1", "r2", "r3", "r4", "r5"]


def test_list_relations_keeps_batch_input_order(abc: OracleDBMemoryStore) -> None:
    abc.add_relations(["d", "a", "c"], "memory", ["c", "d", "b"], "memory", "supports",
                      relation_ids=["z", "m", "a"])
    assert relation_ids(abc.list_relations()) == ["z", "m", "a"]


@pytest.mark.parametrize("filters,expected", [
    ({"source_record_id": "a"}, ["r1", "r3"]),
    ({"target_record_id": "b"}, ["r1", "r5"]),
    ({"source_record_type": "fact"}, ["r4"]),
    ({"target_record_type": "fact"}, ["r3"]),
    ({"target_record_type": "memory"}, ["r1", "r2", "r4", "r5"]),
    ({"relation_type": "supports"}, ["r1", "r4"]),
    ({"relation_type": "is_supported_by"}, []),
    ({"relation_id": "r2"}, ["r2"]),
    ({"relation_id": "r2", "relation_type": "supports"}, []),
    ({"source_record_id": "a", "relation_type": "supports", "target_record_type": "memory"},
     ["r1"]),
    ({"source_record_id": "b"}, []),
])
def test_list_relations_filters(web: OracleDBMemoryStore, filters: dict[str, str],
                                expected: list[str]) -> None:
    assert relation_ids(web.list_relations(**filters)) == expected


@pytest.mark.parametrize("metadata_filter,expected", [
    ({"source": "manual"}, ["r1", "r4"]),
    ({"review": {"status": "open"}}, ["r2"]),
    ({"tags": ["prod", "urgent"]}, ["r1"]),
    ({"tags": ["urgent", "prod"]}, []),
    ({"tags": {"$array_contains": "prod"}}, ["r1"]),
    ({"tags": {"$array_contains_any": ["dev", "urgent"]}}, ["r1", "r4"]),
    ({"source": {"$not": "manual"}}, ["r2", "r3", "r5"]),
    ({"source": "manual", "tags": {"$array_contains": "dev"}}, ["r4"]),
    ({}, ["r1", "r2", "r3", "r4", "r5"]),
    (None, ["r3", "r5"]),
])
def test_list_relations_metadata_filter(web: OracleDBMemoryStore, metadata_filter: Any,
                                        expected: list[str]) -> None:
    assert relation_ids(web.list_relations(metadata_filter=metadata_filter)) == expected


def test_list_relations_limit_keeps_the_most_recent_in_creation_order(
        web: OracleDBMemoryStore) -> None:
    assert relation_ids(web.list_relations(limit=2)) == ["r4", "r5"]
    assert relation_ids(web.list_relations(limit=2, source_record_id="a")) == ["r1", "r3"]
    assert relation_ids(web.list_relations(limit=None)) == ["r1", "r2", "r3", "r4", "r5"]
    assert relation_ids(web.list_relations(limit=50)) == ["r1", "r2", "r3", "r4", "r5"]


def test_list_relations_default_cap_is_max_list_limit(store: OracleDBMemoryStore) -> None:
    total = MAX_LIST_LIMIT + 1
    ids = [f"m{n:03d}" for n in range(142)]  # 142 * 141 / 2 = 10011 distinct pairs
    add_memories(store, *ids)
    pairs = [(ids[i], ids[j]) for i in range(len(ids)) for j in range(i + 1, len(ids))][:total]
    added = store.add_relations([s for s, _ in pairs], "memory", [t for _, t in pairs], "memory",
                                "supports")
    capped = store.list_relations()
    assert len(capped) == MAX_LIST_LIMIT
    assert relation_ids(capped) == added[1:]  # the oldest relation falls out of the window
    assert relation_ids(store.list_relations(limit=None)) == added


@pytest.mark.parametrize("limit,error", [(0, ValueError), (-1, ValueError),
                                         ("3", TypeError), (2.5, TypeError), (True, TypeError)])
def test_list_relations_rejects_a_bad_limit(web: OracleDBMemoryStore, limit: Any,
                                            error: type[Exception]) -> None:
    with pytest.raises(error, match="limit"):
        web.list_relations(limit=limit)


@pytest.mark.parametrize("metadata_filter", ["manual", {"$bad": 1}, {"a": {"$nope": 1}}])
def test_list_relations_rejects_a_bad_metadata_filter(web: OracleDBMemoryStore,
                                                      metadata_filter: Any) -> None:
    with pytest.raises(ValueError, match="metadata_filter"):
        web.list_relations(metadata_filter=metadata_filter)


@pytest.mark.parametrize("argument", TUPLE_FIELDS + ["relation_id"])
def test_list_relations_rejects_a_blank_filter(web: OracleDBMemoryStore, argument: str) -> None:
    with pytest.raises(ValueError, match=argument):
        web.list_relations(**{argument: ""})


def test_list_relations_of_an_empty_store_is_empty(store: OracleDBMemoryStore) -> None:
    assert store.list_relations() == []
    assert store.list_relations(limit=None) == []


# --- update_relations ----------------------------------------------------------------------------


def test_retype_to_a_built_in_type_replaces_the_reverse_label(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "mentions",
                      opposite_relation_types="mentioned_by", relation_ids="r1")
    assert abc.update_relations("r1", relation_types="refines") == ["r1"]
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None
    assert (relation.relation_type, relation.opposite_relation_type) == ("refines",
                                                                         "is_refined_by")


@pytest.mark.parametrize("old,new", [("supersedes", "supports"), ("supports", "contradicts"),
                                     ("contradicts", "duplicates")])
def test_retype_between_built_in_types_uses_the_new_fixed_label(abc: OracleDBMemoryStore,
                                                                old: str, new: str) -> None:
    abc.add_relations("a", "memory", "b", "memory", old, relation_ids="r1")
    abc.update_relations("r1", relation_types=new)
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None
    assert (relation.relation_type, relation.opposite_relation_type) == (new,
                                                                         BUILT_IN_OPPOSITES[new])


def test_custom_retype_keeps_the_stored_reverse_label(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "mentions",
                      opposite_relation_types="mentioned_by", relation_ids="r1")
    abc.update_relations("r1", relation_types="cites")
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None
    assert (relation.relation_type, relation.opposite_relation_type) == ("cites", "mentioned_by")


def test_custom_retype_takes_a_given_reverse_label(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1")
    abc.update_relations("r1", relation_types="cites", opposite_relation_types="is_cited_by")
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None
    assert (relation.relation_type, relation.opposite_relation_type) == ("cites", "is_cited_by")


def test_the_reverse_label_of_a_custom_relation_can_change_alone(
        abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "mentions", relation_ids="r1")
    abc.update_relations("r1", opposite_relation_types="mentioned_by")
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None
    assert (relation.relation_type, relation.opposite_relation_type) == ("mentions",
                                                                         "mentioned_by")


@pytest.mark.parametrize("kwargs", [
    {"opposite_relation_types": "is_related_to"},                               # stored built-in
    {"relation_types": "supports", "opposite_relation_types": "is_backed_by"},  # new built-in
])
def test_a_different_reverse_label_for_a_built_in_type_is_rejected(
        abc: OracleDBMemoryStore, kwargs: dict[str, str]) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supersedes", relation_ids="r1")
    before = abc.get_relation(relation_id="r1")
    with pytest.raises(ValueError, match="opposite_relation_types"):
        abc.update_relations("r1", **kwargs)
    assert abc.get_relation(relation_id="r1") == before
    assert status(abc, "b") is RecordStatus.INVALID


def test_a_built_in_type_accepts_its_own_reverse_label_on_update(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "mentions", relation_ids="r1")
    assert abc.update_relations("r1", relation_types="supports",
                                opposite_relation_types="is_supported_by") == ["r1"]
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None and relation.opposite_relation_type == "is_supported_by"


def test_metadata_is_replaced_not_merged(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1",
                      metadata={"source": "manual", "score": 1})
    abc.update_relations("r1", metadata={"reviewed": True})
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None and relation.metadata == {"reviewed": True}
    assert relation_ids(abc.list_relations(metadata_filter={"source": "manual"})) == []


def test_metadata_none_clears_it(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1",
                      metadata={"source": "manual"})
    abc.update_relations("r1", metadata=None)
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None and relation.metadata is None
    assert relation_ids(abc.list_relations(metadata_filter=None)) == ["r1"]


def test_timestamps_are_set_and_cleared(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1")
    abc.update_relations("r1", timestamps="2025-03-04T05:06:07+02:00")
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None and relation.timestamp == "2025-03-04T03:06:07+00:00"
    abc.update_relations("r1", timestamps=None)
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None and relation.timestamp is None


def test_omitted_fields_are_preserved(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "mentions",
                      opposite_relation_types="mentioned_by", relation_ids="r1",
                      timestamps="2024-01-01T00:00:00Z", metadata={"k": 1})
    before = abc.get_relation(relation_id="r1")
    abc.update_relations("r1", metadata={"k": 2})
    after = abc.get_relation(relation_id="r1")
    assert before is not None and after is not None
    assert after.metadata == {"k": 2}
    assert (after.relation_type, after.opposite_relation_type, after.timestamp,
            after.created_at) == (before.relation_type, before.opposite_relation_type,
                                  before.timestamp, before.created_at)


def test_unknown_ids_are_left_out_of_the_result(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", ["b", "c"], "memory", "supports", relation_ids=["r1", "r2"])
    assert abc.update_relations(["ghost", "r2", "r1"], metadata={"seen": 1}) == ["r2", "r1"]
    assert abc.update_relations("ghost", relation_types="supersedes") == []
    assert [r.metadata for r in abc.list_relations()] == [{"seen": 1}, {"seen": 1}]


def test_update_values_align_per_relation(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", ["b", "c"], "memory", "supports", relation_ids=["r1", "r2"])
    # r2 becomes a custom type without a new reverse label, so it keeps the stored one.
    abc.update_relations(["r1", "r2"], relation_types=["duplicates", "mentions"],
                         metadata=[{"n": 1}, None])
    assert [(r.relation_type, r.opposite_relation_type, r.metadata)
            for r in abc.list_relations()] == [("duplicates", "duplicates", {"n": 1}),
                                               ("mentions", "is_supported_by", None)]


def test_update_does_not_reorder_relations(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", ["b", "c"], "memory", "supports", relation_ids=["r1", "r2"])
    abc.update_relations("r1", metadata={"touched": True})
    assert relation_ids(abc.list_relations()) == ["r1", "r2"]


def test_update_without_any_field_is_rejected(abc: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="update_relations needs"):
        abc.update_relations("r1")


@pytest.mark.parametrize("argument", ["relation_types", "opposite_relation_types", "timestamps",
                                      "metadata"])
def test_update_rejects_misaligned_lists(abc: OracleDBMemoryStore, argument: str) -> None:
    abc.add_relations("a", "memory", ["b", "c"], "memory", "mentions", relation_ids=["r1", "r2"])
    three: dict[str, list[Any]] = {"relation_types": ["x"] * 3,
                                   "opposite_relation_types": ["y"] * 3,
                                   "timestamps": [None] * 3, "metadata": [{}] * 3}
    with pytest.raises(ValueError, match=argument):
        abc.update_relations(["r1", "r2"], **{argument: three[argument]})
    assert [r.relation_type for r in abc.list_relations()] == ["mentions", "mentions"]


@pytest.mark.parametrize("argument,value,error", [
    ("relation_ids", "", ValueError),
    ("relation_ids", [], ValueError),
    ("relation_types", " ", ValueError),
    ("opposite_relation_types", "", ValueError),
    ("timestamps", "not a time", ValueError),
    ("metadata", "not a dict", TypeError),
])
def test_update_rejects_bad_values(abc: OracleDBMemoryStore, argument: str, value: Any,
                                   error: type[Exception]) -> None:
    abc.add_relations("a", "memory", "b", "memory", "mentions", relation_ids="r1")
    arguments: dict[str, Any] = {"relation_ids": "r1", "metadata": {"x": 1}}
    arguments[argument] = value
    with pytest.raises(error, match=argument):
        abc.update_relations(**arguments)
    relation = abc.get_relation(relation_id="r1")
    assert relation is not None and relation.metadata is None


# --- delete_relations ----------------------------------------------------------------------------


def test_delete_relations_counts_only_existing_relations(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", ["b", "c", "d"], "memory", "supports",
                      relation_ids=["r1", "r2", "r3"])
    assert abc.delete_relations(["r1", "ghost", "r3", "r1"]) == 2
    assert relation_ids(abc.list_relations()) == ["r2"]


def test_deleting_a_relation_keeps_its_endpoints(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1")
    abc.delete_relations("r1")
    assert abc.get("memory", "a") is not None and abc.get("memory", "b") is not None


def test_a_deleted_pair_can_be_linked_again_in_either_orientation(
        abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1")
    abc.delete_relations("r1")
    abc.add_relations("b", "memory", "a", "memory", "supports", relation_ids="r2")
    assert edges(abc.list_relations()) == [("b", "supports", "a")]


@pytest.mark.parametrize("value,error", [("", ValueError), (["r1", " "], ValueError),
                                         (5, TypeError), ([None], TypeError)])
def test_delete_relations_rejects_bad_ids(abc: OracleDBMemoryStore, value: Any,
                                          error: type[Exception]) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supports", relation_ids="r1")
    with pytest.raises(error, match="relation_ids"):
        abc.delete_relations(value)
    assert relation_ids(abc.list_relations()) == ["r1"]


# --- lifecycle ------------------------------------------------------------------------------------


@pytest.mark.parametrize("relation_type", LIFECYCLE_TYPES)
def test_lifecycle_links_invalidate_the_target_not_the_source(abc: OracleDBMemoryStore,
                                                              relation_type: str) -> None:
    abc.add_relations("a", "memory", "b", "memory", relation_type)
    assert status(abc, "b") is RecordStatus.INVALID
    assert status(abc, "a") is RecordStatus.VALID
    assert status(abc, "c") is RecordStatus.VALID


@pytest.mark.parametrize("relation_type", NON_LIFECYCLE_TYPES)
def test_other_links_leave_both_endpoints_valid(abc: OracleDBMemoryStore,
                                                relation_type: str) -> None:
    abc.add_relations("a", "memory", "b", "memory", relation_type)
    assert (status(abc, "a"), status(abc, "b")) == (RecordStatus.VALID, RecordStatus.VALID)


@pytest.mark.parametrize("record_type", ["fact", "guideline", "preference"])
def test_lifecycle_applies_to_every_memory_like_target(store: OracleDBMemoryStore,
                                                       record_type: str) -> None:
    add_memories(store, "new")
    add_memories(store, "old", record_type=record_type)
    [rid] = store.add_relations("new", "memory", "old", record_type, "supersedes")
    assert status(store, "old", record_type) is RecordStatus.INVALID
    store.delete_relations(rid)
    assert status(store, "old", record_type) is RecordStatus.VALID


def test_invalid_status_shows_in_list_and_get(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supersedes")
    assert {r.id: r.status for r in abc.list("memory")} == {
        "a": RecordStatus.VALID, "b": RecordStatus.INVALID, "c": RecordStatus.VALID,
        "d": RecordStatus.VALID}


def test_the_last_invalidating_link_decides(abc: OracleDBMemoryStore) -> None:
    first, second = abc.add_relations(["a", "c"], "memory", "b", "memory",
                                      ["supersedes", "duplicates"])
    assert status(abc, "b") is RecordStatus.INVALID
    assert abc.delete_relations(first) == 1
    assert status(abc, "b") is RecordStatus.INVALID
    assert abc.delete_relations(second) == 1
    assert status(abc, "b") is RecordStatus.VALID


def test_deleting_a_non_lifecycle_link_keeps_the_target_invalid(abc: OracleDBMemoryStore) -> None:
    _, supports = abc.add_relations(["a", "c"], "memory", "b", "memory",
                                    ["refines", "supports"])
    abc.delete_relations(supports)
    assert status(abc, "b") is RecordStatus.INVALID


def test_retyping_the_last_invalidating_link_restores_valid(abc: OracleDBMemoryStore) -> None:
    [rid] = abc.add_relations("a", "memory", "b", "memory", "supersedes")
    abc.update_relations(rid, relation_types="supports")
    assert status(abc, "b") is RecordStatus.VALID
    abc.update_relations(rid, relation_types="supersedes")
    assert status(abc, "b") is RecordStatus.INVALID
    abc.update_relations(rid, relation_types="custom_link")
    assert status(abc, "b") is RecordStatus.VALID


def test_retyping_one_of_two_invalidating_links_keeps_invalid(abc: OracleDBMemoryStore) -> None:
    first, _ = abc.add_relations(["a", "c"], "memory", "b", "memory", ["supersedes", "refines"])
    abc.update_relations(first, relation_types="contradicts")
    assert status(abc, "b") is RecordStatus.INVALID


def test_retyping_between_lifecycle_types_keeps_invalid(abc: OracleDBMemoryStore) -> None:
    [rid] = abc.add_relations("a", "memory", "b", "memory", "supersedes")
    abc.update_relations(rid, relation_types="duplicates")
    assert status(abc, "b") is RecordStatus.INVALID


def test_updating_metadata_does_not_touch_status(abc: OracleDBMemoryStore) -> None:
    [rid] = abc.add_relations("a", "memory", "b", "memory", "supersedes")
    abc.update_relations(rid, metadata={"note": "x"}, timestamps="2024-01-01T00:00:00Z")
    assert status(abc, "b") is RecordStatus.INVALID


def test_deleting_the_source_memory_deletes_its_links_and_restores_the_target(
        abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", ["b", "c"], "memory", ["supersedes", "supports"],
                      relation_ids=["r1", "r2"])
    abc.add_relations("c", "memory", "d", "memory", "supports", relation_ids="r3")
    assert abc.delete("memory", "a") == 1
    assert relation_ids(abc.list_relations()) == ["r3"]
    assert abc.get_relation(relation_id="r1") is None
    assert status(abc, "b") is RecordStatus.VALID


def test_deleting_the_target_memory_deletes_its_links(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", "b", "memory", "supersedes", relation_ids="r1")
    assert abc.delete("memory", "b") == 1
    assert abc.list_relations() == []
    assert status(abc, "a") is RecordStatus.VALID


def test_deleting_one_of_two_sources_keeps_the_target_invalid(abc: OracleDBMemoryStore) -> None:
    abc.add_relations(["a", "c"], "memory", "b", "memory", "refines")
    abc.delete("memory", "a")
    assert status(abc, "b") is RecordStatus.INVALID
    abc.delete("memory", "c")
    assert status(abc, "b") is RecordStatus.VALID


def test_delete_thread_deletes_links_of_its_memories_and_restores_targets(
        store: OracleDBMemoryStore) -> None:
    store.add([None], "thread", record_ids="t1")
    add_memories(store, "in-thread", thread_ids="t1")
    add_memories(store, "outside", "other")
    store.add_relations(["in-thread", "other"], "memory", "outside", "memory",
                        ["supersedes", "supports"], relation_ids=["r1", "r2"])
    assert status(store, "outside") is RecordStatus.INVALID
    assert store.delete_thread("t1") == 1
    assert store.get("memory", "in-thread") is None
    assert relation_ids(store.list_relations()) == ["r2"]
    assert status(store, "outside") is RecordStatus.VALID


def test_cascading_profile_delete_restores_targets(store: OracleDBMemoryStore) -> None:
    store.add_user("alice", "Likes tea")
    add_memories(store, "alice-note", user_ids="alice")
    add_memories(store, "shared")
    store.add_relations("alice-note", "memory", "shared", "memory", "duplicates")
    assert status(store, "shared") is RecordStatus.INVALID
    store.delete("user_profile", "alice", cascade=True)
    assert store.list_relations() == []
    assert status(store, "shared") is RecordStatus.VALID


def test_a_failed_add_leaves_status_unchanged(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("c", "memory", "d", "memory", "supports", relation_ids="r0")
    with pytest.raises(ValueError, match="source_record_ids"):
        # The first entry would invalidate b; the second hits the stored c - d pair.
        abc.add_relations(["a", "d"], "memory", ["b", "c"], "memory", ["supersedes", "supports"])
    assert status(abc, "b") is RecordStatus.VALID
    assert relation_ids(abc.list_relations()) == ["r0"]


def test_a_failed_update_batch_rolls_back_retypes_and_status(abc: OracleDBMemoryStore) -> None:
    abc.add_relations(["a", "c"], "memory", ["b", "d"], "memory", ["supersedes", "supports"],
                      relation_ids=["r1", "r2"])
    with pytest.raises(ValueError, match=r"opposite_relation_types\[1\]"):
        # r1 is retyped first (which would restore b); r2's label is only known to be wrong
        # once its stored type has been read, inside the same transaction.
        abc.update_relations(["r1", "r2"], relation_types=["supports", "supersedes"],
                             opposite_relation_types=["is_supported_by", "is_replaced_by"])
    assert [r.relation_type for r in abc.list_relations()] == ["supersedes", "supports"]
    assert status(abc, "b") is RecordStatus.INVALID
    assert status(abc, "d") is RecordStatus.VALID


def test_lifecycle_links_in_one_batch_invalidate_every_target(abc: OracleDBMemoryStore) -> None:
    abc.add_relations("a", "memory", ["b", "c", "d"], "memory",
                      ["supersedes", "refines", "duplicates"])
    assert [status(abc, i) for i in "abcd"] == [RecordStatus.VALID] + [RecordStatus.INVALID] * 3


def test_an_invalid_memory_can_still_be_a_source(abc: OracleDBMemoryStore) -> None:
    abc.add_relations(["a", "b"], "memory", ["b", "c"], "memory", "supersedes")
    assert [status(abc, i) for i in "abc"] == [RecordStatus.VALID, RecordStatus.INVALID,
                                               RecordStatus.INVALID]


def test_a_relation_endpoint_shared_by_two_users_ids_is_refused(store: OracleDBMemoryStore) -> None:
    store.add(["alice's"], "memory", record_ids="same", user_ids="alice")
    store.add(["bob's"], "memory", record_ids="same", user_ids="bob")
    store.add(["alice's other"], "memory", record_ids="other", user_ids="alice")
    with pytest.raises(ValueError, match="memories of several users have the id 'same'"):
        store.add_relations("other", "memory", "same", "memory", "supports")
    store.delete("memory", "same")  # positive control: with one owner left, it relates
    store.add(["alice's again"], "memory", record_ids="same", user_ids="alice")
    assert store.add_relations("other", "memory", "same", "memory", "supports",
                               relation_ids="r") == ["r"]
