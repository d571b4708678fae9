"""Splitting retrieval text into overlapping chunks."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True)
class TextChunker:
    """Splits text into chunks of at most ``size`` units with ``overlap`` units shared.

    ``unit`` is ``"chars"`` (characters; cuts fall on whitespace when possible) or ``"tokens"``
    (whitespace-separated words). Text no longer than ``size`` is one chunk. Caller-owned chunk
    lists are never passed through a chunker.
    """

    size: int = 2000
    overlap: int = 200
    unit: str = "chars"

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"size must be a positive int, got {self.size!r}")
        if isinstance(self.overlap, bool) or not isinstance(self.overlap, int) or not (
            0 <= self.overlap < self.size
        ):
            raise ValueError(f"overlap must be an int in [0, size), got {self.overlap!r}")
        if self.unit not in ("chars", "tokens"):
            raise ValueError(f"unit must be 'chars' or 'tokens', got {self.unit!r}")

    def __call__(self, text: str) -> list[str]:
        """Chunks of ``text`` in order; empty text gives no chunk."""
        if not text.strip():
            return []
        if self.unit == "tokens":
            return self._by_tokens(text)
        return self._by_chars(text)

    def _by_tokens(self, text: str) -> list[str]:
        tokens = _TOKEN.findall(text)
        if len(tokens) <= self.size:
            return [text]
        step = self.size - self.overlap
        return [" ".join(tokens[i : i + self.size]) for i in range(0, len(tokens) - self.overlap, step)]

    def _by_chars(self, text: str) -> list[str]:
        if len(text) <= self.size:
            return [text]
        chunks: list[str] = []
        start = 0
        while start < len(text):
            end = min(start + self.size, len(text))
            if end < len(text):
                cut = text.rfind(" ", start + self.overlap + 1, end)
                if cut > start:
                    end = cut
            piece = text[start:end].strip()
            if piece:
                chunks.append(piece)
            if end >= len(text):
                break
            next_start = max(end - self.overlap, start + 1)
            if not text[next_start - 1].isspace():
                space = text.find(" ", next_start, end)
                next_start = space + 1 if space != -1 else next_start
            start = next_start
        return chunks


DEFAULT_CHUNKER = TextChunker()
"""The store's default chunker: 2,000 characters with 200 characters of overlap."""
