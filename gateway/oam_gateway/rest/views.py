"""SDK values as API bodies: records and relations as their pydantic models, and records as
the JSON-ready data those models would serialise (:func:`record_data`, for the hot routes)."""

from __future__ import annotations

import base64
import dataclasses
from datetime import datetime
from enum import Enum
from typing import Any

from oracleagentmemory.apis.records import Record as SdkRecord
from oracleagentmemory.apis.relations import RecordRelation

from oam_gateway.rest.models import Record, Relation

__all__ = ["record_data", "record_view", "relation_view"]

_HIDDEN_FIELDS = frozenset({"bytes", "linked_results"})
"""Record fields the API leaves out: image bytes (large) and search links (search shows them)."""


def record_view(record: SdkRecord) -> Record:
    """The API body of an SDK record (every dataclass field but bytes and search links)."""
    return Record.model_validate({name: _plain(getattr(record, name))
                                  for name in _shown_fields(type(record))})


def record_data(record: SdkRecord) -> dict[str, Any]:
    """What ``record_view(record).model_dump(mode="json", exclude_none=True)`` holds, built
    without the model: the fields :class:`~oam_gateway.rest.models.Record` declares in its
    order, then the others in the record's, ``None`` values left out. Serialised by
    ``pydantic_core.to_json`` it is the same JSON as the model's, for a fraction of the time (no
    validation of values the SDK typed already)."""
    values = {name: _plain(getattr(record, name)) for name in _shown_fields(type(record))}
    data = {name: value for name in _RECORD_FIELDS if (value := values.get(name)) is not None}
    for name, value in values.items():
        if value is not None and name not in data:
            data[name] = value
    return data


_RECORD_FIELDS = tuple(Record.model_fields)
"""The fields :class:`~oam_gateway.rest.models.Record` declares, in the order it writes them."""


def relation_view(relation: RecordRelation) -> Relation:
    """The API body of an SDK relation."""
    return Relation.model_validate({name: _plain(getattr(relation, name))
                                    for name in _shown_fields(type(relation))})


_FIELDS_BY_CLASS: dict[type, tuple[str, ...]] = {}


def _shown_fields(kind: type) -> tuple[str, ...]:
    """The field names of the SDK dataclass ``kind`` the API shows (looked up once per class:
    :func:`dataclasses.fields` costs more than the rest of a view)."""
    names = _FIELDS_BY_CLASS.get(kind)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(kind) if f.name not in _HIDDEN_FIELDS)
        _FIELDS_BY_CLASS[kind] = names
    return names


_AS_IS = (str, int, float, type(None))
"""Values that are JSON-ready already (``bool`` is an ``int``); enums are tested first, since a
``str`` enum is a ``str``."""


_READY_TYPES = frozenset({str, int, float, bool, type(None), datetime})
"""Exact types a record's fields mostly hold, passed on as they are (one set lookup instead
of the chain of ``isinstance`` tests below; pydantic writes a ``datetime`` itself)."""


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data (enums by value, bytes as base64, dataclasses as dicts)."""
    if type(value) in _READY_TYPES:
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, _AS_IS):
        return value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
