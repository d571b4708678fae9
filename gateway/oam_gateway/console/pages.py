"""The console's pages as HTML, rendered on the server from the REST operations' models.

Each function returns a whole document (:func:`document`) or a part of one. Every value from
the database or the request is escaped (:mod:`oam_gateway.console.markup`); every form that
changes something carries the session's CSRF token; every control is a real link, button or
labelled field, so the console works with a keyboard and without script.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import groupby
from typing import Any
from urllib.parse import quote, urlencode

from oam_gateway.console.markup import Html, html, join
from oam_gateway.rest.models import ErasureReceipt, Me, Page, Record, SearchHit

__all__ = ["CSRF_FIELD", "MEMORY_TYPES", "Links", "data_page", "document", "erased_page",
           "error_page", "memories_page", "memory_page", "profile_page", "record_text",
           "signed_out_page",
           "thread_page", "threads_page", "timeline_page"]

CSRF_FIELD = "csrf_token"
MEMORY_TYPES = frozenset({"memory", "fact", "preference", "guideline"})
"""The record types a memory page shows (the other records are threads and messages)."""


class Links:
    """The console's addresses under its base path (``/console``, after any root path)."""

    def __init__(self, base: str) -> None:
        self.base = base

    def to(self, path: str = "", **query: str | None) -> str:
        """``base + path`` with the ``query`` values that are set."""
        given = {name: value for name, value in query.items() if value}
        return self.base + path + (f"?{urlencode(given)}" if given else "")

    def memory(self, memory_id: str) -> str:
        return self.to(f"/memories/{quote(memory_id, safe='')}")

    def thread(self, thread_id: str) -> str:
        return self.to(f"/threads/{quote(thread_id, safe='')}")


def record_text(content: Any) -> str:
    """A record's content as text."""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _time(timestamp: str | None, *, clock_only: bool = False) -> Html:
    """``timestamp`` to the minute (``clock_only``: the time of day alone)."""
    if not timestamp:
        return Html("")
    shown = timestamp[11:16] if clock_only else timestamp[:16].replace("T", " ")
    return html('<time datetime="{}">{}</time>', timestamp, shown)


def _csrf(token: str) -> Html:
    return html('<input type="hidden" name="{}" value="{}">', CSRF_FIELD, token)


def document(links: Links, title: str, body: Html, *, csrf_token: str | None = None,
             current: str = "") -> Html:
    """A whole page: the header with the navigation and sign-out (when signed in) around
    ``body``."""
    header = Html("")
    if csrf_token is not None:
        items = [("/memories", "Memories"), ("/timeline", "Timeline"), ("/threads", "Threads"),
                 ("/profile", "Profile"), ("/data", "Your data")]
        nav = join(html('<li><a href="{}"{}>{}</a></li>', links.to(path),
                        Html(' aria-current="page"') if path == current else Html(""), label)
                   for path, label in items)
        header = html('<nav aria-label="Console"><ul>{}</ul></nav>'
                      '<form class="sign-out" method="post" action="{}">{}'
                      '<button type="submit">Sign out</button></form>',
                      nav, links.to("/sign-out"), _csrf(csrf_token))
    return html('<!doctype html><html lang="en"><head><meta charset="utf-8">'
                '<meta name="viewport" content="width=device-width, initial-scale=1">'
                '<title>{} \u00b7 Memory console</title>'
                '<link rel="stylesheet" href="{}"></head><body>'
                '<a class="skip" href="#main">Skip to the content</a>'
                '<header class="top"><a class="brand" href="{}">Memory console</a>{}</header>'
                '<main id="main"><h1>{}</h1>{}</main></body></html>',
                title, links.to("/static/console.css"), links.to(), header, title, body)


def signed_out_page(links: Links, tenants: Sequence[str], notice: str = "") -> Html:
    """The sign-in page: one link per tenant whose console is set up."""
    intro = html('<p class="notice" role="status">{}</p>', notice) if notice else Html("")
    if not tenants:
        body = html('{}<p class="empty">The console is not set up for any tenant of this '
                    'gateway.</p>', intro)
    elif len(tenants) == 1:
        body = html('{}<p>See and manage what your AI agents remember about you.</p>'
                    '<p><a class="button" href="{}">Sign in</a></p>', intro,
                    links.to("/sign-in", tenant=tenants[0]))
    else:
        choices = join(html('<li><a class="button" href="{}">Sign in to {}</a></li>',
                            links.to("/sign-in", tenant=name), name) for name in tenants)
        body = html('{}<p>See and manage what your AI agents remember about you.</p>'
                    '<ul class="choices">{}</ul>', intro, choices)
    return document(links, "Sign in", body)


