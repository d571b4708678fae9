"""``oam-admin`` on Oracle URLs: ``store ... --in-database-model`` and Oracle's own wording.

No Oracle database runs here. The options are checked before anything connects (usage errors,
status 2); past that, each command drives python-oracledb's real pool and connect up to a closed
local port and must end with the one-line "database is unavailable" error (status 1). One test
watches the arguments the real ``OracleDBMemoryStore`` is given (the pool and the embedder) by
wrapping its constructor, which still runs. PostgreSQL keeps its behaviour and wording: the
embedded server checks ``store check --vector-dim`` and hybrid stores without a model.
"""

from __future__ import annotations

from typing import Any

import oracledb
import pytest
from cli_harness import Cli, cli, one_error, unique  # noqa: F401  (the fixture)
from local_ports import closed_port
from oracleagentmemory.admin_cli import check, security, store
from oracleagentmemory.admin_cli.main import build_parser
from oracleagentmemory.admin_cli.store_embedder import store_source
from oracleagentmemory.core import OracleDBMemoryStore
from oracleagentmemory.core.embedders.oracle_db import OracleDBEmbedder
from oracleagentmemory.engines.oracle.url import PASSWORD_ENV
from oracleagentmemory.errors import DatabaseUnavailableError

STORE_ACTIONS = ("create", "check", "upgrade", "recreate")
UNAVAILABLE = "the database is unavailable"




@pytest.fixture
def oracle_url(monkeypatch: pytest.MonkeyPatch) -> str:
    """The schema owner's plain-TCP Oracle URL of a closed local port; its password set."""
    monkeypatch.setenv(PASSWORD_ENV, "x")
    return f"oracle+tcp://oam_owner@127.0.0.1:{closed_port()}/FREEPDB1"


def store_args(action: str, *extra: str) -> list[str]:
    return ["store", action, "--memory-store-id", "demo", *extra,
            *(["--yes"] if action == "recreate" else [])]


def refused_before_connecting(result: Any, fragment: str) -> None:
    one_error(result, 2, fragment)
    assert UNAVAILABLE not in result.err
    assert "memory store 'demo'" not in result.err  # no progress: nothing was started


# --- options, before connecting ---------------------------------------------------------------
@pytest.mark.parametrize("action", STORE_ACTIONS)
def test_every_store_action_takes_the_model_option(action: str) -> None:
    args = build_parser().parse_args(store_args(action, "--in-database-model", "doc_model",
                                                "--vector-dim", "384"))
    assert (args.in_database_model, args.vector_dim) == ("doc_model", 384)


@pytest.mark.parametrize("action", ["create", "upgrade", "recreate"])
def test_hybrid_on_oracle_without_a_model_names_the_option(
        cli: Cli, oracle_url: str, action: str) -> None:  # noqa: F811
    result = cli("--url", oracle_url,
                 *store_args(action, "--search-strategy", "hybrid", "--vector-dim", "8"))
    refused_before_connecting(result, "--in-database-model NAME")
    assert "--search-strategy hybrid on Oracle" in result.err


def test_hybrid_on_an_oracle_url_from_the_environment_is_refused_too(
        cli: Cli, oracle_url: str) -> None:  # noqa: F811
    result = cli(*store_args("create", "--search-strategy", "hybrid", "--vector-dim", "8"),
                 env={"OAM_ADMIN_URL": oracle_url})
    refused_before_connecting(result, "--in-database-model NAME")


@pytest.mark.parametrize("action", STORE_ACTIONS)
def test_the_model_needs_the_vector_dimension(
        cli: Cli, oracle_url: str, action: str) -> None:  # noqa: F811
    result = cli("--url", oracle_url, *store_args(action, "--in-database-model", "doc_model"))
    refused_before_connecting(result, "--in-database-model needs --vector-dim N")


@pytest.mark.parametrize(("extra", "fragment"), [
    (("--vector-dim", "0"), "--vector-dim must be from 1 to 65535"),
    (("--vector-dim", "65536"), "--vector-dim must be from 1 to 65535"),
    (("--vector-dim", "8", "--in-database-model", "select"), "not a reserved word"),
    (("--vector-dim", "8", "--in-database-model", "a.b.c"), "MODEL or OWNER.MODEL"),
])
def test_a_bad_dimension_or_model_name_is_a_usage_error(
        cli: Cli, oracle_url: str, extra: tuple[str, ...], fragment: str) -> None:  # noqa: F811
    if "--in-database-model" not in extra:
        extra = (*extra, "--in-database-model", "doc_model")
    result = cli("--url", oracle_url, *store_args("create", *extra))
    refused_before_connecting(result, fragment)


