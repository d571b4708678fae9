"""Constructing ``OracleDBMemoryStore``: identifiers, argument rules and the accepted pools."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import psycopg
import psycopg_pool
import pytest
from conftest import HashEmbedder, StoreFactory, new_store_id
from oracleagentmemory.core import (
    MemoryStoreSchemaError,
    OracleDBMemoryStore,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE
from oracleagentmemory.errors import DatabaseError

POSTGRESQL_ONLY = (
    "uses PostgreSQL sources or catalogs directly (psycopg connections and pools, postgresql://"
    " URLs, pg_class, pg_attribute, schemas)")
"""Why the marked tests do not run on Oracle (``tests/provision/engine_marks.py``)."""

OWNER_SCHEMA = "owner_x"


# --- helpers ------------------------------------------------------------------------------
def _tables(pg_url: str, prefix: str, schema: str | None = None) -> set[str]:
    """Logical names of tables ``<prefix><table>`` in ``schema`` (default: the current one)."""
    wanted = {f"{prefix}{t}": t for t in MANAGED_TABLES}
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = coalesce(%s, current_schema()) AND c.relkind IN ('r', 'p') "
            "AND NOT c.relispartition "
            "AND c.relname = ANY(%s)",
            [schema, list(wanted)],
        ).fetchall()
    return {wanted[r[0]] for r in rows}


def _run_in_threads(count: int, action: Callable[[int], object]) -> list[BaseException]:
    """Run ``action(n)`` in ``count`` threads released together; return the errors raised."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        barrier.wait()
        try:
            action(n)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _add_and_read(store: OracleDBMemoryStore, n: int) -> None:
    """One thread's work: a few writes and reads that must all see their own data."""
    for k in range(5):
        record_id = f"m{n}_{k}"
        assert store.add([f"text {n} {k}"], record_type="memory", record_ids=record_id,
                         user_ids=f"u{n}") == [record_id]
        record = store.get("memory", record_id)
        assert record is not None and record.content == f"text {n} {k}"
    assert len(store.list("memory", user_id=f"u{n}")) == 5


Opener = Callable[..., OracleDBMemoryStore]


@pytest.fixture
def open_store(pg_url: str) -> Iterator[Opener]:
    """Build a store from exactly the given arguments (pool defaults to the URL); closed after."""
    opened: list[OracleDBMemoryStore] = []

    def opener(embedder: object = None, pool: object = pg_url, **kwargs: object
               ) -> OracleDBMemoryStore:
        store = OracleDBMemoryStore(embedder, pool, **kwargs)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


