"""The Oracle engine's relation statements (``engines/oracle/relations.py``), without Oracle.

Every statement is pinned by a reviewed golden file under
``tests/golden/oracle_engine/relations/`` (rewrite with ``OAM_UPDATE_GOLDEN=1`` after review)
and parsed with sqlglot's Oracle dialect into a real expression. sqlglot 30 lacks one piece of
the syntax used: ``RETURNING ... INTO :binds`` (parsed with the ``INTO`` list removed, which a
pattern checks instead). Binds, input sizes and the pure helpers are checked directly.

The recursive graph walk's logic is also run, on the embedded PostgreSQL, after a translation
that changes only spelling (``WITH RECURSIVE``, ``CYCLE ... USING path``, ``varchar``, psycopg
binds), against a breadth-first reference of the core's hop-by-hop walk on random graphs with
links to ids that are no visible memory: this checks the query's anchor, recursion bound,
cycle handling, visibility rule, order and row limit, not Oracle's acceptance of the text.
The same way, ``select_relations`` (limit, order, keyset pages), ``links_touching`` and the
owner rules (``memory_types``, ``lifecycle_targets_from``, ``delete_links_of``,
``recompute_status``) are run next to the PostgreSQL engine's functions on the same random
rows, and must return and leave the same rows.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import oracledb
import psycopg
import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.engines.interfaces import RelationChange, RelationQuery, RelationRow
from oracleagentmemory.engines.oracle import relations
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import DuplicateRelationError, InvalidArgumentError
from oracleagentmemory.filtertree import And
from sqlglot import exp
from sqlglot.errors import SqlglotError

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine" / "relations"
TS = datetime(2026, 3, 1, 12, 30, tzinfo=timezone(timedelta(hours=2)))


def objects() -> OracleObjects:
    return OracleObjects.of(derive_store_names(
        memory_store_id="st", table_name_prefix=None, schema_owner="oam_owner"))


def row(n: int, **changes: Any) -> RelationRow:
    values: dict[str, Any] = dict(
        id=f"r{n}", source_id=f"m{n}", source_type="fact", target_id=f"m{n + 1}",
        target_type="memory", relation_type="supersedes", opposite_relation_type="superseded_by",
        event_ts=TS, metadata={"why": "newer"}, user_id="ALICE")
    values.update(changes)
    return RelationRow(**values)


FILTER = ("JSON_EXISTS(metadata, '$?(@.why == $v0)' PASSING :mf0 AS \"v0\")", {"mf0": "newer"})
"""A rendered metadata filter, as the Oracle filter renderer hands it over."""


def scenarios() -> dict[str, list[Statement]]:
    o = objects()
    recompute = relations.recompute_status(o, ["m2", "m3"])
    links_of = relations.delete_links_of(o, [("m1", "ALICE"), ("g1", None)])
    assert recompute is not None and links_of is not None
    return {
        "memory_types": [relations.memory_types(o, ["m1", "m2"])],
        "insert": [relations.insert_relations(o, [row(1), row(2)])],
        "select": [
            relations.select_relations(o, RelationQuery()),
            relations.select_relations(o, RelationQuery(source_id="m1", relation_type="refines",
                                                         limit=5)),
            relations.select_relations(o, RelationQuery(
                relation_id="r1", source_type="fact", target_id="m2", target_type="memory",
                metadata_filter=And(())), metadata=FILTER),
            relations.select_relations(o, RelationQuery(limit=2, older_than=None)),
            relations.select_relations(o, RelationQuery(source_id="m1", limit=2,
                                                        older_than=(TS, "r9"))),
        ],
        "update": [
            relations.update_relation(o, RelationChange(relation_id="r1")),
            relations.update_relation(o, RelationChange(
                relation_id="r1", relation_type="refines", opposite_relation_type="refined_by",
                event_ts=TS, metadata={"k": 1})),
        ],
        "delete": [relations.delete_relations(o, ["r1", "r2", "r1"]), links_of],
        "lifecycle": [recompute, relations.lifecycle_targets_from(
            o, "m.thread_id = :thread_id", {"thread_id": "t1"})],
        "graph": [relations.links_touching(o, ["m1", "m2"]),
                  relations.links_within_hops(o, ["m1"], 3, 101)],
    }


@pytest.mark.parametrize("name", sorted(scenarios()))
def test_statements_match_the_reviewed_golden_file(name: str) -> None:
    assert_matches_golden(GOLDEN / f"{name}.sql", golden_text(
        "Oracle relation statements", name, "oracleagentmemory.engines.oracle.relations",
        "tests/test_oracle_relations_sql.py", [s.sql for s in scenarios()[name]]))


# --- parsing ------------------------------------------------------------------------------------
RETURNING_INTO = re.compile(r" RETURNING target_id, relation_type INTO :target_ids, "
                            r":relation_types$")


def parse(statement: str) -> exp.Expr:
    """Parse with sqlglot (``RETURNING ... INTO`` checked by pattern and removed first)."""
    adapted = statement
    if " RETURNING " in statement:
        assert RETURNING_INTO.search(statement), statement
        adapted = statement[: statement.index(" INTO :")]
    tree = sqlglot.parse_one(adapted, read="oracle")
    assert not isinstance(tree, exp.Command), f"sqlglot left it unparsed: {statement}"
    return tree


def test_every_statement_parses_into_a_real_expression() -> None:
    kinds: dict[str, int] = {}
    for statements in scenarios().values():
        for statement in statements:
            assert ";" not in statement.sql and "--" not in statement.sql
            tree = parse(statement.sql)
            kinds[tree.key] = kinds.get(tree.key, 0) + 1
            for table in tree.find_all(exp.Table):
                if table.name.startswith("ST_"):
                    assert table.db == "OAM_OWNER", statement.sql
    assert kinds == {"select": 9, "insert": 1, "update": 3, "delete": 2}


@pytest.mark.parametrize("broken", [
    "SELECT id FROM (SELECT id FROM t",
    "DELETE FROM t WHERE id IN (SELECT j.id FROM JSON_TABLE(:x, '$[*]' COLUMNS (id PATH))",
    "UPDATE t SET a = WHERE id = :a",
])
def test_positive_control_a_broken_statement_is_caught(broken: str) -> None:
    with pytest.raises((SqlglotError, AssertionError)):
        parse(broken)


def test_the_recursive_walk_keeps_its_cycle_clause() -> None:
    statement = relations.links_within_hops(objects(), ["m1"], 2, 10).sql
    tree = parse(statement)
    assert "CYCLE node_id SET is_cycle TO 'Y' DEFAULT 'N'" in tree.sql("oracle")
    with_ = tree.args.get("with_") or tree.args.get("with")
    assert with_ is not None and [c.alias for c in with_.expressions] == ["seeds", "walk"]
    assert "UNION ALL" in with_.expressions[1].this.sql("oracle")


# --- binds ----------------------------------------------------------------------------------------
def test_values_are_bound_never_written() -> None:
    for statements in scenarios().values():
        for statement in statements:
            for value in ("m1", "ALICE", "newer", "refines", "superseded_by", "t1", "r1"):
                assert f"'{value}'" not in statement.sql, statement.sql


def test_insert_binds_one_mapping_per_row_with_typed_binds() -> None:
    statement = relations.insert_relations(objects(), [row(1), row(2, event_ts=None,
                                                                    metadata=None)])
    assert statement.many and statement.rows is not None and len(statement.rows) == 2
    assert not statement.binds
    first, second = statement.rows
    assert first["event_ts"] == datetime(2026, 3, 1, 10, 30) and first["event_ts"].tzinfo is None
    assert first["metadata"] == {"why": "newer"} and first["user_id"] == "ALICE"
    assert second["event_ts"] is None and second["metadata"] is None
    assert statement.input_sizes == {"event_ts": oracledb.DB_TYPE_TIMESTAMP,
                                     "metadata": oracledb.DB_TYPE_JSON}
    assert set(first) == {m for m in re.findall(r":([a-z_]+)", statement.sql)}


def test_id_lists_are_one_json_bind_without_duplicates() -> None:
    statement = relations.delete_relations(objects(), ["r1", "r2", "r1"])
    assert statement.binds == {"relation_ids": ["r1", "r2"]}
    assert statement.input_sizes == {"relation_ids": oracledb.DB_TYPE_JSON}
    assert statement.out_binds == {"target_ids": oracledb.DB_TYPE_VARCHAR,
                                   "relation_types": oracledb.DB_TYPE_VARCHAR}
    assert relations.deleted_relations(["m2", "m3"], ["supersedes", "refines"]) == [
        ("m2", "supersedes"), ("m3", "refines")]
    assert relations.deleted_relations(None, None) == []


def test_select_binds_filters_limit_and_the_metadata_filter() -> None:
    o = objects()
    limited = relations.select_relations(o, RelationQuery(source_id="m1", limit=5))
    assert limited.binds == {"source_id": "m1", "row_limit": 5}
    assert limited.columns == relations.RELATION_KEYS
    filtered = relations.select_relations(o, RelationQuery(metadata_filter=None),
                                          metadata=("metadata IS NULL", {}))
    assert "WHERE metadata IS NULL ORDER BY" not in filtered.sql  # the inner query orders
    assert "WHERE metadata IS NULL)" in filtered.sql
    with pytest.raises(InvalidArgumentError):
        relations.select_relations(o, RelationQuery(metadata_filter=None))
    with pytest.raises(InvalidArgumentError):
        relations.select_relations(o, RelationQuery(), metadata=FILTER)
    with pytest.raises(InvalidArgumentError, match="clash"):
        relations.select_relations(o, RelationQuery(source_id="m1", metadata_filter=None),
                                   metadata=("x = :source_id", {"source_id": "y"}))


def test_update_sets_only_what_changes() -> None:
    o = objects()
    bare = relations.update_relation(o, RelationChange(relation_id="r1"))
    assert bare.binds == {"relation_id": "r1"} and bare.input_sizes == {}
    cleared = relations.update_relation(o, RelationChange(relation_id="r1", metadata=None,
                                                          event_ts=None))
    assert cleared.binds == {"event_ts": None, "metadata": None, "relation_id": "r1"}
    assert set(cleared.input_sizes) == {"event_ts", "metadata"}


def test_lifecycle_types_are_bound_one_by_one() -> None:
    statement = relations.recompute_status(objects(), ["m2"])
    assert statement is not None and isinstance(statement.binds, dict)
    assert {k: v for k, v in statement.binds.items() if k.startswith("lifecycle_")} == {
        "lifecycle_0": "duplicates", "lifecycle_1": "refines", "lifecycle_2": "supersedes"}
    assert relations.recompute_status(objects(), []) is None
    assert relations.delete_links_of(objects(), []) is None
    with pytest.raises(InvalidArgumentError):
        relations.lifecycle_targets_from(objects(), "1 = 1", {"lifecycle_0": "x"})


def test_memory_pairs_bind_as_json_objects() -> None:
    statement = relations.delete_links_of(objects(), [("m1", "ALICE"), ("g1", None)])
    assert statement is not None
    assert statement.binds == {"memories": [{"id": "m1", "owner": "ALICE"},
                                            {"id": "g1", "owner": None}]}


def test_hop_bound_and_row_limit_are_checked() -> None:
    statement = relations.links_within_hops(objects(), ["m1"], 2, 7)
    assert statement.binds == {"node_ids": ["m1"], "max_hops": 2, "row_limit": 7}
    assert statement.columns == relations.RELATION_KEYS  # the rows of links_touching
    assert statement.sql.endswith("ORDER BY l.row_seq FETCH FIRST :row_limit ROWS ONLY")
    for bad in (0, relations.MAX_RECURSIVE_HOPS + 1, True, 2.0):
        with pytest.raises(InvalidArgumentError):
            relations.links_within_hops(objects(), ["m1"], bad, 7)  # type: ignore[arg-type]
    for bad_limit in (0, -1, True, 1.5):
        with pytest.raises(InvalidArgumentError):
            relations.links_within_hops(objects(), ["m1"], 2, bad_limit)  # type: ignore[arg-type]


# --- rows and errors --------------------------------------------------------------------------
def test_rows_come_back_with_aware_timestamps_and_grouped_types() -> None:
    fetched = {"id": "r1", "event_ts": datetime(2026, 3, 1, 10, 30), "created_at":
               datetime(2026, 3, 1, 10, 31), "metadata": None}
    converted = relations.relation_row(fetched)
    assert converted["event_ts"] == TS and converted["created_at"].tzinfo == timezone.utc
    assert relations.relation_row({"event_ts": None})["event_ts"] is None
    assert relations.group_memory_types([
        {"id": "m1", "record_type": "fact", "user_id": "ALICE"},
        {"id": "m1", "record_type": "memory", "user_id": None},
        {"id": "m2", "record_type": "guideline", "user_id": None},
    ]) == {"m1": [("fact", "ALICE"), ("memory", None)], "m2": [("guideline", None)]}


class Err:
    """The three attributes of python-oracledb's ``_Error`` that the classifier reads."""

    def __init__(self, offset: int, code: int, message: str) -> None:
        self.offset, self.code, self.message = offset, code, message


