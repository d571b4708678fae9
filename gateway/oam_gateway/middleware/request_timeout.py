"""A request whose response has not started in time answers 504, and its work is cancelled.

The deadline covers everything until the application starts its response (authentication,
the SDK call, the database); once the response has started (a streamed export, an MCP event
stream) the deadline no longer applies.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oam_gateway.errors.problems import problem_response

__all__ = ["RequestTimeoutMiddleware"]


class RequestTimeoutMiddleware:
    """Answers 504 ``request-timeout`` when the response has not started after ``seconds``."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self._app = app
        self._seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        task = asyncio.current_task()
        assert task is not None
        response_started = False
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        deadline = asyncio.get_running_loop().call_later(self._seconds, expire)

        async def started_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
                deadline.cancel()
            await send(message)

        try:
            await self._app(scope, receive, started_send)
        except asyncio.CancelledError:
            if not expired or response_started:
                raise
            uncancel = getattr(task, "uncancel", None)  # Python 3.11+: this cancel is handled
            if uncancel is not None:
                uncancel()
            response = problem_response(
                504, "request-timeout",
                f"the gateway did not answer within {self._seconds:g} seconds")
            await response(scope, receive, send)
        finally:
            deadline.cancel()
