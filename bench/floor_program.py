"""What the floor (``floor_app``) sends for a get and a search: the gateway's own statements,
captured on the wire, with the request's values replaced by slots.

From one captured ``GET /v1/memories/{id}`` and one captured ``POST /v1/search`` (``pg_relay``
recordings, decoded by ``pg_wire``), each statement keeps its exact SQL text, parameter types
and formats, result format and named/unnamed form; each bound value becomes a literal or a slot
the floor fills per request:

* ``assertion``: the end user's signed assertion (``<hex claims>.<hex hmac>``);
* ``id``: a text value holding the requested memory id (the id array of the read);
* ``owner``: the end user as rows name them (``<identity provider>:<user>``);
* ``vector``: the query vector in pgvector's binary form;
* ``hits``: the ids of the first ``k`` rows an earlier statement returned (the search's
  record read), sorted as the SDK sends them.

Statements are grouped into stages: everything up to a statement that needs an earlier
statement's rows is one pipeline (one round trip), the rest the next. :func:`build` checks that
filling the slots with the captured request's own values gives back the captured bytes (the
assertion aside), so the floor binds what the gateway bound.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pg_wire import Statement

__all__ = ["ASSERTION", "ID_MARK", "Program", "build", "fill", "hits_value", "vector_value"]

ASSERTION = re.compile(rb"^[0-9a-f]+\.[0-9a-f]+$")
ID_MARK = "\x01id\x01"


def vector_value(vector: Sequence[float]) -> bytes:
    """A vector in pgvector's binary form (dimension, unused, float4 values; big-endian)."""
    return struct.pack(f"!HH{len(vector)}f", len(vector), 0, *vector)


def hits_value(ids: Sequence[str]) -> bytes:
    """The text array of record ids the SDK's record read binds (sorted, distinct)."""
    return ("{" + ",".join(sorted(set(ids))) + "}").encode()


@dataclass(frozen=True)
class Program:
    """The floor's statements for one operation, as JSON-ready data."""

    stages: list[list[dict[str, Any]]]
    """Pipelines in order; each statement: ``text``, ``types``, ``formats``, ``values``
    (``{"literal": hex | None}`` or ``{"slot": name, ...}``), ``binary``, ``named``,
    ``answer`` (its rows are the answer) and ``hits`` (its rows feed the ``hits`` slot)."""


def _split_simple(statement: Statement) -> list[Statement]:
    """A simple query's statements, one extended-protocol statement each (no parameters)."""
    if not statement.simple:
        return [statement]
    return [Statement(part.strip(), (), (), (), False, False)
            for part in statement.text.split(";") if part.strip()]


def build(flights: list[list[Statement]], rows: list[list[tuple[bytes | None, ...]]],
          request_id: str | None, owner: str, vector: bytes | None, k: int) -> Program:
    """The program of one captured request (``rows``: each result's data rows, in order).

    ``request_id`` is the get's memory id, ``vector`` the search's query vector as this
    process embeds it; raises ``ValueError`` when a bound value is neither a known slot nor
    reproducible, or the captured vector differs from ``vector``.
    """
    statements = [part for flight in flights for statement in flight
                  for part in _split_simple(statement)]
    result_rows = _rows_by_statement(statements, rows)
    stages: list[list[dict[str, Any]]] = [[]]
    hits_source: int | None = None
    for index, statement in enumerate(statements):
        values: list[dict[str, Any]] = []
        depends = False
        for value, fmt in zip(statement.values, statement.param_formats, strict=True):
            slot = _slot(value, fmt, request_id, owner, vector)
            if slot is None and value is not None and fmt == 0:
                source = _hits_source(value, result_rows[:index], k)
                if source is not None:
                    hits_source, depends = source, True
                    slot = {"slot": "hits"}
            values.append(slot or {"literal": None if value is None else value.hex()})
        if depends and stages[-1]:
            stages.append([])
        stages[-1].append({
            "text": statement.text, "types": list(statement.param_types),
            "formats": list(statement.param_formats), "values": values,
            "binary": statement.binary_result, "named": statement.named,
            "index": index, "answer": False, "hits": False})
    flat = [s for stage in stages for s in stage]
    if hits_source is not None:
        flat[hits_source]["hits"] = True
    answers = [s for s in flat if any(v.get("slot") in ("id", "hits") for v in s["values"])]
    if not answers:
        raise ValueError("no statement of the request reads the requested records")
    answers[-1]["answer"] = True
    return Program(stages)


def _rows_by_statement(statements: list[Statement], rows: list[list[tuple[bytes | None, ...]]]
                       ) -> list[list[tuple[bytes | None, ...]]]:
    """Each statement's rows (one CommandComplete per statement, in order)."""
    if len(rows) != len(statements):
        raise ValueError(f"{len(statements)} statements but {len(rows)} results captured")
    return rows


def _slot(value: bytes | None, fmt: int, request_id: str | None, owner: str,
          vector: bytes | None) -> dict[str, Any] | None:
    if value is None:
        return None
    if fmt == 1:
        if vector is not None and len(value) == len(vector) and value[:2] == vector[:2]:
            if value != vector:
                raise ValueError("the gateway bound another query vector than this process "
                                 "computes for the same query")
            return {"slot": "vector"}
        return None
    if ASSERTION.match(value):
        return {"slot": "assertion"}
    text = value.decode()
    if text == owner:
        return {"slot": "owner"}
    if request_id is not None and request_id in text:
        return {"slot": "id", "template": text.replace(request_id, ID_MARK)}
    return None


def _hits_source(value: bytes, earlier: list[list[tuple[bytes | None, ...]]], k: int
                 ) -> int | None:
    """The earlier statement whose first ``k`` rows' ids make ``value``, if any."""
    for index in range(len(earlier) - 1, -1, -1):
        found = earlier[index]
        if found and len(found[0]) == 3 and _ids(found, k) and \
                hits_value(_ids(found, k)) == value:
            return index
    return None


def _ids(rows: list[tuple[bytes | None, ...]], k: int) -> list[str]:
    """The record ids (second column) of the first ``k`` rows."""
    return [row[1].decode() for row in rows[:k] if row[1] is not None]


def fill(statement: dict[str, Any], values: dict[str, Any], hits: bytes | None = None
         ) -> list[bytes | None]:
    """The bound values of a program ``statement`` for one request's ``values`` (``hits``: the
    ``hits`` slot's value, from the rows of an earlier stage)."""
    out: list[bytes | None] = []
    for spec in statement["values"]:
        slot = spec.get("slot")
        if slot is None:
            literal = spec["literal"]
            out.append(None if literal is None else bytes.fromhex(literal))
        elif slot == "id":
            out.append(spec["template"].replace(ID_MARK, values["id"]).encode())
        elif slot == "hits":
            assert hits is not None
            out.append(hits)
        else:
            out.append(values[slot])
    return out
