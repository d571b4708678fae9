"""The attack review's findings (issue "Deep Data Security has holes"), each tried as an attacker.

Raw SQL runs as the runtime login with a valid context of alice, exactly as a compromised
gateway could; every probe has a positive control on alice's own rows (or without the defence)
showing the probe works, so no test can pass because its probe is broken.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from dds import (
    AUDIENCE,
    GROUP,
    IDP,
    ISSUER,
    OWNER,
    POLICIES,
    RUNTIME,
    TEST_PASSWORD,
    url_as,
)
from oam_policies import SHIPPED_POLICIES
from oracleagentmemory.apis import ScopedRecord
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import (
    EndUserContextError,
    IdentityProviderUser,
    OciGroupPrincipal,
    OracleMemoryEndUserSecurityContext,
    add_deep_data_security_policies,
    create_end_user_security_context,
    grant_agent_memory_policies,
)
from oracleagentmemory.devissuer import DevIssuer
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, store_names
from oracleagentmemory.engines.postgres import deepsec_admin
from oracleagentmemory.engines.postgres.assertion import ApplicationCredential
from oracleagentmemory.engines.postgres.security_schema import MAX_LIFETIME_SECONDS
from oracleagentmemory.errors import SecurityContextError
from psycopg import errors, sql
from psycopg_pool import ConnectionPool
from test_deepsec_attacks import APPLY, SET_BY_HAND, Seeded, seed

Conn = psycopg.Connection[Any]

LEAK_FUNCTION = (
    "CREATE OR REPLACE FUNCTION pg_temp.leak(r text) RETURNS boolean LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE NOTICE 'leak:%', r; RETURN true; END $$"
)
"""A leaky function in the temporary schema: it reports every row it is shown."""

# Per owned table: the columns of an INSERT alice may run, a row of bob's, a row of alice's.
CONFLICT_PROBES: dict[str, tuple[str, str, str, str]] = {
    "thread": ("id, user_id", "%s, 'alice'", "t-bob", "t-alice"),
    "thread_summary": (
        "id, user_id, content", "%s, 'alice', jsonb_build_object()", "s-bob", "s-alice"
    ),
    "message": ("id, user_id, content, seq_no", "%s, 'alice', 'x', 1000", "m-bob", "m-alice"),
    "document": ("id, user_id, description", "%s, 'alice', 'x'", "doc-bob", "doc-alice"),
    "memory": ("id, record_type, user_id, content", "%s, 'memory', 'alice', ''", "b1", "a1"),
    "memory_link": ("id, user_id, source_id, source_type, target_id, target_type, "
                    "relation_type, opposite_relation_type",
                    "%s, 'alice', 'a1', 'memory', 'a3', 'memory', 'related', 'related'",
                    "r-b1-b2", "r-a1-a2"),
}


@pytest.fixture(scope="module")
def seeded(dds: Any) -> Seeded:
    """Rows of alice, bob and global rows in every table (profiles of both)."""
    return seed(dds)


@contextmanager
def as_alice(dds: Any, notices: list[str] | None = None) -> Iterator[Conn]:
    """A runtime-login transaction in alice's context, rolled back at the end."""
    with psycopg.connect(dds.runtime_url) as conn:
        if notices is not None:
            conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        assert conn.execute(APPLY, [dds.context("alice").assertion()]).fetchone() == ("alice",)
        # Created inside the context: a session holding temp objects gets no assertion at all.
        conn.execute(LEAK_FUNCTION)
        try:
            yield conn
        finally:
            conn.rollback()


def leaked(notices: list[str], text: str) -> bool:
    return any(text in n for n in notices)


# --- finding 1: conflicts and existence checks only ever meet the caller's own rows ------------
def test_every_unique_key_contains_the_owner(dds: Any, seeded: Seeded) -> None:
    owner_column = {"actor_profile": "actor_id"}
    with psycopg.connect(dds.owner_url) as conn:
        for logical in MANAGED_TABLES:
            keys = conn.execute(
                "SELECT pg_get_indexdef(i.indexrelid), array(SELECT a.attname FROM "
                "unnest(i.indkey) k JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = k) FROM pg_index i WHERE i.indrelid = %s::regclass "
                "AND i.indisunique", [seeded.table(logical).as_string(conn)]).fetchall()
            assert keys, logical  # positive control: the probe finds the table's keys
            for definition, columns in keys:
                if logical == "record_chunks":
                    # An identity the runtime can never write, with the owner it is
                    # hash-partitioned by (schema version 9: a partitioned table's unique keys
                    # hold its partition key).
                    assert columns == ["id", "user_id"], definition
                else:
                    assert owner_column.get(logical, "user_id") in columns, definition
            foreign = conn.execute(
                "SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass "
                "AND contype = 'f'", [seeded.table(logical).as_string(conn)]).fetchone()
            assert foreign == (0,), logical