def test_a_clash_on_the_id_index_names_the_relation() -> None:
    rows = [row(1), row(2)]
    error = relations.duplicate_relation_error(objects(), rows, [Err(
        1, 1, "ORA-00001: unique constraint (OAM_OWNER.ST_MEMORY_LINK_OWNER_ID_UQ) violated on "
              "table OAM_OWNER.ST_MEMORY_LINK columns (USER_ID, ID)")])
    assert isinstance(error, DuplicateRelationError) and error.record_id == "r2"
    assert "OWNER_ID_UQ" not in str(error)


def test_a_clash_on_the_pair_index_is_a_related_pair() -> None:
    error = relations.duplicate_relation_error(objects(), [row(1)], [Err(
        0, 1, "ORA-00001: unique constraint (OAM_OWNER.ST_MEMORY_LINK_OWNER_PAIR_UQ) violated")])
    assert isinstance(error, DuplicateRelationError) and error.record_id is None
    assert "already related" in str(error)


def test_other_batch_errors_are_left_to_the_caller() -> None:
    assert relations.duplicate_relation_error(objects(), [row(1)], [Err(
        0, 12899, "ORA-12899: value too large for column")]) is None
    assert relations.duplicate_relation_error(objects(), [row(1)], []) is None


# --- the recursive walk's logic, run on the embedded PostgreSQL -----------------------------------
def postgres_dialect(statement: str) -> str:
    """The Oracle walk in PostgreSQL's words, changing only what PostgreSQL spells otherwise:
    ``WITH RECURSIVE``, ``varchar``, ``CYCLE ... USING path``, no ``SYS_EXTRACT_UTC`` (the
    timestamps are not compared), psycopg binds. The logic (anchor, recursive member, cycle
    clause, visibility checks, final select, order and row limit) is the Oracle text's own."""
    translated = statement.replace("WITH seeds", "WITH RECURSIVE seeds", 1)
    translated = translated.replace("VARCHAR2(128 CHAR)", "varchar(128)")
    translated = translated.replace("DEFAULT 'N' ", "DEFAULT 'N' USING path ", 1)
    translated = re.sub(r"SYS_EXTRACT_UTC\((l\.\w+)\)", r"\1", translated)
    translated = translated.replace(":node_ids", "%(node_ids)s::jsonb")
    translated = translated.replace(":row_limit", "(%(row_limit)s::int)")
    return translated.replace(":max_hops", "%(max_hops)s::int")


