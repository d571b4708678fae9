"""``SearchStrategy.HYBRID`` on Oracle (``engines/oracle/hybrid.py``), offline.

No Oracle database runs here. Every statement and search request is pinned by a reviewed golden
file under ``tests/golden/oracle_engine/hybrid/``; rewrite after review with::

    OAM_UPDATE_GOLDEN=1 python -m pytest tests/test_oracle_hybrid.py

The search statement parses with sqlglot's Oracle dialect. sqlglot cannot parse ``CREATE HYBRID
VECTOR INDEX`` (it becomes an unparsed command) nor PL/SQL blocks: their shape is checked by
strict patterns of the documented grammar instead, with positive controls that the patterns
reject a wrong variant. The candidate source runs against a fake ``run`` callable that records
statements and answers rows: no database, driver or SQL execution is involved.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.core._schema import SchemaRequest, _options
from oracleagentmemory.core._search_loop import run_search
from oracleagentmemory.engines.interfaces import UNSET, SchemaOptions, SearchPlan
from oracleagentmemory.engines.layout import search_arms
from oracleagentmemory.engines.oracle import ddl, hybrid, search
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from oracleagentmemory.engines.oracle.session import OracleSession
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError
from oracleagentmemory.filtertree import parse_metadata_filter
from sqlglot import exp
from sqlglot.errors import SqlglotError

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine" / "hybrid"
ALL_TYPES = ("memory", "guideline", "message", "user_profile", "agent_profile", "image")
FILTERED: dict[str, Any] = {
    "scope": {"thread_id": UNSET, "user_id": "alice", "agent_id": None},
    "metadata_filter": parse_metadata_filter({"topic": "travel"}),
    "include_invalid": False,
}


def objects(store: str | None = "st") -> OracleObjects:
    return OracleObjects.of(derive_store_names(
        memory_store_id=store, table_name_prefix=None, schema_owner="oam_owner"))


def plan(**kwargs: Any) -> SearchPlan:
    defaults: dict[str, Any] = {
        "k": 5, "record_types": ("memory", "fact"),
        "vector": np.array([0.25, -0.5, 1.0], dtype=np.float32), "text": "hello & world",
        "scope": {}, "metadata_filter": None, "include_invalid": True}
    defaults.update(kwargs)
    return SearchPlan(mode="hybrid", **defaults)


def options(mode: str = "hybrid", model: str | None = "doc_model",
            sync: str = "on_commit") -> SchemaOptions:
    return SchemaOptions(vector_dim=384, search_mode=mode, search_index_sync=sync,
                         default_ttl_days=None, max_ttl_days=None, in_database_model=model)


def ddl_text(statement: Statement | str) -> str:
    if isinstance(statement, str):
        statement = Statement(statement)
    return f"-- binds: {dict(statement.binds)!r}\n{statement.sql}"


def search_text(s: Statement) -> str:
    sizes = {k: str(v) for k, v in s.input_sizes.items()}
    return f"-- binds: {dict(s.binds)!r}\n-- input sizes: {sizes!r}\n{s.sql}"


STATEMENTS: dict[str, Any] = {
    "schema_on_commit": lambda: [
        ddl_text(hybrid.drop_text_index(objects())),
        ddl_text(hybrid.create_preference(objects(), "doc_model")),
        ddl_text(hybrid.hybrid_index(objects(), "on_commit"))],
    "schema_manual": lambda: [ddl_text(hybrid.hybrid_index(objects(), "manual"))],
    "schema_auto": lambda: [ddl_text(hybrid.hybrid_index(objects(), "auto"))],
    "drop_preference": lambda: [ddl_text(hybrid.drop_preference(objects()))],
    "search_filtered_every_arm": lambda: [search_text(hybrid.search_statement(
        objects(), plan(record_types=ALL_TYPES, **FILTERED), 160))],
    "search_vector_only": lambda: [search_text(hybrid.search_statement(
        objects(), plan(text=None), 40))],
}

REQUESTS: dict[str, Any] = {
    "request_text": lambda: hybrid.search_request(objects(), plan(), 40),
    "request_text_without_words": lambda: hybrid.search_request(
        objects(), plan(text="!!! ---"), 40),
    "request_vector_only": lambda: hybrid.search_request(objects(), plan(text=None), 40),
}


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_statements_match_the_reviewed_golden_file(name: str) -> None:
    text = golden_text("Oracle hybrid search statement", name, "engines/oracle/hybrid.py",
                       "tests/test_oracle_hybrid.py", STATEMENTS[name]())
    assert_matches_golden(GOLDEN / f"{name}.sql", text)


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_requests_match_the_reviewed_golden_file(name: str) -> None:
    request = REQUESTS[name]()
    text = json.dumps(request, indent=2) + "\n"
    assert_matches_golden(GOLDEN / f"{name}.json", text)
    bound = hybrid.search_statement(objects(), plan(text=None) if "vector_only" in name else
                                    plan(text="!!! ---") if "without" in name else plan(), 40)
    assert json.loads(bound.binds["request"]) == request  # the bind is this request


# --- the search statement ---------------------------------------------------------------------
def test_the_search_statement_parses_with_sqlglot() -> None:
    for p in (plan(record_types=ALL_TYPES, **FILTERED), plan(text=None)):
        tree = sqlglot.parse_one(hybrid.search_statement(objects(), p, 40).sql, read="oracle")
        assert isinstance(tree, exp.Select), type(tree)
        assert not list(tree.find_all(exp.Command))
        assert tree.find(exp.With) is not None and tree.find(exp.JSONTable) is not None


def test_hits_are_joined_back_by_rowid_to_the_protected_tables() -> None:
    """Row security: only rowid and score come from the search function; every arm reads the
    chunk row by ROWID and joins its parent, so the end user's data grants decide."""
    sql = hybrid.search_statement(objects(), plan(record_types=ALL_TYPES, **FILTERED), 40).sql
    assert "DBMS_HYBRID_VECTOR.SEARCH(JSON(:request))" in sql
    assert re.search(r"COLUMNS \(n FOR ORDINALITY, rid VARCHAR2\(128\) PATH '\$\.rowid', "
                     r"score NUMBER PATH '\$\.score'\)\) j\)", sql)
    assert "chunk_text" not in sql  # never another user's text from the index
    arms = sql.split(" UNION ALL ")
    assert len(arms) == len(search_arms(ALL_TYPES))
    for arm in arms:
        assert 'JOIN "OAM_OWNER"."ST_RECORD_CHUNKS" c ON c.ROWID = CHARTOROWID(h.rid)' in arm
        assert re.search(r'JOIN "OAM_OWNER"\."ST_[A-Z_]+" p ON p\.', arm)
    assert "LEFT JOIN (" in sql and "ON v.n = hits.n ORDER BY hits.n" in sql
    assert hybrid.search_request(objects(), plan(), 5)["return"]["values"] == ["rowid", "score"]


