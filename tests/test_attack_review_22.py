"""Attack review of issue 22's changes (keyset cursors, the database wait, the dev record):
each test tries one attack and holds a positive control."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from dds import OWNER, RUNTIME, DdsEnvironment
from gateway_live import LiveGateway, live_gateway
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from oam_gateway.cli import DEV_ISSUER
from oam_gateway.dev.state import DevState
from oam_gateway.errors.problems import PROBLEM_CONTENT_TYPE, problem_type
from oracleagentmemory.core.dbschemapolicy import SchemaPolicy
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from oracleagentmemory.core.deepsec.audit import (
    AuditChainError,
    enable_write_audit,
    seal_write_audit,
    verify_write_audit,
    write_audit_status,
)
from oracleagentmemory.core.deepsec.audit_chain import generate_signing_key, public_jwk
from oracleagentmemory.core.oracledbmemorystore import OracleDBMemoryStore
from oracleagentmemory.engines.identifiers import store_names
from oracleagentmemory.errors import DatabaseError, DuplicateRecordError
from psycopg import sql
from psycopg_pool import ConnectionPool


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("attack22")) as live:
        yield live


def encode_text(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def encode(payload: object) -> str:
    return encode_text(json.dumps(payload))


def refused(answer: httpx.Response) -> None:
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
    assert answer.json()["type"] == problem_type("invalid-request")


def test_a_deeply_nested_cursor_is_a_400_and_the_connection_keeps_serving(
        gateway: LiveGateway) -> None:
    """A cursor is JSON: one nested a few thousand levels deep made json.loads raise
    RecursionError, which nothing caught (the gateway reset the connection); it is a 400
    invalid-request like any other cursor that is not this list's, and so is one longer than
    any cursor the gateway makes."""
    with gateway.client("nested_cursor") as http:
        for n in range(3):
            assert http.post("/v1/memories", json={"content": f"m{n}"}).status_code == 201
        thread_id = http.post("/v1/threads", json={}).json()["id"]
        good = http.get("/v1/memories", params={"limit": 1}).json()["next_cursor"]
        lists = ("/v1/memories", "/v1/threads", "/v1/relations",
                 f"/v1/threads/{thread_id}/messages")
        for cursor in (encode_text("[" * 3000), encode_text('{"l":' * 3000),
                       encode({"l": "memories", "t": "x" * 6000, "i": "y"})):
            for path in lists:
                refused(http.get(path, params={"cursor": cursor}))
        # Positive control: the same keep-alive client pages on with a real cursor.
        answer = http.get("/v1/memories", params={"limit": 1, "cursor": good})
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["items"]) == 1


@contextmanager
def runtime_logins_refused(dds: DdsEnvironment) -> Iterator[None]:
    """The gateway's runtime login cannot connect (its sessions are ended and its connection
    limit is 0) until the block ends."""
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        su.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT 0").format(sql.Identifier(RUNTIME)))
        try:
            su.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE usename = %s", [RUNTIME])
            yield
        finally:
            su.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT -1").format(
                sql.Identifier(RUNTIME)))


def test_a_request_timed_out_while_waiting_for_a_connection_does_not_take_it_for_good(
        dds: DdsEnvironment, tmp_path: Path) -> None:
    """A request that finds no ready pooled connection waits for one in a worker thread. When
    the request timeout (504) cancelled it there, the thread went on waiting, and the
    connection it was then given went to nobody: the pool never got it back. With one pooled
    connection, an outage longer than the request timeout left every later request a 503 or
    504 for good. A connection handed to a cancelled wait goes back to the pool."""
    with live_gateway(dds, tmp_path, pool_max_size=1, pool_min_size=1,
                      pool_timeout_seconds=60.0,
                      limits={"request_timeout_seconds": 1.0, "rate_limit": None}) as gateway, \
            gateway.client("waiting_writer") as http:
        # Positive control: the gateway writes before the outage.
        assert http.post("/v1/memories", json={"content": "before"}).status_code == 201
        with runtime_logins_refused(dds):
            statuses = [http.post("/v1/memories", json={"content": f"during {n}"}).status_code
                        for n in range(3)]
            assert 504 in statuses, statuses  # cancelled while waiting for a connection
            assert set(statuses) <= {503, 504}, statuses
        # The outage is over: the pool reconnects, and a write succeeds again.
        deadline = time.monotonic() + 90
        status = 0
        while status != 201 and time.monotonic() < deadline:
            status = http.post("/v1/memories", json={"content": "after"}).status_code
            assert status in {201, 503, 504}, status
            if status != 201:
                time.sleep(0.5)
        assert status == 201, "the pool never got its connection back"


# --- the audit seal: verify, then sign ---------------------------------------------------------
AUDIT_KEY = generate_signing_key()
AUDIT_PUBLIC = public_jwk(AUDIT_KEY)


def audit_table(store_id: str, logical: str) -> sql.Identifier:
    names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=OWNER,
                        fold="lower")
    return sql.Identifier(OWNER, names.object_name(logical))


def add_audited_memories(dds: DdsEnvironment, store_id: str, prefix: str) -> None:
    with dds.runtime_store(store_id, "alice") as store:
        store.add([f"{prefix} {n}" for n in range(3)], "memory",
                  record_ids=[f"{prefix}{n}" for n in range(3)])


@contextmanager
def checkpoints_held(dds: DdsEnvironment, store_id: str, tamper: bool) -> Iterator[None]:
    """The superuser holds the checkpoint table (reads go on, a sealer's lock waits) from the
    start of the block until a sealer waits for it; then, with ``tamper``, deletes the last
    checkpoint and its chain links and changes a record it sealed, and lets the sealer go."""
    checkpoint = audit_table(store_id, "write_audit_checkpoint")
    with psycopg.connect(dds.superuser_url, autocommit=True) as su:
        for logical in ("write_audit", "write_audit_chain", "write_audit_checkpoint"):
            su.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(
                audit_table(store_id, logical)))
    held, failure = threading.Event(), []

    def hold() -> None:
        try:
            with psycopg.connect(dds.superuser_url) as conn, \
                    psycopg.connect(dds.superuser_url, autocommit=True) as watcher:
                conn.execute(sql.SQL("LOCK TABLE {} IN SHARE MODE").format(checkpoint))
                held.set()
                oid = conn.execute("SELECT %s::regclass::oid",
                                   [checkpoint.as_string(conn)]).fetchone()
                for _ in range(600):  # until a sealer waits for the table
                    waiting = watcher.execute("SELECT count(*) FROM pg_locks WHERE relation = "
                                              "%s AND NOT granted", [oid[0] if oid else 0]
                                              ).fetchone()
                    if waiting and waiting[0]:
                        break
                    time.sleep(0.05)
                else:
                    raise AssertionError("no sealer waited for the checkpoints")
                if tamper:
                    last = conn.execute(sql.SQL("SELECT seq, first_id FROM {} ORDER BY seq DESC "
                                                "LIMIT 1").format(checkpoint)).fetchone()
                    assert last is not None
                    conn.execute(sql.SQL("DELETE FROM {} WHERE checkpoint_seq = %s").format(
                        audit_table(store_id, "write_audit_chain")), [last[0]])
                    conn.execute(sql.SQL("DELETE FROM {} WHERE seq = %s").format(checkpoint),
                                 [last[0]])
                    conn.execute(sql.SQL("UPDATE {} SET end_user = 'mallory' WHERE id = %s"
                                         ).format(audit_table(store_id, "write_audit")),
                                 [last[1]])
        except BaseException as error:  # reported by the test
            failure.append(error)
            held.set()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(30)
    try:
        yield
    finally:
        holder.join(60)
        assert not failure, failure


def test_seal_does_not_sign_a_chain_changed_after_it_verified_it(dds: DdsEnvironment) -> None:
    """seal verifies what is sealed, then signs the rest in later transactions, chaining on
    the last checkpoint it reads then. One who can write the database (without the signing
    key) could, in between, delete the last checkpoint and change a record it sealed: seal
    re-sealed that record, changed, under a new checkpoint, and printed the new head to keep
    as trusted, so verify, even from that head, found nothing. Seal now signs only on top of
    the checkpoint it verified (or its own), else raises AuditChainError and signs nothing."""
    store_id = dds.new_store()
    assert enable_write_audit(dds.secadmin_url, OWNER, store_id).enabled
    add_audited_memories(dds, store_id, "a")
    first = seal_write_audit(dds.owner_url, OWNER, store_id, AUDIT_KEY)
    trusted = (first[-1].seq, first[-1].head)
    add_audited_memories(dds, store_id, "b")
    # Positive control: the sealer waits for the held table, then seals on the verified head.
    with checkpoints_held(dds, store_id, tamper=False):
        second = seal_write_audit(dds.owner_url, OWNER, store_id, AUDIT_KEY,
                                  trusted_checkpoint=trusted, lock_timeout_seconds=30)
    assert [c.seq for c in second] == [trusted[0] + 1]
    trusted = (second[-1].seq, second[-1].head)
    assert verify_write_audit(dds.owner_url, OWNER, store_id, AUDIT_PUBLIC,
                              trusted_checkpoint=trusted).ok
    # The attack: the last checkpoint goes and a record it sealed changes after the verify.
    with checkpoints_held(dds, store_id, tamper=True), \
            pytest.raises(AuditChainError) as refused:
        seal_write_audit(dds.owner_url, OWNER, store_id, AUDIT_KEY,
                         trusted_checkpoint=trusted, lock_timeout_seconds=30)
    assert refused.value.problem.kind == "bad_checkpoint"
    assert "changed while sealing" in refused.value.problem.message
    assert refused.value.sealed == [] and refused.value.outcome == "nothing sealed"
    # Nothing was signed on top: the tampering stays visible from the kept head.
    assert write_audit_status(dds.owner_url, OWNER, store_id).checkpoints == trusted[0] - 1
    assert not verify_write_audit(dds.owner_url, OWNER, store_id, AUDIT_PUBLIC,
                                  trusted_checkpoint=trusted).ok


# --- a pooled transaction whose failed statement was caught inside it --------------------------
def test_a_transaction_with_a_caught_failure_does_not_report_a_commit(
        dds: DdsEnvironment) -> None:
    """A store's all-or-none block (the gateway's batch) whose statement failed, the error
    caught inside the block, left an aborted transaction: its COMMIT answered ROLLBACK, sent
    through libpq past psycopg, and the block ended as if everything before the failure had
    been stored, while nothing was. Leaving the block now rolls back through psycopg and
    raises; the pooled connection serves the next writes."""
    store_id = dds.new_store()
    pool: ConnectionPool[Any] = ConnectionPool(dds.runtime_url, min_size=1, max_size=1,
                                               open=True)
    try:
        with OracleMemoryEndUserSecurityContext(dds.context("alice")):
            store = OracleDBMemoryStore(None, pool, schema_policy=SchemaPolicy.NO_CHECK,
                                        memory_store_id=store_id, schema_owner=OWNER)
            store.add(["first"], "memory", record_ids="taken")
            # Positive control: a block without a failure stores what it wrote.
            with store.transaction():
                store.add(["stored"], "memory", record_ids="stored")
            assert store.get("memory", "stored") is not None
            with pytest.raises(DatabaseError, match="none of it was stored"), store.transaction():
                store.add(["lost"], "memory", record_ids="lost")
                with pytest.raises(DuplicateRecordError):
                    store.add(["again"], "memory", record_ids="taken")
            assert store.get("memory", "lost") is None
            store.add(["after"], "memory", record_ids="after")
            assert store.get("memory", "after") is not None
    finally:
        pool.close()


# --- oam-gateway token and the records of running dev processes --------------------------------
GATEWAY = shutil.which("oam-gateway") or str(Path(sys.executable).parent / "oam-gateway")


def signed_by(token: str, state_dir: Path) -> bool:
    keys = KeySet.import_key_set(json.loads((state_dir / "jwks.json").read_text()))
    try:
        jwt.decode(token, keys, algorithms=["RS256"])
    except JoseError:  # another key (kid) or a bad signature
        return False
    return True


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="giving a file to another user needs root")
def test_token_ignores_a_dev_record_another_user_planted(tmp_path: Path) -> None:
    """oam-gateway token signs with the key of the state directory a running dev recorded.
    Where the record directory is writable by others (a umask of 0, a shared XDG_DATA_HOME),
    another user could plant a record naming a live process and a state directory of theirs,
    and token signed with their key. A record that is not this user's plain file is ignored."""
    xdg = tmp_path / "xdg"
    default = xdg / "oam-gateway" / "dev"
    DevState(default).issuer(DEV_ISSUER)
    theirs = tmp_path / "theirs"
    DevState(theirs).issuer(DEV_ISSUER)
    running = xdg / "oam-gateway" / "dev-running"
    running.mkdir(mode=0o777)
    running.chmod(0o777)
    record = running / "1.json"  # process 1 is alive
    record.write_text(json.dumps({"pid": 1, "base": "http://127.0.0.1:1",
                                  "state_dir": str(theirs)}), encoding="utf-8")
    env = {**os.environ, "XDG_DATA_HOME": str(xdg)}

    def token() -> str:
        minted = subprocess.run([GATEWAY, "token", "--user", "alice"], env=env,
                                capture_output=True, text=True, timeout=60, check=True)
        return minted.stdout.strip()

    # Positive control: this user's own record is followed.
    assert signed_by(token(), theirs)
    os.chown(record, 65534, 65534)  # nobody's
    assert signed_by(token(), default)
    record.unlink()
    (theirs / "link.json").write_text(record.name)
    record.symlink_to(theirs / "link.json")  # a link is not a record either
    os.lchown(record, 65534, 65534)
    assert signed_by(token(), default)