@pytest.mark.parametrize("action", STORE_ACTIONS)
def test_the_model_on_a_postgresql_url_is_a_usage_error(cli: Cli, action: str) -> None:  # noqa: F811
    url = f"postgresql://oam_owner@127.0.0.1:{closed_port()}/oam"
    result = cli("--url", url, *store_args(action, "--in-database-model", "doc_model",
                                           "--vector-dim", "8"))
    refused_before_connecting(result, "needs an oracle:// URL")
    assert "got postgresql" in result.err and "PostgreSQL has no in-database models" in result.err


def test_the_model_without_any_url_is_refused_without_starting_the_embedded_database(
        cli: Cli) -> None:  # noqa: F811
    result = cli(*store_args("create", "--in-database-model", "doc_model", "--vector-dim", "8"))
    refused_before_connecting(result, "got the embedded PostgreSQL database")
    assert "using the embedded database" not in result.err


def test_the_store_help_describes_the_model_option(cli: Cli) -> None:  # noqa: F811
    for action in STORE_ACTIONS:
        result = cli("store", action, "--help")
        assert result.code == 0
        assert "--in-database-model NAME" in result.out and "Oracle only" in result.out
        assert "--vector-dim N" in result.out


# --- past the options: a closed port --------------------------------------------------------------
@pytest.mark.parametrize("command", [
    store_args("create", "--search-strategy", "hybrid", "--vector-dim", "8",
               "--in-database-model", "doc_model"),
    store_args("create", "--vector-dim", "8", "--in-database-model", "oam_owner.doc_model"),
    store_args("check", "--vector-dim", "8", "--in-database-model", "doc_model",
               "--schema-owner", "oam_owner"),
    store_args("upgrade", "--vector-dim", "8", "--in-database-model", "doc_model"),
    store_args("recreate", "--search-strategy", "hybrid", "--search-index-sync", "auto",
               "--vector-dim", "8", "--in-database-model", "doc_model"),
    store_args("create", "--search-strategy", "keyword"),  # no model: the engine's own pool
    ["runtime-login", "create", "--login", "oam_rt", "--schema-owner", "oam_owner"],
    ["check"],
])
def test_each_command_on_an_unreachable_oracle_database_reports_it_once(
        cli: Cli, oracle_url: str, command: list[str]) -> None:  # noqa: F811
    result = cli("--url", oracle_url, *command, env={"OAM_RUNTIME_PASSWORD": "Runtime#Pass1"})
    one_error(result, 1, UNAVAILABLE)
    assert "oam-admin db start" not in result.err


