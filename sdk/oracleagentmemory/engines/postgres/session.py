"""One transaction on one store on PostgreSQL: thin methods over the modules that hold the SQL.

Schema lifecycle lives in :mod:`.schema_ops`, inserts in :mod:`.inserts`, reads in
:mod:`.reads`, updates in :mod:`.updates`, deletes in :mod:`.deletes`, search in :mod:`.search`
and relations in :mod:`.relations`; every one takes ``(conn, names, ...)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import (
    EngineSession,
    MessageQuery,
    RecordQuery,
    RegistryRow,
    RelationChange,
    RelationQuery,
    RelationRow,
    RowPlan,
    SchemaOptions,
    SchemaState,
    SearchPlan,
    UpdatePlan,
)
from oracleagentmemory.engines.postgres import (
    deletes,
    inserts,
    reads,
    relations,
    schema_ops,
    search,
    updates,
)
from oracleagentmemory.engines.postgres.context_sql import ContextTransaction
from oracleagentmemory.engines.postgres.inserts import INSERT_BATCH_SIZE

if TYPE_CHECKING:
    from oracleagentmemory.engines.postgres.engine import PostgresEngine


class PostgresSession(EngineSession):
    """One connection inside one open transaction, on the store ``names``."""

    def __init__(self, conn: psycopg.Connection[Any], engine: PostgresEngine,
                 names: StoreNames, security: Any | None = None,
                 context: ContextTransaction | None = None) -> None:
        self._conn = conn
        self.engine = engine
        self.names = names
        self.security = security
        """The end-user context applied to this transaction, if any."""
        self._context = context

    @property
    def conn(self) -> psycopg.Connection[Any]:
        """The connection, inside a transaction of the session's end-user context (opened
        now if it is not open yet)."""
        if self._context is not None:
            self._context.begin()
        return self._conn

    # --- schema lifecycle ---------------------------------------------------------------
    def lock_store(self) -> None:
        schema_ops.lock_store(self.conn, self.names)

    def read_schema_state(self) -> SchemaState:
        return schema_ops.read_schema_state(self.conn, self.names)

    def bypasses_row_security(self) -> bool:
        return schema_ops.bypasses_row_security(self.conn, self.names)

    def apply_schema_version(self, version: int, options: SchemaOptions) -> None:
        schema_ops.apply_schema_version(self.conn, self.names, version, options,
                                        self.engine.ensure_vector_adapters)

    def add_embedding_storage(self, dim: int) -> None:
        schema_ops.add_embedding_storage(self.conn, self.names, dim,
                                         self.engine.ensure_vector_adapters)

    def write_registry(self, row: RegistryRow) -> None:
        schema_ops.write_registry(self.conn, self.names, row)

    def drop_store(self) -> None:
        schema_ops.drop_store(self.conn, self.names)

    # --- records ------------------------------------------------------------------------
    def insert_rows(self, rows: Sequence[RowPlan], batch_size: int = INSERT_BATCH_SIZE) -> None:
        inserts.insert_rows(self.conn, self.names, rows, batch_size)

    def select_records(self, query: RecordQuery) -> list[dict[str, Any]]:
        return reads.oldest_first(self._read([reads.records_statement(self.names, query)])[0])

    def select_thread_messages(self, query: MessageQuery) -> list[dict[str, Any]]:
        return reads.oldest_first(
            self._read([reads.thread_messages_statement(self.names, query)])[0])

    def select_message_images(self, messages: Sequence[tuple[str, str | None]]
                              ) -> dict[tuple[str, str], bytes]:
        return reads.select_message_images(self.conn, self.names, messages)

    def count_chunks(self, record_type: str, record_id: str) -> int:
        return reads.count_chunks(self.conn, self.names, record_type, record_id)

    def record_exists(self, record_type: str, record_id: str) -> bool:
        return reads.record_exists(self.conn, self.names, record_type, record_id)

    def select_event_ts(self, record_type: str, record_id: str) -> datetime | None:
        return reads.select_event_ts(self.conn, self.names, record_type, record_id)

    def update_record(self, plan: UpdatePlan) -> int:
        return updates.update_record(self.conn, self.names, plan)

    def delete_record(self, record_type: str, record_id: str) -> int:
        return deletes.delete_record(self.conn, self.names, record_type, record_id)

    def delete_actor_scope(self, actor_column: str, actor_id: str) -> None:
        deletes.delete_actor_scope(self.conn, self.names, actor_column, actor_id)

    def delete_thread(self, thread_id: str) -> int:
        return deletes.delete_thread(self.conn, self.names, thread_id)

    def purge_expired(self) -> int:
        return deletes.purge_expired(self.conn, self.names)

    # --- search -------------------------------------------------------------------------
    def candidate_source(self, plan: SearchPlan) -> search.PostgresCandidates:
        context = self._context
        # Round trips fewer only where the engine may name statements: a pool it built.
        flight = context.read_open if context is not None and context.seal is not None else None
        return search.PostgresCandidates(lambda: self.conn, self.names, plan,
                                         self.engine.scan_choices,
                                         search.viewer_key(self.security), flight)

    def select_records_by_keys(self, keys: Sequence[tuple[str, str]], last: bool = False
                               ) -> dict[tuple[str, str], dict[str, Any]]:
        statements = reads.records_by_keys_statements(self.names, keys)
        context = self._context
        if (last and statements and context is not None and context.open
                and context.seal is not None):
            # A search's record read, with COMMIT and the end check: one round trip fewer.
            return reads.records_by_keys(context.read_last(statements))
        return reads.records_by_keys(self._read(statements))

    def _read(self, statements: Sequence[reads.Statement]) -> list[list[dict[str, Any]]]:
        """Rows of each read-only statement: in one round trip with the whole transaction of
        the end-user context when they are the session's first work
        (:meth:`ContextTransaction.read_first`), else in the open transaction."""
        if statements and self._context is not None:
            rows = self._context.read_first(statements)
            if rows is not None:
                return rows
        return reads.run(self.conn, statements)

    def select_linked_memories(self, ids: Sequence[str],
                               plan: SearchPlan) -> list[dict[str, Any]]:
        return reads.select_linked_memories(self.conn, self.names, ids, plan)

    # --- relations ----------------------------------------------------------------------
    def memory_types(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str | None]]]:
        return relations.memory_types(self.conn, self.names, ids)

    def insert_relations(self, rows: Sequence[RelationRow]) -> None:
        relations.insert_relations(self.conn, self.names, rows)

    def select_relations(self, query: RelationQuery) -> list[dict[str, Any]]:
        return relations.select_relations(self.conn, self.names, query)

    def update_relation(self, change: RelationChange) -> bool:
        return relations.update_relation(self.conn, self.names, change)

    def delete_relations(self, relation_ids: Sequence[str]) -> list[tuple[str, str]]:
        return relations.delete_relations(self.conn, self.names, relation_ids)

    def recompute_status(self, memory_ids: Sequence[str]) -> None:
        relations.recompute_status(self.conn, self.names, memory_ids)

    def links_touching(self, node_ids: Sequence[str]) -> list[dict[str, Any]]:
        return relations.links_touching(self.conn, self.names, node_ids)

    def links_within_hops(self, node_ids: Sequence[str], hops: int, limit: int
                          ) -> list[dict[str, Any]] | None:
        return relations.links_within_hops(self.conn, self.names, node_ids, hops, limit)
