"""Versioned DDL of a memory store on PostgreSQL.

A new store is built by applying every version step from 1 to :data:`LATEST_SCHEMA_VERSION`, so
the upgrade path is the creation path and is exercised by every test.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from psycopg import Connection, sql

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.interfaces import SchemaOptions
from oracleagentmemory.engines.postgres import names as q
from oracleagentmemory.engines.postgres.chunk_partitions import partition_chunks

LATEST_SCHEMA_VERSION = 9

SCOPED_VECTOR_MAX_DIM = 400
"""The largest embedding dimension the chunks' scope index carries (version 5).

A B-tree entry holds at most 2,704 bytes (8 kB pages). The scope index entry holds the user id
and the record id (at most 128 characters each, so at most 512 bytes in UTF-8), the record type
and the embedding (``8 + 4 * dim`` bytes): with 400 dimensions the worst case is about 2,680
bytes. Larger embeddings stay in the table only.
"""

_TIME_COLUMNS = """
    event_ts timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    row_seq bigint GENERATED ALWAYS AS IDENTITY
"""

_SCOPE_COLUMNS = """
    thread_id text,
    user_id text,
    agent_id text
"""

_STATUS_CHECK = "status text NOT NULL DEFAULT 'valid' CHECK (status IN ('valid', 'invalid'))"


def _version_1(conn: Connection[object], names: StoreNames, options: SchemaOptions) -> None:
    """Record tables, links, retrieval rows and their lookup indexes."""
    def t(logical: str) -> sql.Composable:
        return q.table(names, logical)

    def ix(suffix: str) -> sql.Composable:
        return q.index(names, suffix)

    statements: list[sql.Composed] = [
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, {scope}, metadata jsonb, "
            "runtime_config jsonb, runtime_state jsonb, {times})"
        ).format(t("thread"), scope=sql.SQL(_SCOPE_COLUMNS.replace("thread_id text,", "")),
                 times=sql.SQL(_TIME_COLUMNS)),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, {scope}, content jsonb, "
            "covered_through_seq_no bigint NOT NULL DEFAULT 0, metadata jsonb, "
            "expires_at timestamptz, {status}, {times})"
        ).format(t("thread_summary"), scope=sql.SQL(_SCOPE_COLUMNS),
                 status=sql.SQL(_STATUS_CHECK), times=sql.SQL(_TIME_COLUMNS)),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (actor_type text NOT NULL "
            "CHECK (actor_type IN ('user', 'agent')), "
            "actor_id text NOT NULL, content text, metadata jsonb, {times}, "
            "PRIMARY KEY (actor_type, actor_id))"
        ).format(t("actor_profile"), times=sql.SQL(_TIME_COLUMNS)),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, {scope}, role text, content text, "
            "content_parts jsonb, seq_no bigint NOT NULL, metadata jsonb, expires_at timestamptz, "
            "{status}, {times})"
        ).format(t("message"), scope=sql.SQL(_SCOPE_COLUMNS), status=sql.SQL(_STATUS_CHECK),
                 times=sql.SQL(_TIME_COLUMNS)),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, {scope}, message_id text, "
            "mime_type text, description text, bytes bytea, metadata jsonb, "
            "expires_at timestamptz, {status}, {times})"
        ).format(t("document"), scope=sql.SQL(_SCOPE_COLUMNS), status=sql.SQL(_STATUS_CHECK),
                 times=sql.SQL(_TIME_COLUMNS)),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, record_type text NOT NULL "
            "CHECK (record_type IN ('memory', 'guideline', 'fact', 'preference')), {scope}, "
            "content text, metadata jsonb, expires_at timestamptz, {status}, {times})"
        ).format(t("memory"), scope=sql.SQL(_SCOPE_COLUMNS), status=sql.SQL(_STATUS_CHECK),
                 times=sql.SQL(_TIME_COLUMNS)),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, "
            "source_id text NOT NULL REFERENCES {mem} (id) ON DELETE CASCADE, "
            "source_type text NOT NULL, "
            "target_id text NOT NULL REFERENCES {mem} (id) ON DELETE CASCADE, "
            "target_type text NOT NULL, relation_type text NOT NULL, "
            "opposite_relation_type text NOT NULL, metadata jsonb, {times}, "
            "CHECK (source_id <> target_id))"
        ).format(t("memory_link"), mem=t("memory"), times=sql.SQL(_TIME_COLUMNS)),
        sql.SQL(
            "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} "
            "(LEAST(source_id, target_id), GREATEST(source_id, target_id))"
        ).format(ix("memory_link_pair_uq"), t("memory_link")),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (target_id)").format(
            ix("memory_link_target_ix"), t("memory_link")
        ),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "record_type text NOT NULL, record_id text NOT NULL, chunk_no integer NOT NULL, "
            "chunk_text text, {embedding}{scope}, created_at timestamptz NOT NULL DEFAULT now())"
        ).format(
            t("record_chunks"),
            embedding=(
                sql.SQL("embedding vector({}), ").format(sql.Literal(options.vector_dim))
                if options.vector_dim is not None
                else sql.SQL("")
            ),
            scope=sql.SQL(_SCOPE_COLUMNS),
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (record_type, record_id)").format(
            ix("record_chunks_record_ix"), t("record_chunks")),
    ]
    for table, columns in (
        ("message", "(thread_id, seq_no)"),
        ("message", "(user_id)"),
        ("memory", "(user_id)"),
        ("memory", "(thread_id)"),
        ("thread", "(user_id)"),
        ("thread_summary", "(thread_id)"),
        ("document", "(thread_id)"),
    ):
        suffix = f"{table}_{columns.strip('()').replace(', ', '_')}_ix"
        statements.append(
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} " + columns).format(ix(suffix), t(table))
        )
    for statement in statements:
        conn.execute(statement)


def _version_2(conn: Connection[object], names: StoreNames, options: SchemaOptions) -> None:
    """Search indexes: keyword text vectors (GIN), HNSW on embeddings, scope lookup on chunks."""
    chunks = q.table(names, "record_chunks")
    conn.execute(
        sql.SQL(
            "ALTER TABLE {} ADD COLUMN IF NOT EXISTS search_tsv tsvector GENERATED ALWAYS AS "
            "(to_tsvector('simple', coalesce(chunk_text, ''))) STORED"
        ).format(chunks)
    )
    conn.execute(
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (search_tsv)").format(
            q.index(names, "record_chunks_tsv_ix"), chunks)
    )
    conn.execute(
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (user_id, record_type)").format(
            q.index(names, "record_chunks_user_ix"), chunks)
    )
    if options.vector_dim is not None:
        add_vector_index(conn, names)


def _version_3(conn: Connection[object], names: StoreNames, options: SchemaOptions) -> None:
    """The chunks' scope index also carries the record id.

    Counting a user's chunks (the search's choice between an exact scan and HNSW) then reads
    the index alone, also under row-level security, whose policies on chunks name the record id.
    """
    chunks = q.table(names, "record_chunks")
    conn.execute(
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (user_id, record_type) INCLUDE (record_id)")
        .format(q.index(names, "record_chunks_scope_ix"), chunks)
    )
    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(
        q.index_qualified(names, "record_chunks_user_ix")))


OWNED_TABLES = ("thread", "thread_summary", "message", "document", "memory", "memory_link")
"""Tables whose record ids are unique per owner (``user_id``; NULL is one owner, global)."""


def _constraints(conn: Connection[object], names: StoreNames, logical: str, kind: str
                 ) -> list[str]:
    """Names of the constraints of ``kind`` (``p`` primary key, ``f`` foreign key) on a table."""
    rows: list[Any] = conn.execute(
        "SELECT con.conname FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = %s AND con.contype = %s "
        "AND n.nspname = coalesce(%s, current_schema())",
        [names.table(logical), kind, names.schema],
    ).fetchall()
    return [str(r[0]) for r in rows]


def _version_4(conn: Connection[object], names: StoreNames, options: SchemaOptions) -> None:
    """The owner is part of every key: record ids, relation ids and pairs are unique per owner.

    PostgreSQL evaluates ``INSERT ... ON CONFLICT ... DO UPDATE ... WHERE`` on the conflicting
    row before row-level security checks it, and a unique violation tells that a key exists:
    no key that another owner's row can satisfy may exist. Relations get the owner of their
    endpoints (``user_id``; both endpoints belong to it, or are global memories) and lose their
    foreign keys (a memory is now identified by owner and id; the engine deletes the links of
    a deleted memory itself). Message sequence numbers are unique per owner and thread.
    """
    def t(logical: str) -> sql.Composable:
        return q.table(names, logical)

    link = t("memory_link")
    conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS user_id text").format(link))
    conn.execute(sql.SQL(
        "UPDATE {} l SET user_id = coalesce((SELECT m.user_id FROM {mem} m WHERE m.id = "
        "l.source_id), (SELECT m.user_id FROM {mem} m WHERE m.id = l.target_id)) "
        "WHERE l.user_id IS NULL").format(link, mem=t("memory")))
    for name in _constraints(conn, names, "memory_link", "f"):
        conn.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
            link, sql.Identifier(name)))
    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(
        q.index_qualified(names, "memory_link_pair_uq")))
    for logical in OWNED_TABLES:
        for name in _constraints(conn, names, logical, "p"):
            conn.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
                t(logical), sql.Identifier(name)))
        conn.execute(sql.SQL(
            "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} (user_id, id) NULLS NOT DISTINCT"
        ).format(q.index(names, f"{logical}_owner_id_uq"), t(logical)))
        conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (id)").format(
            q.index(names, f"{logical}_id_ix"), t(logical)))
    conn.execute(sql.SQL(
        "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} (user_id, LEAST(source_id, target_id), "
        "GREATEST(source_id, target_id)) NULLS NOT DISTINCT"
    ).format(q.index(names, "memory_link_owner_pair_uq"), link))
    conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (source_id)").format(
        q.index(names, "memory_link_source_ix"), link))
    conn.execute(sql.SQL(
        "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} (user_id, thread_id, seq_no) "
        "NULLS NOT DISTINCT"
    ).format(q.index(names, "message_owner_seq_uq"), t("message")))


def _embedding_dim(conn: Connection[object], names: StoreNames) -> int | None:
    """The dimension of the chunks' ``embedding`` column, or ``None`` without one."""
    row: Any = conn.execute(
        "SELECT a.atttypmod FROM pg_attribute a WHERE a.attrelid = %s::regclass "
        "AND a.attname = 'embedding' AND NOT a.attisdropped",
        [q.table(names, "record_chunks").as_string(conn)],
    ).fetchone()
    return int(row[0]) if row is not None and row[0] > 0 else None


