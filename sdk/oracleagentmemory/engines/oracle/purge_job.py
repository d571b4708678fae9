"""The expired-record purge on Oracle: the PL/SQL that deletes expired rows, and the
``DBMS_SCHEDULER`` job that runs it daily, created by the schema owner.

What is deleted is what the PostgreSQL engine's ``purge_expired`` deletes, table by table in
``EXPIRING_TABLES`` order (messages, memories, thread summaries, images), each expired row
(``expires_at <= SYSTIMESTAMP``, fixed when the block starts) with what goes with it:

* a message: its retrieval rows and its image parts (with theirs);
* a memory: its retrieval rows and its relations (the owner rule of ``delete_links_of``), then
  the status of each memory a deleted lifecycle relation targeted is recomputed;
* an image: its retrieval rows.

:func:`purge_block` renders it as one PL/SQL block, in batches of :data:`PURGE_BATCH_ROWS`
rows (``DELETE ... AND ROWNUM <= n RETURNING ... BULK COLLECT INTO``, the cascades by
``FORALL``). Run by the session (``EngineSession.purge_expired``), it reports each table's count
through OUT binds and does not commit (the session does). As the job's action it commits each
batch, so a large purge holds no long transaction. The job runs as its owner, the schema
owner; Deep Data Security filters end-user sessions only, so the job sees every row (Oracle
Database Security Guide, Deep Data Security: it does not apply to database users).

The job (:func:`create_job_block`) is created only by the schema owner holding ``CREATE JOB``
(or ``CREATE ANY JOB``): :func:`privilege_probe` reads ``SESSION_PRIVS``. Without it the engine
logs :func:`missing_privilege_warning` and goes on, as the spec says: expired records stay
hidden from reads and search, and are not physically deleted until the job exists.
``DBMS_SCHEDULER`` sources: PL/SQL Packages and Types Reference, "DBMS_SCHEDULER" (CREATE_JOB,
ENABLE; a ``PLSQL_BLOCK`` action is wrapped in the Scheduler's own block, so a ``DECLARE``
block is a valid action; scheduler objects share the SQL namespace of tables, so the job name
carries a suffix no table has).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import oracledb

from oracleagentmemory.engines.layout import EXPIRING_TABLES, LIFECYCLE_RELATION_TYPES, MEMORY_TYPES
from oracleagentmemory.engines.oracle.names import OracleObjects, normalise, quote
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import InvalidArgumentError

JOB_SUFFIX = "purge_expired_job"
"""The job's name: the store's prefix, then this (``ST_PURGE_EXPIRED_JOB``)."""

PURGE_BATCH_ROWS = 1000
"""Rows of one table deleted per batch (the job commits after each)."""

REPEAT_INTERVAL = "FREQ=DAILY;INTERVAL=1"
"""When the job runs: once a day, from its creation (a Scheduler calendaring expression)."""

MAX_JOB_ACTION_CHARS = 4000
"""The longest job action the Scheduler's dictionary stores (``*_SCHEDULER_JOBS.JOB_ACTION``
is ``VARCHAR2(4000)``: [UNCERTAIN] from the dictionary views' description, not checked on
26ai). :func:`job_action` stays below it; :func:`create_job_block` checks."""

JOB_PRIVILEGES = ("CREATE JOB", "CREATE ANY JOB")
"""Either lets the schema owner create the job in its own schema."""

JOB_PRIVILEGE_ERRORS = frozenset({1031, 27486})
"""ORA-01031 (insufficient privileges), ORA-27486 (insufficient privileges on a scheduler
object): raised by the creation block when the privilege went missing after the probe; the
engine warns as for a failed probe."""

COUNT_BINDS: dict[str, str] = {table: f"{table}_count" for table in EXPIRING_TABLES}
"""The OUT bind of each table's purged-record count (session mode)."""

