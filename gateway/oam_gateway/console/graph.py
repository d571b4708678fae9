"""A memory and its relations as a picture: an SVG graph rendered on the server.

The memory sits in the middle, the memories it is related to on a circle around it, each a
link to its own page, each edge labelled with its relation type as seen from the middle. Only
presentation attributes and classes (styled by the console's stylesheet): no inline style or
script, which the console's Content-Security-Policy would refuse.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oam_gateway.console.markup import Html, html, join

__all__ = ["MAX_NEIGHBOURS", "Neighbour", "relation_graph"]

MAX_NEIGHBOURS = 12
"""The related memories drawn at most (the page lists them all)."""
_WIDTH, _HEIGHT = 640, 420
_RADIUS = 150
_LABEL_CHARS = 26


@dataclass(frozen=True)
class Neighbour:
    """A memory related to the one in the middle."""

    memory_id: str
    label: str
    relation_type: str
    """The relation as read from the middle memory (``supports``, ``supported_by``...)."""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_CHARS else text[:_LABEL_CHARS - 1] + "\u2026"


def _node(x: float, y: float, label: str, css_class: str, above: bool = False) -> Html:
    """A circle at ``(x, y)`` with its label below it (``above``: over it)."""
    return html('<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="30"/>'
                '<text class="node-label" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>',
                css_class, x, y, x, y - 40 if above else y + 48, _short(label))


def relation_graph(center_label: str, neighbours: Sequence[Neighbour],
                   href: Callable[[str], str]) -> Html:
    """The SVG of the memory labelled ``center_label`` and its ``neighbours`` (the first
    :data:`MAX_NEIGHBOURS`); ``href`` gives a related memory's page."""
    cx, cy = _WIDTH / 2, _HEIGHT / 2 - 10
    shown = list(neighbours)[:MAX_NEIGHBOURS]
    edges: list[Html] = []
    nodes: list[Html] = []
    for index, neighbour in enumerate(shown):
        angle = 2 * math.pi * index / max(len(shown), 1) - math.pi / 3
        x, y = cx + _RADIUS * math.cos(angle), cy + _RADIUS * 0.8 * math.sin(angle)
        edges.append(html('<line class="edge" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>'
                          '<text class="edge-label" x="{:.1f}" y="{:.1f}" '
                          'text-anchor="middle">{}</text>',
                          cx, cy, x, y, (cx + x) / 2, (cy + y) / 2 - 4,
                          _short(neighbour.relation_type)))
        nodes.append(html('<a href="{}"><title>{}</title>{}</a>', href(neighbour.memory_id),
                          neighbour.label, _node(x, y, neighbour.label, "node", y < cy)))
    description = (f"This memory and {len(shown)} related "
                   f"{'memory' if len(shown) == 1 else 'memories'}")
    return html('<svg class="graph" viewBox="0 0 {} {}" role="img" aria-label="{}" '
                'xmlns="http://www.w3.org/2000/svg">{}{}{}</svg>',
                _WIDTH, _HEIGHT, description, join(edges), join(nodes),
                _node(cx, cy, center_label, "node node-center"))