@pytest.mark.parametrize("logical", list(CONFLICT_PROBES))
def test_on_conflict_do_update_never_shows_another_users_row(dds: Any, seeded: Seeded,
                                                             logical: str) -> None:
    columns, values, bobs, alices = CONFLICT_PROBES[logical]
    statement = sql.SQL(
        "INSERT INTO {} AS x (" + columns + ") VALUES (" + values + ") ON CONFLICT (user_id, id) "
        "DO UPDATE SET metadata = EXCLUDED.metadata WHERE pg_temp.leak(x::text) "
        "RETURNING x.id, x.user_id, (x.xmax = 0) AS inserted").format(seeded.table(logical))
    notices: list[str] = []
    with as_alice(dds, notices) as conn:
        # bob's id: no conflict at all (ids are unique per owner); alice gets a row of her own.
        assert conn.execute(statement, [bobs]).fetchone() == (bobs, "alice", True)
        assert not leaked(notices, bobs)
        # Positive control: on alice's own id the conflict path runs and the probe leaks it.
        assert conn.execute(statement, [alices]).fetchone() == (alices, "alice", False)
        assert leaked(notices, alices)
    with as_alice(dds) as conn, pytest.raises(errors.InvalidColumnReference):
        # The old single-column key no longer exists to be used as an arbiter.
        conn.execute(sql.SQL(
            "INSERT INTO {} AS x (" + columns + ") VALUES (" + values + ") ON CONFLICT (id) "
            "DO NOTHING").format(seeded.table(logical)), [bobs])


@pytest.mark.parametrize("logical", list(CONFLICT_PROBES))
def test_on_conflict_do_nothing_does_not_tell_that_an_id_exists(dds: Any, seeded: Seeded,
                                                                logical: str) -> None:
    columns, values, bobs, alices = CONFLICT_PROBES[logical]
    statement = sql.SQL(
        "INSERT INTO {} (" + columns + ") VALUES (" + values + ") ON CONFLICT DO NOTHING "
        "RETURNING id").format(seeded.table(logical))
    with as_alice(dds) as conn:
        assert conn.execute(statement, [bobs]).fetchall() == [(bobs,)]
        assert conn.execute(statement, [alices]).fetchall() == []  # positive control
        with pytest.raises(errors.UniqueViolation):  # and a plain insert: her own only
            conn.execute(sql.SQL("INSERT INTO {} (" + columns + ") VALUES (" + values + ")")
                         .format(seeded.table(logical)), [alices])


def test_another_users_profile_key_cannot_even_be_proposed(dds: Any, seeded: Seeded) -> None:
    statement = sql.SQL(
        "INSERT INTO {} AS x (actor_type, actor_id, content) VALUES ('user', %s, 'x') "
        "ON CONFLICT (actor_type, actor_id) DO UPDATE SET content = x.content "
        "WHERE pg_temp.leak(x::text)").format(seeded.table("actor_profile"))
    notices: list[str] = []
    with as_alice(dds, notices) as conn:
        with pytest.raises(errors.InsufficientPrivilege), conn.transaction():
            conn.execute(statement, ["bob"])
        assert not leaked(notices, "profile of bob")
        conn.execute(statement, ["alice"])
        assert leaked(notices, "profile of alice")  # positive control


@pytest.mark.parametrize("logical", [*CONFLICT_PROBES, "actor_profile"])
def test_merge_never_matches_another_users_row(dds: Any, seeded: Seeded, logical: str) -> None:
    key = "actor_id" if logical == "actor_profile" else "id"
    bobs, alices = ("bob", "alice") if logical == "actor_profile" else CONFLICT_PROBES[logical][2:]
    statement = sql.SQL(
        "MERGE INTO {} AS x USING (SELECT %s::text AS k) s ON x.{} = s.k "
        "WHEN MATCHED AND pg_temp.leak(x::text) THEN UPDATE SET metadata = x.metadata"
    ).format(seeded.table(logical), sql.Identifier(key))
    notices: list[str] = []
    with as_alice(dds, notices) as conn:
        assert conn.execute(statement, [bobs]).rowcount == 0
        assert not leaked(notices, bobs)
        assert conn.execute(statement, [alices]).rowcount == 1  # positive control
        assert leaked(notices, alices)


