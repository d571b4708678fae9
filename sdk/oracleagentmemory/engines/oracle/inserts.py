"""Inserting records and their retrieval rows on Oracle: statement builders, no execution.

``EngineSession.insert_rows`` on Oracle runs, in the caller's transaction:

1. ``rows = with_attachments(rows)`` (a message's image parts are inserted with it, as image
   rows) and ``by_table = rows_by_table(rows)``.
2. Without messages: every :func:`insert_batches` batch, in order, with
   ``cursor.executemany(batch.sql, batch.rows, batch_size=...)``.
3. With messages, up to :data:`SEQ_RETRIES` attempts, each from ``SAVEPOINT``
   :data:`SEQ_SAVEPOINT` (:data:`SAVEPOINT_SQL`; undo with :data:`ROLLBACK_TO_SAVEPOINT_SQL`,
   as Oracle rolls back only the failing statement): for each ``(thread, owner)`` of
   :func:`message_threads`, execute :func:`next_seq_statement`; the ``next_seq_no`` out-bind
   holds the thread's new high-water mark (:func:`first_seq_no`; ``None``: no visible,
   writable thread row, then run :func:`stored_seq_statement` and take its single value);
   :func:`assign_seq_nos` numbers the thread's messages; then run the batches. ORA-00001 on
   the messages' sequence key (:func:`is_seq_conflict`) retries; any ORA-00001 left becomes
   :func:`duplicate_record_error`.

Expiry: a record's ``expires_at`` is bound when its anchor is a timestamp, else computed in
the INSERT as ``SYSTIMESTAMP + NUMTODSINTERVAL(:lifetime_s, 'SECOND')``: ``SYSTIMESTAMP`` is
read once per statement, and the ``created_at`` default of the same row is that value, so a
record expires exactly its lifetime after its creation, as on PostgreSQL (where every row of
a transaction shares ``now()``; here each batch has its own creation time). Columns left out
of an INSERT (``created_at``, ``updated_at``, ``row_seq``, the chunk ``id``) take their
defaults, which Deep Data Security's ``INSERT (columns)`` grants require.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import oracledb

from oracleagentmemory.engines.interfaces import (
    Expiry,
    ExpiryAnchor,
    ImageBody,
    RowPlan,
    message_body,
)
from oracleagentmemory.engines.layout import TABLE_OF_TYPE
from oracleagentmemory.engines.oracle.binds import (
    json_bind,
    json_input_sizes,
    timestamp_bind,
    timestamp_input_sizes,
    utc_timestamp_sql,
    vector_bind,
)
from oracleagentmemory.engines.oracle.driver_errors import is_unique_violation
from oracleagentmemory.engines.oracle.names import OracleObjects
from oracleagentmemory.engines.oracle.record_sql import (
    NUMBER_OUT,
    equals,
    merge_binds,
)
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import DuplicateRecordError

SEQ_RETRIES = 50
"""Attempts at message sequence numbers while concurrent writers take the same ones."""

SEQ_SAVEPOINT = "oam_seq_nos"
SAVEPOINT_SQL = f"SAVEPOINT {SEQ_SAVEPOINT}"
ROLLBACK_TO_SAVEPOINT_SQL = f"ROLLBACK TO SAVEPOINT {SEQ_SAVEPOINT}"

# Column kinds: how a bind is written into VALUES and declared.
_PLAIN, _JSON, _TS, _EXPIRY, _VECTOR = "text", "json", "ts", "expiry", "vector"
Columns = tuple[tuple[str, str], ...]

_PROFILE_COLUMNS: Columns = (("actor_type", _PLAIN), ("actor_id", _PLAIN), ("content", _PLAIN),
                             ("metadata", _JSON), ("event_ts", _TS))
_THREAD_COLUMNS: Columns = (("id", _PLAIN), ("user_id", _PLAIN), ("agent_id", _PLAIN),
                            ("metadata", _JSON), ("event_ts", _TS))
_RECORD_COLUMNS: Columns = (("id", _PLAIN), ("thread_id", _PLAIN), ("user_id", _PLAIN),
                            ("agent_id", _PLAIN), ("metadata", _JSON), ("event_ts", _TS),
                            ("expires_at", _EXPIRY), ("status", _PLAIN))
_EXTRA_COLUMNS: dict[str, Columns] = {
    "memory": (("record_type", _PLAIN), ("content", _PLAIN)),
    "message": (("role", _PLAIN), ("content", _PLAIN), ("content_parts", _JSON),
                ("seq_no", _PLAIN)),
    "thread_summary": (("content", _JSON),),
    "document": (("message_id", _PLAIN), ("mime_type", _PLAIN), ("description", _PLAIN),
                 ("bytes", _PLAIN)),
}
_CHUNK_COLUMNS: Columns = (("record_type", _PLAIN), ("record_id", _PLAIN), ("chunk_no", _PLAIN),
                           ("chunk_text", _PLAIN), ("thread_id", _PLAIN), ("user_id", _PLAIN),
                           ("agent_id", _PLAIN))
_CHUNK_COLUMNS_WITH_VECTORS: Columns = (*_CHUNK_COLUMNS, ("embedding", _VECTOR))

EXPIRY_SQL = (f"COALESCE({utc_timestamp_sql('expires_at')}, "
              "SYSTIMESTAMP + NUMTODSINTERVAL(:lifetime_s, 'SECOND'))")
"""The inserted ``expires_at``: the bound instant, or the lifetime after the row's creation."""


