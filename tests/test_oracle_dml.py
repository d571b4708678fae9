"""The Oracle engine's record DML builders (``engines/oracle/inserts.py``, ``reads.py``,
``updates.py``, ``deletes.py``, ``record_sql.py``), without an Oracle database.

Every statement the builders emit for a set of representative plans is pinned, with its bind
values, input sizes and out-binds, by a reviewed golden file under
``tests/golden/oracle_engine/dml/``; rewrite them after review with::

    OAM_UPDATE_GOLDEN=1 python -m pytest tests/test_oracle_dml.py

Each statement is parsed with sqlglot's Oracle dialect and must become the expected real
expression (``exp.Insert``, ``exp.Select``, ``exp.Update``, ``exp.Delete``), never an
``exp.Command``. sqlglot 30 cannot parse a ``RETURNING`` clause with more than one ``INTO``
target (``RETURNING a, b INTO :x, :y``): the parse check removes the ``INTO`` part, parses the
rest, and checks the ``INTO`` targets by a strict pattern against the statement's declared
out-binds (as many targets as returned expressions). Every ``:name`` in a statement is bound
(or an out-bind) and no bind is unused or an Oracle reserved word; JSON, timestamp and vector
binds carry their input sizes. Decoding of fetched rows is tested with the Python values
python-oracledb returns (``decimal.Decimal`` inside JSON, naive UTC datetimes, ``None`` for an
empty string).
"""

from __future__ import annotations

import array
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import oracledb
import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.engines.interfaces import (
    UNSET,
    ChunkRow,
    Expiry,
    ExpiryAnchor,
    ImageBody,
    MessageQuery,
    RecordQuery,
    RowPlan,
    UpdatePlan,
)
from oracleagentmemory.engines.oracle import (
    deletes,
    inserts,
    reads,
    record_sql,
    relations,
    updates,
)
from oracleagentmemory.engines.oracle.bindset import BindSet
from oracleagentmemory.engines.oracle.names import (
    RESERVED_WORDS,
    OracleObjects,
    derive_store_names,
)
from oracleagentmemory.engines.oracle.record_sql import Query
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import DuplicateRecordError, InvalidArgumentError
from oracleagentmemory.filtertree import And
from sqlglot import exp

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine" / "dml"
T0 = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=timezone.utc)
CET = timezone(timedelta(hours=1))


def objects() -> OracleObjects:
    return OracleObjects.of(derive_store_names(
        memory_store_id="st", table_name_prefix=None, schema_owner="oam_owner"))