def test_every_arm_has_the_filters_of_the_other_searches() -> None:
    p = plan(record_types=ALL_TYPES, **FILTERED)
    sql = hybrid.search_statement(objects(), p, 40).sql
    vector_sql = search.vector_statement(objects(), p, 40, True, "<qv>").sql
    arms = sql.split(" UNION ALL ")
    for arm in arms:
        assert re.search(r"c\.record_type IN \(:rt\d+", arm)
        assert re.search(r"c\.user_id = :sc\d+ AND c\.agent_id IS NULL", arm)
    parents = [a for a in arms if "ST_ACTOR_PROFILE" not in a]
    for arm in parents:
        assert "(p.expires_at IS NULL OR p.expires_at > SYSTIMESTAMP)" in arm
        assert "p.status = 'valid'" in arm
    for arm in arms:
        assert "JSON_EXISTS(p.metadata, " in arm
    # the same predicates, in the same number, as the vector search of the same plan
    for pattern in (r"c\.user_id = :sc\d+", r"p\.status = 'valid'", r"JSON_EXISTS\(p\.metadata"):
        assert len(re.findall(pattern, sql)) == len(re.findall(pattern, vector_sql))
    unfiltered = hybrid.search_statement(objects(), plan(), 40).sql
    assert "p.status" not in unfiltered and "JSON_EXISTS" not in unfiltered  # control


def test_values_are_bound_never_formatted() -> None:
    attack = "x'); DROP TABLE st_memory; --\" }"
    s = hybrid.search_statement(objects(), plan(text=attack, scope={"user_id": "o'brien"}), 40)
    assert attack not in s.sql and "o'brien" not in s.sql and "DROP" not in s.sql
    request = json.loads(s.binds["request"])
    assert request["vector"]["search_text"] == attack
    assert "o'brien" in s.binds.values()


