"""The Oracle engine's managed-table DDL (``engines/oracle/ddl.py``), without an Oracle database.

Every statement a store's creation emits is pinned by a reviewed golden file under
``tests/golden/oracle_engine/`` (default options; ``SearchIndexSyncMode`` manual; another
dimension). A change to the rendered text fails here until the golden file is reviewed and
rewritten with::

    OAM_UPDATE_GOLDEN=1 python -m pytest tests/test_oracle_ddl.py

Each statement is parsed with sqlglot's Oracle dialect where sqlglot can parse it, and must
become a real expression (``exp.Create`` / ``exp.Alter``), never an unparsed ``exp.Command``.
sqlglot 30 lacks two pieces of Oracle syntax the DDL uses, which the parse check adapts (and a
strict pattern checks in the original text instead): a schema-qualified index name
(``CREATE INDEX "OWNER"."IX" ON ...``, parsed with the index name's owner removed) and the
vector format (``VECTOR(384, FLOAT32)``, parsed as ``VECTOR(384)``). It cannot parse at all the
statement kinds listed in :data:`UNPARSEABLE` (the HNSW vector index, the Oracle Text CONTEXT
index): those are checked by a strict pattern of their documented grammar.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.engines.identifiers import MANAGED_TABLES
from oracleagentmemory.engines.interfaces import SchemaOptions
from oracleagentmemory.engines.oracle import ddl
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from oracleagentmemory.errors import InvalidArgumentError
from sqlglot import exp
from sqlglot.errors import SqlglotError

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine"


def objects(store: str | None = "st") -> OracleObjects:
    return OracleObjects.of(derive_store_names(
        memory_store_id=store, table_name_prefix=None, schema_owner="oam_owner"))


def options(dim: int | None = 384, mode: str = "vector", sync: str = "on_commit"
            ) -> SchemaOptions:
    return SchemaOptions(vector_dim=dim, search_mode=mode, search_index_sync=sync,
                         default_ttl_days=None, max_ttl_days=None)


def store_ddl(opts: SchemaOptions) -> list[str]:
    o = objects()
    return [ddl.registry_table(o), *ddl.create_store(o, opts)]


SCENARIOS: dict[str, Callable[[], list[str]]] = {
    "default_options": lambda: store_ddl(options()),
    "manual_sync_keyword": lambda: store_ddl(options(mode="keyword", sync="manual")),
    "dimension_1024": lambda: store_ddl(options(dim=1024)),
}


# --- golden files ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_rendered_ddl_matches_the_reviewed_golden_file(name: str) -> None:
    assert_matches_golden(GOLDEN / f"{name}.sql", golden_text(
        "Oracle managed-store DDL", name, "oracleagentmemory.engines.oracle.ddl",
        "tests/test_oracle_ddl.py", SCENARIOS[name]()))


def test_rendering_is_deterministic_and_pure() -> None:
    for render in SCENARIOS.values():
        assert render() == render()
        assert all(isinstance(s, str) and s for s in render())


# --- parsing (sqlglot, Oracle dialect) and the grammar of what it cannot parse ----------------
IDENT = r'"[A-Z][A-Z0-9_$#]{0,127}"'
QUALIFIED = rf"{IDENT}\.{IDENT}"
VECTOR_INDEX = re.compile(
    rf"CREATE VECTOR INDEX {QUALIFIED} ON {QUALIFIED} \(embedding\) ORGANIZATION INMEMORY "
    r"NEIGHBOR GRAPH DISTANCE COSINE WITH TARGET ACCURACY (?:[1-9][0-9]?|100) "
    r"PARAMETERS \(TYPE HNSW, NEIGHBORS (?P<m>[0-9]+), EFCONSTRUCTION (?P<ef>[0-9]+)\)")
TEXT_INDEX = re.compile(
    rf"CREATE INDEX {QUALIFIED} ON {QUALIFIED} \(chunk_text\) INDEXTYPE IS CTXSYS\.CONTEXT "
    r"PARAMETERS \('STOPLIST CTXSYS\.EMPTY_STOPLIST SYNC \((?:ON COMMIT|MANUAL)\)'\)")
UNPARSEABLE = {"CREATE VECTOR INDEX": VECTOR_INDEX, "CONTEXT index": TEXT_INDEX}
"""Statement kinds sqlglot 30 cannot parse (it falls back to ``exp.Command``), each with the
strict pattern that checks it instead."""

_QUALIFIED_INDEX_NAME = re.compile(rf"^(CREATE (?:UNIQUE )?INDEX (?:IF NOT EXISTS )?){IDENT}\.")
_VECTOR_FORMAT = re.compile(r"VECTOR\(([0-9]+), FLOAT32\)")


def kind_of(statement: str) -> str | None:
    """The :data:`UNPARSEABLE` kind of ``statement``, or ``None`` when sqlglot parses it."""
    if statement.startswith("CREATE VECTOR INDEX"):
        return "CREATE VECTOR INDEX"
    if "INDEXTYPE IS CTXSYS.CONTEXT" in statement:
        return "CONTEXT index"
    return None


def parse(statement: str) -> exp.Expr:
    """Parse with sqlglot, adapting only the two pieces of syntax it lacks (module docstring);
    raise if the statement is malformed or sqlglot leaves it unparsed."""
    if statement.startswith("CREATE") and " INDEX " in statement:
        assert _QUALIFIED_INDEX_NAME.match(statement), f"index name not qualified: {statement}"
    adapted = _QUALIFIED_INDEX_NAME.sub(r"\1", statement)
    adapted = _VECTOR_FORMAT.sub(r"VECTOR(\1)", adapted)
    tree = sqlglot.parse_one(adapted, read="oracle")
    assert not isinstance(tree, exp.Command), f"sqlglot left it unparsed: {statement}"
    return tree


def all_statements() -> list[str]:
    o = objects()
    extra = [*ddl.add_embedding_column(o, 16), ddl.text_index(o, "manual")]
    return [s for render in SCENARIOS.values() for s in render()] + extra


def test_every_plain_statement_parses_into_a_real_expression() -> None:
    kinds: dict[str, int] = {}
    for statement in all_statements():
        assert ";" not in statement and "--" not in statement, statement
        if (kind := kind_of(statement)) is not None:
            assert UNPARSEABLE[kind].fullmatch(statement), statement
            kinds[kind] = kinds.get(kind, 0) + 1
            continue
        tree = parse(statement)
        if statement.startswith("ALTER TABLE"):
            assert isinstance(tree, exp.Alter), statement
        else:
            assert isinstance(tree, exp.Create), statement
            assert tree.args["kind"] in ("TABLE", "INDEX"), statement
        kinds[str(tree.key)] = kinds.get(str(tree.key), 0) + 1
    assert kinds["create"] > 100 and kinds["alter"] == 1
    assert kinds["CREATE VECTOR INDEX"] == 4 and kinds["CONTEXT index"] == 4


def test_sqlglot_still_cannot_parse_the_listed_kinds() -> None:
    """If a sqlglot upgrade learns them, parse them instead of matching a pattern."""
    o = objects()
    for statement in (ddl.vector_index(o), ddl.text_index(o, "on_commit")):
        adapted = _QUALIFIED_INDEX_NAME.sub(r"\1", statement)
        assert isinstance(sqlglot.parse_one(adapted, read="oracle"), exp.Command)


@pytest.mark.parametrize("broken", [
    'CREATE TABLE "O"."T" (a VARCHAR2(16) CHECK (a IN (\'x\')',
    'CREATE TABLE "O"."T" (a NUMBER(19) DEFAULT)',
    'CREATE INDEX IF NOT EXISTS "O"."X" ON "O"."T" (a',
    'CREATE TABLE "O"."T" (a JSON) DROP',
])
def test_positive_control_a_broken_statement_is_caught(broken: str) -> None:
    with pytest.raises((SqlglotError, AssertionError)):
        parse(broken)


def test_positive_control_the_patterns_are_strict() -> None:
    o = objects()
    good_vector, good_text = ddl.vector_index(o), ddl.text_index(o, "manual")
    assert VECTOR_INDEX.fullmatch(good_vector) and TEXT_INDEX.fullmatch(good_text)
    for bad in (good_vector.replace("COSINE", "EUCLIDEAN"),
                good_vector.replace('"OAM_OWNER".', "", 1),
                good_vector + " ONLINE",
                good_text.replace("SYNC (MANUAL)", "SYNC (EVERY 1)"),
                good_text.replace("'STOPLIST", "'STOPLIST'); DROP TABLE x; --")):
        assert not (VECTOR_INDEX.fullmatch(bad) or TEXT_INDEX.fullmatch(bad)), bad


# --- the same logical columns and keys as PostgreSQL -------------------------------------------
TIMES = {"event_ts", "created_at", "updated_at", "row_seq"}
SCOPE = {"thread_id", "user_id", "agent_id"}
POSTGRES_COLUMNS: dict[str, set[str]] = {
    "thread": {"id", "user_id", "agent_id", "metadata", "runtime_config", "runtime_state",
               "next_seq_no"} | TIMES,
    "thread_summary": {"id", "content", "covered_through_seq_no", "metadata", "expires_at",
                       "status"} | SCOPE | TIMES,
    "actor_profile": {"actor_type", "actor_id", "content", "metadata"} | TIMES,
    "message": {"id", "role", "content", "content_parts", "seq_no", "metadata", "expires_at",
                "status"} | SCOPE | TIMES,
    "document": {"id", "message_id", "mime_type", "description", "bytes", "metadata",
                 "expires_at", "status"} | SCOPE | TIMES,
    "memory": {"id", "record_type", "content", "metadata", "expires_at", "status"}
    | SCOPE | TIMES,
    "memory_link": {"id", "source_id", "source_type", "target_id", "target_type",
                    "relation_type", "opposite_relation_type", "metadata", "user_id"} | TIMES,
    "record_chunks": {"id", "record_type", "record_id", "chunk_no", "chunk_text", "embedding",
                      "created_at"} | SCOPE,
}
"""The PostgreSQL engine's columns at its latest version (``engines/postgres/ddl.py``), less
``search_tsv`` (a ``tsvector``; Oracle Text indexes ``chunk_text`` itself)."""


def tables_by_name(statements: list[str]) -> dict[str, exp.Create]:
    found: dict[str, exp.Create] = {}
    for statement in statements:
        if statement.startswith("CREATE TABLE"):
            tree = parse(statement)
            assert isinstance(tree, exp.Create)
            found[tree.this.this.name] = tree
    return found


def column_types(tree: exp.Create) -> dict[str, str]:
    return {c.name: c.args["kind"].sql("oracle") for c in tree.find_all(exp.ColumnDef)}


def test_the_tables_have_the_postgresql_columns() -> None:
    tables = tables_by_name(store_ddl(options()))
    assert set(tables) == {f"ST_{t.upper()}" for t in MANAGED_TABLES} | {
        "AGENT_MEMORY_STORE_REGISTRY"}
    for logical, expected in POSTGRES_COLUMNS.items():
        tree = tables[f"ST_{logical.upper()}"]
        assert set(column_types(tree)) == expected, logical
        table = tree.find(exp.Table)
        assert table is not None and table.db == "OAM_OWNER", logical


def test_column_types() -> None:
    tables = tables_by_name(store_ddl(options()))
    for logical in POSTGRES_COLUMNS:
        types = column_types(tables[f"ST_{logical.upper()}"])
        for column, kind in types.items():
            if column in ("metadata", "runtime_config", "runtime_state", "content_parts") or (
                    column == "content" and logical == "thread_summary"):
                assert kind == "JSON", (logical, column)
            if column.endswith("_at") or column == "event_ts":
                assert kind == "TIMESTAMP WITH TIME ZONE", (logical, column)
        if "row_seq" in types:
            assert "row_seq NUMBER(19) GENERATED ALWAYS AS IDENTITY" in tables[
                f"ST_{logical.upper()}"].sql("oracle")
    chunks = [s for s in store_ddl(options(dim=1024)) if '"ST_RECORD_CHUNKS" (' in s]
    assert "embedding VECTOR(1024, FLOAT32)" in chunks[0]
    assert "id NUMBER(19) GENERATED ALWAYS AS IDENTITY PRIMARY KEY" in chunks[0]


def test_keys_and_indexes_mirror_postgresql() -> None:
    statements = store_ddl(options())
    unique = {s.split('"."')[1].split('"')[0]: s for s in statements
              if s.startswith("CREATE UNIQUE INDEX")}
    assert set(unique) == {f"ST_{t.upper()}_OWNER_ID_UQ" for t in ddl.OWNED_TABLES} | {
        "ST_MEMORY_LINK_OWNER_PAIR_UQ", "ST_MESSAGE_OWNER_SEQ_UQ"}
    assert unique["ST_MEMORY_LINK_OWNER_PAIR_UQ"].endswith(
        "(user_id, LEAST(source_id, target_id), GREATEST(source_id, target_id))")
    assert unique["ST_MESSAGE_OWNER_SEQ_UQ"].endswith("(user_id, thread_id, seq_no)")
    assert "PRIMARY KEY (actor_type, actor_id)" in next(
        s for s in statements if '"ST_ACTOR_PROFILE" (' in s)
    assert not any("REFERENCES" in s for s in statements), "PostgreSQL dropped its foreign keys"
    index_columns = [s[s.index(" ON "):] for s in statements if s.startswith("CREATE")
                     and " INDEX " in s]
    assert len(index_columns) == len(set(index_columns)), "Oracle refuses a repeated column list"


def test_text_index_follows_the_search_mode_and_sync() -> None:
    def text_indexes(opts: SchemaOptions) -> list[str]:
        return [s for s in store_ddl(opts) if "CTXSYS.CONTEXT" in s]

    assert "SYNC (ON COMMIT)" in text_indexes(options())[0]
    assert "SYNC (MANUAL)" in text_indexes(options(mode="keyword", sync="manual"))[0]
    assert text_indexes(options(mode="hybrid", sync="auto")) == []
    with pytest.raises(InvalidArgumentError):
        ddl.text_index(objects(), "auto")
    with pytest.raises(InvalidArgumentError):
        store_ddl(options(mode="keyword", sync="every_minute"))


def test_no_vectors_means_no_embedding_and_no_vector_index() -> None:
    statements = store_ddl(options(dim=None, mode="keyword"))
    assert not any("VECTOR" in s for s in statements)
    added = ddl.add_embedding_column(objects(), 8)
    assert added[0] == ('ALTER TABLE "OAM_OWNER"."ST_RECORD_CHUNKS" ADD '
                        "(embedding VECTOR(8, FLOAT32))")
    assert VECTOR_INDEX.fullmatch(added[1])


@pytest.mark.parametrize("dim", [0, -1, 65536, True, 3.0])
def test_bad_dimensions_are_refused(dim: object) -> None:
    with pytest.raises(InvalidArgumentError):
        ddl.vector_type(dim)  # type: ignore[arg-type]


def test_hnsw_parameters_are_in_oracles_ranges() -> None:
    match = VECTOR_INDEX.fullmatch(ddl.vector_index(objects()))
    assert match is not None
    assert 2 <= int(match["m"]) <= 2048 and 1 <= int(match["ef"]) <= 65535