def vector(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


Item = Statement | Query


def statement_of(item: Item) -> Statement:
    return item.statement if isinstance(item, Query) else item


# --- scenarios ---------------------------------------------------------------------------------
def message_with_image() -> list[RowPlan]:
    image = RowPlan("image", "part-1", ImageBody("image/png", b"\x89PNG", "a cat", "msg-1"),
                    thread_id="t1", user_id="alice", agent_id="a1",
                    expiry=Expiry(timedelta(days=2), ExpiryAnchor.RECORD_CREATION),
                    chunks=[ChunkRow("a cat", None)])
    message = RowPlan("message", "msg-1", ("hello", [{"type": "text", "text": "hello"},
                                                     {"type": "image", "id": "part-1"}]),
                      thread_id="t1", user_id="alice", agent_id="a1", role="user",
                      event_ts=T0.astimezone(CET),
                      expiry=Expiry(timedelta(days=2), ExpiryAnchor.RECORD_CREATION),
                      chunks=[ChunkRow("hello", vector(0.5, -1, 2))], attachments=[image])
    message.seq_no = 7
    return inserts.with_attachments([message])


def insert_items() -> list[tuple[str, Item]]:
    o = objects()
    rows = [
        RowPlan("fact", "m1", "likes tea", thread_id="t1", user_id="alice",
                metadata={"topic": "drinks", "n": 1},
                expiry=Expiry(timedelta(days=30), T0),
                chunks=[ChunkRow("likes tea", vector(1, 0, 0)), ChunkRow("tea", None)]),
        RowPlan("thread", "t1", None, user_id="alice", agent_id="a1", metadata={"k": [1, 2]}),
        RowPlan("user_profile", "alice", "Alice, a tea person",
                chunks=[ChunkRow("Alice", None)]),
        RowPlan("thread_summary", "s1", {"text": "so far"}, thread_id="t1", user_id="alice"),
        RowPlan("image", "img-1", ImageBody("image/jpeg", b"\xff\xd8", None), user_id="alice"),
    ]
    items: list[tuple[str, Item]] = [
        (f"insert_batches: {b.sql.split()[2]}", b) for b in inserts.insert_batches(o, rows)]
    items += [(f"insert_batches (message with an image part): {b.sql.split()[2]}", b)
              for b in inserts.insert_batches(o, message_with_image())]
    items += [
        ("next_seq_statement", inserts.next_seq_statement(o, "t1", "alice", 3)),
        ("next_seq_statement, global owner", inserts.next_seq_statement(o, "t1", None, 1)),
        ("stored_seq_statement", inserts.stored_seq_statement(o, "t1", "alice")),
    ]
    return items


def read_items() -> list[tuple[str, Item]]:
    o = objects()
    bs = BindSet()
    compiled = bs.statement(f"JSON_EXISTS(metadata, '$?(@.topic == $v)' PASSING "
                            f":{bs.add_json('mf', 'drinks')} AS \"v\")")
    images = reads.select_message_images(o, [("msg-1", "alice"), ("msg-2", None)])
    assert images is not None
    return [
        ("select_records: facts of one user, any thread",
         reads.select_records(o, RecordQuery("fact", user_id="alice"))),
        ("select_records: newest 5 memories of a thread, global, no metadata",
         reads.select_records(o, RecordQuery("memory", thread_id="t1", user_id=None,
                                             metadata_filter=None, limit=5))),
        ("select_records: one message by id, compiled metadata filter",
         reads.select_records(o, RecordQuery("message", record_id="msg-1",
                                             metadata_filter=And(()) , agent_id="a1"),
                              compiled)),
        ("select_records: a user profile", reads.select_records(
            o, RecordQuery("user_profile", record_id="alice"))),
        ("select_records: threads of a user (no thread_id scope)", reads.select_records(
            o, RecordQuery("thread", thread_id="ignored", user_id="alice"))),
        ("select_records: images with bytes", reads.select_records(
            o, RecordQuery("image", user_id="alice", include_bytes=True))),
        ("select_records: thread summaries", reads.select_records(
            o, RecordQuery("thread_summary", thread_id="t1"))),
        ("select_records: keyset page of facts, from the newest", reads.select_records(
            o, RecordQuery("fact", user_id="alice", limit=3, older_than=None))),
        ("select_records: keyset page of threads, older than a position", reads.select_records(
            o, RecordQuery("thread", user_id="alice", limit=3,
                           older_than=(datetime(2026, 1, 2, 3, 4, 5, 6, timezone.utc), "t9")))),
        ("select_thread_messages: last 10 in a range", reads.select_thread_messages(
            o, MessageQuery("t1", last_n=10, range_start_seq_no=2, range_end_seq_no=40))),
        ("select_thread_messages: all", reads.select_thread_messages(o, MessageQuery("t1"))),
        ("select_message_images", images),
        ("count_chunks", reads.count_chunks(o, "fact", "m1")),
        ("record_exists: a memory", reads.record_exists(o, "fact", "m1")),
        ("record_exists: a standalone image", reads.record_exists(o, "image", "img-1")),
        ("select_event_ts: an agent profile", reads.select_event_ts(o, "agent_profile", "a1")),
    ]


def update_items() -> list[tuple[str, Item]]:
    o = objects()
    scope: updates.Scope = ("t1", "alice", "a1")
    vectors = updates.vector_batch(o, [11, 12], [vector(1, 2, 3), None])
    assert vectors is not None
    return [
        ("update_statement: nothing but updated_at",
         updates.update_statement(o, UpdatePlan("fact", "m1"))),
        ("update_statement: memory content, metadata, event time, status, expiry from creation",
         updates.update_statement(o, UpdatePlan(
             "fact", "m1", content="likes green tea", metadata={"topic": "tea"},
             event_ts=T0, status="invalid",
             expiry=Expiry(timedelta(days=1), ExpiryAnchor.RECORD_CREATION)))),
        ("update_statement: message content, expiry from a timestamp",
         updates.update_statement(o, UpdatePlan(
             "message", "msg-1", content=("hi", None), expiry=Expiry(timedelta(hours=1), T0)))),
        ("update_statement: thread runtime config and state, metadata cleared",
         updates.update_statement(o, UpdatePlan(
             "thread", "t1", metadata=None, runtime_config={"model": "x"},
             runtime_state={"extracted_through": 4}))),
        ("update_statement: summary content, never expires",
         updates.update_statement(o, UpdatePlan(
             "thread_summary", "s1", content={"text": "new"}, expiry=None))),
        ("update_statement: image bytes and description",
         updates.update_statement(o, UpdatePlan(
             "image", "img-1", content=ImageBody("image/png", b"\x89PNG"),
             description="a dog"))),
        ("update_statement: a user profile (no RETURNING)",
         updates.update_statement(o, UpdatePlan("user_profile", "alice", content="Alice"))),
        ("sync_message_images", updates.sync_message_images(o, "msg-1", "alice")),
        ("sync_message_images, global owner", updates.sync_message_images(o, "msg-1", None)),
        ("chunk_ids", updates.chunk_ids(o, UpdatePlan("fact", "m1"), scope)),
        ("chunk_ids of a user profile (owner: the actor)",
         updates.chunk_ids(o, UpdatePlan("user_profile", "alice"), (None, None, None))),
        ("vector_batch", vectors),
    ]


def delete_items() -> list[tuple[str, Item]]:
    o = objects()
    keys = [("m1", "alice"), ("m2", None)]
    items: list[tuple[str, Item]] = []
    for record_type, record_id in (("fact", "m1"), ("message", "msg-1"), ("image", "img-1"),
                                   ("user_profile", "alice"), ("thread_summary", "s1")):
        logical, where = deletes.record_where(record_type, record_id)
        items.append((f"delete_rows: one {record_type}", deletes.delete_rows(o, logical, where)))
    chunks = deletes.delete_chunks(o, deletes.chunk_types("memory"), keys)
    assert chunks is not None
    items += [
        ("delete_chunks of deleted memories", chunks),
        ("delete_rows: image parts of deleted messages", deletes.delete_rows(
            o, "document", deletes.message_images_where([("msg-1", "alice")]))),
        ("delete_record_chunks of a user profile",
         deletes.delete_record_chunks(o, "user_profile", "alice", "alice")),
    ]
    items += [(f"delete_thread cascade: {logical}", deletes.delete_rows(o, logical, where))
              for logical, where in deletes.thread_cascade("t1")]
    items.append(("delete_thread: the thread row",
                  deletes.delete_rows(o, "thread", deletes.thread_row_where("t1"))))
    items.append(("threads_of_actor", deletes.threads_of_actor(o, "agent_id", "a1")))
    items += [(f"actor_cascade: {logical}", deletes.delete_rows(o, logical, where))
              for logical, where in deletes.actor_cascade("agent_id", "a1")]
    items += [(f"purge_expired: {logical}",
               deletes.delete_rows(o, logical, deletes.expired_where()))
              for logical in deletes.PURGED_TABLES]
    return items


SCENARIOS: dict[str, Callable[[], list[tuple[str, Item]]]] = {
    "inserts": insert_items, "reads": read_items, "updates": update_items,
    "deletes": delete_items,
}


def all_items() -> list[tuple[str, Item]]:
    return [item for render in SCENARIOS.values() for item in render()]


# --- golden files ------------------------------------------------------------------------------
def _value(value: Any) -> str:
    if isinstance(value, oracledb.DbType):
        return str(value.name)
    return repr(value)


def _binds(binds: Any) -> str:
    return ", ".join(f"{name}={_value(binds[name])}" for name in sorted(binds)) or "(none)"


def rendered(label: str, item: Item) -> str:
    lines = [f"-- {label}"]
    if isinstance(item, Query):
        order = " (fetched newest first, returned oldest first)" if item.newest_first else ""
        lines.append(f"-- decoded keys: {', '.join(k for k, _, _ in item.columns)}{order}")
    statement = statement_of(item)
    if statement.rows is not None:
        lines.append(f"-- executemany, {len(statement.rows)} rows:")
        lines += [f"--   {_binds(row)}" for row in statement.rows]
    else:
        lines.append(f"-- binds: {_binds(statement.binds)}")
        if statement.out_binds:
            lines.append(f"-- returning into: {_binds(statement.out_binds)}")
    if statement.input_sizes:
        lines.append(f"-- input sizes: {_binds(statement.input_sizes)}")
    return "\n".join(lines) + "\n" + statement.sql


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_rendered_dml_matches_the_reviewed_golden_file(name: str) -> None:
    assert_matches_golden(GOLDEN / f"{name}.sql", golden_text(
        "Oracle record DML", name, f"oracleagentmemory.engines.oracle.{name}",
        "tests/test_oracle_dml.py", [rendered(label, item) for label, item in SCENARIOS[name]()]))


def test_rendering_is_deterministic() -> None:
    first = [rendered(label, item) for label, item in all_items()]
    assert first == [rendered(label, item) for label, item in all_items()]


# --- parsing -----------------------------------------------------------------------------------
_INTO = re.compile(r" INTO (:[a-z_][a-z0-9_]*(?:, :[a-z_][a-z0-9_]*)*)$")
KINDS = {"INSERT": exp.Insert, "SELECT": exp.Select, "UPDATE": exp.Update,
         "DELETE": exp.Delete}


def parse(statement: Statement) -> exp.Expr:
    """Parse with sqlglot (the ``RETURNING ... INTO`` targets checked and removed first)."""
    sql = statement.sql
    assert ";" not in sql and "--" not in sql, sql
    returning = statement.out_binds
    if returning:
        found = _INTO.search(sql)
        assert found, f"RETURNING without INTO targets: {sql}"
        assert found.group(1).split(", ") == [f":{n}" for n in returning], sql
        sql = sql[:found.start()]
    else:
        assert " RETURNING " not in sql, sql
    tree = sqlglot.parse_one(sql, read="oracle")
    assert not isinstance(tree, exp.Command), f"sqlglot left it unparsed: {sql}"
    assert isinstance(tree, KINDS[sql.split()[0]]), sql
    if returning:
        returned = tree.args.get("returning")
        assert returned is not None and len(returned.expressions) == len(returning), sql
    return tree


def test_every_statement_parses_into_a_real_expression() -> None:
    kinds: dict[str, int] = {}
    for _, item in all_items():
        tree = parse(statement_of(item))
        kinds[tree.key] = kinds.get(tree.key, 0) + 1
    assert kinds == {"insert": 9, "select": 20, "update": 12, "delete": 21}, kinds


@pytest.mark.parametrize("broken", [
    'DELETE FROM "O"."T" WHERE id = :key_id RETURNING id, user_id INTO :deleted_id',
    'SELECT id FROM "O"."T" WHERE (id = :a',
    'UPDATE "O"."T" SET a = WHERE id = :a',
    'INSERT INTO "O"."T" (a, b) VALUES (:a, :b',
    'DELETE FROM "O"."T" WHERE a = 1 RETURNING id INTO :deleted_id, :deleted_owner',
])
def test_positive_control_a_broken_statement_is_caught(broken: str) -> None:
    returning = {"deleted_id": record_sql.VARCHAR_OUT, "deleted_owner": record_sql.VARCHAR_OUT}
    with pytest.raises((sqlglot.errors.SqlglotError, AssertionError)):
        parse(Statement(sql=broken, out_binds=returning if "RETURNING" in broken else {}))


# --- binds -------------------------------------------------------------------------------------
_BIND = re.compile(r"(?<![\w'])[:]([a-z_][a-z0-9_]*)")


def bind_problems(statement: Statement) -> list[str]:
    """What is wrong with a statement's binds: unbound or unused names, reserved words, and
    JSON/timestamp/vector values without their input size."""
    used = set(_BIND.findall(statement.sql))
    problems = [f":{n} is a reserved word" for n in used if n.upper() in RESERVED_WORDS]
    if statement.rows is not None:
        bind_sets = [dict(row) for row in statement.rows]
    else:
        bind_sets = [dict(statement.binds)]
    out = set(statement.out_binds)
    for binds in bind_sets:
        if used != set(binds) | out:
            problems.append(f"used {sorted(used)} but bound {sorted(set(binds) | out)}")
        for name, value in binds.items():
            size = statement.input_sizes.get(name)
            if isinstance(value, (dict, list)) and size is not oracledb.DB_TYPE_JSON:
                problems.append(f":{name} is JSON without DB_TYPE_JSON")
            if isinstance(value, datetime) and size is not oracledb.DB_TYPE_TIMESTAMP:
                problems.append(f":{name} is a timestamp without DB_TYPE_TIMESTAMP")
            if isinstance(value, datetime) and value.tzinfo is not None:
                problems.append(f":{name} is an aware datetime (python-oracledb drops the zone)")
            if isinstance(value, array.array) and size is not oracledb.DB_TYPE_VECTOR:
                problems.append(f":{name} is a vector without DB_TYPE_VECTOR")
            if isinstance(value, np.ndarray):
                problems.append(f":{name} is a numpy array (bind array.array('f'))")
    return problems


def test_every_bind_is_used_declared_and_not_a_reserved_word() -> None:
    for label, item in all_items():
        assert bind_problems(statement_of(item)) == [], label


def test_positive_control_the_bind_checks_catch_mistakes() -> None:
    assert bind_problems(Statement(sql="SELECT 1 FROM dual WHERE a = :a", binds={"b": 1}))
    assert bind_problems(Statement(sql="SELECT :size FROM dual", binds={"size": 1}))
    assert bind_problems(Statement(sql="SELECT :m FROM dual", binds={"m": {"a": 1}}))
    assert bind_problems(Statement(sql="SELECT :t FROM dual", binds={"t": T0},
                                   input_sizes={"t": oracledb.DB_TYPE_TIMESTAMP}))
    assert bind_problems(Statement(sql="SELECT :v FROM dual",
                                   rows=({"v": array.array("f", [1.0])},)))


def test_every_object_is_schema_qualified() -> None:
    names = re.compile(r'\b(?:FROM|INTO|UPDATE|JOIN)\s+("?)([A-Za-z_][\w$#]*)')
    for label, item in all_items():
        sql = statement_of(item).sql
        for quote, name in names.findall(sql):
            assert quote == '"' or name in ("JSON_TABLE",) or name.startswith(":") or \
                name == "dual", (label, name)
        for table in re.findall(r'"[A-Z_]+"\."([A-Z_]+)"', sql):
            assert table.startswith("ST_"), (label, table)


# --- inserts -----------------------------------------------------------------------------------
def test_attachments_follow_their_messages_and_rows_group_by_table() -> None:
    rows = message_with_image()
    assert [r.record_type for r in rows] == ["message", "image"]
    assert list(inserts.rows_by_table(rows)) == ["message", "document"]


def test_expiry_binds_per_anchor() -> None:
    assert inserts.expiry_binds(None) == {"expires_at": None, "lifetime_s": None}
    creation = Expiry(timedelta(days=1, seconds=1), ExpiryAnchor.RECORD_CREATION)
    assert inserts.expiry_binds(creation) == {"expires_at": None, "lifetime_s": 86401.0}
    anchored = inserts.expiry_binds(Expiry(timedelta(hours=2), T0.astimezone(CET)))
    assert anchored == {"expires_at": datetime(2026, 3, 4, 7, 6, 7, 890000), "lifetime_s": None}


def test_message_and_image_rows_carry_their_columns() -> None:
    batches = inserts.insert_batches(objects(), message_with_image())
    message, image, chunks = batches
    assert message.rows is not None and image.rows is not None and chunks.rows is not None
    row = message.rows[0]
    assert row["seq_no"] == 7 and row["content"] == "hello" and row["role"] == "user"
    assert row["event_ts"] == datetime(2026, 3, 4, 5, 6, 7, 890000)  # naive UTC
    assert row["content_parts"][1] == {"type": "image", "id": "part-1"}
    assert image.rows[0]["bytes"] == b"\x89PNG" and image.rows[0]["message_id"] == "msg-1"
    assert [r["record_type"] for r in chunks.rows] == ["message", "image"]
    assert chunks.rows[0]["embedding"] == array.array("f", [0.5, -1.0, 2.0])
    assert chunks.rows[1]["embedding"] is None
    without_vectors = inserts.chunk_batch(objects(), message_with_image()[1:])
    assert without_vectors is not None and without_vectors.rows is not None
    assert "embedding" not in without_vectors.rows[0]


def test_profiles_scope_their_chunks_by_actor() -> None:
    batch = inserts.chunk_batch(objects(), [
        RowPlan("user_profile", "alice", "x", chunks=[ChunkRow("x", None)]),
        RowPlan("agent_profile", "bot", "y", chunks=[ChunkRow("y", None)])])
    assert batch is not None and batch.rows is not None
    assert [(r["user_id"], r["agent_id"]) for r in batch.rows] == [("alice", None),
                                                                  (None, "bot")]
    assert inserts.chunk_batch(objects(), [RowPlan("thread", "t", None)]) is None


def test_sequence_numbers_continue_from_the_reserved_mark() -> None:
    rows = [RowPlan("message", f"m{n}", ("x", None), thread_id="t", user_id="u")
            for n in range(3)] + [RowPlan("message", "g", ("x", None), thread_id="t")]
    threads = inserts.message_threads([*rows, RowPlan("fact", "f", "x", thread_id="t")])
    assert list(threads) == [("t", "u"), ("t", None)]
    first = inserts.first_seq_no([Decimal(13)], count=3)
    assert first == 10
    inserts.assign_seq_nos(threads[("t", "u")], first)
    assert [r.seq_no for r in rows[:3]] == [10, 11, 12]
    assert inserts.first_seq_no([], count=3) is None
    inserts.assign_seq_nos(threads[("t", None)], None)
    assert rows[3].seq_no == 0


def test_next_seq_statement_matches_a_global_thread_with_is_null() -> None:
    owned = inserts.next_seq_statement(objects(), "t", "u", 2)
    assert "t.user_id = :user_id" in owned.sql and owned.binds["user_id"] == "u"
    global_ = inserts.next_seq_statement(objects(), "t", None, 2)
    assert "t.user_id IS NULL" in global_.sql and "m.user_id IS NULL" in global_.sql
    assert "user_id" not in global_.binds


def ora(code: int, text: str) -> oracledb.Error:
    """A database error as the thin driver raises it for server error ``code``."""
    error = oracledb._Error(f"ORA-{code:05}: {text}", code=code, offset=0)
    exc = error.exc_type(error)
    assert isinstance(exc, oracledb.Error)
    return exc


SEQ_23AI = ("unique constraint (OAM_OWNER.ST_MESSAGE_OWNER_SEQ_UQ) violated on table "
            "OAM_OWNER.ST_MESSAGE columns (USER_ID, THREAD_ID, SEQ_NO)")
ID_23AI = ("unique constraint (OAM_OWNER.ST_MEMORY_OWNER_ID_UQ) violated on table "
           "OAM_OWNER.ST_MEMORY columns (USER_ID, ID)\nORA-03301: (ORA-00001 details) row "
           "with column values (USER_ID:'alice', ID:'it''s, (m1)') already exists")


def test_a_sequence_conflict_is_told_apart_from_a_duplicate_id() -> None:
    o = objects()
    assert inserts.is_seq_conflict(o, ora(1, SEQ_23AI))
    assert not inserts.is_seq_conflict(o, ora(1, ID_23AI))
    assert not inserts.is_seq_conflict(o, ora(942, "table or view does not exist"))


def test_ora_00001_becomes_a_duplicate_record_error_with_the_id_when_oracle_says_it() -> None:
    error = inserts.duplicate_record_error(ora(1, ID_23AI))
    assert isinstance(error, DuplicateRecordError) and error.record_id == "it's, (m1)"
    bare = inserts.duplicate_record_error(
        ora(1, "unique constraint (OAM_OWNER.SYS_C0012) violated"))
    assert isinstance(bare, DuplicateRecordError) and bare.record_id is None
    assert "one of these ids" in str(bare)
    assert inserts.duplicate_record_error(ora(942, "table or view does not exist")) is None


# --- reads -------------------------------------------------------------------------------------
def test_limits_bind_fetch_first_and_decode_oldest_first() -> None:
    query = reads.select_records(objects(), RecordQuery("fact", limit=2))
    assert query.statement.sql.endswith("ORDER BY row_seq DESC FETCH FIRST :limit_n ROWS ONLY")
    assert query.statement.binds["limit_n"] == 2 and query.newest_first
    newest, older = (row("fact", "b", seq=None), row("fact", "a", seq=None))
    assert [r["id"] for r in query.decode([newest, older])] == ["a", "b"]
    every = reads.select_records(objects(), RecordQuery("fact"))
    assert "FETCH FIRST" not in every.statement.sql and "limit_n" not in every.statement.binds


def test_expired_rows_are_hidden_where_records_expire() -> None:
    for record_type, expires in (("fact", True), ("message", True), ("image", True),
                                 ("thread_summary", True), ("thread", False),
                                 ("user_profile", False)):
        sql = reads.select_records(objects(), RecordQuery(record_type)).statement.sql
        assert (record_sql.NOT_EXPIRED in sql) is expires, record_type


def test_metadata_filters_need_their_compiled_form_and_keep_its_binds() -> None:
    with pytest.raises(InvalidArgumentError):
        reads.select_records(objects(), RecordQuery("fact", metadata_filter=And(())))
    none = reads.select_records(objects(), RecordQuery("fact", metadata_filter=None))
    assert "metadata IS NULL" in none.statement.sql
    compiled = reads.select_records(objects(), RecordQuery("fact", metadata_filter=And(())),
                                    ("JSON_EXISTS(metadata, '$.a')", {"mf0": 1}))
    assert "(JSON_EXISTS(metadata, '$.a'))" in compiled.statement.sql
    assert compiled.statement.binds["mf0"] == 1
    with pytest.raises(InvalidArgumentError):  # a filter bind colliding with a scope bind
        reads.select_records(objects(), RecordQuery("fact", user_id="a", metadata_filter=And(
            ())), ("metadata IS NOT NULL AND :user_id = 1", {"user_id": "b"}))


def test_scope_none_reads_global_rows_and_unset_reads_any() -> None:
    sql = reads.select_records(objects(), RecordQuery("fact", user_id=None)).statement.sql
    assert "user_id IS NULL" in sql
    sql = reads.select_records(objects(), RecordQuery("fact")).statement.sql
    assert "user_id" not in sql.split("WHERE", 1)[1]


def test_message_images_decode_by_message_and_part() -> None:
    assert reads.select_message_images(objects(), []) is None
    decoded = reads.decode_message_images([("m", "p1", b"ab"), ("m", "p2", None)])
    assert decoded == {("m", "p1"): b"ab"}
    assert reads.decode_event_ts(None) is None
    assert reads.decode_event_ts((datetime(2026, 1, 1),)) == datetime(2026, 1, 1,
                                                                      tzinfo=timezone.utc)


# --- decoding ----------------------------------------------------------------------------------
def row(record_type: str, record_id: str, seq: int | None) -> tuple[Any, ...]:
    """A fetched memory row as python-oracledb returns it (fetch_lobs=False)."""
    return (record_id, record_type, "t1", "alice", None, None, None,
            {"n": Decimal("1"), "x": Decimal("0.25"), "l": [Decimal("2"), "s", True, None]},
            datetime(2026, 3, 4, 5, 6, 7), None, "valid", None, seq)


def test_fetched_rows_decode_to_the_postgresql_shapes() -> None:
    decoded = record_sql.decode_row(record_sql.SELECT_COLUMNS["memory"], row("fact", "m1", None))
    assert decoded == {
        "id": "m1", "record_type": "fact", "thread_id": "t1", "user_id": "alice",
        "agent_id": None, "content": "", "content_parts": None,
        "metadata": {"n": 1, "x": 0.25, "l": [2, "s", True, None]},
        "ts": datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc), "event_ts": None,
        "status": "valid", "role": None, "seq_no": None}
    assert type(decoded["metadata"]["n"]) is int and type(decoded["metadata"]["x"]) is float


