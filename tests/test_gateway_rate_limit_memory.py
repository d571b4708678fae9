"""The gateway's in-process rate-limit storage: the same limits as ``limits``' own memory
storage, with its sweep of expired counters paced instead of started on every hit."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import limits
import pytest
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import (
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    RateLimiter,
    SlidingWindowCounterRateLimiter,
)
from oam_gateway.config.limits import LimitSettings
from oam_gateway.middleware.rate_limit import rate_limiter_for
from oam_gateway.middleware.rate_limit_memory import PacedMemoryStorage

STRATEGIES: list[type[RateLimiter]] = [
    FixedWindowRateLimiter, MovingWindowRateLimiter, SlidingWindowCounterRateLimiter]


def test_the_library_hook_it_overrides_is_there() -> None:
    """A ``limits`` release that renames the hook fails here, by name."""
    hook = MemoryStorage._MemoryStorage__schedule_expiry  # type: ignore[attr-defined]
    assert inspect.iscoroutinefunction(hook)
    assert list(inspect.signature(hook).parameters) == ["self"]


def test_the_gateway_counts_in_memory_with_the_paced_storage() -> None:
    limiter = rate_limiter_for(LimitSettings(rate_limit="5/minute"))
    assert isinstance(limiter.storage, PacedMemoryStorage)


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.__name__)
def test_it_limits_exactly_as_the_library_storage(strategy: type[RateLimiter]) -> None:
    """Same hits, same answers, user by user: the pacing changes no count."""
    item = limits.parse("7/minute")

    async def answers(storage: MemoryStorage) -> list[bool]:
        limiter = strategy(storage)
        return [await limiter.hit(item, "acme", f"user{n % 3}") for n in range(30)]

    paced = asyncio.run(answers(PacedMemoryStorage()))
    assert paced == asyncio.run(answers(MemoryStorage()))
    assert paced.count(True) == 21  # positive control: 7 for each of the 3 users, then refused


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.__name__)
def test_sweeps_are_paced_yet_expired_counters_are_given_back(
        strategy: type[RateLimiter]) -> None:
    item = limits.parse("100/second")

    async def run() -> PacedMemoryStorage:
        storage = PacedMemoryStorage(sweep_interval_seconds=60.0)
        limiter = strategy(storage)
        for user in range(500):
            await limiter.hit(item, "acme", f"user{user}")
            await asyncio.sleep(0)  # a sweep, once started, gets to run
        assert storage.sweeps_started == 1  # the library starts one per hit that finds none
        await asyncio.sleep(2.1)  # every counter's window is over
        storage.sweep_interval_seconds = 0.0
        await limiter.hit(item, "acme", "late")
        await asyncio.sleep(0.5)  # the sweep this hit started finishes
        assert storage.sweeps_started == 2
        return storage

    storage = asyncio.run(run())
    held = set(storage.storage) | set(storage.events)
    assert not any("user" in key for key in held), sorted(held)[:5]


_WRAPPED = ("incr", "get", "get_expiry", "check", "reset", "clear", "acquire_entry",
            "get_moving_window", "acquire_sliding_window_entry", "get_sliding_window",
            "clear_sliding_window")


def _error_wrappers(method: Any) -> int:
    wrapper = MemoryStorage.get.__code__  # limits' error wrapper (MemoryStorage.get has one)
    count = 0
    while getattr(method, "__code__", None) is wrapper:
        count, method = count + 1, method.__wrapped__
    return count


def test_each_method_runs_in_one_error_wrapper() -> None:
    class Plain(MemoryStorage):  # what subclassing does without the paced storage's care
        pass

    assert _error_wrappers(Plain.acquire_sliding_window_entry) == 4  # positive control
    assert _error_wrappers(Plain.get) == 2
    assert {name: _error_wrappers(getattr(PacedMemoryStorage, name)) for name in _WRAPPED} \
        == dict.fromkeys(_WRAPPED, 1)


class _Unreadable:
    """An expiry that cannot be compared: reading its counter raises ``ValueError``, the
    memory storage's own exception."""

    def __le__(self, other: object) -> bool:
        raise ValueError("unreadable")


@pytest.mark.parametrize("wrap", [True, False])
def test_the_one_wrapper_still_converts_storage_errors(wrap: bool) -> None:
    storage = PacedMemoryStorage(wrap_exceptions=wrap)
    storage.expirations["key"] = _Unreadable()  # type: ignore[assignment]
    expected = limits.errors.StorageError if wrap else ValueError
    with pytest.raises(expected):
        asyncio.run(storage.get("key"))
