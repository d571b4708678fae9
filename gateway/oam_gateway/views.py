"""SDK values as API bodies: records and relations as their pydantic models."""

from __future__ import annotations

import base64
import dataclasses
from enum import Enum
from typing import Any

from oracleagentmemory.apis.records import Record as SdkRecord
from oracleagentmemory.apis.relations import RecordRelation

from oam_gateway.models import Record, Relation

_HIDDEN_FIELDS = frozenset({"bytes", "linked_results"})
"""Record fields the API leaves out: image bytes (large) and search links (search shows them)."""


def record_view(record: SdkRecord) -> Record:
    """The API body of an SDK record (every dataclass field but bytes and search links)."""
    values = {f.name: _plain(getattr(record, f.name)) for f in dataclasses.fields(record)
              if f.name not in _HIDDEN_FIELDS}
    return Record.model_validate(values)


def relation_view(relation: RecordRelation) -> Relation:
    """The API body of an SDK relation."""
    return Relation.model_validate({f.name: _plain(getattr(relation, f.name))
                                    for f in dataclasses.fields(relation)})


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data (enums by value, bytes as base64, dataclasses as dicts)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