_LIFECYCLE = ", ".join(f"'{t}'" for t in sorted(LIFECYCLE_RELATION_TYPES))
_MEMORY_TYPES = ", ".join(f"'{t}'" for t in sorted(MEMORY_TYPES))


def job_name(o: OracleObjects) -> str:
    """The job's unquoted, upper-case name (as ``USER_SCHEDULER_JOBS.JOB_NAME`` stores it)."""
    return o.object_name(JOB_SUFFIX)


def qualified_job_name(o: OracleObjects) -> str:
    """``"OWNER"."ST_PURGE_EXPIRED_JOB"``: the name ``DBMS_SCHEDULER`` is given."""
    return o.index(JOB_SUFFIX)


def _owned(column: str, owner: str) -> str:
    """``column IS NOT DISTINCT FROM owner``."""
    return f"({column} = {owner} OR ({column} IS NULL AND {owner} IS NULL))"


Tables = Callable[[str], str]
"""The SQL name of a managed table, qualified (session) or not (job action)."""


def _delete_chunks(t: Tables, types: str, ids: str, owners: str) -> str:
    return (f"FORALL i IN 1 .. {ids}.COUNT DELETE FROM {t('record_chunks')} c "
            f"WHERE c.record_type IN ({types}) AND c.record_id = {ids}(i) "
            f"AND {_owned('c.user_id', f'{owners}(i)')};")


def _batch(t: Tables, logical: str, counter: str, cascade: list[str], commit: bool) -> str:
    """One table's loop: delete a batch of expired rows, cascade, (commit), repeat."""
    return (f"LOOP DELETE FROM {t(logical)} WHERE expires_at IS NOT NULL AND "
            f"expires_at <= v_now AND ROWNUM <= {PURGE_BATCH_ROWS} RETURNING id, user_id "
            "BULK COLLECT INTO v_ids, v_owners; EXIT WHEN v_ids.COUNT = 0; "
            f"{counter} := {counter} + v_ids.COUNT;{''.join(' ' + c for c in cascade)}"
            f"{' COMMIT;' if commit else ''} END LOOP;")


def purge_block(o: OracleObjects, *, commit_each_batch: bool, report_counts: bool,
                qualified: bool = True) -> str:
    """The PL/SQL block that deletes every expired record of the store (module docstring).

    ``report_counts`` assigns each table's count to its OUT bind (:data:`COUNT_BINDS`);
    without it the block has no bind at all (a job action cannot have binds). ``qualified``
    false writes the tables' quoted names without the owner: only for the job's action, which
    runs with the schema owner's schema as its current schema.
    """
    def t(logical: str) -> str:
        return o.table(logical) if qualified else quote(o.names.table(logical),
                                                        what="table name")

    message_cascade = [
        _delete_chunks(t, "'message'", "v_ids", "v_owners"),
        "v_part_ids := id_list(); v_part_owners := id_list();",
        f"FORALL i IN 1 .. v_ids.COUNT DELETE FROM {t('document')} d WHERE "
        f"d.message_id = v_ids(i) AND {_owned('d.user_id', 'v_owners(i)')} "
        "RETURNING d.id, d.user_id BULK COLLECT INTO v_part_ids, v_part_owners;",
        _delete_chunks(t, "'image'", "v_part_ids", "v_part_owners"),
    ]
    memory_cascade = [
        _delete_chunks(t, _MEMORY_TYPES, "v_ids", "v_owners"),
        "v_targets := id_list(); v_types := id_list();",
        f"FORALL i IN 1 .. v_ids.COUNT DELETE FROM {t('memory_link')} l WHERE "
        f"(l.source_id = v_ids(i) OR l.target_id = v_ids(i)) AND "
        f"({_owned('l.user_id', 'v_owners(i)')} OR (v_owners(i) IS NULL AND NOT EXISTS "
        f"(SELECT 1 FROM {t('memory')} m WHERE m.id = v_ids(i) AND "
        "m.user_id = l.user_id))) RETURNING l.target_id, l.relation_type "
        "BULK COLLECT INTO v_targets, v_types;",
        f"FORALL i IN 1 .. v_targets.COUNT UPDATE {t('memory')} m SET status = CASE "
        f"WHEN EXISTS (SELECT 1 FROM {t('memory_link')} k WHERE k.target_id = m.id AND "
        f"(k.user_id = m.user_id OR m.user_id IS NULL) AND k.relation_type IN ({_LIFECYCLE})) "
        "THEN 'invalid' ELSE 'valid' END, updated_at = SYSTIMESTAMP WHERE "
        f"m.id = v_targets(i) AND v_types(i) IN ({_LIFECYCLE});",
    ]
    cascades: dict[str, list[str]] = {
        "message": message_cascade,
        "memory": memory_cascade,
        "thread_summary": [],
        "document": [_delete_chunks(t, "'image'", "v_ids", "v_owners")],
    }
    counters = {table: f"v_{table}" for table in EXPIRING_TABLES}
    declarations = " ".join(f"{counter} NUMBER := 0;" for counter in counters.values())
    loops = " ".join(_batch(t, table, counters[table], cascades[table], commit_each_batch)
                     for table in EXPIRING_TABLES)
    report = "".join(f" :{COUNT_BINDS[table]} := {counters[table]};"
                     for table in EXPIRING_TABLES) if report_counts else ""
    return ("DECLARE TYPE id_list IS TABLE OF VARCHAR2(128 CHAR); "
            "v_now TIMESTAMP WITH TIME ZONE := SYSTIMESTAMP; v_ids id_list; v_owners id_list; "
            "v_part_ids id_list; v_part_owners id_list; v_targets id_list; v_types id_list; "
            f"{declarations} BEGIN {loops}{report} END;")


