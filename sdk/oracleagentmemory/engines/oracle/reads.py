"""Record reads on Oracle: by type and scope, a thread's messages, image bytes, single-record
probes. Builders only: each returns a :class:`~.record_sql.Query` or
:class:`~.statement.Statement`; the session executes it (``fetch_lobs=False``, see
:mod:`~oracleagentmemory.engines.oracle.record_sql`) and decodes the fetched rows with the
function named in each docstring.

A read of the newest ``N`` rows orders newest first with ``FETCH FIRST :limit_n ROWS ONLY``
and :meth:`~.record_sql.Query.decode` returns them oldest first, as PostgreSQL does.

Metadata filters are compiled elsewhere (``engines/oracle/filters.py``): a read that needs one
takes the compiled ``(sql_fragment, binds)``, a predicate on the unqualified ``metadata``
column, whose bind names must not collide with the names bound here (``key_*``,
``record_type``, ``record_id``, ``actor_type``, ``thread_id``, ``user_id``, ``agent_id``,
``limit_n``, ``range_start``, ``range_end``, ``messages``, ``older_ts``, ``older_id``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Union

from oracleagentmemory.engines.interfaces import UNSET, Keyset, MessageQuery, OrUnset, RecordQuery
from oracleagentmemory.engines.layout import EXPIRING_TABLES, TABLE_OF_TYPE
from oracleagentmemory.engines.oracle.binds import (
    timestamp_bind,
    timestamp_input_sizes,
    utc_from_fetch,
    utc_timestamp_sql,
)
from oracleagentmemory.engines.oracle.names import OracleObjects
from oracleagentmemory.engines.oracle.record_sql import (
    NOT_EXPIRED,
    SELECT_COLUMNS,
    Column,
    Query,
    equals,
    json_binds,
    key_list,
    key_list_table,
    merge_binds,
    record_key,
    same_owner,
    select_columns,
    select_list,
)
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import InvalidArgumentError

CompiledFilter = Union[tuple[str, Mapping[str, Any]], Statement]  # noqa: UP007
"""A metadata filter compiled by ``engines/oracle/filters.py``: its predicate and binds, or
the fragment ``BindSet.statement(predicate)`` returns (with the binds' input sizes)."""


def newest_oldest_first(o: OracleObjects, logical: str, columns: tuple[Column, ...],
                        where: Sequence[str], binds: dict[str, Any],
                        order_keys: Sequence[str], limit: int | None,
                        input_sizes: Mapping[str, Any] | None = None) -> Query:
    """The newest ``limit`` rows (all when ``None``) by ``order_keys`` (oldest first when
    ascending), decoded oldest first."""
    condition = " AND ".join(where) if where else "1 = 1"
    sql = (f"SELECT {select_list(columns)} FROM {o.table(logical)} WHERE {condition} "
           f"ORDER BY {', '.join(f'{key} DESC' for key in order_keys)}")
    if limit is not None:
        sql += " FETCH FIRST :limit_n ROWS ONLY"
        binds = merge_binds(binds, {"limit_n": limit})
    return Query(Statement(sql=sql, binds=binds, input_sizes=dict(input_sizes or {})),
                 columns, newest_first=True)


def keyset_order(time: str, id_column: str, older_than: OrUnset[Keyset | None],
                 default_key: str) -> tuple[tuple[str, ...], list[str], dict[str, Any],
                                            dict[str, Any]]:
    """A list's order keys (ascending: oldest first), and the condition, binds and input
    sizes of its keyset position: ``default_key`` when ``older_than`` is ``UNSET``, else
    ``(time, id_column)`` with ids in code-point order (binary ``NLSSORT`` of AL32UTF8),
    strictly older than the position when one is given (binds ``older_ts``, ``older_id``)."""
    if older_than is UNSET:
        return (default_key,), [], {}, {}
    binary_id = f"NLSSORT({id_column}, 'NLS_SORT=BINARY')"
    keys = (time, binary_id)
    if older_than is None:
        return keys, [], {}, {}
    at = utc_timestamp_sql("older_ts")
    condition = (f"({time} < {at} OR ({time} = {at} AND "
                 f"{binary_id} < NLSSORT(:older_id, 'NLS_SORT=BINARY')))")
    return (keys, [condition], {"older_ts": timestamp_bind(older_than[0]),
                                "older_id": older_than[1]},
            timestamp_input_sizes("older_ts"))


def scope_conditions(scope: Iterable[tuple[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """``column = :column`` (``IS NULL`` for ``None``) per scope column that is set."""
    where: list[str] = []
    binds: dict[str, Any] = {}
    for column, value in scope:
        if value is UNSET:
            continue
        condition, bound = equals(column, column, value)
        where.append(condition)
        binds.update(bound)
    return where, binds


def metadata_conditions(metadata_filter: object, compiled: CompiledFilter | None
                        ) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """A record query's metadata condition, binds and input sizes: none when ``UNSET``,
    ``metadata IS NULL`` for ``None``, else the compiled filter (required then)."""
    if metadata_filter is UNSET:
        return [], {}, {}
    if metadata_filter is None:
        return ["metadata IS NULL"], {}, {}
    if compiled is None:
        raise InvalidArgumentError("a metadata filter must be compiled before the read")
    if isinstance(compiled, Statement):
        return [f"({compiled.sql})"], dict(compiled.binds), dict(compiled.input_sizes)
    return [f"({compiled[0]})"], dict(compiled[1]), {}


def select_records(o: OracleObjects, query: RecordQuery,
                   compiled_filter: CompiledFilter | None = None) -> Query:
    """Visible (unexpired) rows of one record type; decode with ``Query.decode`` (oldest
    first, at most the newest ``query.limit``)."""
    logical = TABLE_OF_TYPE[query.record_type]
    where: list[str] = []
    binds: dict[str, Any] = {}
    if logical == "actor_profile":
        where.append("actor_type = :actor_type")
        binds["actor_type"] = query.record_type.removesuffix("_profile")
        if query.record_id is not UNSET:
            where.append("actor_id = :record_id")
            binds["record_id"] = query.record_id
    else:
        if logical == "memory":
            where.append("record_type = :record_type")
            binds["record_type"] = query.record_type
        if query.record_id is not UNSET:
            where.append("id = :record_id")
            binds["record_id"] = query.record_id
        scope, scope_binds = scope_conditions(
            (column, getattr(query, column)) for column in ("thread_id", "user_id", "agent_id")
            if not (logical == "thread" and column == "thread_id"))
        where.extend(scope)
        binds.update(scope_binds)
    if logical in EXPIRING_TABLES:
        where.append(NOT_EXPIRED)
    metadata, metadata_binds, sizes = metadata_conditions(query.metadata_filter,
                                                          compiled_filter)
    where.extend(metadata)
    keys, position, position_binds, position_sizes = keyset_order(
        "COALESCE(event_ts, created_at)", "actor_id" if logical == "actor_profile" else "id",
        query.older_than, "row_seq")
    return newest_oldest_first(o, logical, select_columns(logical, query.include_bytes),
                               [*where, *position],
                               merge_binds(binds, metadata_binds, position_binds), keys,
                               query.limit, {**sizes, **position_sizes})


def select_thread_messages(o: OracleObjects, query: MessageQuery) -> Query:
    """Visible messages of one thread in sequence order (at most the last ``last_n``)."""
    where = ["thread_id = :thread_id", NOT_EXPIRED]
    binds: dict[str, Any] = {"thread_id": query.thread_id}
    if query.range_start_seq_no is not None:
        where.append("seq_no >= :range_start")
        binds["range_start"] = query.range_start_seq_no
    if query.range_end_seq_no is not None:
        where.append("seq_no < :range_end")
        binds["range_end"] = query.range_end_seq_no
    return newest_oldest_first(o, "message", SELECT_COLUMNS["message"], where, binds,
                               ("seq_no",), query.last_n)


def select_message_images(o: OracleObjects, messages: Sequence[tuple[str, str | None]]
                          ) -> Statement | None:
    """The image parts' bytes of messages ``(message id, owner)`` (``None``: nothing to read);
    decode with :func:`decode_message_images`. Ids are unique per owner: a part is the row of
    its message's owner."""
    if not messages:
        return None
    binds, sizes = json_binds(messages=key_list(messages))
    return Statement(
        sql=(f"SELECT d.message_id, d.id, d.bytes FROM {o.table('document')} d "
             f"JOIN {key_list_table('messages')} m ON d.message_id = m.id "
             f"AND {same_owner('d.user_id', 'm.owner')} WHERE d.message_id IS NOT NULL"),
        binds=binds, input_sizes=sizes)


def decode_message_images(rows: Iterable[Sequence[Any]]) -> dict[tuple[str, str], bytes]:
    """Fetched ``(message_id, id, bytes)`` rows by ``(message id, part id)``."""
    return {(r[0], r[1]): bytes(r[2]) for r in rows if r[2] is not None}


def count_chunks(o: OracleObjects, record_type: str, record_id: str) -> Statement:
    """Number of retrieval rows of one record (one value: ``int(row[0])``)."""
    return Statement(
        sql=(f"SELECT COUNT(*) FROM {o.table('record_chunks')} "
             "WHERE record_type = :record_type AND record_id = :record_id"),
        binds={"record_type": record_type, "record_id": record_id})


def record_exists(o: OracleObjects, record_type: str, record_id: str) -> Statement:
    """Whether the record row exists (expired or not), locking it: exists when a row is
    fetched. ``FOR UPDATE`` cannot be combined with ``FETCH FIRST`` (ORA-02014)."""
    logical = TABLE_OF_TYPE[record_type]
    key, binds = record_key(logical, record_type, record_id)
    return Statement(sql=f"SELECT 1 FROM {o.table(logical)} WHERE {key} FOR UPDATE",
                     binds=binds)


def select_event_ts(o: OracleObjects, record_type: str, record_id: str) -> Statement:
    """Stored event timestamp of one record; decode with :func:`decode_event_ts`."""
    logical = TABLE_OF_TYPE[record_type]
    key, binds = record_key(logical, record_type, record_id)
    return Statement(
        sql=f"SELECT SYS_EXTRACT_UTC(event_ts) FROM {o.table(logical)} WHERE {key}",
        binds=binds)


def decode_event_ts(row: Sequence[Any] | None) -> datetime | None:
    """The fetched row of :func:`select_event_ts` (``None``: no record) as an aware UTC
    datetime or ``None``."""
    return None if row is None else utc_from_fetch(row[0])
