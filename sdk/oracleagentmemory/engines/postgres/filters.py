"""Render a parsed metadata filter to PostgreSQL ``jsonb`` predicates (values always bound)."""

from __future__ import annotations

from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from oracleagentmemory.core._metadata_filter import And, ArrayContains, Exact, FilterExpr, Not


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
        params.extend([list(expr.path), Jsonb(expr.value)])
        return sql.SQL("coalesce(({} #> %s::text[]) = %s::jsonb, false)").format(column)
    if isinstance(expr, ArrayContains):
        value = sql.SQL("({} #> %s::text[])").format(column)
        path = list(expr.path)
        params.append(path)
        tests: list[sql.Composable] = []
        for item in expr.values:
            params.extend([path, Jsonb([item])])
            tests.append(sql.SQL("{} @> %s::jsonb").format(value))
        joiner = sql.SQL(" OR ") if expr.any_of else sql.SQL(" AND ")
        # jsonb_typeof of a missing path is NULL; coalesce keeps the predicate two-valued.
        return sql.SQL("coalesce(jsonb_typeof({}) = 'array' AND ({}), false)").format(
            value, joiner.join(tests)
        )
    raise TypeError(f"unknown filter node {expr!r}")
