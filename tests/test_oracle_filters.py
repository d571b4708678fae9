"""The Oracle engine's metadata and scope filters (``engines/oracle/filters.py``), offline.

Every operator of the filter tree (``filtertree``: exact values of every JSON type, nested
paths, ``$not``, ``$array_contains`` with one value and with a list, ``$array_contains_any``,
an empty filter, ``None``/``UNSET``) is rendered into a reviewed golden file under
``tests/golden/oracle_engine/filters/``; rewrite after review with::

    OAM_UPDATE_GOLDEN=1 python -m pytest tests/test_oracle_filters.py

Each predicate is parsed with sqlglot's Oracle dialect inside ``SELECT 1 FROM t p WHERE ...``
and must come back a real ``SELECT`` with a ``WHERE`` (sqlglot parses every construct used:
``JSON_EXISTS ... PASSING``, ``JSON_EQUAL``, ``JSON_QUERY``, ``JSON_TABLE``). sqlglot does not
parse the SQL/JSON path language inside the path literals (it warns "Invalid JSON path
syntax" for filters), so every path literal is checked against the grammar of the paths this
module writes (:func:`check_path`).
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import oracledb
import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.engines.interfaces import UNSET
from oracleagentmemory.engines.oracle.bindset import BindSet
from oracleagentmemory.engines.oracle.filters import (
    MAX_PASSING_STRING_BYTES,
    metadata_predicates,
    render_filter,
    scope_predicates,
)
from oracleagentmemory.errors import InvalidArgumentError
from oracleagentmemory.filtertree import And, Exact, parse_metadata_filter
from sqlglot import exp
from sqlglot.errors import SqlglotError

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine" / "filters"

SCENARIOS: dict[str, dict[str, Any]] = {
    "exact_string": {"topic": "travel"},
    "exact_integer": {"priority": 3},
    "exact_float": {"score": 0.1},
    "exact_booleans": {"done": True, "archived": False},
    "exact_null": {"owner": None},
    "exact_empty_string": {"note": ""},
    "exact_long_string": {"note": "x" * (MAX_PASSING_STRING_BYTES + 1)},
    "exact_list": {"tags": ["a", 1, {"k": None}]},
    "exact_empty_object": {"extra": {}},
    "nested_path": {"a": {"b": {"c": "deep"}}},
    "not_exact": {"topic": {"$not": "travel"}},
    "not_nested": {"a": {"b": {"$not": 1}}},
    "array_contains_scalar": {"tags": {"$array_contains": "red"}},
    "array_contains_all": {"tags": {"$array_contains": ["red", 2, True]}},
    "array_contains_any": {"tags": {"$array_contains_any": ["red", "blue"]}},
    "array_contains_null_and_object": {"tags": {"$array_contains": [None, {"k": 1}, [1]]}},
    "not_array_contains": {"tags": {"$not": {"$array_contains_any": ["red"]}}},
    "quote_in_key": {"it's": "fine"},
    "several_fields": {"topic": "travel", "n": 2, "tags": {"$array_contains": "x"}},
    "empty_filter": {},
}


def render(spec: dict[str, Any]) -> tuple[str, BindSet]:
    binds = BindSet()
    return render_filter(parse_metadata_filter(spec), "p.metadata", binds), binds


def wrapped(predicate: str) -> str:
    return f"SELECT 1 FROM t p WHERE {predicate}"


def golden_statement(spec: dict[str, Any]) -> str:
    predicate, binds = render(spec)
    values = {k: (f"<str of {len(v)} chars>" if isinstance(v, str) and len(v) > 80 else v)
              for k, v in binds.values.items()}
    json_binds = sorted(binds.input_sizes)
    return (f"-- binds: {values!r}\n-- DB_TYPE_JSON binds: {json_binds!r}\n"
            f"{wrapped(predicate)}")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_filter_matches_golden(name: str) -> None:
    text = golden_text("Oracle metadata filter", name, "engines/oracle/filters.py",
                       "tests/test_oracle_filters.py", [golden_statement(SCENARIOS[name])])
    assert_matches_golden(GOLDEN / f"{name}.sql", text)


def parse(sql: str) -> exp.Expression:
    tree = sqlglot.parse_one(sql, read="oracle")
    assert isinstance(tree, exp.Select), type(tree)
    assert tree.args.get("where") is not None
    assert not list(tree.find_all(exp.Command))
    return tree


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_predicate_parses_with_sqlglot(name: str) -> None:
    predicate, _ = render(SCENARIOS[name])
    parse(wrapped(predicate))


def test_a_broken_predicate_does_not_parse() -> None:
    """Positive control: the parse check fails on a predicate missing a parenthesis."""
    predicate, _ = render({"tags": {"$array_contains": "red"}})
    with pytest.raises(SqlglotError):
        sqlglot.parse_one(wrapped(predicate[:-1]), read="oracle")


# --- the SQL/JSON path literals ---------------------------------------------------------------
_KEY = r'"(?:[^"\\\x00-\x1f\x7f]|\'\')+"'
_STEPS = rf"(?:\.{_KEY})+"
_ACCESSOR = rf"@{_STEPS}"
_TYPE = rf'{_ACCESSOR}\.type\(\) == "(?:object|array|string|number|double|float|boolean|null)"'
_CONDITION = (rf"(?:{_TYPE}|\((?:{_TYPE})(?: \|\| {_TYPE})+\)"
              rf'|{_ACCESSOR} == (?:\$mf\d+|true|false|""))')
ROOT_FILTER = re.compile(rf"\$\?\({_CONDITION}(?: && {_CONDITION})*\)")
MEMBER_PATH = re.compile(rf"\${_STEPS}")
ARRAY_ROWS = re.compile(rf"\${_STEPS}\[\*\]")
_LITERAL = re.compile(r"'((?:[^']|'')*)'")


def check_path(path: str) -> None:
    """A path this module writes: a filter on the root object, a member path (JSON_QUERY) or
    an array's elements (JSON_TABLE row path); column paths are ``$`` and ``$.type()``."""
    assert (ROOT_FILTER.fullmatch(path) or MEMBER_PATH.fullmatch(path)
            or ARRAY_ROWS.fullmatch(path) or path in ("$", "$.type()")), path


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_path_literal_follows_the_path_grammar(name: str) -> None:
    predicate, binds = render(SCENARIOS[name])
    literals = [m.group(1) for m in _LITERAL.finditer(predicate)]
    paths = [lit for lit in literals if lit.startswith("$")]
    for path in paths:
        check_path(path)
    # Every PASSING variable named in a path is bound, under the same name.
    for variable in re.findall(r"\$(mf\d+)", predicate):
        assert f':{variable} AS "{variable}"' in predicate
        assert variable in binds.values


