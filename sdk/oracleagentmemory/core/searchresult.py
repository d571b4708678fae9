"""The Oracle search result and its XML-safe prompt rendering.

A result renders as one element named after its record type::

    <memory>
      <record_id>m1</record_id>
      <timestamp>2025-01-01T00:00:00Z</timestamp>
      <status>valid</status>
      <content>I like tea</content>
      <linked_records>
        <linked_record>
          <relation_type>supports</relation_type>
          <memory>...</memory>
        </linked_record>
      </linked_records>
    </memory>

Optional fields follow :class:`OracleSearchResultFormatConfig`. With ``show_metadata`` the
record's metadata renders inside ``<metadata>``, one element per key (the key, sanitised, as the
element name; the value as text). Every text is escaped (:mod:`oracleagentmemory.core._xmltext`),
so record content, metadata keys and values can neither close nor inject an element. A linked
record's ``relation_type`` is read from its parent's side: the relation's own type when the
parent is its source, the opposite type otherwise.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from numbers import Real
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.message import ImageContent, TextContent
from oracleagentmemory.apis.records import MessageRecord, Record, RecordStatus, ScopedRecord
from oracleagentmemory.apis.relations import RecordRelation
from oracleagentmemory.apis.searchresult import SearchResult, SearchResultFormatConfig
from oracleagentmemory.core._xmltext import element_name, escape_text
from oracleagentmemory.errors import InvalidArgumentTypeError

_INDENT = "  "


@dataclass(frozen=True, slots=True)
class OracleSearchResultFormatConfig(SearchResultFormatConfig):
    """Rendering options of :class:`OracleSearchResult` (every option may be omitted).

    An omitted option falls back to the result's default configuration, then to its documented
    default: ``show_thread_id`` False, ``show_distance`` (estimated relevance, ``1 - distance``)
    False, ``show_timestamp`` True, ``show_role`` (messages) True, ``show_user_id`` False,
    ``show_agent_id`` False, ``show_status`` True, ``show_metadata`` False,
    ``include_invalid_results`` True.

    Raises:
        InvalidArgumentTypeError: an option is neither a bool nor omitted.
    """

    show_thread_id: bool | _NotSetMarker = NOT_SET_MARKER
    show_distance: bool | _NotSetMarker = NOT_SET_MARKER
    show_timestamp: bool | _NotSetMarker = NOT_SET_MARKER
    show_role: bool | _NotSetMarker = NOT_SET_MARKER
    show_user_id: bool | _NotSetMarker = NOT_SET_MARKER
    show_agent_id: bool | _NotSetMarker = NOT_SET_MARKER
    show_status: bool | _NotSetMarker = NOT_SET_MARKER
    show_metadata: bool | _NotSetMarker = NOT_SET_MARKER

    def __post_init__(self) -> None:
        for option in fields(self):
            value = getattr(self, option.name)
            if not isinstance(value, bool | _NotSetMarker):
                raise InvalidArgumentTypeError(
                    f"{option.name} must be a bool, got {type(value).__name__}",
                    argument=option.name)


_FALLBACKS: dict[str, bool] = {
    "include_invalid_results": True,
    "show_thread_id": False,
    "show_distance": False,
    "show_timestamp": True,
    "show_role": True,
    "show_user_id": False,
    "show_agent_id": False,
    "show_status": True,
    "show_metadata": False,
}


@dataclass(frozen=True, slots=True)
class _Options:
    """Every rendering option decided (no omitted value left)."""

    include_invalid_results: bool
    show_thread_id: bool
    show_distance: bool
    show_timestamp: bool
    show_role: bool
    show_user_id: bool
    show_agent_id: bool
    show_status: bool
    show_metadata: bool


def _resolve_options(call: SearchResultFormatConfig | _NotSetMarker,
                     default: SearchResultFormatConfig) -> _Options:
    """Per option: the call's value, else the result default's, else the documented default."""
    decided: dict[str, bool] = {}
    for name, fallback in _FALLBACKS.items():
        value: Any = NOT_SET_MARKER
        for source in (call, default):
            value = getattr(source, name, NOT_SET_MARKER)
            if not isinstance(value, _NotSetMarker):
                break
        decided[name] = fallback if isinstance(value, _NotSetMarker) else bool(value)
    return _Options(**decided)


def record_text(record: Record) -> str:
    """The primary text of ``record``: its string content, the text (and image descriptions)
    of a message's parts joined by new lines, a structured content as JSON, or ``""``."""
    content = record.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)
    if isinstance(content, Sequence):
        parts = [part.text if isinstance(part, TextContent) else part.description
                 for part in content if isinstance(part, TextContent | ImageContent)]
        return "\n".join(part for part in parts if part)
    return str(content)


