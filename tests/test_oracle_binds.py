"""Bind conversion for python-oracledb and Oracle Text keyword escaping
(``engines/oracle/binds.py``), without a database."""

from __future__ import annotations

import array
import re
from datetime import datetime, timedelta, timezone

import numpy as np
import oracledb
import pytest
from oracleagentmemory.engines.oracle.binds import (
    KEYWORD_JOIN,
    MAX_KEYWORD_TERMS,
    boolean_bind,
    json_bind,
    json_input_sizes,
    keyword_query,
    timestamp_bind,
    timestamp_input_sizes,
    utc_from_fetch,
    utc_timestamp_sql,
    vector_bind,
)
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


# --- vectors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("values", [[0.5, -1.0, 2], (0.5, -1.0, 2),
                                    np.array([0.5, -1.0, 2.0], dtype=np.float64),
                                    np.array([0.5, -1.0, 2.0], dtype=np.float32)])
def test_vectors_bind_as_float32_arrays(values: object) -> None:
    bound = vector_bind(values, 3)
    assert isinstance(bound, array.array) and bound.typecode == "f" and bound.itemsize == 4
    assert list(bound) == [0.5, -1.0, 2.0]


def test_float32_rounding_is_the_float32_value() -> None:
    bound = vector_bind([0.1], 1)
    assert bound[0] == float(np.float32(0.1)) != 0.1


@pytest.mark.parametrize("values,dim", [([1.0, 2.0], 3), ([1.0, 2.0, 3.0, 4.0], 3), ([], 3),
                                        (np.zeros((3, 1)), 3)])
def test_a_wrong_dimension_is_refused(values: object, dim: int) -> None:
    with pytest.raises(InvalidArgumentError):
        vector_bind(values, dim)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), 1e39])
def test_nan_infinity_and_float32_overflow_are_refused(bad: float) -> None:
    with pytest.raises(InvalidArgumentError):
        vector_bind([1.0, bad], 2)
    with pytest.raises(InvalidArgumentError):
        vector_bind(np.array([1.0, bad]), 2)


@pytest.mark.parametrize("bad", ["1,2", {"a": 1}, [1.0, "2"], np.array(["a", "b"]), None])
def test_non_numeric_vectors_are_refused_with_a_type_error(bad: object) -> None:
    with pytest.raises(InvalidArgumentTypeError):
        vector_bind(bad, 2)


# --- JSON --------------------------------------------------------------------------------------
def test_json_dicts_and_lists_pass_as_is() -> None:
    value = {"a": [1, 2.5, True, None, {"b": "c"}]}
    assert json_bind(value) is value
    listed = [1, "x"]
    assert json_bind(listed) is listed
    assert json_bind(None) is None
    assert json_input_sizes("metadata", "content") == {
        "metadata": oracledb.DB_TYPE_JSON, "content": oracledb.DB_TYPE_JSON}


@pytest.mark.parametrize("bad", ['{"a": 1}', 3, {1: "x"}, {"a": object()}, {"a": b"x"},
                                 {"a": {"b": [datetime.now(timezone.utc)]}}])
def test_non_json_values_are_refused_with_a_type_error(bad: object) -> None:
    with pytest.raises(InvalidArgumentTypeError):
        json_bind(bad)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_json_numbers_are_refused(bad: float) -> None:
    with pytest.raises(InvalidArgumentError):
        json_bind({"a": [bad]})


# --- timestamps and booleans -------------------------------------------------------------------
def test_aware_timestamps_become_naive_utc() -> None:
    zoned = datetime(2026, 3, 29, 3, 30, tzinfo=timezone(timedelta(hours=2)))
    assert timestamp_bind(zoned) == datetime(2026, 3, 29, 1, 30)
    assert timestamp_bind(zoned).tzinfo is None  # type: ignore[union-attr]
    assert timestamp_bind(None) is None
    assert utc_timestamp_sql("created_at") == "FROM_TZ(CAST(:created_at AS TIMESTAMP), 'UTC')"
    assert timestamp_input_sizes("a") == {"a": oracledb.DB_TYPE_TIMESTAMP}
    assert utc_from_fetch(datetime(2026, 3, 29, 1, 30)) == zoned
    assert utc_from_fetch(zoned).tzinfo is timezone.utc  # type: ignore[union-attr]


