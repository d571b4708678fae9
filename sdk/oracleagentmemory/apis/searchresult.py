"""The search-result contract and its portable rendering options."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.records import Record, RecordStatus
from oracleagentmemory.apis.relations import RecordRelation


@dataclass(frozen=True, slots=True)
class SearchResultFormatConfig:
    """Portable search-result rendering options (implementations subclass it to add their own).

    ``include_invalid_results``: whether invalid linked records include their content. When
    ``False``, branches holding only invalid records are omitted, while an invalid record on
    the path to a valid one keeps its status and link context (not its content). Omit it to
    use ``True``.
    """

    include_invalid_results: bool | _NotSetMarker = NOT_SET_MARKER


class SearchResult(ABC):
    """One search match: the record, its graph context and its prompt rendering."""

    @property
    @abstractmethod
    def id(self) -> str | None:
        """Stable identifier of the matched record, when available."""

    @property
    @abstractmethod
    def record(self) -> Record:
        """The matched record (a :class:`Record`, often a ``ScopedRecord`` subclass)."""

    @property
    @abstractmethod
    def content(self) -> str:
        """Primary textual content of the matched record."""

    @property
    def status(self) -> RecordStatus | None:
        """Lifecycle status of the matched record."""
        return self.record.status

    @property
    def timestamp(self) -> str | None:
        """Event timestamp of the matched record, if any."""
        return self.record.timestamp

    @property
    def metadata(self) -> dict[str, Any] | None:
        """Caller metadata of the matched record, if any."""
        return self.record.metadata

    @property
    def linked_results(self) -> Sequence[tuple[RecordRelation, SearchResult]]:
        """Graph-linked child results: ``(relation, result reached through it)`` pairs."""
        return []

    @property
    def formatted_content(self) -> str:
        """The default prompt rendering (:meth:`format_content` with no options)."""
        return self.format_content()

    @abstractmethod
    def format_content(self, format_config: SearchResultFormatConfig | _NotSetMarker
                       = NOT_SET_MARKER) -> str:
        """Render this result and its graph context as prompt text."""


__all__ = ["SearchResult", "SearchResultFormatConfig"]
