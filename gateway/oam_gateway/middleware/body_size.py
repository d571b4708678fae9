"""Request bodies over :attr:`~oam_gateway.config.limits.LimitSettings.max_body_bytes` answer 413.

A ``Content-Length`` over the limit is refused before a byte of the body is read. A body
without one (chunked) is counted as it streams: the read that passes the limit fails, and the
response becomes the 413 problem (whatever the application tried to answer instead). A request
whose length is declared within the limit, or that has no body, is passed on as it is.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oam_gateway.errors.problems import problem_response

__all__ = ["BodySizeLimitMiddleware", "BodyTooLarge"]


class BodyTooLarge(Exception):
    """Raised into the application when its request body streams past the limit."""


class BodySizeLimitMiddleware:
    """Answers 413 ``payload-too-large`` for request bodies over ``max_body_bytes``."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self._app = app
        self._max = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared, counted = _framing(scope)
        if declared is not None and declared > self._max:
            await self._refuse(scope, receive, send)
            return
        if not counted:
            await self._app(scope, receive, send)
            return
        received = 0
        exceeded = False
        response_started = False

        async def counting_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self._max:
                    exceeded = True
                    raise BodyTooLarge(f"the request body exceeds {self._max} bytes")
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if exceeded:  # the application answered anyway (it caught the error): not sent
                return
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self._app(scope, counting_receive, guarded_send)
        except BodyTooLarge:
            if response_started:
                raise
        if exceeded and not response_started:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_response(413, "payload-too-large",
                                    f"the request body exceeds {self._max} bytes",
                                    headers={"Connection": "close"})
        await response(scope, receive, send)


def _framing(scope: Scope) -> tuple[int | None, bool]:
    """The request's declared ``Content-Length`` (``None``: none, or not a number) and whether
    its body must be counted as it streams. Only a body framed otherwise must
    (``Transfer-Encoding``, a length that is not a number or one declared twice): with a valid
    ``Content-Length`` the server reads that many bytes as the body, and with neither header
    the body is empty (RFC 9112, 6.3), so such a request goes on without the counting
    wrappers."""
    declared: int | None = None
    counted = False
    for key, value in scope["headers"]:
        if key == b"content-length":
            try:
                length = int(value)
            except ValueError:
                counted = True
                continue
            if declared is not None:  # declared twice (servers refuse it): trust neither
                counted = True
            declared = length if declared is None else max(declared, length)
        elif key == b"transfer-encoding":
            counted = True
    return declared, counted
