"""How the suite decides whether, and where, it runs on Oracle (``tests/provision/oracle.py``).

No Oracle database and no container runtime run here, so the paths tested are the ones that
need neither: ``OAM_TEST_ORACLE_DSN`` set, no runtime answering (the real docker-py client on a
socket nobody serves), a runtime that answers but cannot pull the image (real testcontainers
and docker-py against ``tests/fake_docker_api.py``, an honest fake of the daemon's HTTP API),
a slim image refused, ``bootstrap.sql`` rendered for python-oracledb, and the run's last lines,
from a real pytest run of an engine-parametrised module. Starting a real container, the
Oracle Text check, the Deep Data Security probe and the bootstrap against a database are NOT
tested here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlglot
from fake_docker_api import FakeDockerApi
from provision import engine_marks
from provision import oracle as provision_oracle
from provision.oracle import DSN_ENV, OracleNotTested, OracleProvisioner
from provision.oracle_bootstrap import (
    BOOTSTRAP_SQL,
    needs_deep_data_security,
    password_variables,
    render_bootstrap,
)
from provision.oracle_container import (
    DEFAULT_IMAGE,
    IMAGE_ENV,
    NO_END_USER_CONTEXTS,
    ORACLE_TEXT_QUERY,
    ContainerStartError,
    image_refusal,
    oracle_container,
    runtime_unavailable,
)
from sqlglot import exp
from testcontainers.core.config import testcontainers_config

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def fresh_runtime_answer() -> Iterator[None]:
    """The runtime is asked again (the answer is cached per process)."""
    provision_oracle.container_runtime_unavailable.cache_clear()
    yield
    provision_oracle.container_runtime_unavailable.cache_clear()


@pytest.fixture
def no_daemon(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
              fresh_runtime_answer: None) -> None:
    """``DOCKER_HOST`` names a socket nobody serves; no Oracle DSN."""
    monkeypatch.delenv(DSN_ENV, raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'nobody.sock'}")


@pytest.fixture
def refusing_daemon(monkeypatch: pytest.MonkeyPatch,
                    fresh_runtime_answer: None) -> Iterator[FakeDockerApi]:
    """A daemon that answers but whose registry refuses every pull; no Oracle DSN; no Ryuk
    (testcontainers' reaper container would be pulled first)."""
    monkeypatch.delenv(DSN_ENV, raising=False)
    monkeypatch.delenv(IMAGE_ENV, raising=False)
    monkeypatch.setattr(testcontainers_config, "ryuk_disabled", True)
    with FakeDockerApi() as api:
        monkeypatch.setenv("DOCKER_HOST", api.url)
        yield api


# --- the decision --------------------------------------------------------------------------------
def test_a_dsn_makes_oracle_reachable_without_asking_a_runtime(
        monkeypatch: pytest.MonkeyPatch, no_daemon: None) -> None:
    monkeypatch.setenv(DSN_ENV, "oam_owner/secret@db.example.com:1521/memorypdb")
    provisioner = OracleProvisioner()
    assert provisioner.source() == "dsn"
    assert provisioner.unavailable() is None
    # The Deep Data Security twins decide for themselves on a DSN (tests/oracle_dds.py).
    assert provisioner.deep_data_security_unavailable() is None


def test_no_dsn_and_no_daemon_says_oracle_is_not_reachable_and_why(no_daemon: None) -> None:
    provisioner = OracleProvisioner()
    assert provisioner.source() is None
    reason = provisioner.unavailable()
    assert reason is not None
    assert DSN_ENV in reason and "nobody.sock" in reason and "DockerException" in reason
    with pytest.raises(OracleNotTested, match="set OAM_TEST_ORACLE_DSN"), provisioner.database():
        pass


def test_a_daemon_that_answers_makes_oracle_reachable_in_a_container(
        refusing_daemon: FakeDockerApi) -> None:
    """The positive control of the test above: the same check, a daemon that answers."""
    assert runtime_unavailable() is None
    provisioner = OracleProvisioner()
    assert provisioner.source() == "container"
    assert provisioner.unavailable() is None
    dds = provisioner.deep_data_security_unavailable()
    assert dds is not None and NO_END_USER_CONTEXTS in dds


def test_a_failed_pull_makes_oracle_not_tested_with_the_daemons_reason(
        refusing_daemon: FakeDockerApi) -> None:
    provisioner = OracleProvisioner()
    with pytest.raises(OracleNotTested) as raised, provisioner.database():
        pytest.fail("no database can be yielded from a failed pull")
    message = str(raised.value)
    assert message.startswith("the Oracle container did not start: ")
    assert DEFAULT_IMAGE in message and "pull access denied" in message
    # From then on Oracle counts as not reachable, with that reason, for the summary.
    assert provisioner.unavailable() == message
    assert provisioner.deep_data_security_unavailable() is None
    pulls = [r for r in refusing_daemon.requests if r.path == "/images/create"]
    image, tag = DEFAULT_IMAGE.split(":")
    assert [(r.query["fromImage"], r.query["tag"]) for r in pulls] == [([image], [tag])]
    assert not [r for r in refusing_daemon.requests if r.path.startswith("/containers")]


def test_the_image_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                              refusing_daemon: FakeDockerApi) -> None:
    monkeypatch.setenv(IMAGE_ENV, "example.com/oracle/free:23.26.3-full")
    with pytest.raises(ContainerStartError, match="example.com/oracle/free:23.26.3-full"), (
            oracle_container()):
        pass
    pulls = [r for r in refusing_daemon.requests if r.path == "/images/create"]
    assert [r.query["fromImage"] for r in pulls] == [["example.com/oracle/free"]]


