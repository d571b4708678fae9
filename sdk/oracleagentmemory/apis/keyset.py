"""``OlderThan``: keyset pages of a newest-first list (an extension of the spec's list calls).

The spec's list calls return "the most recent ``limit``" items: a client that pages by
counting items back sees an item twice when one is added between two pages, and misses one
when one is deleted. Passing ``older_than=`` to :meth:`IMemoryStore.list`,
:meth:`IMemoryStore.list_relations`, ``OracleAgentMemory.list_memories`` or
``OracleAgentMemory.list_threads`` orders the list by ``(timestamp, id)`` instead (a
relation by ``(created_at, id)``; ids compare by code point) and returns the most recent
``limit`` items strictly older than the position, oldest first. A thread's messages page by
sequence number with ``list_thread_messages(range_end_seq_no=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OlderThan:
    """A position in a list ordered by ``(timestamp, id)``, newest first.

    ``OlderThan()`` starts at the newest item; ``OlderThan(timestamp, record_id)`` (both
    given) lists the items strictly older than that one: pass the oldest item of a page
    (a record's ``timestamp`` and ``id``, a relation's ``created_at`` and ``id``) to get the
    next page. ``timestamp`` is ISO-8601 text with a time zone, as records carry it.

    Example::

        page = client.list_memories(user_id="u1", limit=20, older_than=OlderThan())
        while page:
            ...  # page is oldest first
            page = client.list_memories(user_id="u1", limit=20, older_than=OlderThan(
                page[0].timestamp, page[0].id))
    """

    timestamp: str | None = None
    record_id: str | None = None
