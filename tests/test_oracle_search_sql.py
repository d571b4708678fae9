"""The Oracle engine's search statements (``engines/oracle/search.py``), offline.

Each statement a search can emit is pinned by a reviewed golden file under
``tests/golden/oracle_engine/search/``; rewrite after review with::

    OAM_UPDATE_GOLDEN=1 python -m pytest tests/test_oracle_search_sql.py

Each is parsed with sqlglot's Oracle dialect. sqlglot 30 does not know the vector forms of the
row-limiting clause (``FETCH EXACT FIRST``, ``FETCH APPROX FIRST ... WITH TARGET ACCURACY n``):
those are checked by a strict pattern in the original text, then rewritten to the plain ``FETCH
FIRST`` before parsing. ``VECTOR_DISTANCE``, ``CONTAINS`` and ``SCORE`` parse as functions.

The candidate source's logic (the exact-scan choice, a query
without words, the core's loop on top) runs against a fake ``run`` callable that records the
statements and answers rows: no database and no SQL execution is involved.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.core._search_loop import run_search
from oracleagentmemory.engines.interfaces import UNSET, SearchPlan
from oracleagentmemory.engines.oracle import search
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import InvalidArgumentError
from oracleagentmemory.filtertree import parse_metadata_filter
from sqlglot import exp

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine" / "search"
QV = "<query vector>"  # stands for the array.array('f') bind


def objects() -> OracleObjects:
    return OracleObjects.of(derive_store_names(
        memory_store_id="st", table_name_prefix=None, schema_owner="oam_owner"))


def plan(mode: str = "vector", **kwargs: Any) -> SearchPlan:
    defaults: dict[str, Any] = {
        "k": 5, "record_types": ("memory", "fact"), "vector": np.zeros(4, dtype=np.float32),
        "text": "hello & world", "scope": {}, "metadata_filter": None, "include_invalid": True}
    defaults.update(kwargs)
    return SearchPlan(mode=mode, **defaults)


FILTERED: dict[str, Any] = {
    "scope": {"thread_id": UNSET, "user_id": "alice", "agent_id": None},
    "metadata_filter": parse_metadata_filter({"topic": "travel"}),
    "include_invalid": False,
}
ALL_TYPES = ("memory", "guideline", "message", "user_profile", "agent_profile", "image")


def statement_or_none(s: Statement | None) -> Statement:
    assert s is not None
    return s


SCENARIOS: dict[str, Any] = {
    "vector_exact": lambda: search.vector_statement(objects(), plan(), 40, True, QV),
    "vector_approx": lambda: search.vector_statement(objects(), plan(), 40, False, QV),
    "vector_filtered_every_arm": lambda: search.vector_statement(
        objects(), plan(record_types=ALL_TYPES, **FILTERED), 160, False, QV),
    "keyword": lambda: statement_or_none(search.keyword_statement(objects(), plan("keyword"),
                                                                  40)),
    "keyword_filtered_every_arm": lambda: statement_or_none(search.keyword_statement(
        objects(), plan("keyword", record_types=ALL_TYPES, **FILTERED), 40)),
    "table_rows": lambda: search.table_rows_statement(objects()),
    "scoped_count": lambda: search.scoped_count_statement(
        objects(), plan(record_types=ALL_TYPES, **FILTERED), 2001),
    "records_by_keys": lambda: search.select_records_by_keys_statements(objects(), [
        ("memory", "m2"), ("fact", "m1"), ("message", "g1"), ("user_profile", "u1"),
        ("image", "i1"), ("thread", "t1"), ("thread_summary", "s1")]),
    "linked_memories": lambda: statement_or_none(search.select_linked_memories_statement(
        objects(), ["m1", "m2"], plan(record_types=("fact", "message"), **FILTERED))),
}


def rendered(name: str) -> list[Statement]:
    built = SCENARIOS[name]()
    if isinstance(built, list):
        return [s for _, s in built]
    return [built]


def golden_statement(s: Statement) -> str:
    sizes = {k: str(v) for k, v in s.input_sizes.items()}
    return f"-- binds: {dict(s.binds)!r}\n-- input sizes: {sizes!r}\n{s.sql}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_statement_matches_golden(name: str) -> None:
    text = golden_text("Oracle search statement", name, "engines/oracle/search.py",
                       "tests/test_oracle_search_sql.py",
                       [golden_statement(s) for s in rendered(name)])
    assert_matches_golden(GOLDEN / f"{name}.sql", text)


EXACT_FETCH = re.compile(r"ORDER BY VECTOR_DISTANCE\(c\.embedding, :qv, COSINE\) "
                         r"FETCH EXACT FIRST :n ROWS ONLY")
APPROX_FETCH = re.compile(r"ORDER BY VECTOR_DISTANCE\(c\.embedding, :qv, COSINE\) "
                          r"FETCH APPROX FIRST :n ROWS ONLY WITH TARGET ACCURACY 95")


def for_sqlglot(sql: str) -> str:
    """The statement with the vector row-limiting forms sqlglot lacks made plain."""
    sql = re.sub(r"FETCH APPROX FIRST (:\w+) ROWS ONLY WITH TARGET ACCURACY \d+",
                 r"FETCH FIRST \1 ROWS ONLY", sql)
    return sql.replace("FETCH EXACT FIRST", "FETCH FIRST")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_statement_parses_with_sqlglot(name: str) -> None:
    for s in rendered(name):
        tree = sqlglot.parse_one(for_sqlglot(s.sql), read="oracle")
        assert isinstance(tree, (exp.Select, exp.Union)), type(tree)
        assert not list(tree.find_all(exp.Command))


def test_vector_row_limiting_forms() -> None:
    exact = search.vector_statement(objects(), plan(), 40, True, QV).sql
    approx = search.vector_statement(objects(), plan(), 40, False, QV).sql
    assert EXACT_FETCH.search(exact) and not APPROX_FETCH.search(exact)
    assert APPROX_FETCH.search(approx) and "FETCH EXACT" not in approx
    # The vector forms appear nowhere else; for_sqlglot leaves no vector form behind.
    assert "EXACT" not in for_sqlglot(exact) and "APPROX" not in for_sqlglot(approx)


def test_every_arm_is_limited_and_filtered_before_its_limit() -> None:
    sql = search.vector_statement(objects(), plan(record_types=ALL_TYPES, **FILTERED), 160,
                                  False, QV).sql
    assert len(APPROX_FETCH.findall(sql)) == 4  # memory, message, profiles, images
    arms = sql.split(" UNION ALL ")
    for arm in arms:
        where = arm[arm.index(" WHERE "):arm.index(" ORDER BY VECTOR_DISTANCE")]
        assert "c.user_id = :sc" in where and "c.agent_id IS NULL" in where
        assert "c.thread_id" not in where  # UNSET: no filter
        assert "JSON_EXISTS(p.metadata" in where
    expiring = [arm for arm in arms if '"ST_ACTOR_PROFILE"' not in arm]
    assert all(search.NOT_EXPIRED in arm and "p.status = 'valid'" in arm for arm in expiring)
    assert sql.endswith("ORDER BY d FETCH FIRST :n ROWS ONLY")


def test_include_invalid_drops_the_status_filter() -> None:
    sql = search.vector_statement(objects(), plan(include_invalid=True), 40, True, QV).sql
    assert "p.status" not in sql and search.NOT_EXPIRED in sql


def test_values_are_bound() -> None:
    s = search.keyword_statement(objects(), plan("keyword", **FILTERED), 40)
    assert s is not None
    assert "alice" not in s.sql and "travel" not in s.sql and "hello" not in s.sql
    assert s.binds["q"] == "{hello} ACCUM {world}"  # the & of the user text is escaped away
    assert s.binds["n"] == 40 and "alice" in s.binds.values()


def test_keyword_distance_falls_as_the_score_rises() -> None:
    s = statement_or_none(search.keyword_statement(objects(), plan("keyword"), 40))
    assert "1 / (1 + SCORE(1)) AS d" in s.sql
    assert "CONTAINS(c.chunk_text, :q, 1) > 0" in s.sql and "ORDER BY SCORE(1) DESC" in s.sql
    distances = [1 / (1 + score) for score in (100, 50, 1, 0)]
    assert distances == sorted(distances) and distances[0] > 0 and distances[-1] == 1


def test_text_without_words_has_no_keyword_statement() -> None:
    assert search.keyword_statement(objects(), plan("keyword", text="--- !!"), 40) is None


def test_budget_and_vector_are_checked() -> None:
    with pytest.raises(InvalidArgumentError):
        search.vector_statement(objects(), plan(), 0, True, QV)
    with pytest.raises(InvalidArgumentError):
        search.vector_statement(objects(), plan(vector=None), 40, True, QV)


def test_exact_scan_bound_is_postgresqls_rule() -> None:
    assert search.exact_scan_bound(40, None) == search.EXACT_SCAN_MIN_ROWS
    assert search.exact_scan_bound(40, 1_000) == search.EXACT_SCAN_MIN_ROWS
    # sqrt(16 * 40 * 10_000_000) = 80_000
    assert search.exact_scan_bound(40, 10_000_000) == 80_000


def test_linked_memories_and_keys_edge_cases() -> None:
    assert search.select_linked_memories_statement(objects(), [], plan()) is None
    assert search.select_linked_memories_statement(
        objects(), ["m1"], plan(record_types=("message",))) is None
    assert search.select_records_by_keys_statements(objects(), []) == []
    [(logical, s)] = search.select_records_by_keys_statements(
        objects(), [("memory", "b"), ("fact", "a")])
    assert logical == "memory" and s.binds == {"ids0": ["a", "b"]}
    assert "ORDER BY user_id NULLS FIRST" in s.sql


def test_record_columns_use_the_neutral_lower_case_keys() -> None:
    expected = ["id", "record_type", "thread_id", "user_id", "agent_id", "content",
                "content_parts", "metadata", "ts", "event_ts", "status", "role", "seq_no"]
    for logical, columns in search.RECORD_COLUMNS.items():
        aliases = re.findall(r'AS "([a-z_]+)"', columns)
        assert aliases[:len(expected)] == expected, logical


# --- the candidate source, on a fake runner ---------------------------------------------------
class FakeRunner:
    """Records each statement and answers rows chosen by its shape."""

    def __init__(self, *, table_rows: int | None = 100_000, scoped_chunks: int = 10,
                 rows: list[tuple[Any, ...]] | None = None) -> None:
        self.table_rows = table_rows
        self.scoped_chunks = scoped_chunks
        self.rows = rows or []
        self.statements: list[Statement] = []

    def __call__(self, s: Statement) -> list[tuple[Any, ...]]:
        self.statements.append(s)
        if "FROM ALL_TABLES" in s.sql:
            return [(self.table_rows,)]
        if s.sql.startswith("SELECT COUNT(*)"):
            return [(min(self.scoped_chunks, s.binds["lim"]),)]
        return list(self.rows)

    def kinds(self) -> list[str]:
        def kind(s: Statement) -> str:
            if "FROM ALL_TABLES" in s.sql:
                return "table_rows"
            if s.sql.startswith("SELECT COUNT(*)"):
                return "count"
            if "FETCH EXACT" in s.sql:
                return "exact"
            if "FETCH APPROX" in s.sql:
                return "approx"
            return "keyword"
        return [kind(s) for s in self.statements]


class Choices:
    def __init__(self) -> None:
        self.saved: dict[tuple[Any, ...], bool] = {}

    def get(self, key: tuple[Any, ...]) -> bool | None:
        return self.saved.get(key)

    def put(self, key: tuple[Any, ...], exact: bool) -> None:
        self.saved[key] = exact


def candidates(run: FakeRunner, p: SearchPlan, choices: Choices | None = None
               ) -> search.OracleCandidates:
    return search.OracleCandidates(run, objects(), p, QV, choices=choices, viewer="v")


def test_few_scoped_chunks_make_the_first_round_exact() -> None:
    run = FakeRunner(table_rows=1_000, scoped_chunks=10)
    found = candidates(run, plan(scope={"user_id": "alice"})).round(40, None)
    assert found.exact and run.kinds() == ["table_rows", "count", "exact"]
    assert run.statements[1].binds["lim"] == search.EXACT_SCAN_MIN_ROWS + 1


def test_many_scoped_chunks_use_the_index() -> None:
    run = FakeRunner(table_rows=10_000_000, scoped_chunks=10_000_000)
    found = candidates(run, plan(scope={"user_id": "alice"})).round(40, None)
    assert not found.exact and run.kinds() == ["table_rows", "count", "approx"]
    assert run.statements[1].binds["lim"] == 80_001


def test_without_a_user_filter_nothing_is_counted() -> None:
    run = FakeRunner()
    found = candidates(run, plan(scope={"user_id": UNSET, "thread_id": "t"})).round(40, None)
    assert not found.exact and run.kinds() == ["approx"]
    forced = FakeRunner()
    assert candidates(forced, plan()).round(40, True).exact and forced.kinds() == ["exact"]


def test_the_choice_is_cached_per_viewer_and_filter() -> None:
    choices = Choices()
    first = FakeRunner(scoped_chunks=10)
    candidates(first, plan(scope={"user_id": "alice"}), choices).round(40, None)
    again = FakeRunner(scoped_chunks=10)
    assert candidates(again, plan(scope={"user_id": "alice"}), choices).round(40, None).exact
    assert again.kinds() == ["exact"]
    other = FakeRunner(scoped_chunks=10)
    candidates(other, plan(scope={"user_id": "bob"}), choices).round(40, None)
    assert other.kinds()[:2] == ["table_rows", "count"]


def test_keyword_rounds_are_exact_and_skip_empty_queries() -> None:
    run = FakeRunner(rows=[("fact", "f1", 0.5)])
    found = candidates(run, plan("keyword", scope={"user_id": "alice"})).round(40, None)
    assert found.exact and found.sides == ([("fact", "f1", 0.5)],)
    assert run.kinds() == ["keyword"]
    silent = FakeRunner()
    nothing = candidates(silent, plan("keyword", text="?!")).round(40, None)
    assert nothing.sides == ([],) and nothing.exact and silent.statements == []


def test_a_hybrid_plan_is_not_answered_here() -> None:
    """Hybrid plans go to the store's hybrid vector index (``engines.oracle.hybrid``)."""
    run = FakeRunner()
    with pytest.raises(InvalidArgumentError, match="hybrid vector index"):
        candidates(run, plan("hybrid")).round(40, True)
    assert run.statements == []


def test_the_core_loop_repeats_a_short_approximate_round_exactly() -> None:
    run = FakeRunner(rows=[("fact", "a", 0.1), ("fact", "b", 0.2)])
    hits = run_search(candidates(run, plan(k=5)), 5)
    assert [h.record_id for h in hits] == ["a", "b"]
    assert run.kinds() == ["approx", "exact"]