@pytest.fixture
def owner_schema(pg_url: str) -> str:
    """A PostgreSQL schema other than the connection user's default one."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {OWNER_SCHEMA}")
    return OWNER_SCHEMA


@pytest.fixture
def borrowed_connection(pg_url: str) -> Iterator[psycopg.Connection[object]]:
    conn: psycopg.Connection[object] = psycopg.connect(pg_url)
    yield conn
    conn.close()


@pytest.fixture
def borrowed_pool(pg_url: str) -> Iterator[psycopg_pool.ConnectionPool[psycopg.Connection[object]]]:
    pool: psycopg_pool.ConnectionPool[psycopg.Connection[object]] = psycopg_pool.ConnectionPool(
        pg_url, min_size=1, max_size=4, open=True)
    yield pool
    pool.close()


# --- memory_store_id ----------------------------------------------------------------------
@pytest.mark.parametrize("make_id", [
    lambda: new_store_id().ljust(16, "x"),
    lambda: "A" + new_store_id().replace("_", "B"),
    lambda: new_store_id() + "_",
], ids=["sixteen_chars", "mixed_case_letters_digits", "trailing_underscore"])
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_valid_memory_store_ids_are_accepted(
    make_store: StoreFactory, pg_url: str, make_id: Callable[[], str]
) -> None:
    store_id = make_id()
    assert len(store_id) <= 16
    make_store(memory_store_id=store_id)
    assert _tables(pg_url, f"{store_id.lower()}_") == set(MANAGED_TABLES)


@pytest.mark.parametrize("store_id", [
    "a" * 17, "1abc", "_abc", "ab-c", "", "ab c", "ab.c", 'a"b', "é",
])
def test_invalid_memory_store_id_is_rejected(pg_url: str, store_id: str) -> None:
    with pytest.raises(ValueError, match="memory_store_id"):
        OracleDBMemoryStore(None, pg_url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id)


@pytest.mark.parametrize("store_id", [12, b"abc", ["abc"]])
def test_non_string_memory_store_id_is_a_type_error(pg_url: str, store_id: object) -> None:
    with pytest.raises(TypeError, match="memory_store_id"):
        OracleDBMemoryStore(None, pg_url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id)  # type: ignore[arg-type]


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_memory_store_id_is_case_insensitive(make_store: StoreFactory, pg_url: str) -> None:
    lower = new_store_id()
    mixed = lower.upper()[:1] + lower[1:] + "Ab"
    first = make_store(memory_store_id=mixed)
    first.add(["shared"], record_type="memory", record_ids="m1")

    second = make_store(memory_store_id=mixed.lower(),
                        schema_policy=SchemaPolicy.REQUIRE_EXISTING)

    record = second.get("memory", "m1")
    assert record is not None and record.content == "shared"
    assert _tables(pg_url, f"{mixed.lower()}_") == set(MANAGED_TABLES)
    assert _tables(pg_url, f"{mixed}_") == set()




# --- table_name_prefix ----------------------------------------------------------------------
def test_table_name_prefix_warns_and_names_the_tables(open_store: Opener, pg_url: str) -> None:
    prefix = "P" + new_store_id() + "_"
    with pytest.warns(DeprecationWarning, match="memory_store_id"):
        store = open_store(table_name_prefix=prefix,
                           schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    store.add(["prefixed"], record_type="memory", record_ids="m1")

    assert _tables(pg_url, prefix.lower()) == set(MANAGED_TABLES)
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(f'SELECT content FROM "{prefix.lower()}memory" WHERE id = %s',
                           ["m1"]).fetchone()
        registered = conn.execute(
            f"SELECT count(*) FROM {REGISTRY_TABLE} WHERE store_key = %s", [prefix.lower()]
        ).fetchone()
    assert row == ("prefixed",)
    assert registered == (1,)


def test_table_name_prefix_reopens_the_same_store(open_store: Opener) -> None:
    prefix = "p" + new_store_id() + "_"
    with pytest.warns(DeprecationWarning):
        first = open_store(table_name_prefix=prefix,
                           schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
        first.add(["again"], record_type="memory", record_ids="m1")
        second = open_store(table_name_prefix=prefix,
                            schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    record = second.get("memory", "m1")
    assert record is not None and record.content == "again"


@pytest.mark.parametrize("prefix", ["", "1abc", "a-b", "a" * 60])
def test_invalid_table_name_prefix_is_rejected(open_store: Opener, prefix: str) -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="table_name_prefix"):
        open_store(table_name_prefix=prefix, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)


def test_memory_store_id_and_table_name_prefix_together_are_rejected(
    open_store: Opener, pg_url: str
) -> None:
    store_id = new_store_id()
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError,
                                                         match="memory_store_id") as info:
        open_store(schema_policy=SchemaPolicy.CREATE_IF_NECESSARY, memory_store_id=store_id,
                   table_name_prefix="pfx_")
    assert "table_name_prefix" in str(info.value)
    assert _tables(pg_url, f"{store_id}_") == set()
    assert _tables(pg_url, "pfx_") == set()


# --- schema_owner -------------------------------------------------------------------------
@pytest.mark.parametrize("policy", [
    SchemaPolicy.CREATE_IF_NECESSARY, SchemaPolicy.RECREATE, SchemaPolicy.CREATE_IF_EMPTY,
    "create_if_necessary",
])
def test_schema_owner_forbids_schema_changing_policies(
    open_store: Opener, pg_url: str, owner_schema: str, policy: SchemaPolicy | str
) -> None:
    store_id = new_store_id()
    with pytest.raises(ValueError, match="schema_owner"):
        open_store(memory_store_id=store_id, schema_owner=owner_schema, schema_policy=policy)
    assert _tables(pg_url, f"{store_id}_", schema=owner_schema) == set()


def _create_in_owner_schema(pg_url: str, owner_schema: str, store_id: str) -> None:
    """Create a store as its owner would: connected with the owner's schema as search_path."""
    with (
        psycopg.connect(pg_url, options=f"-c search_path={owner_schema}") as conn,
        OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id) as owner_store,
    ):
        owner_store.add(["owned"], record_type="memory", record_ids="m1")


@pytest.mark.parametrize("spelling", [OWNER_SCHEMA.upper(), OWNER_SCHEMA, "Owner_X"])
def test_schema_owner_with_require_existing_opens_the_store_in_that_schema(
    open_store: Opener, pg_url: str, owner_schema: str, spelling: str
) -> None:
    store_id = new_store_id()
    _create_in_owner_schema(pg_url, owner_schema, store_id)
    assert _tables(pg_url, f"{store_id}_", schema=owner_schema) == set(MANAGED_TABLES)
    assert _tables(pg_url, f"{store_id}_") == set()

    store = open_store(memory_store_id=store_id, schema_owner=spelling,
                       schema_policy=SchemaPolicy.REQUIRE_EXISTING)

    record = store.get("memory", "m1")
    assert record is not None and record.content == "owned"
    store.add(["written by the runtime user"], record_type="memory", record_ids="m2")
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            f'SELECT content FROM {owner_schema}."{store_id}_memory" WHERE id = %s', ["m2"]
        ).fetchone()
    assert row == ("written by the runtime user",)
    assert _tables(pg_url, f"{store_id}_") == set()


