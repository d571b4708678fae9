"""XML-safe text for prompts: escaped character data and sanitised element names.

Record text must never close, open or inject an element of the rendering it is placed in:
``escape_text`` escapes the markup characters (``&``, ``<``, ``>``, ``"``; so ``]]>`` and
``</content>`` come out inert) and replaces characters XML 1.0 cannot carry at all (most C0
controls, lone surrogates, U+FFFE/U+FFFF) with U+FFFD; ``element_name`` turns an arbitrary key
into a valid element name made of letters, digits, ``_``, ``.`` and ``-`` only.
"""

from __future__ import annotations

import re

_MARKUP = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})
_NOT_XML_CHAR = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def escape_text(text: str) -> str:
    """``text`` as XML character data (safe inside an element or a double-quoted attribute)."""
    return _NOT_XML_CHAR.sub("\ufffd", text).translate(_MARKUP)


def element_name(key: str) -> str:
    """A valid XML element name derived from ``key`` (``"bad key"`` -> ``"badkey"``).

    Characters other than letters, digits, ``_``, ``.`` and ``-`` are dropped; a name that
    would be empty, start with a digit, ``.`` or ``-``, or start with ``xml`` (reserved) gets a
    leading ``_``.
    """
    name = "".join(c for c in key if (c.isalnum() and c.isprintable()) or c in "_.-")
    if not name or not (name[0].isalpha() or name[0] == "_") or name.lower().startswith("xml"):
        name = f"_{name}"
    return name