def test_request_shapes() -> None:
    both = hybrid.search_request(objects(), plan(), 40)
    assert both["hybrid_index_name"] == "OAM_OWNER.ST_RECORD_CHUNKS_HYBRID_IX"
    assert both["vector"]["search_text"] == "hello & world"
    assert both["text"]["contains"] == "{hello} ACCUM {world}"  # escaped, as keyword search
    assert (both["search_fusion"], both["search_scorer"]) == ("UNION", "RRF")
    assert both["return"]["topN"] == 40 == both["vector"]["result_max"]
    no_words = hybrid.search_request(objects(), plan(text="!!! ---"), 40)
    assert "text" not in no_words and "search_fusion" not in no_words
    vector_only = hybrid.search_request(objects(), plan(text="  "), 40)
    assert json.loads(vector_only["vector"]["search_vector"]) == [0.25, -0.5, 1.0]
    assert "search_text" not in vector_only["vector"] and "text" not in vector_only
    with pytest.raises(InvalidArgumentError):
        hybrid.search_request(objects(), plan(text=None, vector=None), 40)
    for bad in (0, -1, True, 2.0):
        with pytest.raises(InvalidArgumentError):
            hybrid.search_request(objects(), plan(), bad)  # type: ignore[arg-type]


def test_distance_falls_as_the_score_rises() -> None:
    assert hybrid.distance(100) == 0.0 and hybrid.distance(0) == 1.0
    assert hybrid.distance(50) == 0.5 and hybrid.distance(None) == 1.0
    assert hybrid.distance(150) == 0.0 and hybrid.distance(-5) == 1.0
    scores = [100, 87.5, 61, 2, 0]
    distances = [hybrid.distance(s) for s in scores]
    assert distances == sorted(distances)


