"""The Oracle expired-record purge and its DBMS_SCHEDULER job (``engines/oracle/purge_job.py``),
without Oracle.

The PL/SQL blocks are pinned by reviewed golden files under
``tests/golden/oracle_engine/purge/`` (rewrite with ``OAM_UPDATE_GOLDEN=1`` after review).
sqlglot cannot parse PL/SQL, so each block is checked by the shape of its documented grammar
(``DECLARE ... BEGIN ... END;``, balanced ``LOOP``/``END LOOP``, ``IF``/``END IF``), and every
SQL statement inside the purge block is cut out (``FORALL`` prefix and ``RETURNING ... BULK
COLLECT INTO`` suffix removed, PL/SQL variables turned into binds) and parsed with sqlglot's
Oracle dialect. The privilege probe is plain SQL and parsed as is.
"""

from __future__ import annotations

import re
from pathlib import Path

import oracledb
import pytest
import sqlglot
from golden_files import assert_matches_golden, golden_text
from oracleagentmemory.engines.layout import EXPIRING_TABLES
from oracleagentmemory.engines.oracle import purge_job
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names
from oracleagentmemory.errors import InvalidArgumentError
from sqlglot import exp

GOLDEN = Path(__file__).parent / "golden" / "oracle_engine" / "purge"
SPEC_WARNING = ("Expired messages and memories stay hidden from reads and search, but they are "
                "not physically purged until the job is created by a user with CREATE JOB or an "
                "equivalent scheduler privilege.")


def objects(store: str | None = "st", owner: str = "oam_owner",
            prefix: str | None = None) -> OracleObjects:
    return OracleObjects.of(derive_store_names(
        memory_store_id=store, table_name_prefix=prefix, schema_owner=owner))