def test_schema_owner_without_the_store_fails_and_creates_nothing(
    open_store: Opener, pg_url: str, owner_schema: str
) -> None:
    store_id = new_store_id()
    with pytest.raises(MemoryStoreSchemaError, match="missing tables"):
        open_store(memory_store_id=store_id, schema_owner=owner_schema.upper(),
                   schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert _tables(pg_url, f"{store_id}_", schema=owner_schema) == set()
    assert _tables(pg_url, f"{store_id}_") == set()


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_schema_owner_does_not_see_a_store_of_the_default_schema(
    open_store: Opener, make_store: StoreFactory, owner_schema: str
) -> None:
    store_id = make_store()._names.store_key
    with pytest.raises(MemoryStoreSchemaError, match="missing tables"):
        open_store(memory_store_id=store_id, schema_owner=owner_schema,
                   schema_policy=SchemaPolicy.REQUIRE_EXISTING)


@pytest.mark.parametrize("owner", [
    '"OWNER_X"', "owner x", "o" * 129, "", "1owner", "owner.x", "owner;drop",
])
def test_invalid_schema_owner_is_rejected(open_store: Opener, owner: str) -> None:
    with pytest.raises(ValueError, match="schema_owner"):
        open_store(memory_store_id=new_store_id(), schema_owner=owner,
                   schema_policy=SchemaPolicy.REQUIRE_EXISTING)


def test_non_string_schema_owner_is_a_type_error(open_store: Opener) -> None:
    with pytest.raises(TypeError, match="schema_owner"):
        open_store(memory_store_id=new_store_id(), schema_owner=42,
                   schema_policy=SchemaPolicy.REQUIRE_EXISTING)


# --- search settings ------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", [None, SearchStrategy.VECTOR, SearchStrategy.KEYWORD,
                                      "keyword"])
@pytest.mark.parametrize("sync", [SearchIndexSyncMode.AUTO, "auto"])
def test_search_index_sync_auto_requires_hybrid(
    open_store: Opener, pg_url: str, strategy: SearchStrategy | str | None,
    sync: SearchIndexSyncMode | str,
) -> None:
    store_id = new_store_id()
    kwargs: dict[str, object] = {} if strategy is None else {"search_strategy": strategy}
    with pytest.raises(ValueError, match="search_index_sync"):
        open_store(memory_store_id=store_id, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                   search_index_sync=sync, **kwargs)
    assert _tables(pg_url, f"{store_id}_") == set()


@pytest.mark.parametrize("sync", [SearchIndexSyncMode.ON_COMMIT, SearchIndexSyncMode.MANUAL])
def test_other_search_index_sync_modes_are_accepted_with_keyword_search(
    make_store: StoreFactory, sync: SearchIndexSyncMode
) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD, search_index_sync=sync)
    assert store.search_strategy is SearchStrategy.KEYWORD


# --- vector_dim and the embedder ------------------------------------------------------------
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_vector_dim_defaults_to_the_embedder_dimension(
    make_store: StoreFactory, pg_url: str
) -> None:
    store = make_store(embedder=HashEmbedder(dim=5))
    assert store.vector_dim == 5
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = 'embedding'", [f"{store._names.store_key}_record_chunks"]
        ).fetchone()
    assert row == (5,)
    store.add(["embedded by the store"], record_type="memory", record_ids="m1")
    record = store.get("memory", "m1")
    assert record is not None and record.content == "embedded by the store"


def test_keyword_search_with_an_embedder_needs_no_vector_storage(make_store: StoreFactory) -> None:
    store = make_store(embedder=HashEmbedder(dim=5), search_strategy=SearchStrategy.KEYWORD)
    assert store.vector_dim is None


def test_explicit_vector_dim_none_with_an_embedder_uses_the_embedder_dimension(
    make_store: StoreFactory,
) -> None:
    store = make_store(embedder=HashEmbedder(dim=6), vector_dim=None)
    assert store.vector_dim == 6


@pytest.mark.parametrize("policy", [SchemaPolicy.REQUIRE_EXISTING,
                                    SchemaPolicy.CREATE_IF_NECESSARY])
def test_embedder_dimension_different_from_the_store_fails(
    make_store: StoreFactory, policy: SchemaPolicy
) -> None:
    store_id = make_store(vector_dim=3)._names.store_key
    with pytest.raises(MemoryStoreSchemaError, match="embedder") as info:
        make_store(memory_store_id=store_id, schema_policy=policy, embedder=HashEmbedder(dim=5))
    assert "3" in str(info.value) and "5" in str(info.value)