def test_the_store_gets_the_commands_pool_and_the_model_and_the_pool_is_closed_after(
        cli: Cli, oracle_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    seen: list[tuple[object, object, dict[str, Any]]] = []
    pool_sizes: list[tuple[int, int]] = []
    real = OracleDBMemoryStore

    def watched(embedder: object, pool: object, **kwargs: Any) -> Any:
        seen.append((embedder, pool, kwargs))
        if isinstance(pool, oracledb.ConnectionPool):
            pool_sizes.append((pool.min, pool.max))  # read while the pool is open
        return real(embedder, pool, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "OracleDBMemoryStore", watched)
    result = cli("--url", oracle_url, *store_args(
        "create", "--search-strategy", "hybrid", "--vector-dim", "8",
        "--in-database-model", "doc_model"))
    one_error(result, 1, UNAVAILABLE)
    assert "(in-database model DOC_MODEL)" in result.err
    [(embedder, pool, kwargs)] = seen
    assert isinstance(embedder, OracleDBEmbedder)
    assert (embedder.model, embedder.embedding_dimension) == ("DOC_MODEL", 8)
    assert isinstance(pool, oracledb.ConnectionPool)
    assert pool_sizes == [(0, 2)]
    assert (kwargs["vector_dim"], kwargs["search_strategy"].value) == (8, "hybrid")
    with pytest.raises(oracledb.InterfaceError, match="DPY-1002"):  # closed by the command
        pool.acquire()

    seen.clear()  # control: without a model the store gets the URL and opens its own pool
    result = cli("--url", oracle_url, *store_args("create", "--vector-dim", "8"))
    one_error(result, 1, UNAVAILABLE)
    [(embedder, source, _)] = seen
    assert embedder is None and source == oracle_url


def test_the_store_source_embeds_through_its_pool_until_it_closes(oracle_url: str) -> None:
    with store_source(oracle_url, "DOC_MODEL", 8) as source:
        assert isinstance(source.embedder, OracleDBEmbedder)
        with pytest.raises(DatabaseUnavailableError):  # the embedder reaches the URL's database
            source.embedder.embed(["a text"])
        pool = source.pool
        assert isinstance(pool, oracledb.ConnectionPool) and pool.dsn.endswith("/FREEPDB1")
    with pytest.raises(oracledb.InterfaceError, match="DPY-1002"):
        pool.acquire()
    with store_source(oracle_url, None, None) as plain:
        assert (plain.pool, plain.embedder) == (oracle_url, None)


def test_the_pool_is_closed_when_the_command_fails_inside(oracle_url: str) -> None:
    with pytest.raises(RuntimeError, match="inside"), \
            store_source(oracle_url, "DOC_MODEL", 8) as source:
        pool = source.pool
        raise RuntimeError("inside")
    assert isinstance(pool, oracledb.ConnectionPool)
    with pytest.raises(oracledb.InterfaceError, match="DPY-1002"):
        pool.acquire()


# --- wording: Oracle's on an Oracle URL, PostgreSQL's unchanged ----------------------------------
ORACLE = "oracle://oam_policy_admin@db.example.com:2484/memorypdb"
POSTGRESQL = "postgresql://oam_policy_admin@127.0.0.1:5432/oam"


def test_the_password_rotation_hint_is_each_databases_sql() -> None:
    assert "ALTER USER ... IDENTIFIED BY" in check.password_rotation_hint(ORACLE)
    assert "ALTER ROLE" not in check.password_rotation_hint(ORACLE)
    assert check.password_rotation_hint(POSTGRESQL) == (
        "a changed runtime password cannot be seen from here: rotate it with "
        "ALTER ROLE ... PASSWORD if in doubt")


def test_runtime_login_create_says_what_each_database_granted() -> None:
    oracle = security.runtime_login_created(
        ORACLE, "oam_rt", "oam_owner", "CREATE SESSION + CREATE END USER SECURITY CONTEXT")
    assert "holds exactly CREATE SESSION and CREATE END USER SECURITY CONTEXT" in oracle
    assert "member of" not in oracle and "role" not in oracle.replace("no role", "")
    assert security.runtime_login_created(POSTGRESQL, "oam_rt", "oam_owner",
                                          "oam_owner_runtime") == (
        "runtime login 'oam_rt' created: member of 'oam_owner_runtime' only; it reaches the "
        "tables of 'oam_owner' only through installed policies")


def test_store_recreate_and_upgrade_messages_speak_each_databases_terms() -> None:
    oracle = store.recreate_refused(ORACLE, "demo")
    assert "data grants" in oracle and "CREATE DATA ROLE" in oracle
    assert "oam_sec" not in oracle and "role (" not in oracle
    postgresql = store.recreate_refused(POSTGRESQL, "demo")
    assert postgresql.startswith("memory store 'demo' is protected by Deep Data Security "
                                 "policies and this identity cannot administer the oam_sec")
    assert "member of the policy administrator role" in postgresql
    assert "its data grants cover the current columns" in store.policies_to_reapply(ORACLE, "d")
    assert "the runtime's column privileges cover the current columns" in \
        store.policies_to_reapply(POSTGRESQL, "d")


# --- PostgreSQL: the embedded server -------------------------------------------------------------
def test_postgresql_hybrid_needs_no_model_and_check_compares_the_dimension(
        cli: Cli, dds: Any) -> None:  # noqa: F811
    store_id = unique("h")
    created = cli("store", "create", "--memory-store-id", store_id, "--vector-dim", "3",
                  "--search-strategy", "hybrid", "--url", dds.owner_url)
    assert created.code == 0, created
    assert "search_strategy: hybrid" in created.out
    same = cli("store", "check", "--memory-store-id", store_id, "--vector-dim", "3",
               "--url", dds.owner_url)
    assert same.code == 0, same
    other = cli("store", "check", "--memory-store-id", store_id, "--vector-dim", "5",
                "--url", dds.owner_url)
    one_error(other, 1, "vector_dim=5 does not match the stored vector dimension 3")


@pytest.mark.parametrize("scheme", ["oracle", "oracle+tcp"])
def test_an_oracle_url_with_a_password_is_refused_and_not_echoed(
        cli: Cli, scheme: str) -> None:  # noqa: F811
    result = cli("--url", f"{scheme}://oam_owner:s3cret@127.0.0.1:{closed_port()}/FREEPDB1",
                 *store_args("check"))
    refused_before_connecting(result, "--url must not contain a password")
    assert "OAM_ORACLE_PASSWORD" in result.err and "s3cret" not in result.err + result.out
    # Positive control: the same URL without its password gets past the check to the database.
    bare = cli("--url", f"{scheme}://oam_owner@127.0.0.1:{closed_port()}/FREEPDB1",
               *store_args("check"), env={"OAM_ORACLE_PASSWORD": "x"})
    assert bare.code == 1 and UNAVAILABLE in bare.err
