"""The thread-summary and context-card contracts."""

from __future__ import annotations

from abc import ABC, abstractmethod


class Summary(ABC):
    """A summary of a thread."""

    @property
    @abstractmethod
    def content(self) -> str:
        """The summary text."""


class ContextCard(ABC):
    """Prompt-ready context for a thread: summary, topics, relevant records, recent messages."""

    @property
    @abstractmethod
    def content(self) -> str:
        """The rendered context card."""
