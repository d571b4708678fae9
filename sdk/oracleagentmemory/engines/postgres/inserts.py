"""Inserting records and their retrieval rows on PostgreSQL, in the caller's transaction.

Writes larger than one batch use binary ``COPY`` unless row-level security applies to the
session (PostgreSQL refuses ``COPY FROM`` then); otherwise each batch is one ``INSERT ... SELECT
* FROM unnest(...)`` with binary array parameters, the batches pipelined. Either way the rows
are built while they are sent, so the client's work overlaps the server's. Message sequence
numbers are assigned here and retried from a savepoint when a concurrent writer takes the same
ones.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from datetime import datetime
from functools import cache, lru_cache
from itertools import islice
from typing import Any

import numpy as np
import psycopg
from psycopg import errors, pq, sql
from psycopg.adapt import Dumper
from psycopg.types.json import Jsonb

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import ImageBody, RowPlan, message_body
from oracleagentmemory.engines.layout import TABLE_OF_TYPE
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.errors import DuplicateRecordError

INSERT_BATCH_SIZE = 256
SEQ_RETRIES = 50
"""Attempts at message sequence numbers while concurrent writers take the same ones."""

Columns = tuple[tuple[str, str], ...]
"""Column names and their SQL types, in insert order."""


class _VectorDumper(Dumper):
    """numpy vectors in pgvector's binary form (dimension, unused, big-endian float4s)."""

    format = pq.Format.BINARY

    def dump(self, obj: Any) -> bytes:
        array = np.asarray(obj, dtype=">f4")
        return _vector_header(array.shape[0]) + array.tobytes()


@cache
def _vector_header(dim: int) -> bytes:
    return struct.pack(">HH", dim, 0)


@cache
def _vector_dumper(oid: int) -> type[Dumper]:
    return type("VectorDumper", (_VectorDumper,), {"oid": oid})