def test_path_grammar_check_rejects_a_lax_comparison() -> None:
    """Positive control: the grammar refuses a value formatted into a path and a filter
    applied to a member (which lax mode would apply to an array's elements)."""
    with pytest.raises(AssertionError):
        check_path('$?(@."a" == "travel")')
    with pytest.raises(AssertionError):
        check_path('$."a"?(@ == $mf0)')


# --- semantics visible in the text ------------------------------------------------------------
def test_values_are_bound_never_formatted() -> None:
    marker = "MARKER-7f3a"
    predicate, binds = render({"topic": marker, "n": 987654, "tags": {
        "$array_contains_any": [marker + "2", 123456]}, "l": [marker + "3"]})
    for value in (marker, "987654", "123456"):
        assert value not in predicate
    bound = list(binds.values.values())
    assert marker in bound and 987654 in bound and [marker + "3"] in bound
    assert binds.input_sizes  # container and element values go as DB_TYPE_JSON
    assert all(t is oracledb.DB_TYPE_JSON for t in binds.input_sizes.values())


def test_exact_comparisons_are_type_strict() -> None:
    number, _ = render({"k": 1})
    text, _ = render({"k": "1"})
    boolean, binds = render({"k": True})
    assert '@."k".type() == "number"' in number and '@."k" == $mf0' in number
    assert '@."k".type() == "string"' in text
    assert '@."k".type() == "boolean" && @."k" == true' in boolean
    assert binds.values == {}  # true/false/null are path constants