def add_scoped_vector_index(conn: Connection[object], names: StoreNames) -> None:
    """The chunks' scope index with the embedding too, when the dimension allows it.

    ``(user_id, record_type) INCLUDE (record_id, embedding)``: a user's vectors are one index
    range, so the exact scoped search (``search._scoped_vector_arm``) reads them with an
    index-only scan instead of visiting a heap page per chunk (a user's chunks are scattered over
    the table, written among every other user's). The index replaces the version-3 scope index,
    whose keys and included record id it repeats (one index to maintain on writes). Index-only
    needs the visibility map: pages written since the last vacuum are still read from the heap
    (autovacuum sets them after inserts), so results never depend on it. Embeddings over
    :data:`SCOPED_VECTOR_MAX_DIM` dimensions do not fit a B-tree entry: those stores keep the
    version-3 index.
    """
    dim = _embedding_dim(conn, names)
    if dim is None or dim > SCOPED_VECTOR_MAX_DIM:
        return
    conn.execute(sql.SQL(
        "CREATE INDEX IF NOT EXISTS {} ON {} (user_id, record_type) "
        "INCLUDE (record_id, embedding)"
    ).format(q.index(names, "record_chunks_vector_scope_ix"), q.table(names, "record_chunks")))
    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(
        q.index_qualified(names, "record_chunks_scope_ix")))


