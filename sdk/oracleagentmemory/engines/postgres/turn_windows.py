"""Turn windows of the keyword search over messages: a message is scored with its neighbours.

An answer in a conversation is often a turn that repeats none of the question's words ("Yes,
last Saturday!"), next to the turn that does ("Did you go to the support group?"). The message
arm of a keyword round (:func:`window_tail`) therefore ranks each message by the BM25 scores of
the matching messages within :data:`WINDOW` turns of it in its thread, weighted by their
distance (:data:`NEIGHBOUR_WEIGHTS`: itself 1, the next turn either side 1/2, the one after
1/4), and doubles the score of a message whose role (its speaker) the query names
(:data:`NAMED_SPEAKER_BOOST`): a question about what Caroline said is answered by Caroline's
turns more often than by the turns that name her. A message whose timestamp falls in a month
the query names (:data:`MONTH_MENTION`, in its year when one is given) is doubled too
(:data:`NAMED_MONTH_BOOST`).

Measured with ``bench/locomo.py`` on LoCoMo's development half (keyword search, 760 questions):
recall@5/@10 0.537/0.617 without any, the window alone 0.611/0.711 (one turn either side
0.583/0.679), window and speaker 0.669/0.742, and the month 0.684/0.751. Neighbours are the
messages of the same thread and owner whose ``seq_no`` lies within the window (the
``(thread_id, seq_no)`` index), and pass the same scope, validity, expiry and metadata filters
as every other result, under the caller's row-level security.

The vector arm of messages ranks windows too (:func:`vector_window`): the squared similarities
of its best chunks spread over their neighbours with the same weights. On the same half (vector
search, WordLlama 256-d) it raises recall@5/@10 from 0.334/0.409 to 0.403/0.470, in each of
the five conversations; fused with the keyword side (``core._hybrid_fusion``) it changes
little, since the keyword ranking finds most of what it finds. Fewer seeds than
:data:`SEEDS_PER_RESULT` per row (80 for a 10-result search's first round) lower it there: 40
score 0.386/0.461, 20 0.380/0.460, hybrid within a question or two either way. With
multilingual-e5-small, whose cosines lie close together so that many seeds' neighbour weight
outranks one close match, 20 seeds raise the vector arm from 0.395/0.507 to 0.451/0.570 but
lower hybrid at five results (0.684 to 0.671; 0.760 to 0.763 at ten; fusion weight 0.2 at
``k = 10`` for both), so the seeds stay. Scaling the seeds' similarities to their own range
(min-max) did not help either (WordLlama 0.388/0.468).
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import SearchPlan
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.ddl import TEXT_SEARCH_CONFIG
from oracleagentmemory.engines.postgres.filters import scope_predicates

__all__ = ["MONTHS", "MONTH_MENTION", "NAMED_MONTH_BOOST", "NAMED_SPEAKER_BOOST",
           "NEIGHBOUR_WEIGHTS", "SEEDS_PER_RESULT", "WINDOW", "vector_window", "window_tail"]

NEIGHBOUR_WEIGHTS = (1.0, 0.5, 0.25)
"""The weight of a matching message's score at 0, 1 and 2 turns from the message ranked."""
WINDOW = len(NEIGHBOUR_WEIGHTS) - 1
"""How many turns either side of a matching message its score reaches."""
NAMED_SPEAKER_BOOST = 2.0
"""The factor of a message whose role the query names (the role analysed as the text is)."""
SEEDS_PER_RESULT = 2
"""Matching messages (or a vector arm's nearest chunks) whose windows are scored, per row the
round returns (best first). On
LoCoMo's development half 2 keeps the recall of 4 (1 loses 0.01) and costs 8.3 ms of server CPU
per keyword round against 9.2 (6.4 without windows)."""
NAMED_MONTH_BOOST = 2.0
"""The factor of a message whose timestamp falls in a month the query names (in its year,
when the query gives one): "What did Gina find for her store on 1 February, 2023?"."""
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
MONTH_MENTION = (r"\m(january|february|march|april|may(?=\s+\d)|june|july|august|september|"
                 r"october|november|december)\M(?:\s+\d{1,2}(?:st|nd|rd|th)?)?,?(?:\s+(\d{4}))?")