def test_explicit_vector_dim_different_from_the_embedder_is_rejected_before_any_ddl(
    open_store: Opener, pg_url: str
) -> None:
    store_id = new_store_id()
    with pytest.raises(ValueError, match="vector_dim"):
        open_store(HashEmbedder(dim=3), memory_store_id=store_id, vector_dim=5,
                   schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    assert _tables(pg_url, f"{store_id}_") == set()


@pytest.mark.parametrize("dim", [0, -3])
def test_non_positive_vector_dim_is_rejected(open_store: Opener, dim: int) -> None:
    with pytest.raises(ValueError, match="vector_dim"):
        open_store(memory_store_id=new_store_id(), vector_dim=dim,
                   schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)


@pytest.mark.parametrize("dim", [3.0, "3", True])
def test_non_integer_vector_dim_is_a_type_error(open_store: Opener, dim: object) -> None:
    with pytest.raises(TypeError, match="vector_dim"):
        open_store(memory_store_id=new_store_id(), vector_dim=dim,
                   schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)


# --- pools ------------------------------------------------------------------------------------
@pytest.mark.parametrize("autocommit", [False, True])
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_raw_connection_serialises_calls_from_many_threads(
    make_store: StoreFactory, pg_url: str, autocommit: bool
) -> None:
    with psycopg.connect(pg_url, autocommit=autocommit) as conn:
        store = make_store(pool=conn)
        errors = _run_in_threads(8, lambda n: _add_and_read(store, n))
        assert errors == []
        assert len(store.list("memory", limit=None)) == 40
    with psycopg.connect(pg_url) as check:
        row = check.execute(
            f'SELECT count(*) FROM "{store._names.store_key}_memory"').fetchone()
    assert row == (40,)


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_connection_pool_serves_concurrent_calls(
    make_store: StoreFactory,
    borrowed_pool: psycopg_pool.ConnectionPool[psycopg.Connection[object]],
) -> None:
    store = make_store(pool=borrowed_pool)
    errors = _run_in_threads(8, lambda n: _add_and_read(store, n))
    assert errors == []
    assert len(store.list("memory", limit=None)) == 40


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_postgresql_url_opens_a_working_store(make_store: StoreFactory, pg_url: str) -> None:
    assert pg_url.startswith("postgresql://")
    store = make_store(pool=pg_url)
    errors = _run_in_threads(8, lambda n: _add_and_read(store, n))
    assert errors == []
    assert len(store.list("memory", limit=None)) == 40


@pytest.mark.parametrize("pool", [object(), 42, {"dsn": "postgresql://x"}, None])
def test_an_unsupported_pool_object_is_a_type_error(open_store: Opener, pool: object) -> None:
    with pytest.raises(TypeError, match="pool"):
        open_store(pool=pool, memory_store_id=new_store_id(),
                   schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)


@pytest.mark.parametrize("url", ["mysql://localhost/db", "not a url"])
def test_a_non_postgresql_url_is_rejected(open_store: Opener, url: str) -> None:
    with pytest.raises(ValueError, match="pool"):
        open_store(pool=url, memory_store_id=new_store_id(),
                   schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)


def test_close_closes_the_pool_opened_from_a_url(open_store: Opener) -> None:
    store = open_store(memory_store_id=new_store_id(),
                       schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    store.add(["before close"], record_type="memory", record_ids="m1")
    store.close()
    with pytest.raises(DatabaseError, match="pool is closed") as raised:
        store.get("memory", "m1")
    assert isinstance(raised.value.__cause__, psycopg_pool.PoolClosed)


def test_close_leaves_a_borrowed_pool_open(
    open_store: Opener,
    borrowed_pool: psycopg_pool.ConnectionPool[psycopg.Connection[object]],
) -> None:
    store = open_store(pool=borrowed_pool, memory_store_id=new_store_id(),
                       schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    store.close()
    assert not borrowed_pool.closed
    with borrowed_pool.connection() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_close_leaves_a_borrowed_connection_open(
    open_store: Opener, borrowed_connection: psycopg.Connection[object]
) -> None:
    store = open_store(pool=borrowed_connection, memory_store_id=new_store_id(),
                       schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    store.add(["kept"], record_type="memory", record_ids="m1")
    store.close()
    assert not borrowed_connection.closed
    assert borrowed_connection.execute("SELECT 1").fetchone() == (1,)


def test_the_store_is_a_context_manager_that_closes_its_pool(pg_url: str) -> None:
    with OracleDBMemoryStore(None, pg_url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                             memory_store_id=new_store_id()) as store:
        store.add(["inside"], record_type="memory", record_ids="m1")
    with pytest.raises(DatabaseError, match="pool is closed"):
        store.get("memory", "m1")