def purge_statement(o: OracleObjects) -> Statement:
    """``EngineSession.purge_expired``: the block in the session's transaction (no commit),
    each table's count in an OUT bind (``cursor.var(int)``; their sum is the result)."""
    return Statement(sql=purge_block(o, commit_each_batch=False, report_counts=True),
                     out_binds=dict.fromkeys(COUNT_BINDS.values(), oracledb.DB_TYPE_NUMBER))


def purged_counts(values: Mapping[str, object]) -> dict[str, int]:
    """Each table's purged count from the OUT binds' values (``None`` counts as 0)."""
    counts: dict[str, int] = {}
    for table, bind in COUNT_BINDS.items():
        value = values.get(bind)
        counts[table] = int(value) if isinstance(value, (int, float)) else 0
    return counts


def job_action(o: OracleObjects) -> str:
    """The job's ``PLSQL_BLOCK`` action: the purge, committing each batch.

    Its table names are quoted but not owner-qualified: the job runs as the schema owner (its
    current schema is the owner's), and without the owner the action stays under
    :data:`MAX_JOB_ACTION_CHARS` whatever the owner's name (it grows with the store's prefix
    only: about 3,500 characters with the longest ``memory_store_id``; a long deprecated
    ``table_name_prefix`` can pass the limit).
    """
    return purge_block(o, commit_each_batch=True, report_counts=False, qualified=False)