def test_floats_bind_as_the_number_the_json_column_stores() -> None:
    _, binds = render({"k": 0.1})
    assert binds.values == {"mf0": Decimal("0.1")}
    _, binds = render({"k": 10})
    assert binds.values == {"mf0": 10} and type(binds.values["mf0"]) is int


def test_every_leaf_is_two_valued_on_a_null_column() -> None:
    """``NOT`` of a leaf must be true for a record without metadata: each leaf starts with
    ``p.metadata IS NOT NULL AND`` (false, not NULL, for a NULL column)."""
    for name, spec in SCENARIOS.items():
        if not spec:
            continue
        predicate, _ = render(spec)
        leaves = predicate.count("JSON_EXISTS(") + predicate.count("JSON_EQUAL(JSON_QUERY(")
        assert predicate.count("p.metadata IS NOT NULL AND") >= 1, name
        assert leaves >= 1, name
    negated, _ = render({"k": {"$not": "v"}})
    assert negated.startswith("(NOT (p.metadata IS NOT NULL AND JSON_EXISTS(")


def test_nested_paths_require_objects_on_the_way() -> None:
    predicate, _ = render({"a": {"b": {"c": 1}}})
    assert '@."a".type() == "object" && @."a"."b".type() == "object"' in predicate
    listed, _ = render({"a": {"b": [1]}})
    assert "JSON_EXISTS(p.metadata, '$?(@.\"a\".type() == \"object\")')" in listed


def test_array_membership_compares_whole_elements() -> None:
    predicate, binds = render({"tags": {"$array_contains": [[1], "x"]}})
    assert predicate.count("JSON_TABLE(p.metadata, '$.\"tags\"[*]'") == 2
    assert predicate.count("JSON_EQUAL(mfe") == 2
    assert binds.values == {"mf0": [1], "mf1": "x"}
    any_of, _ = render({"tags": {"$array_contains_any": ["x", "y"]}})
    assert ") OR EXISTS (" in any_of
    assert '@."tags".type() == "array"' in any_of


def test_long_strings_compare_as_json() -> None:
    long_text = "é" * (MAX_PASSING_STRING_BYTES // 2 + 1)  # over the limit in UTF-8 bytes
    predicate, binds = render({"k": long_text})
    assert "JSON_EQUAL(JSON_QUERY(p.metadata, '$.\"k\"'), :mf0)" in predicate
    assert binds.input_sizes == {"mf0": oracledb.DB_TYPE_JSON}


def test_a_quote_in_a_key_is_doubled_inside_the_literal() -> None:
    predicate, _ = render({"it's": "fine"})
    assert '@."it\'\'s"' in predicate


@pytest.mark.parametrize("key", ['say "hi"', "back\\slash", "tab\there", "nul\x00"])
def test_keys_an_oracle_path_cannot_name_are_refused(key: str) -> None:
    with pytest.raises(InvalidArgumentError, match="Oracle JSON path"):
        render({key: 1})


def test_empty_filter_matches_everything() -> None:
    assert render_filter(And(()), "p.metadata", BindSet()) == "1 = 1"


def test_column_reference_is_checked() -> None:
    with pytest.raises(InvalidArgumentError):
        render_filter(And((Exact(("a",), 1),)), "p.metadata; DROP TABLE x", BindSet())


def test_metadata_predicates_unset_none_and_filter() -> None:
    binds = BindSet()
    assert metadata_predicates(UNSET, binds) == []
    assert metadata_predicates(None, binds) == ["metadata IS NULL"]
    [predicate] = metadata_predicates(parse_metadata_filter({"a": "b"}), binds)
    assert predicate.startswith("(metadata IS NOT NULL AND JSON_EXISTS(metadata, ")


def test_scope_predicates_unset_none_and_id() -> None:
    binds = BindSet()
    where = scope_predicates([("thread_id", UNSET), ("user_id", None), ("agent_id", "a1")],
                             binds, alias="c")
    assert where == ["c.user_id IS NULL", "c.agent_id = :sc0"]
    assert binds.values == {"sc0": "a1"}
    for predicate in where:
        parse(wrapped(predicate))
    with pytest.raises(InvalidArgumentError):
        scope_predicates([("user_id; --", "x")], BindSet())