def test_image_description_stays_none_and_bytes_decode_when_asked() -> None:
    columns = record_sql.select_columns("document", include_bytes=True)
    assert ("bytes", "bytes", record_sql.BYTES) in columns
    assert ("bytes", "NULL", record_sql.BYTES) in record_sql.select_columns("document")
    values = ("i", "image", None, "alice", None, None, None, None, datetime(2026, 1, 1),
              datetime(2026, 1, 1), "valid", None, None, None, "image/png", memoryview(b"ab"))
    decoded = record_sql.decode_row(columns, values)
    assert decoded["content"] is None and decoded["bytes"] == b"ab"
    assert decoded["event_ts"] == datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_message_parts_and_sequence_numbers_decode() -> None:
    columns = record_sql.SELECT_COLUMNS["message"]
    values = ("m", "message", "t", "u", None, "hi", [{"type": "text", "size": Decimal("3")}],
              None, datetime(2026, 1, 1), None, "valid", "user", 12)
    decoded = record_sql.decode_row(columns, values)
    assert decoded["content_parts"] == [{"type": "text", "size": 3}]
    assert decoded["seq_no"] == 12 and decoded["role"] == "user" and decoded["content"] == "hi"


def test_every_select_list_yields_the_neutral_keys_in_order() -> None:
    common = ["id", "record_type", "thread_id", "user_id", "agent_id", "content",
              "content_parts", "metadata", "ts", "event_ts", "status", "role", "seq_no"]
    extra = {"thread": ["runtime_config", "runtime_state"],
             "document": ["message_id", "mime_type", "bytes"]}
    for logical, columns in record_sql.SELECT_COLUMNS.items():
        assert [k for k, _, _ in columns] == common + extra.get(logical, []), logical