def expected_walk(edges: list[tuple[str, str]], seeds: list[str], hops: int,
                  visible: set[str]) -> list[str]:
    """What the core's hop-by-hop walk could fetch when no visible memory is filtered out:
    breadth-first along links whose two ends are visible memories, then every link touching a
    node nearer than ``hops``, in creation order."""
    distance = {seed: 0 for seed in seeds}
    frontier = list(dict.fromkeys(seeds))
    for hop in range(1, hops):
        nxt = []
        for a, b in edges:
            if a not in visible or b not in visible:
                continue
            for here, there in ((a, b), (b, a)):
                if here in frontier and there not in distance:
                    distance[there] = hop
                    nxt.append(there)
        frontier = nxt
    return [f"r{n}" for n, (a, b) in enumerate(edges) if a in distance or b in distance]


def walk_tables(conn: psycopg.Connection[Any], edges: list[tuple[str, str]],
                memories: list[str]) -> None:
    """The link and memory tables of the Oracle names, in PostgreSQL; ``row_seq`` is the
    order of ``edges``."""
    conn.execute('CREATE SCHEMA "OAM_OWNER"')
    conn.execute(
        'CREATE TABLE "OAM_OWNER"."ST_MEMORY_LINK" (id varchar(128), source_id varchar(128), '
        "source_type text, target_id varchar(128), target_type text, relation_type text, "
        "opposite_relation_type text, event_ts timestamptz, metadata jsonb, "
        "created_at timestamptz DEFAULT now(), row_seq bigint GENERATED ALWAYS AS IDENTITY)")
    conn.execute('CREATE TABLE "OAM_OWNER"."ST_MEMORY" (id varchar(128))')
    for n, (a, b) in enumerate(edges):
        conn.execute(
            'INSERT INTO "OAM_OWNER"."ST_MEMORY_LINK" (id, source_id, source_type, '
            "target_id, target_type, relation_type, opposite_relation_type) VALUES "
            "(%s, %s, 'fact', %s, 'fact', 'refines', 'refined_by')", (f"r{n}", a, b))
    for memory in memories:
        conn.execute('INSERT INTO "OAM_OWNER"."ST_MEMORY" (id) VALUES (%s)', (memory,))


