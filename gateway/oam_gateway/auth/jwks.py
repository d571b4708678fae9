"""Where the issuer's signing keys come from: a JWKS file, or a JWKS URL fetched with httpx.

A URL is fetched on first use and kept; a token naming an unknown ``kid`` triggers one refetch
(key rotation), at most once per ``min_refetch_seconds`` so that tokens with random ``kid``
values cannot make the gateway hammer the identity provider. A failed refetch keeps the keys
already held; keys that cannot be had at all raise :class:`KeysUnavailable` (503).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from oracleagentmemory.errors import InvalidArgumentError

__all__ = ["MAX_JWKS_BYTES", "FileKeys", "KeySource", "KeysUnavailable", "RemoteKeys"]

MAX_JWKS_BYTES = 1 << 20


class KeysUnavailable(Exception):
    """The issuer's keys cannot be obtained now (its JWKS URL does not answer well)."""


class KeySource(Protocol):
    """The issuer's current keys, and fresher ones after a rotation when they can be had."""

    async def current(self) -> KeySet: ...

    async def refreshed(self) -> KeySet | None:
        """Newly fetched keys, or ``None`` when no refetch is possible or allowed now."""
        ...


class FileKeys:
    """Keys read once from a JWKS file."""

    def __init__(self, path: Path) -> None:
        self._keys = _key_set_from_document(_read_json(path), str(path))

    async def current(self) -> KeySet:
        return self._keys

    async def refreshed(self) -> KeySet | None:
        return None


class RemoteKeys:
    """Keys fetched from a JWKS URL, refetched on demand at most once per interval."""

    def __init__(self, url: str, *, timeout_seconds: float = 5.0,
                 min_refetch_seconds: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._url = url
        self._timeout = timeout_seconds
        self._min_refetch = min_refetch_seconds
        self._clock = clock
        self._keys: KeySet | None = None
        self._attempted_at: float | None = None
        self._lock = asyncio.Lock()

    async def current(self) -> KeySet:
        if self._keys is not None:
            return self._keys
        async with self._lock:
            if self._keys is None:
                self._attempted_at = self._clock()
                self._keys = await self._fetch()
            return self._keys

    async def refreshed(self) -> KeySet | None:
        async with self._lock:
            now = self._clock()
            if self._attempted_at is not None and now - self._attempted_at < self._min_refetch:
                return None
            self._attempted_at = now
            try:
                self._keys = await self._fetch()
            except KeysUnavailable:
                return None
            return self._keys

    async def _fetch(self) -> KeySet:
        try:
            async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False) as client:
                response = await client.get(self._url, headers={"Accept": "application/json"})
        except httpx.HTTPError as error:
            raise KeysUnavailable(f"the JWKS URL did not answer ({type(error).__name__})") \
                from error
        if response.status_code != 200 or len(response.content) > MAX_JWKS_BYTES:
            raise KeysUnavailable(f"the JWKS URL answered {response.status_code}")
        try:
            return _key_set_from_document(response.json(), "the JWKS URL's document")
        except (ValueError, InvalidArgumentError) as error:
            raise KeysUnavailable("the JWKS URL's document is not a JWKS") from error


def _key_set_from_document(document: object, origin: str) -> KeySet:
    """The keys of a JWKS document (``{"keys": [...]}``); ``origin`` names it in errors."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise InvalidArgumentError(f"{origin} is not a JWKS document", argument="jwks")
    try:
        key_set: KeySet = KeySet.import_key_set(document)  # type: ignore[arg-type]
    except (ValueError, JoseError) as error:
        raise InvalidArgumentError(f"{origin} is not a JWKS document: {error}",
                                   argument="jwks") from error
    return key_set


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise InvalidArgumentError(f"{path} is not JSON: {error}", argument="jwks_file") \
            from error
