"""Pieces shared by the Oracle record DML: statement values, SELECT lists, row decoding, keys.

Every builder of :mod:`~oracleagentmemory.engines.oracle.inserts`, ``reads``, ``updates`` and
``deletes`` is pure: it returns a :class:`~.statement.Statement` (one ``cursor.execute``, or
one ``cursor.executemany`` when it has ``rows``) or a :class:`Query` (a statement plus the
decoding of its fetched rows), and executes nothing. What the session must do with them:

* **Input sizes.** ``cursor.setinputsizes(**statement.input_sizes)`` before executing: JSON
  binds are declared ``DB_TYPE_JSON`` (a dict or list is refused otherwise), timestamps
  ``DB_TYPE_TIMESTAMP`` (naive UTC, read in SQL through ``FROM_TZ(CAST(:b AS TIMESTAMP),
  'UTC')``, see :mod:`~oracleagentmemory.engines.oracle.binds`), vectors ``DB_TYPE_VECTOR``
  (so a ``None`` in the first row of a batch does not fix the bind type). CLOB and BLOB
  values are bound as ``str``/``bytes`` without an input size: python-oracledb sends values
  longer than 32767 bytes as LONG/LONG RAW, which Oracle accepts when the bind is the whole
  value of a CLOB/BLOB column (every such bind here is: ``VALUES (..., :content, ...)`` or
  ``SET content = :content``); declaring ``DB_TYPE_CLOB`` would create a temporary LOB per
  row (python-cx_Oracle issue #189, python-oracledb issue #467).
* **LOBs as values.** Execute every :class:`Query` with ``cursor.execute(sql, binds,
  fetch_lobs=False)`` (python-oracledb 26.1 has the per-call flag; ``oracledb.defaults.
  fetch_lobs = False`` would change it process-wide, an outputtypehandler per cursor is the
  third way): CLOB columns then arrive as ``str`` and BLOB columns as ``bytes``.
  :meth:`Query.decode` refuses a LOB locator instead of reading it (reading is a round trip).
* **JSON** columns (native ``JSON`` type, 21c and later) arrive as Python objects. Their
  numbers arrive as ``decimal.Decimal`` (python-oracledb's OSON decoder reads every Oracle
  NUMBER inside JSON as a decimal; its encoder writes ``int`` and ``float`` as NUMBER):
  :func:`json_value` turns integral decimals back into ``int`` and the others into ``float``.
* **Timestamps** are selected as ``SYS_EXTRACT_UTC(col)`` (naive UTC) and decoded aware.
* **RETURNING.** A statement's ``out_binds`` names the out-binds with their types: create
  ``cursor.var(db_type)`` for each name, pass them with the binds, and read ``var.getvalue()``
  after the execution: a list with one value per affected row (DML RETURNING of one
  execution; empty when no row was affected). Deep Data Security checks SELECT rights for
  ``RETURNING``; columns the end user may not read come back NULL.
* **Reserved words.** No bind name is an Oracle reserved word (ORA-01745 otherwise).

Oracle reads ``''`` as NULL: text stored empty comes back NULL, so :class:`Query` decodes
the text of memories, messages and profiles (never NULL on PostgreSQL) back to ``''``; an
image description stored empty comes back ``None``. Lists of keys are bound as one JSON
array and read with ``JSON_TABLE`` (``statement.id_list``, :func:`key_list_table`): one
statement text for any number of keys, and no 1000-expression ``IN`` limit (ORA-01795).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import oracledb

from oracleagentmemory.engines.oracle.binds import json_input_sizes, utc_from_fetch
from oracleagentmemory.engines.oracle.statement import ID_COLUMN_TYPE, Statement, bind_name
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

NOT_EXPIRED = "(expires_at IS NULL OR expires_at > SYSTIMESTAMP)"
"""Rows a read may return: not expired at the statement's time."""


# --- SELECT lists and decoding -------------------------------------------------------------
TEXT, OPTIONAL_TEXT, PLAIN, JSON, TIMESTAMP, INTEGER, BYTES = (
    "text", "optional_text", "plain", "json", "timestamp", "integer", "bytes")
"""How a selected value is decoded (:func:`decode_value`)."""

Column = tuple[str, str, str]
"""``(key, SQL expression, decoding)`` of one selected value."""

_TS: tuple[Column, Column] = (
    ("ts", "SYS_EXTRACT_UTC(COALESCE(event_ts, created_at))", TIMESTAMP),
    ("event_ts", "SYS_EXTRACT_UTC(event_ts)", TIMESTAMP))

