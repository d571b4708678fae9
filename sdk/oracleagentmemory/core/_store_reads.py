"""The read methods of the database store: get, list, a thread's messages."""

from __future__ import annotations

import builtins
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT
from oracleagentmemory.apis.records import MEMORY_TYPES, PROFILE_TYPES, MessageRecord, Record
from oracleagentmemory.core._keyset import keyset_position
from oracleagentmemory.core._records import MessageImages, message_image_owners, record_from_row
from oracleagentmemory.core._validation import (
    check_bool,
    check_limit,
    check_required_id,
    check_seq_no,
)
from oracleagentmemory.core._writeplan import check_record_type
from oracleagentmemory.engines.interfaces import EngineSession, MessageQuery, RecordQuery
from oracleagentmemory.errors import InvalidArgumentError
from oracleagentmemory.filtertree import parse_metadata_filter
from oracleagentmemory.observability._operation import MEMORY_STORE, observed


class StoreReads:
    """Record reads; the store supplies :meth:`_session`."""

    if TYPE_CHECKING:
        def _session(self) -> AbstractContextManager[EngineSession]:
            raise NotImplementedError

    @observed(MEMORY_STORE)
    def get(self, record_type: str, record_id: str,
            include_bytes: Any = NOT_SET_MARKER) -> Record | None:
        """Return the visible record ``record_id`` of ``record_type``, or ``None``."""
        record_type = check_record_type(record_type)
        check_required_id(record_id, "record_id")
        with_bytes = _include_bytes(include_bytes)
        with self._session() as session:
            rows = session.select_records(RecordQuery(record_type=record_type,
                                                      record_id=record_id, limit=1,
                                                      include_bytes=with_bytes))
            images = _message_images(session, rows, with_bytes)
        return record_from_row(rows[0], images) if rows else None

    @observed(MEMORY_STORE)
    def list(self, record_type: str, limit: Any = NOT_SET_MARKER, thread_id: Any = NOT_SET_MARKER,
             user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
             metadata_filter: Any = NOT_SET_MARKER, include_bytes: Any = NOT_SET_MARKER,
             record_id: Any = NOT_SET_MARKER, *,
             older_than: Any = None) -> builtins.list[Record]:
        """List the most recent visible records of one type, oldest first; ``older_than``
        (an extension, see :class:`~oracleagentmemory.apis.keyset.OlderThan`) pages by
        ``(timestamp, id)``."""
        record_type = check_record_type(record_type)
        effective_limit = MAX_LIST_LIMIT if limit is NOT_SET_MARKER else check_limit(limit, "limit")
        if record_type == "thread" and thread_id is not NOT_SET_MARKER:
            raise InvalidArgumentError(
                "thread_id must not be set when listing threads; use record_id")
        query = RecordQuery(record_type=record_type, limit=effective_limit,
                            older_than=keyset_position(older_than))
        if record_type not in PROFILE_TYPES:
            for argument, value in (("thread_id", thread_id), ("user_id", user_id),
                                    ("agent_id", agent_id)):
                if value is not NOT_SET_MARKER:
                    if value is not None:
                        check_required_id(value, argument)
                    setattr(query, argument, value)
        if record_id is not NOT_SET_MARKER:
            query.record_id = check_required_id(record_id, "record_id")
        if metadata_filter is None:
            query.metadata_filter = None
        elif metadata_filter is not NOT_SET_MARKER:
            query.metadata_filter = parse_metadata_filter(metadata_filter)
        query.include_bytes = _include_bytes(include_bytes)
        if query.include_bytes and record_type == "image" and (
                record_id is NOT_SET_MARKER
                or all(v is NOT_SET_MARKER for v in (thread_id, user_id, agent_id))):
            raise InvalidArgumentError(
                "include_bytes: listing images with their bytes needs an exact record_id and at "
                "least one user_id, agent_id or thread_id filter", argument="include_bytes")
        with self._session() as session:
            rows = session.select_records(query)
            images = _message_images(session, rows, query.include_bytes)
        return [record_from_row(r, images) for r in rows]

    @observed(MEMORY_STORE)
    def list_thread_messages(self, thread_id: str, last_n: int | None = None,
                             range_start_seq_no: int | None = None,
                             range_end_seq_no: int | None = None,
                             include_bytes: Any = NOT_SET_MARKER) -> builtins.list[MessageRecord]:
        """A thread's visible messages in sequence order (``last_n`` within the range)."""
        query = MessageQuery(
            thread_id=check_required_id(thread_id, "thread_id"),
            last_n=check_limit(last_n, "last_n"),
            range_start_seq_no=check_seq_no(range_start_seq_no, "range_start_seq_no"),
            range_end_seq_no=check_seq_no(range_end_seq_no, "range_end_seq_no"),
        )
        with_bytes = _include_bytes(include_bytes)
        with self._session() as session:
            rows = session.select_thread_messages(query)
            images = _message_images(session, rows, with_bytes)
        records = [record_from_row(r, images) for r in rows]
        return [r for r in records if isinstance(r, MessageRecord)]

    def _memory_record(self, memory_id: str) -> Record | None:
        """The visible memory ``memory_id`` of any memory type (the caller's own before a
        global one of the same id), or ``None``: one round trip, for lookups by memory id."""
        with self._session() as session:
            rows = session.select_records_by_keys([("memory", memory_id)])
        found = [row for (record_type, record_id), row in rows.items()
                 if record_id == memory_id and record_type in MEMORY_TYPES]
        found.sort(key=lambda row: row["user_id"] is None)
        return record_from_row(found[0]) if found else None


def _include_bytes(value: Any) -> bool:
    """The ``include_bytes`` option (omitted: ``False``)."""
    return False if value is NOT_SET_MARKER else check_bool(value, "include_bytes")


def _message_images(session: EngineSession, rows: builtins.list[dict[str, Any]],
                    include_bytes: bool) -> MessageImages | None:
    """The bytes of the image parts of the message ``rows``, when asked for."""
    if not include_bytes:
        return None
    owners = message_image_owners(rows)
    return session.select_message_images(owners) if owners else {}