def _value_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class OracleSearchResult(SearchResult):
    """A search match returned by the Oracle memory client.

    Args:
        distance: distance from the query (smaller is better).
        record: the matched record.
        id: identifier of the stored record; defaults to ``record.id``.
        linked_results: graph-linked child results, ``(relation, result)`` pairs. ``None``
            (the default) derives them from ``record.linked_results``, each linked record
            becoming a child result with this result's distance and format configuration.
        format_config: default rendering options of :attr:`formatted_content` and
            :meth:`format_content`.

    Raises:
        InvalidArgumentTypeError: an argument has the wrong type.
    """

    __slots__ = ("_distance", "_format_config", "_formatted", "_id", "_linked_results",
                 "_record")

    _distance: float
    _record: Record
    _id: str | None
    _format_config: SearchResultFormatConfig
    _linked_results: list[tuple[RecordRelation, SearchResult]]
    _formatted: str | None

    def __init__(self, distance: float, record: Record, *, id: str | None = None,
                 linked_results: Sequence[tuple[RecordRelation, SearchResult]] | None = None,
                 format_config: SearchResultFormatConfig = OracleSearchResultFormatConfig(),
                 ) -> None:
        if isinstance(distance, bool) or not isinstance(distance, Real):
            raise InvalidArgumentTypeError(
                f"distance must be a number, got {type(distance).__name__}", argument="distance")
        if not isinstance(record, Record):
            raise InvalidArgumentTypeError(
                f"record must be a Record, got {type(record).__name__}", argument="record")
        if id is not None and not isinstance(id, str):
            raise InvalidArgumentTypeError(
                f"id must be a str or None, got {type(id).__name__}", argument="id")
        if not isinstance(format_config, SearchResultFormatConfig):
            raise InvalidArgumentTypeError(
                "format_config must be a SearchResultFormatConfig, got "
                f"{type(format_config).__name__}", argument="format_config")
        self._distance = float(distance)
        self._record = record
        self._id = id if id is not None else record.id
        self._format_config = format_config
        self._formatted = None
        if linked_results is None:
            self._linked_results = [
                (relation, OracleSearchResult(distance, linked, format_config=format_config))
                for relation, linked in record.linked_results]
        else:
            self._linked_results = _checked_links(linked_results)

    def __repr__(self) -> str:
        return (f"OracleSearchResult(distance={self._distance!r}, record={self._record!r}, "
                f"linked_results={len(self._linked_results)})")

    @property
    def distance(self) -> float:
        """Distance from the query (smaller is better)."""
        return self._distance

    @property
    def id(self) -> str | None:
        """Identifier of the matched record."""
        return self._id

    @property
    def record(self) -> Record:
        """The matched record (check ``isinstance(result.record, ScopedRecord)`` for scope)."""
        return self._record

    @property
    def status(self) -> RecordStatus | None:
        """Lifecycle status of the matched record."""
        return self._record.status

    @property
    def content(self) -> str:
        """Primary textual content of the matched record (see :func:`record_text`)."""
        return record_text(self._record)

    @property
    def timestamp(self) -> str | None:
        """Event timestamp of the matched record, if any."""
        return self._record.timestamp

    @property
    def metadata(self) -> dict[str, Any] | None:
        """Caller metadata of the matched record, if any."""
        return self._record.metadata

    @property
    def linked_results(self) -> list[tuple[RecordRelation, SearchResult]]:
        """Linked results in their shortest-path tree (a copy of the list)."""
        return list(self._linked_results)

    @property
    def formatted_content(self) -> str:
        """The XML-safe rendering with this result's default configuration (computed once: a
        result and its records never change)."""
        if self._formatted is None:
            self._formatted = self.format_content()
        return self._formatted

    def format_content(self, format_config: SearchResultFormatConfig | _NotSetMarker
                       = NOT_SET_MARKER) -> str:
        """Render this result and its graph context as XML-safe prompt text.

        Options omitted from ``format_config`` (or all, when it is omitted) fall back to this
        result's default configuration.

        Raises:
            InvalidArgumentTypeError: ``format_config`` is not a ``SearchResultFormatConfig``.
        """
        if not isinstance(format_config, SearchResultFormatConfig | _NotSetMarker):
            raise InvalidArgumentTypeError(
                "format_config must be a SearchResultFormatConfig, got "
                f"{type(format_config).__name__}", argument="format_config")
        options = _resolve_options(format_config, self._format_config)
        lines: list[str] = []
        _render(self, options, 0, lines, with_content=True)
        return "\n".join(lines)