def error_page(links: Links, status: int, detail: str, csrf_token: str | None) -> Html:
    """What went wrong, with the way back."""
    titles = {400: "That did not work", 403: "Not allowed", 404: "Not found",
              429: "Slow down", 502: "Sign-in failed", 503: "Try again shortly"}
    title = titles.get(status, "Something went wrong")
    body = html('<div class="error" role="alert"><p>{}</p><p class="status">Status {}</p></div>'
                '<p><a href="{}">Back to your memories</a></p>', detail, status,
                links.to("/memories"))
    return document(links, title, body, csrf_token=csrf_token)


def _memory_item(links: Links, record: Record) -> Html:
    return html('<li class="card"><a href="{}">{}</a><p class="meta">{} {}</p></li>',
                links.memory(record.id), record_text(record.content), record.record_type,
                _time(record.timestamp))


def _hit_item(links: Links, hit: SearchHit) -> Html:
    record = hit.record
    if record.record_type in MEMORY_TYPES:
        return _memory_item(links, record)
    where = (html(' in <a href="{}">its thread</a>', links.thread(record.thread_id))
             if record.thread_id else Html(""))
    return html('<li class="card"><p>{}</p><p class="meta">{}{} {}</p></li>',
                record_text(record.content), record.record_type, where, _time(record.timestamp))


def _next(links: Links, path: str, cursor: str | None, **query: str | None) -> Html:
    if cursor is None:
        return Html("")
    return html('<p class="pager"><a href="{}" rel="next">Older</a></p>',
                links.to(path, cursor=cursor, **query))


def memories_page(links: Links, csrf_token: str, *, page: Page | None = None,
                  query: str = "", hits: Sequence[SearchHit] = ()) -> Html:
    """The person's memories (``page``), or what a search for ``query`` found (``hits``),
    with the forms to search and to add a memory."""
    search = html('<form class="search" method="get" action="{}" role="search">'
                  '<label for="q">Search your memories</label>'
                  '<input id="q" name="q" type="search" value="{}" maxlength="2000">'
                  '<button type="submit">Search</button></form>', links.to("/memories"), query)
    add = html('<form class="add" method="post" action="{}">{}'
               '<label for="content">Add a memory</label>'
               '<textarea id="content" name="content" rows="2" required></textarea>'
               '<button type="submit">Add</button></form>', links.to("/memories"),
               _csrf(csrf_token))
    if query:
        items = join(_hit_item(links, hit) for hit in hits)
        listing = (html('<h2>Found for \u201c{}\u201d</h2><ul class="cards" id="results">{}</ul>'
                        '<p><a href="{}">All memories</a></p>', query, items,
                        links.to("/memories"))
                   if hits else
                   html('<h2>Found for \u201c{}\u201d</h2><p class="empty" id="results">Nothing '
                        'matches. <a href="{}">All memories</a></p>', query,
                        links.to("/memories")))
    else:
        assert page is not None
        items = join(_memory_item(links, record) for record in page.items)
        listing = (html('<ul class="cards" id="results">{}</ul>{}', items,
                        _next(links, "/memories", page.next_cursor))
                   if page.items else
                   Html('<p class="empty" id="results">No memories yet. Your agents add them '
                        'as you talk to them, or add one above.</p>'))
    return document(links, "Memories", join([search, add, listing]), csrf_token=csrf_token,
                    current="/memories")


def memory_page(links: Links, csrf_token: str, record: Record, graph: Html,
                relations: Sequence[tuple[str, str, str]]) -> Html:
    """One memory: its text to edit, its relations (``(type, other id, other text)``) as a
    graph and a list, and the button to delete it."""
    details = html('<p class="meta">{} {}{}</p>', record.record_type, _time(record.timestamp),
                   f" \u00b7 {record.status}" if record.status else "")
    edit = html('<form class="edit" method="post" action="{}">{}'
                '<label for="content">Text</label>'
                '<textarea id="content" name="content" rows="4" required>{}</textarea>'
                '<button type="submit">Save</button></form>', links.memory(record.id),
                _csrf(csrf_token), record_text(record.content))
    if relations:
        related = join(html('<li>{} <a href="{}">{}</a></li>', kind, links.memory(other),
                            text) for kind, other, text in relations)
        linked = html('<h2>Relations</h2><figure>{}<figcaption>This memory in the middle, '
                      'the memories it is related to around it.</figcaption></figure>'
                      '<ul class="relations">{}</ul>', graph, related)
    else:
        linked = Html('<h2>Relations</h2><p class="empty">No relations yet.</p>')
    delete = html('<form class="delete" method="post" action="{}">{}'
                  '<button type="submit" class="danger">Delete this memory</button></form>',
                  links.to(f"/memories/{quote(record.id, safe='')}/delete"), _csrf(csrf_token))
    return document(links, "Memory", join([details, edit, linked, delete]),
                    csrf_token=csrf_token, current="/memories")