def test_a_conflict_probe_never_locks_another_users_row(dds: Any, seeded: Seeded) -> None:
    probe = sql.SQL(
        "INSERT INTO {} AS x (id, record_type, user_id, content) VALUES (%s, 'memory', 'alice', "
        "'') ON CONFLICT (user_id, id) DO UPDATE SET content = x.content WHERE false"
    ).format(seeded.table("memory"))
    update = sql.SQL("UPDATE {} SET metadata = metadata WHERE id = %s AND user_id = %s").format(
        seeded.table("memory"))
    with as_alice(dds) as conn, psycopg.connect(dds.owner_url, autocommit=True) as other:
        other.execute("SET lock_timeout = '500ms'")
        conn.execute(probe, ["b1"])
        assert other.execute(update, ["b1", "bob"]).rowcount == 1  # not blocked
        conn.execute(probe, ["a1"])
        with pytest.raises(errors.LockNotAvailable):  # positive control: her own row is locked
            other.execute(update, ["a1", "alice"])


def test_record_ids_are_unique_per_owner_through_the_sdk(dds: Any) -> None:
    fresh = seed(dds)
    with dds.runtime_store(fresh.store_id, "alice") as store:
        assert store.add(["alice's own b1"], "memory", record_ids="b1") == ["b1"]
        assert store.get("memory", "b1").content == "alice's own b1"
        with pytest.raises(ValueError, match="already exists"):  # positive control: her own
            store.add(["again"], "memory", record_ids="a1")
        assert store.delete("memory", "b1") == 1
    with dds.runtime_store(fresh.store_id, "bob") as store:
        assert store.get("memory", "b1").content == "memory b1 of bob"


# --- finding 2: no per-connection state the runtime's SQL can change is trusted ----------------
@pytest.mark.parametrize("priming", [
    "PREPARE oam_apply_assertion(text) AS SELECT oam_sec.apply_assertion($1), "
    "pg_notify('stolen', $1)",
    "PREPARE _pg3_0(text) AS SELECT pg_notify('stolen', $1)",
    "CREATE TEMP TABLE d_memory (id text)",
    # A temp domain shadows the SDK's unqualified jsonb; its CHECK would run in the next
    # user's transaction (found by the attack review).
    "CREATE FUNCTION pg_temp.spy(x anyelement) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN "
    "PERFORM pg_notify('stolen', current_setting('oam.end_user_assertion', true)); "
    "RETURN true; END $$; CREATE DOMAIN pg_temp.jsonb AS pg_catalog.jsonb "
    "CHECK (pg_temp.spy(VALUE))",
    "CREATE TYPE pg_temp.vector AS (x int)",
    "DECLARE held CURSOR WITH HOLD FOR SELECT 1",
    # Settings that would fail every later user or make the SDK misread results (second
    # review): the connection is closed instead of going back to the pool.
    "SET default_transaction_read_only = on",
    "SET row_security = off",
    "SET client_encoding = 'SQL_ASCII'",
    "SET DateStyle = 'German'",
])
def test_a_primed_pooled_connection_serves_nobody(dds: Any, seeded: Seeded, priming: str) -> None:
    with psycopg.connect(dds.runtime_url, autocommit=True) as listener, \
            ConnectionPool(dds.runtime_url, min_size=1, max_size=1, open=True) as pool:
        listener.execute("LISTEN stolen")
        with OracleMemoryEndUserSecurityContext(dds.context("alice")):
            store = OracleDBMemoryStore(None, pool, schema_policy=SchemaPolicy.NO_CHECK,
                                        memory_store_id=seeded.store_id, schema_owner=OWNER)
            try:
                assert store.get("memory", "a1") is not None  # the connection served alice
                with pool.connection() as conn:  # the attacker's SQL on the pooled connection
                    conn.execute(priming)
                    conn.execute("SELECT pg_notify('stolen', 'probe')")  # positive control
                with pytest.raises(SecurityContextError):
                    store.get("memory", "a1")  # refused on the primed connection, which is closed
                record = store.get("memory", "a1")  # a fresh connection serves alice
                assert isinstance(record, ScopedRecord) and record.user_id == "alice"
            finally:
                store.close()
        received = [n.payload for n in listener.notifies(timeout=0.5)]
        assert received == ["probe"]


# --- finding 5: every write is checked against the owner of what it hangs from -----------------
@pytest.mark.parametrize(("record_type", "record_id", "user"), [
    ("memory", "g1", "alice"), ("memory", "b1", "alice"), ("memory", "g1", None),
    ("message", "m-bob", "alice"), ("user_profile", "bob", "alice"),
])
def test_a_chunk_can_only_index_the_users_own_record(dds: Any, seeded: Seeded, record_type: str,
                                                     record_id: str, user: str | None) -> None:
    insert = sql.SQL("INSERT INTO {} (record_type, record_id, chunk_no, chunk_text, user_id, "
                     "embedding) VALUES (%s, %s, 7, 'planted', %s, '[0,0,1]')").format(
        seeded.table("record_chunks"))
    own = {"memory": "a1", "message": "m-alice", "user_profile": "alice"}[record_type]
    with as_alice(dds) as conn:
        with pytest.raises(errors.InsufficientPrivilege), conn.transaction():
            conn.execute(insert, [record_type, record_id, user])
        conn.execute(insert, [record_type, own, "alice"])  # positive control