def test_decoding_refuses_rows_of_another_shape() -> None:
    with pytest.raises(InvalidArgumentError):
        record_sql.decode_row(record_sql.SELECT_COLUMNS["memory"], ("only", "two"))
    with pytest.raises(TypeError):
        record_sql.decode_value(record_sql.TIMESTAMP, "2026-01-01")


# --- updates -----------------------------------------------------------------------------------
def test_unset_fields_are_left_alone() -> None:
    sql = updates.update_statement(objects(), UpdatePlan("fact", "m1")).sql
    assert sql.split(" SET ", 1)[1].split(" WHERE ")[0] == "updated_at = SYSTIMESTAMP"
    only_status = updates.update_statement(objects(), UpdatePlan("fact", "m1", status="valid"))
    assert set(only_status.binds) == {"status", "key_record_type", "key_id"}


def test_expiry_updates_per_anchor() -> None:
    o = objects()
    never = updates.update_statement(o, UpdatePlan("fact", "m1", expiry=None)).sql
    assert "expires_at = NULL" in never
    later = updates.update_statement(o, UpdatePlan(
        "fact", "m1", expiry=Expiry(timedelta(minutes=1), ExpiryAnchor.RECORD_CREATION)))
    assert "created_at + NUMTODSINTERVAL(:lifetime_s, 'SECOND')" in later.sql
    assert later.binds["lifetime_s"] == 60.0