def timeline_page(links: Links, csrf_token: str, page: Page) -> Html:
    """The person's memories by day, newest first."""
    if not page.items:
        body = Html('<p class="empty">No memories yet.</p>')
    else:
        days = []
        for day, records in groupby(page.items, key=lambda r: (r.timestamp or "")[:10]):
            entries = join(html('<li><span class="when">{}</span> <a href="{}">{}</a></li>',
                                _time(r.timestamp, clock_only=True), links.memory(r.id),
                                record_text(r.content))
                           for r in records)
            days.append(html('<li class="day"><h2><time datetime="{}">{}</time></h2>'
                             '<ol class="entries">{}</ol></li>', day, day or "undated",
                             entries))
        body = html('<ol class="timeline">{}</ol>{}', join(days),
                    _next(links, "/timeline", page.next_cursor))
    return document(links, "Timeline", body, csrf_token=csrf_token, current="/timeline")


def threads_page(links: Links, csrf_token: str, page: Page) -> Html:
    """The person's conversation threads."""
    if not page.items:
        body = Html('<p class="empty">No conversations yet.</p>')
    else:
        items = join(html('<li class="card"><a href="{}">Thread {}</a><p class="meta">{}{}</p>'
                          '</li>', links.thread(t.id), t.id, _time(t.timestamp),
                          f" \u00b7 agent {t.agent_id}" if t.agent_id else "")
                     for t in page.items)
        body = html('<ul class="cards">{}</ul>{}', items,
                    _next(links, "/threads", page.next_cursor))
    return document(links, "Threads", body, csrf_token=csrf_token, current="/threads")


def thread_page(links: Links, csrf_token: str, thread: Record, messages: Page) -> Html:
    """One thread's messages, newest first."""
    if not messages.items:
        listing = Html('<p class="empty">No messages in this thread.</p>')
    else:
        items = join(html('<li class="message"><p class="meta">{} {}</p><p>{}</p></li>',
                          (m.metadata or {}).get("role", m.record_type), _time(m.timestamp),
                          record_text(m.content)) for m in messages.items)
        listing = html('<ol class="messages">{}</ol>{}', items,
                       _next(links, f"/threads/{quote(thread.id, safe='')}",
                             messages.next_cursor))
    body = html('<p class="meta">Thread {} {}</p>{}', thread.id, _time(thread.timestamp),
                listing)
    return document(links, "Conversation", body, csrf_token=csrf_token, current="/threads")


def profile_page(links: Links, csrf_token: str, me: Me, profile: Record | None) -> Html:
    """Who the console knows the person as, and their profile."""
    facts = [("User", me.user_name), ("Tenant", me.tenant),
             ("Groups", ", ".join(me.groups) or "none"), ("Access", " ".join(me.scopes))]
    rows = join(html('<dt>{}</dt><dd>{}</dd>', name, value) for name, value in facts)
    about = (html('<h2>Profile</h2><p>{}</p>', record_text(profile.content)) if profile is not None
             else Html('<h2>Profile</h2><p class="empty">No profile yet.</p>'))
    return document(links, "Profile", html('<dl class="facts">{}</dl>{}', rows, about),
                    csrf_token=csrf_token, current="/profile")


def data_page(links: Links, csrf_token: str) -> Html:
    """Download everything, or erase everything after a confirmation."""
    body = html('<h2>Download</h2><p>Everything the memory store holds for you, one record '
                'a line (JSON lines).</p><p><a class="button" href="{}" download>Download '
                'your data</a></p>'
                '<h2>Erase</h2><p>Erase every memory, thread, message and profile the store '
                'holds for you. This cannot be undone.</p>'
                '<form class="erase" method="post" action="{}">{}'
                '<p><input type="checkbox" id="confirm" name="confirm" value="yes" required> '
                '<label for="confirm">I understand that everything will be erased</label></p>'
                '<button type="submit" class="danger">Erase everything</button></form>',
                links.to("/export"), links.to("/erase"), _csrf(csrf_token))
    return document(links, "Your data", body, csrf_token=csrf_token, current="/data")


def erased_page(links: Links, csrf_token: str, receipt: ErasureReceipt) -> Html:
    """The receipt of an erasure: what was erased, and when."""
    counts: Iterable[tuple[str, int]] = sorted(receipt.counts.items())
    rows = join(html('<tr><th scope="row">{}</th><td>{}</td></tr>', kind, count)
                for kind, count in counts)
    body = html('<p role="status">Everything was erased for {} at <time datetime="{}">{}'
                '</time>.</p><table class="receipt"><caption>Erased records</caption>'
                '<thead><tr><th scope="col">Kind</th><th scope="col">Count</th></tr></thead>'
                '<tbody>{}</tbody></table>', receipt.user_name, receipt.erased_at,
                receipt.erased_at, rows)
    return document(links, "Erased", body, csrf_token=csrf_token, current="/data")
