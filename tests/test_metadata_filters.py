"""``metadata_filter`` of ``list``: exact, nested, list, array-membership and negated matches.

The filter is compiled to SQL (``engines/postgres/filters.py``); these tests pin its semantics
against the spec ("metadata_filter" of ``list``) and against a small pure-Python reference.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy

_ids = itertools.count(1)


def _own_store_id() -> str:
    return f"mf{os.getpid() % 10000}_{next(_ids)}"


def _open_store(pg_url: str) -> OracleDBMemoryStore:
    return OracleDBMemoryStore(None, pg_url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                               memory_store_id=_own_store_id())


# --- a shared corpus ----------------------------------------------------------------------

CORPUS: dict[str, dict[str, Any] | None] = {
    "slack": {"source": "slack", "priority": 1},
    "email": {"source": "email", "priority": 2},
    "count_3": {"count": 3},
    "count_3_float": {"count": 3.5},
    "flag_true": {"flag": True},
    "flag_one": {"flag": 1},
    "flag_false": {"flag": False},
    "flag_zero": {"flag": 0},
    "owner_null": {"owner": None},
    "owner_ann": {"owner": "ann"},
    "no_metadata": None,
    "empty_metadata": {},
    "review_open": {"review": {"status": "open", "by": "ann"}},
    "review_closed": {"review": {"status": "closed", "by": "ann"}},
    "review_text": {"review": "open"},
    "review_deep": {"review": {"status": "open", "meta": {"round": 2, "final": False}}},
    "tags_prod_urgent": {"tags": ["prod", "urgent"]},
    "tags_urgent_prod": {"tags": ["urgent", "prod"]},
    "tags_prod": {"tags": ["prod"]},
    "tags_prod_urgent_x": {"tags": ["prod", "urgent", "x"]},
    "tags_text": {"tags": "prod"},
    "tags_empty": {"tags": []},
    "tags_numbers": {"tags": [1, 2, 3]},
    "tags_objects": {"tags": [{"k": "prod", "v": 1}]},
    "array_by_index": {"pos": [10, 20]},
}
"""Record id -> metadata of the memories every table-driven test filters."""


@pytest.fixture(scope="module")
def corpus(pg_url: str) -> Iterator[OracleDBMemoryStore]:
    store = _open_store(pg_url)
    ids = list(CORPUS)
    store.add([f"content of {i}" for i in ids], "memory", record_ids=ids,
              metadata=[CORPUS[i] for i in ids])
    yield store
    store.close()


def listed(store: OracleDBMemoryStore, **kwargs: Any) -> set[str]:
    return {r.id for r in store.list("memory", **kwargs)}


def where(predicate: Any) -> set[str]:
    """Corpus ids whose metadata satisfies ``predicate`` (a plain-Python statement of the rule)."""
    return {i for i, m in CORPUS.items() if predicate(m or {})}


EVERYTHING = set(CORPUS)


# --- exact matches ------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("metadata_filter", "expected"),
    [
        pytest.param({"source": "slack"}, {"slack"}, id="string"),
        pytest.param({"count": 3}, {"count_3"}, id="integer"),
        pytest.param({"count": 3.5}, {"count_3_float"}, id="float"),
        pytest.param({"flag": True}, {"flag_true"}, id="true-is-not-1"),
        pytest.param({"flag": 1}, {"flag_one"}, id="1-is-not-true"),
        pytest.param({"flag": False}, {"flag_false"}, id="false-is-not-0"),
        pytest.param({"flag": 0}, {"flag_zero"}, id="0-is-not-false"),
        pytest.param({"owner": None}, {"owner_null"}, id="null-value-needs-the-key"),
        pytest.param({"source": "teams"}, set(), id="no-such-value"),
        pytest.param({"missing": "x"}, set(), id="no-such-key"),
    ],
)
def test_plain_values_match_scalars_exactly(corpus: OracleDBMemoryStore,
                                            metadata_filter: dict[str, Any],
                                            expected: set[str]) -> None:
    assert listed(corpus, metadata_filter=metadata_filter) == expected


@pytest.mark.parametrize(
    ("metadata_filter", "expected"),
    [
        pytest.param({"review": {"status": "open"}}, {"review_open", "review_deep"},
                     id="nested-key"),
        pytest.param({"review": {"status": "open", "by": "ann"}}, {"review_open"},
                     id="nested-keys-and"),
        pytest.param({"review": {"meta": {"round": 2}}}, {"review_deep"}, id="two-levels"),
        pytest.param({"review": {"meta": {"final": False, "round": 3}}}, set(),
                     id="two-levels-one-differs"),
        pytest.param({"review": {"status": "open", "nope": None}}, set(),
                     id="nested-null-needs-the-key"),
    ],
)
def test_nested_objects_match_recursively(corpus: OracleDBMemoryStore,
                                          metadata_filter: dict[str, Any],
                                          expected: set[str]) -> None:
    assert listed(corpus, metadata_filter=metadata_filter) == expected


def test_nested_filter_does_not_match_a_scalar_field(corpus: OracleDBMemoryStore) -> None:
    """``{"review": {"status": ...}}`` needs ``review`` to be an object, not the string."""
    assert "review_text" not in listed(corpus, metadata_filter={"review": {"status": "open"}})
    assert listed(corpus, metadata_filter={"review": "open"}) == {"review_text"}


def test_nested_keys_do_not_index_into_arrays(corpus: OracleDBMemoryStore) -> None:
    """A nested key that looks like a number names an object key, never an array position."""
    assert listed(corpus, metadata_filter={"pos": {"0": 10}}) == set()
    assert listed(corpus, metadata_filter={"pos": {"-1": 20}}) == set()
    assert listed(corpus, metadata_filter={"pos": {"$not": {"0": 10}}}) == EVERYTHING


@pytest.mark.parametrize(
    ("metadata_filter", "expected"),
    [
        pytest.param({"tags": ["prod", "urgent"]}, {"tags_prod_urgent"}, id="same-list"),
        pytest.param({"tags": ["urgent", "prod"]}, {"tags_urgent_prod"}, id="order-matters"),
        pytest.param({"tags": ["prod"]}, {"tags_prod"}, id="length-matters"),
        pytest.param({"tags": []}, {"tags_empty"}, id="empty-list"),
        pytest.param({"tags": "prod"}, {"tags_text"}, id="scalar-is-not-membership"),
        pytest.param({"tags": [{"k": "prod", "v": 1}]}, {"tags_objects"}, id="list-of-objects"),
        pytest.param({"tags": [{"k": "prod"}]}, set(), id="list-of-partial-objects"),
    ],
)
def test_lists_match_by_exact_equality(corpus: OracleDBMemoryStore,
                                       metadata_filter: dict[str, Any],
                                       expected: set[str]) -> None:
    assert listed(corpus, metadata_filter=metadata_filter) == expected


# --- array membership ---------------------------------------------------------------------

TAGS_WITH_PROD = {"tags_prod_urgent", "tags_urgent_prod", "tags_prod", "tags_prod_urgent_x"}
TAGS_WITH_URGENT = {"tags_prod_urgent", "tags_urgent_prod", "tags_prod_urgent_x"}


@pytest.mark.parametrize(
    ("metadata_filter", "expected"),
    [
        pytest.param({"tags": {"$array_contains": "prod"}}, TAGS_WITH_PROD, id="scalar"),
        pytest.param({"tags": {"$array_contains": ["urgent", "prod"]}}, TAGS_WITH_URGENT,
                     id="list-means-all"),
        pytest.param({"tags": {"$array_contains": ["prod", "x"]}}, {"tags_prod_urgent_x"},
                     id="list-all-present-once"),
        pytest.param({"tags": {"$array_contains": ["prod", "nope"]}}, set(),
                     id="list-one-missing"),
        pytest.param({"tags": {"$array_contains": 2}}, {"tags_numbers"}, id="number"),
        pytest.param({"tags": {"$array_contains": "2"}}, set(), id="string-is-not-number"),
        pytest.param({"tags": {"$array_contains": True}}, set(), id="true-is-not-1"),
        pytest.param({"tags": {"$array_contains_any": ["x", "nope"]}}, {"tags_prod_urgent_x"},
                     id="any-one"),
        pytest.param({"tags": {"$array_contains_any": ["urgent", 3]}},
                     TAGS_WITH_URGENT | {"tags_numbers"}, id="any-mixed"),
        pytest.param({"tags": {"$array_contains_any": ["nope"]}}, set(), id="any-none"),
        pytest.param({"source": {"$array_contains": "slack"}}, set(), id="scalar-field"),
    ],
)
def test_array_membership(corpus: OracleDBMemoryStore, metadata_filter: dict[str, Any],
                          expected: set[str]) -> None:
    assert listed(corpus, metadata_filter=metadata_filter) == expected


def test_array_membership_compares_whole_elements(corpus: OracleDBMemoryStore) -> None:
    """An element matches only when equal to the operand: a partial object is not a member."""
    assert listed(corpus, metadata_filter={
        "tags": {"$array_contains": {"k": "prod", "v": 1}}}) == {"tags_objects"}
    assert listed(corpus, metadata_filter={"tags": {"$array_contains": {"k": "prod"}}}) == set()
    assert listed(corpus, metadata_filter={
        "tags": {"$array_contains_any": [{"k": "prod"}, "nope"]}}) == set()


# --- negation -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("metadata_filter", "expected"),
    [
        pytest.param({"source": {"$not": "slack"}}, EVERYTHING - {"slack"}, id="exact"),
        pytest.param({"owner": {"$not": None}}, EVERYTHING - {"owner_null"}, id="exact-null"),
        pytest.param({"tags": {"$not": ["prod"]}}, EVERYTHING - {"tags_prod"}, id="exact-list"),
        pytest.param({"tags": {"$not": {"$array_contains": "prod"}}},
                     EVERYTHING - TAGS_WITH_PROD, id="array-contains"),
        pytest.param({"tags": {"$not": {"$array_contains_any": ["urgent", 1]}}},
                     EVERYTHING - TAGS_WITH_URGENT - {"tags_numbers"}, id="array-contains-any"),
        pytest.param({"review": {"$not": {"status": "open"}}},
                     EVERYTHING - {"review_open", "review_deep"}, id="nested-object"),
        pytest.param({"source": {"$not": {"$not": "slack"}}}, {"slack"}, id="double"),
    ],
)
def test_not_negates_a_field_expression(corpus: OracleDBMemoryStore,
                                        metadata_filter: dict[str, Any],
                                        expected: set[str]) -> None:
    assert listed(corpus, metadata_filter=metadata_filter) == expected


def test_not_matches_records_where_the_field_is_missing(corpus: OracleDBMemoryStore) -> None:
    result = listed(corpus, metadata_filter={"source": {"$not": "slack"}})
    assert {"no_metadata", "empty_metadata", "count_3"} <= result
    assert result == where(lambda m: m.get("source") != "slack")


def test_negated_membership_matches_non_array_fields(corpus: OracleDBMemoryStore) -> None:
    result = listed(corpus, metadata_filter={"tags": {"$not": {"$array_contains": "prod"}}})
    assert "tags_text" in result  # the string "prod" is not an array holding "prod"
    assert "tags_empty" in result


def test_keys_are_anded(corpus: OracleDBMemoryStore) -> None:
    assert listed(corpus, metadata_filter={"source": "slack", "priority": 1}) == {"slack"}
    assert listed(corpus, metadata_filter={"source": "slack", "priority": 2}) == set()
    assert listed(corpus, metadata_filter={
        "tags": {"$array_contains": "prod", "$not": ["prod"]},
    }) == TAGS_WITH_PROD - {"tags_prod"}


# --- None, omitted, empty -----------------------------------------------------------------

def test_none_returns_only_records_without_metadata(corpus: OracleDBMemoryStore) -> None:
    assert listed(corpus, metadata_filter=None) == {"no_metadata"}


def test_omitted_filter_returns_everything(corpus: OracleDBMemoryStore) -> None:
    assert listed(corpus) == EVERYTHING


def test_empty_filter_matches_every_record(corpus: OracleDBMemoryStore) -> None:
    assert listed(corpus, metadata_filter={}) == EVERYTHING


def test_stored_metadata_round_trips(corpus: OracleDBMemoryStore) -> None:
    assert {r.id: r.metadata for r in corpus.list("memory")} == CORPUS


# --- invalid filters ----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("metadata_filter", "message"),
    [
        pytest.param({"tags": {"$contains": "x"}}, r"\$contains.*tags", id="unknown-operator"),
        pytest.param({"$not": {"tags": "x"}}, r"\$not", id="operator-at-top-level"),
        pytest.param({"$array_contains": "x"}, r"\$array_contains", id="membership-at-top"),
        pytest.param({"tags": {"$array_contains": "x", "kind": "y"}}, r"tags.*mixes",
                     id="operators-mixed-with-keys"),
        pytest.param({"tags": {"$array_contains_any": "x"}}, r"\$array_contains_any.*tags",
                     id="any-with-scalar"),
        pytest.param({"tags": {"$array_contains_any": []}}, r"\$array_contains_any.*tags",
                     id="any-with-empty-list"),
        pytest.param({"tags": {"$array_contains_any": {"a": 1}}}, r"\$array_contains_any.*tags",
                     id="any-with-object"),
        pytest.param({"tags": {"$array_contains": []}}, r"\$array_contains.*tags",
                     id="contains-with-empty-list"),
        pytest.param({1: "x"}, r"1", id="non-string-key"),
        pytest.param({"review": {2: "x"}}, r"2", id="nested-non-string-key"),
        pytest.param({"tags": {"x", "y"}}, r"tags.*set", id="set-value"),
        pytest.param({"score": float("nan")}, r"score", id="nan-value"),
        pytest.param({"score": float("inf")}, r"score", id="infinite-value"),
        pytest.param({"when": object()}, r"when", id="object-value"),
        pytest.param({"tags": {"$not": {"$bogus": 1}}}, r"\$bogus.*tags", id="inside-not"),
        pytest.param({"tags": {"$array_contains": [float("nan")]}}, r"tags", id="nan-operand"),
    ],
)
def test_invalid_filters_raise_value_error_naming_the_key(
        corpus: OracleDBMemoryStore, metadata_filter: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        corpus.list("memory", metadata_filter=metadata_filter)


def test_a_filter_that_is_not_a_mapping_is_rejected(corpus: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="metadata_filter"):
        corpus.list("memory", metadata_filter=[("source", "slack")])


# --- the filter runs in SQL before the limit ----------------------------------------------

def test_filter_is_applied_before_the_limit(pg_url: str) -> None:
    store = _open_store(pg_url)
    try:
        store.add(["match one", "match two", "match three"], "memory",
                  record_ids=["m1", "m2", "m3"], metadata={"keep": True})
        store.add([f"noise {n}" for n in range(60)], "memory",
                  metadata=[{"keep": False, "n": n} for n in range(60)])
        result = store.list("memory", metadata_filter={"keep": True}, limit=2)
        assert [r.id for r in result] == ["m2", "m3"]  # the two most recent matches
        assert [r.id for r in store.list("memory", metadata_filter={"keep": True}, limit=10)] \
            == ["m1", "m2", "m3"]
    finally:
        store.close()


def test_filter_combines_with_scope_filters(pg_url: str) -> None:
    store = _open_store(pg_url)
    try:
        store.add(["a", "b", "c"], "memory", record_ids=["a", "b", "c"],
                  user_ids=["u1", "u1", "u2"], metadata={"kind": "x"})
        assert listed(store, user_id="u1", metadata_filter={"kind": "x"}) == {"a", "b"}
        assert listed(store, user_id="u2", metadata_filter={"kind": "y"}) == set()
    finally:
        store.close()


# --- property test against a reference matcher --------------------------------------------

_MISSING = object()


def _json_equal(left: Any, right: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 == 1.0, objects by keys, arrays by position."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            _json_equal(a, b) for a, b in zip(left, right, strict=True))
    if left is None or right is None:
        return left is None and right is None
    return type(left) is type(right) and left == right


def _is_operator_mapping(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(
        k.startswith("$") for k in value)


def _field_matches(actual: Any, condition: Any) -> bool:
    """Does the stored value ``actual`` (or ``_MISSING``) satisfy one field ``condition``?"""
    if _is_operator_mapping(condition):
        return all(_operator_matches(actual, op, operand) for op, operand in condition.items())
    if isinstance(condition, Mapping) and condition:
        return all(
            _field_matches(actual.get(k, _MISSING) if isinstance(actual, dict) else _MISSING, c)
            for k, c in condition.items())
    return actual is not _MISSING and _json_equal(actual, condition)


def _operator_matches(actual: Any, op: str, operand: Any) -> bool:
    if op == "$not":
        return not _field_matches(actual, operand)
    if not isinstance(actual, list):
        return False
    wanted = operand if isinstance(operand, list) else [operand]
    present = [any(_json_equal(element, w) for element in actual) for w in wanted]
    return all(present) if op == "$array_contains" else any(present)


def reference_matches(metadata: dict[str, Any] | None, metadata_filter: dict[str, Any]) -> bool:
    """The spec's semantics of a dict ``metadata_filter``, written without the SDK."""
    stored = metadata or {}
    return all(_field_matches(stored.get(k, _MISSING), c) for k, c in metadata_filter.items())