def test_a_slim_image_is_refused_before_anything_is_pulled(
        monkeypatch: pytest.MonkeyPatch, refusing_daemon: FakeDockerApi) -> None:
    monkeypatch.setenv(IMAGE_ENV, "gvenzl/oracle-free:slim")
    provisioner = OracleProvisioner()
    reason = provisioner.unavailable()
    assert reason is not None and "Oracle Text" in reason and DEFAULT_IMAGE in reason
    with pytest.raises(OracleNotTested, match="slim"), provisioner.database():
        pass
    assert not [r for r in refusing_daemon.requests if r.path == "/images/create"]


@pytest.mark.parametrize(("image", "refused"), [
    ("gvenzl/oracle-free:slim", True),
    ("gvenzl/oracle-free:23-slim-faststart", True),
    ("gvenzl/oracle-free:23.26.2-slim", True),
    (DEFAULT_IMAGE, False),
    ("gvenzl/oracle-free:23.26.2-full-faststart", False),
    ("gvenzl/oracle-free", False),
    ("registry.example.com:5000/slim/oracle-free:23.26.2", False),
])
def test_only_slim_tags_are_refused(image: str, refused: bool) -> None:
    assert (image_refusal(image) is not None) is refused


def test_the_default_image_is_a_regular_26ai_release_with_deep_data_security() -> None:
    name, tag = DEFAULT_IMAGE.split(":")
    assert name == "gvenzl/oracle-free"
    assert tag.startswith("23.26.") and int(tag.split(".")[2]) >= 2  # Deep Data Security
    assert image_refusal(DEFAULT_IMAGE) is None


def test_the_oracle_text_check_is_one_query_on_the_component_registry() -> None:
    """Offline: it parses as Oracle SQL and reads DBA_REGISTRY's CONTEXT row (not run live)."""
    parsed = sqlglot.parse_one(ORACLE_TEXT_QUERY, read="oracle")
    assert isinstance(parsed, exp.Select)
    assert [t.name.upper() for t in parsed.find_all(exp.Table)] == ["DBA_REGISTRY"]
    assert parsed.args["where"].sql(dialect="oracle") == "WHERE comp_id = 'CONTEXT'"


# --- bootstrap.sql without SQLcl -----------------------------------------------------------------
@pytest.fixture(scope="module")
def bootstrap_text() -> str:
    return BOOTSTRAP_SQL.read_text(encoding="utf-8")


def passwords_for(text: str) -> dict[str, str]:
    return {name: f"Pw{index}x{name[:3]}" for index, name in enumerate(password_variables(text))}


def test_bootstrap_renders_to_plain_statements_with_the_passwords(bootstrap_text: str) -> None:
    passwords = passwords_for(bootstrap_text)
    assert set(passwords) == {"oam_policy_admin_password", "oam_owner_password",
                              "oam_runtime_password"}
    script = render_bootstrap(bootstrap_text, passwords)
    assert dict(script.identities) == {"policy_admin": "OAM_POLICY_ADMIN", "owner": "OAM_OWNER",
                                       "runtime": "OAM_RUNTIME"}
    for statement in script.statements:
        assert "&" not in statement and not statement.endswith(";"), statement
        assert statement.split()[0].upper() not in {"WHENEVER", "SET", "DEFINE", "ACCEPT",
                                                    "UNDEFINE", "PROMPT"}, statement
    created = {s for s in script.statements if s.startswith("CREATE USER")}
    assert created == {
        f'CREATE USER IF NOT EXISTS OAM_POLICY_ADMIN IDENTIFIED BY '
        f'"{passwords["oam_policy_admin_password"]}"',
        f'CREATE USER IF NOT EXISTS OAM_OWNER IDENTIFIED BY "{passwords["oam_owner_password"]}" '
        "DEFAULT TABLESPACE USERS QUOTA 10G ON USERS",
        f'CREATE USER IF NOT EXISTS OAM_RUNTIME IDENTIFIED BY '
        f'"{passwords["oam_runtime_password"]}"',
    }
    assert "GRANT CREATE SESSION, CREATE END USER SECURITY CONTEXT TO OAM_RUNTIME" in (
        script.statements)


