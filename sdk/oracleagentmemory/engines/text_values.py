"""Text the engines bind must be valid Unicode: the typed refusal when it is not.

A Python ``str`` can hold a lone UTF-16 surrogate (``"\\ud800"``, which JSON can escape), but no
database encoding can: the driver fails to encode the value. Both engines turn that failure into
:class:`~oracleagentmemory.errors.InvalidArgumentError`, so a caller's bad text is a caller's
error, never a driver or database error.
"""

from __future__ import annotations

from oracleagentmemory.errors import InvalidArgumentError


def not_unicode(exc: UnicodeEncodeError) -> InvalidArgumentError:
    """The typed error for a bound value the driver could not encode."""
    return InvalidArgumentError(
        "a text, id or metadata value (key or value) is not valid Unicode: it holds a lone "
        f"surrogate (U+{ord(exc.object[exc.start]):04X}) where only whole characters may stand")