@pytest.mark.parametrize("planted_by", ["alice", None])
def test_a_chunk_of_a_user_never_passes_for_a_global_memorys(dds: Any, planted_by: str | None
                                                             ) -> None:
    fresh = seed(dds)
    with psycopg.connect(dds.owner_url) as conn:  # planted past every write check
        conn.execute(sql.SQL(
            "INSERT INTO {} (record_type, record_id, chunk_no, chunk_text, user_id, embedding) "
            "VALUES ('memory', 'g1', 7, 'planted', %s, '[0,0,1]')").format(
            fresh.table("record_chunks")), [planted_by])
    with dds.runtime_store(fresh.store_id, "bob") as store:
        hits = store.search(None, 20, query_vector=[0.0, 0.0, 1.0], record_types=["memory"])
    distance = {record.id: d for record, d in hits}["g1"]
    # A chunk of alice's never counts; the global row (positive control) does.
    assert (distance < 1e-6) is (planted_by is None)


# --- finding 6: expiry is checked against the statement's time ---------------------------------
def test_an_assertion_stops_working_inside_a_transaction(dds: Any, seeded: Seeded) -> None:
    context = dds.context("alice")
    count = sql.SQL("SELECT count(*) FROM {} WHERE user_id = 'alice'").format(
        seeded.table("memory"))
    with psycopg.connect(dds.runtime_url) as conn:
        assertion = context.assertion(now=time.time() - context.lifetime_seconds + 1.5)
        assert conn.execute(APPLY, [assertion]).fetchone() == ("alice",)
        assert conn.execute(count).fetchone() == (3,)  # positive control: unexpired
        time.sleep(2.0)
        assert conn.execute(count).fetchone() == (0,)


# --- finding 7: no lock that one user can take for another -------------------------------------
def test_the_runtime_login_cannot_stall_message_writes(dds: Any, seeded: Seeded) -> None:
    key = f"oam-seq:{OWNER}:{seeded.store_id}:t-alice"
    with psycopg.connect(dds.runtime_url, autocommit=True) as attacker, \
            psycopg.connect(dds.runtime_url, autocommit=True) as other:
        attacker.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [key])
        # Positive control: the lock is held, nobody else gets it.
        assert other.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                             [key]).fetchone() == (False,)
        done = threading.Event()

        def write() -> None:
            with dds.runtime_store(seeded.store_id, "alice") as store:
                store.add(["still writes"], "message", thread_ids="t-alice", roles="user")
                done.set()

        worker = threading.Thread(target=write, daemon=True)
        worker.start()
        worker.join(timeout=20)
        assert done.is_set()


def test_concurrent_writers_to_one_thread_get_distinct_sequence_numbers(dds: Any) -> None:
    store_id = dds.new_store()
    errors_seen: list[BaseException] = []

    def write(n: int) -> None:
        try:
            with dds.runtime_store(store_id, "alice") as store:
                for i in range(5):
                    store.add([f"w{n} m{i}"], "message", thread_ids="t", roles="user")
        except BaseException as exc:  # reported below
            errors_seen.append(exc)

    workers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert errors_seen == []
    with dds.runtime_store(store_id, "alice") as store:
        seq = [m.seq_no for m in store.list_thread_messages("t")]
    assert sorted(seq) == list(range(20))


# --- finding 9: strict assertions, bounded lifetime, no bypassing connections -------------------
def _signed(dds: Any, claims: dict[str, Any]) -> str:
    credential = ApplicationCredential.parse(dds.token)
    body = json.dumps(claims, separators=(",", ":"), sort_keys=True).encode().hex()
    return f"{body}." + hmac.new(credential.key, body.encode(), hashlib.sha256).hexdigest()


def _claims(user: str, exp: float) -> dict[str, Any]:
    return {"app": "gw", "u": user, "k": "local", "g": [], "r": [], "a": {}, "exp": exp,
            "n": "00"}


@pytest.mark.parametrize("suffix", [".x", ".", "x", "\n"])
def test_text_after_the_signature_is_refused(dds: Any, suffix: str) -> None:
    valid = dds.context("alice").assertion()
    with psycopg.connect(dds.runtime_url) as conn:
        assert conn.execute(APPLY, [valid + suffix]).fetchone() == (None,)
        assert conn.execute(APPLY, [valid]).fetchone() == ("alice",)  # positive control


