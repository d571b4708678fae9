"""Render filters to Oracle predicates (values always bound): scope columns, and a parsed
metadata filter (:mod:`oracleagentmemory.filtertree`) on a native ``JSON`` column.

The semantics are the PostgreSQL engine's (``engines/postgres/filters.py``, on ``jsonb``):

* every predicate is two-valued, never NULL: a missing key, a NULL ``metadata`` column or a
  value of another type is *false*, so ``Not`` of it is *true*;
* :class:`~oracleagentmemory.filtertree.Exact` is type-strict (``1`` never equals ``"1"`` or
  ``true``), compares numbers by value (``1`` equals ``1.0``), and compares lists by order and
  length and objects member by member (``jsonb`` equality);
* path steps read object members only: ``{"a": {"b": 1}}`` has ``a.b``, ``{"a": [{"b": 1}]}``
  does not;
* :class:`~oracleagentmemory.filtertree.ArrayContains` holds when the value is an array and
  some element equals each value (``any_of``: one value), an element being compared whole.

How, in Oracle SQL (SQL/JSON path, Oracle AI Database 26ai):

* Every leaf starts with ``<column> IS NOT NULL AND``: ``JSON_EXISTS`` of a SQL NULL input may
  be NULL, which ``NOT`` would keep NULL.
* Oracle's path language is *lax* (Oracle JSON Developer's Guide, "SQL/JSON Path Expression
  Syntax Relaxation"): an object step applied to an array is applied to each element, and
  comparisons and filters unwrap arrays. So paths are never navigated blindly. Tests sit in one
  filter on the root object (``'$?(...)'``), each prefix of a nested path is first required to
  be an object (``@."a".type() == "object"``), and the item method ``type()`` fixes the JSON
  type of the compared value. ``type()`` (like ``size()``) applies to an array itself, not to
  its elements: the SQL/JSON rule of lax mode unwraps the input of every item method except
  ``type()`` and ``size()`` (SQL:2016 general rule 11 g ii 6 A, as quoted on pgsql-hackers,
  June 2024). Oracle's conformance to that rule was not checked on a live database.
* Scalar :class:`Exact` values are compared in ``JSON_EXISTS`` with the value bound through
  ``PASSING :mf0 AS "mf0"`` (``$mf0`` in the path): ``@."k".type() == "string" && @."k" ==
  $mf0``. A JSON ``type()`` test before the comparison makes it type-strict (without it, lax
  comparison reads ``"314"`` as the number 314). ``true``/``false``/``null`` and the empty
  string are path literals (fixed constants, not user values: Oracle reads a bound ``''`` as
  NULL). Numbers are bound as ``NUMBER``: ints as they are, floats as ``Decimal(repr(f))``,
  the decimal text python-oracledb's OSON encoder writes for a float in a ``JSON`` column
  (``oson.pyx``: int, float and Decimal become ``NUMBER`` from ``str(value)``), so a stored
  float and a filter float are the same ``NUMBER``.
* Lists, objects and strings longer than :data:`MAX_PASSING_STRING_BYTES` are compared whole
  with ``JSON_EQUAL(JSON_QUERY(<column>, '<path>'), :mf0)``, the value bound as
  ``DB_TYPE_JSON`` (``JSON_EQUAL`` ignores member order and is type-strict:
  ``JSON_EQUAL('{a:"1"}', '{a:1}')`` is false, SQL Language Reference, "JSON_EQUAL
  Condition"). ``CASE WHEN ... THEN 1 ELSE 0 END = 1`` keeps it two-valued.
* :class:`ArrayContains` enumerates the array's own elements with ``JSON_TABLE`` (row path
  ``'$."k"[*]'``, each element as a ``JSON`` column) and compares each whole with
  ``JSON_EQUAL``: a path filter ``$."k"[*]?(@ == $v)`` would, being lax, also match an element
  that is an array holding the value. A ``null`` value is matched by the element's
  ``type()`` (a ``DB_TYPE_JSON`` bind of ``None`` is SQL NULL, not JSON null).

Keys go into the path text (a path must be a literal), double-quoted: a key holding ``"``, ``\\``
or a control character is refused with :class:`InvalidArgumentError` (PostgreSQL accepts
any key; this is the one semantic gap left), and ``'`` is doubled for the SQL literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from oracleagentmemory.engines.interfaces import UNSET
from oracleagentmemory.engines.oracle.bindset import BindSet
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError
from oracleagentmemory.filtertree import And, ArrayContains, Exact, FilterExpr, Not

MAX_PASSING_STRING_BYTES = 4000
"""Longest string (UTF-8 bytes) bound as ``VARCHAR2`` in ``PASSING``: a SQL ``VARCHAR2`` holds
4000 bytes unless ``MAX_STRING_SIZE = EXTENDED``; longer strings are compared as JSON."""

NUMERIC_TYPES = ("number", "double", "float")
"""What ``type()`` names a JSON number: ``NUMBER`` (what this engine writes), ``BINARY_DOUBLE``
or ``BINARY_FLOAT`` (what other writers may store)."""

FILTER_BIND_PREFIX = "mf"
"""Bind names of metadata-filter values: ``:mf0``, ``:mf1``..."""

_COLUMN = re.compile(r"(?:[a-z][a-z0-9_]*\.)?[a-z][a-z0-9_]*")
_FORBIDDEN_KEY_CHARACTERS = re.compile(r'["\\\x00-\x1f\x7f]')


def _check_column(column: str) -> str:
    """``column`` (``metadata``, ``p.metadata``) is engine text, never user input: check it."""
    if not _COLUMN.fullmatch(column):
        raise InvalidArgumentError(f"invalid column reference {column!r}")
    return column


def scope_predicates(scope: Iterable[tuple[str, Any]], binds: BindSet,
                     alias: str | None = None) -> list[str]:
    """``column = :scN`` (``IS NULL`` for ``None``) for each scope column that is set.

    ``UNSET`` values are skipped; ``alias`` qualifies the columns.
    """
    where: list[str] = []
    for column, value in scope:
        if value is UNSET:
            continue
        name = _check_column(f"{alias}.{column}" if alias else column)
        if value is None:
            where.append(f"{name} IS NULL")
        else:
            where.append(f"{name} = :{binds.add('sc', value)}")
    return where


def metadata_predicates(metadata_filter: Any, binds: BindSet,
                        column: str = "metadata") -> list[str]:
    """A record query's metadata condition: none when ``UNSET``, ``<column> IS NULL`` for
    ``None``, else the rendered filter."""
    if metadata_filter is UNSET:
        return []
    if metadata_filter is None:
        return [f"{_check_column(column)} IS NULL"]
    return [render_filter(metadata_filter, column, binds)]


def render_filter(expr: FilterExpr, column: str, binds: BindSet) -> str:
    """The predicate of ``expr`` on the ``JSON`` column ``column``; values go to ``binds``.

    The predicate is never NULL: a missing path yields false (and its negation true).
    """
    return _render(expr, _check_column(column), binds)


def _render(expr: FilterExpr, column: str, binds: BindSet) -> str:
    if isinstance(expr, And):
        if not expr.parts:
            return "1 = 1"
        if len(expr.parts) == 1:
            return _render(expr.parts[0], column, binds)
        return "(" + " AND ".join(_render(p, column, binds) for p in expr.parts) + ")"
    if isinstance(expr, Not):
        return f"(NOT {_render(expr.expr, column, binds)})"
    if isinstance(expr, Exact):
        return _exact(expr, column, binds)
    if isinstance(expr, ArrayContains):
        return _array_contains(expr, column, binds)
    raise InvalidArgumentTypeError(f"unknown filter node {expr!r}")


def _steps(path: tuple[str, ...]) -> str:
    """``."k1"."k2"``: each key validated and double-quoted (``'`` doubled for SQL)."""
    if not path:
        raise InvalidArgumentError("a metadata filter path needs at least one key")
    parts: list[str] = []
    for key in path:
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"metadata_filter: invalid key {key!r}")
        if _FORBIDDEN_KEY_CHARACTERS.search(key):
            raise InvalidArgumentError(
                f"metadata_filter: key {key!r} holds a double quote, a backslash or a control "
                "character, which an Oracle JSON path cannot name", argument="metadata_filter")
        parts.append('."' + key.replace("'", "''") + '"')
    return "".join(parts)