def columns_of(logical: str) -> Columns:
    """The inserted columns of ``logical`` (or ``record_chunks``, without vectors)."""
    if logical == "actor_profile":
        return _PROFILE_COLUMNS
    if logical == "thread":
        return _THREAD_COLUMNS
    if logical == "record_chunks":
        return _CHUNK_COLUMNS
    return _RECORD_COLUMNS + _EXTRA_COLUMNS.get(logical, ())


def insert_sql(o: OracleObjects, logical: str, columns: Columns) -> str:
    """``INSERT INTO table (columns) VALUES (binds)`` with each kind's SQL."""
    values = []
    for column, kind in columns:
        if kind == _TS:
            values.append(utc_timestamp_sql(column))
        elif kind == _EXPIRY:
            values.append(EXPIRY_SQL)
        else:
            values.append(f":{column}")
    return (f"INSERT INTO {o.table(logical)} ({', '.join(c for c, _ in columns)}) "
            f"VALUES ({', '.join(values)})")


def input_sizes_of(columns: Columns) -> dict[str, Any]:
    """The input sizes of ``columns``: JSON, timestamps (and the expiry's), vectors."""
    sizes = json_input_sizes(*(c for c, kind in columns if kind == _JSON))
    sizes.update(timestamp_input_sizes(*(c for c, kind in columns if kind in (_TS, _EXPIRY))))
    if any(kind == _EXPIRY for _, kind in columns):
        sizes["lifetime_s"] = oracledb.DB_TYPE_NUMBER
    if any(kind == _VECTOR for _, kind in columns):
        sizes["embedding"] = oracledb.DB_TYPE_VECTOR
    return sizes


# --- plans as rows ----------------------------------------------------------------------------
def with_attachments(rows: Sequence[RowPlan]) -> list[RowPlan]:
    """``rows`` followed by their messages' image parts."""
    return [*rows, *(a for r in rows for a in r.attachments)]


def rows_by_table(rows: Iterable[RowPlan]) -> dict[str, list[RowPlan]]:
    """Plans grouped by logical table, in first-seen order."""
    by_table: dict[str, list[RowPlan]] = {}
    for row in rows:
        by_table.setdefault(TABLE_OF_TYPE[row.record_type], []).append(row)
    return by_table


def expiry_binds(expiry: Expiry | None) -> dict[str, Any]:
    """``expires_at`` (a timestamp anchor's instant) or ``lifetime_s`` (from creation)."""
    if expiry is None:
        return {"expires_at": None, "lifetime_s": None}
    if isinstance(expiry.anchor, ExpiryAnchor):
        return {"expires_at": None, "lifetime_s": expiry.lifetime.total_seconds()}
    anchor: datetime = expiry.anchor
    return {"expires_at": timestamp_bind(expiry.instant(anchor)), "lifetime_s": None}


def _image(row: RowPlan) -> ImageBody:
    if not isinstance(row.content, ImageBody):
        raise TypeError(f"an image's content is an ImageBody, got {type(row.content).__name__}")
    return row.content