def _version_5(conn: Connection[object], names: StoreNames, options: SchemaOptions) -> None:
    """A user's embeddings in the chunks' scope index (:func:`add_scoped_vector_index`)."""
    add_scoped_vector_index(conn, names)


def _version_6(conn: Connection[object], names: StoreNames, options: SchemaOptions) -> None:
    """A thread's message high-water mark: sequence numbers are never reused, even after its
    newest message is deleted. Existing threads start after their highest stored number."""
    thread, message = q.table(names, "thread"), q.table(names, "message")
    conn.execute(sql.SQL(
        "ALTER TABLE {} ADD COLUMN IF NOT EXISTS next_seq_no bigint NOT NULL DEFAULT 0"
    ).format(thread))
    conn.execute(sql.SQL(
        "UPDATE {t} SET next_seq_no = s.next FROM (SELECT thread_id, user_id, max(seq_no) + 1 "
        "AS next FROM {m} GROUP BY thread_id, user_id) s WHERE s.thread_id = {t}.id "
        "AND s.user_id IS NOT DISTINCT FROM {t}.user_id AND {t}.next_seq_no < s.next"
    ).format(t=thread, m=message))


def _version_7(conn: Connection[object], names: StoreNames, options: SchemaOptions) -> None:
    """A message's image parts by message: deleting or rewriting a message finds its parts
    (image rows with ``message_id``) through the index instead of scanning every image."""
    conn.execute(sql.SQL(
        "CREATE INDEX IF NOT EXISTS {} ON {} (message_id) WHERE message_id IS NOT NULL"
    ).format(q.index(names, "document_message_ix"), q.table(names, "document")))