def test_an_assertion_living_longer_than_the_maximum_is_refused(dds: Any) -> None:
    now = time.time()
    with psycopg.connect(dds.runtime_url) as conn:
        for exp in (1e12, now + MAX_LIFETIME_SECONDS + 60):
            assert conn.execute(APPLY, [_signed(dds, _claims("alice", exp))]).fetchone() == (
                None,)
        within = _signed(dds, _claims("alice", now + MAX_LIFETIME_SECONDS - 60))
        assert conn.execute(APPLY, [within]).fetchone() == ("alice",)  # positive control


@pytest.mark.parametrize(("url", "refusal", "message"), [
    ("superuser_url", EndUserContextError, "row security binds"),
    ("secadmin_url", EndUserContextError, "row security binds"),
    # The owner is not the application's login: the database refuses the assertion first.
    ("owner_url", SecurityContextError, "does not accept"),
])
def test_no_check_refuses_a_connection_that_bypasses_row_security(
        dds: Any, seeded: Seeded, url: str, refusal: type[Exception], message: str) -> None:
    with OracleMemoryEndUserSecurityContext(dds.context("alice")):
        with pytest.raises(refusal, match=message):
            OracleDBMemoryStore(None, getattr(dds, url), schema_policy=SchemaPolicy.NO_CHECK,
                                memory_store_id=seeded.store_id, schema_owner=OWNER)
        # Positive control: the runtime login is bound by row security and opens the store.
        OracleDBMemoryStore(None, dds.runtime_url, schema_policy=SchemaPolicy.NO_CHECK,
                            memory_store_id=seeded.store_id, schema_owner=OWNER).close()


# --- finding 3: identities live in namespaces the database enforces ----------------------------
@pytest.fixture(scope="module")
def second_provider(dds: Any) -> Iterator[DevIssuer]:
    """Another identity provider (``other_idp``), bound to ``gw``, whose group ``team`` holds
    the shipped policies on ``seeded``'s store."""
    issuer = DevIssuer.create(tempfile.mkdtemp(prefix="oam-test-issuer2-"),
                              "https://other-issuer.oam.test")
    with psycopg.connect(dds.secadmin_url) as conn:
        conn.execute("DELETE FROM oam_sec.identity_provider WHERE name = 'other_idp'")
        deepsec_admin.add_identity_provider(conn, "other_idp", issuer.issuer, AUDIENCE,
                                            issuer.jwks())
        deepsec_admin.bind_application(conn, "gw", identity_providers=["other_idp"])
    yield issuer
    with psycopg.connect(dds.secadmin_url) as conn:
        conn.execute("DELETE FROM oam_sec.identity_provider WHERE name = 'other_idp'")


def _memories(dds: Any, store_id: str, context: Any) -> list[tuple[str, str | None]]:
    with dds.context_store(store_id, context) as store:
        return sorted((r.id, r.user_id) for r in store.list("memory"))


def test_an_identity_provider_user_never_reads_the_local_user_of_the_same_name(
        dds: Any, seeded: Seeded) -> None:
    idp_alice = create_end_user_security_context(
        dds.token, IdentityProviderUser("alice", (GROUP,), IDP))
    assert _memories(dds, seeded.store_id, idp_alice) == [("g1", None), ("g2", None)]
    # Positive control: the local alice reads her rows.
    assert ("a1", "alice") in _memories(dds, seeded.store_id, dds.context("alice"))


def test_two_providers_users_of_the_same_name_share_nothing(
        dds: Any, second_provider: DevIssuer) -> None:
    store_id = seeded_global(dds, dds.new_store())  # its grants: test_idp's group team
    # A group grant is one provider's group: test_idp's team does not extend to other_idp's.
    other_zed = create_end_user_security_context(
        dds.token, IdentityProviderUser("zed", (GROUP,), "other_idp"))
    assert _memories(dds, store_id, other_zed) == []
    assert _memories(dds, store_id, create_end_user_security_context(  # positive control
        dds.token, IdentityProviderUser("zed", (GROUP,), IDP))) == [("gx", None)]
    with psycopg.connect(dds.secadmin_url) as conn:
        grant_agent_memory_policies(conn, store_id, OWNER,
                                    [OciGroupPrincipal(GROUP, "other_idp")], POLICIES)
    with dds.context_store(store_id, dds.token_context("alice")) as store:
        store.add(["test_idp's alice"], "memory", record_ids="n1")
    other = create_end_user_security_context(dds.token, second_provider.token(
        "alice", audience=AUDIENCE, groups=[GROUP]))
    assert _memories(dds, store_id, other) == [("gx", None)]
    assert _memories(dds, store_id, dds.token_context("alice")) == [  # positive control
        ("gx", None), ("n1", f"{IDP}:alice")]


def seeded_global(dds: Any, store_id: str) -> str:
    owner = dds.owner_store(store_id)
    try:
        owner.add(["global"], "memory", record_ids="gx", user_ids=None)
    finally:
        owner.close()
    return store_id