def test_the_returned_scope_and_chunk_owner() -> None:
    assert updates.returned_scope({"scope_thread_id": ["t"], "scope_user_id": [None],
                                   "scope_agent_id": ["a"]}) == ("t", None, "a")
    assert updates.returned_scope({}) == (None, None, None)
    assert updates.chunk_owner(UpdatePlan("user_profile", "alice"), (None, None, None)) == \
        "alice"
    assert updates.chunk_owner(UpdatePlan("fact", "m"), ("t", "bob", None)) == "bob"
    plan = updates.chunk_plan(UpdatePlan("fact", "m", chunks=[ChunkRow("x", None)]),
                              ("t", "bob", "a"))
    assert (plan.thread_id, plan.user_id, plan.agent_id, len(plan.chunks)) == \
        ("t", "bob", "a", 1)
    with pytest.raises(InvalidArgumentError):
        updates.chunk_plan(UpdatePlan("fact", "m"), ("t", "bob", "a"))


def test_vector_rewrites_must_align_with_the_stored_chunks() -> None:
    with pytest.raises(InvalidArgumentError):
        updates.vector_batch(objects(), [1, 2], [vector(1, 2, 3)])
    updates.check_vector_count([1], [None])
    assert updates.vector_batch(objects(), [], []) is None


def test_replacing_image_parts_takes_the_stored_message_scope() -> None:
    image = RowPlan("image", "p", ImageBody("image/png", b"x"))
    plan = UpdatePlan("message", "m", attachments=[image])
    assert updates.scoped_attachments(plan, ("t", "u", "a")) == [image]
    assert (image.thread_id, image.user_id, image.agent_id) == ("t", "u", "a")
    assert updates.syncs_message_images(plan)
    assert not updates.syncs_message_images(UpdatePlan("message", "m", status="valid"))
    assert updates.syncs_message_images(UpdatePlan("message", "m", event_ts=None))
    assert not updates.syncs_message_images(UpdatePlan("fact", "m", event_ts=None))
    assert updates.scoped_attachments(UpdatePlan("message", "m"), ("t", "u", "a")) == []
    assert plan.attachments is not UNSET