def write_cursor(conn: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
    """A cursor that sends numpy vectors as pgvector ``vector`` with less work per value."""
    cur = conn.cursor()
    info = conn.adapters.types.get("vector")
    if info is not None:
        cur.adapters.register_dumper(np.ndarray, _vector_dumper(info.oid))
    return cur


# --- the write ------------------------------------------------------------------------------
def insert_rows(conn: psycopg.Connection[Any], names: StoreNames, rows: Sequence[RowPlan],
                batch_size: int = INSERT_BATCH_SIZE) -> None:
    """Insert ``rows`` and their retrieval rows; raise :class:`DuplicateRecordError`.

    A message's image parts (its ``attachments``) are inserted with it, as image rows.
    """
    if any(r.attachments for r in rows):
        rows = [*rows, *(a for r in rows for a in r.attachments)]
    by_table: dict[str, list[RowPlan]] = {}
    for row in rows:
        by_table.setdefault(TABLE_OF_TYPE[row.record_type], []).append(row)
    needs_now = any(r.expiry is not None for r in rows)
    bulk, now = False, None
    if len(rows) > batch_size:
        rls, now = _row_security_and_now(conn, names, [*by_table, "record_chunks"])
        bulk = not rls
    elif needs_now:
        now = _transaction_now(conn)
    if "message" not in by_table:
        _insert_tables(conn, names, rows, by_table, now, batch_size, bulk)
        return
    # Sequence numbers are the thread's highest plus one, unique per owner and thread (no
    # lock another user could hold): a concurrent writer to the same thread makes the
    # insert fail on that key, and it is retried from a savepoint with fresh numbers.
    for attempt in range(SEQ_RETRIES):
        try:
            with conn.transaction():
                assign_seq_nos(conn, names, by_table["message"])
                _insert_tables(conn, names, rows, by_table, now, batch_size, bulk)
            return
        except DuplicateRecordError as exc:
            if exc.__cause__ is None or not _is_seq_conflict(exc.__cause__) \
                    or attempt == SEQ_RETRIES - 1:
                raise


def _row_security_and_now(conn: psycopg.Connection[Any], names: StoreNames,
                          logicals: Sequence[str]) -> tuple[bool, datetime]:
    """Whether row-level security applies to this session on any of these tables, and the
    transaction time (one round trip)."""
    row = conn.execute(
        "SELECT coalesce(bool_or(row_security_active(t::regclass)), false), now() "
        "FROM unnest(%s::text[]) AS t",
        [[q.table(names, logical).as_string(conn) for logical in logicals]],
    ).fetchone()
    assert row is not None
    return bool(row[0]), row[1]


def _transaction_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def _insert_tables(conn: psycopg.Connection[Any], names: StoreNames, rows: Sequence[RowPlan],
                   by_table: dict[str, list[RowPlan]], now: datetime | None, batch_size: int,
                   bulk: bool) -> None:
    try:
        # Pipeline mode (INSERT path): the batches are sent without waiting for each result,
        # so the client prepares the next batch while the server inserts the previous one. A
        # failed batch (e.g. a duplicate id) raises its own error when the pipeline syncs.
        with nullcontext() if bulk else conn.pipeline(), write_cursor(conn) as cur:
            for logical, table_rows in by_table.items():
                columns, values = record_rows(logical, table_rows, now)
                write_rows(cur, names, logical, columns, values, batch_size, bulk)
            if any(r.chunks for r in rows):
                columns, values = chunk_rows(rows)
                write_rows(cur, names, "record_chunks", columns, values, batch_size, bulk)
    except errors.UniqueViolation as exc:
        key = _duplicate_key(exc)
        raise DuplicateRecordError(
            f"record_ids: a record with id {key!r} already exists" if key
            else "record_ids: a record with one of these ids already exists",
            argument="record_ids", record_id=key) from exc


def assign_seq_nos(conn: psycopg.Connection[Any], names: StoreNames,
                   rows: list[RowPlan]) -> None:
    """Number the messages of each owner's thread after its high-water mark.

    A thread row keeps the next number (``next_seq_no``, raised past any stored message), so a
    number is never given twice, even after the newest message is deleted; raising it locks
    the thread row, so concurrent appends to one thread queue behind each other. Messages of a
    thread without a visible, writable thread row continue after the highest stored number.
    """
    by_thread: dict[tuple[str | None, str | None], list[RowPlan]] = {}
    for row in rows:
        by_thread.setdefault((row.thread_id, row.user_id), []).append(row)
    statement = _next_seq_statement(names)
    for (thread_id, user_id), thread_rows in by_thread.items():
        found = conn.execute(statement, {"thread": thread_id, "user": user_id,
                                         "count": len(thread_rows)}).fetchone()
        start = 0 if found is None or found[0] is None else int(found[0])
        for offset, row in enumerate(thread_rows):
            row.seq_no = start + offset


# --- sending rows ----------------------------------------------------------------------------
def write_rows(cur: psycopg.Cursor[Any], names: StoreNames, logical: str, columns: Columns,
               rows: Iterable[tuple[Any, ...]], batch_size: int, bulk: bool) -> None:
    """Write ``rows``: one binary COPY (``bulk``), or INSERT batches of ``batch_size`` rows."""
    if bulk:
        copy_rows(cur, names, logical, columns, rows)
    else:
        insert_unnest(cur, names, logical, columns, rows, batch_size)


def copy_rows(cur: psycopg.Cursor[Any], names: StoreNames, logical: str, columns: Columns,
              rows: Iterable[tuple[Any, ...]]) -> None:
    """Binary COPY of ``rows`` (same columns and types as the INSERT path)."""
    with cur.copy(_copy_statement(names, logical, columns)) as copy:
        copy.set_types([t for _, t in columns])
        write_row = copy.write_row
        for row in rows:
            write_row(row)


def insert_unnest(cur: psycopg.Cursor[Any], names: StoreNames, logical: str, columns: Columns,
                  rows: Iterable[tuple[Any, ...]], batch_size: int) -> None:
    """``INSERT ... SELECT * FROM unnest(...)`` per batch of ``batch_size`` rows."""
    # Binary parameters (%b): vectors go as packed float4 instead of decimal text, and
    # strings need no array quoting; the client-side cost of a batch drops several-fold.
    statement = _insert_statement(names, logical, columns)
    pending = iter(rows)
    while batch := list(islice(pending, batch_size)):
        cur.execute(statement, [list(column) for column in zip(*batch, strict=True)])


@lru_cache(maxsize=256)
def _copy_statement(names: StoreNames, logical: str, columns: Columns) -> sql.Composed:
    return sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        q.table(names, logical), sql.SQL(", ").join(sql.Identifier(c) for c, _ in columns))


