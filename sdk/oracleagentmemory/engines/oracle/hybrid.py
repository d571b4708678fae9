"""``SearchStrategy.HYBRID`` on Oracle AI Database 26ai: the vectorizer preference, the hybrid
vector index on the chunk text, and the ``DBMS_HYBRID_VECTOR.SEARCH`` statement.

Pure builders (inputs in, SQL text and bind values out; nothing is executed here) and a
candidate source that runs the search through a caller's ``run`` callable. Not run against a
live database: no Oracle database is reachable where this was written. Sources:

* ``CREATE HYBRID VECTOR INDEX [schema.]index ON [schema.]table (column) [FILTER BY ...]
  PARAMETERS ('paramstring')`` (Oracle Text Reference and AI Vector Search User's Guide,
  "CREATE HYBRID VECTOR INDEX"). The index is an Oracle Text SEARCH INDEX type holding a text
  part and a vector part; its paramstring takes ``VECTORIZER <preference>``, Oracle Text
  preferences (``STOPLIST``) and the maintenance settings. Maintenance is ``AUTO`` (background,
  asynchronous) by default; ``MAINTENANCE MANUAL`` with ``SYNC (ON COMMIT)`` or ``SYNC
  (MANUAL)`` keeps the index synchronous or owner-synced ("Guidelines and Restrictions for
  Hybrid Vector Indexes"; the form ``VECTORIZER <pref> MAINTENANCE MANUAL SYNC (...)`` is the one
  Oracle's own ``oracleagentmemory`` 26.8 emits, per ``shared/research/oracle-deepsec.md`` §4).
* ``DBMS_VECTOR_CHAIN.CREATE_PREFERENCE(pref_name, DBMS_VECTOR_CHAIN.VECTORIZER, params JSON)``
  with ``{"model": ..., "vector_idxtype": ..., "distance": ..., "accuracy": ...}`` (PL/SQL
  Packages Reference / AI Vector Search User's Guide, "CREATE_PREFERENCE"); ``DROP_PREFERENCE``.
* ``DBMS_HYBRID_VECTOR.SEARCH(qparams JSON) RETURN CLOB``: a JSON array of results, best first,
  unpacked with ``JSON_TABLE(..., '$[*]' COLUMNS (... PATH '$.rowid', ... PATH '$.score'))``
  (AI Vector Search User's Guide, "SEARCH" and "SEARCHPIPELINE"). Request keys used here:
  ``hybrid_index_name``, ``search_fusion`` (``UNION``), ``search_scorer`` (``RRF``), ``vector``
  (``search_text`` or ``search_vector``, ``search_mode`` ``DOCUMENT``, ``aggregator`` ``MAX``,
  ``result_max``, ``rank_penalty``), ``text`` (``contains``, ``result_max``, ``rank_penalty``)
  and ``return`` (``values`` ``["rowid", "score"]``, ``topN``, ``format`` ``JSON``). Scores run
  from 0 (worst) to 100 (best).

**Why a hybrid index replaces the CONTEXT index.** Oracle does not let a CONTEXT index and a
hybrid vector index own the same column; the hybrid index's text part answers ``CONTAINS`` as a
CONTEXT index does [inferred from its being an Oracle Text SEARCH INDEX; not run live], so a
keyword client keeps working on a hybrid store (the spec: "it can use the text branch of that
hybrid index").

**Row security.** See :func:`search_statement`: nothing of the search function's output is
trusted but row ids and scores; every hit is joined back, by ROWID, to the protected tables.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from oracleagentmemory.engines.interfaces import (
    Candidate,
    CandidateRound,
    CandidateSource,
    SchemaOptions,
    SearchPlan,
)
from oracleagentmemory.engines.layout import search_arms
from oracleagentmemory.engines.oracle.binds import keyword_query
from oracleagentmemory.engines.oracle.bindset import BindSet
from oracleagentmemory.engines.oracle.ddl import HNSW_TARGET_ACCURACY
from oracleagentmemory.engines.oracle.embedding import model_name
from oracleagentmemory.engines.oracle.names import OracleObjects, normalise
from oracleagentmemory.engines.oracle.search import chunk_filters, parent_filters, parent_join
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

HYBRID_INDEX_SUFFIX = "record_chunks_hybrid_ix"
"""The managed hybrid vector index on ``record_chunks (chunk_text)``."""

TEXT_INDEX_SUFFIX = "record_chunks_text_ix"
"""The CONTEXT index (``ddl.text_index``) the hybrid index replaces."""

PREFERENCE_SUFFIX = "record_chunks_vz"
"""The vectorizer preference of the store (one per store, owned by the schema owner)."""

MAX_PREFERENCE_NAME_BYTES = 30
"""Oracle Text preference names are kept within 30 bytes (Oracle's own ``oracleagentmemory``
keeps its vectorizer preference name within 30 bytes; a longer store prefix gets a hashed
name, :func:`preference_name`)."""

HYBRID_INDEX_MAINTENANCE: dict[str, str] = {
    "on_commit": "MAINTENANCE MANUAL SYNC (ON COMMIT)",
    "manual": "MAINTENANCE MANUAL SYNC (MANUAL)",
    "auto": "MAINTENANCE AUTO",
}
"""The maintenance clause of each ``SearchIndexSyncMode``: ``on_commit`` searchable at commit,
``manual`` after the owner's ``CTX_DDL.SYNC_INDEX``, ``auto`` Oracle's asynchronous background
maintenance (the hybrid index's default)."""

RANK_PENALTY = 60
"""``rank_penalty`` of both sides under the ``RRF`` scorer (a rank ``r`` weighs ``1 / (r +
penalty)``): the core's reciprocal-rank-fusion constant, so both sides weigh as they do when the
core fuses them (PostgreSQL)."""

TOP_N_GROWTH = 4
"""How much a round widens the search's ``topN`` when row filters dropped too many hits."""

MAX_TOP_N = 10_000
"""The widest ``topN`` a round asks for; past it, the round returns what survived."""


# --- names ----------------------------------------------------------------------------------
def preference_name(o: OracleObjects) -> str:
    """The store's vectorizer preference name (unquoted, upper case, at most 30 bytes):
    ``<PREFIX>RECORD_CHUNKS_VZ``, or ``OAM_VZ_<hash of owner and store>`` when that is longer."""
    name = o.object_name(PREFERENCE_SUFFIX)
    if len(name.encode("utf-8")) <= MAX_PREFERENCE_NAME_BYTES:
        return name
    key = f"oam-vectorizer:{o.owner}:{o.names.store_key}".encode()
    return normalise("OAM_VZ_" + hashlib.blake2b(key, digest_size=8).hexdigest().upper(),
                     what="preference name")


def hybrid_index_name(o: OracleObjects) -> str:
    """``OWNER.INDEX`` as the search request names the index (unquoted: both parts are
    validated upper-case identifiers). Qualified because end-user sessions run as ``XS$NULL``
    [the documented examples give a bare name; a qualified one is not verified live]."""
    return f"{o.owner}.{o.object_name(HYBRID_INDEX_SUFFIX)}"


# --- schema ---------------------------------------------------------------------------------
def require_in_database_model(options: SchemaOptions) -> str:
    """The validated model name of a hybrid store's embedder; a hybrid store without an
    ``OracleDBEmbedder`` is refused, as the spec says ("HYBRID requires embedder to be an
    OracleDBEmbedder so the managed hybrid index uses the same in-database model as the main
    store embedder")."""
    if options.in_database_model is None:
        raise InvalidArgumentTypeError(
            "SearchStrategy.HYBRID requires embedder to be an OracleDBEmbedder: the managed "
            "hybrid vector index embeds the stored search text with that embedder's "
            "in-database model (load one with `oam-admin model load`)", argument="embedder")
    return model_name(options.in_database_model)


def require_vectorizer(options: SchemaOptions) -> dict[str, Any]:
    """The embedding part of a hybrid store's vectorizer preference: its embedder's in-database
    model (with the model's input name unless it is ``DATA``), or the provider the database
    calls for that embedder (``embedder_spec``); refused without an ``OracleDBEmbedder``
    (:func:`require_in_database_model`)."""
    given = options.in_database_vectorizer or {}
    if isinstance(given.get("embedder_spec"), dict):
        return {"embedder_spec": dict(given["embedder_spec"])}
    embedding: dict[str, Any] = {"model": require_in_database_model(options)}
    if given.get("input_name") is not None:
        embedding["input_name"] = normalise(given["input_name"], what="input_name")
    return embedding


def vectorizer_params(model: str | Mapping[str, Any]) -> dict[str, Any]:
    """The vectorizer preference: the in-database ``model`` (or the embedding part of
    :func:`require_vectorizer`), an HNSW vector part with cosine distance at the target accuracy
    of the store's own HNSW index."""
    embedding = {"model": model_name(model)} if isinstance(model, str) else dict(model)
    return {**embedding, "vector_idxtype": "HNSW", "distance": "COSINE",
            "accuracy": HNSW_TARGET_ACCURACY}


def create_preference(o: OracleObjects, model: str | Mapping[str, Any]) -> Statement:
    """(Re)create the store's vectorizer preference for ``model``, run by the owner before the
    hybrid index is created (the index copies the preference's settings when it is built, so a
    preference left by an earlier store is replaced, never reused with another model)."""
    return Statement(
        "DECLARE n NUMBER; BEGIN SELECT COUNT(*) INTO n FROM CTXSYS.CTX_USER_PREFERENCES "
        "WHERE pre_name = :pref_name; IF n > 0 THEN "
        "DBMS_VECTOR_CHAIN.DROP_PREFERENCE(:pref_name); END IF; "
        "DBMS_VECTOR_CHAIN.CREATE_PREFERENCE(:pref_name, DBMS_VECTOR_CHAIN.VECTORIZER, "
        "JSON(:params)); END;",
        {"pref_name": preference_name(o), "params": json.dumps(vectorizer_params(model))},
    )


def drop_preference(o: OracleObjects) -> Statement:
    """Drop the store's vectorizer preference when it exists (run after its tables are dropped).

    Dynamic SQL, so the block compiles on a database without Oracle Text (a vector store there
    has no preference: a missing ``CTX_USER_PREFERENCES``, ORA-00942, counts as none).
    """
    return Statement(
        "DECLARE n NUMBER; BEGIN BEGIN EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM "
        "CTXSYS.CTX_USER_PREFERENCES WHERE pre_name = :1' INTO n USING :pref_name; "
        "EXCEPTION WHEN OTHERS THEN IF SQLCODE = -942 THEN n := 0; ELSE RAISE; END IF; END; "
        "IF n > 0 THEN EXECUTE IMMEDIATE 'BEGIN DBMS_VECTOR_CHAIN.DROP_PREFERENCE(:1); END;' "
        "USING :pref_name; END IF; END;",
        {"pref_name": preference_name(o)},
    )


def hybrid_index(o: OracleObjects, search_index_sync: str) -> str:
    """The hybrid vector index on the chunk text, maintained per ``SearchIndexSyncMode``.

    DDL takes no binds: the preference name is a validated identifier (letters, digits, ``_``,
    ``$``, ``#``: nothing can end the literal), schema-qualified as Oracle Text preferences are
    (``OWNER.PREF``, like ``CTXSYS.EMPTY_STOPLIST``). ``CTXSYS.EMPTY_STOPLIST`` indexes every
    word, as the CONTEXT index does.
    """
    maintenance = HYBRID_INDEX_MAINTENANCE.get(search_index_sync)
    if maintenance is None:
        raise InvalidArgumentError(
            f"search_index_sync {search_index_sync!r} is not supported by a hybrid vector "
            f"index; use one of {', '.join(sorted(HYBRID_INDEX_MAINTENANCE))}",
            argument="search_index_sync")
    preference = f"{o.owner}.{preference_name(o)}"
    return (f"CREATE HYBRID VECTOR INDEX {o.index(HYBRID_INDEX_SUFFIX)} ON "
            f"{o.table('record_chunks')} (chunk_text) PARAMETERS ('VECTORIZER {preference} "
            f"STOPLIST CTXSYS.EMPTY_STOPLIST {maintenance}')")


def drop_text_index(o: OracleObjects) -> str:
    """Drop the CONTEXT index before the hybrid index takes the chunk text column (a vector or
    keyword store upgraded to hybrid search)."""
    return f"DROP INDEX {o.index(TEXT_INDEX_SUFFIX)}"


# --- search ---------------------------------------------------------------------------------
def search_request(o: OracleObjects, plan: SearchPlan, top_n: int) -> dict[str, Any]:
    """The ``DBMS_HYBRID_VECTOR.SEARCH`` request of ``plan`` for the ``top_n`` best rows.

    With query text, the vector side embeds the text with the index's model
    (``vector.search_text``) and the keyword side matches the escaped query of
    :func:`.binds.keyword_query` (``text.contains``: any word, ``ACCUM`` ranking, as keyword
    search does), fused by ``UNION`` (a row found by either side, as the core's fusion keeps)
    and scored by ``RRF``. A text without words has no keyword side. With only a query vector,
    the vector is the query-side input (``vector.search_vector``, the text form
    ``VECTOR_SERIALIZE`` gives) and the search is vector-only. ``search_mode`` ``DOCUMENT``
    returns each base row (chunk) once, at its best internal chunk (``MAX``).
    """
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise InvalidArgumentError(f"a search budget is a positive int, got {top_n!r}")
    text = plan.text if plan.text is not None and plan.text.strip() else None
    vector: dict[str, Any] = {"search_mode": "DOCUMENT", "aggregator": "MAX",
                              "result_max": top_n, "rank_penalty": RANK_PENALTY}
    if text is not None:
        vector["search_text"] = text
    elif plan.vector is not None:
        vector["search_vector"] = json.dumps([float(x) for x in plan.vector])
    else:
        raise InvalidArgumentError("a hybrid search needs a query text or a query vector")
    request: dict[str, Any] = {"hybrid_index_name": hybrid_index_name(o), "vector": vector}
    words = keyword_query(text) if text is not None else None
    if words is not None:
        request["text"] = {"contains": words, "result_max": top_n,
                           "rank_penalty": RANK_PENALTY}
        request["search_fusion"] = "UNION"
        request["search_scorer"] = "RRF"
    request["return"] = {"values": ["rowid", "score"], "topN": top_n, "format": "JSON"}
    return request


def search_statement(o: OracleObjects, plan: SearchPlan, top_n: int) -> Statement:
    """One search: ``(n, record_type, record_id, score)`` per hit of the hybrid index, in its
    order (``n`` from 1, best first); ``record_type``/``record_id`` are NULL for a hit that the
    plan's filters, or the end user's row security, drop.

    The request is a Python dict serialised by ``json.dumps`` and bound as one value
    (``JSON(:request)``): user text never reaches the SQL text. ``WITH hits AS (SELECT /*+
    MATERIALIZE */ ...)`` runs the search function once per statement; each arm (parent table)
    reads the chunk rows of the hits by ROWID and applies the same predicates as vector and
    keyword search (record types, owner/thread/agent scope, expiry, status, metadata filter),
    and the hits are left-joined to the arms, so the statement reports how many hits the index
    returned (the caller widens ``topN`` when filters dropped too many).

    Row security: ``DBMS_HYBRID_VECTOR.SEARCH`` reads the index's own tables, which data grants
    do not name, and whether it applies the end user's grants is not documented. So only row
    ids and scores are taken from it (never ``chunk_text``, which could be another user's text),
    and every hit must reach the protected base tables ``record_chunks`` and its parent table
    through this statement, which the end-user session runs: Deep Data Security filters each
    SQL access of a protected table by the session's data grants (a row a grant hides is not
    there for the query), so a ROWID of a hidden row joins to nothing and the hit is dropped,
    as the ``WHERE`` filters drop theirs. What the index may still reflect of hidden rows is the
    ranking: a visible row's rank and fused score were computed among every indexed row.
    """
    binds = BindSet()
    binds.named("request", json.dumps(search_request(o, plan, top_n)))
    arms: list[str] = []
    for parent, types in search_arms(plan.record_types):
        where = chunk_filters(plan, types, binds) + parent_filters(plan, parent, binds)
        arms.append(
            f"SELECT h.n, c.record_type, c.record_id FROM hits h JOIN "
            f"{o.table('record_chunks')} c ON c.ROWID = CHARTOROWID(h.rid) JOIN "
            f"{o.table(parent)} p ON {parent_join(parent)} WHERE {' AND '.join(where)}")
    hits = ("SELECT /*+ MATERIALIZE */ j.n, j.rid, j.score FROM JSON_TABLE("
            "DBMS_HYBRID_VECTOR.SEARCH(JSON(:request)), '$[*]' COLUMNS (n FOR ORDINALITY, "
            "rid VARCHAR2(128) PATH '$.rowid', score NUMBER PATH '$.score')) j")
    return binds.statement(
        f"WITH hits AS ({hits}) SELECT hits.n, v.record_type, v.record_id, hits.score "
        f"FROM hits LEFT JOIN ({' UNION ALL '.join(arms)}) v ON v.n = hits.n "
        "ORDER BY hits.n")


def distance(score: Any) -> float:
    """A hybrid score (0 worst to 100 best) as a distance (0 best to 1 worst):
    ``1 - score / 100``, the score clamped to ``[0, 100]`` (a NULL score counts as 0). It
    ascends as the score falls, so the core's order (smaller first) is the index's."""
    value = 0.0 if score is None else min(max(float(score), 0.0), 100.0)
    return 1.0 - value / 100.0


Runner = Callable[[Statement], list[tuple[Any, ...]]]
"""Executes one statement and returns its rows (the engine's cursor, a test's fake)."""


class HybridCandidates(CandidateSource):
    """Candidate rounds of one hybrid search through the store's hybrid vector index.

    Each round is one side, already fused by the database, at most ``budget`` chunk rows best
    first. The index ranks before the plan's filters and row security drop hits, so a round
    asks for ``topN = budget`` and, while fewer than ``budget`` hits survive and the index gave
    all it was asked for, asks again for ``TOP_N_GROWTH`` times more (up to :data:`MAX_TOP_N`).
    A side shorter than ``budget`` therefore means the index has no more matching rows (or the
    widest window was searched). The hybrid index has no exact mode: every round reports
    ``exact=True`` (its answer does not change when asked again), so the core's loop ends.
    """

    def __init__(self, run: Runner, objects: OracleObjects, plan: SearchPlan) -> None:
        self._run = run
        self._objects = objects
        self._plan = plan

    def round(self, budget: int, exact: bool | None) -> CandidateRound:
        top_n = budget
        while True:
            rows = self._run(search_statement(self._objects, self._plan, top_n))
            kept = _kept(rows)
            if len(kept) >= budget or len(rows) < top_n or top_n >= MAX_TOP_N:
                return CandidateRound(sides=(kept[:budget],), exact=True)
            top_n = min(top_n * TOP_N_GROWTH, MAX_TOP_N)


def _kept(rows: Sequence[tuple[Any, ...]]) -> list[Candidate]:
    """The hits that joined to a visible, matching row, in the index's order."""
    return [(str(record_type), str(record_id), distance(score))
            for _, record_type, record_id, score in rows if record_type is not None]