def _object_guards(path: tuple[str, ...]) -> list[str]:
    """Every proper prefix of ``path`` is an object (so no step is applied to an array)."""
    return [f'@{_steps(path[:i])}.type() == "object"' for i in range(1, len(path))]


def _exists(column: str, conditions: list[str], passing: list[str]) -> str:
    """``JSON_EXISTS`` of one filter on the root object."""
    clause = ""
    if passing:
        clause = " PASSING " + ", ".join(f':{name} AS "{name}"' for name in passing)
    return f"JSON_EXISTS({column}, '$?({' && '.join(conditions)})'{clause})"


def _is_type(accessor: str, *names: str) -> str:
    tests = [f'{accessor}.type() == "{name}"' for name in names]
    return tests[0] if len(tests) == 1 else "(" + " || ".join(tests) + ")"


def _exact(expr: Exact, column: str, binds: BindSet) -> str:
    accessor = "@" + _steps(expr.path)
    guards = _object_guards(expr.path)
    value = expr.value
    if value is None:
        test = [_is_type(accessor, "null")]
        return f"({column} IS NOT NULL AND {_exists(column, guards + test, [])})"
    if isinstance(value, bool):
        literal = "true" if value else "false"
        test = [_is_type(accessor, "boolean"), f"{accessor} == {literal}"]
        return f"({column} IS NOT NULL AND {_exists(column, guards + test, [])})"
    if isinstance(value, (int, float)):
        number = Decimal(repr(value)) if isinstance(value, float) else value
        name = binds.add(FILTER_BIND_PREFIX, number)
        test = [_is_type(accessor, *NUMERIC_TYPES), f"{accessor} == ${name}"]
        return f"({column} IS NOT NULL AND {_exists(column, guards + test, [name])})"
    if isinstance(value, str) and value == "":
        test = [_is_type(accessor, "string"), f'{accessor} == ""']
        return f"({column} IS NOT NULL AND {_exists(column, guards + test, [])})"
    if isinstance(value, str) and len(value.encode("utf-8")) <= MAX_PASSING_STRING_BYTES:
        name = binds.add(FILTER_BIND_PREFIX, value)
        test = [_is_type(accessor, "string"), f"{accessor} == ${name}"]
        return f"({column} IS NOT NULL AND {_exists(column, guards + test, [name])})"
    if isinstance(value, (str, list, dict)):
        return _json_equal(expr.path, value, column, binds)
    raise InvalidArgumentTypeError(f"metadata_filter: unsupported value {value!r}")


