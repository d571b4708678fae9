"""Errors the public API raises are typed; no raw driver error escapes; a database that is
down is reported within the connection bound, once."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conftest import new_store_id
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.engines.postgres.driver_errors import translate
from oracleagentmemory.errors import (
    DatabaseUnavailableError,
    DuplicateRecordError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MemoryStoreSchemaError,
    NotPermittedError,
    OracleAgentMemoryError,
    RecordNotFoundError,
)

BOUND_SLACK = 3.0
"""Seconds allowed above the connection bound (interpreter, libpq, a loaded machine)."""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server that accepts connections and never answers (a hung database)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def test_a_database_that_refuses_connections_is_reported_once_and_fast(
        caplog: pytest.LogCaptureFixture) -> None:
    url = f"postgresql://nobody@127.0.0.1:{_closed_port()}/oam"
    caplog.set_level(logging.DEBUG)
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailableError, match="oam-admin db start") as raised:
        OracleDBMemoryStore(None, url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    assert time.monotonic() - started < 5.0 + BOUND_SLACK
    assert isinstance(raised.value, RuntimeError) and raised.value.code == "database_unavailable"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    # No pool retried in the background, logging every attempt.
    assert [r for r in caplog.records if r.name.startswith("psycopg")] == []


def test_a_hung_database_is_reported_within_the_configured_bound(
        silent_server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAM_CONNECT_TIMEOUT", "1")
    url = f"postgresql://nobody@127.0.0.1:{silent_server}/oam"
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailableError, match="within 1 s"):
        OracleDBMemoryStore(None, url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    assert time.monotonic() - started < 1.0 + BOUND_SLACK


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_the_connection_bound_must_be_a_positive_number(
        value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAM_CONNECT_TIMEOUT", value)
    with pytest.raises(InvalidArgumentError, match="OAM_CONNECT_TIMEOUT"):
        OracleDBMemoryStore(None, f"postgresql://nobody@127.0.0.1:{_closed_port()}/oam",
                            schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)


def test_argument_errors_are_typed_and_name_their_argument(pg_url: str) -> None:
    store = OracleDBMemoryStore(None, pg_url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id=new_store_id(), vector_dim=3)
    try:
        with pytest.raises(InvalidArgumentError) as bad_value:
            store.search(None, 3, query_vector=[0.0, 0.0, 0.0])
        assert isinstance(bad_value.value, ValueError)
        assert bad_value.value.code == "invalid_argument"
        with pytest.raises(InvalidArgumentTypeError) as bad_type:
            store.search("hello", "three")  # type: ignore[arg-type]
        assert isinstance(bad_type.value, TypeError)
        store.add(["first"], "memory", record_ids="m1")
        with pytest.raises(DuplicateRecordError) as duplicate:
            store.add(["again"], "memory", record_ids="m1")
        assert isinstance(duplicate.value, ValueError)
        assert duplicate.value.record_id == "m1" and duplicate.value.code == "duplicate_record"
        assert duplicate.value.__cause__ is None  # the driver's error stays inside the SDK
    finally:
        store.close()


def test_a_write_the_policies_refuse_is_not_permitted(
        dds: Any, caplog: pytest.LogCaptureFixture) -> None:
    store_id = dds.new_store()
    caplog.set_level(logging.WARNING, logger="psycopg")
    with dds.runtime_store(store_id, "alice") as store:
        with pytest.raises(NotPermittedError, match="no data role of this memory store") \
                as refused:
            store.add(["planted"], "memory", user_ids="bob", record_ids="x1")
        assert store_id not in str(refused.value) and "row-level" not in str(refused.value)
        # The refusal is reported once, as the error: no "pipeline aborted" warning repeats it.
        assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg")] == []
        assert isinstance(refused.value, RuntimeError) and refused.value.code == "not_permitted"
        assert isinstance(refused.value.__cause__, psycopg.errors.InsufficientPrivilege)
        # Positive control: the same write for alice herself is allowed.
        assert store.add(["mine"], "memory", record_ids="x1") == ["x1"]


ROW_SECURITY_REFUSALS = {
    "insert": "INSERT INTO rls_shapes VALUES (2, 'theirs')",
    "update": "UPDATE rls_shapes SET owner = 'theirs' WHERE id = 1",
    "upsert": "INSERT INTO rls_shapes VALUES (3, 'mine') ON CONFLICT (id) DO UPDATE "
              "SET owner = 'mine'",
}
"""Statements a policy refuses, one of each way PostgreSQL words it (``new row violates
row-level security policy [(USING expression)] for table ...``)."""


@pytest.mark.parametrize("statement", ROW_SECURITY_REFUSALS.values(),
                         ids=ROW_SECURITY_REFUSALS.keys())
def test_every_row_security_refusal_says_no_data_role_allows_it(dds: Any, statement: str) -> None:
    # The store's own policies leave no updatable column in a predicate (an update or delete
    # outside them changes no row); a table of the owner's with a policy it is forced to obey
    # produces the update shapes as well.
    table = f"rls_shapes_{new_store_id()}"
    with psycopg.connect(dds.owner_url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, owner text)".encode())
        try:
            conn.execute(f"INSERT INTO {table} VALUES (1, 'mine'), (3, 'theirs')".encode())
            conn.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY".encode())
            conn.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY".encode())
            conn.execute(f"CREATE POLICY sel ON {table} FOR SELECT USING (true)".encode())
            conn.execute(f"CREATE POLICY ins ON {table} FOR INSERT "
                         f"WITH CHECK (owner = 'mine')".encode())
            conn.execute(f"CREATE POLICY upd ON {table} FOR UPDATE USING (owner = 'mine') "
                         f"WITH CHECK (owner = 'mine')".encode())
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as driver_error:
                conn.execute(statement.replace("rls_shapes", table).encode())
            assert table in str(driver_error.value)  # what the driver says names the table
            refused = translate(driver_error.value)
            assert isinstance(refused, NotPermittedError)
            assert str(refused) == ("no data role of this memory store granted to the end user "
                                    "(directly or through one of their groups) allows this write")
            # Positive control: a row the policy allows is written.
            assert conn.execute(f"UPDATE {table} SET owner = 'mine' WHERE id = 1".encode()
                                ).rowcount == 1
        finally:
            conn.execute(f"DROP TABLE {table}".encode())


def test_a_wrong_store_id_under_no_check_is_a_schema_error(dds: Any) -> None:
    dds.new_store()
    with dds.runtime_store("nosuchstore", "alice") as store, \
            pytest.raises(MemoryStoreSchemaError, match="memory_store_id") as missing:
        store.list("memory")
    assert isinstance(missing.value, RuntimeError)
    assert isinstance(missing.value.__cause__, psycopg.errors.UndefinedTable)


def test_every_sdk_error_has_a_distinct_stable_code() -> None:
    import oracleagentmemory.errors as errors

    classes = [getattr(errors, name) for name in errors.__all__]
    assert all(issubclass(c, OracleAgentMemoryError) for c in classes)
    codes = [c.code for c in classes]
    assert len(codes) == len(set(codes))


def test_a_relation_to_a_missing_record_names_it(pg_url: str) -> None:
    store = OracleDBMemoryStore(None, pg_url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id=new_store_id())
    try:
        store.add(["here"], "memory", record_ids="m1")
        with pytest.raises(RecordNotFoundError) as missing:
            store.add_relations("m1", "memory", "ghost", "memory", "supports")
        assert isinstance(missing.value, ValueError)
        assert (missing.value.record_id, missing.value.record_type) == ("ghost", "memory")
        assert missing.value.argument == "target_record_ids[0]"
        # Positive control: the same call between existing memories works.
        store.add(["there"], "memory", record_ids="m2")
        assert len(store.add_relations("m1", "memory", "m2", "memory", "supports")) == 1
    finally:
        store.close()


@pytest.mark.parametrize("where", ["content", "metadata value", "metadata key"])
def test_a_nul_character_is_an_invalid_argument_not_a_database_error(
        store: OracleDBMemoryStore, where: str) -> None:
    content, metadata = "ok", {"k": "v"}
    if where == "content":
        content = "a\x00b"
    elif where == "metadata value":
        metadata = {"k": "a\x00b"}
    else:
        metadata = {"a\x00b": "v"}
    store.add(["positive control"], "memory", metadata={"k": "v"})  # the same call works
    with pytest.raises(InvalidArgumentError, match="NUL"):
        store.add([content], "memory", metadata=metadata)
    assert [r.content for r in store.list("memory")] == ["positive control"]
