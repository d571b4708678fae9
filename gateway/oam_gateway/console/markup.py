"""HTML text that is safe by construction: every value is escaped unless it is already HTML.

:class:`Html` marks text as markup; :func:`html` fills a template with values, escaping each
one that is not :class:`Html` (with :func:`html.escape`, quotes included, so values are safe
in attributes too); :func:`join` concatenates fragments the same way.
"""

from __future__ import annotations

import html as _html
from collections.abc import Iterable

__all__ = ["Html", "html", "join"]


class Html(str):
    """Text known to be HTML (built by :func:`html` or :func:`join`, never from input)."""

    __slots__ = ()


def _escaped(value: object) -> object:
    if isinstance(value, Html) or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value  # markup, or a number (kept as one, for format specifications)
    return _html.escape(str(value), quote=True)


def html(template: str, *values: object) -> Html:
    """``template`` (HTML written in the code) with each ``{}`` replaced by a value, escaped
    unless it is :class:`Html` or a number (``{:.1f}`` formats one)."""
    return Html(template.format(*(_escaped(value) for value in values)))


def join(fragments: Iterable[object], separator: str = "") -> Html:
    """``fragments`` one after another, each escaped unless it is :class:`Html`."""
    return Html(separator.join(str(_escaped(fragment)) for fragment in fragments))
