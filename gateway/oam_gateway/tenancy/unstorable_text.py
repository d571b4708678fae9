"""Text the database cannot store: U+0000 and lone UTF-16 surrogates.

JSON carries both as valid escapes (``"\\u0000"``, ``"\\ud800"``), and Python decodes them into
strings that PostgreSQL's text and JSON types, the driver's UTF-8 encoder or a tokenizer then
refuse, as a server error. The gateway looks for them once, where a request's JSON is decoded (a
body, a tool call's arguments, a token's claims), and refuses the request there.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["describe", "unstorable_character"]

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""NUL, or a surrogate code point (one of a valid pair is decoded into its own character, so
any left in a string stands alone)."""


def unstorable_character(value: Any) -> str | None:
    """The first character the database cannot store in a string of ``value`` (an object's
    key or value, an array's item, at any depth), or ``None`` when there is none."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if (found := _UNSTORABLE.search(item)) is not None:
                return found.group()
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return None


def describe(character: str) -> str:
    """What ``character`` (one :func:`unstorable_character` found) is, for a problem detail."""
    if character == "\x00":
        return "a NUL character (U+0000), which cannot be stored"
    return f"text that is not valid Unicode (a lone UTF-16 surrogate, U+{ord(character):04X})"
