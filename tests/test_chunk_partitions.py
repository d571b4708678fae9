"""Schema version 9: the chunks partitioned by owner, and the upgrade of a version-8 store.

The version-8 store is built by the SDK itself with its latest schema version held at 8 (the
steps 1 to 8 it ran before version 9 existed), protected as every test store is (both policies,
their grants, the write audit), then opened once with ``CREATE_IF_NECESSARY`` by the current SDK.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import psycopg
import pytest
from dds import OWNER
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec.audit import enable_write_audit
from oracleagentmemory.engines.postgres.chunk_partitions import CHUNK_PARTITIONS, partition_count
from oracleagentmemory.engines.postgres.ddl import LATEST_SCHEMA_VERSION, repartition_chunks
from oracleagentmemory.engines.postgres.engine import CAPABILITIES, PostgresEngine
from psycopg import sql

DIM = 3
Conn = psycopg.Connection[Any]


def _catalog(conn: Conn, store_id: str) -> dict[str, Any]:
    """What the store's installation put on its chunks table, and the rows it holds."""
    table = f"{OWNER}.{store_id}_record_chunks"
    return {
        "rows": conn.execute(sql.SQL(
            "SELECT id, record_type, record_id, chunk_no, chunk_text, user_id, embedding::text, "
            "search_tsv::text FROM {} ORDER BY id").format(
                sql.Identifier(OWNER, f"{store_id}_record_chunks"))).fetchall(),
        "row_security": conn.execute(
            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s::regclass",
            [table]).fetchone(),
        "policies": conn.execute(
            "SELECT polname, polpermissive, polroles::regrole[]::text, polcmd, "
            "pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid) "
            "FROM pg_policy WHERE polrelid = %s::regclass ORDER BY polname", [table]).fetchall(),
        "privileges": conn.execute(
            "SELECT a.grantee::regrole::text, a.privilege_type, NULL FROM pg_class c, "
            "aclexplode(c.relacl) a WHERE c.oid = %s::regclass UNION ALL "
            "SELECT a.grantee::regrole::text, a.privilege_type, t.attname FROM pg_attribute t, "
            "aclexplode(t.attacl) a WHERE t.attrelid = %s::regclass ORDER BY 1, 2, 3",
            [table, table]).fetchall(),
        "triggers": conn.execute(
            "SELECT tgname, tgenabled, pg_get_triggerdef(oid) FROM pg_trigger "
            "WHERE tgrelid = %s::regclass AND NOT tgisinternal ORDER BY tgname",
            [table]).fetchall(),
    }


def _relkind(conn: Conn, store_id: str) -> str:
    row = conn.execute("SELECT relkind FROM pg_class WHERE oid = %s::regclass",
                       [f"{OWNER}.{store_id}_record_chunks"]).fetchone()
    assert row is not None
    return str(row[0])


