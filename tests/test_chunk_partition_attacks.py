"""The chunk partitions under attack: the runtime login reaches them only through the store's table.

Schema version 9 splits the chunks (the table carrying the embeddings) into hash partitions by
owner. Row-level security and privileges are the partitioned table's, and a partition's own are
checked when it is named directly: each partition gets no privilege and row-level security with
no policy. Every attack runs as the runtime login ``oam_test_rt`` with alice's valid assertion
applied (the strongest position a compromised gateway has), finds the partitions through the
catalogs as an attacker would, and names them directly. The positive controls show the same
statements succeed on the partitioned table, so no attack passes because it is malformed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
import pytest
from dds import OWNER
from oracleagentmemory.engines.postgres.chunk_partitions import CHUNK_PARTITIONS
from psycopg import errors, sql

DIM = 3
APPLY = "SELECT oam_sec.apply_assertion(%s)"
Conn = psycopg.Connection[Any]


@pytest.fixture(scope="module")
def store(dds: Any) -> str:
    """A store where alice, bob and the global scope each own memories with embeddings."""
    store_id = str(dds.new_store(vector_dim=DIM))
    vectors = list(np.random.default_rng(7).standard_normal((30, DIM)).astype(np.float32))
    with dds.owner_store(store_id) as owner:
        for n, user in enumerate(("alice", "bob", None)):
            owner.add([f"{user}-{i}" for i in range(10)], "memory", user_ids=user,
                      embeddings=vectors[10 * n:10 * n + 10])
    return store_id


@contextmanager
def as_alice(dds: Any) -> Iterator[Conn]:
    """The runtime login inside one transaction with alice's verified assertion applied."""
    with psycopg.connect(dds.runtime_url) as conn, conn.transaction():
        conn.execute(APPLY, [dds.context("alice").assertion()], prepare=False)
        yield conn


def discovered_partitions(conn: Conn, store_id: str) -> list[sql.Identifier]:
    """The partitions of the store's chunks, found as an attacker would: in ``pg_catalog``."""
    rows = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE i.inhparent = %s::regclass "
        "ORDER BY c.relname", [f"{OWNER}.{store_id}_record_chunks"]).fetchall()
    return [sql.Identifier(schema, name) for schema, name in rows]


def chunks(store_id: str) -> sql.Identifier:
    return sql.Identifier(OWNER, f"{store_id}_record_chunks")


def refused(conn: Conn, statement: sql.Composed, params: list[Any] | None = None,
            expected: type[psycopg.Error] = errors.InsufficientPrivilege) -> str:
    """Run ``statement`` in a savepoint; it must fail with ``expected``. Returns the message."""
    with pytest.raises(expected) as caught, conn.transaction():
        conn.execute(statement, params)
    return str(caught.value)


def test_the_catalog_shows_one_partition_per_hash_remainder(dds: Any, store: str) -> None:
    with as_alice(dds) as conn:
        assert len(discovered_partitions(conn, store)) == CHUNK_PARTITIONS


def test_positive_control_alice_reads_and_writes_her_chunks_through_the_store_table(
        dds: Any, store: str) -> None:
    with as_alice(dds) as conn:
        rows = conn.execute(sql.SQL("SELECT user_id, count(*) FROM {} GROUP BY 1 ORDER BY 1")
                            .format(chunks(store))).fetchall()
        assert rows == [("alice", 10), (None, 10)]  # her rows and the global ones, never bob's
        with conn.transaction(force_rollback=True):  # the same writes the attacks try
            updated = conn.execute(sql.SQL("UPDATE {} SET embedding = embedding").format(
                chunks(store))).rowcount
            deleted = conn.execute(sql.SQL("DELETE FROM {} RETURNING user_id").format(
                chunks(store))).fetchall()
        assert updated == 10  # her own rows only
        assert deleted == [("alice",)] * 10


def test_a_partition_named_directly_refuses_every_statement(dds: Any, store: str) -> None:
    with as_alice(dds) as conn:
        for partition in discovered_partitions(conn, store):
            for statement in (
                    sql.SQL("SELECT * FROM {}").format(partition),
                    sql.SQL("SELECT count(*) FROM ONLY {}").format(partition),
                    sql.SQL("INSERT INTO {} (record_type, record_id, chunk_no, user_id) "
                            "VALUES ('memory', 'x', 0, 'alice')").format(partition),
                    sql.SQL("UPDATE {} SET chunk_text = 'x'").format(partition),
                    sql.SQL("DELETE FROM {}").format(partition),
                    sql.SQL("TRUNCATE {}").format(partition),
                    sql.SQL("COPY {} TO STDOUT").format(partition),
                    sql.SQL("COPY (SELECT * FROM {}) TO STDOUT").format(partition),
                    sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(partition),
            ):
                assert "permission denied" in refused(conn, statement)
            refused(conn, sql.SQL("COPY {} (record_type, record_id, chunk_no) FROM STDIN")
                    .format(partition))


def test_the_store_table_cannot_be_truncated_or_rearranged(dds: Any, store: str) -> None:
    with as_alice(dds) as conn:
        partition = discovered_partitions(conn, store)[0]
        table = chunks(store)
        for statement in (
                sql.SQL("TRUNCATE {}").format(table),
                sql.SQL("ALTER TABLE {} DETACH PARTITION {}").format(table, partition),
                sql.SQL("ALTER TABLE {} DISABLE ROW LEVEL SECURITY").format(partition),
                sql.SQL("ALTER TABLE {} NO FORCE ROW LEVEL SECURITY").format(table),
                sql.SQL("DROP TABLE {}").format(partition),
                sql.SQL("GRANT SELECT ON {} TO PUBLIC").format(partition),
        ):
            message = refused(conn, statement)
            assert "permission denied" in message or "must be owner" in message, message