def record_binds(logical: str, row: RowPlan) -> dict[str, Any]:
    """The bind values of one plan inserted into ``logical``."""
    if logical == "actor_profile":
        return {"actor_type": row.record_type.removesuffix("_profile"),
                "actor_id": row.record_id, "content": row.content,
                "metadata": json_bind(row.metadata), "event_ts": timestamp_bind(row.event_ts)}
    if logical == "thread":
        return {"id": row.record_id, "user_id": row.user_id, "agent_id": row.agent_id,
                "metadata": json_bind(row.metadata), "event_ts": timestamp_bind(row.event_ts)}
    binds: dict[str, Any] = {
        "id": row.record_id, "thread_id": row.thread_id, "user_id": row.user_id,
        "agent_id": row.agent_id, "metadata": json_bind(row.metadata),
        "event_ts": timestamp_bind(row.event_ts), **expiry_binds(row.expiry),
        "status": row.status}
    if logical == "memory":
        binds.update(record_type=row.record_type, content=row.content)
    elif logical == "message":
        text, parts = message_body(row.content)
        binds.update(role=row.role, content=text, content_parts=json_bind(parts),
                     seq_no=row.seq_no)
    elif logical == "thread_summary":
        binds.update(content=json_bind(row.content))
    elif logical == "document":
        body = _image(row)
        binds.update(message_id=body.message_id, mime_type=body.mime_type,
                     description=body.description, bytes=body.data)
    return binds


def record_batch(o: OracleObjects, logical: str, rows: Sequence[RowPlan]) -> Statement:
    """The INSERT of ``rows`` into ``logical``."""
    columns = columns_of(logical)
    return Statement(sql=insert_sql(o, logical, columns),
                     rows=tuple(record_binds(logical, r) for r in rows),
                     input_sizes=input_sizes_of(columns))


def chunk_batch(o: OracleObjects, rows: Sequence[RowPlan]) -> Statement | None:
    """The INSERT of the retrieval rows of ``rows`` (``None`` when they have none). The
    embedding column is written when any chunk has a vector."""
    if not any(r.chunks for r in rows):
        return None
    with_vectors = any(c.vector is not None for r in rows for c in r.chunks)
    columns = _CHUNK_COLUMNS_WITH_VECTORS if with_vectors else _CHUNK_COLUMNS
    values: list[dict[str, Any]] = []
    for r in rows:
        # A profile's actor id is its scope on the matching dimension (spec: search scoping).
        user = r.record_id if r.record_type == "user_profile" else r.user_id
        agent = r.record_id if r.record_type == "agent_profile" else r.agent_id
        for n, chunk in enumerate(r.chunks):
            row: dict[str, Any] = {
                "record_type": r.record_type, "record_id": r.record_id, "chunk_no": n,
                "chunk_text": chunk.text, "thread_id": r.thread_id, "user_id": user,
                "agent_id": agent}
            if with_vectors:
                row["embedding"] = None if chunk.vector is None else vector_bind(
                    chunk.vector, int(np.asarray(chunk.vector).shape[0]))
            values.append(row)
    return Statement(sql=insert_sql(o, "record_chunks", columns), rows=tuple(values),
                     input_sizes=input_sizes_of(columns))


def insert_batches(o: OracleObjects, rows: Sequence[RowPlan]) -> list[Statement]:
    """Every INSERT of ``rows`` (attachments already added, sequence numbers assigned): one
    batch per table, then the retrieval rows."""
    batches = [record_batch(o, logical, table_rows)
               for logical, table_rows in rows_by_table(rows).items()]
    chunks = chunk_batch(o, rows)
    return [*batches, *([chunks] if chunks is not None else [])]


# --- message sequence numbers ----------------------------------------------------------------
def message_threads(rows: Iterable[RowPlan]
                    ) -> dict[tuple[str | None, str | None], list[RowPlan]]:
    """The messages among ``rows`` by ``(thread id, owner)``, in order."""
    by_thread: dict[tuple[str | None, str | None], list[RowPlan]] = {}
    for row in rows:
        if row.record_type == "message":
            by_thread.setdefault((row.thread_id, row.user_id), []).append(row)
    return by_thread


