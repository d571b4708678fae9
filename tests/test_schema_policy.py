"""Schema policies of ``OracleDBMemoryStore``: validation, creation, repair, upgrade, recreation.

The database is inspected directly with psycopg to check which managed objects exist.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from conftest import StoreFactory, new_store_id
from oracleagentmemory.core import (
    MemoryStoreSchemaError,
    OracleDBMemoryStore,
    SchemaPolicy,
    SearchStrategy,
)
from oracleagentmemory.core._schema import SchemaRequest, open_schema
from oracleagentmemory.engines import make_engine
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE, store_names
from oracleagentmemory.engines.postgres.ddl import LATEST_SCHEMA_VERSION

POSTGRESQL_ONLY = (
    "inspects or alters the PostgreSQL schema directly (psycopg, pg_catalog, to_regclass, the "
    "postgres engine's DDL)")
"""Why the marked tests do not run on Oracle (``tests/provision/engine_marks.py``)."""


# --- helpers ------------------------------------------------------------------------------
def _tables(pg_url: str, store_id: str) -> set[str]:
    """Logical names of the managed tables of ``store_id`` present in the default schema."""
    wanted = {f"{store_id.lower()}_{t}": t for t in MANAGED_TABLES}
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
            "AND relkind IN ('r', 'p') AND NOT relispartition AND relname = ANY(%s)",
            [list(wanted)],
        ).fetchall()
    return {wanted[r[0]] for r in rows}


def _registry(pg_url: str, store_id: str) -> dict[str, Any] | None:
    """The store's registry row (``None`` when it has none)."""
    with psycopg.connect(pg_url) as conn:
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [REGISTRY_TABLE]).fetchone()
        if not exists or not exists[0]:
            return None
        cur = conn.execute(
            f"SELECT schema_version, search_mode, vector_dim FROM {REGISTRY_TABLE} "
            "WHERE store_key = %s",
            [store_id.lower()],
        )
        row = cur.fetchone()
    if row is None:
        return None
    return {"schema_version": row[0], "search_mode": row[1], "vector_dim": row[2]}


def _execute(pg_url: str, statement: str, params: list[Any] | None = None) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(statement, params)


def _drop_table(pg_url: str, store_id: str, logical: str) -> None:
    _execute(pg_url, f'DROP TABLE "{store_id.lower()}_{logical}" CASCADE')


def _columns(pg_url: str, table: str) -> set[str]:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s",
            [table],
        ).fetchall()
    return {r[0] for r in rows}


def _indexes(pg_url: str, table: str) -> set[str]:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = %s",
            [table],
        ).fetchall()
    return {r[0] for r in rows}


def _embedding_dim(pg_url: str, table: str) -> int | None:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = 'embedding' AND NOT attisdropped",
            [table],
        ).fetchone()
    return None if row is None else int(row[0])


def _create_at_version(pg_url: str, store_id: str, version: int, vector_dim: int | None) -> None:
    """Create a store the way an SDK whose latest schema version was ``version`` did."""
    engine = make_engine(pg_url)
    try:
        names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=None,
                            fold=engine.fold)
        open_schema(
            engine,
            names,
            SchemaPolicy.CREATE_IF_NECESSARY,
            None,
            SchemaRequest(vector_dim=vector_dim, vector_dim_given=vector_dim is not None,
                          search_mode=None, search_index_sync="on_commit", retention=None,
                          latest_version=version,
                          max_indexed_vector_dim=engine.capabilities.max_indexed_vector_dim),
        )
    finally:
        engine.close()


