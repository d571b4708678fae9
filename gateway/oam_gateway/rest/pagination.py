"""List pages, newest first, behind keyset cursors.

A page's ``next_cursor`` names the oldest item it holds by the list's order (a record's
``(timestamp, id)``, a relation's ``(created_at, id)``, a message's ``seq_no``) and the next
page starts strictly after it: an item added or deleted between two fetches neither repeats
nor pushes another out of the pages. The cursor is base64url JSON of those values and of the
list it belongs to. It needs no key (every replica reads every replica's cursors) because it
is checked in full (anything else is a 400) and can only narrow a list: the database still
decides which rows the caller sees, so a forged cursor, or another user's, only positions the
caller's own list.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Literal, TypeVar

from oracleagentmemory.apis.keyset import OlderThan

from oam_gateway.rest.endpoints import Call, RequestRefused

__all__ = ["ListName", "PageOf", "PageRequest", "Position", "page_of", "page_request"]

T = TypeVar("T")

ListName = Literal["memories", "threads", "relations", "messages"]
"""The lists behind cursors; a cursor works only for the list that made it."""

Position = tuple[str, str] | int
"""Where a page ends: ``(timestamp, id)``, or a message's ``seq_no``."""

_MAX_ID_LENGTH = 128
_MAX_SEQ_NO = 2 ** 63 - 1
_MAX_CURSOR_LENGTH = 4096
"""Longer than any cursor this module makes (an id of 128 escaped astral characters is about
2,200 characters of base64)."""


@dataclass(frozen=True)
class PageRequest:
    """How many items a page holds and the position it starts strictly after (``None``: the
    newest item)."""

    size: int
    after: Position | None

    @property
    def fetch(self) -> int:
        """How many items to ask the SDK for (one more tells whether a next page exists)."""
        return self.size + 1

    @property
    def older_than(self) -> OlderThan:
        """The SDK's keyset position of a record or relation list."""
        if self.after is None:
            return OlderThan()
        if isinstance(self.after, int):
            raise TypeError("a sequence-number cursor is not a record position")
        return OlderThan(*self.after)

    @property
    def before_seq_no(self) -> int | None:
        """The exclusive upper sequence number of a message list (``None``: the newest)."""
        if self.after is not None and not isinstance(self.after, int):
            raise TypeError("a record cursor is not a sequence number")
        return self.after


@dataclass(frozen=True)
class PageOf(Generic[T]):
    """The items of one page and the cursor of the next (``None``: this is the last)."""

    items: list[T]
    next_cursor: str | None


def page_request(call: Call, list_name: ListName) -> PageRequest:
    """The page a request to list ``list_name`` asks for (``limit`` and ``cursor`` query
    parameters)."""
    limits = call.limits
    raw_limit = call.query("limit")
    try:
        size = limits.default_page_size if raw_limit is None else int(raw_limit)
    except ValueError:
        raise RequestRefused(400, "invalid-request", "limit must be an integer") from None
    if not 1 <= size <= limits.max_page_size:
        raise RequestRefused(400, "invalid-request",
                             f"limit must be between 1 and {limits.max_page_size}")
    cursor = call.query("cursor")
    return PageRequest(size, None if cursor is None else _decode_cursor(cursor, list_name))


def page_of(oldest_first: Sequence[T], request: PageRequest, list_name: ListName,
            position: Callable[[T], Position]) -> PageOf[T]:
    """The page ``request`` asks for, from the SDK's answer (at most ``request.fetch`` items
    after the cursor, oldest first); ``position`` is where an item stands in the list."""
    newest_first = list(reversed(oldest_first))
    items = newest_first[:request.size]
    more = len(newest_first) > request.size
    return PageOf(items, _encode_cursor(list_name, position(items[-1])) if more else None)


def _encode_cursor(list_name: ListName, position: Position) -> str:
    """The opaque cursor of the page after ``position`` in ``list_name``."""
    if isinstance(position, int):
        payload: dict[str, object] = {"l": list_name, "s": position}
    else:
        payload = {"l": list_name, "t": position[0], "i": position[1]}
    text = json.dumps(payload, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, list_name: ListName) -> Position:
    """The position ``cursor`` names in ``list_name``, or a 400."""
    refused = RequestRefused(400, "invalid-request", f"the cursor is not a cursor of this "
                             f"list ({list_name}): pass the next_cursor of its previous page")
    if len(cursor) > _MAX_CURSOR_LENGTH:
        raise refused
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error, RecursionError):  # RecursionError: nested too deep
        raise refused from None
    if not isinstance(payload, dict) or payload.get("l") != list_name:
        raise refused
    if list_name == "messages":
        seq_no = payload.get("s")
        if (set(payload) != {"l", "s"} or not isinstance(seq_no, int)
                or isinstance(seq_no, bool) or not 0 <= seq_no <= _MAX_SEQ_NO):
            raise refused
        return seq_no
    timestamp, record_id = payload.get("t"), payload.get("i")
    if (set(payload) != {"l", "t", "i"} or not isinstance(timestamp, str)
            or not isinstance(record_id, str) or not _is_timestamp(timestamp)
            or not _is_id(record_id)):
        raise refused
    return timestamp, record_id


def _is_timestamp(text: str) -> bool:
    """ISO-8601 with a time zone, as records carry their times."""
    if len(text) > 40 or not text.isascii():
        return False
    try:
        return datetime.fromisoformat(text).tzinfo is not None
    except ValueError:
        return False


def _is_id(text: str) -> bool:
    """An id the stores could hold: 1 to 128 characters, not blank, valid Unicode, no NUL."""
    if not 0 < len(text) <= _MAX_ID_LENGTH or not text.strip() or "\x00" in text:
        return False
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True