def test_naive_timestamps_and_bad_bind_names_are_refused() -> None:
    with pytest.raises(InvalidArgumentError):
        timestamp_bind(datetime(2026, 1, 1))
    with pytest.raises(InvalidArgumentTypeError):
        timestamp_bind("2026-01-01")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        utc_timestamp_sql("x, 'UTC') --")


def test_booleans_are_strict() -> None:
    assert boolean_bind(True) is True and boolean_bind(False) is False
    assert boolean_bind(None) is None
    for bad in (0, 1, "true"):
        with pytest.raises(InvalidArgumentTypeError):
            boolean_bind(bad)


# --- Oracle Text escaping ----------------------------------------------------------------------
TERM = re.compile(r"\{([^{}\\]+)\}")


def terms_of(query: str) -> list[str]:
    """Split an escaped query into its terms; fail unless it is exactly ``{t} ACCUM {t}...``."""
    parts = query.split(KEYWORD_JOIN)
    found = []
    for part in parts:
        match = TERM.fullmatch(part)
        assert match, f"not a single escaped term: {part!r} in {query!r}"
        found.append(match.group(1))
    return found


HOSTILE = ["}", "{", "\\", "%", "_", "NEAR(", "ABOUT(", ";", "&", "|", "~", "-", "=", ">", "*",
           "?", "!", "$", ",", "(", ")", "[", "]", "'", '"', ":", "AND", "OR", "NOT",
           "MINUS", "ACCUM", "WITHIN", "FUZZY", "SQE", "MDATA"]


@pytest.mark.parametrize("token", HOSTILE)
def test_each_hostile_token_stays_inside_one_escape(token: str) -> None:
    query = keyword_query(f"cat {token} x{token}y dog{token} {token}{token}")
    assert query is not None
    terms = terms_of(query)
    for term in terms:
        assert not set(term) & set("{}\\"), term
    assert terms[0] == "cat"


def test_a_brace_cannot_close_its_escape_early() -> None:
    query = keyword_query("a}|{b} x}}~y\\} {NEAR((c,d))}")
    assert query == "{a | b} ACCUM {x ~y} ACCUM {NEAR((c,d))}"
    assert terms_of(query) == ["a | b", "x ~y", "NEAR((c,d))"]


def test_words_are_joined_with_accum_deduplicated_and_capped() -> None:
    assert keyword_query("Hello  world\thello\nWORLD") == "{Hello} ACCUM {world}"
    many = keyword_query(" ".join(f"w{i}" for i in range(200)))
    assert many is not None and len(terms_of(many)) == MAX_KEYWORD_TERMS


def test_text_without_words_gives_no_query() -> None:
    for empty in ("", "   ", "{}", "} { \\", "& | ~ - ;"):
        assert keyword_query(empty) is None, empty


def test_positive_control_the_checker_catches_an_unescaped_operator() -> None:
    """The term checker is strict: raw user text (or a term left open) fails it."""
    for broken in ("cat & dog", "{cat} ACCUM dog", "{cat}}", "{a}|{b}", "{a\\}"):
        with pytest.raises(AssertionError):
            terms_of(broken)


def test_keyword_query_wants_a_string() -> None:
    with pytest.raises(InvalidArgumentTypeError):
        keyword_query(None)  # type: ignore[arg-type]


def test_the_utc_timestamp_sql_parses() -> None:
    import sqlglot
    from sqlglot import exp
    tree = sqlglot.parse_one(f"SELECT {utc_timestamp_sql('ts')} FROM dual", read="oracle")
    assert isinstance(tree, exp.Select) and tree.find(exp.Cast) is not None