@pytest.fixture
def version_8_store(dds: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A protected, audited store at schema version 8 holding alice's, bob's and global rows."""
    with monkeypatch.context() as patch:
        patch.setattr(PostgresEngine, "capabilities",
                      dataclasses.replace(CAPABILITIES, latest_schema_version=8))
        store_id = str(dds.new_store(vector_dim=DIM))
        assert enable_write_audit(dds.secadmin_url, OWNER, store_id).enabled
        vectors = list(np.random.default_rng(3).standard_normal((30, DIM)).astype(np.float32))
        with dds.owner_store(store_id) as owner:
            for n, user in enumerate(("alice", "bob", None)):
                ids = owner.add([f"{user} note {i}" for i in range(10)], "memory",
                                user_ids=user, embeddings=vectors[10 * n:10 * n + 10])
            assert owner.delete("memory", ids[-1]) == 1  # the newest chunk id is gone
    return store_id


def test_a_version_8_store_is_partitioned_keeping_rows_security_and_audit(
        dds: Any, version_8_store: str) -> None:
    store_id = version_8_store
    with psycopg.connect(dds.owner_url) as conn:
        assert _relkind(conn, store_id) == "r"
        before = _catalog(conn, store_id)
        highest = conn.execute(sql.SQL("SELECT last_value FROM {}").format(sql.Identifier(
            OWNER, f"{store_id}_record_chunks_id_seq"))).fetchone()
    assert before["policies"] and before["triggers"] and before["privileges"]
    assert before["row_security"] == (True, False)

    with psycopg.connect(dds.owner_url) as conn:  # the upgrade: the current SDK opens it once
        OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id, vector_dim=DIM)
    with psycopg.connect(dds.owner_url) as conn:
        assert _relkind(conn, store_id) == "p"
        assert _catalog(conn, store_id) == before
        partitions = conn.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = "
                                  "%s::regclass", [f"{OWNER}.{store_id}_record_chunks"]
                                  ).fetchone()
        version = conn.execute(sql.SQL("SELECT schema_version FROM {} WHERE store_key = %s")
                               .format(sql.Identifier(OWNER, "agent_memory_store_registry")),
                               [store_id]).fetchone()
    assert partitions == (CHUNK_PARTITIONS,)
    assert version == (LATEST_SCHEMA_VERSION,) == (9,)

    # After the upgrade: a new chunk takes an id after every earlier one, its write is audited,
    # and the runtime login sees each user's rows only.
    with dds.runtime_store(store_id, "alice", vector_dim=DIM) as store:
        [new_id] = store.add(["alice's newest note"], "memory", user_ids="alice",
                             embeddings=[np.ones(DIM, dtype=np.float32)])
        found = store.search(None, 30, query_vector=np.ones(DIM, dtype=np.float32),
                             user_id="alice", exact_user_match=True)
    with dds.runtime_store(store_id, "bob", vector_dim=DIM) as store:
        bobs = store.search(None, 30, query_vector=np.ones(DIM, dtype=np.float32),
                            user_id="bob", exact_user_match=True)
    assert len(found) == 11 and {r.user_id for r, _ in found} == {"alice"}
    assert found[0][0].id == new_id
    assert len(bobs) == 10 and {r.user_id for r, _ in bobs} == {"bob"}
    with psycopg.connect(dds.owner_url) as conn:
        ids = conn.execute(sql.SQL("SELECT id FROM {} WHERE record_id = %s").format(
            sql.Identifier(OWNER, f"{store_id}_record_chunks")), [new_id]).fetchall()
        audited = conn.execute(sql.SQL(
            "SELECT count(*) FROM {} WHERE record_table = 'record_chunks' AND record_id = %s "
            "AND end_user = 'alice'").format(sql.Identifier(OWNER, f"{store_id}_write_audit")),
            [new_id]).fetchone()
    assert highest is not None and [(highest[0] + 1,)] == ids
    assert audited == (1,)


def test_opening_a_partitioned_store_again_changes_nothing(dds: Any) -> None:
    store_id = str(dds.new_store(vector_dim=DIM))
    with psycopg.connect(dds.owner_url) as conn:
        assert _relkind(conn, store_id) == "p"
        before = _catalog(conn, store_id)
        OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id, vector_dim=DIM)
        conn.commit()
        assert _catalog(conn, store_id) == before
        assert conn.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = %s::regclass",
                            [f"{OWNER}.{store_id}_record_chunks"]).fetchone() == (
                                CHUNK_PARTITIONS,)


def test_a_global_memory_and_a_users_memory_share_no_partition_scan(dds: Any) -> None:
    """A user's search is pruned to the partition of its user id; global rows (NULL owner)
    have a partition too and are found by a global search."""
    store_id = str(dds.new_store(vector_dim=DIM))
    with dds.owner_store(store_id) as owner:
        owner.add(["global fact"], "memory", user_ids=None,
                  embeddings=[np.ones(DIM, dtype=np.float32)])
        owner.add(["alice's fact"], "memory", user_ids="alice",
                  embeddings=[np.ones(DIM, dtype=np.float32)])
    with dds.runtime_store(store_id, "alice", vector_dim=DIM) as store:
        mine = store.search(None, 5, query_vector=np.ones(DIM, dtype=np.float32),
                            user_id="alice", exact_user_match=True)
        shared = store.search(None, 5, query_vector=np.ones(DIM, dtype=np.float32),
                              user_id=None, exact_user_match=True)
    assert [r.content for r, _ in mine] == ["alice's fact"]
    assert [r.content for r, _ in shared] == ["global fact"]


def test_repartitioning_keeps_rows_security_and_audit(dds: Any) -> None:
    """A protected, audited store moved to 32 partitions (``ddl.repartition_chunks``) keeps its
    rows, ids, policies, privileges and triggers; every new partition is sealed; each user sees
    their own rows only; moving it again to the same count changes nothing."""
    store_id = str(dds.new_store(vector_dim=DIM))
    assert enable_write_audit(dds.secadmin_url, OWNER, store_id).enabled
    vectors = list(np.random.default_rng(5).standard_normal((30, DIM)).astype(np.float32))
    with dds.owner_store(store_id) as owner:
        for n, user in enumerate(("alice", "bob", None)):
            owner.add([f"{user} note {i}" for i in range(10)], "memory", user_ids=user,
                      embeddings=vectors[10 * n:10 * n + 10])
        names = owner._names
    with psycopg.connect(dds.owner_url) as conn:
        before = _catalog(conn, store_id)
        repartition_chunks(conn, names, 32)
        conn.commit()
        after = _catalog(conn, store_id)
        counted = partition_count(conn, names)
        repartition_chunks(conn, names, 32)  # already so: a no-op
        conn.commit()
        again = _catalog(conn, store_id), partition_count(conn, names)
        partitions = [sql.Identifier(*r) for r in conn.execute(
            "SELECT n.nspname, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = "
            "i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE i.inhparent = "
            "%s::regclass", [f"{OWNER}.{store_id}_record_chunks"]).fetchall()]
    assert before["rows"] and after == before and again == (before, 32) and counted == 32
    assert len(partitions) == 32

    with dds.runtime_store(store_id, "alice", vector_dim=DIM) as store:
        [new_id] = store.add(["alice's newest note"], "memory", user_ids="alice",
                             embeddings=[np.ones(DIM, dtype=np.float32)])
        found = store.search(None, 30, query_vector=np.ones(DIM, dtype=np.float32),
                             user_id="alice", exact_user_match=True)
    assert len(found) == 11 and {r.user_id for r, _ in found} == {"alice"}
    assert found[0][0].id == new_id
    with psycopg.connect(dds.owner_url) as conn:
        highest = max(r[0] for r in before["rows"])
        [(chunk_id,)] = conn.execute(sql.SQL("SELECT id FROM {} WHERE record_id = %s").format(
            sql.Identifier(OWNER, f"{store_id}_record_chunks")), [new_id]).fetchall()
        audited = conn.execute(sql.SQL(
            "SELECT count(*) FROM {} WHERE record_table = 'record_chunks' AND record_id = %s "
            "AND end_user = 'alice'").format(sql.Identifier(OWNER, f"{store_id}_write_audit")),
            [new_id]).fetchone()
    assert chunk_id > highest and audited == (1,)
    # The runtime login reads the store's table (positive control) but no partition by name.
    with psycopg.connect(dds.runtime_url) as conn:
        conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
            sql.Identifier(OWNER, f"{store_id}_record_chunks"))).fetchone()
        conn.rollback()
        for partition in partitions:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.SQL("SELECT 1 FROM {} LIMIT 1").format(partition))
            conn.rollback()


def _storage(conn: Conn, store_id: str) -> dict[str, int]:
    """The file node of every relation of the store's chunks (partitions and their indexes): a
    table or index rewritten gets a new one."""
    rows = conn.execute(
        "SELECT c.relname, pg_relation_filenode(c.oid) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname LIKE %s AND c.relkind IN ('r', 'i')",
        [OWNER, f"{store_id}\\_%chunks%"]).fetchall()
    return {str(name): int(node) for name, node in rows}


def _text_vector_expression(conn: Conn, store_id: str) -> str:
    row = conn.execute(
        "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a JOIN pg_attrdef d "
        "ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid = %s::regclass "
        "AND a.attname = 'search_tsv' AND NOT a.attisdropped",
        [f"{OWNER}.{store_id}_record_chunks"]).fetchone()
    assert row is not None
    return str(row[0])


def test_opening_a_store_again_rewrites_no_chunks(dds: Any) -> None:
    """CREATE_IF_NECESSARY runs every schema step again on an existing store; the English text
    vector of version 8 is rebuilt only where it is missing (a rebuild rewrites every chunk
    under an exclusive lock: over ten minutes at a million chunks). Positive control: a store
    whose text vector still analyses with ``simple`` (as versions 2 to 7 did) is rebuilt, its
    vectors stemmed after."""
    store_id = str(dds.new_store(vector_dim=DIM))
    with dds.owner_store(store_id) as owner:
        owner.add(["alice went running"], "memory", user_ids="alice",
                  embeddings=[np.ones(DIM, dtype=np.float32)])
    chunks = sql.Identifier(OWNER, f"{store_id}_record_chunks")
    with psycopg.connect(dds.owner_url) as conn:
        before = _storage(conn, store_id)
        assert len(before) > CHUNK_PARTITIONS  # partitions and their indexes
        OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id, vector_dim=DIM)
        conn.commit()
        assert _storage(conn, store_id) == before
        conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN search_tsv").format(chunks))
        conn.execute(sql.SQL(
            "ALTER TABLE {} ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS "
            "(to_tsvector('simple', coalesce(chunk_text, ''))) STORED").format(chunks))
        conn.commit()
        assert "'simple'" in _text_vector_expression(conn, store_id)
        simple = _storage(conn, store_id)
        OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                            memory_store_id=store_id, vector_dim=DIM)
        conn.commit()
        assert "'english'" in _text_vector_expression(conn, store_id)
        rebuilt = _storage(conn, store_id)
        assert rebuilt != simple
        assert conn.execute(sql.SQL("SELECT search_tsv::text FROM {}").format(chunks)
                            ).fetchall() == [("'alic':1 'run':3 'went':2",)]