TEXT_SEARCH_CONFIG = "english"
"""The text-search configuration of the keyword index (version 8) and of keyword queries.

English (Snowball stemming, the English stop words): "went", "go" and "going" share a lexeme and
"what", "did", "the" are not indexed, so a query's rare words decide its keyword rank. Versions
2 to 7 indexed with ``simple`` (lower-casing only).
"""


def _version_8(conn: Connection[object], names: StoreNames, options: SchemaOptions) -> None:
    """The keyword index analyses English (:data:`TEXT_SEARCH_CONFIG`): the generated text
    vector is rebuilt from every chunk's text (dropping the column drops its index too), unless
    it analyses English already. Each step runs again whenever ``CREATE_IF_NECESSARY`` opens an
    existing store, and the rebuild rewrites the whole chunks table under an exclusive lock
    (over ten minutes at a million chunks): it must happen once, at the upgrade."""
    chunks = q.table(names, "record_chunks")
    if _text_vector_config(conn, names) != TEXT_SEARCH_CONFIG:
        conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN IF EXISTS search_tsv").format(chunks))
        conn.execute(sql.SQL(
            "ALTER TABLE {} ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS "
            "(to_tsvector({}::regconfig, coalesce(chunk_text, ''))) STORED"
        ).format(chunks, sql.Literal(TEXT_SEARCH_CONFIG)))
    conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (search_tsv)").format(
        q.index(names, "record_chunks_tsv_ix"), chunks))


def _text_vector_config(conn: Connection[object], names: StoreNames) -> str | None:
    """The text-search configuration the chunks' generated ``search_tsv`` analyses with (as
    its generation expression names it), or ``None`` without the column."""
    row: Any = conn.execute(
        "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a JOIN pg_attrdef d "
        "ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid = %s::regclass "
        "AND a.attname = 'search_tsv' AND NOT a.attisdropped",
        [q.table(names, "record_chunks").as_string(conn)],
    ).fetchone()
    if row is None:
        return None
    found = re.search(r"to_tsvector\('([^']+)'::regconfig", str(row[0]))
    return found.group(1) if found else None


def _version_9(conn: Connection[object], names: StoreNames, options: SchemaOptions) -> None:
    """The chunks are hash-partitioned by owner (:mod:`.chunk_partitions`): a search for one
    user reads one partition, whose HNSW graph holds few other users' rows. The indexes of
    versions 1 to 8 are built again on the partitioned table (each partition gets its own),
    with ``(id, user_id)`` unique in place of the primary key on ``id`` (a partitioned table's
    unique keys include its partition key)."""
    partition_chunks(conn, names)
    chunk_indexes(conn, names)


