"""The Oracle half of ``tests/stored_rows.py``, checked offline: no Oracle database runs here.

Each statement the Oracle reader runs must parse with sqlglot's Oracle dialect, name the
store's table quoted and schema-qualified (an owner's session sees no other schema's
unqualified names), and take its values as binds. The PostgreSQL half runs for real in the
suites that read through it (``test_write_semantics.py``, ``test_record_api.py``,
``test_ttl.py``, ``test_chunking.py``, ``test_spec_examples.py``).
"""

from __future__ import annotations

import pytest
import sqlglot
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from sqlglot import exp
from stored_rows import (
    open_stored_rows,
    oracle_chunks_sql,
    oracle_count_sql,
    oracle_registry_sql,
    oracle_timestamps_sql,
)

OBJECTS = OracleObjects.of(derive_store_names(memory_store_id="t42_7", table_name_prefix=None,
                                              schema_owner=None), "oam_owner")


def parse(statement: str) -> exp.Select:
    parsed = sqlglot.parse_one(statement, read="oracle")
    assert isinstance(parsed, exp.Select), statement
    return parsed


def tables(parsed: exp.Select) -> set[tuple[str, str]]:
    return {(t.db, t.name) for t in parsed.find_all(exp.Table)}


def binds(parsed: exp.Select) -> set[str]:
    return {p.name for p in parsed.find_all(exp.Placeholder)}


@pytest.mark.parametrize("with_vector", [True, False])
def test_the_chunk_query_reads_the_qualified_chunk_table_by_a_bound_record_id(
        with_vector: bool) -> None:
    statement = oracle_chunks_sql(OBJECTS, with_vector)
    parsed = parse(statement)
    assert tables(parsed) == {("OAM_OWNER", "T42_7_RECORD_CHUNKS")}
    assert '"OAM_OWNER"."T42_7_RECORD_CHUNKS"' in statement
    assert binds(parsed) == {"id"}
    assert len(parsed.expressions) == 5
    assert ("embedding" in statement) is with_vector


def test_the_count_query_binds_every_value() -> None:
    parsed = parse(oracle_count_sql(OBJECTS, "memory", ["thread_id", "user_id"]))
    assert tables(parsed) == {("OAM_OWNER", "T42_7_MEMORY")}
    assert binds(parsed) == {"v0", "v1"}
    columns = {c.name for c in parsed.args["where"].find_all(exp.Column)}
    assert columns == {"THREAD_ID", "USER_ID"}
    unfiltered = parse(oracle_count_sql(OBJECTS, "message", []))
    assert binds(unfiltered) == set()


def test_the_timestamp_query_reads_utc_values_of_a_bound_row() -> None:
    parsed = parse(oracle_timestamps_sql(OBJECTS, "memory", ["created_at", "expires_at"]))
    assert tables(parsed) == {("OAM_OWNER", "T42_7_MEMORY")}
    assert binds(parsed) == {"id"}
    assert [e.sql(dialect="oracle") for e in parsed.expressions] == [
        'SYS_EXTRACT_UTC("CREATED_AT")', 'SYS_EXTRACT_UTC("EXPIRES_AT")']


def test_the_registry_query_reads_the_owners_registry_by_a_bound_key() -> None:
    parsed = parse(oracle_registry_sql(OBJECTS, ["default_ttl_days", "max_ttl_days"]))
    assert tables(parsed) == {("OAM_OWNER", "AGENT_MEMORY_STORE_REGISTRY")}
    assert binds(parsed) == {"key"}


def test_an_unknown_source_has_no_reader() -> None:
    with pytest.raises(TypeError, match="object"), open_stored_rows(object()):
        pass