def _checked_links(links: object) -> list[tuple[RecordRelation, SearchResult]]:
    if not isinstance(links, list | tuple):
        raise InvalidArgumentTypeError(
            f"linked_results must be a list, got {type(links).__name__}",
            argument="linked_results")
    for position, link in enumerate(links):
        if not (isinstance(link, tuple) and len(link) == 2
                and isinstance(link[0], RecordRelation) and isinstance(link[1], SearchResult)):
            raise InvalidArgumentTypeError(
                "linked_results items must be (RecordRelation, SearchResult) pairs",
                argument=f"linked_results[{position}]")
    return list(links)


def _has_valid_record(result: SearchResult) -> bool:
    """Whether ``result`` or any result linked below it is not invalid."""
    if result.status is not RecordStatus.INVALID:
        return True
    return any(_has_valid_record(child) for _, child in result.linked_results)


def _field(lines: list[str], depth: int, name: str, value: str) -> None:
    lines.append(f"{_INDENT * depth}<{name}>{escape_text(value)}</{name}>")


def _render(result: SearchResult, options: _Options, depth: int, lines: list[str], *,
            with_content: bool) -> None:
    record = result.record
    tag = element_name(record.record_type)
    pad = _INDENT * depth
    lines.append(f"{pad}<{tag}>")
    inner = depth + 1
    _field(lines, inner, "record_id", result.id if result.id is not None else record.id)
    scoped = record if isinstance(record, ScopedRecord) else None
    if options.show_thread_id and scoped is not None and scoped.thread_id is not None:
        _field(lines, inner, "thread_id", scoped.thread_id)
    distance = getattr(result, "distance", None)
    if options.show_distance and isinstance(distance, float) and math.isfinite(distance):
        _field(lines, inner, "estimated_relevance", f"{1.0 - distance:.6f}")
    if options.show_timestamp and result.timestamp is not None:
        _field(lines, inner, "timestamp", result.timestamp)
    if options.show_role and isinstance(record, MessageRecord) and record.role is not None:
        _field(lines, inner, "role", record.role)
    if options.show_user_id and scoped is not None and scoped.user_id is not None:
        _field(lines, inner, "user_id", scoped.user_id)
    if options.show_agent_id and scoped is not None and scoped.agent_id is not None:
        _field(lines, inner, "agent_id", scoped.agent_id)
    if options.show_status and result.status is not None:
        _field(lines, inner, "status", RecordStatus(result.status).value)
    metadata = result.metadata
    if options.show_metadata and metadata:
        lines.append(f"{_INDENT * inner}<metadata>")
        for key, value in metadata.items():
            _field(lines, inner + 1, element_name(str(key)), _value_text(value))
        lines.append(f"{_INDENT * inner}</metadata>")
    text = result.content
    if with_content and text:
        _field(lines, inner, "content", text)
    _render_links(result, options, inner, lines)
    lines.append(f"{pad}</{tag}>")


def _render_links(result: SearchResult, options: _Options, depth: int,
                  lines: list[str]) -> None:
    links = [(relation, child) for relation, child in result.linked_results
             if options.include_invalid_results or _has_valid_record(child)]
    if not links:
        return
    pad = _INDENT * depth
    lines.append(f"{pad}<linked_records>")
    for relation, child in links:
        lines.append(f"{pad}{_INDENT}<linked_record>")
        _field(lines, depth + 2, "relation_type",
               relation.relation_type_from(result.record.id))
        show_content = options.include_invalid_results or child.status is not RecordStatus.INVALID
        _render(child, options, depth + 2, lines, with_content=show_content)
        lines.append(f"{pad}{_INDENT}</linked_record>")
    lines.append(f"{pad}</linked_records>")


__all__ = ["OracleSearchResult", "OracleSearchResultFormatConfig", "record_text"]
