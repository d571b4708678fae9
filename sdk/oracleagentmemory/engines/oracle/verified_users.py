"""Which end user the database reported for each python-oracledb end-user context.

python-oracledb's :class:`oracledb.EndUserSecurityContext` keeps its end user inside the
driver (``_impl``) and names nobody publicly, and for an identity provider's token only the
database knows the name. The engine therefore remembers the name that ``SELECT
ORA_END_USER_CONTEXT.username FROM dual`` returned when it attached a context
(:func:`~oracleagentmemory.engines.oracle.context.attached_context`), per context object.

The memo holds its keys weakly (the driver's class allows weak references): a context the
application drops is forgotten with it, and a new object that reuses a dropped one's ``id()``
is never taken for it. Were a context type to refuse weak references, the memo falls back to a
bounded map that keeps its most recent contexts alive (so their ids cannot be reused while
they are keys) and forgets the oldest beyond :data:`STRONG_CAPACITY`.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

STRONG_CAPACITY = 1024
"""The most contexts remembered when a context type refuses weak references."""


class VerifiedUsers:
    """Thread-safe memo: context object -> the end user the database verified for it."""

    def __init__(self, strong_capacity: int = STRONG_CAPACITY) -> None:
        self._lock = threading.Lock()
        self._weak: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()
        self._strong: OrderedDict[int, tuple[object, str]] = OrderedDict()
        self._capacity = strong_capacity

    def remember(self, context: object, username: str) -> None:
        """Record that the database ran ``context``'s operations as ``username``."""
        with self._lock:
            try:
                self._weak[context] = username
                return
            except TypeError:  # no weak references to this type: keep it alive instead
                pass
            key = id(context)
            self._strong[key] = (context, username)
            self._strong.move_to_end(key)
            while len(self._strong) > self._capacity:
                self._strong.popitem(last=False)

    def get(self, context: object) -> str | None:
        """The end user last verified for ``context``; ``None`` before its first operation."""
        with self._lock:
            try:
                return self._weak.get(context)
            except TypeError:
                pass
            held = self._strong.get(id(context))
            # The entry keeps its object alive, so the same id is the same object.
            return held[1] if held is not None and held[0] is context else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._weak) + len(self._strong)