@lru_cache(maxsize=256)
def _insert_statement(names: StoreNames, logical: str, columns: Columns) -> sql.Composed:
    return sql.SQL("INSERT INTO {} ({}) SELECT * FROM unnest({})").format(
        q.table(names, logical),
        sql.SQL(", ").join(sql.Identifier(c) for c, _ in columns),
        sql.SQL(", ").join(sql.SQL("%b::" + t + "[]") for _, t in columns),
    )


@lru_cache(maxsize=64)
def _next_seq_statement(names: StoreNames) -> sql.Composed:
    """The first number for ``count`` new messages of one owner's thread (one round trip)."""
    return sql.SQL(
        "WITH stored AS (SELECT coalesce(max(seq_no) + 1, 0) AS next FROM {m} "
        "WHERE thread_id IS NOT DISTINCT FROM %(thread)s "
        "AND user_id IS NOT DISTINCT FROM %(user)s), "
        "bumped AS (UPDATE {t} SET next_seq_no = greatest(next_seq_no, (SELECT next FROM stored)) "
        "+ %(count)s WHERE id = %(thread)s AND user_id IS NOT DISTINCT FROM %(user)s "
        "RETURNING next_seq_no - %(count)s AS first) "
        "SELECT coalesce((SELECT first FROM bumped), (SELECT next FROM stored))"
    ).format(m=q.table(names, "message"), t=q.table(names, "thread"))


def insert_chunks(conn: psycopg.Connection[Any], names: StoreNames,
                  rows: Sequence[RowPlan]) -> None:
    """Insert the retrieval rows of ``rows`` (whose records exist already)."""
    if any(r.chunks for r in rows):
        columns, values = chunk_rows(rows)
        with write_cursor(conn) as cur:
            insert_unnest(cur, names, "record_chunks", columns, values, INSERT_BATCH_SIZE)


# --- records as rows --------------------------------------------------------------------------
_PROFILE_COLUMNS: Columns = (("actor_type", "text"), ("actor_id", "text"), ("content", "text"),
                             ("metadata", "jsonb"), ("event_ts", "timestamptz"))
_THREAD_COLUMNS: Columns = (("id", "text"), ("user_id", "text"), ("agent_id", "text"),
                            ("metadata", "jsonb"), ("event_ts", "timestamptz"))
_RECORD_COLUMNS: Columns = (("id", "text"), ("thread_id", "text"), ("user_id", "text"),
                            ("agent_id", "text"), ("metadata", "jsonb"),
                            ("event_ts", "timestamptz"), ("expires_at", "timestamptz"),
                            ("status", "text"))
_EXTRA_COLUMNS: dict[str, Columns] = {
    "memory": (("record_type", "text"), ("content", "text")),
    "message": (("role", "text"), ("content", "text"), ("content_parts", "jsonb"),
                ("seq_no", "bigint")),
    "thread_summary": (("content", "jsonb"),),
    "document": (("message_id", "text"), ("mime_type", "text"), ("description", "text"),
                 ("bytes", "bytea")),
}
_CHUNK_COLUMNS: Columns = (("record_type", "text"), ("record_id", "text"),
                           ("chunk_no", "integer"), ("chunk_text", "text"),
                           ("thread_id", "text"), ("user_id", "text"), ("agent_id", "text"))
_CHUNK_COLUMNS_WITH_VECTORS: Columns = (*_CHUNK_COLUMNS, ("embedding", "vector"))


def _message_columns(row: RowPlan) -> tuple[str, Jsonb | None]:
    text, parts = message_body(row.content)
    return text, _jsonb(parts)