def test_bootstrap_refuses_missing_or_unquotable_passwords(bootstrap_text: str) -> None:
    passwords = passwords_for(bootstrap_text)
    del passwords["oam_owner_password"]
    with pytest.raises(ValueError, match="oam_owner_password"):
        render_bootstrap(bootstrap_text, passwords)
    with pytest.raises(ValueError, match="password"):
        render_bootstrap(bootstrap_text, {**passwords_for(bootstrap_text),
                                          "oam_owner_password": 'a"b'})


def test_without_deep_data_security_the_owner_still_gets_everything_it_needs(
        bootstrap_text: str) -> None:
    """What a database without Deep Data Security runs: all of the owner's statements, none of
    the Deep Data Security grants."""
    script = render_bootstrap(bootstrap_text, passwords_for(bootstrap_text))
    kept = [s for s in script.statements if not needs_deep_data_security(s)]
    left_out = [s for s in script.statements if needs_deep_data_security(s)]
    owner = [s for s in script.statements if s.split(" TO ")[-1] == "OAM_OWNER"
             or "USER IF NOT EXISTS OAM_OWNER" in s or s.startswith("ALTER USER OAM_OWNER")]
    assert owner and all(s in kept for s in owner)
    assert "GRANT EXECUTE ON CTXSYS.CTX_DDL TO OAM_OWNER" in kept
    assert left_out and all(any(word in s for word in ("END USER", "END_USER", "DATA",
                                                       "APPLICATION")) for s in left_out)
    assert "GRANT SET USE DATA GRANTS ONLY TO OAM_POLICY_ADMIN" in left_out
    assert "GRANT SELECT ON SYS.DBA_END_USERS TO OAM_POLICY_ADMIN" in left_out


# --- the engine marker ---------------------------------------------------------------------------
def test_engine_params_skip_the_left_out_engine_with_its_reason() -> None:
    params = engine_marks.engine_params(["postgresql", "oracle"], {"oracle": "uses psycopg"})
    assert params[0] == "postgresql"
    oracle = params[1]
    assert isinstance(oracle, type(pytest.param("x")))
    assert oracle.values == ("oracle",)
    (mark,) = oracle.marks
    assert mark.name == "skip"
    assert mark.kwargs["reason"] == "engine oracle NOT tested by this test: uses psycopg"


# --- the run's last lines, from a real pytest run ------------------------------------------------
def run_pytest(module: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         str(TESTS / module)],
        cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=300, check=False)


def child_env(docker_host: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {DSN_ENV, IMAGE_ENV} and not k.startswith("PYTEST_")}
    env.update(DOCKER_HOST=docker_host, TESTCONTAINERS_RYUK_DISABLED="true")
    return env


def test_a_failed_container_leaves_postgresql_passing_and_says_oracle_was_not_tested() -> None:
    """``test_smoke_store.py`` (one engine-parametrised test) with a daemon that refuses the
    pull: the PostgreSQL case passes, the Oracle case is skipped with the reason, the exit
    status is 0, and the last lines say Oracle and its Deep Data Security were NOT tested."""
    with FakeDockerApi() as api:
        result = run_pytest("test_smoke_store.py", child_env(api.url))
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "1 passed, 1 skipped" in out, out
    summary = out[out.index("short test summary"):]
    assert "Oracle NOT tested: the Oracle container did not start" in summary
    assert ("engine oracle was NOT tested: the Oracle container did not start: "
            f"{DEFAULT_IMAGE} did not start: ImageNotFound") in out
    assert "pull access denied" in out
    assert "engine postgresql was NOT tested" not in out
    assert "no test of this run reached" not in out  # the reason above says it all


def test_an_oracle_no_test_reached_is_reported_as_not_tested() -> None:
    """A daemon answers, but every Oracle case of the module is marked PostgreSQL-only: the
    container is never started and the last lines still say Oracle was NOT tested."""
    with FakeDockerApi() as api:
        result = run_pytest("test_search_scan_choices.py", child_env(api.url))
        pulls = [r for r in api.requests if r.path == "/images/create"]
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "3 passed, 3 skipped" in out, out
    assert pulls == []
    assert ("engine oracle: the engine-neutral suite was NOT tested on it (no test of this run "
            "reached its database)") in out
    assert ("engine oracle: 2 test function(s) do not apply and were NOT run there: patches "
            "the postgres engine's search module") in out
    assert "engine oracle Deep Data Security was NOT tested: on a container" in out


def test_no_daemon_leaves_out_oracle_and_says_so(tmp_path: Path) -> None:
    """The same module with no daemon: only PostgreSQL runs; the last line says why not
    Oracle (a run without Oracle never counts as an Oracle pass)."""
    result = run_pytest("test_smoke_store.py", child_env(f"unix://{tmp_path / 'none.sock'}"))
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "1 passed" in out and "skipped" not in out, out
    assert ("engine oracle was NOT tested: set OAM_TEST_ORACLE_DSN, or run a container runtime"
            in out)
    assert "Deep Data Security was NOT tested" not in out