def _stored_next(o: OracleObjects, thread_id: str | None, user_id: str | None
                 ) -> tuple[str, dict[str, Any]]:
    thread_sql, thread_binds = equals("m.thread_id", "thread_id", thread_id)
    user_sql, user_binds = equals("m.user_id", "user_id", user_id)
    return (f"SELECT NVL(MAX(m.seq_no) + 1, 0) FROM {o.table('message')} m "
            f"WHERE {thread_sql} AND {user_sql}", merge_binds(thread_binds, user_binds))


def next_seq_statement(o: OracleObjects, thread_id: str | None, user_id: str | None,
                       count: int) -> Statement:
    """Reserve ``count`` numbers on one owner's thread row; out-bind ``next_seq_no`` (the new
    high-water mark; the first number is it minus ``count``).

    The thread row keeps the next number, raised past any stored message, so a number is
    never given twice even after the newest message is deleted; updating the row locks it, so
    concurrent appends to one thread queue behind each other. No row is updated when the
    thread row is missing, not visible or not writable: then use
    :func:`stored_seq_statement`.
    """
    stored, stored_binds = _stored_next(o, thread_id, user_id)
    owner_sql, owner_binds = equals("t.user_id", "user_id", user_id)
    return Statement(
        sql=(f"UPDATE {o.table('thread')} t SET next_seq_no = GREATEST(t.next_seq_no, "
             f"({stored})) + :seq_count WHERE t.id = :thread_id AND {owner_sql} "
             "RETURNING next_seq_no INTO :next_seq_no"),
        binds=merge_binds(stored_binds, owner_binds,
                          {"thread_id": thread_id, "seq_count": count}),
        out_binds={"next_seq_no": NUMBER_OUT})


def stored_seq_statement(o: OracleObjects, thread_id: str | None,
                         user_id: str | None) -> Statement:
    """The first free number after the thread's stored messages (one value)."""
    stored, binds = _stored_next(o, thread_id, user_id)
    return Statement(sql=stored, binds=binds)


def first_seq_no(next_seq_no: Sequence[Any], count: int) -> int | None:
    """The first reserved number, from :func:`next_seq_statement`'s out-bind values
    (``None``: no thread row was updated)."""
    if not next_seq_no or next_seq_no[0] is None:
        return None
    return int(next_seq_no[0]) - count


def assign_seq_nos(rows: Sequence[RowPlan], first: int | None) -> None:
    """Number one thread's messages from ``first`` (``None``: from 0)."""
    start = 0 if first is None else int(first)
    for offset, row in enumerate(rows):
        row.seq_no = start + offset


# --- errors ----------------------------------------------------------------------------------
_DETAIL_VALUES = re.compile(r"\(((?:[^()']|'(?:[^']|'')*')*)\) already exists")
_DETAIL_ITEM = re.compile(r"(\w+):'((?:[^']|'')*)'")


def is_seq_conflict(o: OracleObjects, exc: BaseException) -> bool:
    """Whether ``exc`` is ORA-00001 on the messages' ``(user_id, thread_id, seq_no)`` key: a
    concurrent writer took the numbers; retry from the savepoint."""
    return is_unique_violation(exc, o.object_name("message_owner_seq_uq"))


def duplicate_key(message: str) -> str | None:
    """The duplicate record id, from the column values Oracle 23ai and later add to an
    ORA-00001 message (``ERROR_MESSAGE_DETAILS``, on by default; a line ending ``row with
    column values (USER_ID:'u1', ID:'abc') already exists``, docs.oracle.com/en/error-help/
    db/ora-00001). That line's exact layout is not verified against a live database: anything
    else yields ``None``."""
    found = _DETAIL_VALUES.search(message)
    if not found:
        return None
    for item in _DETAIL_ITEM.finditer(found.group(1)):
        if item.group(1).upper() in ("ID", "ACTOR_ID"):
            return item.group(2).replace("''", "'")
    return None


def duplicate_record_error(exc: BaseException) -> DuplicateRecordError | None:
    """The :class:`DuplicateRecordError` of an ORA-00001 raised by a record INSERT (raise it
    ``from exc``), ``None`` for any other error."""
    if not is_unique_violation(exc):
        return None
    error = exc.args[0] if exc.args else None
    message = getattr(error, "message", None)
    key = duplicate_key(message if isinstance(message, str) else str(exc))
    return DuplicateRecordError(
        f"record_ids: a record with id {key!r} already exists" if key
        else "record_ids: a record with one of these ids already exists",
        argument="record_ids", record_id=key)