"""A month the query names (English; "may" only before a day or year), and its year if given."""


def window_tail(names: StoreNames, plan: SearchPlan, budget: int, score: sql.Composable,
                parent_where: list[sql.Composable], parent_params: list[Any],
                params: list[Any]) -> sql.Composable:
    """The end of a message keyword arm (its last CTEs, to follow a comma, and its SELECT):
    from the arm's CTEs ``h``, ``df``, ``st`` (the matching chunks' lexemes and statistics) and
    ``tq`` (the query's lexemes), the ``budget`` best messages by windowed score, as
    ``record_type, record_id, d`` with ``d = 1 / (1 + score)``.

    ``score`` is the BM25 sum over ``h`` grouped by chunk; ``parent_where`` (with
    ``parent_params``) the validity, expiry and metadata predicates on message ``p``. Ties
    break by id (seeds by chunk id, messages by message id as the core orders them), so which
    seeds and messages make the cut does not depend on the statement's plan.
    """
    scope, scope_params = scope_predicates(plan.scope.items(), alias="p")
    where = [*scope, *parent_where] or [sql.SQL("true")]
    weight = sql.SQL("CASE abs(p.seq_no - s.seq_no) {} END").format(sql.SQL(" ").join(
        sql.SQL("WHEN {} THEN {}::float8").format(sql.Literal(n), sql.Literal(w))
        for n, w in enumerate(NEIGHBOUR_WEIGHTS) if n))
    params.extend([plan.text, *scope_params, *parent_params])
    message = q.table(names, "message")
    # A matching message passed every filter with its chunk; its neighbours are checked here.
    # A message outside any thread has no neighbours.
    return sql.SQL(
        "dt AS MATERIALIZED (SELECT array_position({months}, m[1]) AS month, m[2]::int AS year "
        "FROM regexp_matches(lower(%s), {mention}, 'g') AS m), "
        "sc AS (SELECT h.record_id, h.user_id, {score} AS score FROM h JOIN df USING (lexeme) "
        "CROSS JOIN st GROUP BY h.id, h.record_id, h.user_id ORDER BY score DESC, h.id "
        "LIMIT {seeds}), "
        "s AS (SELECT p.id, p.user_id, p.role, p.event_ts, p.thread_id, p.seq_no, "
        "max(sc.score) AS score "
        "FROM sc JOIN {message} p ON p.id = sc.record_id "
        "AND p.user_id IS NOT DISTINCT FROM sc.user_id "
        "GROUP BY p.id, p.user_id, p.role, p.event_ts, p.thread_id, p.seq_no), "
        "w AS (SELECT s.id, s.user_id, s.role, s.event_ts, s.score FROM s UNION ALL "
        "SELECT p.id, p.user_id, p.role, p.event_ts, s.score * {weight} "
        "FROM s JOIN {message} p "
        "ON p.thread_id = s.thread_id AND p.user_id IS NOT DISTINCT FROM s.user_id "
        "AND p.seq_no BETWEEN s.seq_no - {window} AND s.seq_no + {window} "
        "AND p.seq_no <> s.seq_no WHERE {where}), "
        # Each role is analysed once, not once per message.
        "nr AS MATERIALIZED (SELECT r.role FROM (SELECT DISTINCT w.role FROM w) r CROSS JOIN tq "
        "WHERE tsvector_to_array(to_tsvector({config}::regconfig, coalesce(r.role, ''))) "
        "&& tq.lexemes) "
        "SELECT 'message'::text AS record_type, w.id AS record_id, 1 / (1 + sum(w.score) * "
        "CASE WHEN w.role IN (SELECT nr.role FROM nr) THEN {boost}::float8 ELSE 1 END "
        "* CASE WHEN EXISTS (SELECT 1 FROM dt "
        "WHERE dt.month = extract(month FROM w.event_ts AT TIME ZONE 'UTC') "
        "AND (dt.year IS NULL OR dt.year = extract(year FROM w.event_ts AT TIME ZONE 'UTC'))) "
        "THEN {month_boost}::float8 ELSE 1 END) AS d "
        "FROM w GROUP BY w.id, w.user_id, w.role, w.event_ts "
        'ORDER BY d, w.id COLLATE "C" LIMIT {budget}'
    ).format(score=score, seeds=sql.Literal(budget * SEEDS_PER_RESULT),
             message=message, weight=weight, boost=sql.Literal(NAMED_SPEAKER_BOOST),
             window=sql.Literal(WINDOW), where=sql.SQL(" AND ").join(where),
             budget=sql.Literal(budget), config=sql.Literal(TEXT_SEARCH_CONFIG),
             months=sql.Literal(list(MONTHS)), mention=sql.Literal(MONTH_MENTION),
             month_boost=sql.Literal(NAMED_MONTH_BOOST))


