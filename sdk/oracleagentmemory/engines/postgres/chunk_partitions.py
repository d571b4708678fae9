"""The chunks table hash-partitioned by owner (schema version 9), and the move to it.

A store's retrieval rows (``record_chunks``, the table that carries the embeddings) are split
into :data:`CHUNK_PARTITIONS` partitions by ``hash(user_id)``; every index is partitioned with
the table, so each partition has its own HNSW graph. A search filtered on its user
(``c.user_id = $n``, bound) is pruned by the executor to the one partition that can hold that
user's rows: its HNSW scan steps over the few users hashed alongside, not over every user.

The partitions are reached only through the partitioned table, whose row-level security and
privileges are the store's: a partition gets no privilege (any it received, from default
privileges for instance, is revoked) and has row-level security enabled with no policy, so the
runtime login can neither read nor write nor truncate it by name.

An existing store's plain chunks table is rebuilt as a partitioned one in the same transaction,
rows and identity counter kept, with what the store's installation put on the old table carried
over from the catalogs: row-level security (enabled, forced), its policies, its table and column
privileges and its triggers (the write audit's, with their enabled state). The same move takes a
partitioned chunks table to another partition count (``ddl.repartition_chunks``).
"""

from __future__ import annotations

from typing import Any

from psycopg import Connection, sql

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.postgres import names as q

__all__ = ["CHUNK_PARTITIONS", "MAX_CHUNK_PARTITIONS", "partition_chunks", "chunks_are_partitioned",
           "partition_count", "partition_names"]

CHUNK_PARTITIONS = 16
"""How many hash partitions of the chunks a store gets (by ``user_id``).

A partition's HNSW scan for one user steps over the rows of the other users hashed to it: about
``1/16`` of the others'. Measured at 4 users x 5k 256-d chunks (see the README's Benchmarks):
recall@10 against exact search and the database CPU of a search, against the unpartitioned
table. Sixteen keeps the number of relations (16 partitions, each with its 5 indexes) small for a
store that holds a few rows, and a partition per 60 users at 1,000 users.

A store with many users can have more (``ddl.repartition_chunks``): a search's database CPU does
not grow with the count (the same at 16 and 64 when no user shares; the generic plan lists every
partition, the executor keeps one), while creating a store takes longer (about 0.3 s at 16,
0.85 s at 64 on a busy 2-core machine). At 16 users x 5,000 random 256-d chunks, 64 partitions
cut a search's database CPU from 4,400 to 3,300 us and raised recall@10 from 0.70 to 0.78 at the
same ``ef_search``.
"""

MAX_CHUNK_PARTITIONS = 100
"""The most partitions a chunks table may have (their names hold two digits)."""

_STAGING = "chunks_v9"


def partition_names(names: StoreNames, partitions: int = CHUNK_PARTITIONS
                    ) -> list[sql.Composable]:
    """Qualified, quoted names of the chunk partitions (``<prefix>chunks_pNN``)."""
    return [q.index_qualified(names, f"chunks_p{n:02d}") for n in range(partitions)]


def chunks_are_partitioned(conn: Connection[Any], names: StoreNames) -> bool:
    """Whether the store's chunks table is already the partitioned one."""
    row = conn.execute("SELECT relkind = 'p' FROM pg_class WHERE oid = %s::regclass",
                       [q.table(names, "record_chunks").as_string(conn)]).fetchone()
    return bool(row and row[0])


def partition_count(conn: Connection[Any], names: StoreNames) -> int:
    """How many partitions the store's chunks table has (0: a plain table)."""
    row: Any = conn.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = %s::regclass",
                            [q.table(names, "record_chunks").as_string(conn)]).fetchone()
    return int(row[0])


def partition_chunks(conn: Connection[Any], names: StoreNames,
                     partitions: int | None = None) -> None:
    """Replace the chunks table by one of ``partitions`` hash partitions by owner, keeping rows
    and security.

    The new table has the old one's columns (identity, generated text vector and defaults
    included); the caller creates its indexes afterwards (partitioned with it). The old table
    is plain (schema version 8) or partitioned with another count. ``None`` (the schema step):
    :data:`CHUNK_PARTITIONS`, and a no-op when the table is partitioned already; a count: a
    no-op when the table has that many partitions.
    """
    if partitions is not None and not 1 <= partitions <= MAX_CHUNK_PARTITIONS:
        raise ValueError(f"a chunks table has 1 to {MAX_CHUNK_PARTITIONS} partitions")
    chunks = q.table(names, "record_chunks")
    staging = q.index_qualified(names, _STAGING)
    # No write may reach the old table once the copy has read it (reads may go on until the
    # DROP): the lock is held until the transaction ends.
    conn.execute(sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(chunks))
    current = partition_count(conn, names) if chunks_are_partitioned(conn, names) else 0
    if (current and partitions is None) or current == partitions:
        return
    partitions = partitions or CHUNK_PARTITIONS
    # The old partitions give up their names to the new ones (they go with the old table).
    for n, (schema, old) in enumerate(conn.execute(
            "SELECT s.nspname, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = "
            "i.inhrelid JOIN pg_namespace s ON s.oid = c.relnamespace WHERE i.inhparent = "
            "%s::regclass", [chunks.as_string(conn)]).fetchall()):
        conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
            sql.Identifier(schema, old), sql.Identifier(names.object_name(f"chunks_old{n:02d}"))))
    carried = _carried_statements(conn, chunks)
    conn.execute(sql.SQL(
        "CREATE TABLE {} (LIKE {} INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING IDENTITY "
        "INCLUDING CONSTRAINTS INCLUDING STORAGE) PARTITION BY HASH (user_id)"
    ).format(staging, chunks))
    for remainder, partition in enumerate(partition_names(names, partitions)):
        conn.execute(sql.SQL(
            "CREATE TABLE {} PARTITION OF {} FOR VALUES WITH (MODULUS {}, REMAINDER {})"
        ).format(partition, staging, sql.Literal(partitions), sql.Literal(remainder)))
        seal_partition(conn, partition)
    columns = [sql.Identifier(r[0]) for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
        [chunks.as_string(conn)]).fetchall()]
    conn.execute(sql.SQL(
        "INSERT INTO {} ({cols}) OVERRIDING SYSTEM VALUE SELECT {cols} FROM {}"
    ).format(staging, chunks, cols=sql.SQL(", ").join(columns)))
    # The identity counter goes on from the old one's (ids are never reused).
    conn.execute(
        "SELECT setval(pg_get_serial_sequence(%s, 'id')::regclass, coalesce(l.v, 1), "
        "l.v IS NOT NULL) FROM (SELECT pg_sequence_last_value("
        "pg_get_serial_sequence(%s, 'id')::regclass) AS v) l",
        [staging.as_string(conn), chunks.as_string(conn)])
    conn.execute(sql.SQL("DROP TABLE {}").format(chunks))  # no CASCADE: nothing may depend on it
    conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
        staging, sql.Identifier(names.table("record_chunks"))))
    sequence: Any = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.oid = pg_get_serial_sequence(%s, 'id')::regclass",
        [chunks.as_string(conn)]).fetchone()
    conn.execute(sql.SQL("ALTER SEQUENCE {} RENAME TO {}").format(
        sql.Identifier(*sequence), sql.Identifier(names.object_name("chunks_id_seq"))))
    for statement in carried:
        conn.execute(statement)


