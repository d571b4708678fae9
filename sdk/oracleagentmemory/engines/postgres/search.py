"""Search SQL on PostgreSQL: vector (pgvector HNSW, cosine), keyword (full-text) and hybrid.

Every candidate round the core's search loop asks for (``core._search_loop``) is one SQL
statement. Filters (scope, record type, expiry, status, metadata) are part of that statement,
so they apply before the limit. Vector candidates come from the HNSW index with pgvector's
iterative scans; a round that comes up short is repeated exactly by the loop. Hybrid rounds
return both sides in one statement; the core fuses them.
An exact user filter that leaves few chunks (a user's own memories, typically) is searched
exactly from the start: reading those chunks through the user index and sorting them is faster
than a filtered HNSW scan, which must step over every other user's chunks.
A round's SQL is compiled once per shape and cached (:func:`round_statement`), binds each value
once, and is prepared on its first execution; an HNSW round is planned generically, so it uses
the index from the first search on a connection (:func:`_configure`). In an end-user context on
a pool the SDK built, a round's settings and statement travel in one flight, the first round's
with the context's ``BEGIN`` and apply (``ContextTransaction.read_open``), and a search's
record read, when it is the session's last work, with ``COMMIT`` and the end check
(``ContextTransaction.read_last``): a search is then two round trips.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import psycopg
from psycopg import sql

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import (
    UNSET,
    Candidate,
    CandidateRound,
    CandidateSource,
    SearchPlan,
)
from oracleagentmemory.engines.layout import search_arms
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.ddl import TEXT_SEARCH_CONFIG
from oracleagentmemory.engines.postgres.filters import render_filter, scope_predicates
from oracleagentmemory.engines.postgres.turn_windows import (
    SEEDS_PER_RESULT,
    vector_window,
    window_tail,
)
from oracleagentmemory.engines.scan_choices import ScanChoices

MAX_EF_SEARCH = 1000
MIN_EF_SEARCH = 100
"""The smallest ``hnsw.ef_search`` of an HNSW round (pgvector's default is 40).

Measured on clustered 384-d embeddings (20k chunks, k=10, a 40-row window): recall@10 0.967 at
40 and 1.000 at 100, for 15% more time; a selective filter gains less (0.92 to 0.93 at 5%),
which is why a user filter that keeps few chunks is searched exactly instead.
"""
MAX_SCAN_TUPLES = 200_000
EXACT_SCAN_MIN_ROWS = 2_000
"""An exact user filter that leaves at most this many chunks is always searched exactly."""
HNSW_VISITS_PER_TUPLE = 16
"""What an HNSW scan spends per index tuple it examines, in chunks of an exact scoped scan.

Measured 6 to 12 with the version-5 scope index (the exact scan reads the user's vectors
index-only: 1,000 chunks in 4-7 ms, a filtered HNSW scan 4,000 tuples in 300 ms, on a busy
2-core machine); rounded up in favour of the exact scan, whose recall is 1 where a filtered
HNSW scan's is 0.92-0.95 (a 5% filter).
"""
def viewer_key(security: Any | None) -> str | None:
    """Who a context makes the database see (kind, name, groups, data roles), as a key."""
    if security is None:
        return None
    return repr(tuple(getattr(security, attribute, None)
                      for attribute in ("kind", "username", "groups", "data_roles")))


Flight = Callable[[Sequence[tuple[bytes, Sequence[Any]]]], list[list[tuple[Any, ...]]]]
"""Runs ``$n`` statements in the session's transaction in one round trip (opening it with the
context's ``BEGIN`` and apply when it is not open yet) and answers each one's rows."""


class PostgresCandidates(CandidateSource):
    """Candidate rounds of one search on one connection (the core runs the loop).

    The first round chooses between an exact scan and HNSW (:func:`_few_scoped_chunks`,
    remembered per viewer in ``choices``); an exact round of a search whose user filter keeps
    few chunks keeps the scoped form (:func:`_scoped_vector_arm`).

    ``conn`` gives the connection inside the session's transaction (opening it if it is not
    open). ``flight``, when given (an end-user context on a connection of a pool the SDK
    built), runs a round's settings and statement in one round trip, the first round's with
    the context's ``BEGIN`` and apply; otherwise they run through psycopg, the statement
    prepared by psycopg.
    """

    def __init__(self, conn: Callable[[], psycopg.Connection[Any]], names: StoreNames,
                 plan: SearchPlan, choices: ScanChoices | None = None,
                 viewer: str | None = None, flight: Flight | None = None) -> None:
        self._conn = conn
        self._names = names
        self._plan = plan
        self._choices = choices
        self._viewer = viewer
        self._flight = flight
        self._scoped: bool | None = None

    def _few_chunks(self, budget: int) -> bool:
        if self._scoped is None:
            plan, names = self._plan, self._names
            key = (self._viewer, names.schema, names.store_key, plan.scope.get("user_id", UNSET),
                   tuple(plan.record_types), budget)
            scoped = self._choices.get(key) if self._choices is not None else None
            if scoped is None:
                scoped = _few_scoped_chunks(self._conn(), names, plan, budget)
                if self._choices is not None:
                    self._choices.put(key, scoped)
            self._scoped = scoped
        return self._scoped

    def round(self, budget: int, exact: bool | None) -> CandidateRound:
        plan = self._plan
        scoped = plan.mode != "keyword" and self._few_chunks(budget)
        if exact is None:
            exact = plan.mode == "keyword" or scoped
        statement, params = round_statement(self._names, plan, budget, exact, scoped)
        # Prepared at once (psycopg would wait for the sixth execution): one plan per
        # connection and statement shape, not one per search. A round with a metadata filter
        # is the caller's own shape: never prepared, so no caller can fill a pooled connection
        # with prepared statements (each of which every later context apply on it reads).
        prepare = plan.metadata_filter is None
        if self._flight is not None and prepare:
            rows = self._in_one_flight(budget, exact, scoped, statement, params)
        else:
            rows = self._through_psycopg(budget, exact, scoped, statement, params, prepare)
        if plan.mode != "hybrid":
            return CandidateRound(sides=([(r[0], r[1], float(r[2])) for r in rows],),
                                  exact=exact)
        sides: tuple[list[Candidate], list[Candidate]] = ([], [])
        for side, record_type, record_id, distance in rows:
            sides[side].append((record_type, record_id, float(distance)))
        return CandidateRound(sides=sides, exact=exact)

    def _in_one_flight(self, budget: int, exact: bool, scoped: bool, statement: str,
                       params: list[Any]) -> list[tuple[Any, ...]]:
        """The round's settings, its statement and the settings' restoring in one flight,
        as :meth:`_through_psycopg` runs them in up to three."""
        assert self._flight is not None
        before: tuple[bytes, Sequence[Any]] | None
        after: tuple[bytes, Sequence[Any]] | None
        if exact and scoped:
            before, after = _NO_BITMAP_SCANS, _RESTORE_BITMAP_SCANS
        elif self._plan.mode == "keyword":
            before, after = _FORCE_GENERIC_PLAN, _RESTORE_PLAN_CACHE_MODE
        elif not exact:
            before, after = (_HNSW_SETTINGS, _hnsw_settings(budget)), None
        else:
            before = after = None
        flight = [*([before] if before else []), (statement.encode(), params),
                  *([after] if after else [])]
        return self._flight(flight)[1 if before else 0]

    def _through_psycopg(self, budget: int, exact: bool, scoped: bool, statement: str,
                         params: list[Any], prepare: bool) -> list[tuple[Any, ...]]:
        conn = self._conn()
        if not exact:  # the settings steer HNSW scans only: an exact round needs no round trip
            _configure(conn, budget)
        cursor = _search_cursor(conn)
        if exact and scoped:
            return _without_bitmap_scans(conn, statement, params, cursor, prepare=prepare)
        if self._plan.mode == "keyword" and prepare:
            return _with_generic_plan(conn, statement, params, cursor)
        return cursor.execute(statement, params, prepare=prepare).fetchall()


class _Slot:
    """A value a compiled statement binds at each execution, named by what it holds."""

    __slots__ = ("key",)

    def __init__(self, key: tuple[str, ...]) -> None:
        self.key = key


_VECTOR = _Slot(("vector",))
_TEXT = _Slot(("text",))


@dataclass(frozen=True)
class _Compiled:
    """A round's statement in PostgreSQL's ``$n`` form, and what each ``$n`` binds.

    ``bindings`` holds one entry per ``$n``: a :class:`_Slot` key (the search's vector, text
    or a scope value, read from the plan at each execution) or a value fixed with the shape
    (a limit, a metadata filter's value). A value the arms use several times, the query
    vector above all, is bound once and referenced wherever they need it.
    """

    text: str
    bindings: tuple[Any, ...]

    def params(self, plan: SearchPlan) -> list[Any]:
        values: list[Any] = []
        for binding in self.bindings:
            if not isinstance(binding, _Slot):
                values.append(binding)
            elif binding is _VECTOR:
                values.append(plan.vector)
            elif binding is _TEXT:
                values.append(plan.text)
            else:
                values.append(plan.scope[binding.key[1]])
        return values


_PLACEHOLDER = re.compile(r"%s|%%")


def _compile(statement: sql.Composable, params: list[Any]) -> _Compiled:
    """Number ``statement``'s ``%s`` placeholders, one ``$n`` per distinct binding.

    Slots are shared by identity, fixed integers and strings by value; anything else (a
    metadata filter's JSON, say) gets its own ``$n``.
    """
    numbers: dict[Any, int] = {}
    bindings: list[Any] = []
    values = iter(params)

    def number(match: re.Match[str]) -> str:
        if match.group() == "%%":
            return "%"
        value = next(values)
        key: Any = (value.key if isinstance(value, _Slot)
                    else (type(value), value) if isinstance(value, (int, str)) else object())
        if key not in numbers:
            bindings.append(value)
            numbers[key] = len(bindings)
        return f"${numbers[key]}"

    text = _PLACEHOLDER.sub(number, statement.as_string())
    if next(values, _VECTOR) is not _VECTOR:
        raise AssertionError("more parameters than placeholders in a search statement")
    return _Compiled(text, tuple(bindings))


Shape = tuple[str, tuple[str, ...], tuple[tuple[str, str], ...], bool, bool, bool]
"""What a round's SQL depends on besides its values: mode, record types, each scope column's
state (``unset``, ``null`` or ``set``), validity, and whether the plan has a vector and text."""


def _shape(plan: SearchPlan) -> Shape:
    scope = tuple((column, "unset" if value is UNSET else "null" if value is None else "set")
                  for column, value in plan.scope.items())
    return (plan.mode, plan.record_types, scope, plan.include_invalid,
            plan.vector is not None, plan.text is not None)


def _template(shape: Shape, metadata_filter: Any = None) -> SearchPlan:
    """A plan of ``shape`` holding slots where a search holds its values."""
    mode, record_types, scope, include_invalid, has_vector, has_text = shape
    slots: dict[str, Any] = {column: UNSET if state == "unset" else None if state == "null"
                             else _Slot(("scope", column)) for column, state in scope}
    return SearchPlan(mode=mode, k=0, record_types=record_types,
                      vector=cast(Any, _VECTOR) if has_vector else None,
                      text=cast(Any, _TEXT) if has_text else None,
                      scope=slots, metadata_filter=metadata_filter,
                      include_invalid=include_invalid)


def round_statement(names: StoreNames, plan: SearchPlan, budget: int, exact: bool,
                    scoped: bool) -> tuple[str, list[Any]]:
    """The ``$n`` statement of one candidate round and its parameters.

    Statements are compiled once per shape (:data:`Shape`, with the store, the budget and the
    round's kind) and cached: a search composes no SQL, and binds each value (the query vector
    once) at every execution. A plan with a metadata filter is compiled each time (the
    filter's values are part of its compiled form).
    """
    if plan.metadata_filter is not None:
        compiled = _compile_round(names, _template(_shape(plan), plan.metadata_filter),
                                  budget, exact, scoped)
    else:
        compiled = _cached_round(names, _shape(plan), budget, exact, scoped)
    return compiled.text, compiled.params(plan)


@lru_cache(maxsize=512)
def _cached_round(names: StoreNames, shape: Shape, budget: int, exact: bool,
                  scoped: bool) -> _Compiled:
    return _compile_round(names, _template(shape), budget, exact, scoped)


def _compile_round(names: StoreNames, template: SearchPlan, budget: int, exact: bool,
                   scoped: bool) -> _Compiled:
    params: list[Any] = []
    if template.mode == "vector":
        statement = _limited(_vector_arms(names, template, budget, exact, params, scoped),
                             budget)
    elif template.mode == "keyword":
        statement = _limited(_keyword_arms(names, template, budget, params), budget, ties=True)
    else:
        statement = _hybrid(names, template, budget, exact, params, scoped)
    return _compile(statement, params)


def _search_cursor(conn: psycopg.Connection[Any]) -> psycopg.RawCursor[Any]:
    """A cursor for ``$n`` statements. Parameters go in the format psycopg picks for their
    type: numpy vectors in pgvector's binary form (its adapters, registered on every engine
    connection, make binary the automatic choice)."""
    return psycopg.RawCursor(conn)


def _without_bitmap_scans(conn: psycopg.Connection[Any], statement: sql.SQL | sql.Composed | str,
                          params: list[Any], cursor: psycopg.Cursor[Any] | None = None, *,
                          prepare: bool = True) -> list[tuple[Any, ...]]:
    """Run a scoped exact statement with bitmap scans off for it alone, in one round trip.

    Under row-level security the ORed policies (own rows, or global ones) make the planner
    combine two bitmap index scans, which must read every chunk's heap page; without bitmap
    scans it reads the user's vectors from the scope index alone (an index-only scan, the
    policies checked on the index's ``user_id`` and ``record_type``). A compiled round, run on
    the search's ``cursor``, is prepared on its first execution like the other rounds (unless
    ``prepare`` is false: a round with a metadata filter).
    """
    with conn.pipeline():
        # The caller's value is kept in a transaction-local placeholder and restored after.
        conn.execute(_NO_BITMAP_SCANS[0].decode())
        cur = (cursor or conn.cursor()).execute(statement, params,
                                                prepare=prepare and cursor is not None)
        conn.execute(_RESTORE_BITMAP_SCANS[0].decode())
    return cur.fetchall()


def _with_generic_plan(conn: psycopg.Connection[Any], statement: str, params: list[Any],
                       cursor: psycopg.RawCursor[Any]) -> list[tuple[Any, ...]]:
    """Run a prepared keyword round on its generic plan, in one round trip.

    The keyword statement computes the query's lexemes itself, so a custom plan learns nothing
    from the search's values that the generic one lacks, yet under ``plan_cache_mode`` ``auto``
    the server kept planning it anew on every search (its generic plan's estimated cost is the
    higher one): 1,520 plans in 1,520 searches over LoCoMo's development half. The mode is
    ``force_generic_plan`` for this statement alone (the caller's value is kept in a
    transaction-local placeholder and restored after, as :func:`_without_bitmap_scans` does).
    Its rankings do not depend on the plan: every ``ORDER BY ... LIMIT`` of a keyword round
    breaks ties by id (:func:`_keyword_arms`, ``turn_windows.window_tail``).
    """
    with conn.pipeline():
        conn.execute(_FORCE_GENERIC_PLAN[0].decode())
        cur = cursor.execute(statement, params, prepare=True)
        conn.execute(_RESTORE_PLAN_CACHE_MODE[0].decode())
    return cur.fetchall()


def _few_scoped_chunks(conn: psycopg.Connection[Any], names: StoreNames, plan: SearchPlan,
                       budget: int) -> bool:
    """Whether an exact user filter leaves so few chunks that an exact scan beats HNSW.

    With a filter that keeps a fraction ``s`` of the ``N`` chunks, an HNSW scan examines about
    ``budget / s`` index tuples (several buffer visits each) before it has ``budget`` matches,
    while an exact scan reads the ``n = s * N`` filtered chunks once through the
    ``(user_id, record_type)`` index and sorts them. The exact scan is cheaper while
    ``n * n <= HNSW_VISITS_PER_TUPLE * budget * N``, and always for at most
    ``EXACT_SCAN_MIN_ROWS`` chunks. ``N`` is the planner's row count of an average chunk
    partition (schema version 9: the HNSW scan of a user's search reads the one partition that
    holds its rows; a table without partitions counts whole). Only an exact user filter is
    probed (the other scope columns have no index on the chunks), and only the user index is
    counted, not the thread or agent filter: it is what the exact scan reads. Counting stops one
    row past the bound and reads the index only (chunks without an embedding count too: the
    bound is an upper one).
    """
    if plan.mode == "keyword" or plan.scope.get("user_id", UNSET) is UNSET:
        return False
    user_only = SearchPlan(mode=plan.mode, k=plan.k, record_types=plan.record_types,
                           scope={"user_id": plan.scope["user_id"]})
    where, params = _chunk_filters(user_only, plan.record_types)
    table = q.table(names, "record_chunks")
    row = conn.execute(sql.SQL(
        "WITH b AS (SELECT greatest(%s, sqrt(%s * coalesce((SELECT avg(greatest(p.reltuples, "
        "0)) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = "
        "c.oid), greatest(c.reltuples, 0))))::bigint AS n FROM pg_class c "
        "WHERE c.oid = %s::regclass) "
        "SELECT count(*) <= (SELECT n FROM b) FROM (SELECT 1 FROM {} c WHERE {} "
        "LIMIT (SELECT n + 1 FROM b)) s"
    ).format(table, sql.SQL(" AND ").join(where)), [
        EXACT_SCAN_MIN_ROWS, HNSW_VISITS_PER_TUPLE * budget, table.as_string(conn), *params,
    ]).fetchone()
    return bool(row and row[0])


_HNSW_SETTINGS = (
    b"SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    b"set_config('hnsw.ef_search', $1, true), set_config('hnsw.max_scan_tuples', $2, true), "
    b"set_config('plan_cache_mode', 'force_generic_plan', true)")
_NO_BITMAP_SCANS = (
    b"SELECT set_config('oam_search.enable_bitmapscan', current_setting('enable_bitmapscan'), "
    b"true), set_config('enable_bitmapscan', 'off', true)", ())
_RESTORE_BITMAP_SCANS = (
    b"SELECT set_config('enable_bitmapscan', current_setting('oam_search.enable_bitmapscan'), "
    b"true)", ())
_FORCE_GENERIC_PLAN = (
    b"SELECT set_config('oam_search.plan_cache_mode', current_setting('plan_cache_mode'), "
    b"true), set_config('plan_cache_mode', 'force_generic_plan', true)", ())
_RESTORE_PLAN_CACHE_MODE = (
    b"SELECT set_config('plan_cache_mode', current_setting('oam_search.plan_cache_mode'), "
    b"true)", ())


def _hnsw_settings(budget: int) -> list[str]:
    """The values of :data:`_HNSW_SETTINGS`: ``ef_search`` for ``budget``, the scan cap."""
    return [str(min(max(MIN_EF_SEARCH, budget), MAX_EF_SEARCH)), str(MAX_SCAN_TUPLES)]


def _configure(conn: psycopg.Connection[Any], budget: int) -> None:
    """Settings of an HNSW round (:data:`_HNSW_SETTINGS`), for the rest of the transaction.

    ``plan_cache_mode`` is ``force_generic_plan`` (as an end-user context sets it, see
    ``context_sql``), with or without a context: the round's statement is prepared on its first
    execution (:meth:`PostgresCandidates.round`), so its generic plan, which orders by the
    HNSW index, serves every execution on the connection, the first included. A custom plan
    (``auto`` plans the first five executions with their values) knows how many rows the user
    filter keeps and, under row-level security, whose ORed policies skew its estimates, scans
    the user's chunks exactly instead: that choice is the store's (:func:`_few_scoped_chunks`),
    made before this round.
    """
    psycopg.RawCursor(conn).execute(_HNSW_SETTINGS.decode(), _hnsw_settings(budget))


def _limited(arms: list[sql.Composable], budget: int, ties: bool = False) -> sql.Composed:
    """The ``budget`` best rows of ``arms``; ``ties``: equal distances in record id order (the
    core's order, ``COLLATE "C"`` as Python compares), so the rows a round returns do not
    depend on its plan."""
    # The budget is a literal (one of few values), like every other limit here: with it known,
    # the server can reuse one generic plan per statement instead of planning each search.
    order = ', record_id COLLATE "C", record_type' if ties else ""
    return sql.SQL("SELECT record_type, record_id, d FROM ({}) u ORDER BY d" + order
                   + " LIMIT {}").format(sql.SQL(" UNION ALL ").join(arms), sql.Literal(budget))


def _arms(plan: SearchPlan) -> list[tuple[str, tuple[str, ...]]]:
    """(parent table, record types) pairs the search must visit."""
    return search_arms(plan.record_types)


def _parent_join(parent: str) -> sql.Composable:
    """The condition joining chunk ``c`` to its parent row ``p``."""
    # Record ids are unique per owner: a chunk belongs to the parent row of its own owner.
    if parent == "actor_profile":
        return sql.SQL("p.actor_id = c.record_id AND p.actor_type || '_profile' = c.record_type")
    if parent == "memory":
        return sql.SQL("p.id = c.record_id AND p.record_type = c.record_type "
                       "AND p.user_id IS NOT DISTINCT FROM c.user_id")
    return sql.SQL("p.id = c.record_id AND p.user_id IS NOT DISTINCT FROM c.user_id")


def _chunk_filters(plan: SearchPlan, types: tuple[str, ...]
                   ) -> tuple[list[sql.Composable], list[Any]]:
    """Predicates on chunk ``c`` alone (record type and scope), with their params."""
    # Record types are literals (validated names): the planner then knows them in a generic plan.
    scope, params = scope_predicates(plan.scope.items(), alias="c")
    return [sql.SQL("c.record_type = ANY({})").format(sql.Literal(list(types))), *scope], params


def _parent_filters(plan: SearchPlan, parent: str) -> tuple[list[sql.Composable], list[Any]]:
    """Predicates on parent ``p`` (expiry, status, metadata), with their params."""
    where: list[sql.Composable] = []
    params: list[Any] = []
    if parent != "actor_profile":
        where.append(sql.SQL("(p.expires_at IS NULL OR p.expires_at > now())"))
        if not plan.include_invalid:
            where.append(sql.SQL("p.status = 'valid'"))
    if plan.metadata_filter is not None:
        predicate, filter_params = render_filter(plan.metadata_filter, sql.SQL("p.metadata"))
        where.append(predicate)
        params.extend(filter_params)
    return where, params


def _join_and_filters(names: StoreNames, plan: SearchPlan, parent: str, types: tuple[str, ...]
                      ) -> tuple[sql.Composable, sql.Composable, list[Any]]:
    """``chunks c JOIN parent p ON ...`` and the WHERE predicate (with its params) of one arm."""
    source = sql.SQL("{} c JOIN {} p ON {}").format(
        q.table(names, "record_chunks"), q.table(names, parent), _parent_join(parent))
    chunk_where, params = _chunk_filters(plan, types)
    parent_where, parent_params = _parent_filters(plan, parent)
    return source, sql.SQL(" AND ").join(chunk_where + parent_where), params + parent_params


def _vector_arms(names: StoreNames, plan: SearchPlan, budget: int, exact: bool,
                 params: list[Any], scoped: bool = False) -> list[sql.Composable]:
    """One ``ORDER BY distance LIMIT`` per parent table; ``exact`` bypasses the HNSW index.

    ``scoped`` (with ``exact``): the chunk filters keep few chunks (:func:`_few_scoped_chunks`),
    so each arm sorts them all before probing their parents (:func:`_scoped_vector_arm`).
    The message arm ranks turn windows of its best chunks (``turn_windows.vector_window``).
    Rows are ``record_type, record_id, user_id, d``.
    """
    # "+ 0" hides the operator from the planner, which then scans the filtered rows exactly;
    # the exact arm orders by the distance it selects, computed once per row.
    distance = "(c.embedding <=> %s::vector) + 0" if exact else "(c.embedding <=> %s::vector)"
    order = "d" if exact else "c.embedding <=> %s::vector"
    arms: list[sql.Composable] = []
    for parent, types in _arms(plan):
        seeds = SEEDS_PER_RESULT if parent == "message" else 1  # a message arm's seeds
        if exact and scoped:
            arm = _scoped_vector_arm(names, plan, parent, types, budget * seeds, params)
        else:
            source, where, where_params = _join_and_filters(names, plan, parent, types)
            arm = sql.SQL(
                "(SELECT c.record_type, c.record_id, c.user_id, " + distance + " AS d "
                "FROM {} WHERE {} AND c.embedding IS NOT NULL ORDER BY " + order + " LIMIT %s{})"
            ).format(source, where, sql.SQL(" * {}").format(sql.Literal(seeds)) if seeds > 1
                     else sql.SQL(""))
            params.extend([plan.vector, *where_params, *([] if exact else [plan.vector]),
                           budget])
        if parent == "message":
            arm = vector_window(names, plan, budget, arm, *_parent_filters(plan, parent), params)
        arms.append(arm)
    return arms


def _scoped_vector_arm(names: StoreNames, plan: SearchPlan, parent: str,
                       types: tuple[str, ...], budget: int, params: list[Any]) -> sql.Composable:
    """An exact arm over few chunks: sort the chunks the chunk filters keep, then probe parents.

    "+ 0" hides the operator from the planner, so no HNSW scan serves the order; the chunks come
    from the user index and are sorted exactly. Every column the arm reads from the chunks (and
    every one the row-security policies on chunks name) is in the scope index of schema
    version 5, which carries the embedding (``ddl.add_scoped_vector_index``): a user's vectors
    are read with an index-only scan, one index range instead of a heap page per chunk. Each
    chunk then probes its parent row through a ``LATERAL ... LIMIT 1`` subquery, best chunk
    first, until ``budget`` rows pass the parent filters. The lateral form fixes that order: a
    plain join lets the planner hash-join every filtered chunk with every parent row of the user
    (it does under row-level security, whose ORed policies make its row estimates unreliable).
    The full sort is why this form is kept for filters that keep few chunks.
    """
    chunk_where, chunk_params = _chunk_filters(plan, types)
    parent_where, parent_params = _parent_filters(plan, parent)
    params.extend([plan.vector, *chunk_params, *parent_params])
    return sql.SQL(
        "(SELECT c.record_type, c.record_id, c.user_id, c.d FROM (SELECT c.record_type, "
        "c.record_id, c.user_id, (c.embedding <=> %s::vector) + 0 AS d FROM {chunks} c "
        "WHERE {chunk_where} AND c.embedding IS NOT NULL ORDER BY d) c "
        "CROSS JOIN LATERAL (SELECT 1 FROM {parent} p WHERE {join} AND {parent_where} LIMIT 1) p "
        "ORDER BY c.d LIMIT {budget})"
    ).format(budget=sql.Literal(budget),
        chunks=q.table(names, "record_chunks"), chunk_where=sql.SQL(" AND ").join(chunk_where),
        parent=q.table(names, parent), join=_parent_join(parent),
        parent_where=sql.SQL(" AND ").join(parent_where) if parent_where else sql.SQL("true"),
    )


BM25_K1 = 1.2
"""BM25's term-frequency saturation (Robertson and Zaragoza's usual value)."""
BM25_B = 0.75
"""BM25's document-length normalisation (the usual value)."""

_QUERY_LEXEMES = (
    "SELECT coalesce(array_agg(DISTINCT l), ARRAY[]::text[]) FROM "
    "unnest(tsvector_to_array(to_tsvector({config}::regconfig, %s))) AS l"
)
# The query's lexemes, analysed as the index is (stemmed, stop words out), ORed; 'simple' then
# takes each (quoted) lexeme as it is.
_TSQUERY = (
    "to_tsquery('simple', coalesce((SELECT string_agg(quote_literal(l), ' | ') "
    "FROM unnest(x.lexemes) AS l), ''))"
)


def _float8(value: float) -> sql.Composable:
    return sql.SQL("{}::float8").format(sql.Literal(value))


def _keyword_arms(names: StoreNames, plan: SearchPlan, budget: int,
                  params: list[Any]) -> list[sql.Composable]:
    """Keyword arms: any query word matches, ranked by BM25; distance is ``1 / (1 + score)``.
    The message arm ranks each message with its neighbours' matches (``turn_windows``).

    The query is analysed with the index's configuration (``ddl.TEXT_SEARCH_CONFIG``). A chunk's
    score sums, over the query lexemes it holds, ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b *
    len / avglen))``: ``tf`` is the lexeme's positions in the chunk, ``len`` its distinct
    lexemes. The collection statistics are those of the chunks this search can return: ``N``
    the chunks its record type and scope filters keep, ``df`` and ``avglen`` over the chunks
    that match (all its filters), each read under the caller's row-level security, so they
    count only rows the caller could read; ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``.

    Cost: a matching chunk's vector is cut to the query's lexemes before it is unnested
    (``setweight`` marks them, ``ts_filter`` keeps them: every lexeme of the generated
    ``search_tsv`` has positions, so none is lost), ``idf`` is computed once per lexeme, and
    the arithmetic is ``float8``: on 1,190 matches of a 5k-chunk user this halves the arm's
    time (numeric ``ln`` per match and a row per lexeme of every match were most of it).
    ``df`` is ``MATERIALIZED``: on the generic plan the score's nested loop otherwise rescans
    its hash aggregate for every row of ``h``, projecting ``idf`` (``ln``, a numeric division)
    anew each time. With that, ``float8`` for the division (``count + 0.5`` is exact either
    way) and ``tq`` before ``m`` in ``h`` (which plans ``st`` outside ``h`` in ``df``), a
    search over LoCoMo's development half takes 3.6 ms of server CPU against 4.3-4.4 ms, its
    rankings identical (``bench/keyword_rounds.py --passes 2 --rankings``).
    """
    arms: list[sql.Composable] = []
    config = sql.Literal(TEXT_SEARCH_CONFIG)
    score = sql.SQL("sum(df.idf * h.tf * {k1p1} / (h.tf + {k1} * (1 - {b} + {b} * h.len "
                    "/ st.avglen)))").format(k1=_float8(BM25_K1), k1p1=_float8(BM25_K1 + 1),
                                             b=_float8(BM25_B))
    for parent, types in _arms(plan):
        source, where, where_params = _join_and_filters(names, plan, parent, types)
        chunk_where, chunk_params = _chunk_filters(plan, types)
        params.extend([plan.text, *where_params, *chunk_params])
        if parent == "message":  # each message scored with its neighbours' matches
            tail = sql.SQL(", {}").format(window_tail(
                names, plan, budget, score, *_parent_filters(plan, parent), params))
        else:
            tail = sql.SQL("SELECT h.record_type, h.record_id, 1 / (1 + {score}) AS d "
                           "FROM h JOIN df USING (lexeme) CROSS JOIN st "
                           "GROUP BY h.id, h.record_type, h.record_id "
                           'ORDER BY d, h.record_id COLLATE "C", h.id LIMIT %s'
                           ).format(score=score)
            params.append(budget)
        arms.append(sql.SQL(
            "(WITH tq AS MATERIALIZED (SELECT lexemes, " + _TSQUERY + " AS query FROM ("
            + _QUERY_LEXEMES + ") x(lexemes)), "
            "m AS MATERIALIZED (SELECT c.id, c.record_type, c.record_id, c.user_id, "
            "c.search_tsv AS v, "
            "length(c.search_tsv) AS len FROM tq CROSS JOIN {source} "
            "WHERE {where} AND c.search_tsv @@ tq.query), "
            "h AS (SELECT m.id, m.record_type, m.record_id, m.user_id, m.len, u.lexeme, "
            "coalesce(cardinality(u.positions), 1) AS tf FROM tq CROSS JOIN m "
            "CROSS JOIN LATERAL unnest(ts_filter(setweight(m.v, 'A', tq.lexemes), '{{a}}')) AS u "
            "WHERE u.lexeme = ANY(tq.lexemes)), "
            "st AS (SELECT (SELECT count(*) FROM {chunks} c WHERE {chunk_where})::float8 AS n, "
            "greatest((SELECT avg(len) FROM m), 1)::float8 AS avglen), "
            "df AS MATERIALIZED (SELECT h.lexeme, "
            "ln(1 + (greatest(st.n, count(*)) - count(*) + 0.5) / (count(*) + 0.5::float8)) AS idf "
            "FROM h CROSS JOIN st GROUP BY h.lexeme, st.n) "
            "{tail})"
        ).format(source=source, where=where, chunks=q.table(names, "record_chunks"),
                 chunk_where=sql.SQL(" AND ").join(chunk_where), config=config, tail=tail))
    return arms


def _hybrid(names: StoreNames, plan: SearchPlan, budget: int, exact: bool,
            params: list[Any], scoped: bool = False) -> sql.Composed:
    """Vector (side 0) and keyword (side 1) candidates in one statement, each side limited to
    ``budget`` rows; the core fuses them by reciprocal-rank fusion."""
    vector = _limited(_vector_arms(names, plan, budget, exact, params, scoped), budget)
    keyword = _limited(_keyword_arms(names, plan, budget, params), budget, ties=True)
    return sql.SQL(
        "SELECT 0 AS side, record_type, record_id, d FROM ({}) v "
        "UNION ALL SELECT 1 AS side, record_type, record_id, d FROM ({}) k"
    ).format(vector, keyword)
