"""``x_async = AsyncTwin(x)``: the asynchronous twin of a method, its signature written once."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast, overload

Owner = TypeVar("Owner")
P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


class AsyncTwin(Generic[Owner, P, R]):
    """A method whose awaitable runs the synchronous method of the same stem in a worker thread.

    ``add_async = AsyncTwin(add)`` in a class body gives ``await obj.add_async(...)``, which runs
    ``obj.add(...)`` through :func:`asyncio.to_thread` (context variables, such as an active
    end-user security context, follow the call into the thread). The twin calls the method the
    object has under the synchronous name, so a subclass override is what runs, and it carries
    that method's signature and annotations (``inspect.signature`` equals the sync one's).
    """

    def __init__(self, sync: Callable[Concatenate[Owner, P], R]) -> None:
        self._sync = sync
        self._sync_name = sync.__name__
        self._name = f"{sync.__name__}_async"
        self.__doc__ = f"Asynchronous :meth:`{sync.__name__}` (runs it in a worker thread)."

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = name

    @overload
    def __get__(self, instance: None, owner: type[Any]
                ) -> Callable[Concatenate[Owner, P], Coroutine[Any, Any, R]]: ...

    @overload
    def __get__(self, instance: Owner, owner: type[Any] | None = None
                ) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(self, instance: Owner | None, owner: type[Any] | None = None
                ) -> Callable[..., Coroutine[Any, Any, R]]:
        if instance is None:
            return self._unbound()
        sync = cast(Callable[P, R], getattr(instance, self._sync_name))

        @functools.wraps(sync, updated=())
        async def twin(*args: P.args, **kwargs: P.kwargs) -> R:
            return await asyncio.to_thread(sync, *args, **kwargs)

        return self._named(twin)

    def _unbound(self) -> Callable[Concatenate[Owner, P], Coroutine[Any, Any, R]]:
        sync_name = self._sync_name

        @functools.wraps(self._sync, updated=())
        async def twin(instance: Owner, /, *args: P.args, **kwargs: P.kwargs) -> R:
            sync = cast(Callable[P, R], getattr(instance, sync_name))
            return await asyncio.to_thread(sync, *args, **kwargs)

        return self._named(twin)

    def _named(self, twin: F) -> F:
        twin.__name__ = self._name
        twin.__qualname__ = self._sync.__qualname__.rsplit(".", 1)[0] + "." + self._name
        twin.__doc__ = self.__doc__
        return twin