def run_walk(conn: psycopg.Connection[Any], statement: Statement) -> list[str]:
    rows = conn.execute(postgres_dialect(statement.sql), {
        "node_ids": json.dumps(statement.binds["node_ids"]),
        "max_hops": statement.binds["max_hops"],
        "row_limit": statement.binds["row_limit"]}).fetchall()
    assert all(len(r) == len(statement.columns) for r in rows)
    return [r[0] for r in rows]


@pytest.mark.parametrize("trial", range(8))
def test_the_recursive_walk_matches_the_breadth_first_walk(pg_url: str, trial: int) -> None:
    rng = random.Random(trial)
    nodes = [f"m{n}" for n in range(12)]
    visible = set(rng.sample(nodes, 9))  # links to the others lead to no visible memory
    pairs = {tuple(sorted(rng.sample(nodes, 2))) for _ in range(rng.randint(6, 20))}
    edges = [(a, b) if rng.random() < 0.5 else (b, a) for a, b in sorted(pairs)]
    rng.shuffle(edges)  # creation order is not id order
    seeds = rng.sample(sorted(visible), rng.randint(1, 3))
    hops = rng.randint(1, 4)
    expected = expected_walk(edges, seeds, hops, visible)
    with psycopg.connect(pg_url) as conn:
        walk_tables(conn, edges, sorted(visible))
        found = run_walk(conn, relations.links_within_hops(objects(), seeds, hops, 100))
        if expected:  # the row limit keeps the first links in creation order
            limited = run_walk(conn, relations.links_within_hops(
                objects(), seeds, hops, max(1, len(expected) - 1)))
        conn.rollback()
    assert found == expected
    if expected:
        assert limited == expected[:max(1, len(expected) - 1)]