def test_a_local_name_can_never_pass_for_a_namespaced_one(dds: Any, seeded: Seeded) -> None:
    with pytest.raises(ValueError, match="never contains ':'"):
        create_end_user_security_context(dds.token, (f"{IDP}:alice", None))
    with psycopg.connect(dds.secadmin_url) as conn, pytest.raises(ValueError, match="':'"):
        deepsec_admin.create_end_user(conn, f"{IDP}:alice")
    with psycopg.connect(dds.runtime_url) as conn:
        forged = _signed(dds, _claims(f"{IDP}:alice", time.time() + 60))  # signed by the app
        assert conn.execute(APPLY, [forged]).fetchone() == (None,)
        assert conn.execute(APPLY, [_signed(dds, _claims("alice", time.time() + 60))]
                            ).fetchone() == ("alice",)  # positive control


def test_a_provider_not_bound_to_the_application_is_refused(dds: Any, seeded: Seeded) -> None:
    unbound = create_end_user_security_context(
        dds.other_app_token, IdentityProviderUser("zed", (GROUP,), "no_such_idp"))
    bound = create_end_user_security_context(
        dds.other_app_token, IdentityProviderUser("zed", (GROUP,), IDP))
    with psycopg.connect(dds.other_runtime_url) as conn:
        assert conn.execute(APPLY, [unbound.assertion()]).fetchone() == (None,)
        assert conn.execute(APPLY, [bound.assertion()]).fetchone() == (f"{IDP}:zed",)


# --- finding 4: an application acts only for the stores it is bound to -------------------------
def test_an_application_reads_only_the_stores_it_is_bound_to(dds: Any) -> None:
    sales, support = dds.new_store(), dds.new_store()
    for store_id in (sales, support):
        owner = dds.owner_store(store_id)
        try:
            owner.add([f"alice in {store_id}"], "memory", record_ids="m", user_ids="alice")
        finally:
            owner.close()
    login, app = "oam_test_rt_sales", "sales_app"
    with psycopg.connect(dds.secadmin_url) as conn:
        if not deepsec_admin.role_exists(conn, login):
            deepsec_admin.create_runtime_login(conn, login, TEST_PASSWORD, OWNER)
        conn.execute("DELETE FROM oam_sec.application WHERE app_name = %s", [app])
        token = deepsec_admin.create_application(conn, app, login).token()
        deepsec_admin.bind_application(conn, app, stores=[(OWNER, sales)])
    url = url_as(dds.superuser_url, login)
    context = create_end_user_security_context(token, ("alice", None))

    def visible(store_id: str) -> list[str]:
        with OracleMemoryEndUserSecurityContext(context):
            store = OracleDBMemoryStore(None, url, schema_policy=SchemaPolicy.NO_CHECK,
                                        memory_store_id=store_id, schema_owner=OWNER)
            try:
                return [str(r.content) for r in store.list("memory")]
            finally:
                store.close()

    assert visible(sales) == [f"alice in {sales}"]  # positive control: its own store
    assert visible(support) == []
    with psycopg.connect(dds.secadmin_url) as conn:
        deepsec_admin.unbind_application(conn, app, stores=[(OWNER, sales)])
    assert visible(sales) == []  # unbinding takes effect at once


# --- token mode: the database verifies the identity provider's token ---------------------------
@pytest.fixture(scope="module")
def token_app(dds: Any, seeded: Seeded) -> str:
    """An application in token mode on the runtime login, bound to ``seeded``'s store."""
    with psycopg.connect(dds.secadmin_url) as conn:
        conn.execute("DELETE FROM oam_sec.application WHERE app_name = 'tok_app'")
        token = deepsec_admin.create_application(conn, "tok_app", RUNTIME).token()
        deepsec_admin.bind_application(conn, "tok_app", stores=[(OWNER, seeded.store_id)],
                                       identity_providers=[IDP])
        deepsec_admin.set_require_token(conn, "tok_app", True)
    return token


def _applied(dds: Any, context: Any) -> str | None:
    with psycopg.connect(dds.runtime_url) as conn:
        row = conn.execute(APPLY, [context.assertion()]).fetchone()
        return None if row is None else row[0]


def test_in_token_mode_the_application_token_alone_speaks_for_nobody(
        dds: Any, token_app: str) -> None:
    for identity in (("alice", None), IdentityProviderUser("alice", (GROUP,), IDP)):
        assert _applied(dds, create_end_user_security_context(token_app, identity)) is None
    assert _applied(dds, dds.token_context("alice", app_token=token_app)) == f"{IDP}:alice"


def _token(dds: Any, key: DevIssuer | None = None, **overrides: Any) -> str:
    issuer = key or dds.issuer
    claims = {"audience": AUDIENCE, "groups": [GROUP], **overrides}
    subject = claims.pop("subject", "tina")
    return issuer.token(subject, **claims)