# --- the candidate source ---------------------------------------------------------------------
class FakeRun:
    """Answers each search statement with ``answer(top_n)`` rows and records the topN asked."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.top_ns: list[int] = []

    def __call__(self, statement: Statement) -> list[tuple[Any, ...]]:
        top_n = int(json.loads(statement.binds["request"])["return"]["topN"])
        self.top_ns.append(top_n)
        rows: list[tuple[Any, ...]] = self.answer(top_n)
        return rows


def visible(n: int, start: int = 1) -> list[tuple[Any, ...]]:
    return [(i, "fact", f"r{i}", 100 - i) for i in range(start, start + n)]


def hidden(n: int, start: int = 1) -> list[tuple[Any, ...]]:
    return [(i, None, None, 99) for i in range(start, start + n)]


def test_a_full_round_is_one_statement() -> None:
    run = FakeRun(lambda top_n: visible(top_n))
    found = hybrid.HybridCandidates(run, objects(), plan()).round(40, None)
    assert run.top_ns == [40] and found.exact is True and len(found.sides) == 1
    first = found.sides[0][0]
    assert first[:2] == ("fact", "r1") and first[2] == pytest.approx(0.01)
    assert len(found.sides[0]) == 40


def test_dropped_hits_widen_the_window() -> None:
    run = FakeRun(lambda top_n: hidden(top_n - 5) + visible(5, start=top_n - 4)
                  if top_n < 160 else hidden(100) + visible(60, start=101))
    found = hybrid.HybridCandidates(run, objects(), plan()).round(40, None)
    assert run.top_ns == [40, 160]
    assert len(found.sides[0]) == 40 and all(c[0] == "fact" for c in found.sides[0])


def test_an_exhausted_index_ends_the_round() -> None:
    run = FakeRun(lambda top_n: hidden(3) + visible(7, start=4))  # fewer than asked: all there
    found = hybrid.HybridCandidates(run, objects(), plan()).round(40, None)
    assert run.top_ns == [40] and len(found.sides[0]) == 7
    assert [c[1] for c in found.sides[0]] == [f"r{i}" for i in range(4, 11)]  # index order


def test_the_window_stops_at_its_cap() -> None:
    run = FakeRun(lambda top_n: hidden(top_n))
    found = hybrid.HybridCandidates(run, objects(), plan()).round(3000, None)
    assert run.top_ns == [3000, hybrid.MAX_TOP_N] and found.sides == ([],)


def test_the_core_loop_ends_on_a_short_round() -> None:
    run = FakeRun(lambda top_n: visible(3))
    hits = run_search(hybrid.HybridCandidates(run, objects(), plan()), k=5)
    assert [h.record_id for h in hits] == ["r1", "r2", "r3"] and len(run.top_ns) == 1
    assert [h.distance for h in hits] == sorted(h.distance for h in hits)


def test_the_session_routes_hybrid_plans_to_the_hybrid_index() -> None:
    engine = SimpleNamespace(scan_choices=None)
    session = OracleSession(None, engine, objects())  # type: ignore[arg-type]
    assert isinstance(session.candidate_source(plan()), hybrid.HybridCandidates)
    keyword = SearchPlan(mode="keyword", k=5, record_types=("fact",), text="hello")
    assert isinstance(session.candidate_source(keyword), search.OracleCandidates)  # control


# --- the schema -------------------------------------------------------------------------------
HYBRID_INDEX = re.compile(
    r'CREATE HYBRID VECTOR INDEX "OAM_OWNER"\."ST_RECORD_CHUNKS_HYBRID_IX" ON '
    r'"OAM_OWNER"\."ST_RECORD_CHUNKS" \(chunk_text\) PARAMETERS \(\'VECTORIZER '
    r"OAM_OWNER\.ST_RECORD_CHUNKS_VZ STOPLIST CTXSYS\.EMPTY_STOPLIST "
    r"(MAINTENANCE MANUAL SYNC \((ON COMMIT|MANUAL)\)|MAINTENANCE AUTO)'\)")


def test_the_hybrid_index_follows_the_documented_grammar() -> None:
    for sync, clause in (("on_commit", "MAINTENANCE MANUAL SYNC (ON COMMIT)"),
                         ("manual", "MAINTENANCE MANUAL SYNC (MANUAL)"),
                         ("auto", "MAINTENANCE AUTO")):
        sql = hybrid.hybrid_index(objects(), sync)
        assert HYBRID_INDEX.fullmatch(sql), sql
        assert sql.endswith(f"{clause}')")
    # positive control: the pattern rejects an unqualified preference and a CONTEXT index
    assert not HYBRID_INDEX.fullmatch(hybrid.hybrid_index(objects(), "manual").replace(
        "VECTORIZER OAM_OWNER.", "VECTORIZER "))
    assert not HYBRID_INDEX.fullmatch(ddl.text_index(objects(), "on_commit"))
    with pytest.raises(InvalidArgumentError):
        hybrid.hybrid_index(objects(), "every_minute")


def test_sqlglot_still_cannot_parse_the_hybrid_index() -> None:
    """If sqlglot learns the statement, parse it here instead of matching a pattern."""
    try:
        tree = sqlglot.parse_one(hybrid.hybrid_index(objects(), "on_commit"), read="oracle")
    except SqlglotError:
        return
    assert isinstance(tree, exp.Command)


PREFERENCE_BLOCK = re.compile(
    r"DECLARE n NUMBER; BEGIN SELECT COUNT\(\*\) INTO n FROM CTXSYS\.CTX_USER_PREFERENCES "
    r"WHERE pre_name = :pref_name; IF n > 0 THEN DBMS_VECTOR_CHAIN\.DROP_PREFERENCE"
    r"\(:pref_name\); END IF; DBMS_VECTOR_CHAIN\.CREATE_PREFERENCE\(:pref_name, "
    r"DBMS_VECTOR_CHAIN\.VECTORIZER, JSON\(:params\)\); END;")


def test_the_preference_is_bound_and_names_the_model() -> None:
    preference = hybrid.create_preference(objects(), "models.doc_model")
    sql, binds = preference.sql, preference.binds
    assert PREFERENCE_BLOCK.fullmatch(sql)
    assert binds["pref_name"] == "ST_RECORD_CHUNKS_VZ"
    assert json.loads(binds["params"]) == {"model": "MODELS.DOC_MODEL", "vector_idxtype": "HNSW",
                                           "distance": "COSINE", "accuracy": 95}
    drop = hybrid.drop_preference(objects())
    drop_sql, drop_binds = drop.sql, drop.binds
    assert "EXECUTE IMMEDIATE 'BEGIN DBMS_VECTOR_CHAIN.DROP_PREFERENCE(:1); END;'" in drop_sql
    assert "SQLCODE = -942" in drop_sql and drop_binds == {"pref_name": "ST_RECORD_CHUNKS_VZ"}
    with pytest.raises(InvalidArgumentError):
        hybrid.create_preference(objects(), "doc-model")


def test_long_preference_names_are_hashed_within_30_bytes() -> None:
    long_store = objects("a_very_long_memory_store_identifier")
    name = hybrid.preference_name(long_store)
    assert len(name.encode()) <= hybrid.MAX_PREFERENCE_NAME_BYTES and name.startswith("OAM_VZ_")
    assert name == hybrid.preference_name(objects("a_very_long_memory_store_identifier"))
    assert name != hybrid.preference_name(objects("a_very_long_memory_store_identifier2"))
    assert hybrid.preference_name(objects()) == "ST_RECORD_CHUNKS_VZ"
    assert hybrid.preference_name(objects(None)) == "RECORD_CHUNKS_VZ"


def test_hybrid_without_an_in_database_embedder_is_refused() -> None:
    with pytest.raises(InvalidArgumentTypeError, match="requires embedder to be an "
                       "OracleDBEmbedder") as refused:
        hybrid.require_in_database_model(options(model=None))
    assert isinstance(refused.value, TypeError) and refused.value.argument == "embedder"
    assert hybrid.require_in_database_model(options(model="doc_model")) == "DOC_MODEL"
    with pytest.raises(InvalidArgumentError):
        hybrid.require_in_database_model(options(model="doc model"))


def test_the_core_hands_the_embedders_model_to_the_engine() -> None:
    request = SchemaRequest(vector_dim=384, vector_dim_given=True, search_mode="hybrid",
                            search_index_sync="on_commit", retention=None, latest_version=1,
                            max_indexed_vector_dim=65535, in_database_model="DOC_MODEL")
    assert _options(request, None).in_database_model == "DOC_MODEL"
    request.in_database_model = None
    assert _options(request, None).in_database_model is None


def test_vector_and_keyword_stores_keep_the_context_index() -> None:
    for mode in ("vector", "keyword"):
        statements = ddl.create_store(objects(), options(mode=mode, model=None))
        assert sum("INDEXTYPE IS CTXSYS.CONTEXT" in s for s in statements) == 1
        assert not any("HYBRID" in s for s in statements)
    hybrid_store = ddl.create_store(objects(), options())
    assert not any("CTXSYS.CONTEXT" in s or "HYBRID" in s for s in hybrid_store)


def test_the_preference_embeds_as_the_store_embedder_does() -> None:
    """The vectorizer preference carries the embedder's input name, or the provider the database
    calls for it (``OracleDBEmbedder.get_vectorizer_config_json``)."""
    def vectorizer(config: dict[str, Any] | None, model: str | None = "doc_model"
                   ) -> dict[str, Any]:
        given = options(model=model)
        given.in_database_vectorizer = config
        return hybrid.require_vectorizer(given)

    assert vectorizer(None) == {"model": "DOC_MODEL"}
    assert vectorizer({"model": "DOC_MODEL", "input_name": "text"}) == {
        "model": "DOC_MODEL", "input_name": "TEXT"}
    spec = {"url": "https://e.example/v1", "provider": "openai", "model": "text-embedding-3-small"}
    remote = vectorizer({"embedder_spec": spec}, model="text-embedding-3-small")
    assert remote == {"embedder_spec": spec}
    preference = hybrid.create_preference(objects(), remote)
    assert PREFERENCE_BLOCK.fullmatch(preference.sql)
    assert json.loads(preference.binds["params"]) == {
        "embedder_spec": spec, "vector_idxtype": "HNSW", "distance": "COSINE", "accuracy": 95}
    with pytest.raises(InvalidArgumentError):
        vectorizer({"model": "DOC_MODEL", "input_name": "a b"})
    with pytest.raises(InvalidArgumentTypeError, match="OracleDBEmbedder"):
        vectorizer(None, model=None)


def test_the_core_hands_the_embedders_vectorizer_to_the_engine() -> None:
    request = SchemaRequest(vector_dim=384, vector_dim_given=True, search_mode="hybrid",
                            search_index_sync="on_commit", retention=None, latest_version=1,
                            max_indexed_vector_dim=65535, in_database_model="DOC_MODEL",
                            in_database_vectorizer={"model": "DOC_MODEL", "input_name": "TEXT"})
    assert _options(request, None).in_database_vectorizer == {
        "model": "DOC_MODEL", "input_name": "TEXT"}
