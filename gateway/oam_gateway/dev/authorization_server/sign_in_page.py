"""The sign-in page of the development authorization server, rendered on the server.

It names the client asking and the scopes it asks for, and offers one button per demo user
(and a refusal) in a form posted back to the authorization endpoint with a CSRF token. No
script at all; the one inline style is allowed by its hash, so the Content-Security-Policy
allows nothing else: no other origin, no framing, and forms posted only here (and redirected
only to the client's redirect URI's origin).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from html import escape
from urllib.parse import urlsplit

from starlette.responses import HTMLResponse

from oam_gateway.dev.authorization_server.models import DemoUser

__all__ = ["DENY", "error_page", "sign_in_page"]

DENY = "deny"
"""The value of the ``decision`` field of the refusal button."""

_STYLE = ("body{font-family:system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem}"
          "button{display:block;width:100%;margin:.5rem 0;padding:.75rem;font-size:1rem}"
          "code{overflow-wrap:anywhere}")
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()


def _headers(redirect_origin: str | None) -> dict[str, str]:
    form_action = "'self'" + (f" {redirect_origin}" if redirect_origin else "")
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; "
            f"form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


def _page(title: str, body: str) -> str:
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
            f"<body><main>{body}</main></body></html>")


def _origin(uri: str) -> str:
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}"


def sign_in_page(action: str, request_id: str, csrf_token: str, client_name: str,
                 redirect_uri: str, scopes: Sequence[str], users: Sequence[DemoUser]
                 ) -> HTMLResponse:
    """The page asking which demo user signs in to ``client_name``."""
    buttons = "".join(
        f'<button type="submit" name="user" value="{escape(u.name)}">Sign in as '
        f"<strong>{escape(u.name)}</strong>"
        f"{' (' + escape(', '.join(u.groups)) + ')' if u.groups else ''}</button>"
        for u in users)
    scope_items = "".join(f"<li><code>{escape(s)}</code></li>" for s in scopes)
    body = (
        "<h1>Sign in to Oracle Agent Memory (development)</h1>"
        f"<p><strong>{escape(client_name)}</strong> asks to act for you, then return to "
        f"<code>{escape(redirect_uri)}</code>.</p>"
        f"<p>It asks for:</p><ul>{scope_items or '<li>the default scopes</li>'}</ul>"
        f'<form method="post" action="{escape(action)}">'
        f'<input type="hidden" name="request" value="{escape(request_id)}">'
        f'<input type="hidden" name="csrf_token" value="{escape(csrf_token)}">'
        f"{buttons}"
        f'<button type="submit" name="decision" value="{DENY}">Refuse</button>'
        "</form><p>Development only: the demo users have no passwords.</p>")
    return HTMLResponse(_page("Sign in", body), headers=_headers(_origin(redirect_uri)))


def error_page(status: int, error: str, description: str) -> HTMLResponse:
    """A refused authorization request that cannot go back to the client (RFC 6749
    §4.1.2.1: never to an unverified redirect URI)."""
    body = (f"<h1>Sign-in refused</h1><p><code>{escape(error)}</code></p>"
            f"<p>{escape(description)}</p>")
    return HTMLResponse(_page("Sign-in refused", body), status_code=status,
                        headers=_headers(None))