SCENARIOS = {
    "session_purge": lambda: [purge_job.purge_statement(objects()).sql],
    "job": lambda: [purge_job.create_job_block(objects()).sql,
                    purge_job.job_action(objects()),
                    purge_job.drop_job_block(objects()).sql],
    "privilege_probe": lambda: [purge_job.privilege_probe().sql],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_statements_match_the_reviewed_golden_file(name: str) -> None:
    assert_matches_golden(GOLDEN / f"{name}.sql", golden_text(
        "Oracle purge statements", name, "oracleagentmemory.engines.oracle.purge_job",
        "tests/test_oracle_purge_job.py", SCENARIOS[name]()))


# --- PL/SQL shape, and the SQL inside it ---------------------------------------------------------
def check_block(block: str) -> None:
    """The grammar's outline: one DECLARE ... BEGIN ... END; with balanced loops and ifs."""
    assert block.startswith("DECLARE ") and block.endswith(" END;"), block
    assert block.count(" BEGIN ") == 1, block
    assert block.count("LOOP ") == block.count("END LOOP;")  # "END LOOP;" has no "LOOP "
    assert block.count(" IF ") == block.count(" END IF;")
    assert "--" not in block and "/*" not in block


_STATEMENT_START = re.compile(r"^(?:BEGIN )?(?:LOOP )?(?:FORALL i IN 1 \.\. v_\w+\.COUNT )?")
_RETURNING = re.compile(r" RETURNING [\w., ]+ BULK COLLECT INTO v_\w+, v_\w+$")


def embedded_sql(block: str) -> list[str]:
    """The DML statements of a purge block, as plain SQL with binds for PL/SQL variables."""
    found = []
    for piece in block.split(";"):
        text = _STATEMENT_START.sub("", piece.strip())
        if not text.startswith(("DELETE ", "UPDATE ")):
            continue
        text = _RETURNING.sub("", text)
        text = re.sub(r"\bv_(\w+)\(i\)", r":\1", text)
        found.append(text.replace("v_now", ":v_now"))
    return found


def test_the_purge_blocks_have_the_grammar_outline() -> None:
    o = objects()
    for block in (purge_job.purge_statement(o).sql, purge_job.job_action(o),
                  purge_job.create_job_block(o).sql, purge_job.drop_job_block(o).sql):
        check_block(block)


def test_every_sql_statement_inside_the_purge_parses() -> None:
    statements = embedded_sql(purge_job.purge_statement(objects()).sql)
    kinds: dict[str, int] = {}
    for statement in statements:
        tree = sqlglot.parse_one(statement, read="oracle")
        assert not isinstance(tree, exp.Command), statement
        kinds[tree.key] = kinds.get(tree.key, 0) + 1
        for table in tree.find_all(exp.Table):
            assert table.db == "OAM_OWNER", statement
    # 4 tables, 3 chunk deletes + parts + links cascades, 1 status update
    assert kinds == {"delete": 10, "update": 1}


def test_positive_control_a_broken_embedded_statement_fails_to_parse() -> None:
    block = purge_job.purge_statement(objects()).sql.replace("WHERE c.record_type IN (",
                                                              "WHERE c.record_type IN ((", 1)
    with pytest.raises(sqlglot.errors.ParseError):
        for statement in embedded_sql(block):
            sqlglot.parse_one(statement, read="oracle")


def test_every_expiring_table_is_purged_with_its_cascade() -> None:
    block = purge_job.purge_statement(objects()).sql
    for table in EXPIRING_TABLES:
        assert (f'LOOP DELETE FROM "OAM_OWNER"."ST_{table.upper()}" WHERE expires_at IS NOT NULL '
                "AND expires_at <= v_now AND ROWNUM <= 1000") in block
    assert block.count('DELETE FROM "OAM_OWNER"."ST_RECORD_CHUNKS"') == 4
    assert "c.record_type IN ('fact', 'guideline', 'memory', 'preference')" in block
    assert 'DELETE FROM "OAM_OWNER"."ST_MEMORY_LINK" l' in block
    assert "d.message_id = v_ids(i)" in block  # a message's image parts
    assert "v_types(i) IN ('duplicates', 'refines', 'supersedes')" in block
    assert block.index('"ST_MESSAGE"') < block.index('"ST_MEMORY"') \
        < block.index('"ST_THREAD_SUMMARY"') < block.rindex('LOOP DELETE FROM "OAM_OWNER"."ST_DOC')


def test_the_session_reports_counts_and_the_job_commits() -> None:
    o = objects()
    session = purge_job.purge_statement(o)
    assert "COMMIT" not in session.sql
    assert session.out_binds == {f"{t}_count": oracledb.DB_TYPE_NUMBER for t in EXPIRING_TABLES}
    assert set(re.findall(r":(\w+) :=", session.sql)) == set(session.out_binds)
    action = purge_job.job_action(o)
    assert action.count("COMMIT;") == len(EXPIRING_TABLES) and ":" not in action.replace(":=", "")
    assert '"OAM_OWNER"' not in action and 'DELETE FROM "ST_MEMORY"' in action
    assert purge_job.purged_counts({"message_count": 3, "memory_count": 2.0,
                                    "document_count": None}) == {
        "message": 3, "memory": 2, "thread_summary": 0, "document": 0}


def test_the_job_action_fits_the_scheduler_at_any_owner_name() -> None:
    longest = objects(store="s" * 16, owner="O" * 128)
    assert len(purge_job.job_action(longest)) < purge_job.MAX_JOB_ACTION_CHARS
    with pytest.raises(InvalidArgumentError, match="characters"):
        purge_job.create_job_block(objects(store=None, prefix="P" * 100 + "_"))


def test_the_job_is_created_once_with_every_value_bound() -> None:
    o = objects()
    block = purge_job.create_job_block(o)
    assert "FROM USER_SCHEDULER_JOBS WHERE job_name = v_job_name" in block.sql
    assert "IF v_existing = 0 THEN DBMS_SCHEDULER.CREATE_JOB(job_name => v_qualified" in block.sql
    assert "DBMS_SCHEDULER.ENABLE(v_qualified)" in block.sql
    assert "enabled => FALSE, auto_drop => FALSE" in block.sql
    assert block.binds == {
        "job_name": "ST_PURGE_EXPIRED_JOB",
        "qualified_job_name": '"OAM_OWNER"."ST_PURGE_EXPIRED_JOB"',
        "job_action": purge_job.job_action(o),
        "repeat_interval": "FREQ=DAILY;INTERVAL=1",
        "comments": "Oracle Agent Memory: purge expired records of store ST",
    }
    for name in block.binds:
        assert block.sql.count(f":{name}") == 1, name  # each bound once (PL/SQL binds)
    default = purge_job.create_job_block(objects(store=None)).binds
    assert isinstance(default, dict) and default["job_name"] == "PURGE_EXPIRED_JOB"


def test_the_privilege_probe_parses_and_binds_the_privileges() -> None:
    probe = purge_job.privilege_probe()
    tree = sqlglot.parse_one(probe.sql, read="oracle")
    assert isinstance(tree, exp.Select)
    assert probe.binds == {"privilege_0": "CREATE JOB", "privilege_1": "CREATE ANY JOB"}
    assert probe.columns == ("session_user", "privilege")


def test_the_owner_with_create_job_gets_no_warning() -> None:
    o = objects()
    assert purge_job.missing_privilege_warning(o, "OAM_OWNER", {"CREATE JOB"}) is None
    assert purge_job.missing_privilege_warning(o, "oam_owner", {"CREATE ANY JOB"}) is None


def test_without_the_privilege_the_warning_says_what_the_spec_says() -> None:
    warning = purge_job.missing_privilege_warning(objects(), "OAM_OWNER", {"CREATE SESSION"})
    assert warning is not None
    assert "OAM_OWNER.ST_PURGE_EXPIRED_JOB was not created" in warning
    assert "lacks the CREATE JOB privilege; initialization continues" in warning
    assert SPEC_WARNING.rstrip(".").lower().removeprefix("expired ") in warning.lower()


def test_another_user_than_the_owner_does_not_create_the_job() -> None:
    warning = purge_job.missing_privilege_warning(objects(), "APP_POOL", {"CREATE JOB"})
    assert warning is not None and "belongs to the schema owner OAM_OWNER" in warning
    assert "APP_POOL" in warning
