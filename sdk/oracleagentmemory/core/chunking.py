"""Splitting retrieval text into overlapping chunks."""

from __future__ import annotations

import re
from dataclasses import dataclass

from oracleagentmemory.errors import InvalidArgumentError

_TOKEN = re.compile(r"\S+")
_SPACE = re.compile(r"\s")
_NON_SPACE = re.compile(r"\S")
_LAST_SPACE = re.compile(r".*\s", re.DOTALL)


@dataclass(frozen=True)
class TextChunker:
    """Splits text into chunks of at most ``size`` units with ``overlap`` units shared.

    ``unit`` is ``"chars"`` (characters; cuts fall on whitespace when possible) or ``"tokens"``
    (whitespace-separated words). Text no longer than ``size`` is one chunk, kept as given.
    Caller-owned chunk lists are never passed through a chunker.

    With ``"chars"``, each chunk is the longest run of whole words that fits in ``size``
    characters, with surrounding whitespace trimmed; any whitespace (spaces, tabs, newlines) is a
    word break. The next chunk starts at the first word start within the last ``overlap``
    characters, so the shared text is at most ``overlap`` characters and never begins inside a
    word. Only a word longer than ``size`` is split (into ``size``-character pieces that share
    ``overlap`` characters). With ``"tokens"``, chunks hold ``size`` tokens joined by single
    spaces and consecutive chunks share exactly ``overlap`` tokens.
    """

    size: int = 2000
    overlap: int = 200
    unit: str = "chars"

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise InvalidArgumentError(f"size must be a positive int, got {self.size!r}")
        if isinstance(self.overlap, bool) or not isinstance(self.overlap, int) or not (
            0 <= self.overlap < self.size
        ):
            raise InvalidArgumentError(f"overlap must be an int in [0, size), got {self.overlap!r}")
        if self.unit not in ("chars", "tokens"):
            raise InvalidArgumentError(f"unit must be 'chars' or 'tokens', got {self.unit!r}")

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
        starts = range(0, len(tokens) - self.overlap, step)
        return [" ".join(tokens[i : i + self.size]) for i in starts]

    def _by_chars(self, text: str) -> list[str]:
        if len(text) <= self.size:
            return [text]
        chunks: list[str] = []
        covered = 0  # end of the text the chunks so far hold
        start = _skip_space(text, 0)
        while start < len(text):  # ``start`` is always at a non-space character
            end = min(start + self.size, len(text))
            cut_on_space = False
            if end < len(text):
                # The last whitespace in (start, end]: the longest chunk that ends between words.
                last = _LAST_SPACE.match(text, start + 1, end + 1)
                if last is not None:
                    end = last.end() - 1
                    cut_on_space = True
            piece = text[start:end].rstrip()
            if start + len(piece) > covered:  # skip a piece the previous chunk already holds
                chunks.append(piece)
                covered = start + len(piece)
            if end >= len(text):
                break
            next_start = max(end - self.overlap, start + 1)
            if not text[next_start - 1].isspace():
                # Start the overlap at a word start; without one, start after the cut.
                space = _SPACE.search(text, next_start, end)
                if space is not None:
                    next_start = space.start() + 1
                elif cut_on_space:
                    next_start = end
            start = _skip_space(text, next_start)
        return chunks


def _skip_space(text: str, at: int) -> int:
    """The first non-whitespace position at or after ``at`` (``len(text)`` if none)."""
    found = _NON_SPACE.search(text, at)
    return found.start() if found is not None else len(text)


DEFAULT_CHUNKER = TextChunker()
"""The store's default chunker: 2,000 characters with 200 characters of overlap."""