KEYS = ["a", "b", "0"]  # "0" would reach into arrays if a path step could index one
scalars = st.sampled_from([None, True, False, 0, 1, 1.5, "", "x", "1"])
small_objects = st.dictionaries(st.sampled_from(KEYS), scalars, min_size=1, max_size=2)
elements = scalars | small_objects | st.lists(scalars, min_size=1, max_size=2)
"""What arrays hold, and what membership operators look for."""
arrays = st.lists(elements, max_size=3)
values = st.one_of(
    scalars, arrays,
    st.dictionaries(st.sampled_from(KEYS), scalars | arrays | small_objects,
                    min_size=1, max_size=2),
)
metadata_dicts = st.none() | st.dictionaries(st.sampled_from(KEYS), values, max_size=3)


def _pieces(metadata: list[dict[str, Any] | None]) -> list[Any]:
    """Every stored sub-value, array element and one-key part of an object: filter material
    that hits the stored records (and their near misses) far more often than random values."""
    found: list[Any] = []

    def walk(value: Any) -> None:
        found.append(value)
        if isinstance(value, list):
            for element in value:
                walk(element)
            if value:
                found.append({"0": value[0]})  # an object key that reads like a position
        elif isinstance(value, dict):
            for key, inner in value.items():
                walk(inner)
                if len(value) > 1:
                    found.append({key: inner})

    for stored in metadata:
        for value in (stored or {}).values():
            walk(value)
    return [v for v in found if v != {}]