def vector_window(names: StoreNames, plan: SearchPlan, budget: int, seeds: sql.Composable,
                  parent_where: list[sql.Composable], parent_params: list[Any],
                  params: list[Any]) -> sql.Composable:
    """A message vector arm ranked by turn windows, as the keyword arm is.

    ``seeds`` is the arm's statement for the best chunks (``record_type, record_id, user_id,
    d``, cosine distance, ``budget * SEEDS_PER_RESULT`` of them); its parameters are already in
    ``params``. A seed's similarity ``max(0, 1 - d)`` is squared (so a close match outweighs
    several loose ones), ``own``, and spread over its neighbours with
    :data:`NEIGHBOUR_WEIGHTS`, ``near`` (summed over the seeds a message is near). A message's
    distance is ``1 - sqrt((own + near) / (1 + near))``: its cosine distance when no seed is near
    it, 0 only for an exact match, and never below 0 (on LoCoMo this ranks as the plain sum
    ``own + near`` does at five results and 0.01 lower at ten). Returns the ``budget`` best as
    ``record_type, record_id, user_id, d``; neighbours pass ``parent_where`` (with
    ``parent_params``) and the scope, as in :func:`window_tail`.
    """
    scope, scope_params = scope_predicates(plan.scope.items(), alias="p")
    where = [*scope, *parent_where] or [sql.SQL("true")]
    weight = sql.SQL("CASE abs(p.seq_no - s.seq_no) {} END").format(sql.SQL(" ").join(
        sql.SQL("WHEN {} THEN {}::float8").format(sql.Literal(n), sql.Literal(w))
        for n, w in enumerate(NEIGHBOUR_WEIGHTS) if n))
    params.extend([*scope_params, *parent_params])
    message = q.table(names, "message")
    return sql.SQL(
        "(WITH vs AS MATERIALIZED ({seeds}), "
        "s AS (SELECT p.id, p.user_id, p.thread_id, p.seq_no, "
        "power(greatest(1 - min(vs.d), 0), 2)::float8 AS own "
        "FROM vs JOIN {message} p ON p.id = vs.record_id "
        "AND p.user_id IS NOT DISTINCT FROM vs.user_id "
        "GROUP BY p.id, p.user_id, p.thread_id, p.seq_no), "
        "w AS (SELECT s.id, s.user_id, s.own, 0::float8 AS near FROM s UNION ALL "
        "SELECT p.id, p.user_id, 0::float8, s.own * {weight} FROM s JOIN {message} p "
        "ON p.thread_id = s.thread_id AND p.user_id IS NOT DISTINCT FROM s.user_id "
        "AND p.seq_no BETWEEN s.seq_no - {window} AND s.seq_no + {window} "
        "AND p.seq_no <> s.seq_no WHERE {where}) "
        "SELECT 'message'::text AS record_type, w.id AS record_id, w.user_id, "
        "1 - sqrt((sum(w.own) + sum(w.near)) / (1 + sum(w.near))) AS d "
        "FROM w GROUP BY w.id, w.user_id "
        "ORDER BY d LIMIT {budget})"
    ).format(seeds=seeds, message=message, weight=weight, window=sql.Literal(WINDOW),
             where=sql.SQL(" AND ").join(where), budget=sql.Literal(budget))