def repartition_chunks(conn: Connection[object], names: StoreNames, partitions: int) -> None:
    """Give the store's chunks ``partitions`` hash partitions by owner (rows, ids, security and
    triggers kept, every index built again; :func:`.chunk_partitions.partition_chunks`).

    More partitions mean fewer users hashed beside each user, so a user's HNSW scan steps over
    fewer other users' chunks, at the price of more relations (each with its indexes) and of a
    generic plan that lists every partition. Holds the chunks exclusively until the transaction
    ends; a no-op when the table has that many partitions already.
    """
    partition_chunks(conn, names, partitions)
    chunk_indexes(conn, names)


def chunk_indexes(conn: Connection[object], names: StoreNames) -> None:
    """The indexes of versions 1 to 8 on the partitioned chunks table (each partition gets its
    own), with ``(id, user_id)`` unique in place of the primary key on ``id``."""
    chunks = q.table(names, "record_chunks")
    for suffix, definition in (
            ("record_chunks_id_uq", "UNIQUE INDEX IF NOT EXISTS {} ON {} (id, user_id)"),
            ("record_chunks_record_ix", "INDEX IF NOT EXISTS {} ON {} (record_type, record_id)"),
            ("record_chunks_tsv_ix", "INDEX IF NOT EXISTS {} ON {} USING gin (search_tsv)")):
        conn.execute(sql.SQL("CREATE " + definition).format(q.index(names, suffix), chunks))
    dim = _embedding_dim(conn, names)
    if dim is None or dim > SCOPED_VECTOR_MAX_DIM:
        conn.execute(sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON {} (user_id, record_type) INCLUDE (record_id)"
        ).format(q.index(names, "record_chunks_scope_ix"), chunks))
    else:
        add_scoped_vector_index(conn, names)
    if dim is not None:
        add_vector_index(conn, names)


def add_vector_index(conn: Connection[object], names: StoreNames) -> None:
    """HNSW index (cosine distance) on the chunk embeddings, pgvector's defaults (``m`` 16,
    ``ef_construction`` 64).

    Measured on one user's 5,000 256-d vectors (recall@10 of a 40-row scan against exact, and
    the backend's CPU per scan): on random vectors no setting reaches 0.99 for less CPU than
    ``ef_search`` 400 on these defaults (``m`` 32 reaches 0.97 at ``ef_search`` 100 and 0.997 at
    200, for about the CPU the defaults spend at 200 and 400; ``ef_construction`` 200 adds
    0.01-0.02; a ``halfvec`` index gives the same recall for the same CPU); on clustered vectors
    the defaults find 1.000 at 40. With ``m`` 32 (or 24) the planner can also price the index
    above a sequential scan of a narrow 5,000-row table, whose generic plan then leaves it (4
    times the CPU on clustered vectors).
    """
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops)"
        ).format(q.index(names, "record_chunks_hnsw_ix"), q.table(names, "record_chunks"))
    )


def add_embedding_column(conn: Connection[object], names: StoreNames, dim: int) -> None:
    """Add the embedding column to a store created without local vector storage."""
    conn.execute(
        sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS embedding vector({})").format(
            q.table(names, "record_chunks"), sql.Literal(dim))
    )
    add_scoped_vector_index(conn, names)


SchemaStep = Callable[[Connection[object], StoreNames, SchemaOptions], None]

SCHEMA_STEPS: dict[int, SchemaStep] = {
    1: _version_1, 2: _version_2, 3: _version_3, 4: _version_4, 5: _version_5,
    6: _version_6, 7: _version_7, 8: _version_8, 9: _version_9}
"""Step ``n`` upgrades a store from version ``n - 1`` to ``n``."""

REGISTRY_DDL = sql.SQL(
    "CREATE TABLE IF NOT EXISTS {} (store_key text PRIMARY KEY, schema_version integer NOT NULL, "
    "search_mode text NOT NULL, vector_dim integer, default_ttl_days integer, "
    "max_ttl_days integer, search_index_sync text NOT NULL, "
    "created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now())"
)
