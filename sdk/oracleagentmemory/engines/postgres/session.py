"""SQL for one transaction on PostgreSQL: schema lifecycle and record reads and writes."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE, StoreNames
from oracleagentmemory.engines.interfaces import (
    UNSET,
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
    message_body,
)
from oracleagentmemory.engines.layout import (
    EXPIRING_TABLES,
    MEMORY_TYPES,
    TABLE_OF_TYPE,
    THREAD_CASCADE,
)
from oracleagentmemory.engines.postgres import ddl, inserts, relations, search
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.filters import (
    metadata_predicates,
    render_filter,
    scope_predicates,
)
from oracleagentmemory.engines.postgres.inserts import INSERT_BATCH_SIZE
from oracleagentmemory.errors import (
    InvalidArgumentError,
    MemoryStoreSchemaError,
)

if TYPE_CHECKING:
    from oracleagentmemory.engines.postgres.engine import PostgresEngine

_log = logging.getLogger(__name__)

_TABLE_OF_TYPE = TABLE_OF_TYPE

# SELECT lists per table; every list yields the same neutral keys.
_SELECT = {
    "memory": "id, record_type, thread_id, user_id, agent_id, content, NULL::jsonb AS "
    "content_parts, metadata, coalesce(event_ts, created_at) AS ts, event_ts, status, "
    "NULL::text AS role, NULL::bigint AS seq_no",
    "message": "id, 'message' AS record_type, thread_id, user_id, agent_id, content, "
    "content_parts, metadata, coalesce(event_ts, created_at) AS ts, event_ts, status, role, "
    "seq_no",
    "thread_summary": "id, 'thread_summary' AS record_type, thread_id, user_id, agent_id, "
    "content, NULL::jsonb AS content_parts, metadata, coalesce(event_ts, created_at) AS ts, "
    "event_ts, status, NULL::text AS role, covered_through_seq_no AS seq_no",
    "actor_profile": "actor_id AS id, actor_type || '_profile' AS record_type, NULL::text AS "
    "thread_id, NULL::text AS user_id, NULL::text AS agent_id, content, NULL::jsonb AS "
    "content_parts, metadata, coalesce(event_ts, created_at) AS ts, event_ts, 'valid' AS "
    "status, NULL::text AS role, NULL::bigint AS seq_no",
    "thread": "id, 'thread' AS record_type, id AS thread_id, user_id, agent_id, NULL::text AS "
    "content, NULL::jsonb AS content_parts, metadata, coalesce(event_ts, created_at) AS ts, "
    "event_ts, 'valid' AS status, NULL::text AS role, NULL::bigint AS seq_no, runtime_config, "
    "runtime_state",
}


def _jsonb(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


class PostgresSession(EngineSession):
    """One connection inside one open transaction."""

    def __init__(self, conn: psycopg.Connection[Any], engine: PostgresEngine,
                 names: StoreNames, security: Any | None = None) -> None:
        self.conn = conn
        self.engine = engine
        self.names = names
        self.security = security
        """The end-user context applied to this transaction, if any."""
        self._now: datetime | None = None

    # --- helpers ------------------------------------------------------------------------
    def now(self) -> datetime:
        """Transaction start time (the value of ``now()`` and of default ``created_at``)."""
        if self._now is None:
            row = self.conn.execute("SELECT now()").fetchone()
            assert row is not None
            self._now = row[0]
        return self._now

    def _key(self, logical: str, *, type_filter: bool, record_type: str,
             record_id: str) -> tuple[sql.Composable, list[Any]]:
        """WHERE clause that selects one record of ``record_type``."""
        if logical == "actor_profile":
            return sql.SQL("actor_type = %s AND actor_id = %s"), [
                record_type.removesuffix("_profile"), record_id]
        if logical == "memory" and type_filter:
            return sql.SQL("record_type = %s AND id = %s"), [record_type, record_id]
        return sql.SQL("id = %s"), [record_id]

    # --- schema lifecycle ---------------------------------------------------------------
    def lock_store(self) -> None:
        key = f"oam-store:{self.names.schema or ''}:{self.names.store_key}"
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])

    def _schema_name(self) -> str:
        if self.names.schema is not None:
            return self.names.schema
        row = self.conn.execute("SELECT current_schema()").fetchone()
        if row is None or row[0] is None:
            raise RuntimeError("the connection has no current schema (check search_path)")
        return str(row[0])

    def read_schema_state(self) -> SchemaState:
        schema = self._schema_name()
        wanted = {self.names.table(t): t for t in MANAGED_TABLES}
        rows = self.conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = ANY(%s) AND c.relkind IN ('r', 'p', 'v')",
            [schema, list(wanted) + [REGISTRY_TABLE]],
        ).fetchall()
        present = {r[0] for r in rows}
        existing = frozenset(wanted[name] for name in present if name in wanted)
        registry: RegistryRow | None = None
        registry_exists = REGISTRY_TABLE in present
        if registry_exists:
            row = self.conn.execute(
                sql.SQL(
                    "SELECT schema_version, search_mode, vector_dim, default_ttl_days, "
                    "max_ttl_days, search_index_sync FROM {} WHERE store_key = %s"
                ).format(q.registry(self.names)),
                [self.names.store_key],
            ).fetchone()
            if row is not None:
                registry = RegistryRow(*row)
        embedding_dim = None
        if "record_chunks" in existing:
            dim_row = self.conn.execute(
                "SELECT a.atttypmod FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
                "AND c.relname = %s AND a.attname = 'embedding' AND NOT a.attisdropped",
                [schema, self.names.table("record_chunks")],
            ).fetchone()
            if dim_row is not None:
                embedding_dim = int(dim_row[0])
        return SchemaState(
            registry=registry,
            registry_table_exists=registry_exists,
            existing_tables=existing,
            embedding_dim=embedding_dim,
        )

    def bypasses_row_security(self) -> bool:
        row = self.conn.execute(
            "SELECT r.rolsuper OR r.rolbypassrls OR EXISTS (SELECT 1 FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = "
            "coalesce(%s, current_schema()) AND c.relname = %s "
            "AND pg_has_role(current_user, c.relowner, 'MEMBER')) "
            "FROM pg_roles r WHERE r.rolname = current_user",
            [self.names.schema, self.names.table("memory")],
        ).fetchone()
        return bool(row and row[0])

    def apply_schema_version(self, version: int, options: SchemaOptions) -> None:
        if version == 1 and options.vector_dim is not None:
            self._ensure_vector_extension()
        ddl.SCHEMA_STEPS[version](self.conn, self.names, options)

    def add_embedding_storage(self, dim: int) -> None:
        self._ensure_vector_extension()
        ddl.add_embedding_column(self.conn, self.names, dim)

    def _ensure_vector_extension(self) -> None:
        row = self.conn.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone()
        if row and row[0]:
            return
        try:
            with self.conn.transaction():
                self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            raise MemoryStoreSchemaError(
                "vector storage needs the pgvector extension, which is not installed in this "
                "database and could not be created by this user; run CREATE EXTENSION vector "
                f"as a superuser ({exc.__class__.__name__}: {exc})"
            ) from exc
        self.engine.ensure_vector_adapters(self.conn)

    def write_registry(self, row: RegistryRow) -> None:
        self.conn.execute(ddl.REGISTRY_DDL.format(q.registry(self.names)))
        self.conn.execute(
            sql.SQL(
                "INSERT INTO {} (store_key, schema_version, search_mode, vector_dim, "
                "default_ttl_days, max_ttl_days, search_index_sync) VALUES (%s, %s, %s, %s, %s, "
                "%s, %s) ON CONFLICT (store_key) DO UPDATE SET schema_version = "
                "EXCLUDED.schema_version, search_mode = EXCLUDED.search_mode, vector_dim = "
                "EXCLUDED.vector_dim, default_ttl_days = EXCLUDED.default_ttl_days, max_ttl_days = "
                "EXCLUDED.max_ttl_days, search_index_sync = EXCLUDED.search_index_sync, "
                "updated_at = now()"
            ).format(q.registry(self.names)),
            [self.names.store_key, row.schema_version, row.search_mode, row.vector_dim,
             row.default_ttl_days, row.max_ttl_days, row.search_index_sync],
        )

    def drop_store(self) -> None:
        for logical in reversed(MANAGED_TABLES):
            self.conn.execute(
                sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(q.table(self.names, logical))
            )
        if REGISTRY_TABLE in {
            r[0] for r in self.conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relname = %s",
                [self._schema_name(), REGISTRY_TABLE],
            ).fetchall()
        }:
            self.conn.execute(
                sql.SQL("DELETE FROM {} WHERE store_key = %s").format(q.registry(self.names)),
                [self.names.store_key],
            )

    # --- inserts --------------------------------------------------------------------------
    def insert_rows(self, rows: Sequence[RowPlan],
                    batch_size: int = INSERT_BATCH_SIZE) -> None:
        inserts.insert_rows(self.conn, self.names, rows, batch_size)

    # --- reads ----------------------------------------------------------------------------
    def select_records(self, query: RecordQuery) -> list[dict[str, Any]]:
        logical = _TABLE_OF_TYPE[query.record_type]
        where: list[sql.Composable] = []
        params: list[Any] = []
        if logical == "actor_profile":
            where.append(sql.SQL("actor_type = %s"))
            params.append(query.record_type.removesuffix("_profile"))
            if query.record_id is not UNSET:
                where.append(sql.SQL("actor_id = %s"))
                params.append(query.record_id)
        else:
            if logical == "memory":
                where.append(sql.SQL("record_type = %s"))
                params.append(query.record_type)
            if query.record_id is not UNSET:
                where.append(sql.SQL("id = %s"))
                params.append(query.record_id)
            scope, scope_params = scope_predicates(
                (column, getattr(query, column)) for column in ("thread_id", "user_id", "agent_id")
                if not (logical == "thread" and column == "thread_id"))
            where.extend(scope)
            params.extend(scope_params)
        if logical in EXPIRING_TABLES:
            where.append(sql.SQL("(expires_at IS NULL OR expires_at > now())"))
        metadata, metadata_params = metadata_predicates(query.metadata_filter)
        where.extend(metadata)
        params.extend(metadata_params)
        statement = sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY row_seq DESC{}").format(
            sql.SQL(_SELECT[logical]),
            q.table(self.names, logical),
            sql.SQL(" AND ").join(where) if where else sql.SQL("true"),
            sql.SQL(" LIMIT %s") if query.limit is not None else sql.SQL(""),
        )
        if query.limit is not None:
            params.append(query.limit)
        with self.conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(statement, params).fetchall()
        rows.reverse()
        return rows

    def select_thread_messages(
        self, query: MessageQuery
    ) -> list[dict[str, Any]]:
        where = [sql.SQL("thread_id = %s"), sql.SQL("(expires_at IS NULL OR expires_at > now())")]
        params: list[Any] = [query.thread_id]
        if query.range_start_seq_no is not None:
            where.append(sql.SQL("seq_no >= %s"))
            params.append(query.range_start_seq_no)
        if query.range_end_seq_no is not None:
            where.append(sql.SQL("seq_no < %s"))
            params.append(query.range_end_seq_no)
        statement = sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY seq_no DESC{}").format(
            sql.SQL(_SELECT["message"]),
            q.table(self.names, "message"),
            sql.SQL(" AND ").join(where),
            sql.SQL(" LIMIT %s") if query.last_n is not None else sql.SQL(""),
        )
        if query.last_n is not None:
            params.append(query.last_n)
        with self.conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(statement, params).fetchall()
        rows.reverse()
        return rows

    def count_chunks(self, record_type: str, record_id: str) -> int:
        row = self.conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE record_type = %s AND record_id = %s").format(
                q.table(self.names, "record_chunks")), [record_type, record_id],
        ).fetchone()
        return int(row[0]) if row else 0

    def record_exists(self, record_type: str, record_id: str) -> bool:
        logical = _TABLE_OF_TYPE[record_type]
        key, params = self._key(logical, type_filter=True, record_type=record_type,
                                record_id=record_id)
        row = self.conn.execute(
            sql.SQL("SELECT 1 FROM {} WHERE {} FOR UPDATE").format(
                q.table(self.names, logical), key),
            params,
        ).fetchone()
        return row is not None

    def select_event_ts(
        self, record_type: str, record_id: str
    ) -> datetime | None:
        logical = _TABLE_OF_TYPE[record_type]
        key, params = self._key(logical, type_filter=True, record_type=record_type,
                                record_id=record_id)
        row = self.conn.execute(
            sql.SQL("SELECT event_ts FROM {} WHERE {}").format(q.table(self.names, logical), key),
            params,
        ).fetchone()
        return None if row is None else row[0]

    # --- updates and deletes --------------------------------------------------------------
    def update_record(self, plan: UpdatePlan) -> int:
        logical = _TABLE_OF_TYPE[plan.record_type]
        table = q.table(self.names, logical)
        key, key_params = self._key(logical, type_filter=True,
                                    record_type=plan.record_type, record_id=plan.record_id)
        sets: list[sql.Composable] = [sql.SQL("updated_at = now()")]
        params: list[Any] = []
        if plan.content is not UNSET:
            if logical == "thread_summary":
                sets.append(sql.SQL("content = %s"))
                params.append(Jsonb(plan.content))
            elif logical == "message":
                text, parts = message_body(plan.content)
                sets.append(sql.SQL("content = %s, content_parts = %s"))
                params.extend([text, _jsonb(parts)])
            else:
                sets.append(sql.SQL("content = %s"))
                params.append(plan.content)
        if plan.metadata is not UNSET:
            sets.append(sql.SQL("metadata = %s"))
            params.append(_jsonb(plan.metadata))
        if plan.event_ts is not UNSET:
            sets.append(sql.SQL("event_ts = %s"))
            params.append(plan.event_ts)
        if plan.status is not UNSET:
            sets.append(sql.SQL("status = %s"))
            params.append(plan.status)
        # Days of 24 hours, as on insert: calendar days would follow the session time zone.
        if plan.ttl_days is not UNSET:
            if plan.ttl_days is None:
                sets.append(sql.SQL("expires_at = NULL"))
            elif plan.anchor_is_timestamp and plan.event_ts is not UNSET:
                sets.append(
                    sql.SQL("expires_at = %s::timestamptz + make_interval(hours => 24 * %s)"))
                params.extend([plan.event_ts, plan.ttl_days])
            elif plan.anchor_is_timestamp:
                sets.append(sql.SQL("expires_at = event_ts + make_interval(hours => 24 * %s)"))
                params.append(plan.ttl_days)
            else:
                sets.append(sql.SQL("expires_at = created_at + make_interval(hours => 24 * %s)"))
                params.append(plan.ttl_days)
        cur = self.conn.execute(
            sql.SQL("UPDATE {} SET {} WHERE {} RETURNING {}").format(
                table, sql.SQL(", ").join(sets), key,
                sql.SQL("thread_id, user_id, agent_id") if logical != "actor_profile"
                else sql.SQL("NULL, NULL, NULL"),
            ),
            params + key_params,
        )
        scope = cur.fetchone()
        if scope is None:
            return 0
        chunks = q.table(self.names, "record_chunks")
        chunk_owner = plan.record_id if plan.record_type == "user_profile" else scope[1]
        if plan.chunks is not UNSET:
            self._delete_chunks((plan.record_type,), [(plan.record_id, chunk_owner)])
            row = RowPlan(record_type=plan.record_type, record_id=plan.record_id, content=None,
                          thread_id=scope[0], user_id=scope[1], agent_id=scope[2],
                          chunks=plan.chunks)
            inserts.insert_chunks(self.conn, self.names, [row])
        elif plan.chunk_vectors is not UNSET:
            ids = [r[0] for r in self.conn.execute(
                sql.SQL("SELECT id FROM {} WHERE record_type = %s AND record_id = %s "
                        "AND user_id IS NOT DISTINCT FROM %s ORDER BY chunk_no").format(chunks),
                [plan.record_type, plan.record_id, chunk_owner],
            ).fetchall()]
            if len(ids) != len(plan.chunk_vectors):
                raise InvalidArgumentError(
                    "embedding: vector count does not match the stored chunks")
            with self.conn.cursor() as c:
                c.executemany(
                    sql.SQL("UPDATE {} SET embedding = %s WHERE id = %s").format(chunks),
                    list(zip(plan.chunk_vectors, ids, strict=True)),
                )
        return 1

    def _delete_chunks(self, record_types: Sequence[str],
                       keys: Sequence[tuple[str, str | None]]) -> None:
        """Delete the retrieval rows of the records ``(id, owner)`` (ids are unique per owner)."""
        if keys:
            self.conn.execute(
                sql.SQL("DELETE FROM {} c USING unnest(%s::text[], %s::text[]) AS d(id, owner) "
                        "WHERE c.record_type = ANY(%s) AND c.record_id = d.id "
                        "AND c.user_id IS NOT DISTINCT FROM d.owner")
                .format(q.table(self.names, "record_chunks")),
                [[k[0] for k in keys], [k[1] for k in keys], list(record_types)],
            )

    def _delete_where(self, logical: str, where: sql.Composable,
                      params: list[Any]) -> list[str]:
        """Delete rows of ``logical`` and their retrieval rows; returns the deleted ids."""
        # The owner of a retrieval row: the record's user_id, or a user profile's actor id.
        owner = ("CASE WHEN actor_type = 'user' THEN actor_id END" if logical == "actor_profile"
                 else "user_id")
        id_column = "actor_id" if logical == "actor_profile" else "id"
        released: list[str] = []
        if logical == "memory":
            released = relations.lifecycle_targets_from(self.conn, self.names, where, params)
        rows = self.conn.execute(
            sql.SQL("DELETE FROM {} WHERE {} RETURNING {}, {}").format(
                q.table(self.names, logical), where, sql.Identifier(id_column), sql.SQL(owner)),
            params,
        ).fetchall()
        keys = [(r[0], r[1]) for r in rows]
        if logical == "memory":
            self._delete_chunks(sorted(MEMORY_TYPES), keys)
            relations.delete_links_of(self.conn, self.names, keys)
            relations.recompute_status(self.conn, self.names, released)
        elif logical == "message":
            self._delete_chunks(("message",), keys)
        elif logical == "actor_profile":
            self._delete_chunks(("user_profile", "agent_profile"), keys)
        return [k[0] for k in keys]

    def delete_record(self, record_type: str, record_id: str) -> int:
        if record_type == "thread":
            return self.delete_thread(record_id)
        logical = _TABLE_OF_TYPE[record_type]
        key, params = self._key(logical, type_filter=True, record_type=record_type,
                                record_id=record_id)
        return len(self._delete_where(logical, key, params))

    def delete_actor_scope(self, actor_column: str, actor_id: str) -> None:
        if actor_column not in ("user_id", "agent_id"):
            raise InvalidArgumentError(f"unknown actor column {actor_column!r}")
        column = sql.Identifier(actor_column)
        thread_ids = [r[0] for r in self.conn.execute(
            sql.SQL("SELECT id FROM {} WHERE {} = %s").format(
                q.table(self.names, "thread"), column),
            [actor_id],
        ).fetchall()]
        for thread_id in thread_ids:
            self.delete_thread(thread_id)
        for logical in THREAD_CASCADE:
            self._delete_where(logical, sql.SQL("{} = %s").format(column), [actor_id])

    def delete_thread(self, thread_id: str) -> int:
        by_thread = sql.SQL("thread_id = %s")
        for logical in THREAD_CASCADE:
            self._delete_where(logical, by_thread, [thread_id])
        return len(self._delete_where("thread", sql.SQL("id = %s"), [thread_id]))

    def purge_expired(self) -> int:
        expired = sql.SQL("expires_at IS NOT NULL AND expires_at <= now()")
        total = 0
        for logical in EXPIRING_TABLES:
            removed = len(self._delete_where(logical, expired, []))
            _log.info("purged %d expired rows from %s", removed, self.names.table(logical))
            total += removed
        return total

    # --- search -------------------------------------------------------------------------
    def candidate_source(self, plan: SearchPlan) -> search.PostgresCandidates:
        return search.PostgresCandidates(self.conn, self.names, plan, self.engine.scan_choices,
                                         search.viewer_key(self.security))

    def select_records_by_keys(self, keys: Sequence[tuple[str, str]]
                               ) -> dict[tuple[str, str], dict[str, Any]]:
        by_table: dict[str, set[str]] = defaultdict(set)
        for record_type, record_id in keys:
            by_table[_TABLE_OF_TYPE[record_type]].add(record_id)
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for logical, ids in by_table.items():
            id_column = "actor_id" if logical == "actor_profile" else "id"
            where = sql.SQL("{} = ANY(%s)").format(sql.Identifier(id_column))
            if logical in EXPIRING_TABLES:
                where = where + sql.SQL(" AND (expires_at IS NULL OR expires_at > now())")
            with self.conn.cursor(row_factory=dict_row) as cur:
                # Ids are unique per owner: a user's own record shadows a global one (read last).
                rows = cur.execute(
                    sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY user_id NULLS FIRST").format(
                        sql.SQL(_SELECT[logical]), q.table(self.names, logical), where),
                    [sorted(ids)],
                ).fetchall()
            for row in rows:
                found[(row["record_type"], row["id"])] = row
        return found

    def select_linked_memories(self, ids: Sequence[str],
                               plan: SearchPlan) -> list[dict[str, Any]]:
        types = [t for t in plan.record_types if t in MEMORY_TYPES]
        if not ids or not types:
            return []
        where: list[sql.Composable] = [
            sql.SQL("id = ANY(%s)"), sql.SQL("record_type = ANY(%s)"),
            sql.SQL("(expires_at IS NULL OR expires_at > now())"),
        ]
        params: list[Any] = [list(ids), types]
        scope, scope_params = scope_predicates(plan.scope.items())
        where.extend(scope)
        params.extend(scope_params)
        if plan.metadata_filter is not None:
            predicate, filter_params = render_filter(plan.metadata_filter,
                                                     sql.Identifier("metadata"))
            where.append(predicate)
            params.extend(filter_params)
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(
                sql.SQL("SELECT {} FROM {} WHERE {}").format(
                    sql.SQL(_SELECT["memory"]), q.table(self.names, "memory"),
                    sql.SQL(" AND ").join(where)),
                params,
            ).fetchall()

    # --- relations ----------------------------------------------------------------------
    def memory_types(self, ids: Sequence[str]
                     ) -> dict[str, list[tuple[str, str | None]]]:
        return relations.memory_types(self.conn, self.names, ids)

    def insert_relations(self, rows: Sequence[RelationRow]) -> None:
        relations.insert_relations(self.conn, self.names, rows)

    def select_relations(self, query: RelationQuery) -> list[dict[str, Any]]:
        return relations.select_relations(self.conn, self.names, query)

    def update_relation(self, change: RelationChange) -> bool:
        return relations.update_relation(self.conn, self.names, change)

    def delete_relations(self, relation_ids: Sequence[str]
                         ) -> list[tuple[str, str]]:
        return relations.delete_relations(self.conn, self.names, relation_ids)

    def recompute_status(self, memory_ids: Sequence[str]) -> None:
        relations.recompute_status(self.conn, self.names, memory_ids)

    def links_touching(self, node_ids: Sequence[str]) -> list[dict[str, Any]]:
        return relations.links_touching(self.conn, self.names, node_ids)