def test_positive_control_the_walk_comparison_sees_a_wrong_hop_bound(pg_url: str) -> None:
    edges = [("m0", "m1"), ("m1", "m2"), ("m2", "m3")]  # a path: one more hop, one more link
    statement = relations.links_within_hops(objects(), ["m0"], 2, 100)
    wrong = dataclasses.replace(statement, sql=statement.sql.replace("w.hop + 1 < ", "w.hop < "))
    with psycopg.connect(pg_url) as conn:
        walk_tables(conn, edges, ["m0", "m1", "m2", "m3"])
        right_rows, wrong_rows = run_walk(conn, statement), run_walk(conn, wrong)
        conn.rollback()
    expected = expected_walk(edges, ["m0"], 2, {"m0", "m1", "m2", "m3"})
    assert right_rows == expected == ["r0", "r1"]
    assert wrong_rows != expected


def test_positive_control_the_walk_comparison_sees_a_missing_visibility_check(
        pg_url: str) -> None:
    edges = [("m0", "x1"), ("x1", "m2")]  # x1 is no memory the session can see
    statement = relations.links_within_hops(objects(), ["m0"], 3, 100)
    unchecked = dataclasses.replace(statement, sql=re.sub(
        r" AND EXISTS \(SELECT 1 FROM \S+ m WHERE m\.id = l\.\w+\)", "", statement.sql))
    assert unchecked.sql != statement.sql
    with psycopg.connect(pg_url) as conn:
        walk_tables(conn, edges, ["m0", "m2"])
        checked_rows, unchecked_rows = run_walk(conn, statement), run_walk(conn, unchecked)
        conn.rollback()
    assert checked_rows == expected_walk(edges, ["m0"], 3, {"m0", "m2"}) == ["r0"]
    assert unchecked_rows == ["r0", "r1"]