def seal_partition(conn: Connection[Any], partition: sql.Composable) -> None:
    """No privilege on ``partition`` for anyone but its owner, and row-level security on
    with no policy: reachable only through the partitioned table."""
    grantees = conn.execute(
        "SELECT DISTINCT a.grantee FROM pg_class c, aclexplode(c.relacl) a "
        "WHERE c.oid = %s::regclass AND a.grantee <> c.relowner",
        [partition.as_string(conn)]).fetchall()
    for (grantee,) in grantees:
        conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(partition, _role(conn, grantee)))
    conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(partition))


def _role(conn: Connection[Any], oid: int) -> sql.Composable:
    if oid == 0:
        return sql.SQL("PUBLIC")
    row: Any = conn.execute("SELECT rolname FROM pg_roles WHERE oid = %s", [oid]).fetchone()
    return sql.Identifier(str(row[0]))


def _carried_statements(conn: Connection[Any], table: sql.Composable) -> list[sql.Composed]:
    """Statements that put ``table``'s row security, policies, privileges and triggers on the
    table that takes its name (read from the catalogs before it is dropped)."""
    relation = table.as_string(conn)
    statements: list[sql.Composed] = []
    flags: Any = conn.execute(
        "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s::regclass",
        [relation]).fetchone()
    if flags[0]:
        statements.append(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(table))
    if flags[1]:
        statements.append(sql.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(table))
    for name, permissive, roles, command, using, check in conn.execute(
            "SELECT p.polname, p.polpermissive, p.polroles, p.polcmd, "
            "pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid) "
            "FROM pg_policy p WHERE p.polrelid = %s::regclass ORDER BY p.polname",
            [relation]).fetchall():
        commands = {"r": "SELECT", "a": "INSERT", "w": "UPDATE", "d": "DELETE", "*": "ALL"}
        statements.append(sql.SQL("CREATE POLICY {} ON {} AS {} FOR {} TO {}{}{}").format(
            sql.Identifier(name), table, sql.SQL("PERMISSIVE" if permissive else "RESTRICTIVE"),
            sql.SQL(commands[command]),
            sql.SQL(", ").join(_role(conn, int(r)) for r in roles),
            sql.SQL("") if using is None else sql.SQL(" USING ({})").format(sql.SQL(using)),
            sql.SQL("") if check is None else sql.SQL(" WITH CHECK ({})").format(sql.SQL(check)),
        ))
    for grantee, privilege, column in conn.execute(
            "SELECT a.grantee, a.privilege_type, NULL FROM pg_class c, aclexplode(c.relacl) a "
            "WHERE c.oid = %s::regclass AND a.grantee <> c.relowner "
            "UNION ALL SELECT a.grantee, a.privilege_type, t.attname FROM pg_attribute t "
            "JOIN pg_class c ON c.oid = t.attrelid, aclexplode(t.attacl) a "
            "WHERE t.attrelid = %s::regclass AND NOT t.attisdropped AND a.grantee <> c.relowner "
            "ORDER BY 1, 2, 3", [relation, relation]).fetchall():
        statements.append(sql.SQL("GRANT {}{} ON {} TO {}").format(
            sql.SQL(privilege),
            sql.SQL("") if column is None else sql.SQL(" ({})").format(sql.Identifier(column)),
            table, _role(conn, int(grantee))))
    for definition, enabled, name in conn.execute(
            "SELECT pg_get_triggerdef(t.oid), t.tgenabled, t.tgname FROM pg_trigger t "
            "WHERE t.tgrelid = %s::regclass AND NOT t.tgisinternal ORDER BY t.tgname",
            [relation]).fetchall():
        statements.append(sql.Composed([sql.SQL(definition)]))
        state = {"A": "ENABLE ALWAYS", "R": "ENABLE REPLICA", "D": "DISABLE"}.get(str(enabled))
        if state is not None:
            statements.append(sql.SQL("ALTER TABLE {} {} TRIGGER {}").format(
                table, sql.SQL(state), sql.Identifier(name)))
    return statements
