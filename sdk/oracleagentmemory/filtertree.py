"""Parse a ``metadata_filter`` mapping into an engine-neutral expression tree.

Semantics (spec "metadata_filter"): entries are ANDed; a plain value is an exact match (the key
must exist; lists match by order and length; nested mappings match recursively); a field-level
operator mapping uses ``$array_contains`` (scalar, or list = all present),
``$array_contains_any`` (at least one present) or ``$not`` (negates another field expression and
also matches missing fields; negated array membership also matches non-arrays).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.errors import InvalidArgumentError

OPERATORS = frozenset({"$array_contains", "$array_contains_any", "$not"})
MAX_FILTER_DEPTH = 16


@dataclass(frozen=True)
class Exact:
    """The value at ``path`` exists and equals ``value`` exactly."""

    path: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class ArrayContains:
    """The value at ``path`` is an array holding all (or, with ``any_of``, one) of ``values``."""

    path: tuple[str, ...]
    values: tuple[Any, ...]
    any_of: bool


@dataclass(frozen=True)
class Not:
    """Negation of a field expression; true when the field is missing."""

    expr: FilterExpr


@dataclass(frozen=True)
class And:
    """Conjunction; an empty conjunction matches every record."""

    parts: tuple[FilterExpr, ...]


FilterExpr = Exact | ArrayContains | Not | And


def parse_metadata_filter(metadata_filter: object, argument: str = "metadata_filter") -> And:
    """Validate ``metadata_filter`` and return its expression tree.

    Raises ``ValueError`` naming the offending key when the filter is malformed.
    """
    if not isinstance(metadata_filter, Mapping):
        raise InvalidArgumentError(
            f"{argument} must be a dict or None, got {type(metadata_filter).__name__}"
        )
    return _parse_object(metadata_filter, (), argument)


def _parse_object(mapping: Mapping[Any, Any], path: tuple[str, ...], argument: str) -> And:
    if len(path) > MAX_FILTER_DEPTH:
        raise InvalidArgumentError(f"{argument}: nesting deeper than {MAX_FILTER_DEPTH} levels")
    parts: list[FilterExpr] = []
    for key, value in mapping.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"{argument}: keys must be non-empty strings, got {key!r}")
        if key.startswith("$"):
            raise InvalidArgumentError(
                f"{argument}: operator {key!r} must be used inside a field, "
                f"as in {{'field': {{{key!r}: ...}}}}"
            )
        parts.append(_parse_field(path + (key,), value, argument))
    return And(tuple(parts))


def _parse_field(path: tuple[str, ...], value: Any, argument: str) -> FilterExpr:
    name = ".".join(path)
    if isinstance(value, Mapping) and value:
        keys = list(value.keys())
        operator_keys = [k for k in keys if isinstance(k, str) and k.startswith("$")]
        if operator_keys:
            if len(operator_keys) != len(keys):
                raise InvalidArgumentError(
                    f"{argument}: key {name!r} mixes operators and plain fields; "
                    "use one operator per field mapping"
                )
            return And(tuple(_parse_operator(path, k, value[k], argument) for k in keys))
        return _parse_object(value, path, argument)
    return Exact(path, _check_json_value(value, name, argument))


def _parse_operator(path: tuple[str, ...], op: str, operand: Any, argument: str) -> FilterExpr:
    name = ".".join(path)
    if op not in OPERATORS:
        raise InvalidArgumentError(
            f"{argument}: unknown operator {op!r} on key {name!r}; "
            f"supported: {', '.join(sorted(OPERATORS))}"
        )
    if op == "$not":
        return Not(_parse_field(path, operand, argument))
    if op == "$array_contains":
        if isinstance(operand, (list, tuple)):
            if not operand:
                raise InvalidArgumentError(
                    f"{argument}: $array_contains on key {name!r} needs values")
            values = tuple(_check_json_value(v, name, argument) for v in operand)
        else:
            values = (_check_json_value(operand, name, argument),)
        return ArrayContains(path, values, any_of=False)
    if not isinstance(operand, (list, tuple)) or not operand:
        raise InvalidArgumentError(
            f"{argument}: $array_contains_any on key {name!r} needs a non-empty list"
        )
    values = tuple(_check_json_value(v, name, argument) for v in operand)
    return ArrayContains(path, values, any_of=True)


def _check_json_value(value: Any, name: str, argument: str) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgumentError(f"{argument}: key {name!r} has a non-finite number")
        return value
    if isinstance(value, (list, tuple)):
        return [_check_json_value(v, name, argument) for v in value]
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidArgumentError(f"{argument}: key {name!r} holds a non-string key {k!r}")
            out[k] = _check_json_value(v, name, argument)
        return out
    raise InvalidArgumentError(
        f"{argument}: key {name!r} has a value of type {type(value).__name__}, "
        "which is not JSON"
    )
