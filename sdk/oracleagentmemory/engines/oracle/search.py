"""Search SQL on Oracle AI Database 26ai: vector (HNSW, cosine), keyword (Oracle Text) and hybrid.

Pure builders (plan in, :class:`~.statement.Statement` out) and a candidate source that runs them
through a caller's ``run`` callable, so the search logic is tested without a database. The
behaviour is the PostgreSQL engine's (``engines/postgres/search.py``):

* every candidate round the core's loop asks for (``core._search_loop``) is one statement; the
  filters (scope, record type, expiry, status, metadata) are in it, so they apply before the
  row limit; each arm (parent table) returns at most ``budget`` rows and the union is cut to
  ``budget`` again;
* vector rounds read the HNSW index (``FETCH APPROX FIRST :n ROWS ONLY WITH TARGET ACCURACY
  95``) unless the round is exact (``FETCH EXACT FIRST :n ROWS ONLY``, which never uses a vector
  index: SQL Language Reference, "row_limiting_clause"); the relational filters go with the
  index scan as pre- or in-filtering (AI Vector Search Guide, "Optimizer Plans for HNSW Vector
  Indexes"), and an approximate round that comes up short is repeated exactly by the core;
* the first round of a search whose exact user filter keeps few chunks is exact from the start,
  by PostgreSQL's rule (:func:`exact_scan_bound`), counted through the ``(user_id, record_type,
  record_id)`` index;
* keyword rounds use ``CONTAINS(c.chunk_text, :q, 1) > 0 ORDER BY SCORE(1) DESC`` with the
  escaped query of :func:`.binds.keyword_query` (any word matches, ``ACCUM`` ranks rows holding
  more words higher); the distance is ``1 / (1 + SCORE(1))``: ``SCORE`` is 0 to 100, higher is
  better, so the distance falls in ``(0, 1]`` and smaller is better, the same transform as
  PostgreSQL's ``1 / (1 + BM25 score)``. Oracle Text keeps its own analysis here (the index's
  default lexer, no stemming or stop words of PostgreSQL's ``english`` configuration) and
  ``ACCUM`` ranking. Keyword rounds are exact;
* hybrid plans are answered by the store's hybrid vector index through
  ``DBMS_HYBRID_VECTOR.SEARCH`` (:mod:`.hybrid`, which the session routes them to): the
  database fuses the two sides, and the hits are joined back by ROWID to the chunk and parent
  rows, under the same filters as here.

Bind names: ``:qv`` the query vector (``array.array('f')``), ``:q`` the keyword query, ``:n`` the
budget, ``:scN`` scope ids, ``:rtN`` record types, ``:mfN`` metadata-filter values. A runner
executes a statement with ``cursor.setinputsizes(**s.input_sizes)`` then ``cursor.execute(s.sql,
s.binds)``; record reads (:func:`select_records_by_keys_statements`,
:func:`select_linked_memories_statement`) expect LOBs fetched as ``str``/``bytes``
(``oracledb.defaults.fetch_lobs = False``) and name every column with a quoted lower-case alias,
so rows keyed by ``cursor.description`` carry the neutral keys of ``layout.RecordRow``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from oracleagentmemory.engines.interfaces import (
    UNSET,
    Candidate,
    CandidateRound,
    CandidateSource,
    SearchPlan,
)
from oracleagentmemory.engines.layout import (
    EXPIRING_TABLES,
    MEMORY_TYPES,
    TABLE_OF_TYPE,
    search_arms,
)
from oracleagentmemory.engines.oracle.binds import keyword_query
from oracleagentmemory.engines.oracle.bindset import BindSet
from oracleagentmemory.engines.oracle.ddl import HNSW_TARGET_ACCURACY
from oracleagentmemory.engines.oracle.filters import render_filter, scope_predicates
from oracleagentmemory.engines.oracle.names import OracleObjects, normalise
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import InvalidArgumentError

EXACT_SCAN_MIN_ROWS = 2_000
"""An exact user filter that leaves at most this many chunks is always searched exactly
(PostgreSQL's value)."""
HNSW_VISITS_PER_TUPLE = 16
"""What an HNSW scan spends per index entry it examines, in chunks of an exact scoped scan
(PostgreSQL's measured value; not measured on Oracle)."""

NOT_EXPIRED = "(p.expires_at IS NULL OR p.expires_at > SYSTIMESTAMP)"

_UTC_TS = "SYS_EXTRACT_UTC(NVL(event_ts, created_at)) AS \"ts\", " \
    "SYS_EXTRACT_UTC(event_ts) AS \"event_ts\""

RECORD_COLUMNS: dict[str, str] = {
    "memory": 'id AS "id", record_type AS "record_type", thread_id AS "thread_id", '
    'user_id AS "user_id", agent_id AS "agent_id", content AS "content", '
    f'NULL AS "content_parts", metadata AS "metadata", {_UTC_TS}, status AS "status", '
    'NULL AS "role", NULL AS "seq_no"',
    "message": 'id AS "id", \'message\' AS "record_type", thread_id AS "thread_id", '
    'user_id AS "user_id", agent_id AS "agent_id", content AS "content", '
    f'content_parts AS "content_parts", metadata AS "metadata", {_UTC_TS}, '
    'status AS "status", role AS "role", seq_no AS "seq_no"',
    "thread_summary": 'id AS "id", \'thread_summary\' AS "record_type", '
    'thread_id AS "thread_id", user_id AS "user_id", agent_id AS "agent_id", '
    f'content AS "content", NULL AS "content_parts", metadata AS "metadata", {_UTC_TS}, '
    'status AS "status", NULL AS "role", covered_through_seq_no AS "seq_no"',
    "actor_profile": 'actor_id AS "id", actor_type || \'_profile\' AS "record_type", '
    'NULL AS "thread_id", NULL AS "user_id", NULL AS "agent_id", content AS "content", '
    f'NULL AS "content_parts", metadata AS "metadata", {_UTC_TS}, \'valid\' AS "status", '
    'NULL AS "role", NULL AS "seq_no"',
    "thread": 'id AS "id", \'thread\' AS "record_type", id AS "thread_id", '
    'user_id AS "user_id", agent_id AS "agent_id", NULL AS "content", '
    f'NULL AS "content_parts", metadata AS "metadata", {_UTC_TS}, \'valid\' AS "status", '
    'NULL AS "role", NULL AS "seq_no", runtime_config AS "runtime_config", '
    'runtime_state AS "runtime_state"',
    "document": 'id AS "id", \'image\' AS "record_type", thread_id AS "thread_id", '
    'user_id AS "user_id", agent_id AS "agent_id", description AS "content", '
    f'NULL AS "content_parts", metadata AS "metadata", {_UTC_TS}, status AS "status", '
    'NULL AS "role", NULL AS "seq_no", message_id AS "message_id", '
    'mime_type AS "mime_type", NULL AS "bytes"',
}
"""The Oracle SELECT list of each table, with the neutral keys of PostgreSQL's
``record_sql.SELECT_COLUMNS`` (timestamps read as UTC, see :mod:`.binds`)."""


def exact_scan_bound(budget: int, table_rows: int | None) -> int:
    """How many chunks an exact user filter may keep for an exact scan to beat HNSW.

    PostgreSQL's rule: with ``N`` chunks in all, an exact scan of ``n`` filtered chunks is
    cheaper while ``n * n <= HNSW_VISITS_PER_TUPLE * budget * N``, and always for at most
    ``EXACT_SCAN_MIN_ROWS``. ``N`` is the optimizer statistics' row count (``ALL_TABLES.NUM_ROWS``;
    ``None``, no statistics, counts as 0).
    """
    rows = max(table_rows or 0, 0)
    return max(EXACT_SCAN_MIN_ROWS, math.isqrt(HNSW_VISITS_PER_TUPLE * budget * rows))


def _arms(plan: SearchPlan) -> list[tuple[str, tuple[str, ...]]]:
    """(parent table, record types) pairs the search must visit."""
    return search_arms(plan.record_types)


def _same_owner(left: str, right: str) -> str:
    """``left IS NOT DISTINCT FROM right`` (two NULL owners are the same global owner)."""
    return f"({left} = {right} OR ({left} IS NULL AND {right} IS NULL))"


def parent_join(parent: str) -> str:
    """The condition joining chunk ``c`` to its parent row ``p`` (ids are unique per owner)."""
    if parent == "actor_profile":
        return "p.actor_id = c.record_id AND p.actor_type || '_profile' = c.record_type"
    if parent == "memory":
        return ("p.id = c.record_id AND p.record_type = c.record_type AND "
                + _same_owner("p.user_id", "c.user_id"))
    return "p.id = c.record_id AND " + _same_owner("p.user_id", "c.user_id")


def _in_list(column: str, values: Sequence[str], binds: BindSet, prefix: str) -> str:
    return f"{column} IN ({', '.join(':' + binds.add(prefix, v) for v in values)})"


def chunk_filters(plan: SearchPlan, types: tuple[str, ...], binds: BindSet) -> list[str]:
    """Predicates on chunk ``c`` alone (record type and scope)."""
    return [_in_list("c.record_type", types, binds, "rt"),
            *scope_predicates(plan.scope.items(), binds, alias="c")]


def parent_filters(plan: SearchPlan, parent: str, binds: BindSet) -> list[str]:
    """Predicates on parent ``p``: expiry hidden, status, metadata."""
    where: list[str] = []
    if parent != "actor_profile":
        where.append(NOT_EXPIRED)
        if not plan.include_invalid:
            where.append("p.status = 'valid'")
    if plan.metadata_filter is not None:
        where.append(render_filter(plan.metadata_filter, "p.metadata", binds))
    return where


def _source(o: OracleObjects, parent: str) -> str:
    return f"{o.table('record_chunks')} c JOIN {o.table(parent)} p ON {parent_join(parent)}"


def _vector_arm(o: OracleObjects, plan: SearchPlan, parent: str, types: tuple[str, ...],
                exact: bool, binds: BindSet) -> str:
    where = chunk_filters(plan, types, binds) + parent_filters(plan, parent, binds)
    fetch = ("FETCH EXACT FIRST :n ROWS ONLY" if exact else
             f"FETCH APPROX FIRST :n ROWS ONLY WITH TARGET ACCURACY {HNSW_TARGET_ACCURACY}")
    return ("SELECT c.record_type, c.record_id, VECTOR_DISTANCE(c.embedding, :qv, COSINE) AS d "
            f"FROM {_source(o, parent)} WHERE {' AND '.join(where)} "
            "AND c.embedding IS NOT NULL "
            f"ORDER BY VECTOR_DISTANCE(c.embedding, :qv, COSINE) {fetch}")


def _keyword_arm(o: OracleObjects, plan: SearchPlan, parent: str, types: tuple[str, ...],
                 binds: BindSet) -> str:
    where = chunk_filters(plan, types, binds) + parent_filters(plan, parent, binds)
    return ("SELECT c.record_type, c.record_id, 1 / (1 + SCORE(1)) AS d "
            f"FROM {_source(o, parent)} WHERE CONTAINS(c.chunk_text, :q, 1) > 0 AND "
            f"{' AND '.join(where)} ORDER BY SCORE(1) DESC FETCH FIRST :n ROWS ONLY")


def _limited(arms: list[str]) -> str:
    """The arms' union, best first, cut to ``:n`` rows."""
    union = " UNION ALL ".join(f"SELECT record_type, record_id, d FROM ({arm})" for arm in arms)
    return f"SELECT record_type, record_id, d FROM ({union}) ORDER BY d FETCH FIRST :n ROWS ONLY"


def _check_budget(budget: int) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InvalidArgumentError(f"a search budget is a positive int, got {budget!r}")
    return budget


def _vector_union(o: OracleObjects, plan: SearchPlan, exact: bool, binds: BindSet) -> str:
    if plan.vector is None:
        raise InvalidArgumentError("a vector search needs a query vector")
    return _limited([_vector_arm(o, plan, parent, types, exact, binds)
                     for parent, types in _arms(plan)])


def vector_statement(o: OracleObjects, plan: SearchPlan, budget: int, exact: bool,
                     query_vector: Any) -> Statement:
    """Vector candidates: ``(record_type, record_id, d)`` rows, best first, at most ``budget``.

    ``query_vector`` is the bind of ``plan.vector`` (:func:`.binds.vector_bind`).
    """
    binds = BindSet()
    binds.named("qv", query_vector)
    binds.named("n", _check_budget(budget))
    return binds.statement(_vector_union(o, plan, exact, binds))


def keyword_statement(o: OracleObjects, plan: SearchPlan, budget: int) -> Statement | None:
    """Keyword candidates (``None`` when the text holds no word: nothing can match)."""
    query = keyword_query(plan.text or "")
    if query is None:
        return None
    binds = BindSet()
    binds.named("q", query)
    binds.named("n", _check_budget(budget))
    return binds.statement(_limited([_keyword_arm(o, plan, parent, types, binds)
                                     for parent, types in _arms(plan)]))


def table_rows_statement(o: OracleObjects) -> Statement:
    """The chunk table's row count from the optimizer statistics (``NUM_ROWS``, NULL without
    statistics; no row when the session may not see the table's dictionary entry)."""
    binds = BindSet()
    binds.named("owner", o.owner)
    binds.named("table_name", normalise(o.names.table("record_chunks"), what="table name"))
    return binds.statement("SELECT num_rows FROM ALL_TABLES WHERE owner = :owner "
                           "AND table_name = :table_name")


def scoped_count_statement(o: OracleObjects, plan: SearchPlan, limit: int) -> Statement:
    """How many chunks (at most ``limit``) pass the plan's user filter and record types.

    Only the user filter is counted, as on PostgreSQL: it is what the ``record_chunks_scope_ix``
    index (``user_id, record_type, record_id``) that an exact scoped scan reads holds.
    """
    binds = BindSet()
    binds.named("lim", _check_budget(limit))
    user_only = SearchPlan(mode=plan.mode, k=plan.k, record_types=plan.record_types,
                           scope={"user_id": plan.scope.get("user_id", UNSET)})
    types = tuple(t for _, arm_types in _arms(plan) for t in arm_types)
    where = chunk_filters(user_only, types, binds)
    return binds.statement(
        f"SELECT COUNT(*) FROM (SELECT 1 FROM {o.table('record_chunks')} c "
        f"WHERE {' AND '.join(where)} FETCH FIRST :lim ROWS ONLY)")


class ScanChoiceCache(Protocol):
    """Recent exact-scan choices (PostgreSQL's ``ScanChoices`` has this shape)."""

    def get(self, key: tuple[Any, ...]) -> bool | None: ...

    def put(self, key: tuple[Any, ...], exact: bool) -> None: ...


Runner = Callable[[Statement], list[tuple[Any, ...]]]
"""Executes one statement and returns its rows (the engine's cursor, a test's fake)."""


class OracleCandidates(CandidateSource):
    """Candidate rounds of one search, run through ``run`` (the core runs the loop).

    ``query_vector`` is the bind of ``plan.vector`` (``array.array('f')``); ``choices`` caches
    the exact-scan choice per ``viewer`` (the end user the database applies), store, user filter
    and record types, as on PostgreSQL.
    """

    def __init__(self, run: Runner, objects: OracleObjects, plan: SearchPlan,
                 query_vector: Any = None, choices: ScanChoiceCache | None = None,
                 viewer: str | None = None) -> None:
        self._run = run
        self._objects = objects
        self._plan = plan
        self._query_vector = query_vector
        self._choices = choices
        self._viewer = viewer
        self._scoped: bool | None = None

    def _few_chunks(self, budget: int) -> bool:
        """Whether an exact user filter keeps so few chunks that an exact scan beats HNSW."""
        plan = self._plan
        if plan.mode == "keyword" or plan.scope.get("user_id", UNSET) is UNSET:
            return False
        if self._scoped is None:
            names = self._objects.names
            key = (self._viewer, self._objects.owner, names.store_key, plan.scope["user_id"],
                   tuple(plan.record_types), budget)
            scoped = self._choices.get(key) if self._choices is not None else None
            if scoped is None:
                rows = self._run(table_rows_statement(self._objects))
                table_rows = rows[0][0] if rows and rows[0][0] is not None else None
                bound = exact_scan_bound(budget, None if table_rows is None else int(table_rows))
                count = self._run(scoped_count_statement(self._objects, plan, bound + 1))
                scoped = bool(count) and int(count[0][0]) <= bound
                if self._choices is not None:
                    self._choices.put(key, scoped)
            self._scoped = scoped
        return self._scoped

    def round(self, budget: int, exact: bool | None) -> CandidateRound:
        plan, o = self._plan, self._objects
        if exact is None:
            exact = plan.mode == "keyword" or self._few_chunks(budget)
        if plan.mode == "keyword":
            statement = keyword_statement(o, plan, budget)
            rows = self._run(statement) if statement is not None else []
            return CandidateRound(sides=(_candidates(rows),), exact=True)
        if plan.mode == "vector":
            rows = self._run(vector_statement(o, plan, budget, exact, self._query_vector))
            return CandidateRound(sides=(_candidates(rows),), exact=exact)
        raise InvalidArgumentError(
            f"search mode {plan.mode!r} is not one this candidate source answers (a hybrid "
            "plan goes to the store's hybrid vector index, engines.oracle.hybrid)")


def _candidates(rows: list[tuple[Any, ...]]) -> list[Candidate]:
    return [(r[0], r[1], float(r[2])) for r in rows]


def _ids_table(binds: BindSet, prefix: str, values: Sequence[str]) -> str:
    """A subquery of the bound ids: ``JSON_TABLE`` over one ``DB_TYPE_JSON`` array bind (one
    statement text for any number of ids)."""
    name = binds.add_json(prefix, sorted(values))
    return (f"SELECT ids.id FROM JSON_TABLE(:{name}, '$[*]' COLUMNS "
            "(id VARCHAR2(128 CHAR) PATH '$')) ids")


def select_records_by_keys_statements(o: OracleObjects, keys: Sequence[tuple[str, str]]
                                      ) -> list[tuple[str, Statement]]:
    """``(logical table, statement)`` reading the visible rows of ``(record_type, record_id)``
    keys, one statement per table. A user's own record shadows a global one of the same id
    (ids are unique per owner): rows come global first (``user_id NULLS FIRST``), the caller
    keeps the last row per key, as on PostgreSQL."""
    by_table: dict[str, set[str]] = defaultdict(set)
    for record_type, record_id in keys:
        by_table[TABLE_OF_TYPE[record_type]].add(record_id)
    statements: list[tuple[str, Statement]] = []
    for logical, ids in by_table.items():
        binds = BindSet()
        id_column = "actor_id" if logical == "actor_profile" else "id"
        where = f"{id_column} IN ({_ids_table(binds, 'ids', sorted(ids))})"
        if logical in EXPIRING_TABLES:
            where += " AND (expires_at IS NULL OR expires_at > SYSTIMESTAMP)"
        order = "user_id NULLS FIRST" if logical != "actor_profile" else "actor_id"
        statements.append((logical, binds.statement(
            f"SELECT {RECORD_COLUMNS[logical]} FROM {o.table(logical)} WHERE {where} "
            f"ORDER BY {order}")))
    return statements


def select_linked_memories_statement(o: OracleObjects, ids: Sequence[str],
                                     plan: SearchPlan) -> Statement | None:
    """Memories among ``ids`` that pass the plan's scope, type, expiry and metadata filters
    (``None`` when nothing can match: no ids, or no memory type in the plan)."""
    types = [t for t in plan.record_types if t in MEMORY_TYPES]
    if not ids or not types:
        return None
    binds = BindSet()
    where = [f"id IN ({_ids_table(binds, 'ids', list(ids))})",
             _in_list("record_type", types, binds, "rt"),
             "(expires_at IS NULL OR expires_at > SYSTIMESTAMP)",
             *scope_predicates(plan.scope.items(), binds)]
    if plan.metadata_filter is not None:
        where.append(render_filter(plan.metadata_filter, "metadata", binds))
    return binds.statement(f"SELECT {RECORD_COLUMNS['memory']} FROM {o.table('memory')} "
                           f"WHERE {' AND '.join(where)}")
