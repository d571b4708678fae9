"""List pages, newest first, behind opaque cursors.

A cursor encodes how many newer items the previous pages held. The SDK lists "the most recent
``n``", so page ``p`` asks for ``offset + size + 1`` items and keeps its slice; pages reach back
:data:`~oracleagentmemory.apis.memorystore.MAX_LIST_LIMIT` items at most.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from oracleagentmemory.apis.memorystore import MAX_LIST_LIMIT

from oam_gateway.endpoints import Call, RequestRefused

T = TypeVar("T")


@dataclass(frozen=True)
class PageRequest:
    """Where a page starts and how many items it holds."""

    offset: int
    size: int

    @property
    def fetch(self) -> int:
        """How many of the most recent items to ask the SDK for."""
        return self.offset + self.size + 1


@dataclass(frozen=True)
class PageOf(Generic[T]):
    """The items of one page and the cursor of the next (``None``: this is the last)."""

    items: list[T]
    next_cursor: str | None


def page_request(call: Call) -> PageRequest:
    """The page a list request asks for (``limit`` and ``cursor`` query parameters)."""
    limits = call.limits
    raw_limit = call.query("limit")
    try:
        size = limits.default_page_size if raw_limit is None else int(raw_limit)
    except ValueError:
        raise RequestRefused(400, "invalid-request", "limit must be an integer") from None
    if not 1 <= size <= limits.max_page_size:
        raise RequestRefused(400, "invalid-request",
                             f"limit must be between 1 and {limits.max_page_size}")
    offset = _offset(call.query("cursor"))
    if offset + size + 1 > MAX_LIST_LIMIT:
        raise RequestRefused(400, "invalid-request",
                             f"lists reach back {MAX_LIST_LIMIT} items at most")
    return PageRequest(offset, size)


def page_of(oldest_first: Sequence[T], request: PageRequest) -> PageOf[T]:
    """The page ``request`` asks for, from the SDK's answer (the most recent items, oldest
    first)."""
    newest_first = list(reversed(oldest_first))
    items = newest_first[request.offset:request.offset + request.size]
    more = len(newest_first) > request.offset + request.size
    return PageOf(items, encode_cursor(request.offset + request.size) if more else None)


def encode_cursor(offset: int) -> str:
    """The opaque cursor of a page starting ``offset`` items back."""
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset = decoded["o"]
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise RequestRefused(400, "invalid-request", "the cursor is not valid") from None
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise RequestRefused(400, "invalid-request", "the cursor is not valid")
    return offset