# --- the owner rules, run on the embedded PostgreSQL against the PostgreSQL engine -------------
def postgres_statement(statement: Statement) -> tuple[str, dict[str, Any]]:
    """An Oracle statement in PostgreSQL's spelling (``varchar``, ``now()``, no
    ``SYS_EXTRACT_UTC``, psycopg binds, JSON binds as ``jsonb``); the predicates are the Oracle
    text's own."""
    translated = statement.sql.replace("VARCHAR2(128 CHAR)", "varchar(128)")
    translated = translated.replace("SYSTIMESTAMP", "now()")
    translated = re.sub(r"SYS_EXTRACT_UTC\(((?:l\.)?\w+)\)", r"\1", translated)
    translated = re.sub(r"NLSSORT\((:?\w+), 'NLS_SORT=BINARY'\)", r'(\1 COLLATE "C")', translated)
    translated = re.sub(r"FROM_TZ\(CAST\((:\w+) AS TIMESTAMP\), 'UTC'\)",
                        r"(CAST(\1 AS timestamp) AT TIME ZONE 'UTC')", translated)
    json_binds = {name for name, kind in statement.input_sizes.items()
                  if kind is oracledb.DB_TYPE_JSON}
    translated = re.sub(r":(\w+)", lambda m: f"%({m[1]})s::jsonb" if m[1] in json_binds
                        else f"%({m[1]})s", translated)
    binds = {name: json.dumps(value) if name in json_binds else value
             for name, value in statement.binds.items()}
    return translated, binds