def test_no_table_of_the_runtime_login_can_join_the_partitions(dds: Any, store: str) -> None:
    """ATTACH, a new partition and inheritance all need the store table's owner."""
    with as_alice(dds) as conn:
        partition = discovered_partitions(conn, store)[0]
        table = chunks(store)
        conn.execute("CREATE TEMP TABLE mine (LIKE pg_class)")  # a table the login owns
        for statement, expected in (
                (sql.SQL("CREATE TEMP TABLE spy () INHERITS ({})").format(partition),
                 (errors.InsufficientPrivilege, errors.WrongObjectType)),
                (sql.SQL("CREATE TEMP TABLE spy () INHERITS ({})").format(table),
                 (errors.InsufficientPrivilege, errors.WrongObjectType)),
                (sql.SQL("CREATE TEMP TABLE spy PARTITION OF {} FOR VALUES WITH "
                         "(MODULUS 32, REMAINDER 0)").format(table),
                 (errors.InsufficientPrivilege, errors.WrongObjectType)),
                (sql.SQL("ALTER TABLE {} ATTACH PARTITION pg_temp.mine FOR VALUES WITH "
                         "(MODULUS 32, REMAINDER 0)").format(table),
                 (errors.InsufficientPrivilege, errors.WrongObjectType)),
                (sql.SQL("ALTER TABLE pg_temp.mine INHERIT {}").format(partition),
                 (errors.InsufficientPrivilege, errors.WrongObjectType)),
        ):
            with pytest.raises(expected), conn.transaction():
                conn.execute(statement)


def test_a_partition_has_row_security_on_and_no_privilege_but_its_owners(
        dds: Any, store: str) -> None:
    with psycopg.connect(dds.owner_url) as conn:
        rows = conn.execute(
            "SELECT c.relrowsecurity, c.relacl IS NULL OR NOT EXISTS (SELECT 1 FROM "
            "aclexplode(c.relacl) a WHERE a.grantee <> c.relowner), NOT EXISTS (SELECT 1 FROM "
            "pg_attribute t WHERE t.attrelid = c.oid AND t.attacl IS NOT NULL), "
            "NOT EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid) "
            "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass", [f"{OWNER}.{store}_record_chunks"]).fetchall()
    assert rows == [(True, True, True, True)] * CHUNK_PARTITIONS


def test_a_partition_someone_granted_by_mistake_still_shows_no_row(dds: Any, store: str) -> None:
    """Row-level security on the partition (no policy: no row) holds if a grant slips through."""
    with as_alice(dds) as conn:
        partitions = discovered_partitions(conn, store)
    with psycopg.connect(dds.owner_url) as owner:
        for partition in partitions:
            owner.execute(sql.SQL("GRANT SELECT, DELETE ON {} TO {}").format(
                partition, sql.Identifier("oam_test_rt")))
        owner.commit()
        try:
            with as_alice(dds) as conn:
                seen = sum(conn.execute(sql.SQL("SELECT count(*) FROM {}").format(p))
                           .fetchone()[0] for p in partitions)  # type: ignore[index]
                gone = sum(conn.execute(sql.SQL("DELETE FROM {}").format(p)).rowcount
                           for p in partitions)
                through_table = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
                    chunks(store))).fetchone()
            assert (seen, gone) == (0, 0)
            assert through_table == (20,)  # positive control: alice's 10 and the 10 global
        finally:
            for partition in partitions:
                owner.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(
                    partition, sql.Identifier("oam_test_rt")))
            owner.commit()


def test_default_privileges_do_not_reach_a_new_stores_partitions(dds: Any) -> None:
    """Privileges the schema's default privileges give every new table are revoked from the
    partitions (TRUNCATE, which row-level security does not govern, among them)."""
    default = sql.SQL("ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA {owner} {} "
                      "SELECT, TRUNCATE ON TABLES {} oam_test_rt")
    with psycopg.connect(dds.owner_url, autocommit=True) as owner:
        owner.execute(default.format(sql.SQL("GRANT"), sql.SQL("TO"),
                                     owner=sql.Identifier(OWNER)))
        try:
            store_id = str(dds.new_store(vector_dim=DIM))
        finally:
            owner.execute(default.format(sql.SQL("REVOKE"), sql.SQL("FROM"),
                                         owner=sql.Identifier(OWNER)))
    try:
        with psycopg.connect(dds.runtime_url) as conn, conn.transaction():
            conn.execute(APPLY, [dds.context("alice").assertion()], prepare=False)
            partitions = discovered_partitions(conn, store_id)
            for partition in partitions:
                refused(conn, sql.SQL("TRUNCATE {}").format(partition))
                refused(conn, sql.SQL("SELECT * FROM {}").format(partition))
            # Positive control: the default privileges were in force for the store's tables.
            assert conn.execute(sql.SQL("SELECT has_table_privilege({}, 'TRUNCATE')").format(
                sql.Literal(f"{OWNER}.{store_id}_memory"))).fetchone() == (True,)
    finally:
        # The runtime login holds no direct privilege anywhere (test_deepsec_attacks checks it
        # over the whole database): take back what the default privileges gave this store.
        with psycopg.connect(dds.owner_url, autocommit=True) as owner:
            owner.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM oam_test_rt")
                          .format(sql.Identifier(OWNER)))
