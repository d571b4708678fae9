"""The managed tables and indexes of a memory store on Oracle AI Database 26ai.

Pure functions: each returns the statements (no trailing ``;``) and executes nothing. The
tables hold the same logical columns and keys as the PostgreSQL engine's schema at its latest
version (``engines/postgres/ddl.py`` after every step): Oracle has no upgrade history yet, so
its version 1 creates that final shape directly. Where PostgreSQL uses something Oracle lacks,
the Oracle equivalent is written or the object is left out; the comment at each place says
which and why.

Type mapping: ``text`` ids and labels become ``VARCHAR2(128 CHAR)`` (the SDK refuses longer
ids and relation labels), free text ``CLOB``, ``jsonb`` the native ``JSON`` type, ``bytea``
``BLOB``, ``timestamptz`` ``TIMESTAMP WITH TIME ZONE`` (default ``SYSTIMESTAMP``), ``bigint``
``NUMBER(19)``, ``integer`` ``NUMBER(10)``, ``vector(n)`` ``VECTOR(n, FLOAT32)``. Column names
are fixed, unquoted and none is an Oracle reserved word; every object name is quoted and
schema-qualified by :mod:`oracleagentmemory.engines.oracle.names`.

``IF NOT EXISTS`` (Oracle 23ai and later) is written where the grammar has it (``CREATE TABLE``,
``CREATE INDEX``). ``CREATE VECTOR INDEX`` has no such clause and an Oracle Text index is
created once: the engine checks ``ALL_INDEXES`` before running either.
"""

from __future__ import annotations

from oracleagentmemory.engines.interfaces import SchemaOptions
from oracleagentmemory.engines.oracle.names import OracleObjects
from oracleagentmemory.errors import InvalidArgumentError

LATEST_SCHEMA_VERSION = 1
"""The Oracle schema version: the PostgreSQL engine's version-7 shape, created at once."""

DEFAULT_STORE_KEY = "$DEFAULT"
"""Registry key of the unprefixed default store. PostgreSQL keys it ``''``, but Oracle reads
``''`` as NULL, which a primary key refuses; ``$`` cannot start a store id or prefix, so the
key never collides with a named store."""

MAX_VECTOR_DIM = 65535
"""The largest ``VECTOR`` dimension Oracle accepts (and its vector index)."""

HNSW_PARAMETERS = "TYPE HNSW, NEIGHBORS 16, EFCONSTRUCTION 200"
"""HNSW graph parameters: 16 neighbours per node (pgvector's default ``m``), 200 construction
candidates (wider than pgvector's 64; Oracle's range is 1 to 65535)."""

HNSW_TARGET_ACCURACY = 95
"""The default target accuracy (percent) of approximate searches on the index."""

TEXT_INDEX_SYNC: dict[str, str] = {"on_commit": "SYNC (ON COMMIT)", "manual": "SYNC (MANUAL)"}
"""The Oracle Text sync clause of each ``SearchIndexSyncMode`` value a CONTEXT index honours
(``auto`` is for the hybrid index only; the SDK refuses it with keyword search)."""

_TIMES = ("event_ts TIMESTAMP WITH TIME ZONE, "
          "created_at TIMESTAMP WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL, "
          "updated_at TIMESTAMP WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL, "
          "row_seq NUMBER(19) GENERATED ALWAYS AS IDENTITY")
_ID = "VARCHAR2(128 CHAR)"
_SCOPE = f"thread_id {_ID}, user_id {_ID}, agent_id {_ID}"
_STATUS = ("status VARCHAR2(16) DEFAULT 'valid' NOT NULL "
           "CHECK (status IN ('valid', 'invalid'))")

OWNED_TABLES = ("thread", "thread_summary", "message", "document", "memory", "memory_link")
"""Tables whose record ids are unique per owner (``user_id``; NULL is one owner, global)."""


