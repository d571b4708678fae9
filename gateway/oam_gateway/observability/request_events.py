"""The one event every request leaves: who did what to which records, and how it ended.

A route fills the :class:`RequestEvent` of its request (:func:`event_of`) with the operation's
name, the record ids it touched and how many results it answered; the request-event middleware
creates the event before the route runs and emits it when the response is complete, with the
tenant, end user, outcome and trace id. Events never hold contents, queries or tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from starlette.requests import Request

__all__ = ["EVENT_SCOPE_KEY", "RequestEvent", "event_of"]

EVENT_SCOPE_KEY = "oam.event"


@dataclass
class RequestEvent:
    """What a request did (filled by its route) and who asked (filled by the middleware)."""

    operation: str | None = None
    """The operation's stable name (``memories.get``, ``search``...); ``None`` before routing."""
    record_ids: list[str] = field(default_factory=list)
    result_count: int | None = None
    tenant: str | None = None
    end_user: str | None = None
    status: int | None = None
    """The operation's own status when the HTTP one does not tell it (an MCP tool error rides
    on an HTTP 200); the audit event reports it in place of the HTTP status."""

    def touched(self, record_ids: Iterable[str]) -> None:
        """Add ``record_ids`` to the ids the request touched."""
        self.record_ids.extend(record_ids)


def event_of(request: Request) -> RequestEvent:
    """The event of ``request`` (a fresh one, kept in its scope, when no middleware made one)."""
    scope = request.scope
    event = scope.get(EVENT_SCOPE_KEY)
    if not isinstance(event, RequestEvent):
        event = RequestEvent()
        scope[EVENT_SCOPE_KEY] = event
    return event
