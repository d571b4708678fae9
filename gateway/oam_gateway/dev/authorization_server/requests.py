"""Authlib's request objects built from what a Starlette endpoint read (Authlib has no
Starlette server integration): an :class:`OAuth2Request` from query and form parameters, a
:class:`JsonRequest` from a parsed JSON body."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from authlib.oauth2.rfc6749 import (  # type: ignore[import-untyped]
    JsonPayload,
    JsonRequest,
    OAuth2Payload,
    OAuth2Request,
)

__all__ = ["json_request", "oauth2_request"]

Pairs = Sequence[tuple[str, str]]


class _Payload(OAuth2Payload):  # type: ignore[misc]
    """Query and form parameters (the first value of a repeated one; all of them in
    ``datalist``, which the grants check for repeats)."""

    def __init__(self, pairs: Pairs) -> None:
        self._data: dict[str, str] = {}
        self._datalist: defaultdict[str, list[str]] = defaultdict(list)
        for key, value in pairs:
            self._data.setdefault(key, value)
            self._datalist[key].append(value)

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        return self._datalist


class _Request(OAuth2Request):  # type: ignore[misc]
    def __init__(self, method: str, uri: str, headers: Mapping[str, str], query: Pairs,
                 form: Pairs) -> None:
        super().__init__(method, uri, headers=headers)
        self._args = dict(reversed(query))
        self._form = dict(reversed(form))
        self.payload = _Payload([*query, *form])

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


def oauth2_request(method: str, uri: str, headers: Mapping[str, str], query: Pairs,
                   form: Pairs = ()) -> Any:
    """Authlib's request of an authorization or token request."""
    return _Request(method, uri, headers, query, form)


class _JsonPayload(JsonPayload):  # type: ignore[misc]
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


def json_request(method: str, uri: str, headers: Mapping[str, str],
                 data: dict[str, Any]) -> Any:
    """Authlib's request of a registration request whose body was ``data``."""
    request = JsonRequest(method, uri, headers)
    request.payload = _JsonPayload(data)
    return request