def _json_equal(path: tuple[str, ...], value: Any, column: str, binds: BindSet) -> str:
    """The value at ``path`` equals ``value`` as JSON (lists, objects, long strings)."""
    guards = _object_guards(path)
    name = binds.add_json(FILTER_BIND_PREFIX, value)
    parts = [f"{column} IS NOT NULL"]
    if guards:
        parts.append(_exists(column, guards, []))
    parts.append(f"CASE WHEN JSON_EQUAL(JSON_QUERY({column}, '${_steps(path)}'), :{name}) "
                 "THEN 1 ELSE 0 END = 1")
    return "(" + " AND ".join(parts) + ")"


def _array_contains(expr: ArrayContains, column: str, binds: BindSet) -> str:
    accessor = "@" + _steps(expr.path)
    is_array = _exists(column, _object_guards(expr.path) + [_is_type(accessor, "array")], [])
    tests = [_element_test(expr.path, item, column, binds) for item in expr.values]
    joined = (" OR " if expr.any_of else " AND ").join(tests)
    return f"({column} IS NOT NULL AND {is_array} AND ({joined}))"


def _element_test(path: tuple[str, ...], item: Any, column: str, binds: BindSet) -> str:
    """Some element of the array at ``path`` equals ``item`` (compared whole)."""
    alias = binds.alias("mfe")
    rows = f"JSON_TABLE({column}, '${_steps(path)}[*]' COLUMNS ("
    if item is None:
        return (f"EXISTS (SELECT 1 FROM {rows}element_type VARCHAR2(16) PATH '$.type()')) "
                f"{alias} WHERE {alias}.element_type = 'null')")
    name = binds.add_json(FILTER_BIND_PREFIX, item)
    return (f"EXISTS (SELECT 1 FROM {rows}element JSON PATH '$')) {alias} "
            f"WHERE JSON_EQUAL({alias}.element, :{name}))")