def create_job_block(o: OracleObjects, *, repeat_interval: str = REPEAT_INTERVAL
                     ) -> Statement:
    """Create and enable the purge job unless ``USER_SCHEDULER_JOBS`` already has it.

    Run as the schema owner (the job is created in the session user's schema, and
    ``USER_SCHEDULER_JOBS`` lists that user's jobs). Every value is bound: the job's names, its
    action, its schedule and comment. Raises :class:`InvalidArgumentError` when the store's
    names make the action longer than :data:`MAX_JOB_ACTION_CHARS`.
    """
    action = job_action(o)
    if len(action) > MAX_JOB_ACTION_CHARS:
        raise InvalidArgumentError(
            f"the purge job's action would be {len(action)} characters, more than the "
            f"{MAX_JOB_ACTION_CHARS} the Scheduler stores (shorten the schema owner's or the "
            "store's name)")
    return Statement(
        sql=("DECLARE v_job_name CONSTANT VARCHAR2(128) := :job_name; "
             "v_qualified CONSTANT VARCHAR2(300) := :qualified_job_name; "
             "v_existing PLS_INTEGER; BEGIN "
             "SELECT COUNT(*) INTO v_existing FROM USER_SCHEDULER_JOBS "
             "WHERE job_name = v_job_name; "
             "IF v_existing = 0 THEN DBMS_SCHEDULER.CREATE_JOB(job_name => v_qualified, "
             "job_type => 'PLSQL_BLOCK', job_action => :job_action, "
             "start_date => SYSTIMESTAMP, repeat_interval => :repeat_interval, "
             "enabled => FALSE, auto_drop => FALSE, comments => :comments); "
             "DBMS_SCHEDULER.ENABLE(v_qualified); END IF; END;"),
        binds={"job_name": job_name(o), "qualified_job_name": qualified_job_name(o),
               "job_action": action, "repeat_interval": repeat_interval,
               "comments": f"Oracle Agent Memory: purge expired records of store "
                           f"{o.names.store_key or '(default)'}"},
    )


def drop_job_block(o: OracleObjects) -> Statement:
    """Drop the purge job if ``USER_SCHEDULER_JOBS`` has it (with the store; ``force``
    stops a running purge first)."""
    return Statement(
        sql=("DECLARE v_job_name CONSTANT VARCHAR2(128) := :job_name; "
             "v_qualified CONSTANT VARCHAR2(300) := :qualified_job_name; "
             "v_existing PLS_INTEGER; BEGIN "
             "SELECT COUNT(*) INTO v_existing FROM USER_SCHEDULER_JOBS "
             "WHERE job_name = v_job_name; "
             "IF v_existing > 0 THEN DBMS_SCHEDULER.DROP_JOB(job_name => v_qualified, "
             "force => TRUE); END IF; END;"),
        binds={"job_name": job_name(o), "qualified_job_name": qualified_job_name(o)},
    )


def privilege_probe() -> Statement:
    """The session user and which of :data:`JOB_PRIVILEGES` it holds (``SESSION_PRIVS`` lists
    the privileges in effect in the session, granted directly or through enabled roles)."""
    names = {f"privilege_{n}": p for n, p in enumerate(JOB_PRIVILEGES)}
    return Statement(
        sql=("SELECT USER AS \"session_user\", p.privilege AS \"privilege\" FROM dual "
             "LEFT JOIN SESSION_PRIVS p ON p.privilege IN "
             f"({', '.join(':' + n for n in names)})"),
        binds=names,
        columns=("session_user", "privilege"),
    )


def missing_privilege_warning(o: OracleObjects, session_user: str,
                              privileges: set[str]) -> str | None:
    """The warning to log instead of creating the job, or ``None`` when it can be created:
    the session user must be the schema owner and hold one of :data:`JOB_PRIVILEGES`."""
    user = normalise(session_user, what="session user")
    job = f"{o.owner}.{job_name(o)}"
    consequence = ("expired messages and memories stay hidden from reads and search, but they "
                   "are not physically purged until the job is created by a user with CREATE "
                   "JOB or an equivalent scheduler privilege (reopen the store as the schema "
                   "owner with SchemaPolicy.CREATE_IF_NECESSARY, or run `oam-admin "
                   "purge-expired` meanwhile)")
    if user != o.owner:
        return (f"the managed expired-record purge job {job} was not created: it belongs to "
                f"the schema owner {o.owner}, and this session's user is {user}; "
                f"initialization continues: {consequence}")
    if not privileges & set(JOB_PRIVILEGES):
        return (f"the managed expired-record purge job {job} was not created: {user} lacks "
                f"the CREATE JOB privilege; initialization continues: {consequence}")
    return None
