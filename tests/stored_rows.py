"""What a store wrote, read straight from its tables on the engine under test.

Behavioural tests that check the rows behind a write (the retrieval rows of
``<store>_record_chunks``, a table's row count) read them here instead of through psycopg, so
they run unchanged on every engine: :func:`open_stored_rows` takes the connection source the
``database_url`` fixture gives (a PostgreSQL URL, or an Oracle pool as the store owner).

The Oracle reader is NOT YET RUN against a database (none is reachable where it was written);
it reads the same columns (``ddl.py`` of the Oracle engine), with the names resolved by the
engine's own rules, the CLOB fetched as a string and the VECTOR as a list of floats. Oracle
stores an empty string as NULL, so an empty ``chunk_text`` reads back as ``None`` there: a real
difference between the engines, which a test that asserts ``""`` will show.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

import oracledb
import psycopg
from oracleagentmemory.core import OracleDBMemoryStore
from oracleagentmemory.engines.oracle.ddl import registry_key
from oracleagentmemory.engines.oracle.names import OracleObjects, quote
from oracleagentmemory.engines.postgres import names as postgres_names
from psycopg import sql


@dataclass(frozen=True)
class StoredChunk:
    """One row of ``<store>_record_chunks``."""

    record_type: str
    record_id: str
    chunk_no: int
    text: str | None
    vector: list[float] | None
    dims: int | None


class StoredRows(Protocol):
    """Reads what a store wrote (one engine's implementation)."""

    def chunks(self, store: OracleDBMemoryStore,
               record_id: str | None = None) -> list[StoredChunk]:
        """Retrieval rows of ``store`` (of one record when ``record_id`` is given), ordered
        by record id and chunk number."""

    def count(self, store: OracleDBMemoryStore, table: str,
              where: Mapping[str, object] | None = None) -> int:
        """How many rows managed table ``table`` of ``store`` holds (expired rows included),
        of those whose columns equal ``where``'s values when it is given."""

    def timestamps(self, store: OracleDBMemoryStore, table: str, record_id: str,
                   columns: Sequence[str]) -> tuple[datetime | None, ...] | None:
        """The timestamp ``columns`` of row ``id = record_id`` of managed table ``table``, as
        time-zone-aware datetimes (``None`` when the row does not exist)."""

    def registry(self, store: OracleDBMemoryStore, columns: Sequence[str]) -> tuple[Any, ...]:
        """``columns`` of the store's row in the schema's store registry."""


class PostgresStoredRows:
    """The PostgreSQL reader: one autocommit psycopg connection."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    @staticmethod
    def _table(store: OracleDBMemoryStore, name: str) -> sql.Composable:
        table = store._names.table(name)
        if store._names.schema:
            return sql.Identifier(store._names.schema, table)
        return sql.Identifier(table)

    def chunks(self, store: OracleDBMemoryStore,
               record_id: str | None = None) -> list[StoredChunk]:
        vector = sql.SQL("embedding::real[], vector_dims(embedding)") if store.vector_dim else (
            sql.SQL("NULL::real[], NULL::integer"))
        query = sql.SQL(
            "SELECT record_type, record_id, chunk_no, chunk_text, {} FROM {} "
            "WHERE %(id)s::text IS NULL OR record_id = %(id)s ORDER BY record_id, chunk_no"
        ).format(vector, self._table(store, "record_chunks"))
        rows = self.conn.execute(query, {"id": record_id}).fetchall()
        return [StoredChunk(*row) for row in rows]

    def count(self, store: OracleDBMemoryStore, table: str,
              where: Mapping[str, object] | None = None) -> int:
        columns = list(where or {})
        condition = sql.SQL(" AND ").join(
            sql.SQL("{} = %s").format(sql.Identifier(c)) for c in columns) if columns else (
            sql.SQL("true"))
        row = self.conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE {}").format(self._table(store, table),
                                                                condition),
            [(where or {})[c] for c in columns]).fetchone()
        assert row is not None
        return int(row[0])

    def timestamps(self, store: OracleDBMemoryStore, table: str, record_id: str,
                   columns: Sequence[str]) -> tuple[datetime | None, ...] | None:
        row = self.conn.execute(
            sql.SQL("SELECT {} FROM {} WHERE id = %s").format(
                sql.SQL(", ").join(sql.Identifier(c) for c in columns),
                self._table(store, table)),
            [record_id]).fetchone()
        return None if row is None else tuple(row)

    def registry(self, store: OracleDBMemoryStore, columns: Sequence[str]) -> tuple[Any, ...]:
        row = self.conn.execute(
            sql.SQL("SELECT {} FROM {} WHERE store_key = %s").format(
                sql.SQL(", ").join(sql.Identifier(c) for c in columns),
                postgres_names.registry(store._names)),
            [store._names.store_key]).fetchone()
        assert row is not None, "the store has no registry row"
        return tuple(row)


def oracle_chunks_sql(objects: OracleObjects, with_vector: bool) -> str:
    """The retrieval rows of a store, of one record when ``:id`` is not NULL."""
    vector = "embedding" if with_vector else "NULL"
    return (f"SELECT record_type, record_id, chunk_no, chunk_text, {vector} FROM "
            f"{objects.table('record_chunks')} WHERE :id IS NULL OR record_id = :id "
            "ORDER BY record_id, chunk_no")


def oracle_count_sql(objects: OracleObjects, table: str, columns: Sequence[str]) -> str:
    """Rows of managed table ``table`` whose ``columns`` equal binds ``:v0``, ``:v1``..."""
    condition = " AND ".join(f"{quote(c)} = :v{n}" for n, c in enumerate(columns)) or "1 = 1"
    return f"SELECT COUNT(*) FROM {objects.table(table)} WHERE {condition}"


def oracle_timestamps_sql(objects: OracleObjects, table: str, columns: Sequence[str]) -> str:
    """Timestamp ``columns`` of row ``:id``, in UTC (python-oracledb fetches TIMESTAMP WITH
    TIME ZONE without its zone)."""
    selected = ", ".join(f"SYS_EXTRACT_UTC({quote(c)})" for c in columns)
    return f"SELECT {selected} FROM {objects.table(table)} WHERE id = :id"


def oracle_registry_sql(objects: OracleObjects, columns: Sequence[str]) -> str:
    """``columns`` of the registry row ``:key``."""
    return (f"SELECT {', '.join(quote(c) for c in columns)} FROM {objects.registry()} "
            "WHERE store_key = :key")


class OracleStoredRows:
    """The Oracle reader: one connection from the owner's pool (NOT YET RUN, see above)."""

    def __init__(self, conn: oracledb.Connection) -> None:
        self.conn = conn

    def _objects(self, store: OracleDBMemoryStore) -> OracleObjects:
        """The store's names, owned by its schema or else by the session user (the owner)."""
        with self.conn.cursor() as cur:
            cur.execute("SELECT USER FROM dual")
            row = cur.fetchone()
        assert row is not None
        return OracleObjects.of(store._names, str(row[0]))

    def chunks(self, store: OracleDBMemoryStore,
               record_id: str | None = None) -> list[StoredChunk]:
        statement = oracle_chunks_sql(self._objects(store), bool(store.vector_dim))
        with self.conn.cursor() as cur:
            cur.execute(statement, {"id": record_id}, fetch_lobs=False)
            rows = cur.fetchall()
        chunks = []
        for record_type, rid, chunk_no, text, embedding in rows:
            values = None if embedding is None else [float(x) for x in embedding]
            chunks.append(StoredChunk(record_type, rid, int(chunk_no), text, values,
                                      None if values is None else len(values)))
        return chunks

    def count(self, store: OracleDBMemoryStore, table: str,
              where: Mapping[str, object] | None = None) -> int:
        values = list((where or {}).values())
        statement = oracle_count_sql(self._objects(store), table, list(where or {}))
        with self.conn.cursor() as cur:
            cur.execute(statement, {f"v{n}": value for n, value in enumerate(values)})
            row = cur.fetchone()
        assert row is not None
        return int(row[0])

    def timestamps(self, store: OracleDBMemoryStore, table: str, record_id: str,
                   columns: Sequence[str]) -> tuple[datetime | None, ...] | None:
        statement = oracle_timestamps_sql(self._objects(store), table, columns)
        with self.conn.cursor() as cur:
            cur.execute(statement, {"id": record_id})
            row = cur.fetchone()
        if row is None:
            return None
        return tuple(None if v is None else v.replace(tzinfo=timezone.utc) for v in row)

    def registry(self, store: OracleDBMemoryStore, columns: Sequence[str]) -> tuple[Any, ...]:
        objects = self._objects(store)
        with self.conn.cursor() as cur:
            cur.execute(oracle_registry_sql(objects, columns), {"key": registry_key(objects)})
            row = cur.fetchone()
        assert row is not None, "the store has no registry row"
        return tuple(row)


@contextmanager
def open_stored_rows(source: object) -> Iterator[StoredRows]:
    """A reader on ``source``: a PostgreSQL URL, or an ``oracledb`` pool."""
    if isinstance(source, str):
        with psycopg.connect(source, autocommit=True) as conn:
            yield PostgresStoredRows(conn)
        return
    if not isinstance(source, oracledb.ConnectionPool):
        raise TypeError(f"no stored-row reader for {type(source).__name__}")
    with source.acquire() as conn:
        yield OracleStoredRows(conn)