def _filters(pieces: list[Any]) -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.sampled_from(pieces) | values if pieces else values
    members = [p for p in pieces if p != []]  # {"$array_contains": []} is invalid
    member = st.sampled_from(members) | elements if members else elements

    def conditions(depth: int) -> st.SearchStrategy[Any]:
        options = [
            leaf,
            st.builds(lambda v: {"$array_contains": v},
                      member | st.lists(member, min_size=1, max_size=3)),
            st.builds(lambda v: {"$array_contains_any": v},
                      st.lists(member, min_size=1, max_size=3)),
        ]
        if depth > 0:
            options.append(st.builds(lambda c: {"$not": c}, conditions(depth - 1)))
            options.append(st.dictionaries(st.sampled_from(KEYS), conditions(depth - 1),
                                           min_size=1, max_size=2))
        return st.one_of(*options)

    return st.dictionaries(st.sampled_from(KEYS), conditions(2), max_size=3)


_example_threads = itertools.count(1)


@pytest.fixture(scope="module")
def property_store(pg_url: str) -> Iterator[OracleDBMemoryStore]:
    store = _open_store(pg_url)
    yield store
    store.close()


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(metadata=st.lists(metadata_dicts, min_size=1, max_size=8), data=st.data())
def test_sql_filter_agrees_with_the_reference(property_store: OracleDBMemoryStore,
                                              metadata: list[dict[str, Any] | None],
                                              data: st.DataObject) -> None:
    thread = f"example-{next(_example_threads)}"
    ids = [f"{thread}-{n}" for n in range(len(metadata))]
    property_store.add([f"record {n}" for n in range(len(metadata))], "memory", record_ids=ids,
                       thread_ids=thread, metadata=metadata)
    metadata_filters = data.draw(st.lists(_filters(_pieces(metadata)), min_size=1, max_size=6),
                                 label="metadata_filters")
    for metadata_filter in metadata_filters:
        expected = {i for i, m in zip(ids, metadata, strict=True)
                    if reference_matches(m, metadata_filter)}
        got = listed(property_store, thread_id=thread, metadata_filter=metadata_filter)
        assert got == expected, metadata_filter


def test_reference_matcher_follows_the_spec_examples() -> None:
    """The reference itself is checked on hand-written cases, so a bug in it cannot hide one."""
    assert reference_matches({"tags": ["prod", "urgent"]}, {"tags": ["prod", "urgent"]})
    assert not reference_matches({"tags": ["urgent", "prod"]}, {"tags": ["prod", "urgent"]})
    assert reference_matches({"tags": ["a", "prod"]}, {"tags": {"$array_contains": "prod"}})
    assert not reference_matches({"tags": "prod"}, {"tags": {"$array_contains": "prod"}})
    assert reference_matches({"tags": "prod"}, {"tags": {"$not": {"$array_contains": "prod"}}})
    assert reference_matches(None, {"x": {"$not": 1}})
    assert not reference_matches({"x": 1}, {"x": True})
    assert reference_matches({"r": {"s": 1, "t": 2}}, {"r": {"s": 1}})