def _image_columns(row: RowPlan) -> tuple[str | None, str, str | None, bytes]:
    body = row.content
    if not isinstance(body, ImageBody):
        raise TypeError(f"an image's content is an ImageBody, got {type(body).__name__}")
    return body.message_id, body.mime_type, body.description, body.data


def _jsonb(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def _expiry(rows: list[RowPlan], now: datetime | None) -> list[datetime | None]:
    """Expiry instants; ``now`` (the transaction time) is when these records are created."""
    if all(r.expiry is None for r in rows):
        return [None] * len(rows)
    assert now is not None
    return [None if r.expiry is None else r.expiry.instant(now) for r in rows]


def record_rows(logical: str, rows: list[RowPlan], now: datetime | None
                ) -> tuple[Columns, Iterator[tuple[Any, ...]]]:
    """Columns and rows (built as they are consumed) for inserting ``rows`` into ``logical``.

    ``now`` (the transaction time) anchors expiry; it may be ``None`` when no row expires.
    """
    if logical == "actor_profile":
        return _PROFILE_COLUMNS, (
            (r.record_type.removesuffix("_profile"), r.record_id, r.content, _jsonb(r.metadata),
             r.event_ts) for r in rows)
    if logical == "thread":
        return _THREAD_COLUMNS, (
            (r.record_id, r.user_id, r.agent_id, _jsonb(r.metadata), r.event_ts) for r in rows)
    columns = _RECORD_COLUMNS + _EXTRA_COLUMNS.get(logical, ())
    common = ((r, (r.record_id, r.thread_id, r.user_id, r.agent_id,
                   None if r.metadata is None else Jsonb(r.metadata), r.event_ts, expires,
                   r.status))
              for r, expires in zip(rows, _expiry(rows, now), strict=True))
    if logical == "memory":
        return columns, ((*values, r.record_type, r.content) for r, values in common)
    if logical == "message":
        return columns, ((*values, r.role, *_message_columns(r), r.seq_no)
                         for r, values in common)
    if logical == "thread_summary":
        return columns, ((*values, Jsonb(r.content)) for r, values in common)
    if logical == "document":
        return columns, ((*values, *_image_columns(r)) for r, values in common)
    return columns, (values for _, values in common)


def chunk_rows(rows: Sequence[RowPlan]) -> tuple[Columns, Iterator[tuple[Any, ...]]]:
    """Columns and rows (built as they are consumed) of the retrieval rows of ``rows``.

    The embedding column is present when any chunk has a vector.
    """
    with_vectors = any(c.vector is not None for r in rows for c in r.chunks)
    # A profile's actor id is its scope on the matching dimension (spec: search scoping).
    scoped = ((r, r.record_id if r.record_type == "user_profile" else r.user_id,
               r.record_id if r.record_type == "agent_profile" else r.agent_id)
              for r in rows if r.chunks)
    if with_vectors:
        return _CHUNK_COLUMNS_WITH_VECTORS, (
            (r.record_type, r.record_id, n, c.text, r.thread_id, user, agent, c.vector)
            for r, user, agent in scoped for n, c in enumerate(r.chunks))
    return _CHUNK_COLUMNS, (
        (r.record_type, r.record_id, n, c.text, r.thread_id, user, agent)
        for r, user, agent in scoped for n, c in enumerate(r.chunks))


# --- errors ----------------------------------------------------------------------------------
def _is_seq_conflict(exc: BaseException) -> bool:
    return isinstance(exc, errors.UniqueViolation) and (
        exc.diag.constraint_name or "").endswith("message_owner_seq_uq")


def _duplicate_key(exc: errors.UniqueViolation) -> str | None:
    detail = exc.diag.message_detail or ""
    # "Key (id)=(abc) already exists." or "Key (actor_type, actor_id)=(user, abc) ..."
    # The id itself may contain ", ": only the leading key columns are split off.
    if detail.startswith("Key (") and ")=(" in detail and ") already" in detail:
        columns, inner = detail[len("Key ("):].split(")=(", 1)
        inner = inner.rsplit(") already", 1)[0]
        return inner.split(", ", columns.count(","))[-1]
    return None
