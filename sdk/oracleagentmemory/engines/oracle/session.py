"""One transaction on one store on Oracle: thin methods over the statement builders.

Each method runs the builders' statements through
:class:`~oracleagentmemory.engines.oracle.runner.StatementRunner`, in the order each builder
module's docstring gives (inserts, reads, updates, deletes, relations, search, schema). Deep
Data Security skips rows an end user may not change, silently: updates and deletes report the
rows really changed (``rowcount`` and ``RETURNING``), which is what the spec's return values
carry.

Not run against a live database (none is reachable where it was written); every statement is
pinned by a golden file, and this sequence is type-checked against python-oracledb.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import oracledb

from oracleagentmemory.engines.interfaces import (
    UNSET,
    CandidateSource,
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
from oracleagentmemory.engines.oracle import (
    deletes,
    hybrid,
    inserts,
    purge_job,
    reads,
    relations,
    schema_ops,
    schema_sql,
    search,
    updates,
)
from oracleagentmemory.engines.oracle.binds import vector_bind
from oracleagentmemory.engines.oracle.bindset import BindSet
from oracleagentmemory.engines.oracle.driver_errors import error_info
from oracleagentmemory.engines.oracle.filters import render_filter
from oracleagentmemory.engines.oracle.names import OracleObjects
from oracleagentmemory.engines.oracle.record_sql import decode_row, select_columns
from oracleagentmemory.engines.oracle.runner import DEFAULT_BATCH_SIZE, StatementRunner
from oracleagentmemory.engines.oracle.statement import Statement

if TYPE_CHECKING:
    from oracleagentmemory.engines.oracle.engine import OracleEngine


class OracleSession(EngineSession):
    """One connection inside one open transaction, on the store ``objects``."""

    def __init__(self, conn: oracledb.Connection, engine: OracleEngine, objects: OracleObjects,
                 end_user: str | None = None) -> None:
        self.conn = conn
        self.engine = engine
        self.o = objects
        self.names = objects.names
        self.end_user = end_user
        """The end user the database verified for this transaction (``None``: none)."""
        self.run = StatementRunner(conn)
        self._locked = False

    # --- schema lifecycle ---------------------------------------------------------------
    def lock_store(self) -> None:
        schema_ops.run(self.conn, schema_sql.lock_store(self.o))
        self._locked = True

    def release_store_lock(self) -> None:
        """Release the store lock taken by :meth:`lock_store` (it survives DDL's commits)."""
        if self._locked:
            self._locked = False
            schema_ops.run(self.conn, schema_sql.unlock_store(self.o))

    def read_schema_state(self) -> SchemaState:
        return schema_ops.read_schema_state(self.conn, self.o)

    def bypasses_row_security(self) -> bool:
        return schema_ops.bypasses_row_security(self.conn)

    def apply_schema_version(self, version: int, options: SchemaOptions) -> None:
        schema_ops.apply_schema_version(self.conn, self.o, version, options)
        self._ensure_purge_job()

    def _ensure_purge_job(self) -> None:
        """Create the expired-record purge job, or warn and continue (the spec's rule) when
        this user may not: expired rows stay hidden, but are not purged until it exists."""
        probe = purge_job.privilege_probe()
        rows = self.run.dicts(probe)
        user = str(rows[0]["session_user"]) if rows else self.o.owner
        held = {str(r["privilege"]) for r in rows if r.get("privilege")}
        warning = purge_job.missing_privilege_warning(self.o, user, held)
        if warning is not None:
            warnings.warn(warning, RuntimeWarning, stacklevel=4)
            return
        try:
            self.run.execute(purge_job.create_job_block(self.o))
        except oracledb.DatabaseError as exc:  # the privilege went between probe and creation
            if error_info(exc).code not in purge_job.JOB_PRIVILEGE_ERRORS:
                raise
            warnings.warn(purge_job.missing_privilege_warning(self.o, user, set())
                          or f"the purge job was not created: {error_info(exc).first_line}",
                          RuntimeWarning, stacklevel=4)

    def add_embedding_storage(self, dim: int) -> None:
        schema_ops.add_embedding_storage(self.conn, self.o, dim)

    def write_registry(self, row: RegistryRow) -> None:
        schema_ops.write_registry(self.conn, self.o, row)

    def drop_store(self) -> None:
        self.run.execute(purge_job.drop_job_block(self.o))
        schema_ops.drop_store(self.conn, self.o)

    # --- records ------------------------------------------------------------------------
    def insert_rows(self, rows: Sequence[RowPlan], batch_size: int) -> None:
        planned = inserts.with_attachments(rows)
        threads = inserts.message_threads(planned)
        try:
            if not threads:
                self._insert_batches(planned, batch_size)
                return
            self._insert_messages(planned, threads, batch_size)
        except oracledb.DatabaseError as exc:
            duplicate = inserts.duplicate_record_error(exc)
            if duplicate is not None:
                raise duplicate from exc
            raise

    def _insert_batches(self, rows: Sequence[RowPlan], batch_size: int) -> None:
        for batch in inserts.insert_batches(self.o, rows):
            self.run.many(batch, batch_size=batch_size)

    def _insert_messages(self, rows: Sequence[RowPlan],
                         threads: dict[tuple[str | None, str | None], list[RowPlan]],
                         batch_size: int) -> None:
        """Number each thread's messages, then insert; a concurrent writer that took the same
        numbers (ORA-00001 on the sequence key) makes the attempt start again."""
        for attempt in range(inserts.SEQ_RETRIES):
            self.run.execute(Statement(inserts.SAVEPOINT_SQL))
            try:
                for (thread_id, owner), messages in threads.items():
                    reserved = self.run.execute(inserts.next_seq_statement(
                        self.o, thread_id, owner, len(messages)))
                    first = inserts.first_seq_no(reserved.out.get("next_seq_no") or [],
                                                 len(messages))
                    if first is None:
                        stored = self.run.scalar(inserts.stored_seq_statement(
                            self.o, thread_id, owner))
                        first = None if stored is None else int(stored)
                    inserts.assign_seq_nos(messages, first)
                self._insert_batches(rows, batch_size)
                return
            except oracledb.DatabaseError as exc:
                if not inserts.is_seq_conflict(self.o, exc) \
                        or attempt == inserts.SEQ_RETRIES - 1:
                    raise
                self.run.execute(Statement(inserts.ROLLBACK_TO_SAVEPOINT_SQL))

    def _metadata_filter(self, metadata_filter: Any) -> Statement | None:
        if metadata_filter is UNSET or metadata_filter is None:
            return None
        binds = BindSet()
        return binds.statement(render_filter(metadata_filter, "metadata", binds))

    def select_records(self, query: RecordQuery) -> list[dict[str, Any]]:
        read = reads.select_records(self.o, query, self._metadata_filter(query.metadata_filter))
        return read.decode(self.run.rows(read.statement))

    def select_thread_messages(self, query: MessageQuery) -> list[dict[str, Any]]:
        read = reads.select_thread_messages(self.o, query)
        return read.decode(self.run.rows(read.statement))

    def select_message_images(self, messages: Sequence[tuple[str, str | None]]
                              ) -> dict[tuple[str, str], bytes]:
        statement = reads.select_message_images(self.o, messages)
        if statement is None:
            return {}
        return reads.decode_message_images(self.run.rows(statement))

    def count_chunks(self, record_type: str, record_id: str) -> int:
        value = self.run.scalar(reads.count_chunks(self.o, record_type, record_id))
        return int(value or 0)

    def record_exists(self, record_type: str, record_id: str) -> bool:
        return bool(self.run.rows(reads.record_exists(self.o, record_type, record_id)))

    def select_event_ts(self, record_type: str, record_id: str) -> datetime | None:
        cursor = self.run.execute(reads.select_event_ts(self.o, record_type, record_id)).cursor
        return reads.decode_event_ts(cursor.fetchone())

    def update_record(self, plan: UpdatePlan) -> int:
        changed = self.run.execute(updates.update_statement(self.o, plan))
        if changed.rowcount == 0:
            return 0
        scope = updates.returned_scope(changed.out)
        if plan.record_type == "message" and plan.attachments is not UNSET:
            self._delete_where("document", deletes.message_images_where(
                [(plan.record_id, scope[1])]))
            self._insert_batches(updates.scoped_attachments(plan, scope), DEFAULT_BATCH_SIZE)
        if updates.syncs_message_images(plan):
            self.run.execute(updates.sync_message_images(self.o, plan.record_id, scope[1]))
        owner = updates.chunk_owner(plan, scope)
        if plan.chunks is not UNSET:
            self.run.execute(deletes.delete_record_chunks(self.o, plan.record_type,
                                                          plan.record_id, owner))
            batch = inserts.chunk_batch(self.o, [updates.chunk_plan(plan, scope)])
            if batch is not None:
                self.run.many(batch, batch_size=DEFAULT_BATCH_SIZE)
        elif plan.chunk_vectors is not UNSET:
            ids = [row[0] for row in self.run.rows(updates.chunk_ids(self.o, plan, scope))]
            vectors = updates.vector_batch(self.o, ids, plan.chunk_vectors)
            if vectors is not None:
                self.run.many(vectors, batch_size=DEFAULT_BATCH_SIZE)
        return 1

    def _delete_where(self, logical: str, where: deletes.Where) -> list[tuple[str, str | None]]:
        """Delete ``logical`` rows matching ``where`` with what goes with them; the keys of the
        rows really deleted (row security skips the others silently)."""
        targets: list[str] = []
        if logical == "memory":
            lookup = relations.lifecycle_targets_from(self.o, where.sql, where.binds)
            lookup = dataclasses.replace(lookup, input_sizes={**lookup.input_sizes,
                                                              **where.input_sizes})
            targets = [r["target_id"] for r in self.run.dicts(lookup)]
        deleted = self.run.execute(deletes.delete_rows(self.o, logical, where)).out
        keys = list(zip(deleted.get("deleted_id") or [], deleted.get("deleted_owner") or [],
                        strict=True))
        if not keys:
            return keys
        chunks = deletes.delete_chunks(self.o, deletes.chunk_types(logical), keys)
        if chunks is not None:
            self.run.execute(chunks)
        if logical == "memory":
            links = relations.delete_links_of(self.o, keys)
            if links is not None:
                self.run.execute(links)
            status = relations.recompute_status(self.o, targets)
            if status is not None:
                self.run.execute(status)
        elif logical == "message":
            self._delete_where("document", deletes.message_images_where(keys))
        return keys

    def delete_record(self, record_type: str, record_id: str) -> int:
        if record_type == "thread":
            return self.delete_thread(record_id)
        logical, where = deletes.record_where(record_type, record_id)
        return len(self._delete_where(logical, where))

    def delete_actor_scope(self, actor_column: str, actor_id: str) -> None:
        for row in self.run.rows(deletes.threads_of_actor(self.o, actor_column, actor_id)):
            self.delete_thread(str(row[0]))
        for logical, where in deletes.actor_cascade(actor_column, actor_id):
            self._delete_where(logical, where)

    def delete_thread(self, thread_id: str) -> int:
        for logical, where in deletes.thread_cascade(thread_id):
            self._delete_where(logical, where)
        return len(self._delete_where("thread", deletes.thread_row_where(thread_id)))

    def purge_expired(self) -> int:
        purged = self.run.execute(purge_job.purge_statement(self.o))
        return sum(purge_job.purged_counts(purged.out).values())

    # --- search -------------------------------------------------------------------------
    def candidate_source(self, plan: SearchPlan) -> CandidateSource:
        if plan.mode == "hybrid":  # the store's hybrid vector index (DBMS_HYBRID_VECTOR.SEARCH)
            return hybrid.HybridCandidates(self.run.rows, self.o, plan)
        vector = vector_bind(plan.vector, len(plan.vector)) if plan.vector is not None else None
        return search.OracleCandidates(self.run.rows, self.o, plan, vector,
                                       self.engine.scan_choices, self.end_user)

    def select_records_by_keys(self, keys: Sequence[tuple[str, str]], last: bool = False
                               ) -> dict[tuple[str, str], dict[str, Any]]:
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for logical, statement in search.select_records_by_keys_statements(self.o, keys):
            columns = select_columns(logical)
            for values in self.run.rows(statement):
                row = decode_row(columns, values)
                found[(row["record_type"], row["id"])] = row  # the owner's row comes last
        wanted = set(keys)
        return {key: row for key, row in found.items() if key in wanted}

    def select_linked_memories(self, ids: Sequence[str],
                               plan: SearchPlan) -> list[dict[str, Any]]:
        statement = search.select_linked_memories_statement(self.o, ids, plan)
        if statement is None:
            return []
        columns = select_columns("memory")
        return [decode_row(columns, values) for values in self.run.rows(statement)]

    # --- relations ----------------------------------------------------------------------
    def memory_types(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str | None]]]:
        if not ids:
            return {}
        return relations.group_memory_types(self.run.dicts(relations.memory_types(self.o, ids)))

    def insert_relations(self, rows: Sequence[RelationRow]) -> None:
        if not rows:
            return
        cursor = self.run.many(relations.insert_relations(self.o, rows), batcherrors=True)
        errors = cursor.getbatcherrors()
        if errors:
            duplicate = relations.duplicate_relation_error(self.o, rows, errors)
            if duplicate is not None:
                raise duplicate
            raise oracledb.DatabaseError(errors[0])

    def select_relations(self, query: RelationQuery) -> list[dict[str, Any]]:
        metadata: tuple[str, dict[str, Any]] | None = None
        sizes: dict[str, Any] = {}
        if query.metadata_filter is None:
            metadata = ("metadata IS NULL", {})
        elif query.metadata_filter is not UNSET:
            rendered = self._metadata_filter(query.metadata_filter)
            assert rendered is not None
            metadata = (rendered.sql, dict(rendered.binds))
            sizes = dict(rendered.input_sizes)
        statement = relations.select_relations(self.o, query, metadata, sizes)
        return [relations.relation_row(r) for r in self.run.dicts(statement)]

    def update_relation(self, change: RelationChange) -> bool:
        return self.run.execute(relations.update_relation(self.o, change)).rowcount > 0

    def delete_relations(self, relation_ids: Sequence[str]) -> list[tuple[str, str]]:
        if not relation_ids:
            return []
        out = self.run.execute(relations.delete_relations(self.o, relation_ids)).out
        return relations.deleted_relations(out.get("target_ids"), out.get("relation_types"))

    def recompute_status(self, memory_ids: Sequence[str]) -> None:
        statement = relations.recompute_status(self.o, memory_ids)
        if statement is not None:
            self.run.execute(statement)

    def links_touching(self, node_ids: Sequence[str]) -> list[dict[str, Any]]:
        if not node_ids:
            return []
        return [relations.relation_row(r)
                for r in self.run.dicts(relations.links_touching(self.o, node_ids))]

    def links_within_hops(self, node_ids: Sequence[str], hops: int, limit: int
                          ) -> list[dict[str, Any]] | None:
        if not node_ids or hops < 1:
            return []
        if hops > relations.MAX_RECURSIVE_HOPS:
            return None  # deeper than the recursive walk goes: the core walks hop by hop
        rows = self.run.dicts(relations.links_within_hops(self.o, node_ids, hops, limit + 1))
        if len(rows) > limit:
            return None
        return [relations.relation_row(r) for r in rows]

