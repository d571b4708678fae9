"""The verified-token cache: bounded, keyed by the whole token, never past a token's expiry."""

from __future__ import annotations

from oam_gateway.auth.token_cache import VerifiedTokenCache
from oam_gateway.tenancy.principal import Principal


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def principal(user: str, expires_at: int = 1_000) -> Principal:
    return Principal(user_name=user, groups=(), tenant="t", expires_at=expires_at)


def test_a_cached_token_is_served_until_it_expires() -> None:
    clock = Clock(900)
    cache = VerifiedTokenCache(10, clock)
    cache.put("token-a", principal("alice"))
    assert cache.get("token-a") == principal("alice")
    clock.now = 999.9
    assert cache.get("token-a") == principal("alice")
    clock.now = 1_000
    assert cache.get("token-a") is None
    assert len(cache) == 0  # the expired entry is dropped


def test_a_token_differing_in_any_byte_misses() -> None:
    cache = VerifiedTokenCache(10, Clock(0))
    cache.put("header.payload.signature", principal("alice"))
    assert cache.get("header.payload.signaturf") is None
    assert cache.get("header.payload.signature ") is None
    assert cache.get("header.payload.signature") is not None


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    cache = VerifiedTokenCache(2, Clock(0))
    cache.put("a", principal("a"))
    cache.put("b", principal("b"))
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("c", principal("c"))
    assert len(cache) == 2
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("c") is not None


def test_size_zero_disables_and_expired_principals_are_not_stored() -> None:
    disabled = VerifiedTokenCache(0, Clock(0))
    disabled.put("a", principal("a"))
    assert disabled.get("a") is None
    cache = VerifiedTokenCache(5, Clock(2_000))
    cache.put("old", principal("old", expires_at=1_000))
    assert len(cache) == 0
    cache.put("new", principal("new", expires_at=3_000))
    assert len(cache) == 1
    cache.clear()
    assert cache.get("new") is None
