"""The Oracle engine behind the registry, with python-oracledb's real objects and no server.

No Oracle database is reachable here: these tests drive the engine through the driver's real
pool, connection-failure and context objects up to the point where a server would answer, and
check that the SDK's typed errors come out. Everything past that point (the statements) is
pinned by the golden-file tests ``tests/test_oracle_*.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import oracledb
import pytest
from local_ports import closed_port
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.embedders import HashingEmbedder
from oracleagentmemory.engines.interfaces import EngineSession
from oracleagentmemory.engines.oracle.engine import OracleEngine
from oracleagentmemory.engines.oracle.session import OracleSession
from oracleagentmemory.engines.registry import entry_for, make_engine, recognises_context
from oracleagentmemory.errors import DatabaseUnavailableError, InvalidArgumentTypeError


@pytest.fixture
def unreachable_pool() -> Iterator[oracledb.ConnectionPool]:
    pool = oracledb.create_pool(user="oam_app", password="not-used",
                                dsn=f"127.0.0.1:{closed_port()}/FREEPDB1", min=0, max=2,
                                increment=1, tcp_connect_timeout=2)
    yield pool
    pool.close(force=True)


def test_the_registry_gives_an_oracledb_pool_to_the_oracle_engine(
        unreachable_pool: oracledb.ConnectionPool) -> None:
    assert entry_for(unreachable_pool).name == "oracle"
    engine = make_engine(unreachable_pool)
    assert isinstance(engine, OracleEngine)
    assert engine.capabilities.identifier_fold == "upper"
    assert engine.capabilities.max_identifier_length == 128
    engine.close()
    assert unreachable_pool.opened == 0  # the engine never opened a connection by itself


def test_a_store_on_an_unreachable_database_raises_the_typed_unavailable_error(
        unreachable_pool: oracledb.ConnectionPool) -> None:
    with pytest.raises(DatabaseUnavailableError):
        OracleDBMemoryStore(HashingEmbedder(8), unreachable_pool,
                            schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                            memory_store_id="probe", schema_owner="oam_owner")


def test_the_engine_refuses_what_is_not_an_oracledb_pool_or_connection() -> None:
    with pytest.raises(InvalidArgumentTypeError):
        OracleEngine(object())


def test_an_async_pool_is_refused_with_the_way_to_the_async_methods() -> None:
    async def refused() -> str:
        pool = oracledb.create_pool_async(user="oam_app", password="not-used",
                                          dsn=f"127.0.0.1:{closed_port()}/FREEPDB1", min=0,
                                          max=1)
        try:
            with pytest.raises(InvalidArgumentTypeError) as refusal:
                OracleDBMemoryStore(None, pool, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                                    memory_store_id="probe", schema_owner="oam_owner")
            return str(refusal.value)
        finally:
            await pool.close()

    message = asyncio.run(refused())
    assert "AsyncConnectionPool" in message and "*_async methods" in message


def test_an_oracledb_context_is_recognised_and_a_foreign_object_is_not() -> None:
    context = oracledb.create_end_user_security_context(
        "header.payload.signature", end_user_identity=("ALICE", None))
    assert recognises_context(context)
    assert OracleEngine.recognises_context(context)
    assert not OracleEngine.recognises_context(object())
    assert not OracleEngine.recognises_context("ALICE")


def test_the_session_implements_every_engine_session_method() -> None:
    assert not getattr(OracleSession, "__abstractmethods__", frozenset())
    contract = {name for name in dir(EngineSession) if not name.startswith("_")}
    assert contract <= set(dir(OracleSession))
    overridden = {name for name in contract
                  if getattr(OracleSession, name) is not getattr(EngineSession, name)}
    assert overridden == {name for name in contract if callable(getattr(EngineSession, name))}