def _tables(o: OracleObjects, options: SchemaOptions) -> list[str]:
    """The eight managed tables.

    No table has a primary key on ``id`` and none has a foreign key, as on PostgreSQL since its
    version 4: the owner is part of every key (``(user_id, id)`` unique indexes below), and the
    engine deletes a memory's links itself. ``search_tsv`` (a PostgreSQL ``tsvector`` column)
    has no Oracle counterpart: the Oracle Text index reads ``chunk_text`` directly.
    """
    embedding = f"embedding {vector_type(options.vector_dim)}, " \
        if options.vector_dim is not None else ""
    return [
        f"CREATE TABLE IF NOT EXISTS {o.table('thread')} (id {_ID} NOT NULL, "
        f"user_id {_ID}, agent_id {_ID}, metadata JSON, runtime_config JSON, "
        f"runtime_state JSON, {_TIMES}, next_seq_no NUMBER(19) DEFAULT 0 NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {o.table('thread_summary')} (id {_ID} NOT NULL, {_SCOPE}, "
        "content JSON, covered_through_seq_no NUMBER(19) DEFAULT 0 NOT NULL, metadata JSON, "
        f"expires_at TIMESTAMP WITH TIME ZONE, {_STATUS}, {_TIMES})",
        f"CREATE TABLE IF NOT EXISTS {o.table('actor_profile')} (actor_type VARCHAR2(16) "
        "NOT NULL CHECK (actor_type IN ('user', 'agent')), "
        f"actor_id {_ID} NOT NULL, content CLOB, metadata JSON, {_TIMES}, "
        "PRIMARY KEY (actor_type, actor_id))",
        f"CREATE TABLE IF NOT EXISTS {o.table('message')} (id {_ID} NOT NULL, {_SCOPE}, "
        "role VARCHAR2(4000), content CLOB, content_parts JSON, seq_no NUMBER(19) NOT NULL, "
        f"metadata JSON, expires_at TIMESTAMP WITH TIME ZONE, {_STATUS}, {_TIMES})",
        f"CREATE TABLE IF NOT EXISTS {o.table('document')} (id {_ID} NOT NULL, {_SCOPE}, "
        f"message_id {_ID}, mime_type VARCHAR2(255), description CLOB, bytes BLOB, "
        f"metadata JSON, expires_at TIMESTAMP WITH TIME ZONE, {_STATUS}, {_TIMES})",
        f"CREATE TABLE IF NOT EXISTS {o.table('memory')} (id {_ID} NOT NULL, record_type "
        "VARCHAR2(32) NOT NULL "
        "CHECK (record_type IN ('memory', 'guideline', 'fact', 'preference')), "
        f"{_SCOPE}, content CLOB, metadata JSON, expires_at TIMESTAMP WITH TIME ZONE, "
        f"{_STATUS}, {_TIMES})",
        f"CREATE TABLE IF NOT EXISTS {o.table('memory_link')} (id {_ID} NOT NULL, "
        f"source_id {_ID} NOT NULL, source_type VARCHAR2(32) NOT NULL, "
        f"target_id {_ID} NOT NULL, target_type VARCHAR2(32) NOT NULL, "
        f"relation_type {_ID} NOT NULL, opposite_relation_type {_ID} NOT NULL, "
        f"metadata JSON, {_TIMES}, user_id {_ID}, CHECK (source_id <> target_id))",
        f"CREATE TABLE IF NOT EXISTS {o.table('record_chunks')} (id NUMBER(19) GENERATED "
        "ALWAYS AS IDENTITY PRIMARY KEY, record_type VARCHAR2(32) NOT NULL, "
        f"record_id {_ID} NOT NULL, chunk_no NUMBER(10) NOT NULL, chunk_text CLOB, "
        f"{embedding}{_SCOPE}, "
        "created_at TIMESTAMP WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL)",
    ]


