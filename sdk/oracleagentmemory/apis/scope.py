"""Record scopes: the user, agent and thread a record belongs to or a search is limited to."""

from __future__ import annotations

from dataclasses import dataclass

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker


@dataclass
class Scope:
    """The scope of a write or a search.

    Each field is a concrete id, ``None`` (unscoped on that dimension) or ``NOT_SET_MARKER``
    (omitted: the operation's default applies).
    """

    user_id: str | None | _NotSetMarker = NOT_SET_MARKER
    agent_id: str | None | _NotSetMarker = NOT_SET_MARKER
    thread_id: str | None | _NotSetMarker = NOT_SET_MARKER


@dataclass
class SearchScope(Scope):
    """The scope of a search, with one exact-match flag per dimension.

    A resolved ``exact_*_match=True`` matches that id exactly (``None``: only records unscoped on
    that dimension); ``False`` leaves the dimension unconstrained.
    """

    exact_user_match: bool | _NotSetMarker = NOT_SET_MARKER
    exact_agent_match: bool | _NotSetMarker = NOT_SET_MARKER
    exact_thread_match: bool | _NotSetMarker = NOT_SET_MARKER