# --- REQUIRE_EXISTING ---------------------------------------------------------------------
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_require_existing_on_missing_store_raises_and_creates_nothing(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = new_store_id()
    with pytest.raises(MemoryStoreSchemaError, match="missing tables") as info:
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert isinstance(info.value, RuntimeError)
    assert store_id in str(info.value)
    assert _tables(pg_url, store_id) == set()
    assert _registry(pg_url, store_id) is None


def test_require_existing_is_the_default_policy(pg_url: str) -> None:
    store_id = new_store_id()
    with pytest.raises(MemoryStoreSchemaError, match="require_existing"):
        OracleDBMemoryStore(None, pg_url, memory_store_id=store_id)
    assert _tables(pg_url, store_id) == set()


def test_require_existing_opens_a_complete_store_and_reads_its_data(
    make_store: StoreFactory,
) -> None:
    created = make_store()
    created.add(["kept"], record_type="memory", record_ids="m1")
    reopened = make_store(memory_store_id=created._names.store_key,
                          schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    record = reopened.get("memory", "m1")
    assert record is not None and record.content == "kept"
    assert reopened.schema_version == LATEST_SCHEMA_VERSION


@pytest.mark.parametrize("dropped", ["memory_link", "record_chunks", "thread_summary"])
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_require_existing_names_the_missing_table(
    make_store: StoreFactory, pg_url: str, dropped: str
) -> None:
    store_id = make_store()._names.store_key
    _drop_table(pg_url, store_id, dropped)
    with pytest.raises(MemoryStoreSchemaError, match=f"{store_id}_{dropped}"):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert dropped not in _tables(pg_url, store_id)


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_require_existing_reports_a_missing_registry_row(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = make_store()._names.store_key
    _execute(pg_url, f"DELETE FROM {REGISTRY_TABLE} WHERE store_key = %s", [store_id])
    with pytest.raises(MemoryStoreSchemaError, match=REGISTRY_TABLE):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_require_existing_on_an_outdated_version_says_how_to_upgrade(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = new_store_id()
    _create_at_version(pg_url, store_id, 1, vector_dim=None)
    with pytest.raises(MemoryStoreSchemaError, match="schema version 1") as info:
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert "CREATE_IF_NECESSARY" in str(info.value)
    assert str(LATEST_SCHEMA_VERSION) in str(info.value)
    registry = _registry(pg_url, store_id)
    assert registry is not None and registry["schema_version"] == 1
    assert "search_tsv" not in _columns(pg_url, f"{store_id}_record_chunks")


def test_require_existing_rejects_a_different_explicit_vector_dim(
    make_store: StoreFactory,
) -> None:
    store_id = make_store(vector_dim=3)._names.store_key
    with pytest.raises(MemoryStoreSchemaError, match="vector_dim=4"):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                   vector_dim=4)


def test_require_existing_rejects_an_explicit_vector_dim_on_a_store_without_vectors(
    make_store: StoreFactory,
) -> None:
    store_id = make_store()._names.store_key
    with pytest.raises(MemoryStoreSchemaError, match="vector_dim=3"):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                   vector_dim=3)


def test_require_existing_without_vector_dim_uses_the_stored_dimension(
    make_store: StoreFactory,
) -> None:
    store_id = make_store(vector_dim=3)._names.store_key
    reopened = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert reopened.vector_dim == 3


@pytest.mark.parametrize("strategy", [SearchStrategy.KEYWORD, SearchStrategy.VECTOR])
def test_require_existing_without_search_strategy_detects_the_stored_mode(
    make_store: StoreFactory, strategy: SearchStrategy
) -> None:
    store_id = make_store(search_strategy=strategy, vector_dim=3)._names.store_key
    reopened = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert reopened.search_strategy is strategy


# --- CREATE_IF_EMPTY ----------------------------------------------------------------------
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_create_if_empty_creates_a_new_store(make_store: StoreFactory, pg_url: str) -> None:
    store_id = new_store_id()
    store = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    assert _tables(pg_url, store_id) == set(MANAGED_TABLES)
    registry = _registry(pg_url, store_id)
    assert registry is not None and registry["schema_version"] == LATEST_SCHEMA_VERSION
    assert store.add(["hello"], record_type="memory", record_ids="m1") == ["m1"]
    assert store.list("memory")[0].content == "hello"


def test_create_if_empty_opens_a_complete_store_without_changing_it(
    make_store: StoreFactory,
) -> None:
    created = make_store()
    created.add(["kept"], record_type="memory", record_ids="m1")
    reopened = make_store(memory_store_id=created._names.store_key,
                          schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    record = reopened.get("memory", "m1")
    assert record is not None and record.content == "kept"


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_create_if_empty_on_an_incomplete_store_names_what_is_missing(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = make_store()._names.store_key
    _drop_table(pg_url, store_id, "document")
    with pytest.raises(MemoryStoreSchemaError, match=f"{store_id}_document"):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    assert "document" not in _tables(pg_url, store_id)


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_create_if_empty_on_an_outdated_store_does_not_upgrade_it(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = new_store_id()
    _create_at_version(pg_url, store_id, 1, vector_dim=None)
    with pytest.raises(MemoryStoreSchemaError, match="schema version 1"):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    registry = _registry(pg_url, store_id)
    assert registry is not None and registry["schema_version"] == 1


# --- CREATE_IF_NECESSARY ------------------------------------------------------------------
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_create_if_necessary_recreates_a_dropped_table_and_keeps_other_data(
    make_store: StoreFactory, pg_url: str
) -> None:
    created = make_store()
    store_id = created._names.store_key
    created.add(["kept"], record_type="memory", record_ids="m1")
    _drop_table(pg_url, store_id, "thread_summary")
    assert "thread_summary" not in _tables(pg_url, store_id)

    reopened = make_store(memory_store_id=store_id)
    assert _tables(pg_url, store_id) == set(MANAGED_TABLES)
    record = reopened.get("memory", "m1")
    assert record is not None and record.content == "kept"
    make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_create_if_necessary_upgrades_a_store_created_at_an_earlier_version(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = new_store_id()
    _create_at_version(pg_url, store_id, 1, vector_dim=3)
    chunks = f"{store_id}_record_chunks"
    assert "search_tsv" not in _columns(pg_url, chunks)
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"INSERT INTO {store_id}_memory (id, record_type, content) "
                     "VALUES ('m1', 'memory', 'alpha beta')")
        conn.execute(f"INSERT INTO {chunks} (record_type, record_id, chunk_no, chunk_text, "
                     "embedding) VALUES ('memory', 'm1', 0, 'alpha beta', '[1,0,0]')")

    upgraded = make_store(memory_store_id=store_id,
                          schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)

    assert upgraded.schema_version == LATEST_SCHEMA_VERSION
    registry = _registry(pg_url, store_id)
    assert registry is not None and registry["schema_version"] == LATEST_SCHEMA_VERSION
    assert registry["vector_dim"] == 3
    assert "search_tsv" in _columns(pg_url, chunks)
    indexes = _indexes(pg_url, chunks)
    assert {f"{chunks}_tsv_ix", f"{chunks}_vector_scope_ix", f"{chunks}_hnsw_ix"} <= indexes
    assert f"{chunks}_user_ix" not in indexes  # version 2's, replaced by version 3
    assert f"{chunks}_scope_ix" not in indexes  # version 3's, replaced by version 5
    record = upgraded.get("memory", "m1")
    assert record is not None and record.content == "alpha beta"
    with psycopg.connect(pg_url) as conn:
        tsv = conn.execute(
            f'SELECT search_tsv::text FROM "{chunks}" WHERE record_id = %s', ["m1"]
        ).fetchall()
    assert tsv and all("alpha" in row[0] and "beta" in row[0] for row in tsv)
    make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_create_if_necessary_adds_vector_storage_when_vector_dim_is_given_later(
    make_store: StoreFactory, pg_url: str
) -> None:
    created = make_store()
    store_id = created._names.store_key
    created.add(["kept"], record_type="memory", record_ids="m1")
    chunks = f"{store_id}_record_chunks"
    assert created.vector_dim is None
    assert _embedding_dim(pg_url, chunks) is None

    reopened = make_store(memory_store_id=store_id, vector_dim=4)

    assert reopened.vector_dim == 4
    assert _embedding_dim(pg_url, chunks) == 4
    assert f"{chunks}_hnsw_ix" in _indexes(pg_url, chunks)
    registry = _registry(pg_url, store_id)
    assert registry is not None and registry["vector_dim"] == 4
    reopened.add(["with vector"], record_type="memory", record_ids="m2",
                 embeddings=[[0.0, 1.0, 0.0, 0.0]])
    assert {r.id for r in reopened.list("memory")} == {"m1", "m2"}


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_create_if_necessary_rejects_a_different_stored_vector_dimension(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = make_store(vector_dim=3)._names.store_key
    with pytest.raises(MemoryStoreSchemaError, match="vector_dim=5"):
        make_store(memory_store_id=store_id, vector_dim=5)
    assert _embedding_dim(pg_url, f"{store_id}_record_chunks") == 3
    registry = _registry(pg_url, store_id)
    assert registry is not None and registry["vector_dim"] == 3


def test_create_if_necessary_without_vector_dim_keeps_the_stored_dimension(
    make_store: StoreFactory,
) -> None:
    store_id = make_store(vector_dim=3)._names.store_key
    assert make_store(memory_store_id=store_id).vector_dim == 3


# --- RECREATE -----------------------------------------------------------------------------
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_recreate_drops_the_data_and_leaves_a_usable_store(
    make_store: StoreFactory, pg_url: str
) -> None:
    created = make_store()
    store_id = created._names.store_key
    created.add(["one", "two"], record_type="memory", record_ids=["m1", "m2"])
    created.add_user("u1", "profile")

    recreated = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.RECREATE)

    assert recreated.list("memory") == []
    assert recreated.get("user_profile", "u1") is None
    assert _tables(pg_url, store_id) == set(MANAGED_TABLES)
    assert recreated.add(["fresh"], record_type="memory", record_ids="m1") == ["m1"]
    record = recreated.get("memory", "m1")
    assert record is not None and record.content == "fresh"


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_recreate_can_change_the_vector_dimension(make_store: StoreFactory, pg_url: str) -> None:
    store_id = make_store(vector_dim=3)._names.store_key
    recreated = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.RECREATE,
                           vector_dim=5)
    assert recreated.vector_dim == 5
    assert _embedding_dim(pg_url, f"{store_id}_record_chunks") == 5


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_recreate_leaves_other_stores_untouched(make_store: StoreFactory, pg_url: str) -> None:
    mine = make_store()
    other = make_store()
    other.add(["other data"], record_type="memory", record_ids="o1")
    make_store(memory_store_id=mine._names.store_key, schema_policy=SchemaPolicy.RECREATE)
    record = other.get("memory", "o1")
    assert record is not None and record.content == "other data"
    assert _registry(pg_url, other._names.store_key) is not None


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_recreate_creates_a_store_that_did_not_exist(make_store: StoreFactory, pg_url: str) -> None:
    store_id = new_store_id()
    make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.RECREATE)
    assert _tables(pg_url, store_id) == set(MANAGED_TABLES)


# --- NO_CHECK -----------------------------------------------------------------------------
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_no_check_outside_an_end_user_context_is_refused_and_creates_nothing(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = new_store_id()
    with pytest.raises(RuntimeError, match="OracleMemoryEndUserSecurityContext"):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.NO_CHECK)
    assert _tables(pg_url, store_id) == set()
    assert _registry(pg_url, store_id) is None


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_no_check_does_not_repair_an_incomplete_store(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = make_store()._names.store_key
    _drop_table(pg_url, store_id, "document")
    with pytest.raises(RuntimeError):
        make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.NO_CHECK)
    assert "document" not in _tables(pg_url, store_id)


# --- schema newer than the SDK --------------------------------------------------------------
@pytest.mark.parametrize(
    "policy",
    [SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.CREATE_IF_EMPTY, SchemaPolicy.CREATE_IF_NECESSARY],
)
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_schema_version_newer_than_the_sdk_fails_clearly(
    make_store: StoreFactory, pg_url: str, policy: SchemaPolicy
) -> None:
    store_id = make_store()._names.store_key
    newer = LATEST_SCHEMA_VERSION + 1
    _execute(pg_url, f"UPDATE {REGISTRY_TABLE} SET schema_version = %s WHERE store_key = %s",
             [newer, store_id])
    with pytest.raises(MemoryStoreSchemaError, match="newer than this SDK") as info:
        make_store(memory_store_id=store_id, schema_policy=policy)
    assert f"schema version {newer}" in str(info.value)
    registry = _registry(pg_url, store_id)
    assert registry is not None and registry["schema_version"] == newer


# --- policy values --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "policy", [p.value for p in SchemaPolicy if p is not SchemaPolicy.NO_CHECK])
def test_plain_string_policies_are_accepted(make_store: StoreFactory, policy: str) -> None:
    created = make_store()
    created.add(["before"], record_type="memory", record_ids="m1")
    store = make_store(memory_store_id=created._names.store_key, schema_policy=policy)
    kept = store.get("memory", "m1") is not None
    assert kept is (policy != "recreate")


def test_plain_string_no_check_is_parsed_as_no_check(make_store: StoreFactory) -> None:
    created = make_store()
    with pytest.raises(RuntimeError, match="NO_CHECK"):
        make_store(memory_store_id=created._names.store_key, schema_policy="no_check")


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_plain_string_create_if_necessary_creates_the_store(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = new_store_id()
    make_store(memory_store_id=store_id, schema_policy="create_if_necessary")
    assert _tables(pg_url, store_id) == set(MANAGED_TABLES)


@pytest.mark.parametrize("policy", ["create", "require-existing", "", "no check"])
def test_unknown_policy_string_is_rejected(pg_url: str, policy: str) -> None:
    store_id = new_store_id()
    with pytest.raises(ValueError, match="schema_policy"):
        OracleDBMemoryStore(None, pg_url, schema_policy=policy,
                            memory_store_id=store_id)
    assert _tables(pg_url, store_id) == set()


# --- concurrency ----------------------------------------------------------------------------
def _run_at_once(count: int, action: Callable[[], object]) -> list[BaseException]:
    """Run ``action`` in ``count`` threads released together; return the errors raised."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def worker() -> None:
        barrier.wait()
        try:
            action()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.parametrize("vector_dim", [None, 3])
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_concurrent_create_if_necessary_on_a_new_store_all_succeed(
    make_store: StoreFactory, pg_url: str, vector_dim: int | None
) -> None:
    store_id = new_store_id()
    errors = _run_at_once(
        4, lambda: make_store(memory_store_id=store_id, vector_dim=vector_dim)
    )
    assert errors == []
    assert _tables(pg_url, store_id) == set(MANAGED_TABLES)
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(f"SELECT count(*) FROM {REGISTRY_TABLE} WHERE store_key = %s",
                           [store_id]).fetchone()
    assert row is not None and row[0] == 1
    store = make_store(memory_store_id=store_id, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert store.vector_dim == vector_dim


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_upgrading_to_version_4_puts_the_owner_into_every_key(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = new_store_id()
    _create_at_version(pg_url, store_id, 3, vector_dim=3)
    link = f"{store_id}_memory_link"
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"INSERT INTO {store_id}_memory (id, record_type, user_id, content) VALUES "
                     "('a1', 'memory', 'alice', 'x'), ('a2', 'memory', 'alice', 'y'), "
                     "('g1', 'memory', NULL, 'z')")
        conn.execute(f"INSERT INTO {link} (id, source_id, source_type, target_id, target_type, "
                     "relation_type, opposite_relation_type) VALUES "
                     "('r1', 'a1', 'memory', 'a2', 'memory', 'related', 'related'), "
                     "('r2', 'g1', 'memory', 'a2', 'memory', 'related', 'related')")

    upgraded = make_store(memory_store_id=store_id,
                          schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)

    assert upgraded.schema_version == LATEST_SCHEMA_VERSION >= 4
    with psycopg.connect(pg_url) as conn:
        owners = conn.execute(f"SELECT id, user_id FROM {link} ORDER BY id").fetchall()
        foreign = conn.execute("SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass "
                               "AND contype IN ('f', 'p')", [link]).fetchone()
    assert owners == [("r1", "alice"), ("r2", "alice")]  # a global endpoint keeps the user's
    assert foreign == (0,)
    # The same id is now free for another owner, and still taken for the same one.
    upgraded.add(["bob's a1"], "memory", record_ids="a1", user_ids="bob")
    with pytest.raises(ValueError, match="already exists"):
        upgraded.add(["again"], "memory", record_ids="a1", user_ids="alice")
    assert [r.id for r in upgraded.list_relations()] == ["r1", "r2"]
    upgraded.delete("memory", "a2")  # deleting a memory deletes its links (no foreign keys)
    assert upgraded.list_relations() == []


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_upgrading_to_version_5_moves_the_embeddings_into_the_scope_index(
    make_store: StoreFactory, pg_url: str
) -> None:
    store_id = new_store_id()
    _create_at_version(pg_url, store_id, 4, vector_dim=3)
    chunks = f"{store_id}_record_chunks"
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"INSERT INTO {store_id}_memory (id, record_type, user_id, content) VALUES "
                     "('a1', 'memory', 'alice', 'x'), ('a2', 'memory', 'alice', 'y'), "
                     "('b1', 'memory', 'bob', 'z')")
        conn.execute(f"INSERT INTO {chunks} (record_type, record_id, chunk_no, chunk_text, "
                     "user_id, embedding) VALUES ('memory', 'a1', 0, 'x', 'alice', '[1,0,0]'), "
                     "('memory', 'a2', 0, 'y', 'alice', '[0,1,0]'), "
                     "('memory', 'b1', 0, 'z', 'bob', '[1,0.1,0]')")

    def indexes() -> dict[str, str]:
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s",
                                [chunks]).fetchall()
        return {str(name): str(definition) for name, definition in rows}

    assert f"{store_id}_record_chunks_scope_ix" in indexes()  # the version-4 layout
    upgraded = make_store(memory_store_id=store_id,
                          schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)

    assert upgraded.schema_version == LATEST_SCHEMA_VERSION >= 5
    after = indexes()
    assert "INCLUDE (record_id, embedding)" in after[f"{store_id}_record_chunks_vector_scope_ix"]
    assert f"{store_id}_record_chunks_scope_ix" not in after
    found = upgraded.search(None, 2, query_vector=[1.0, 0.0, 0.0], user_id="alice",
                            exact_user_match=True, record_types={"memory"})
    assert [record.id for record, _ in found] == ["a1", "a2"]  # bob's b1 is nearer than a2
