"""The per-backend cache of verified assertions, attacked and revoked.

``oam_sec.apply_assertion`` verifies an assertion once per backend and records the result in
``oam_sec.session_cache``; the policies look the current assertion up there. These tests check
that the cache cannot be read across backends, written by the runtime, imitated in the runtime's
own temporary schema, or outlive a revoke, a dropped end user or its expiry.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from dds import OWNER, POLICIES
from oam_policies import SHIPPED_POLICIES
from oracleagentmemory.core.deepsec import (
    LocalEndUserPrincipal,
    grant_agent_memory_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.engines.identifiers import store_names
from oracleagentmemory.engines.postgres import deepsec_admin
from oracleagentmemory.engines.postgres.security_schema import CACHE_LIMIT
from psycopg import errors, sql

APPLY = "SELECT oam_sec.apply_assertion(%s)"
_users = itertools.count(1)


def memory_count(conn: psycopg.Connection[Any], store_id: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
        sql.Identifier(OWNER, f"{store_id}_memory"))).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def granted_user(dds: Any) -> Iterator[tuple[str, str]]:
    """A fresh local end user granted both policies on a fresh store holding 3 of their
    memories; yields ``(store_id, user)`` and drops the user afterwards."""
    user = f"cache_user_{next(_users)}"
    store_id = dds.new_store()
    with psycopg.connect(dds.secadmin_url) as conn:
        with conn.transaction():
            deepsec_admin.create_end_user(conn, user)
        grant_agent_memory_policies(conn, store_id, OWNER, [LocalEndUserPrincipal(user)],
                                    POLICIES)
    owner = dds.owner_store(store_id)
    try:
        owner.add(["one", "two", "three"], "memory", user_ids=[user] * 3)
    finally:
        owner.close()
    yield store_id, user
    with psycopg.connect(dds.secadmin_url) as conn, conn.transaction():
        deepsec_admin.drop_end_user(conn, user)


def test_a_revoke_takes_effect_at_the_next_statement(dds: Any,
                                                     granted_user: tuple[str, str]) -> None:
    store_id, user = granted_user
    with psycopg.connect(dds.runtime_url) as conn:
        assert conn.execute(APPLY, [dds.context(user).assertion()]).fetchone() == (user,)
        assert memory_count(conn, store_id) == 3
        with psycopg.connect(dds.secadmin_url) as admin:
            revoke_agent_memory_policies(admin, store_id, OWNER, [LocalEndUserPrincipal(user)],
                                         POLICIES)
        # Same transaction, same (cached) assertion: the grants changed, so it counts no more.
        assert memory_count(conn, store_id) == 0
        conn.rollback()
        # Applied again, it is verified again: the user exists but holds no data role.
        assert conn.execute(APPLY, [dds.context(user).assertion()]).fetchone() == (user,)
        assert memory_count(conn, store_id) == 0


def test_a_dropped_end_user_is_refused_at_the_next_statement(
        dds: Any, granted_user: tuple[str, str]) -> None:
    store_id, user = granted_user
    with psycopg.connect(dds.runtime_url) as conn:
        assertion = dds.context(user).assertion()
        assert conn.execute(APPLY, [assertion]).fetchone() == (user,)
        assert memory_count(conn, store_id) == 3
        with psycopg.connect(dds.secadmin_url) as admin, admin.transaction():
            deepsec_admin.drop_end_user(admin, user)
        assert memory_count(conn, store_id) == 0
        conn.rollback()
        assert conn.execute(APPLY, [assertion]).fetchone() == (None,)
        assert memory_count(conn, store_id) == 0


def test_an_unrelated_grant_change_only_costs_a_new_verification(
        dds: Any, granted_user: tuple[str, str]) -> None:
    store_id, user = granted_user
    with dds.runtime_store(store_id, user) as store:
        assert len(store.list("memory")) == 3
        with psycopg.connect(dds.secadmin_url) as admin, admin.transaction():
            deepsec_admin.create_end_user(admin, f"{user}_other")
            deepsec_admin.drop_end_user(admin, f"{user}_other")
        assert len(store.list("memory")) == 3


def test_the_session_view_shows_only_the_current_assertion(dds: Any) -> None:
    def seen(conn: psycopg.Connection[Any]) -> set[str]:
        return {r[0] for r in conn.execute(
            "SELECT username FROM oam_sec.session_end_user").fetchall()}

    with psycopg.connect(dds.runtime_url) as conn, psycopg.connect(dds.runtime_url) as other:
        assert other.execute(APPLY, [dds.context("carol").assertion()]).fetchone() == ("carol",)
        assert conn.execute(APPLY, [dds.context("alice").assertion()]).fetchone() == ("alice",)
        conn.commit()
        # Earlier users of the same backend (alice) and other backends' (carol) stay hidden.
        assert conn.execute(APPLY, [dds.context("bob").assertion()]).fetchone() == ("bob",)
        assert seen(conn) == {"bob"}  # positive control: the current assertion's row
        conn.commit()
        assert seen(conn) == set()
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("SELECT count(*) FROM oam_sec.session_cache")


@pytest.mark.parametrize("statement", [
    "INSERT INTO oam_sec.session_cache VALUES (pg_backend_pid(), sha256('x'::bytea), 'bob', "
    "ARRAY['x'], now() + interval '1 hour', 1)",
    "UPDATE oam_sec.session_cache SET username = 'bob'",
    "DELETE FROM oam_sec.session_cache",
    "UPDATE oam_sec.session_end_user SET username = 'bob'",
    "INSERT INTO oam_sec.session_end_user VALUES (sha256('x'::bytea), 'bob', ARRAY['x'], "
    "now() + interval '1 hour', 1)",
    "UPDATE oam_sec.grants_version SET version = 1",
    "SELECT oam_sec.verify_assertion()",
])
def test_the_runtime_cannot_write_the_cache(dds: Any, statement: str) -> None:
    with psycopg.connect(dds.runtime_url) as conn:
        conn.execute(APPLY, [dds.context("alice").assertion()])
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(statement)


def test_look_alike_cache_objects_in_the_temporary_schema_are_ignored(
        dds: Any, granted_user: tuple[str, str]) -> None:
    """The policies name ``oam_sec`` objects with their schema: a temporary table or function
    with the same name, first on the search_path, changes nothing."""
    store_id, user = granted_user
    names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=OWNER,
                        fold="lower")
    role = deepsec_admin.data_role_name(names, OWNER, SHIPPED_POLICIES["own_user_rows"])
    forged = dds.context(user).assertion().replace("0", "1", 1)
    with psycopg.connect(dds.runtime_url) as conn:
        conn.execute("CREATE TEMPORARY TABLE session_end_user AS SELECT sha256(convert_to("
                     "%s::text, 'UTF8')) AS digest, %s::text AS username, ARRAY[%s::text] AS "
                     "data_roles, now() + interval '1 hour' AS expires_at, 1::bigint AS "
                     "grants_version", [forged, user, role])
        conn.execute("CREATE TEMPORARY TABLE grants_version AS SELECT 1::bigint AS version")
        conn.execute("SET search_path = pg_temp, oam_sec, public")
        conn.execute("SELECT set_config('oam.end_user_assertion', %s, true)", [forged])
        assert memory_count(conn, store_id) == 0
        assert conn.execute("SELECT oam_sec.end_user()").fetchone() == (None,)


def test_the_cache_of_a_backend_is_bounded(dds: Any) -> None:
    context = dds.context("alice")
    with psycopg.connect(dds.runtime_url) as conn, psycopg.connect(dds.superuser_url) as su:
        pid = conn.info.backend_pid
        for n in range(CACHE_LIMIT + 10):
            assert conn.execute(APPLY, [context.assertion(now=time.time() + n / 1000)]
                                ).fetchone() == ("alice",)
        conn.commit()
        row = su.execute("SELECT count(*) FROM oam_sec.session_cache WHERE pid = %s",
                         [pid]).fetchone()
        assert row is not None and 0 < row[0] <= CACHE_LIMIT


def test_a_context_reuses_its_signed_assertion_for_half_its_lifetime(dds: Any) -> None:
    """Reusing the assertion lets the database find it verified; it is re-signed while it still
    has half its lifetime left, so no operation starts with an assertion about to expire."""
    context = dataclasses.replace(dds.context("alice"), lifetime_seconds=2)
    first = context.assertion()
    assert context.assertion() == first
    assert context.assertion(now=time.time()) != first  # an explicit time signs afresh
    time.sleep(1.1)
    second = context.assertion()
    assert second != first
    with psycopg.connect(dds.runtime_url) as conn:
        assert conn.execute(APPLY, [second]).fetchone() == ("alice",)


def test_generic_plans_are_forced_only_inside_a_context_transaction(
        dds: Any, granted_user: tuple[str, str]) -> None:
    """Under row-level security the engine forces generic plans, for its own transaction only:
    the pooled connection comes back with the server's default."""
    store_id, user = granted_user
    with psycopg.connect(dds.runtime_url, autocommit=True) as conn:
        with dds.runtime_store(store_id, user, pool=conn) as store:
            assert len(store.list("memory")) == 3
            with store._engine.session(store._names, store._security()) as session:
                shown = session.conn.execute("SHOW plan_cache_mode").fetchone()
                assert shown == ("force_generic_plan",)
        assert conn.execute("SHOW plan_cache_mode").fetchone() == ("auto",)
        assert conn.execute("SHOW oam.end_user_assertion").fetchone() == ("",)