def owner_rule_tables(conn: psycopg.Connection[Any], rng: random.Random) -> None:
    """The same memories and links in ``oam_owner`` (the PostgreSQL engine's names) and
    ``"OAM_OWNER"`` (the Oracle statements' names); ids repeat across owners."""
    owners = [None, "ALICE", "BOB"]
    memories = {(f"m{rng.randint(0, 5)}", rng.choice(owners)) for _ in range(12)}
    links = []
    for n in range(14):
        (a, owner_a), (b, owner_b) = rng.sample(sorted(memories, key=str), 2)
        if a != b:
            owner = owner_a or owner_b
            links.append((f"r{n}", a, b, rng.choice(["refines", "supersedes", "about"]), owner,
                          TS + timedelta(seconds=rng.choice([0, 0, 1, 2]))))  # ties
    for schema, memory, link in (("oam_owner", "st_memory", "st_memory_link"),
                                 ('"OAM_OWNER"', '"ST_MEMORY"', '"ST_MEMORY_LINK"')):
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.{memory} (id varchar(128), record_type text, "
                     "thread_id text, user_id varchar(128), status text DEFAULT 'valid', "
                     "updated_at timestamptz)")
        conn.execute(f"CREATE TABLE {schema}.{link} (id varchar(128), source_id varchar(128), "
                     "source_type text DEFAULT 'fact', target_id varchar(128), target_type text "
                     "DEFAULT 'fact', relation_type text, opposite_relation_type text DEFAULT "
                     "'x', event_ts timestamptz, metadata jsonb, created_at timestamptz, "
                     "user_id varchar(128), row_seq bigint GENERATED ALWAYS AS IDENTITY)")
        for n, (memory_id, owner) in enumerate(sorted(memories, key=str)):
            conn.execute(f"INSERT INTO {schema}.{memory} (id, record_type, thread_id, user_id) "
                         "VALUES (%s, 'fact', %s, %s)", (memory_id, f"t{n % 2}", owner))
        for link_row in links:
            conn.execute(f"INSERT INTO {schema}.{link} (id, source_id, target_id, "
                         "relation_type, user_id, created_at) VALUES (%s, %s, %s, %s, %s, %s)",
                         link_row)


@pytest.mark.parametrize("trial", range(5))
def test_owner_rules_match_the_postgresql_engine(pg_url: str, trial: int) -> None:
    from oracleagentmemory.engines.identifiers import store_names
    from oracleagentmemory.engines.postgres import relations as pg_relations
    from psycopg import sql

    rng = random.Random(100 + trial)
    pg_names = store_names(memory_store_id="st", table_name_prefix=None,
                           schema_owner="oam_owner", fold="lower")
    o = objects()
    ids = [f"m{n}" for n in range(6)]
    with psycopg.connect(pg_url) as conn:
        owner_rule_tables(conn, rng)

        def run(statement: Statement | None) -> list[tuple[Any, ...]]:
            assert statement is not None
            text, binds = postgres_statement(statement)
            cur = conn.execute(text, binds)
            return cur.fetchall() if cur.description else []

        def state(schema: str, memory: str, link: str) -> tuple[list[Any], list[Any]]:
            return (conn.execute(f"SELECT id, user_id, status FROM {schema}.{memory} "
                                 "ORDER BY 1, 2 NULLS FIRST").fetchall(),
                    conn.execute(f"SELECT id FROM {schema}.{link} ORDER BY 1").fetchall())

        oracle_types = relations.group_memory_types(
            [dict(zip(("id", "record_type", "user_id"), r, strict=True))
             for r in run(relations.memory_types(o, ids))])
        pg_types = pg_relations.memory_types(conn, pg_names, ids)
        assert {k: sorted(v, key=str) for k, v in oracle_types.items()} == \
            {k: sorted(v, key=str) for k, v in pg_types.items()}
        assert all(v[-1][1] is None or all(x[1] is not None for x in v) for v in
                   oracle_types.values())  # owned first, NULLS LAST

        oracle_targets = {r[0] for r in run(relations.lifecycle_targets_from(
            o, "m.thread_id = :thread_id", {"thread_id": "t0"}))}
        pg_targets = set(pg_relations.lifecycle_targets_from(
            conn, pg_names, sql.SQL("thread_id = %s"), ["t0"]))
        assert oracle_targets == pg_targets

        for query in (RelationQuery(), RelationQuery(relation_type="refines", limit=2),
                      RelationQuery(source_id="m1", limit=3),
                      RelationQuery(older_than=None), RelationQuery(limit=3, older_than=None),
                      RelationQuery(older_than=(TS + timedelta(seconds=1), "r5")),
                      RelationQuery(limit=2, older_than=(TS, "r3"))):
            oracle_ids = [r[0] for r in run(relations.select_relations(o, query))]
            assert oracle_ids == [r["id"] for r in pg_relations.select_relations(
                conn, pg_names, query)]
        oracle_links = [r[0] for r in run(relations.links_touching(o, ["m1", "m2"]))]
        assert oracle_links == [r["id"] for r in pg_relations.links_touching(
            conn, pg_names, ["m1", "m2"])]

        deleted = rng.sample(sorted(set(conn.execute(
            "SELECT id, user_id FROM oam_owner.st_memory").fetchall()), key=str), 3)
        run(relations.delete_links_of(o, deleted))
        pg_relations.delete_links_of(conn, pg_names, deleted)
        run(relations.recompute_status(o, ids))
        pg_relations.recompute_status(conn, pg_names, ids)
        assert state('"OAM_OWNER"', '"ST_MEMORY"', '"ST_MEMORY_LINK"') == \
            state("oam_owner", "st_memory", "st_memory_link")
        conn.rollback()


