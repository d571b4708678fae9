"""Bind values for python-oracledb (thin mode), and the escaping of keyword queries.

What python-oracledb needs, per kind of value:

* **Vectors** (``VECTOR(n, FLOAT32)``): an ``array.array('f')``. Lists and numpy arrays are not
  bound as vectors without an input type handler, so :func:`vector_bind` converts them; no
  ``setinputsizes`` call is needed (the driver maps ``array.array('f')`` to
  ``DB_TYPE_VECTOR`` with the FLOAT32 format).
* **JSON** (``JSON`` columns): the Python value itself (a dict or list), with the bind declared
  ``oracledb.DB_TYPE_JSON`` by ``cursor.setinputsizes`` (positionally, or by bind name:
  ``cursor.setinputsizes(metadata=oracledb.DB_TYPE_JSON)``, see :func:`json_input_sizes`);
  without it a dict is refused and a string would be stored as a JSON string scalar.
* **Timestamps** (``TIMESTAMP WITH TIME ZONE`` columns): python-oracledb does not send a
  ``datetime``'s ``tzinfo`` (an aware value lands as its wall clock, python-oracledb issues
  #414 and discussion #528) and fetches such columns as naive datetimes (issue #373).
  :func:`timestamp_bind` turns an aware datetime into the naive UTC wall clock, declared
  ``DB_TYPE_TIMESTAMP`` (:func:`timestamp_input_sizes`, so fractional seconds are kept); the
  SQL says which zone it is in with ``FROM_TZ(CAST(:ts AS TIMESTAMP), 'UTC')``
  (:func:`utc_timestamp_sql`). Reads select ``SYS_EXTRACT_UTC(col)`` and
  :func:`utc_from_fetch` attaches UTC again.
* **Booleans**: Python ``bool`` (``DB_TYPE_BOOLEAN``, the SQL ``BOOLEAN`` type of 23ai and
  later); :func:`boolean_bind` refuses integers posing as booleans.

Keyword queries: see :func:`keyword_query`.
"""

from __future__ import annotations

import array
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import oracledb

from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

VECTOR_TYPECODE = "f"
"""``array.array`` type code of a FLOAT32 vector bind."""

_FLOAT32_MAX = float(np.finfo(np.float32).max)


def vector_bind(values: object, dim: int) -> array.array[float]:
    """``values`` (a list, tuple or 1-d numpy array of numbers) as ``array.array('f')``.

    Raises :class:`InvalidArgumentError` for a wrong dimension, NaN, infinity or a value that
    overflows FLOAT32, and :class:`InvalidArgumentTypeError` for anything else than numbers.
    """
    if isinstance(values, np.ndarray):
        raw: Any = values
    elif isinstance(values, (list, tuple)):
        raw = list(values)
        if any(isinstance(v, (str, bytes)) or not isinstance(v, (int, float, np.number))
               for v in raw):
            raise InvalidArgumentTypeError("a vector holds numbers only")
    else:
        raise InvalidArgumentTypeError(
            f"a vector must be a list, tuple or numpy array, got {type(values).__name__}")
    wide = np.asarray(raw)
    if wide.dtype.kind not in "biuf":
        raise InvalidArgumentTypeError(f"a vector holds numbers only, got dtype {wide.dtype}")
    wide = wide.astype(np.float64)
    if wide.ndim != 1:
        raise InvalidArgumentError(f"a vector is one-dimensional, got shape {wide.shape}")
    if wide.shape[0] != dim:
        raise InvalidArgumentError(
            f"vector dimension {wide.shape[0]} does not match the store's dimension {dim}")
    if not np.isfinite(wide).all():
        raise InvalidArgumentError("a vector may not contain NaN or infinity")
    if wide.size and float(np.abs(wide).max()) > _FLOAT32_MAX:
        raise InvalidArgumentError("a vector value overflows FLOAT32")
    bound: array.array[float] = array.array(VECTOR_TYPECODE)
    bound.frombytes(wide.astype(np.float32).tobytes())
    return bound


def json_bind(value: object) -> dict[str, Any] | list[Any] | None:
    """A metadata-like value for a ``DB_TYPE_JSON`` bind: a dict or list, passed as is.

    The value is checked to be JSON (string keys; str, finite numbers, bools, ``None``,
    lists and dicts) so the driver's encoder never sees an object it would refuse half-way.
    ``None`` binds SQL NULL.
    """
    if value is None:
        return None
    if not isinstance(value, (dict, list)):
        raise InvalidArgumentTypeError(
            f"a JSON bind is a dict or a list, got {type(value).__name__}")
    _check_json(value, "$")
    return value


def _check_json(value: object, path: str) -> None:
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgumentError(f"JSON value at {path} is not a finite number")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidArgumentTypeError(f"JSON object key at {path} is not a str")
            _check_json(item, f"{path}.{key}")
        return
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        for i, item in enumerate(value):
            _check_json(item, f"{path}[{i}]")
        return
    raise InvalidArgumentTypeError(
        f"JSON value at {path} has unsupported type {type(value).__name__}")


