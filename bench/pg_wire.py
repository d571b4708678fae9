"""The statements a PostgreSQL client ran, decoded from the messages ``pg_relay`` recorded.

Each client flight (what the client sent before it next waited for the server) becomes a list
of :class:`Statement`: the SQL text (of the Parse message of the statement a Bind names, or of a
simple Query), its parameter types and formats, the bound values, the result format, and
whether it ran as a named (prepared) statement. Only what a bench needs to replay the same SQL
is decoded.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pg_relay import Message

__all__ = ["Statement", "flights_of", "rows_of"]


@dataclass(frozen=True)
class Statement:
    """One statement as the client sent it."""

    text: str
    param_types: tuple[int, ...]
    """The OIDs the Parse message declared (0: let the server infer); may be shorter than
    ``values`` (the rest inferred)."""
    param_formats: tuple[int, ...]
    """One format per value (0 text, 1 binary)."""
    values: tuple[bytes | None, ...]
    binary_result: bool
    named: bool
    """Whether it ran as a named (prepared) statement; False for the unnamed statement and for
    simple queries."""
    simple: bool = False
    """A simple-protocol Query (possibly several statements separated by semicolons)."""


def _cstring(data: bytes, at: int) -> tuple[str, int]:
    end = data.index(b"\0", at)
    return data[at:end].decode(), end + 1


def _bind(payload: bytes) -> tuple[str, tuple[int, ...], tuple[bytes | None, ...], bool]:
    """A Bind message: statement name, parameter formats, values, binary results."""
    _portal, at = _cstring(payload, 0)
    name, at = _cstring(payload, at)
    (nformats,) = struct.unpack_from("!h", payload, at)
    at += 2
    formats = struct.unpack_from(f"!{nformats}h", payload, at)
    at += 2 * nformats
    (nvalues,) = struct.unpack_from("!h", payload, at)
    at += 2
    values: list[bytes | None] = []
    for _ in range(nvalues):
        (length,) = struct.unpack_from("!i", payload, at)
        at += 4
        if length < 0:
            values.append(None)
        else:
            values.append(payload[at:at + length])
            at += length
    (nresults,) = struct.unpack_from("!h", payload, at)
    at += 2
    results = struct.unpack_from(f"!{nresults}h", payload, at)
    per_value = (formats * nvalues if len(formats) == 1 else formats) or (0,) * nvalues
    return name, tuple(per_value), tuple(values), bool(results and results[0] == 1)


def flights_of(messages: list[Message], prepared: dict[str, tuple[str, tuple[int, ...]]]
               ) -> list[list[Statement]]:
    """The client's statements of one connection's recorded ``messages``, by flight.

    ``prepared`` maps statement names to (text, parameter types): it must hold what the
    connection prepared before the recording (from earlier calls on the same connection; named
    statements prepared during the recording are added to it).
    """
    flights: list[list[Statement]] = []
    current: list[Statement] | None = None
    for message in messages:
        if message.sender == "B":
            current = None
            continue
        if current is None:
            current = []
            flights.append(current)
        if message.kind == "P":
            name, at = _cstring(message.payload, 0)
            text, at = _cstring(message.payload, at)
            (count,) = struct.unpack_from("!h", message.payload, at)
            types = struct.unpack_from(f"!{count}I", message.payload, at + 2)
            prepared[name] = (text, tuple(types))
        elif message.kind == "B":
            name, formats, values, binary = _bind(message.payload)
            text, types = prepared[name]
            current.append(Statement(text, types, formats, values, binary, bool(name)))
        elif message.kind == "Q":
            text, _ = _cstring(message.payload, 0)
            current.append(Statement(text, (), (), (), False, False, simple=True))
    return [flight for flight in flights if flight]


def rows_of(messages: list[Message]) -> list[list[tuple[bytes | None, ...]]]:
    """The data rows the server sent, one list per result (CommandComplete ends one)."""
    results: list[list[tuple[bytes | None, ...]]] = []
    rows: list[tuple[bytes | None, ...]] = []
    for message in messages:
        if message.sender != "B":
            continue
        if message.kind == "D":
            payload = message.payload
            (count,) = struct.unpack_from("!h", payload, 0)
            at, row = 2, []
            for _ in range(count):
                (length,) = struct.unpack_from("!i", payload, at)
                at += 4
                row.append(None if length < 0 else payload[at:at + length])
                at += max(0, length)
            rows.append(tuple(row))
        elif message.kind == "C":
            results.append(rows)
            rows = []
    return results
