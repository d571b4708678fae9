"""``OracleSummary`` and ``OracleContextCard``: what a thread returns for prompts."""

from __future__ import annotations

import string
from collections.abc import Sequence

from oracleagentmemory.apis.message import Message
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.apis.summary import ContextCard, Summary
from oracleagentmemory.core._xmltext import escape_text
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["DEFAULT_MESSAGE_FORMAT", "OracleContextCard", "OracleSummary"]

DEFAULT_MESSAGE_FORMAT = ("<message>\n  <timestamp>{timestamp}</timestamp>\n  <role>{role}</role>\n"
                          "  <content>{content}</content>\n</message>")
"""How a context card renders each recent message: a ``str.format`` template over
``{timestamp}``, ``{role}`` and ``{content}`` (each XML-escaped)."""

_MESSAGE_FIELDS = frozenset({"timestamp", "role", "content"})


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
    """A thread's context card; :attr:`content` is the rendered card (XML-safe), each recent
    message rendered by ``message_format`` (:data:`DEFAULT_MESSAGE_FORMAT`)."""

    def __init__(self, summary: str, topics: Sequence[str] | None = None,
                 relevant_results: Sequence[SearchResult] | None = None,
                 recent_messages: Sequence[Message] | None = None,
                 message_format: str = DEFAULT_MESSAGE_FORMAT) -> None:
        self.message_format = _checked_format(message_format)
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
                parts.extend(f"    {line}" for line in self.message_format.format(
                    timestamp=escape_text(message.timestamp or ""),
                    role=escape_text(message.role),
                    content=escape_text(message.text)).splitlines())
            parts.append("  </recent_messages>")
        parts.append("</context_card>")
        return "\n".join(parts)


def _checked_format(message_format: object) -> str:
    """``message_format`` if it is a ``str.format`` template naming only the message fields."""
    if not isinstance(message_format, str):
        raise InvalidArgumentTypeError(
            f"message_format must be a str, got {type(message_format).__name__}",
            argument="message_format")
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(message_format)
                 if name is not None}
    except ValueError as exc:
        raise InvalidArgumentError(f"message_format is not a format string: {exc}",
                                   argument="message_format") from None
    if not names <= _MESSAGE_FIELDS:
        raise InvalidArgumentError(
            f"message_format may name only {{timestamp}}, {{role}} and {{content}}, got "
            f"{sorted(names - _MESSAGE_FIELDS)}", argument="message_format")
    return message_format
