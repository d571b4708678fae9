"""The ``older_than=`` option of the list calls, checked into an engine keyset position."""

from __future__ import annotations

from oracleagentmemory.apis.keyset import OlderThan
from oracleagentmemory.core._validation import check_required_id, parse_timestamp
from oracleagentmemory.engines.interfaces import UNSET, Keyset, OrUnset
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


def keyset_position(older_than: object) -> OrUnset[Keyset | None]:
    """``UNSET`` for ``None`` (the spec's order), ``None`` for ``OlderThan()`` (keyset order
    from the newest), else the checked ``(timestamp, id)`` of the position."""
    if older_than is None:
        return UNSET
    if not isinstance(older_than, OlderThan):
        raise InvalidArgumentTypeError(
            f"older_than must be an OlderThan or None, got {type(older_than).__name__}")
    if older_than.timestamp is None and older_than.record_id is None:
        return None
    if older_than.timestamp is None or older_than.record_id is None:
        raise InvalidArgumentError(
            "older_than: give both timestamp and record_id, or neither (from the newest)",
            argument="older_than")
    timestamp = parse_timestamp(older_than.timestamp, "older_than.timestamp")
    assert timestamp is not None
    return timestamp, check_required_id(older_than.record_id, "older_than.record_id")
