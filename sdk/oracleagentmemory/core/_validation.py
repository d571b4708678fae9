"""Argument checks shared by the store's methods. Every error names the argument and the rule."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import numpy.typing as npt

from oracleagentmemory._notset import _NotSetMarker
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

MAX_ID_LENGTH = 128


def check_id(value: object, argument: str, *, allow_none: bool = False) -> str | None:
    """A non-empty ``str`` of at most 128 characters (or ``None`` when allowed)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        expected = "a str or None" if allow_none else "a str"
        raise InvalidArgumentTypeError(f"{argument} must be {expected}, got {type(value).__name__}")
    if not value.strip():
        raise InvalidArgumentError(f"{argument} must not be empty or blank")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidArgumentError(
            f"{argument} must be at most {MAX_ID_LENGTH} characters, got {len(value)}")
    return value


def check_required_id(value: object, argument: str) -> str:
    """Like :func:`check_id` but never ``None``."""
    result = check_id(value, argument)
    assert result is not None
    return result


def broadcast(value: Any, count: int, argument: str) -> list[Any]:
    """Spread a scalar over ``count`` records, or check that a list has ``count`` entries.

    ``NOT_SET_MARKER`` spreads as itself (each record then uses its default).
    """
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise InvalidArgumentError(
                f"{argument} has {len(value)} entries but there are {count} records; "
                "pass one value for all records or one per record"
            )
        return list(value)
    return [value] * count


def check_limit(value: object, argument: str) -> int | None:
    """``None`` or an ``int`` of at least 1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"{argument} must be an int or None, got {type(value).__name__}")
    if value < 1:
        raise InvalidArgumentError(f"{argument} must be at least 1, got {value}")
    return value


def check_seq_no(value: object, argument: str) -> int | None:
    """``None`` or a non-negative ``int``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"{argument} must be an int or None, got {type(value).__name__}")
    if value < 0:
        raise InvalidArgumentError(f"{argument} must be at least 0, got {value}")
    return value


def parse_timestamp(value: object, argument: str) -> datetime | None:
    """Parse an ISO-8601 timestamp; naive values are UTC. ``None`` stays ``None``."""
    if value is None or isinstance(value, _NotSetMarker):
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidArgumentError(
                f"{argument} must be an ISO-8601 timestamp such as "
                f"'2026-01-01T12:00:00+00:00', got {value!r}"
            ) from None
    else:
        raise InvalidArgumentTypeError(
            f"{argument} must be an ISO-8601 str or None, got {type(value).__name__}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


def format_timestamp(value: datetime | None) -> str | None:
    """ISO-8601 text in UTC of a stored timestamp."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat()


def to_vector(value: object, argument: str) -> npt.NDArray[np.float32]:
    """A non-empty, one-dimensional, finite vector as ``float32``."""
    if isinstance(value, (str, bytes)) or value is None:
        raise InvalidArgumentTypeError(f"{argument} must be a list of floats or a numpy array")
    try:
        array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{argument} must contain only numbers") from None
    if array.ndim != 1 or array.size == 0:
        raise InvalidArgumentError(f"{argument} must be a non-empty one-dimensional vector")
    if not np.all(np.isfinite(array)):
        raise InvalidArgumentError(f"{argument} must contain only finite values")
    return array


def is_single_vector(value: object) -> bool:
    """Whether an embeddings entry is one vector (rather than a list of chunk vectors)."""
    if isinstance(value, np.ndarray):
        return value.ndim == 1
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return len(value) > 0 and isinstance(value[0], (int, float, np.number)) and not isinstance(
            value[0], bool
        )
    return False


def check_bool(value: object, argument: str) -> bool:
    """A real ``bool``."""
    if not isinstance(value, bool):
        raise InvalidArgumentTypeError(f"{argument} must be a bool, got {type(value).__name__}")
    return value
