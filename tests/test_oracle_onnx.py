"""In-database ONNX models on Oracle (``engines/oracle/onnx_model.py``) and ``oam-admin model``
(``admin_cli/model.py``), offline.

No Oracle database runs here. The statements are pinned by a reviewed golden file
(``tests/golden/oracle_engine/onnx/statements.sql``; rewrite after review with
``OAM_UPDATE_GOLDEN=1 python -m pytest tests/test_oracle_onnx.py``). The ``USER_MINING_MODELS``
query parses with sqlglot's Oracle dialect; the PL/SQL calls cannot be parsed by it and are
checked by strict patterns. The command's parser and runner are driven directly (``main.py``
registers them); its connection is python-oracledb's real ``connect`` to a closed port.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import oracledb
import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.admin_cli._common import Console, UsageError
from oracleagentmemory.admin_cli.model import add_model_parser, run_model
from oracleagentmemory.engines.oracle import onnx_model
from oracleagentmemory.engines.oracle.embedding import DEFAULT_ONNX_METADATA
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.engines.oracle.url import PASSWORD_ENV, connect
from oracleagentmemory.errors import (
    DatabaseError,
    DatabaseUnavailableError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NotPermittedError,
)
from sqlglot import exp

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine" / "onnx"
CLOSED_PORT_URL = "oracle+tcp://oam_owner@127.0.0.1:9/FREEPDB1"
"""Nothing listens on the discard port: a real connect is refused at once."""


def golden_statement(s: Statement) -> str:
    sizes = {k: str(v) for k, v in s.input_sizes.items()}
    return f"-- binds: {dict(s.binds)!r}\n-- input sizes: {sizes!r}\n{s.sql}"


def test_statements_match_the_reviewed_golden_file() -> None:
    statements = [onnx_model.load_statement("doc_model"),
                  onnx_model.load_statement("models.doc_model", {"function": "embedding",
                                                                 "normalization": True}),
                  onnx_model.drop_statement("doc_model"), onnx_model.list_statement()]
    assert_matches_golden(GOLDEN / "statements.sql", golden_text(
        "Oracle in-database model statements", "load, load with metadata, drop, list",
        "engines/oracle/onnx_model.py", "tests/test_oracle_onnx.py",
        [golden_statement(s) for s in statements]))


def test_the_list_query_parses_and_the_calls_have_the_documented_form() -> None:
    tree = sqlglot.parse_one(onnx_model.list_statement().sql, read="oracle")
    assert isinstance(tree, exp.Select) and not list(tree.find_all(exp.Command))
    assert {t.name.upper() for t in tree.find_all(exp.Table)} == {"USER_MINING_MODELS"}
    assert onnx_model.load_statement("m").sql == (
        "BEGIN DBMS_VECTOR.LOAD_ONNX_MODEL(model_name => :model_name, model_data => "
        ":model_data, metadata => JSON(:metadata)); END;")
    assert onnx_model.drop_statement("m").sql == (
        "BEGIN DBMS_VECTOR.DROP_ONNX_MODEL(model_name => :model_name, force => TRUE); END;")


def test_the_model_bytes_are_a_blob_bind_and_the_metadata_json() -> None:
    load = onnx_model.load_statement("doc_model")
    assert load.input_sizes == {"model_data": oracledb.DB_TYPE_BLOB}
    binds = dict(load.binds)
    assert binds["model_name"] == "DOC_MODEL"
    assert json.loads(binds["metadata"]) == DEFAULT_ONNX_METADATA == {
        "function": "embedding", "embeddingOutput": "embedding", "input": {"input": ["DATA"]}}
    custom = onnx_model.load_statement("m", {"function": "embedding", "x": [1, "a'b"]})
    assert json.loads(custom.binds["metadata"])["x"] == [1, "a'b"]
    assert "a'b" not in custom.sql


@pytest.mark.parametrize(("metadata", "error"), [
    ({"embeddingOutput": "embedding"}, InvalidArgumentError),  # no function
    ({"function": "embedding", "bad": {1, 2}}, InvalidArgumentError),  # not JSON
    ('{"function": "embedding"}', InvalidArgumentTypeError),  # text, not a mapping
])
def test_bad_metadata_is_refused(metadata: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        onnx_model.load_statement("m", metadata)


@pytest.mark.parametrize("bad", ["doc-model", "1model", "a.b.c", "select", "m" * 124, ""])
def test_model_names_are_validated_as_identifiers(bad: str) -> None:
    for build in (onnx_model.load_statement, onnx_model.drop_statement):
        with pytest.raises(InvalidArgumentError):
            build(bad)


def test_model_bytes_are_checked_before_anything_is_sent(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    assert onnx_model.MAX_MODEL_BYTES == 1024 ** 3
    assert onnx_model.check_model_bytes(memoryview(b"onnx")) == b"onnx"
    with pytest.raises(InvalidArgumentError, match="empty"):
        onnx_model.check_model_bytes(b"")
    with pytest.raises(InvalidArgumentTypeError):
        onnx_model.check_model_bytes("onnx")
    monkeypatch.setattr(onnx_model, "MAX_MODEL_BYTES", 16)
    assert onnx_model.check_model_bytes(b"x" * 16) == b"x" * 16
    with pytest.raises(InvalidArgumentError, match="at most 1 GB"):
        onnx_model.check_model_bytes(b"x" * 17)
    # a connection that would fail on first use: the refusal comes before it is touched
    with pytest.raises(InvalidArgumentError, match="at most 1 GB"):
        onnx_model.load_onnx_model(None, "doc_model", b"x" * 17)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        onnx_model.load_onnx_model(None, "doc-model", b"x")  # type: ignore[arg-type]


def ora(code: int, text: str) -> oracledb.Error:
    """A database error as the thin driver raises it for server error ``code``."""
    error = oracledb._Error(f"ORA-{code:05}: {text}", code=code, offset=0)
    exc = error.exc_type(error)
    assert isinstance(exc, oracledb.Error)
    return exc


def test_a_missing_create_mining_model_privilege_is_not_permitted() -> None:
    refused = onnx_model._failure(ora(1031, "insufficient privileges"), "loading model M")
    assert isinstance(refused, NotPermittedError)
    assert "CREATE MINING MODEL" in str(refused) and "ORA-01031" in str(refused)
    other = onnx_model._failure(ora(40284, "model does not exist"), "dropping model M")
    assert isinstance(other, DatabaseError) and not isinstance(other, NotPermittedError)


# --- oam-admin model --------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS)
    root = argparse.ArgumentParser(prog="oam-admin")
    commands = root.add_subparsers(dest="command", required=True)
    add_model_parser(commands, common)
    return root


def test_the_parser_reads_each_action() -> None:
    load = parser().parse_args(["model", "load", "--file", "m.onnx", "--name", "doc_model",
                                "--metadata", '{"function": "embedding"}', "--url", "u"])
    assert (load.model_command, load.file, load.name, load.url) == (
        "load", "m.onnx", "doc_model", "u")
    assert load.handler is run_model
    listed = parser().parse_args(["model", "list"])
    assert listed.model_command == "list" and not hasattr(listed, "name")
    drop = parser().parse_args(["model", "drop", "--name", "doc_model", "--yes"])
    assert drop.yes is True


@pytest.mark.parametrize("argv", [
    ["model"], ["model", "load", "--name", "m"], ["model", "load", "--file", "f"],
    ["model", "drop"], ["model", "rename", "--name", "m"],
])
def test_the_parser_refuses_incomplete_commands(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(argv)
    assert exited.value.code == 2


def run(argv: list[str]) -> int:
    return run_model(parser().parse_args(argv), Console(quiet=True))


@pytest.mark.parametrize("url", ["postgresql://oam@localhost/oam", "postgres://oam@h/db",
                                 "localhost:1521/FREEPDB1"])
def test_a_postgresql_url_is_refused(url: str, tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"onnx")
    for argv in (["model", "list", "--url", url],
                 ["model", "load", "--file", str(model), "--name", "m", "--url", url]):
        with pytest.raises(UsageError, match="in-database ONNX models are Oracle's"):
            run(argv)


def test_arguments_are_checked_before_connecting(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each refusal comes before the (real) connection, which would raise
    DatabaseUnavailableError on this closed port."""
    monkeypatch.setenv(PASSWORD_ENV, "unused")
    url = ["--url", CLOSED_PORT_URL]
    with pytest.raises(UsageError, match="--yes"):
        run(["model", "drop", "--name", "doc_model", *url])
    with pytest.raises(UsageError, match="model must"):
        run(["model", "drop", "--name", "doc-model", "--yes", *url])
    with pytest.raises(UsageError, match="no such file"):
        run(["model", "load", "--file", str(tmp_path / "absent.onnx"), "--name", "m", *url])
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(UsageError, match="empty"):
        run(["model", "load", "--file", str(empty), "--name", "m", *url])
    with pytest.raises(UsageError, match="not JSON"):
        run(["model", "load", "--file", str(empty), "--name", "m", "--metadata", "{", *url])
    with pytest.raises(UsageError, match="JSON object"):
        run(["model", "load", "--file", str(empty), "--name", "m", "--metadata", "[1]", *url])
    huge = tmp_path / "huge.onnx"
    with huge.open("wb") as f:  # a sparse file: refused by its size, never read
        f.truncate(onnx_model.MAX_MODEL_BYTES + 1)
    with pytest.raises(UsageError, match="at most 1 GB"):
        run(["model", "load", "--file", str(huge), "--name", "m", *url])
    # positive control: valid arguments reach the connection
    with pytest.raises(DatabaseUnavailableError):
        run(["model", "drop", "--name", "doc_model", "--yes", *url])


def test_a_closed_port_is_database_unavailable(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "unused")
    with pytest.raises(DatabaseUnavailableError):
        connect(CLOSED_PORT_URL)
    model = tmp_path / "m.onnx"
    model.write_bytes(b"onnx")
    for argv in (["model", "list"], ["model", "load", "--file", str(model), "--name", "m"]):
        with pytest.raises(DatabaseUnavailableError):
            run([*argv, "--url", CLOSED_PORT_URL])
