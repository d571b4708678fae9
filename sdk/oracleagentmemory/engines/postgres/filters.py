"""Render filters to PostgreSQL predicates (values always bound): scope columns, and a parsed
metadata filter on ``jsonb``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from oracleagentmemory.engines.interfaces import UNSET
from oracleagentmemory.errors import InvalidArgumentTypeError
from oracleagentmemory.filtertree import And, ArrayContains, Exact, FilterExpr, Not


def scope_predicates(scope: Iterable[tuple[str, Any]], alias: str | None = None
                     ) -> tuple[list[sql.Composable], list[Any]]:
    """``column = value`` (``IS NULL`` for ``None``) for each scope column that is set.

    ``UNSET`` values are skipped; ``alias`` qualifies the columns.
    """
    where: list[sql.Composable] = []
    params: list[Any] = []
    for column, value in scope:
        if value is UNSET:
            continue
        name = sql.Identifier(alias, column) if alias else sql.Identifier(column)
        if value is None:
            where.append(sql.SQL("{} IS NULL").format(name))
        else:
            where.append(sql.SQL("{} = %s").format(name))
            params.append(value)
    return where, params


def metadata_predicates(metadata_filter: Any) -> tuple[list[sql.Composable], list[Any]]:
    """A record query's metadata condition: none when ``UNSET``, ``metadata IS NULL`` for
    ``None``, else the rendered filter."""
    if metadata_filter is UNSET:
        return [], []
    if metadata_filter is None:
        return [sql.SQL("metadata IS NULL")], []
    predicate, params = render_filter(metadata_filter, sql.Identifier("metadata"))
    return [predicate], params


def render_filter(expr: FilterExpr, column: sql.Composable) -> tuple[sql.Composable, list[Any]]:
    """Return ``(predicate, params)`` for ``expr`` applied to the jsonb ``column``.

    The predicate is never NULL: a missing path yields ``false`` (and its negation ``true``).
    """
    params: list[Any] = []
    predicate = _render(expr, column, params)
    return predicate, params


def _render(expr: FilterExpr, column: sql.Composable, params: list[Any]) -> sql.Composable:
    if isinstance(expr, And):
        if not expr.parts:
            return sql.SQL("true")
        return sql.SQL("(") + sql.SQL(" AND ").join(
            _render(p, column, params) for p in expr.parts
        ) + sql.SQL(")")
    if isinstance(expr, Not):
        return sql.SQL("(NOT ") + _render(expr.expr, column, params) + sql.SQL(")")
    if isinstance(expr, Exact):
        value = _path(column, expr.path, params)
        params.append(Jsonb(expr.value))
        return sql.SQL("coalesce({} = %s::jsonb, false)").format(value)
    if isinstance(expr, ArrayContains):
        tests: list[sql.Composable] = []
        value = _path(column, expr.path, params)
        for item in expr.values:
            if isinstance(item, (dict, list)):
                # @> would also accept a partial object or a sub-list: compare whole elements.
                tests.append(sql.SQL(
                    "EXISTS (SELECT 1 FROM jsonb_array_elements({}) AS e(element) "
                    "WHERE e.element = %s::jsonb)").format(_path(column, expr.path, params)))
                params.append(Jsonb(item))
            else:
                tests.append(sql.SQL("{} @> %s::jsonb").format(_path(column, expr.path, params)))
                params.append(Jsonb([item]))
        joiner = sql.SQL(" OR ") if expr.any_of else sql.SQL(" AND ")
        # CASE guards jsonb_array_elements against non-arrays; a missing path (NULL) is false.
        return sql.SQL("(CASE WHEN jsonb_typeof({}) = 'array' THEN ({}) ELSE false END)").format(
            value, joiner.join(tests)
        )
    raise InvalidArgumentTypeError(f"unknown filter node {expr!r}")


def _path(column: sql.Composable, path: tuple[str, ...], params: list[Any]) -> sql.Composable:
    """``column -> key -> ...``: object keys only (``#>`` would also index arrays by number)."""
    params.extend(path)
    steps = sql.SQL("").join(sql.SQL(" -> %s::text") for _ in path)
    return sql.SQL("({}{})").format(column, steps)
