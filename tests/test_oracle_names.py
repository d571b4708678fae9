"""Oracle identifier rules (``engines/oracle/names.py``), without a database."""

from __future__ import annotations

import re

import pytest
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, store_names
from oracleagentmemory.engines.oracle import ddl
from oracleagentmemory.engines.oracle.names import (
    MAX_IDENTIFIER_BYTES,
    RESERVED_WORDS,
    OracleObjects,
    derive_store_names,
    normalise,
    qualified,
    quote,
)
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


def objects(store: str | None = "st", owner: str | None = "oam_owner",
            session_user: str | None = None) -> OracleObjects:
    names = derive_store_names(memory_store_id=store, table_name_prefix=None,
                               schema_owner=owner)
    return OracleObjects.of(names, session_user)


def test_lower_case_is_upper_cased_and_quoted() -> None:
    assert normalise("st_memory") == "ST_MEMORY"
    assert quote("Oam_Owner") == '"OAM_OWNER"'
    assert qualified("oam_owner", "st_memory") == '"OAM_OWNER"."ST_MEMORY"'
    assert quote("a$b#c_1") == '"A$B#C_1"'


@pytest.mark.parametrize("bad", [
    "", "1abc", "_abc", "$abc", "a b", "a-b", 'a"b', "a.b", "a;b", "a'b", "émile", "a\x00b",
    "a/*", "ST_MEMORY\" DROP TABLE X --",
])
def test_bad_characters_are_refused(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        quote(bad)


def test_non_strings_are_refused_with_a_type_error() -> None:
    with pytest.raises(InvalidArgumentTypeError):
        quote(42)


def test_the_128_byte_limit() -> None:
    assert quote("a" * MAX_IDENTIFIER_BYTES) == '"' + "A" * 128 + '"'
    with pytest.raises(InvalidArgumentError):
        quote("a" * (MAX_IDENTIFIER_BYTES + 1))


def test_reserved_words_are_valid_names_once_quoted() -> None:
    assert {"USER", "LEVEL", "SELECT", "TABLE"} <= RESERVED_WORDS
    assert quote("user") == '"USER"'
    assert qualified("level", "select") == '"LEVEL"."SELECT"'


def test_store_names_follow_the_postgresql_derivation_upper_cased() -> None:
    """The same ``StoreNames`` derivation as PostgreSQL, with Oracle's fold and limit."""
    o = objects()
    assert o.owner == "OAM_OWNER"
    assert o.names.store_key == "ST" and o.names.table_prefix == "ST_"
    for logical in MANAGED_TABLES:
        assert o.table(logical) == f'"OAM_OWNER"."ST_{logical.upper()}"'
        lower = store_names(memory_store_id="st", table_name_prefix=None,
                            schema_owner="oam_owner", fold="lower")
        assert lower.table(logical).upper() == o.names.table(logical).upper()
    assert o.registry() == '"OAM_OWNER"."AGENT_MEMORY_STORE_REGISTRY"'
    assert o.index("record_chunks_hnsw_ix") == '"OAM_OWNER"."ST_RECORD_CHUNKS_HNSW_IX"'
    assert o.object_name("record_chunks_text_ix") == "ST_RECORD_CHUNKS_TEXT_IX"


def test_the_default_store_and_a_prefix() -> None:
    default = objects(store=None)
    assert default.table("memory") == '"OAM_OWNER"."MEMORY"'
    assert ddl.registry_key(default) == ddl.DEFAULT_STORE_KEY
    prefixed = OracleObjects.of(derive_store_names(
        memory_store_id=None, table_name_prefix="app_", schema_owner="o"))
    assert prefixed.table("thread") == '"O"."APP_THREAD"'
    assert ddl.registry_key(prefixed) == "APP_"


def test_every_reference_is_schema_qualified_even_without_schema_owner() -> None:
    """End-user sessions run as XS$NULL: the session user becomes the explicit owner."""
    with pytest.raises(InvalidArgumentError):
        objects(owner=None)
    o = objects(owner=None, session_user="app_owner")
    assert o.table("memory") == '"APP_OWNER"."ST_MEMORY"'
    with pytest.raises(InvalidArgumentError):
        objects(owner=None, session_user='bad"owner')


def test_overlong_store_names_are_refused() -> None:
    with pytest.raises(InvalidArgumentError):
        derive_store_names(memory_store_id=None, table_name_prefix="p" * 120, schema_owner="o")


def test_no_managed_column_is_a_reserved_word() -> None:
    """Columns are written unquoted in the DDL: none may be an Oracle reserved word."""
    from oracleagentmemory.engines.interfaces import SchemaOptions
    statements = ddl.create_store(objects(), SchemaOptions(8, "vector", "on_commit", None, None))
    statements.append(ddl.registry_table(objects()))
    columns: set[str] = set()
    for statement in statements:
        if statement.startswith("CREATE TABLE"):
            body = statement[statement.index("(") + 1:]
            for part in re.split(r",\s*(?![^()]*\))", body):
                match = re.match(r"\s*([a-z_][a-z0-9_]*)\s", part)
                if match:
                    columns.add(match.group(1).upper())
    assert {"ID", "USER_ID", "CONTENT", "ROLE", "BYTES", "EMBEDDING"} <= columns
    assert not columns & RESERVED_WORDS, columns & RESERVED_WORDS