SELECT_COLUMNS: dict[str, tuple[Column, ...]] = {
    "memory": (
        ("id", "id", PLAIN), ("record_type", "record_type", PLAIN),
        ("thread_id", "thread_id", PLAIN), ("user_id", "user_id", PLAIN),
        ("agent_id", "agent_id", PLAIN), ("content", "content", TEXT),
        ("content_parts", "NULL", JSON), ("metadata", "metadata", JSON), *_TS,
        ("status", "status", PLAIN), ("role", "NULL", PLAIN), ("seq_no", "NULL", INTEGER)),
    "message": (
        ("id", "id", PLAIN), ("record_type", "'message'", PLAIN),
        ("thread_id", "thread_id", PLAIN), ("user_id", "user_id", PLAIN),
        ("agent_id", "agent_id", PLAIN), ("content", "content", TEXT),
        ("content_parts", "content_parts", JSON), ("metadata", "metadata", JSON), *_TS,
        ("status", "status", PLAIN), ("role", "role", PLAIN), ("seq_no", "seq_no", INTEGER)),
    "thread_summary": (
        ("id", "id", PLAIN), ("record_type", "'thread_summary'", PLAIN),
        ("thread_id", "thread_id", PLAIN), ("user_id", "user_id", PLAIN),
        ("agent_id", "agent_id", PLAIN), ("content", "content", JSON),
        ("content_parts", "NULL", JSON), ("metadata", "metadata", JSON), *_TS,
        ("status", "status", PLAIN), ("role", "NULL", PLAIN),
        ("seq_no", "covered_through_seq_no", INTEGER)),
    "actor_profile": (
        ("id", "actor_id", PLAIN), ("record_type", "actor_type || '_profile'", PLAIN),
        ("thread_id", "NULL", PLAIN), ("user_id", "NULL", PLAIN), ("agent_id", "NULL", PLAIN),
        ("content", "content", TEXT), ("content_parts", "NULL", JSON),
        ("metadata", "metadata", JSON), *_TS, ("status", "'valid'", PLAIN),
        ("role", "NULL", PLAIN), ("seq_no", "NULL", INTEGER)),
    "thread": (
        ("id", "id", PLAIN), ("record_type", "'thread'", PLAIN), ("thread_id", "id", PLAIN),
        ("user_id", "user_id", PLAIN), ("agent_id", "agent_id", PLAIN),
        ("content", "NULL", PLAIN), ("content_parts", "NULL", JSON),
        ("metadata", "metadata", JSON), *_TS, ("status", "'valid'", PLAIN),
        ("role", "NULL", PLAIN), ("seq_no", "NULL", INTEGER),
        ("runtime_config", "runtime_config", JSON), ("runtime_state", "runtime_state", JSON)),
    "document": (
        ("id", "id", PLAIN), ("record_type", "'image'", PLAIN),
        ("thread_id", "thread_id", PLAIN), ("user_id", "user_id", PLAIN),
        ("agent_id", "agent_id", PLAIN), ("content", "description", OPTIONAL_TEXT),
        ("content_parts", "NULL", JSON), ("metadata", "metadata", JSON), *_TS,
        ("status", "status", PLAIN), ("role", "NULL", PLAIN), ("seq_no", "NULL", INTEGER),
        ("message_id", "message_id", PLAIN), ("mime_type", "mime_type", PLAIN),
        ("bytes", "NULL", BYTES)),
}
"""The SELECT list of each logical table: the neutral keys of
:class:`~oracleagentmemory.engines.layout.RecordRow`, in the PostgreSQL engine's order."""


def select_columns(logical: str, include_bytes: bool = False) -> tuple[Column, ...]:
    """The SELECT list of ``logical`` (images with their bytes when ``include_bytes``)."""
    columns = SELECT_COLUMNS[logical]
    if logical == "document" and include_bytes:
        return tuple(("bytes", "bytes", BYTES) if key == "bytes" else (key, expr, kind)
                     for key, expr, kind in columns)
    return columns


def select_list(columns: Sequence[Column]) -> str:
    """``expr AS key, ...`` (a bare column keeps its name). Rows are decoded by position, so
    the aliases, folded upper by Oracle, only document the list."""
    return ", ".join(expr if expr == key else f"{expr} AS {key}" for key, expr, _ in columns)