def json_input_sizes(*bind_names: str) -> dict[str, Any]:
    """``cursor.setinputsizes(**json_input_sizes("metadata", ...))``: declare JSON binds."""
    return {name: oracledb.DB_TYPE_JSON for name in bind_names}


def timestamp_bind(value: datetime | None) -> datetime | None:
    """An aware datetime as the naive UTC wall clock (bind it inside ``FROM_TZ(..., 'UTC')``).

    A naive datetime is refused: its zone is unknown, and the session time zone would decide.
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidArgumentTypeError(
            f"a timestamp must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgumentError("a timestamp must be timezone-aware")
    return value.astimezone(timezone.utc).replace(tzinfo=None)


_BIND_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")


def utc_timestamp_sql(bind_name: str) -> str:
    """``FROM_TZ(CAST(:name AS TIMESTAMP), 'UTC')``: the SQL that reads a
    :func:`timestamp_bind` value as UTC."""
    if not _BIND_NAME.fullmatch(bind_name):
        raise InvalidArgumentError(f"invalid bind name {bind_name!r}")
    return f"FROM_TZ(CAST(:{bind_name} AS TIMESTAMP), 'UTC')"


def timestamp_input_sizes(*bind_names: str) -> dict[str, Any]:
    """``cursor.setinputsizes(**timestamp_input_sizes("expires_at", ...))``: bind
    :func:`timestamp_bind` values as ``TIMESTAMP`` (with fractional seconds)."""
    return {name: oracledb.DB_TYPE_TIMESTAMP for name in bind_names}


def utc_from_fetch(value: datetime | None) -> datetime | None:
    """A fetched ``SYS_EXTRACT_UTC(col)`` (naive UTC) as an aware UTC datetime."""
    if value is None:
        return None
    if value.tzinfo is not None:
        return value.astimezone(timezone.utc)
    return value.replace(tzinfo=timezone.utc)


def boolean_bind(value: object) -> bool | None:
    """A Python ``bool`` (or ``None``) for a ``BOOLEAN`` bind; ``0``/``1`` are refused."""
    if value is None or isinstance(value, bool):
        return value
    raise InvalidArgumentTypeError(f"a boolean must be a bool, got {type(value).__name__}")


# --- Oracle Text keyword queries ---------------------------------------------------------------
KEYWORD_JOIN = " ACCUM "
"""Words are joined with ``ACCUM``: a row matches if any word does, and scores higher the more
words it holds (``OR`` scores a row by its best word only). As in the PostgreSQL engine any word
matches; PostgreSQL ranks by BM25 (English stems, stop words out, rare words weigh more), Oracle
Text by how many words match."""

MAX_KEYWORD_TERMS = 64
"""At most this many distinct words reach ``CONTAINS`` (a query of thousands of words would
exceed the query's length limit; the first words are kept)."""

_INSIDE_ESCAPE = re.compile(r"[{}\\]")


def keyword_query(text: str) -> str | None:
    """The ``CONTAINS`` query of user ``text``, or ``None`` when it holds no word.

    The rule: the text is split on whitespace; in each word, the characters that still mean
    something inside an Oracle Text escape sequence (``{``, ``}`` and ``\\``) become spaces;
    each word is wrapped in braces ``{...}``, which escape everything they enclose (operators
    such as ``&``, ``|``, ``~``, ``-``, ``=``, ``>``, ``*``, ``?``, ``!``, ``$``, ``%``, ``_``,
    ``,``, ``;``, parentheses, and reserved words such as ``NEAR``, ``ABOUT``, ``AND``); the
    words are joined with :data:`KEYWORD_JOIN`. A word with no letter or digit is dropped:
    the default lexer indexes no token for it, so it could match nothing.

    Replacing the braces does not change what matches: Oracle Text's default lexer does not
    index them (they are not letters or digits), so ``a}b`` is indexed as the words ``a`` and
    ``b``, and ``{a b}`` finds that phrase. The documented ``}}`` escape of a closing brace is
    therefore never needed, and no word can close its escape early. Duplicate words (ignoring
    case, which the default lexer ignores too) are sent once.
    """
    if not isinstance(text, str):
        raise InvalidArgumentTypeError(f"a keyword query is a str, got {type(text).__name__}")
    terms: list[str] = []
    seen: set[str] = set()
    for word in text.split():
        cleaned = " ".join(_INSIDE_ESCAPE.sub(" ", word).split())
        if not any(ch.isalnum() for ch in cleaned) or cleaned.casefold() in seen:
            continue
        seen.add(cleaned.casefold())
        terms.append("{" + cleaned + "}")
        if len(terms) == MAX_KEYWORD_TERMS:
            break
    return KEYWORD_JOIN.join(terms) if terms else None
