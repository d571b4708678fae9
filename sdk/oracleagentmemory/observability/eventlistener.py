"""Listeners of observability events, and their registration for the current context.

:func:`register_event_listeners` registers listeners for the code it encloses (a
:mod:`contextvars` scope: it follows awaited calls, tasks started inside it and the SDK's
worker threads, and is gone when the block exits). :func:`emit_event` hands an event to each of
them, in registration order, synchronously. With no listener registered the SDK builds no event
at all.

A listener sees no contents (texts, queries, prompts, vectors, metadata, raw arguments and
results) unless it sets :attr:`EventListener.include_contents`. A listener that raises is
logged and skipped: the operation it observes goes on.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import ClassVar, Generic, TypeVar

from oracleagentmemory.observability.event import Event

__all__ = ["EventListener", "GenericEventListener", "emit_event", "register_event_listeners"]

logger = logging.getLogger(__name__)

E = TypeVar("E", bound=Event)

_listeners: ContextVar[tuple[EventListener, ...]] = ContextVar(
    "oracleagentmemory_event_listeners", default=())


class EventListener(ABC):
    """Receives the events emitted while it is registered (:func:`register_event_listeners`).

    Override :meth:`subscribed_event_types` to receive only some event types (and their
    subclasses); by default a listener receives every event.
    """

    include_contents: ClassVar[bool] = False
    """Whether this listener receives the fields that may hold contents (an extension: the
    vendor's listeners always do). ``False``: they arrive as ``None``."""

    def subscribed_event_types(self) -> Sequence[type[Event]] | None:
        """The event types this listener receives; ``None`` for all of them."""
        return None

    @abstractmethod
    def on_event(self, event: Event) -> None:
        """Handle ``event`` (called in the thread and context that emitted it)."""


class GenericEventListener(EventListener, Generic[E]):
    """Calls ``callback`` with each event of ``event_type`` (or of a subclass of it).

    ``include_contents=True`` makes the callback receive contents (see
    :attr:`EventListener.include_contents`).
    """

    def __init__(self, event_type: type[E], callback: Callable[[E], None], *,
                 include_contents: bool = False) -> None:
        self._event_type = event_type
        self._callback = callback
        self.include_contents = include_contents  # type: ignore[misc]

    def subscribed_event_types(self) -> Sequence[type[Event]] | None:
        return (self._event_type,)

    def on_event(self, event: Event) -> None:
        if isinstance(event, self._event_type):
            self._callback(event)


@contextmanager
def register_event_listeners(listeners: list[EventListener]) -> Iterator[list[EventListener]]:
    """Register ``listeners`` for the enclosed code, after those registered already; yields all
    the listeners now registered."""
    if not all(isinstance(listener, EventListener) for listener in listeners):
        raise TypeError("register_event_listeners takes EventListener instances only")
    token = _listeners.set(_listeners.get() + tuple(listeners))
    try:
        yield list(_listeners.get())
    finally:
        _listeners.reset(token)


def active_listeners() -> tuple[EventListener, ...]:
    """The listeners registered in the current context (empty: emit nothing)."""
    return _listeners.get()


def listeners_for(event_type: type[Event]) -> list[EventListener]:
    """The registered listeners that receive events of ``event_type``."""
    return [listener for listener in _listeners.get() if _receives(listener, event_type)]


def emit_event(event: Event) -> None:
    """Hand ``event`` to each registered listener that receives its type, in order.

    Listeners that did not ask for contents get the event with those fields emptied. A listener
    that raises is logged (its class and the exception's class, at warning level) and skipped.
    """
    listeners = _listeners.get()
    if not listeners:
        return
    plain: Event | None = None
    for listener in listeners:
        if not _receives(listener, type(event)):
            continue
        if listener.include_contents:
            delivered = event
        else:
            delivered = plain = plain or event.without_contents()
        try:
            listener.on_event(delivered)
        except Exception as error:
            logger.warning("observability listener %s failed on %s: %s",
                           type(listener).__name__, event.event_name, type(error).__name__,
                           exc_info=logger.isEnabledFor(logging.DEBUG))


def _receives(listener: EventListener, event_type: type[Event]) -> bool:
    try:
        types = listener.subscribed_event_types()
    except Exception as error:
        logger.warning("observability listener %s failed to name its event types: %s",
                       type(listener).__name__, type(error).__name__)
        return False
    return types is None or any(issubclass(event_type, wanted) for wanted in types)