def json_value(value: Any) -> Any:
    """A fetched JSON value with its decimals back as ``int`` (integral) or ``float``."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: json_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_value(item) for item in value]
    return value


def decode_value(kind: str, value: Any) -> Any:
    """One fetched value as the PostgreSQL engine returns it (``kind``: the column's
    decoding, :data:`TEXT` and the others)."""
    if isinstance(value, (oracledb.LOB, oracledb.AsyncLOB)):
        raise InvalidArgumentTypeError(
            "a LOB locator was fetched: execute record reads with fetch_lobs=False")
    if kind == TEXT:
        return "" if value is None else value
    if kind == JSON:
        return json_value(value)
    if kind == TIMESTAMP:
        if value is not None and not isinstance(value, datetime):
            raise InvalidArgumentTypeError(f"a timestamp was fetched as {type(value).__name__}")
        return utc_from_fetch(value)
    if kind == INTEGER:
        return None if value is None else int(value)
    if kind == BYTES:
        return None if value is None else bytes(value)
    return value


def decode_row(columns: Sequence[Column], values: Sequence[Any]) -> dict[str, Any]:
    """A fetched row (a tuple in SELECT-list order) as the neutral record dict."""
    if len(values) != len(columns):
        raise InvalidArgumentError(
            f"a fetched row has {len(values)} values, the SELECT list {len(columns)}")
    return {key: decode_value(kind, value)
            for (key, _, kind), value in zip(columns, values, strict=True)}


@dataclass(frozen=True)
class Query:
    """A record read: its statement, and how its fetched rows become record dicts."""

    statement: Statement
    columns: tuple[Column, ...]
    newest_first: bool = False
    """The SQL orders newest first (to keep the newest N); :meth:`decode` returns oldest
    first."""

    def decode(self, rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
        """The fetched ``rows`` as record dicts, oldest first."""
        decoded = [decode_row(self.columns, row) for row in rows]
        if self.newest_first:
            decoded.reverse()
        return decoded


# --- keys and key lists ----------------------------------------------------------------------
def record_key(logical: str, record_type: str, record_id: str) -> tuple[str, dict[str, Any]]:
    """The WHERE clause that selects one record of ``record_type`` (binds ``key_*``)."""
    if logical == "actor_profile":
        return "actor_type = :key_actor_type AND actor_id = :key_id", {
            "key_actor_type": record_type.removesuffix("_profile"), "key_id": record_id}
    if logical == "memory":
        return "record_type = :key_record_type AND id = :key_id", {
            "key_record_type": record_type, "key_id": record_id}
    if logical == "document":  # a message's image parts change and go with their message
        return "id = :key_id AND message_id IS NULL", {"key_id": record_id}
    return "id = :key_id", {"key_id": record_id}


def equals(column: str, bind: str, value: object) -> tuple[str, dict[str, Any]]:
    """``column = :bind``, or ``column IS NULL`` when ``value`` is ``None`` (PostgreSQL's
    ``IS NOT DISTINCT FROM`` for a value known when the statement is built)."""
    if value is None:
        return f"{column} IS NULL", {}
    return f"{column} = :{bind}", {bind: value}


def same_owner(left: str, right: str) -> str:
    """NULL-safe equality of two owner columns: ``DECODE`` treats two NULLs as equal."""
    return f"DECODE({left}, {right}, 1, 0) = 1"


def key_list_table(bind: str) -> str:
    """``JSON_TABLE`` over a JSON array of ``{"id": ..., "owner": ...}`` bound as ``bind``;
    its columns are ``id`` and ``owner`` (NULL for a JSON null). A plain id list is
    :func:`oracleagentmemory.engines.oracle.statement.id_list`."""
    return (f"JSON_TABLE(:{bind_name(bind)}, '$[*]' COLUMNS (id {ID_COLUMN_TYPE} PATH '$.id', "
            f"owner {ID_COLUMN_TYPE} PATH '$.owner'))")


def key_list(keys: Iterable[tuple[str, str | None]]) -> list[dict[str, str | None]]:
    """``(id, owner)`` pairs as the JSON array :func:`key_list_table` reads."""
    return [{"id": record_id, "owner": owner} for record_id, owner in keys]


def json_binds(**values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(binds, input sizes)`` of JSON-typed binds."""
    return dict(values), json_input_sizes(*values)


def merge_binds(*parts: Mapping[str, Any]) -> dict[str, Any]:
    """The union of bind dicts; a name bound twice to different values is a builder bug."""
    merged: dict[str, Any] = {}
    for part in parts:
        for name, value in part.items():
            if name in merged and merged[name] is not value and merged[name] != value:
                raise InvalidArgumentError(f"bind :{name} is bound twice with different values")
            merged[name] = value
    return merged


VARCHAR_OUT = oracledb.DB_TYPE_VARCHAR
"""``cursor.var`` type of an id, owner or scope column returned by ``RETURNING``."""

NUMBER_OUT = oracledb.DB_TYPE_NUMBER
"""``cursor.var`` type of a number returned by ``RETURNING``."""
