"""In-database embeddings: the Oracle statements (``engines/oracle/embedding.py``), the
engine-neutral hook (``engines/in_database.py``) and ``OracleDBEmbedder``
(``core/embedders/oracle_db.py``).

No Oracle database runs here. The statements are pinned by reviewed golden files under
``tests/golden/oracle_engine/embedding/`` (rewrite with ``OAM_UPDATE_GOLDEN=1`` after review).
sqlglot 30 cannot parse ``VECTOR_EMBEDDING(model USING expr AS data)``: a strict pattern checks
that call, and the statement around it is parsed with the call reduced to
``VECTOR_EMBEDDING(expr)``. ``DBMS_VECTOR.LOAD_ONNX_MODEL`` is PL/SQL: checked by pattern.

The embedder is tested for real where no Oracle is needed: its argument validation, its refusal
of a PostgreSQL connection (the embedded server) and of other objects, and, with a real
``oracledb`` pool whose DSN nothing listens on (thin mode opens no connection until one is
acquired), its construction, the empty batch that needs no round trip, and the typed error
when the database cannot be reached.
"""

from __future__ import annotations

import array
import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import oracledb
import psycopg
import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.core.embedders import OracleDBEmbedder
from oracleagentmemory.engines.in_database import in_database_embedding
from oracleagentmemory.engines.oracle import embedding
from oracleagentmemory.errors import (
    DatabaseUnavailableError,
    EmbeddingServiceError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from psycopg_pool import ConnectionPool
from sqlglot import exp

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine" / "embedding"


def scenarios() -> dict[str, list[str]]:
    return {
        "single": [embedding.single_embedding_sql("doc_model")],
        "batch": [embedding.batch_embedding_sql("doc_model"),
                  embedding.batch_embedding_sql("models.doc_model")],
        "input_name": [embedding.single_embedding_sql("doc_model", "text"),
                       embedding.batch_embedding_sql("doc_model", "text")],
        "provider": [embedding.single_provider_embedding_sql(),
                     embedding.batch_provider_embedding_sql()],
        "load_onnx_model": [embedding.load_onnx_model("dm_dump", "all_MiniLM_L12_v2.onnx",
                                                      "doc_model").sql],
    }


@pytest.mark.parametrize("name", sorted(scenarios()))
def test_statements_match_the_reviewed_golden_file(name: str) -> None:
    assert_matches_golden(GOLDEN / f"{name}.sql", golden_text(
        "Oracle in-database embedding statements", name,
        "oracleagentmemory.engines.oracle.embedding", "tests/test_oracle_embedding.py",
        scenarios()[name]))


# --- grammar ---------------------------------------------------------------------------------
IDENT = r'"[A-Z][A-Z0-9_$#]{0,127}"'
CALL = re.compile(rf"VECTOR_EMBEDDING\((?P<model>(?:{IDENT}\.)?{IDENT}) USING "
                  r"(?P<expr>:text|j\.txt) AS (?P<input>[A-Z][A-Z0-9_$#]{0,127})\)")
LOAD = re.compile(r"BEGIN DBMS_VECTOR\.LOAD_ONNX_MODEL\(directory => :directory, file_name => "
                  r":file_name, model_name => :model_name, metadata => JSON\(:metadata\)\); END;")


def parse(statement: str) -> exp.Expr:
    """Check the VECTOR_EMBEDDING call by pattern, then parse the rest with sqlglot."""
    calls = CALL.findall(statement)
    assert len(calls) == 1, statement
    adapted = CALL.sub(lambda m: f"VECTOR_EMBEDDING({m['expr']})", statement)
    tree = sqlglot.parse_one(adapted, read="oracle")
    assert not isinstance(tree, exp.Command), statement
    return tree


def test_the_queries_parse_and_keep_the_texts_order() -> None:
    single = parse(embedding.single_embedding_sql("doc_model"))
    table = single.find(exp.Table)
    assert isinstance(single, exp.Select) and table is not None and table.name.lower() == "dual"
    batch = parse(embedding.batch_embedding_sql("doc_model"))
    assert isinstance(batch, exp.Select)
    assert "n FOR ORDINALITY" in batch.sql("oracle") and batch.args["order"].sql("oracle") == \
        "ORDER BY j.n"


def test_the_provider_queries_parse_and_bind_their_parameters() -> None:
    for sql in (embedding.single_provider_embedding_sql(),
                embedding.batch_provider_embedding_sql()):
        tree = sqlglot.parse_one(sql, read="oracle")
        assert isinstance(tree, exp.Select), sql
        assert "DBMS_VECTOR_CHAIN.UTL_TO_EMBEDDING(" in sql and "JSON(:params)" in sql
    batch = sqlglot.parse_one(embedding.batch_provider_embedding_sql(), read="oracle")
    assert batch.args["order"].sql("oracle") == "ORDER BY j.n"


def test_sqlglot_still_cannot_parse_the_model_call() -> None:
    """If a sqlglot upgrade learns ``USING ... AS data``, parse it instead of a pattern."""
    with pytest.raises(sqlglot.errors.ParseError):
        sqlglot.parse_one(embedding.single_embedding_sql("doc_model"), read="oracle")


def test_positive_control_the_patterns_are_strict() -> None:
    good = embedding.single_embedding_sql("doc_model")
    assert CALL.search(good)
    for bad in (good.replace('"DOC_MODEL"', "DOC_MODEL"), good.replace(":text", "'x'"),
                good.replace("AS DATA", 'AS "DATA"'), good.replace("AS DATA", "AS data")):
        assert not CALL.search(bad), bad
    assert LOAD.fullmatch(embedding.load_onnx_model("d", "m.onnx", "m").sql)


# --- names and binds ----------------------------------------------------------------------------
@pytest.mark.parametrize(("given", "name", "sql"), [
    ("doc_model", "DOC_MODEL", '"DOC_MODEL"'),
    ("Owner.Doc_Model", "OWNER.DOC_MODEL", '"OWNER"."DOC_MODEL"'),
    ("M$1#", "M$1#", '"M$1#"'),
])
def test_model_names_are_validated_and_quoted(given: str, name: str, sql: str) -> None:
    assert embedding.model_name(given) == name
    assert embedding.model_reference(given) == sql


@pytest.mark.parametrize("bad", ["", "1model", "doc-model", 'doc"model', "a.b.c", "a..b",
                                 "doc model", "x" * 124, "user", "doc_model; DROP TABLE t"])
def test_bad_model_names_are_refused(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        embedding.model_name(bad)


def test_texts_are_bound() -> None:
    one = embedding.embedding_statement("doc_model", ["it's"])
    assert one.binds == {"text": "it's"} and one.input_sizes == {}
    many = embedding.embedding_statement("doc_model", ["a", "b'c"])
    assert many.binds == {"texts": ["a", "b'c"]}
    assert many.input_sizes == {"texts": oracledb.DB_TYPE_JSON}
    assert "b'c" not in many.sql and ":texts" in many.sql


def test_load_onnx_model_binds_every_value() -> None:
    statement = embedding.load_onnx_model("dm_dump", "my model.onnx", "owner.doc_model",
                                          {"function": "embedding"})
    assert statement.binds == {"directory": "DM_DUMP", "file_name": "my model.onnx",
                               "model_name": "OWNER.DOC_MODEL",
                               "metadata": '{"function": "embedding"}'}
    default = embedding.load_onnx_model("dm_dump", "m.onnx", "doc_model").binds
    assert json.loads(default["metadata"]) == {
        "function": "embedding", "embeddingOutput": "embedding", "input": {"input": ["DATA"]}}
    for bad_file in ("", "../m.onnx", "a/m.onnx", "a\\m.onnx", ".."):
        with pytest.raises(InvalidArgumentError):
            embedding.load_onnx_model("dm_dump", bad_file, "doc_model")
    with pytest.raises(InvalidArgumentError):
        embedding.load_onnx_model("dm-dump", "m.onnx", "doc_model")


# --- fetched vectors ---------------------------------------------------------------------------
def test_fetched_vectors_become_one_float32_array() -> None:
    rows = [(1, array.array("f", [1.0, 0.0])), (2, array.array("d", [0.5, 0.25]))]
    vectors = embedding.vectors_from_rows(rows, 2, 2, "DOC_MODEL")
    assert vectors.dtype == np.float32 and vectors.tolist() == [[1.0, 0.0], [0.5, 0.25]]
    single = embedding.vectors_from_rows([(array.array("f", [3.0, 4.0]),)], 1, 2, "M")
    assert single.shape == (1, 2)


@pytest.mark.parametrize(("rows", "match"), [
    ([(1, array.array("f", [1.0, 0.0]))], "1 embeddings for 2 texts"),
    ([(1, None), (2, array.array("f", [1.0, 0.0]))], "no embedding for text 0"),
    ([(1, array.array("f", [1.0])), (2, array.array("f", [1.0]))], "embedding_dimension is 2"),
    ([(1, array.array("f", [1.0, float("nan")])), (2, array.array("f", [1.0, 0.0]))],
     "non-finite"),
])
def test_wrong_answers_are_embedding_service_errors(rows: list[tuple[object, ...]],
                                                    match: str) -> None:
    with pytest.raises(EmbeddingServiceError, match=match):
        embedding.vectors_from_rows(rows, 2, 2, "DOC_MODEL")


# --- OracleDBEmbedder ----------------------------------------------------------------------------
@pytest.fixture()
def unreachable_pool() -> Iterator[oracledb.ConnectionPool]:
    """A real python-oracledb pool (thin mode, ``min=0``: no connection yet) whose DSN nothing
    listens on."""
    pool = oracledb.create_pool(user="oam", password="unused", dsn="127.0.0.1:9/NOSUCH",
                                min=0, max=1, increment=1, tcp_connect_timeout=2)
    yield pool
    pool.close(force=True)


def test_the_embedder_takes_an_oracle_pool(unreachable_pool: oracledb.ConnectionPool) -> None:
    embedder = OracleDBEmbedder(connection=unreachable_pool, model="doc_model",
                                embedding_dimension=768)
    assert embedder.model == "DOC_MODEL" and embedder.embedding_dimension == 768
    assert embedder.max_input_tokens == 512
    empty = embedder.embed([])
    assert empty.shape == (0, 768) and empty.dtype == np.float32
    assert asyncio.run(embedder.embed_async([])).shape == (0, 768)
    with pytest.raises(DatabaseUnavailableError):
        embedder.embed(["hello"])
    with pytest.raises(InvalidArgumentTypeError):
        embedder.embed("hello")
    with pytest.raises(InvalidArgumentTypeError):
        embedder.embed(["ok", 3])  # type: ignore[list-item]


def test_the_engine_validates_the_model_name(unreachable_pool: oracledb.ConnectionPool) -> None:
    with pytest.raises(InvalidArgumentError):
        OracleDBEmbedder(connection=unreachable_pool, model="doc-model", embedding_dimension=8)
    named = OracleDBEmbedder(unreachable_pool, "models.doc_model", "DATA", 8, 256)
    assert named.model == "MODELS.DOC_MODEL" and named.max_input_tokens == 256


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"model": 7}, InvalidArgumentTypeError),
    ({"model": "  "}, InvalidArgumentError),
    ({"embedding_dimension": 0}, InvalidArgumentError),
    ({"embedding_dimension": 65536}, InvalidArgumentError),
    ({"embedding_dimension": "768"}, InvalidArgumentTypeError),
    ({"embedding_dimension": True}, InvalidArgumentTypeError),
    ({"batch_size": 0}, InvalidArgumentError),
    ({"max_input_tokens": 0}, InvalidArgumentError),
])
def test_arguments_are_validated_with_typed_errors(pg_url: str, kwargs: dict[str, object],
                                                   error: type[Exception]) -> None:
    arguments: dict[str, object] = {"model": "doc_model", "embedding_dimension": 768, **kwargs}
    with psycopg.connect(pg_url) as conn, pytest.raises(error) as raised:
        OracleDBEmbedder(connection=conn, **arguments)  # type: ignore[arg-type]
    assert getattr(raised.value, "argument", None) == next(iter(kwargs))