@pytest.mark.parametrize("forgery", [
    "other_key", "expired", "not_yet_valid", "wrong_audience", "wrong_issuer", "alg_none",
    "claims_edited", "no_exp",
])
def test_a_bad_token_reads_nothing(dds: Any, seeded: Seeded, token_app: str,
                                   forgery: str) -> None:
    now = int(time.time())
    stranger = DevIssuer.create(tempfile.mkdtemp(prefix="oam-test-stranger-"), ISSUER)
    valid = _token(dds)
    header, payload, signature = valid.split(".")
    body = json.loads(_b64decode(payload))
    tokens = {
        "other_key": _token(dds, stranger),
        "expired": _token(dds, iat=now - 600, nbf=now - 600, exp=now - 120),
        "not_yet_valid": _token(dds, nbf=now + 600),
        "wrong_audience": _token(dds, audience="someone-else"),
        "wrong_issuer": _token(dds, iss="https://evil.example"),
        "alg_none": f"{_b64encode(json.dumps({'alg': 'none'}))}.{payload}.",
        "claims_edited": f"{header}.{_b64encode(json.dumps({**body, 'sub': 'alice'}))}."
                         f"{signature}",
        "no_exp": _token(dds, exp=None),
    }
    forged = tokens[forgery]
    if forgery == "alg_none":  # the SDK refuses to carry it; the database refuses it too
        forged = forged + "x"
    context = create_end_user_security_context(token_app, forged)
    assert _applied(dds, context) is None
    assert _applied(dds, create_end_user_security_context(token_app, valid)) == f"{IDP}:tina"


def _b64encode(text: str) -> str:
    import base64

    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def _b64decode(part: str) -> str:
    import base64

    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()


def test_a_token_user_reads_and_writes_only_their_rows_through_the_sdk(
        dds: Any, seeded: Seeded, token_app: str) -> None:
    tina = create_end_user_security_context(token_app, _token(dds, subject="tina"))
    with dds.context_store(seeded.store_id, tina) as store:
        [note] = store.add(["tina's note"], "memory")
        assert store.get("memory", note).user_id == f"{IDP}:tina"
    with dds.context_store(seeded.store_id, create_end_user_security_context(
            token_app, _token(dds, subject="tom"))) as store:
        assert store.get("memory", note) is None
    # Without the group claim the token holds no data role: nothing is visible.
    no_group = create_end_user_security_context(token_app, _token(dds, subject="tina",
                                                                  groups=[]))
    assert _memories(dds, seeded.store_id, no_group) == []
    assert (note, f"{IDP}:tina") in _memories(dds, seeded.store_id, tina)  # positive control


# --- found by the attack review: snapshots that never see a revoke ------------------------------
@pytest.mark.parametrize("isolation", ["REPEATABLE READ", "SERIALIZABLE"])
def test_a_snapshot_transaction_sees_nothing(dds: Any, seeded: Seeded, isolation: str) -> None:
    count = sql.SQL("SELECT count(*) FROM {} WHERE user_id = 'alice'").format(
        seeded.table("memory"))
    with psycopg.connect(dds.runtime_url) as conn:
        conn.execute(f"BEGIN ISOLATION LEVEL {isolation}".encode())
        assert conn.execute(APPLY, [dds.context("alice").assertion()]).fetchone() == (None,)
        assert conn.execute(count).fetchone() == (0,)
        conn.rollback()
        conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")  # positive control
        assert conn.execute(APPLY, [dds.context("alice").assertion()]).fetchone() == ("alice",)
        assert conn.execute(count).fetchone() == (3,)


# --- finding 5 for messages and summaries: they hang from their owner's thread -----------------
def test_a_message_in_another_users_thread_id_stays_the_writers(dds: Any) -> None:
    fresh = seed(dds)
    with dds.runtime_store(fresh.store_id, "alice") as store:
        store.add(["planted by alice"], "message", thread_ids="t-bob", roles="user")
        store.add([{"text": "alice's summary of t-bob"}], "thread_summary", thread_ids="t-bob")
        assert [m.content for m in store.list_thread_messages("t-bob")] == ["planted by alice"]
    with dds.runtime_store(fresh.store_id, "bob") as store:
        # Positive control: bob's own message in his thread is there; alice's is not.
        assert [m.content for m in store.list_thread_messages("t-bob")] == ["hello from bob"]
        assert [s.id for s in store.list("thread_summary", thread_id="t-bob")] == ["s-bob"]


