"""``OracleSummary`` and ``OracleContextCard``: what a thread returns for prompts."""

from __future__ import annotations

from collections.abc import Sequence

from oracleagentmemory.apis.message import Message
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.summary import ContextCard, Summary
from oracleagentmemory.core._xmltext import escape_text


class OracleSummary(Summary):
    """A thread summary; :attr:`formatted_content` is its XML-safe prompt rendering."""

    def __init__(self, content: str) -> None:
        self._content = content

    def __repr__(self) -> str:
        return f"OracleSummary(content={self._content!r})"

    @property
    def content(self) -> str:
        """The summary text."""
        return self._content

    @property
    def formatted_content(self) -> str:
        """``<summary>...</summary>`` with the text escaped."""
        return f"<summary>{escape_text(self._content)}</summary>"


class OracleContextCard(ContextCard):
    """A thread's context card; :attr:`content` is the rendered card (XML-safe)."""

    def __init__(self, summary: str, topics: Sequence[str] | None = None,
                 relevant_results: Sequence[SearchResult] | None = None,
                 recent_messages: Sequence[Message] | None = None) -> None:
        self.summary = summary
        self.topics = list(topics or [])
        self.relevant_results = list(relevant_results or [])
        self.recent_messages = list(recent_messages or [])

    def __repr__(self) -> str:
        return (f"OracleContextCard(topics={self.topics!r}, "
                f"relevant_results={len(self.relevant_results)}, "
                f"recent_messages={len(self.recent_messages)})")

    @property
    def content(self) -> str:
        """The whole card, rendered."""
        return self.formatted_content

    @property
    def formatted_content(self) -> str:
        """The card as XML-safe prompt text (sections without content are left out)."""
        parts = ["<context_card>", f"  <summary>{escape_text(self.summary)}</summary>"]
        if self.topics:
            parts.append("  <topics>")
            parts.extend(f"    <topic>{escape_text(t)}</topic>" for t in self.topics)
            parts.append("  </topics>")
        if self.relevant_results:
            parts.append("  <relevant_information>")
            for result in self.relevant_results:
                parts.extend(f"    {line}" for line in result.formatted_content.splitlines())
            parts.append("  </relevant_information>")
        if self.recent_messages:
            parts.append("  <recent_messages>")
            for message in self.recent_messages:
                parts.extend(f"    {line}" for line in _message_xml(message).splitlines())
            parts.append("  </recent_messages>")
        parts.append("</context_card>")
        return "\n".join(parts)


def _message_xml(message: Message) -> str:
    return ("<message>\n"
            f"  <timestamp>{escape_text(message.timestamp or '')}</timestamp>\n"
            f"  <role>{escape_text(message.role)}</role>\n"
            f"  <content>{escape_text(message.text)}</content>\n"
            "</message>")
