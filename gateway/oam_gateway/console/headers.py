"""The security headers of every console response.

The console loads nothing from another origin and runs no script: its Content-Security-Policy
allows only its own stylesheet and images, forms that post back to itself, and no framing
(``frame-ancestors 'none'``, with ``X-Frame-Options: DENY`` for older browsers). Pages carry a
person's data, so no cache keeps them.
"""

from __future__ import annotations

from starlette.responses import Response

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "secured"]

CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'none'; style-src 'self'; "
                           "img-src 'self'; object-src 'none'; base-uri 'none'; "
                           "form-action 'self'; frame-ancestors 'none'")

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def secured(response: Response, *, cacheable: bool = False) -> Response:
    """``response`` with the console's security headers (``cacheable``: a static asset, which
    a browser may keep for an hour)."""
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    if cacheable:
        response.headers["Cache-Control"] = "public, max-age=3600"
    return response
