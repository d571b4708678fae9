"""``OracleMemoryEndUserSecurityContext``: make an end user's context current for a scope of
work."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from oracleagentmemory.engines.registry import recognises_context
from oracleagentmemory.errors import EndUserContextError, InvalidArgumentTypeError


@dataclass
class _Scope:
    security_context: Any
    alive: bool = field(default=True)


_ACTIVE: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar(
    "oracleagentmemory_end_user_context", default=None
)


def active_security_context() -> Any | None:
    """The engine-level context of the current scope, or ``None`` outside any scope.

    Raises :class:`EndUserContextError` when the current task inherited a scope that has ended:
    work that outlives its ``with`` block fails closed instead of running without a context.
    """
    scope = _ACTIVE.get()
    if scope is None:
        return None
    if not scope.alive:
        raise EndUserContextError(
            "the OracleMemoryEndUserSecurityContext this work was started in has ended"
        )
    return scope.security_context


def has_active_security_context() -> bool:
    """Whether an end-user context (alive or ended) is current for this task."""
    return _ACTIVE.get() is not None


class OracleMemoryEndUserSecurityContext:
    """Runs the enclosed store calls as one end user (sync ``with`` and ``async with``).

    ``security_context`` comes from ``create_end_user_security_context`` (``oracledb`` on Oracle,
    :mod:`oracleagentmemory.core.deepsec` on PostgreSQL). The scope follows awaited calls and
    worker-thread offloads (``asyncio.to_thread``); it is local to the task that entered it, so
    concurrent tasks never see each other's users; and it ends at exit, after which work still
    holding it fails closed.
    """

    def __init__(self, security_context: Any) -> None:
        if security_context is None:
            raise InvalidArgumentTypeError(
                "security_context must be an end-user security context, not None")
        if not recognises_context(security_context):
            raise InvalidArgumentTypeError(
                "security_context must come from create_end_user_security_context, got "
                f"{type(security_context).__name__}"
            )
        self._security_context = security_context
        self._scope: _Scope | None = None
        self._token: contextvars.Token[_Scope | None] | None = None

    @property
    def security_context(self) -> Any:
        """The engine-level context this scope makes current."""
        return self._security_context

    def __enter__(self) -> OracleMemoryEndUserSecurityContext:
        if self._token is not None:
            raise EndUserContextError("this OracleMemoryEndUserSecurityContext is already entered")
        self._scope = _Scope(self._security_context)
        self._token = _ACTIVE.set(self._scope)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        assert self._scope is not None and self._token is not None
        self._scope.alive = False
        try:
            _ACTIVE.reset(self._token)
        except ValueError:
            # Exited from another context (e.g. a different task): drop our scope anyway.
            _ACTIVE.set(None)
        self._token = None
        self._scope = None

    async def __aenter__(self) -> OracleMemoryEndUserSecurityContext:
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.__exit__(exc_type, exc, traceback)
