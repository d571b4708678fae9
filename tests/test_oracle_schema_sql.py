"""The Oracle engine's schema lifecycle statements (``engines/oracle/schema_sql.py``), offline.

Each statement is pinned by a reviewed golden file (``tests/golden/oracle_engine/schema/``,
rewritten with ``OAM_UPDATE_GOLDEN=1``). SQL statements are parsed with sqlglot's Oracle
dialect; the two PL/SQL blocks (``DBMS_LOCK``), which sqlglot does not parse, are checked by a
strict pattern. Bind names in the text and in the bind mapping must agree exactly.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.engines.identifiers import MANAGED_TABLES
from oracleagentmemory.engines.interfaces import RegistryRow
from oracleagentmemory.engines.oracle import schema_sql
from oracleagentmemory.engines.oracle.ddl import DEFAULT_STORE_KEY
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from oracleagentmemory.engines.oracle.statement import Statement
from sqlglot import exp

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine" / "schema"
ROW = RegistryRow(schema_version=1, search_mode="vector", vector_dim=384, default_ttl_days=30,
                  max_ttl_days=None, search_index_sync="on_commit")


def objects(store: str | None = "st") -> OracleObjects:
    return OracleObjects.of(derive_store_names(
        memory_store_id=store, table_name_prefix=None, schema_owner="oam_owner"))


def statements(o: OracleObjects) -> list[Statement]:
    return [schema_sql.lock_store(o), schema_sql.unlock_store(o), schema_sql.current_schema(),
            schema_sql.existing_tables(o)[0], schema_sql.read_registry(o),
            schema_sql.embedding_probe(o), schema_sql.outside_end_user_session(),
            schema_sql.index_exists(o, "record_chunks_hnsw_ix"),
            schema_sql.write_registry(o, ROW), *schema_sql.drop_tables(o),
            schema_sql.delete_registry_row(o)]


def rendered(o: OracleObjects) -> list[str]:
    return [f"{s.sql}\n-- binds: {sorted(s.binds.items())!r}" for s in statements(o)]


@pytest.mark.parametrize("store", ["st", None])
def test_statements_match_the_reviewed_golden_file(store: str | None) -> None:
    name = "named_store" if store else "default_store"
    assert_matches_golden(GOLDEN / f"{name}.sql", golden_text(
        "Oracle schema lifecycle statements", name, "oracleagentmemory.engines.oracle.schema_sql",
        "tests/test_oracle_schema_sql.py", rendered(objects(store))))


PLSQL_LOCK = re.compile(
    r"DECLARE r INTEGER; BEGIN r := SYS\.DBMS_LOCK\.(?:REQUEST\(id => :lock_id, lockmode => "
    r"SYS\.DBMS_LOCK\.X_MODE, timeout => :timeout, release_on_commit => FALSE\); IF r NOT IN "
    r"\(0, 4\) THEN RAISE_APPLICATION_ERROR\(-20101, '[^']*' \|\| r \|\| '\)'\); END IF; END;"
    r"|RELEASE\(id => :lock_id\); END;)")
BIND = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


def test_every_statement_parses_and_binds_exactly_what_it_names() -> None:
    parsed = 0
    for statement in statements(objects()):
        sql, binds = statement.sql, statement.binds
        assert set(BIND.findall(re.sub(r"'[^']*'", "''", sql))) == set(binds), sql
        if sql.startswith("DECLARE"):
            assert PLSQL_LOCK.fullmatch(sql), sql
            continue
        tree = sqlglot.parse_one(sql, read="oracle")
        assert not isinstance(tree, exp.Command), sql
        parsed += 1
    assert parsed == len(statements(objects())) - 2


def test_the_lock_id_is_stable_per_store_and_in_the_user_range() -> None:
    ids = {schema_sql.lock_id(objects(s)) for s in ("st", "other", None)}
    assert len(ids) == 3
    assert all(0 <= i < schema_sql.LOCK_ID_RANGE for i in ids)
    assert schema_sql.lock_id(objects("st")) == schema_sql.lock_id(objects("st"))
    other_owner = OracleObjects.of(derive_store_names(
        memory_store_id="st", table_name_prefix=None, schema_owner="someone_else"))
    assert schema_sql.lock_id(other_owner) != schema_sql.lock_id(objects("st"))


def test_the_table_lookup_names_every_managed_table_and_the_registry() -> None:
    statement, lookup = schema_sql.existing_tables(objects())
    binds = statement.binds
    assert sorted(v for v in lookup.values() if v) == sorted(MANAGED_TABLES)
    assert lookup["AGENT_MEMORY_STORE_REGISTRY"] == ""
    assert binds["owner"] == "OAM_OWNER"
    assert {v for k, v in binds.items() if k != "owner"} == set(lookup)
    assert all(name.isupper() for name in lookup)


def test_the_default_store_is_keyed_by_a_non_empty_key() -> None:
    # Oracle reads '' as NULL, which a primary key refuses.
    binds = schema_sql.write_registry(objects(None), ROW).binds
    assert binds["store_key"] == DEFAULT_STORE_KEY
    named = schema_sql.write_registry(objects("st"), ROW).binds
    assert named["store_key"] == "ST"  # store keys fold upper, like every Oracle name


def test_a_dropped_store_leaves_nothing_in_the_recycle_bin() -> None:
    drops = schema_sql.drop_tables(objects())
    assert len(drops) == len(MANAGED_TABLES)
    assert all(s.sql.endswith(" CASCADE CONSTRAINTS PURGE") and not s.binds for s in drops)