def test_a_postgresql_connection_is_refused(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        with pytest.raises(InvalidArgumentTypeError, match="postgresql has no in-database") as e:
            OracleDBEmbedder(connection=conn, model="doc_model", embedding_dimension=768)
        assert e.value.argument == "connection"
        assert conn.execute("SELECT 1").fetchone() == (1,)  # left usable
    with ConnectionPool(pg_url, min_size=1, open=True) as pool:
        with pytest.raises(InvalidArgumentTypeError, match="postgresql has no in-database"):
            OracleDBEmbedder(connection=pool, model="doc_model", embedding_dimension=768)
        with pytest.raises(InvalidArgumentTypeError, match="postgresql"):
            in_database_embedding(pool, model="doc_model", embedding_dimension=8, batch_size=1)


@pytest.mark.parametrize("source", ["postgresql://localhost/db", "oracle://host/svc", object(),
                                    None])
def test_other_sources_are_refused(source: object) -> None:
    with pytest.raises(InvalidArgumentTypeError, match="connection"):
        OracleDBEmbedder(connection=source, model="doc_model", embedding_dimension=8)


def test_core_loads_the_oracle_module_only_when_used() -> None:
    code = ("import sys, oracleagentmemory.core.embedders; "
            "print('oracledb' in sys.modules, "
            "'oracleagentmemory.engines.oracle.embedding' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.split() == ["False", "False"]
