"""A keyword round runs on one generic plan, and its rankings do not depend on the plan.

Under ``plan_cache_mode`` ``auto`` the server planned the keyword statement anew on every
search (a custom plan each time, about 1 ms of planning on LoCoMo's messages); the round now
forces the generic plan for itself alone. Every cut of the statement (a limit over equal
scores) breaks ties by id, so the custom plan and the generic one return the same rows in the
same order, and the core's tie-break by record id holds across the cut.
"""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest
from conftest import StoreFactory, new_store_id
from oracleagentmemory.core import SearchStrategy
from oracleagentmemory.core._search_loop import first_budget
from oracleagentmemory.engines.identifiers import store_names
from oracleagentmemory.engines.interfaces import UNSET, SearchPlan
from oracleagentmemory.engines.postgres import search as pg_search
from psycopg_pool import ConnectionPool

POSTGRESQL_ONLY = "checks PostgreSQL's plans of the keyword statement"
K = 5
TIED = 60
"""Records of the same text: more than a round's window (``first_budget(K)``), so equal scores
straddle the statement's limit."""


def _keyword_statements(conn: psycopg.Connection[Any]) -> list[tuple[int, int]]:
    """Generic and custom plans so far of the session's prepared keyword rounds."""
    rows = conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
        "WHERE statement LIKE '%%WITH tq AS MATERIALIZED%%' AND NOT from_sql").fetchall()
    return [(int(generic), int(custom)) for generic, custom in rows]


def _tied_ids(prefix: str) -> list[str]:
    ids = [f"{prefix}{n:02d}" for n in range(TIED)]
    random.Random(7).shuffle(ids)  # stored out of id order
    return ids


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_keyword_rounds_run_on_the_generic_plan_from_the_first_search(
        make_store: StoreFactory, pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        store = make_store(search_strategy=SearchStrategy.KEYWORD, pool=conn)
        store.add(["green tea in the morning", "black coffee at noon", "herbal tea at night"],
                  "memory", user_ids="u1")
        queries = ["green tea", "coffee", "tea at night", "morning", "noon coffee", "herbal",
                   "black tea", "night"]
        for query in queries:
            assert store.search(query, K, user_id="u1")
        # Positive control of the count: the session's other prepared statements exist too,
        # and the keyword round is one of them, executed once per search.
        [(generic, custom)] = _keyword_statements(conn)
        assert (generic, custom) == (len(queries), 0)  # never a custom plan
        # The caller's own setting is untouched by the round.
        conn.execute("SET plan_cache_mode = force_custom_plan")
        assert store.search("green tea", K, user_id="u1")
        assert _keyword_statements(conn) == [(len(queries) + 1, 0)]
        assert conn.execute("SHOW plan_cache_mode").fetchone() == ("force_custom_plan",)


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
@pytest.mark.parametrize("record_type", ["memory", "message"])
def test_ties_across_the_window_rank_by_record_id_under_either_plan(
        make_store: StoreFactory, pg_url: str, record_type: str) -> None:
    store_id = new_store_id()
    store = make_store(search_strategy=SearchStrategy.KEYWORD, memory_store_id=store_id)
    ids = _tied_ids("r")
    options: dict[str, Any] = {"record_ids": ids, "user_ids": "u1"}
    if record_type == "message":  # one thread each: no message has a neighbour
        options.update(thread_ids=[f"t{i}" for i in ids], roles="user")
    store.add(["green tea every morning"] * TIED, record_type, **options)
    store.add(["green tea", "tea"], record_type, user_ids="u1",
              **({"thread_ids": "t-other", "roles": "user"} if record_type == "message"
                 else {}))
    found = [record.id for record, _ in store.search("green tea morning", K, user_id="u1",
                                                      record_types=[record_type])]
    # All TIED score alike and above the others: the K smallest ids, wherever the window cut.
    assert found == sorted(ids)[:K]

    # The round itself returns the same rows in the same order under a custom and a generic
    # plan (positive control: the window is full, so the cut falls among the equal scores).
    names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=None,
                        fold="lower")
    plan = SearchPlan(mode="keyword", k=K, record_types=(record_type,), text="green tea morning",
                      scope={"thread_id": UNSET, "user_id": "u1", "agent_id": UNSET})
    budget = first_budget(K)
    statement, params = pg_search.round_statement(names, plan, budget, True, False)
    rows: dict[str, list[tuple[Any, ...]]] = {}
    with psycopg.connect(pg_url) as conn:
        for mode in ("force_custom_plan", "force_generic_plan"):
            with conn.transaction():
                conn.execute("SELECT set_config('plan_cache_mode', %s, true)", [mode])
                cursor = psycopg.RawCursor(conn)
                rows[mode] = [cursor.execute(statement, params, prepare=True).fetchall()
                              for _ in range(3)][-1]
    assert len(rows["force_custom_plan"]) == budget
    assert rows["force_custom_plan"] == rows["force_generic_plan"]
    assert [row[1] for row in rows["force_generic_plan"]] == sorted(ids)[:budget]


def _modes(conn: psycopg.Connection[Any]) -> tuple[Any, ...] | None:
    """The session's plan_cache_mode and the round's placeholder (``None`` if never set)."""
    return conn.execute("SELECT current_setting('plan_cache_mode'), "
                        "current_setting('oam_search.plan_cache_mode', true)").fetchone()


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_pooled_connection_keeps_its_plan_cache_mode_after_keyword_searches(
        make_store: StoreFactory, pg_url: str) -> None:
    with ConnectionPool(pg_url, min_size=1, max_size=1, open=True) as pool:
        with pool.connection() as conn:
            assert _modes(conn) == ("auto", None)  # the placeholder does not exist yet
        store = make_store(search_strategy=SearchStrategy.KEYWORD, pool=pool)
        store.add(["green tea in the morning", "herbal tea at night"], "memory", user_ids="u1")
        for _ in range(3):
            assert store.search("green tea", K, user_id="u1")
        with pool.connection() as conn:  # the one connection the searches ran on
            # The placeholder is left defined, empty outside the round's transaction.
            assert _modes(conn) == ("auto", "")
            assert _keyword_statements(conn) == [(3, 0)]  # positive control: the round ran


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
@pytest.mark.parametrize("autocommit", [True, False])
def test_a_round_that_fails_mid_pipeline_leaves_no_forced_plan(pg_url: str,
                                                               autocommit: bool) -> None:
    with psycopg.connect(pg_url, autocommit=autocommit) as conn:
        # Positive control: inside the round the mode is forced, and restored in the same
        # transaction after it.
        with conn.transaction():
            probe = "SELECT current_setting('plan_cache_mode')"
            rows = pg_search._with_generic_plan(conn, probe, [], psycopg.RawCursor(conn))
            assert rows == [("force_generic_plan",)]
            assert _modes(conn) == ("auto", "auto")
        # The round's statement fails between the set and the restore.
        with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
            pg_search._with_generic_plan(conn, "SELECT 1 / 0", [], psycopg.RawCursor(conn))
        assert _modes(conn) == ("auto", "")
        # The connection is usable and the next round is forced again, then restored.
        rows = pg_search._with_generic_plan(conn, probe, [], psycopg.RawCursor(conn))
        assert rows == [("force_generic_plan",)]
        # (Without autocommit the round's transaction is still open, the placeholder set in it.)
        assert _modes(conn) == ("auto", "" if autocommit else "auto")