def _btree_indexes(o: OracleObjects) -> list[str]:
    """Keys and lookup indexes, as on PostgreSQL at its latest version.

    Oracle differences: a unique index treats rows whose non-NULL key columns are equal as
    duplicates even when ``user_id`` is NULL, which is PostgreSQL's ``NULLS NOT DISTINCT``
    (every other key column is NOT NULL). ``INCLUDE`` columns become trailing key columns. The
    partial index ``document (message_id) WHERE message_id IS NOT NULL`` is a plain index:
    a B-tree holds no entry whose key columns are all NULL. The PostgreSQL scope index that
    carries the embedding (``record_chunks_vector_scope_ix``) has no equivalent: a B-tree
    cannot hold a ``VECTOR`` column.
    """
    def unique(suffix: str, table: str, columns: str) -> str:
        return f"CREATE UNIQUE INDEX IF NOT EXISTS {o.index(suffix)} ON {o.table(table)} " \
               f"{columns}"

    def plain(suffix: str, table: str, columns: str) -> str:
        return f"CREATE INDEX IF NOT EXISTS {o.index(suffix)} ON {o.table(table)} {columns}"

    statements: list[str] = []
    for table in OWNED_TABLES:
        statements.append(unique(f"{table}_owner_id_uq", table, "(user_id, id)"))
        statements.append(plain(f"{table}_id_ix", table, "(id)"))
    statements += [
        unique("memory_link_owner_pair_uq", "memory_link",
               "(user_id, LEAST(source_id, target_id), GREATEST(source_id, target_id))"),
        plain("memory_link_source_ix", "memory_link", "(source_id)"),
        plain("memory_link_target_ix", "memory_link", "(target_id)"),
        unique("message_owner_seq_uq", "message", "(user_id, thread_id, seq_no)"),
        plain("record_chunks_record_ix", "record_chunks", "(record_type, record_id)"),
        plain("record_chunks_scope_ix", "record_chunks", "(user_id, record_type, record_id)"),
        plain("document_message_ix", "document", "(message_id)"),
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
        statements.append(plain(suffix, table, columns))
    return statements


def vector_type(dim: int | None) -> str:
    """``VECTOR(dim, FLOAT32)``; the dimension must be 1 to :data:`MAX_VECTOR_DIM`."""
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_VECTOR_DIM:
        raise InvalidArgumentError(
            f"vector_dim must be an integer from 1 to {MAX_VECTOR_DIM}, got {dim!r}",
            argument="vector_dim")
    return f"VECTOR({dim}, FLOAT32)"


def vector_index(o: OracleObjects) -> str:
    """The HNSW index (in-memory neighbor graph, cosine distance) on the chunk embeddings.

    It lives in the vector pool: ``VECTOR_MEMORY_SIZE`` must be set on the database (its
    default is 0 outside Autonomous Database), or creation fails.
    """
    return (f"CREATE VECTOR INDEX {o.index('record_chunks_hnsw_ix')} ON "
            f"{o.table('record_chunks')} (embedding) ORGANIZATION INMEMORY NEIGHBOR GRAPH "
            f"DISTANCE COSINE WITH TARGET ACCURACY {HNSW_TARGET_ACCURACY} "
            f"PARAMETERS ({HNSW_PARAMETERS})")


def text_index(o: OracleObjects, search_index_sync: str) -> str:
    """The Oracle Text CONTEXT index on the chunk text, synced per ``SearchIndexSyncMode``.

    ``CTXSYS.EMPTY_STOPLIST``: every word is indexed, as PostgreSQL's ``simple`` text search
    configuration does (no stop words, no stemming; the default lexer ignores case). A
    ``manual`` index sees new text only after ``CTX_DDL.SYNC_INDEX``, run as the owner (the
    Oracle 12.2 release notes, bug 24440670, limit the schema part of a name given to
    ``CTX_DDL`` to 25 characters; the owner's own calls may leave it out).
    """
    sync = TEXT_INDEX_SYNC.get(search_index_sync)
    if sync is None:
        raise InvalidArgumentError(
            f"search_index_sync {search_index_sync!r} is not supported by a keyword (Oracle "
            f"Text) index; use one of {', '.join(sorted(TEXT_INDEX_SYNC))}",
            argument="search_index_sync")
    return (f"CREATE INDEX {o.index('record_chunks_text_ix')} ON {o.table('record_chunks')} "
            "(chunk_text) INDEXTYPE IS CTXSYS.CONTEXT "
            f"PARAMETERS ('STOPLIST CTXSYS.EMPTY_STOPLIST {sync}')")


def wants_text_index(search_mode: str) -> bool:
    """Whether the store gets the CONTEXT index: with ``vector`` and ``keyword`` search.

    PostgreSQL keeps its keyword index in every store, so a keyword client works on a vector
    store; Oracle does the same. A ``hybrid`` store gets the hybrid vector index instead
    (:mod:`.hybrid`, created by ``schema_ops`` with the embedder's in-database model): Oracle
    does not let a CONTEXT index and a hybrid index own the same column.
    """
    return search_mode != "hybrid"


def create_store(o: OracleObjects, options: SchemaOptions) -> list[str]:
    """Every statement that creates a store at :data:`LATEST_SCHEMA_VERSION`, in order."""
    statements = _tables(o, options) + _btree_indexes(o)
    if options.vector_dim is not None:
        statements.append(vector_index(o))
    if wants_text_index(options.search_mode):
        statements.append(text_index(o, options.search_index_sync))
    return statements


def add_embedding_column(o: OracleObjects, dim: int) -> list[str]:
    """Add the embedding column, and its HNSW index, to a store created without vectors."""
    return [f"ALTER TABLE {o.table('record_chunks')} ADD (embedding {vector_type(dim)})",
            vector_index(o)]


def registry_table(o: OracleObjects) -> str:
    """The per-schema registry of stores (key: :data:`DEFAULT_STORE_KEY` or the store key)."""
    return (f"CREATE TABLE IF NOT EXISTS {o.registry()} (store_key VARCHAR2(128) PRIMARY KEY, "
            "schema_version NUMBER(10) NOT NULL, search_mode VARCHAR2(16) NOT NULL, "
            "vector_dim NUMBER(10), default_ttl_days NUMBER(10), max_ttl_days NUMBER(10), "
            "search_index_sync VARCHAR2(16) NOT NULL, "
            "created_at TIMESTAMP WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL, "
            "updated_at TIMESTAMP WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL)")


def registry_key(o: OracleObjects) -> str:
    """The store's registry key (:data:`DEFAULT_STORE_KEY` for the unprefixed store)."""
    return o.names.store_key or DEFAULT_STORE_KEY
