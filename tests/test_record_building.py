"""``record_from_row`` builds the common rows by position, with the timestamp's conversion to UTC
skipped when it is in UTC already; these tests pin that it gives exactly what the general
construction gives (:func:`build_record` with keyword fields, :func:`format_timestamp`) for
varied rows: every record type, timestamps in and out of UTC with and without microseconds,
``None`` fields, nested and non-ASCII metadata, linked results, and rows typed by the real
driver under several session time zones."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest
from oracleagentmemory.apis.records import (
    PROFILE_TYPES,
    RECORD_CLASS_BY_TYPE,
    MemoryRecord,
    Record,
    RecordStatus,
    build_record,
)
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.core._records import (
    _UTC_ZONES,
    MessageImages,
    _message_content,
    record_from_row,
)
from oracleagentmemory.core._validation import format_timestamp
from oracleagentmemory.errors import InvalidArgumentError
from psycopg.rows import dict_row


def general(row: dict[str, Any], images: MessageImages | None = None, **extra: Any) -> Record:
    """The record built the general way: every field by keyword through ``build_record``."""
    record_type = row["record_type"]
    fields: dict[str, Any] = {"timestamp": format_timestamp(row.get("ts")),
                              "metadata": row.get("metadata"),
                              "status": RecordStatus(row.get("status") or "valid"), **extra}
    if record_type not in PROFILE_TYPES:
        fields.update(thread_id=row.get("thread_id"), user_id=row.get("user_id"),
                      agent_id=row.get("agent_id"))
    if record_type == "message":
        fields.update(content=_message_content(row, images), role=row.get("role"),
                      seq_no=int(row.get("seq_no") or 0))
    elif record_type == "image":
        data = row.get("bytes")
        fields.update(content=row.get("content"), message_id=row.get("message_id"),
                      mime_type=row.get("mime_type"),
                      bytes=None if data is None else bytes(data))
    elif record_type == "thread":
        fields.update(runtime_config=row.get("runtime_config"),
                      runtime_state=row.get("runtime_state"))
    else:
        fields["content"] = row.get("content")
    return build_record(record_type, row["id"], **fields)


def assert_same(built: Record, expected: Record) -> None:
    """The same class, and every field equal and of the same type (``RecordStatus.VALID ==
    "valid"``, so equality alone would miss a plain string)."""
    assert type(built) is type(expected)
    assert built == expected
    assert repr(built) == repr(expected)
    for f in dataclasses.fields(expected):
        assert type(getattr(built, f.name)) is type(getattr(expected, f.name)), f.name


LISBON, NEW_YORK = ZoneInfo("Europe/Lisbon"), ZoneInfo("America/New_York")
TIMESTAMPS: list[datetime | None] = [
    datetime(2026, 11, 30, 14, 5, 17, 123456, tzinfo=timezone.utc),
    datetime(2026, 11, 30, 14, 5, 17, tzinfo=timezone.utc),
    datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=ZoneInfo("Etc/UTC")),
    datetime(2026, 6, 1, 23, 59, 59, tzinfo=ZoneInfo("UTC")),
    datetime(2026, 6, 1, 12, 0, 0, 500000, tzinfo=timezone(timedelta(0), "GMT")),
    datetime(2026, 7, 1, 1, 30, tzinfo=LISBON),
    datetime(2026, 1, 15, 1, 30, 0, 42, tzinfo=LISBON),
    datetime(2026, 11, 1, 1, 30, tzinfo=NEW_YORK, fold=0),
    datetime(2026, 11, 1, 1, 30, tzinfo=NEW_YORK, fold=1),
    datetime(2026, 3, 29, 4, 0, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    datetime(2026, 3, 29, 4, 0, 0, 999999, tzinfo=timezone(timedelta(hours=-3, minutes=-30))),
    datetime(2026, 3, 29, 4, 0, 7),
    None,
]
METADATA: list[dict[str, Any] | None] = [
    None,
    {},
    {"source": "chat", "confidence": 0.92, "tags": ["flights", "seating"],
     "nested": {"deeper": {"list": [1, {"k": None}], "flag": True}}},
    {"città": "Lisboa", "名前": "東京タワー", "emoji": "🛫✈️", "quote": "\"«»\"\u2028"},
]
SCOPES: list[dict[str, Any]] = [
    {"thread_id": "thread-1", "user_id": "alice", "agent_id": "assistant"},
    {"thread_id": None, "user_id": None, "agent_id": None},
    {"user_id": "Zoë"},
]


def rows_of(record_type: str) -> list[dict[str, Any]]:
    """Varied rows of ``record_type``: each timestamp, metadata, scope and status in turn."""
    content: Any = {"summary": "Reisepläne", "open": ["Rückflug"]} \
        if record_type == "thread_summary" else "Zoë mag Fensterplätze nach Tōkyō 🗼"
    rows = []
    for i, ts in enumerate(TIMESTAMPS):
        row: dict[str, Any] = {"id": f"{record_type}-{i}", "record_type": record_type, "ts": ts,
                               "metadata": METADATA[i % len(METADATA)],
                               "status": (None, "valid", "invalid")[i % 3],
                               "content": None if i % 4 == 3 else content,
                               **SCOPES[i % len(SCOPES)]}
        if record_type == "message":
            row.update(role=(None, "user", "assistant")[i % 3], seq_no=(None, 0, 7, 12)[i % 4])
        if record_type == "image":
            row.update(mime_type="image/png", message_id=None, bytes=b"\x89PNG" if i % 2 else None)
        if record_type == "thread":
            row.update(runtime_config={"model": "x"} if i % 2 else None, runtime_state=None)
        rows.append(row)
    return rows


@pytest.mark.parametrize("record_type", sorted(RECORD_CLASS_BY_TYPE))
def test_every_record_type_is_built_as_the_general_construction_builds_it(
        record_type: str) -> None:
    for row in rows_of(record_type):
        assert_same(record_from_row(dict(row)), general(dict(row)))


def test_messages_of_parts_with_images_are_built_as_the_general_construction_builds_them() -> None:
    parts = [{"type": "text", "id": "p1", "text": "Voilà le plan ☕",
              "timestamp": "2026-11-30T14:05:17+00:00"},
             {"type": "image", "id": "p2", "mime_type": "image/jpeg", "description": "Karte"},
             {"type": "text", "id": "p3"}]
    row = {"id": "m1", "record_type": "message", "content": "Voilà le plan ☕", "role": "user",
           "seq_no": 3, "content_parts": parts, "metadata": METADATA[3], "status": "valid",
           "ts": TIMESTAMPS[0], "thread_id": "t", "user_id": "u", "agent_id": None}
    for images in (None, {}, {("m1", "p2"): b"\xff\xd8\xff"}):
        assert_same(record_from_row(dict(row), images), general(dict(row), images))


def test_linked_results_and_other_extra_fields_are_kept() -> None:
    child = MemoryRecord("c1", "child")
    relation = RecordRelation("r1", "m0", "memory", "c1", "memory", "supports",
                              "is_supported_by", None, {"why": "ça"}, "2026-01-01T00:00:00+00:00")
    linked = ((relation, child),)
    for record_type in ("memory", "fact", "message", "thread_summary", "user_profile", "image"):
        for row in rows_of(record_type)[:4]:
            assert_same(record_from_row(dict(row), linked_results=linked),
                        general(dict(row), linked_results=linked))
            assert_same(record_from_row(dict(row), linked_results=()),
                        general(dict(row), linked_results=()))
    row = rows_of("thread")[1]
    assert_same(record_from_row(dict(row), linked_results=linked, content="c"),
                general(dict(row), linked_results=linked, content="c"))


def test_rows_the_general_construction_refuses_are_refused_alike() -> None:
    row = rows_of("memory")[0]
    with pytest.raises(InvalidArgumentError, match="unknown record type 'memo'"):
        record_from_row(row | {"record_type": "memo"})
    with pytest.raises(ValueError, match="'deleted' is not a valid RecordStatus"):
        record_from_row(row | {"status": "deleted"})
    with pytest.raises(InvalidArgumentError, match="mime_type"):
        record_from_row(rows_of("image")[0] | {"mime_type": "image/gif"})


@pytest.mark.parametrize("zone", ["UTC", "Etc/UTC", "Europe/Lisbon", "Asia/Kolkata",
                                  "America/St_Johns"])
def test_rows_typed_by_the_driver_are_built_as_the_general_construction_builds_them(
        pg_url: str, zone: str) -> None:
    with psycopg.connect(pg_url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("SELECT set_config('TimeZone', %s, false)", [zone])
        rows = conn.execute(
            "SELECT 'mem-' || n AS id, t AS record_type, 'Zoë ' || n AS content, "
            "'thread-1' AS thread_id, 'alice' AS user_id, NULL::text AS agent_id, "
            "ts::timestamptz AS ts, m::jsonb AS metadata, 'valid' AS status, "
            "'user' AS role, n::bigint AS seq_no, NULL::jsonb AS content_parts "
            "FROM (VALUES (1, 'memory', '2026-11-30 14:05:17.123456+00', "
            "  '{\"tags\": [\"a\", {\"b\": null}], \"名前\": \"東京\"}'), "
            " (2, 'message', '2026-03-29 00:59:59.999999+00', NULL), "
            " (3, 'fact', '2026-10-25 01:30:00+00', '{}'), "
            " (4, 'thread_summary', '2026-01-01 00:00:00+00', '{\"n\": 1.5}')) "
            "AS v(n, t, ts, m)").fetchall()
    assert {r["ts"].tzinfo in _UTC_ZONES for r in rows} == {zone in ("UTC", "Etc/UTC")}
    for row in rows:
        assert_same(record_from_row(row), general(dict(row)))


def test_utc_zones_are_zones_at_offset_zero() -> None:
    zone: tzinfo
    for zone in _UTC_ZONES:
        for moment in (datetime(2026, 1, 1), datetime(2026, 7, 1), datetime(1970, 1, 1)):
            assert zone.utcoffset(moment) == timedelta(0)