# --- found by the second review: names and backends that must never be shared ------------------
def test_data_role_and_runtime_role_names_never_collide() -> None:
    def role(schema: str, store: str) -> str:
        names = store_names(memory_store_id=store, table_name_prefix=None, schema_owner=schema,
                            fold="lower")
        return deepsec_admin.data_role_name(names, schema, SHIPPED_POLICIES["own_user_rows"])

    assert role("acme", "eu_x") != role("acme_eu", "x")  # the same text once joined by "_"
    assert role("acme", "eu_x") == role("acme", "eu_x")  # positive control: stable
    assert deepsec_admin.runtime_role_name("oam$owner") != deepsec_admin.runtime_role_name(
        "oam_owner")
    assert deepsec_admin.runtime_role_name("OAM_OWNER") == deepsec_admin.runtime_role_name(
        "oam_owner")


def test_installing_a_policy_never_adopts_another_stores_data_role(dds: Any) -> None:
    store_id = f"d{time.time_ns() % 10**9}"
    owner = OracleDBMemoryStore(None, dds.owner_url, memory_store_id=store_id,
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    owner.close()
    names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=OWNER,
                        fold="lower")
    taken = deepsec_admin.data_role_name(names, OWNER, SHIPPED_POLICIES["own_user_rows"])
    with psycopg.connect(dds.secadmin_url) as conn:  # the name already names another store's
        conn.execute("INSERT INTO oam_sec.data_role (role_name, schema_name, store_key, "
                     "policy_name) VALUES (%s, %s, 'elsewhere', 'own_user_rows')",
                     [taken, OWNER])
    with pytest.raises(ValueError, match="already belongs to memory store 'elsewhere'"):
        add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, POLICIES[:1])
    with psycopg.connect(dds.secadmin_url) as conn:
        conn.execute("DELETE FROM oam_sec.data_role WHERE role_name = %s", [taken])
    add_deep_data_security_policies(dds.secadmin_url, OWNER, store_id, POLICIES[:1])  # control
    with psycopg.connect(dds.secadmin_url) as conn:
        assert deepsec_admin.installed_data_role(conn, OWNER, names.store_key,
                                                 "own_user_rows") == taken


def test_a_cached_verification_never_serves_another_login_on_a_reused_pid(
        dds: Any, seeded: Seeded) -> None:
    bob = dds.context("bob").assertion()
    count = sql.SQL("SELECT count(*) FROM {} WHERE user_id = 'bob'").format(
        seeded.table("memory"))
    names = store_names(memory_store_id=seeded.store_id, table_name_prefix=None,
                        schema_owner=OWNER, fold="lower")
    with psycopg.connect(dds.secadmin_url) as conn:
        role = deepsec_admin.installed_data_role(conn, OWNER, names.store_key, "own_user_rows")
    for login, visible in (("oam_test_rt", 0), ("oam_test_rt2", 3)):
        with psycopg.connect(dds.other_runtime_url) as conn:  # another application's login
            # As if a backend of `login` had verified bob's assertion under this pid and exited.
            with psycopg.connect(dds.superuser_url) as su:
                su.execute(
                    "INSERT INTO oam_sec.session_cache (pid, digest, username, data_roles, "
                    "expires_at, grants_version, login) SELECT %s, sha256(convert_to(%s, "
                    "'UTF8')), 'bob', ARRAY[%s], now() + interval '1 minute', version, %s "
                    "FROM oam_sec.grants_version", [conn.info.backend_pid, bob, role, login])
            conn.execute(SET_BY_HAND, [bob])
            # Only a row recorded by this very login counts (the positive control: rt2's own).
            assert conn.execute(count).fetchone() == (visible,), login
            conn.rollback()
            with psycopg.connect(dds.superuser_url) as su:
                su.execute("DELETE FROM oam_sec.session_cache WHERE pid = %s",
                           [conn.info.backend_pid])


# --- an atomic block's pinned session belongs to the end user it started as ----------------------
def test_an_atomic_block_never_lends_its_session_to_another_end_user(dds: Any) -> None:
    """The gateway's batch runs a store's operations in one pinned session: an operation made
    inside the block in another end user's context must not run on it as the block's user."""
    fresh = seed(dds)
    with dds.runtime_store(fresh.store_id, "alice") as store, store.transaction():
        # Positive control: in the block's own context the pinned session serves her.
        assert store.get("memory", "a1").content == "memory a1 of alice"
        with OracleMemoryEndUserSecurityContext(dds.context("bob")):
            with pytest.raises(EndUserContextError, match="atomic block"):
                store.get("memory", "a1")  # would read alice's row for bob's caller
            with pytest.raises(EndUserContextError, match="atomic block"):
                store.add(["written in bob's context"], "memory", record_ids="x1")
        assert store.get("memory", "a1").content == "memory a1 of alice"
    with dds.runtime_store(fresh.store_id, "bob") as store:
        assert store.get("memory", "x1") is None  # nothing was written for him either