def test_positive_control_a_broken_owner_rule_is_seen(pg_url: str) -> None:
    """A global memory targeted by a user's lifecycle link is INVALID; dropping the global
    clause from the Oracle statement makes it VALID, which the comparison above would see."""
    statement = relations.recompute_status(objects(), ["m1"])
    assert statement is not None
    broken = Statement(sql=statement.sql.replace(" OR m.user_id IS NULL", ""),
                       binds=statement.binds, input_sizes=statement.input_sizes)
    assert broken.sql != statement.sql
    with psycopg.connect(pg_url) as conn:
        conn.execute('CREATE SCHEMA "OAM_OWNER"')
        conn.execute('CREATE TABLE "OAM_OWNER"."ST_MEMORY" (id varchar(128), user_id '
                     "varchar(128), status text, updated_at timestamptz)")
        conn.execute('CREATE TABLE "OAM_OWNER"."ST_MEMORY_LINK" (target_id varchar(128), '
                     "relation_type text, user_id varchar(128))")
        conn.execute("""INSERT INTO "OAM_OWNER"."ST_MEMORY" VALUES ('m1', NULL, 'valid', NULL)""")
        conn.execute("""INSERT INTO "OAM_OWNER"."ST_MEMORY_LINK" VALUES ('m1', 'supersedes',
                        'ALICE')""")
        statuses = []
        for candidate in (statement, broken):
            conn.execute(*postgres_statement(candidate))
            statuses.append(conn.execute('SELECT status FROM "OAM_OWNER"."ST_MEMORY"').fetchone())
        conn.rollback()
    assert statuses == [("invalid",), ("valid",)]


def test_fetched_relation_metadata_numbers_are_python_numbers_again() -> None:
    from decimal import Decimal

    from oracleagentmemory.engines.oracle.relations import relation_row

    row = relation_row({"id": "r1", "metadata": {"n": Decimal("3"), "x": Decimal("0.5"),
                                                 "nested": [Decimal("2")], "s": "a"}})
    assert row["metadata"] == {"n": 3, "x": 0.5, "nested": [2], "s": "a"}
    assert type(row["metadata"]["n"]) is int and type(row["metadata"]["x"]) is float
    assert relation_row({"id": "r2", "metadata": None})["metadata"] is None