# --- deletes -----------------------------------------------------------------------------------
def test_delete_builders_refuse_what_has_no_meaning() -> None:
    with pytest.raises(InvalidArgumentError):
        deletes.record_where("thread", "t1")
    with pytest.raises(InvalidArgumentError):
        deletes.threads_of_actor(objects(), "thread_id", "x")
    with pytest.raises(InvalidArgumentError):
        deletes.actor_cascade("id; DROP TABLE x", "x")
    assert deletes.delete_chunks(objects(), ("fact",), []) is None


def test_deletes_return_the_keys_of_the_deleted_rows() -> None:
    o = objects()
    profile = deletes.delete_rows(o, "actor_profile",
                                  deletes.record_where("agent_profile", "bot")[1])
    assert profile.sql.endswith("RETURNING actor_id, CASE WHEN actor_type = 'user' THEN "
                                "actor_id END INTO :deleted_id, :deleted_owner")
    assert profile.binds == {"key_actor_type": "agent", "key_id": "bot"}
    assert set(profile.out_binds) == {"deleted_id", "deleted_owner"}


def test_the_delete_where_fragments_compose_with_the_relation_statements() -> None:
    """A memory delete's WHERE goes into ``relations.lifecycle_targets_from`` unchanged."""
    o = objects()
    wheres = [deletes.record_where("fact", "m1")[1], deletes.expired_where(),
              *(w for logical, w in deletes.thread_cascade("t1") if logical == "memory"),
              *(w for logical, w in deletes.actor_cascade("user_id", "u") if logical == "memory")]
    for where in wheres:
        targets = relations.lifecycle_targets_from(o, where.sql, where.binds)
        assert where.sql in targets.sql and bind_problems(targets) == [], targets.sql
        tree = sqlglot.parse_one(targets.sql, read="oracle")
        assert isinstance(tree, exp.Select)


def test_chunk_types_and_key_lists() -> None:
    assert deletes.chunk_types("memory") == ("fact", "guideline", "memory", "preference")
    assert deletes.chunk_types("actor_profile") == ("user_profile", "agent_profile")
    assert deletes.chunk_types("thread") == ()
    images = deletes.message_images_where([("m", None)])
    assert images.binds["message_keys"] == [{"id": "m", "owner": None}]
    assert images.input_sizes["message_keys"] is oracledb.DB_TYPE_JSON


def test_a_bind_bound_twice_with_different_values_is_refused() -> None:
    assert record_sql.merge_binds({"a": 1}, {"a": 1, "b": 2}) == {"a": 1, "b": 2}
    with pytest.raises(InvalidArgumentError):
        record_sql.merge_binds({"a": 1}, {"a": 2})
