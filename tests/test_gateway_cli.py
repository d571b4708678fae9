"""``oam-gateway dev``, ``token`` and ``serve`` as subprocesses, over real HTTP.

``dev`` runs on its own embedded database (a private data directory named by
``OAM_EMBEDDED_PGDATA``, stopped at the end of the module), so the demo tenant it provisions
never meets the session's database. The shell lines it prints are run as printed (through
``bash`` and ``curl``; replayed with httpx where ``curl`` is not installed), then a second
``dev`` on the same state directory must find and reuse everything the first one made, and the
README's section on ``dev`` runs as written against it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from oam_gateway.cli import DEV_ISSUER
from oam_gateway.dev.flow import flow_lines
from oam_gateway.dev.state import DevState, login_url
from oracleagentmemory.devissuer import DevIssuer

GATEWAY = shutil.which("oam-gateway") or str(Path(sys.executable).parent / "oam-gateway")
CURL = shutil.which("curl")
README = Path(__file__).resolve().parents[1] / "README.md"
README_SECTION = "Run the gateway on the embedded database"
README_BASE = "http://127.0.0.1:8080"
SECRET_FILES = ("app-token", "runtime.pgpass", "admin.pgpass", "signing-key.json")
STEPS = ("schema owner oam_demo", "memory store 'demo'", "security schema and policies",
         "identity provider 'dev'", "grant both policies to group dev:demo",
         "runtime login oam_demo_rt", "application oam_demo_gw", "write audit of 'demo'",
         "demo users alice and bob")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class DevRun:
    """One ``oam-gateway dev`` process: what it printed on stdout (the flow) and stderr."""

    base: str
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    @property
    def exports(self) -> list[str]:
        return [line for line in self.stdout if line.startswith("export ")]

    @property
    def curls(self) -> list[str]:
        return [line for line in self.stdout if line.startswith("curl ")]

    def progress(self) -> list[str]:
        return [line for line in self.stderr if line.startswith("oam-gateway dev: ")]


@dataclass(frozen=True)
class DevPlace:
    """Where the module's ``dev`` runs keep their database and their state."""

    data_dir: Path
    xdg_data_home: Path

    @property
    def state_dir(self) -> Path:
        """``dev``'s default state directory under :attr:`xdg_data_home`."""
        return self.xdg_data_home / "oam-gateway" / "dev"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OAM_")}
        env["OAM_EMBEDDED_PGDATA"] = str(self.data_dir)
        env["XDG_DATA_HOME"] = str(self.xdg_data_home)
        env["PATH"] = f"{Path(GATEWAY).parent}{os.pathsep}{env.get('PATH', '')}"
        return env

    def superuser_url(self) -> str:
        from oracleagentmemory import embedded

        return embedded.url(self.data_dir)


@pytest.fixture(scope="module")
def place() -> Iterator[DevPlace]:
    """A private database, and the state in the default place of a private ``XDG_DATA_HOME``
    (so ``oam-gateway token`` without ``--state-dir``, as the README runs it, finds it)."""
    parent = Path(tempfile.mkdtemp(prefix="oam-gateway-dev-"))
    try:
        yield DevPlace(parent / "pgdata", parent / "xdg")
    finally:
        from oracleagentmemory import embedded

        embedded.stop(parent / "pgdata")
        shutil.rmtree(parent, ignore_errors=True)


def _drain(stream: Any, into: list[str]) -> None:
    for line in stream:
        into.append(line.rstrip("\n"))


@contextmanager
def dev_gateway(place: DevPlace, *options: str) -> Iterator[DevRun]:
    """A running ``oam-gateway dev`` once it printed its flow and answers ``/healthz``; on
    leaving, stopped with SIGINT (Ctrl+C), and what it printed until it ended is in the run."""
    port = free_port()
    run = DevRun(f"http://127.0.0.1:{port}")
    process = subprocess.Popen(
        [GATEWAY, "dev", "--port", str(port), *options],  # default: the state in its default place
        env=place.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    readers = [threading.Thread(target=_drain, args=(process.stdout, run.stdout), daemon=True),
               threading.Thread(target=_drain, args=(process.stderr, run.stderr), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        deadline = time.monotonic() + 180  # a fresh database and the model take a while
        while True:
            assert process.poll() is None, "\n".join(run.stderr)
            assert time.monotonic() < deadline, "dev did not serve:\n" + "\n".join(run.stderr)
            if any("/docs" in line for line in run.curls):
                try:
                    if httpx.get(f"{run.base}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
            time.sleep(0.2)
        yield run
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        for reader in readers:
            reader.join(5)


def run_printed(run: DevRun, curl_line: str, env: dict[str, str]) -> str:
    """Run one printed ``curl`` line after the printed ``export`` lines; its stdout."""
    if CURL is not None:
        script = "\n".join([*run.exports, curl_line])
        return subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, check=True,
                              capture_output=True, text=True, timeout=60).stdout
    return _replay_with_httpx(run, curl_line)


def _replay_with_httpx(run: DevRun, curl_line: str) -> str:
    """What ``curl`` would print for ``curl_line`` (its ``-X``, ``-H``, ``-d``, ``-o``, ``-w``)."""
    variables = dict(shlex.split(line.removeprefix("export "))[0].split("=", 1)
                     for line in run.exports)
    words = shlex.split(curl_line, comments=True)[1:]
    method, headers, body, url, discard, write_out = "GET", {}, None, "", False, ""
    while words:
        word = words.pop(0)
        if word == "-X":
            method = words.pop(0)
        elif word == "-H":
            name, _, value = words.pop(0).partition(": ")
            for key, token in variables.items():
                value = value.replace(f"${key}", token)
            headers[name] = value
        elif word == "-d":
            body = words.pop(0)
            method = "POST" if method == "GET" else method
        elif word == "-o":
            discard = words.pop(0) == "/dev/null"
        elif word == "-w":
            write_out = words.pop(0)
        elif not word.startswith("-"):
            url = word
    response = httpx.request(method, url, headers=headers, content=body, timeout=60)
    out = "" if discard else response.text
    return out + (write_out.replace("%{http_code}", str(response.status_code))
                  .replace("%{content_type}", response.headers.get("content-type", ""))
                  .replace("\\n", "\n"))


@dataclass
class FirstRun:
    run: DevRun
    outputs: list[str]
    memory: dict[str, Any]
    secrets: dict[str, tuple[bytes, int]]
    database_running_after: bool
    """Whether the embedded database still ran once ``dev`` (which started it) ended."""


@pytest.fixture(scope="module")
def first_run(place: DevPlace) -> FirstRun:
    """``dev`` on a fresh database and state directory, its printed flow run as printed."""
    from oracleagentmemory import embedded

    with dev_gateway(place) as run:
        outputs = [run_printed(run, line, place.env()) for line in run.curls]
    secrets = {name: ((place.state_dir / name).read_bytes(),
                      (place.state_dir / name).stat().st_mode) for name in SECRET_FILES}
    return FirstRun(run, outputs, json.loads(outputs[0]), secrets,
                    embedded.is_running(place.data_dir))


def _found(search_output: str) -> list[dict[str, Any]]:
    return [hit["record"] for hit in json.loads(search_output)["results"]]


def test_dev_provisions_the_demo_tenant_and_the_printed_flow_works(
        first_run: FirstRun, place: DevPlace) -> None:
    run, outputs, memory = first_run.run, first_run.outputs, first_run.memory
    assert [line.split("=", 1)[0] for line in run.exports] == ["export ALICE_TOKEN",
                                                               "export BOB_TOKEN"]
    assert len(run.curls) == 6, run.stdout
    assert memory["user_id"] == "dev:alice"  # the gateway's principal, never the client's
    assert memory["content"] == "Alice takes her coffee black, without sugar"
    alice_sees = _found(outputs[1])
    assert memory["id"] in [record["id"] for record in alice_sees]  # the positive control
    assert {record["user_id"] for record in alice_sees} == {"dev:alice"}
    assert _found(outputs[2]) == []  # bob: none of alice's rows
    assert json.loads(outputs[3]) == {"user_name": "dev:alice", "subject": "alice",
                                      "groups": ["demo"], "tenant": "default",
                                      "scopes": ["memory:read", "memory:write"]}
    assert json.loads(outputs[4]) == {"status": "ready"}
    assert outputs[5].startswith("200 text/html")
    progress = "\n".join(run.progress())
    assert "for development only" in progress
    for step in STEPS:
        assert f"oam-gateway dev: {step}" in progress, step
    assert "application oam_demo_gw: created" in progress
    assert "write audit of 'demo': turned on" in progress


def test_ctrl_c_stops_the_database_dev_started_and_says_so(first_run: FirstRun,
                                                          place: DevPlace) -> None:
    progress = "\n".join(first_run.run.progress())
    assert f"stopped the embedded database in {place.data_dir}" in progress, progress
    assert not first_run.database_running_after


def test_dev_keeps_its_secrets_private_and_never_prints_the_app_token(
        first_run: FirstRun) -> None:
    for name, (content, mode) in first_run.secrets.items():
        assert content.strip(), name
        assert mode & 0o077 == 0, f"{name} has mode {mode:o}"
    app_token = first_run.secrets["app-token"][0].decode().strip()
    assert app_token.startswith("oamapp1.oam_demo_gw.")
    printed = "\n".join(first_run.run.stdout + first_run.run.stderr)
    assert app_token not in printed
    assert app_token.rsplit(".", 1)[1] not in printed
    for passfile in ("runtime.pgpass", "admin.pgpass"):
        for line in first_run.secrets[passfile][0].decode().splitlines():
            assert line.rsplit(":", 1)[1] not in printed


def test_the_database_enforces_what_the_flow_shows(first_run: FirstRun,
                                                   place: DevPlace) -> None:
    """Row security, not the gateway alone: the runtime login without a context sees no row;
    the write was audited in alice's name by the database."""
    from oracleagentmemory.core.deepsec.audit import list_write_audit

    superuser = place.superuser_url()
    with psycopg.connect(superuser) as admin:
        stored = admin.execute("SELECT user_id FROM oam_demo.demo_memory WHERE id = %s",
                               [first_run.memory["id"]]).fetchall()
    assert stored == [("dev:alice",)]
    runtime_url = login_url(superuser, "oam_demo_rt", place.state_dir / "runtime.pgpass")
    with psycopg.connect(runtime_url) as runtime:
        assert runtime.execute("SELECT count(*) FROM oam_demo.demo_memory").fetchone() == (0,)
    inserts = [row for row in list_write_audit(superuser, "oam_demo", "demo", limit=1000)
               if row.operation == "insert" and row.record_id == first_run.memory["id"]]
    assert inserts, "alice's memory left no audit row"
    assert {(row.end_user, row.application, row.db_login) for row in inserts} == {
        ("dev:alice", "oam_demo_gw", "oam_demo_rt")}


@pytest.fixture(scope="module")
def second_run(first_run: FirstRun, place: DevPlace) -> Iterator[DevRun]:
    """``dev`` started again on the first run's database and state directory."""
    with dev_gateway(place) as run:
        yield run


def test_a_second_dev_reuses_the_provisioning(first_run: FirstRun, second_run: DevRun,
                                              place: DevPlace) -> None:
    run = second_run
    progress = "\n".join(run.progress())
    search_as = {user: next(line for line in run.curls if f"${user}_TOKEN" in line
                            and "/v1/search" in line) for user in ("ALICE", "BOB")}
    alice_sees = _found(run_printed(run, search_as["ALICE"], place.env()))
    bob_sees = _found(run_printed(run, search_as["BOB"], place.env()))
    minted = subprocess.run([GATEWAY, "token", "--user", "bob"], env=place.env(), check=True,
                            capture_output=True, text=True, timeout=60).stdout.strip()
    me = httpx.get(f"{run.base}/v1/me", headers={"Authorization": f"Bearer {minted}"},
                   timeout=10)
    for step in STEPS:
        assert f"oam-gateway dev: {step}" in progress, step
    assert "created" not in progress and "registered" not in progress, progress
    assert "rotated" not in progress and "turned on" not in progress, progress
    for name, (content, _) in first_run.secrets.items():  # nothing made anew
        assert (place.state_dir / name).read_bytes() == content, name
    assert first_run.memory["id"] in [record["id"] for record in alice_sees]  # the same store
    assert bob_sees == []
    assert me.status_code == 200
    assert me.json()["user_name"] == "dev:bob" and me.json()["groups"] == ["demo"]


def readme_blocks() -> list[str]:
    """The ``bash`` blocks of the README's section on ``oam-gateway dev``."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(README_SECTION)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no '## {README_SECTION}' section"
    return re.findall(r"^```bash\n(.*?)^```\s*$", match[1], re.M | re.S)


def test_the_readme_shows_what_dev_prints() -> None:
    start, flow = readme_blocks()
    assert start.split()[:2] == ["oam-gateway", "dev"]
    printed = flow_lines(README_BASE, {"alice": "A", "bob": "B"}, 3600, "")
    shown = [shlex.split(line, comments=True) for line in flow.splitlines()
             if line.startswith("curl ")]
    assert shown == [shlex.split(line, comments=True) for line in printed
                     if line.startswith("curl ")]


@pytest.mark.skipif(CURL is None, reason="curl is not installed")
def test_the_readme_flow_runs_as_written(second_run: DevRun, place: DevPlace) -> None:
    _, flow = readme_blocks()
    script = flow.replace(README_BASE, second_run.base)  # the test's own port
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=place.env(),
                         check=True, capture_output=True, text=True, timeout=120).stdout
    memory, alice, bob, me, ready, docs = out.splitlines()
    added = json.loads(memory)
    assert added["user_id"] == "dev:alice"
    assert added["id"] in [record["id"] for record in _found(alice)]
    assert _found(bob) == []
    assert json.loads(me)["user_name"] == "dev:alice"
    assert json.loads(ready) == {"status": "ready"}
    assert docs.startswith("200 text/html")


def _token(env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GATEWAY, "token", *options], env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def own_dir() -> Iterator[Path]:
    """A private directory that outlives pytest's clean-up of older temporary directories (a
    concurrent pytest session may remove those, a running database's included)."""
    parent = Path(tempfile.mkdtemp(prefix="oam-gateway-dev-own-"))
    yield parent
    shutil.rmtree(parent, ignore_errors=True)


def test_dev_on_its_own_state_dir_token_finds_it_and_ctrl_c_leaves_a_running_database(
        own_dir: Path) -> None:
    """``dev --state-dir`` while the default state directory holds another issuer key (an
    earlier ``dev``'s): ``token`` without ``--state-dir`` signs with the running ``dev``'s key
    (the gateway accepts it); the database ran before ``dev``, so Ctrl+C leaves it running and
    says how to stop it."""
    from oracleagentmemory import embedded

    own = DevPlace(own_dir / "pgdata", own_dir / "xdg")
    state_dir = own_dir / "own-state"
    DevState(own.state_dir).issuer(DEV_ISSUER)  # the key an earlier dev left in the default
    embedded.start(own.data_dir)
    try:
        with dev_gateway(own, "--state-dir", str(state_dir)) as run:
            found = _token(own.env(), "--user", "alice")
            me = httpx.get(f"{run.base}/v1/me",
                           headers={"Authorization": f"Bearer {found.stdout.strip()}"},
                           timeout=10)
            default = _token(own.env(), "--user", "alice", "--state-dir", str(own.state_dir))
        assert found.returncode == 0, found.stderr
        assert me.status_code == 200, me.text
        assert me.json()["user_name"] == "dev:alice" and me.json()["groups"] == ["demo"]
        assert str(state_dir) in found.stderr  # which key signed it, since not the default
        assert default.returncode == 0  # a key asked for by name is used, with a warning
        assert "no running oam-gateway dev uses" in default.stderr, default.stderr
        assert str(state_dir) in default.stderr
        progress = "\n".join(run.progress())
        assert (f"the embedded database in {own.data_dir} keeps running" in progress), progress
        assert f"oam-admin db stop --data-dir {own.data_dir}" in progress
        assert embedded.is_running(own.data_dir)
        after = _token(own.env(), "--user", "alice")  # dev ended: back to the default place
        assert after.returncode == 0 and str(state_dir) not in after.stderr
    finally:
        embedded.stop(own.data_dir)


def test_token_never_makes_an_issuer_key(tmp_path: Path) -> None:
    """A new key would sign tokens no gateway trusts: with no key where ``token`` looks, it
    says where it looked and what to pass, and makes nothing."""
    place = DevPlace(tmp_path / "pgdata", tmp_path / "xdg")
    elsewhere = tmp_path / "elsewhere"
    cases: list[tuple[tuple[str, ...], Path]] = [
        ((), place.state_dir), (("--state-dir", str(elsewhere)), elsewhere)]
    for options, looked_in in cases:
        refused = _token(place.env(), "--user", "alice", *options)
        assert refused.returncode == 1, refused
        assert refused.stdout == ""
        assert f"no development issuer key in {looked_in}" in refused.stderr, refused.stderr
        assert "--state-dir" in refused.stderr and "oam-gateway dev" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert not looked_in.exists()
    # Positive control: with the key in place, the same command mints a token.
    DevState(elsewhere).issuer(DEV_ISSUER)
    minted = _token(place.env(), "--user", "alice", "--state-dir", str(elsewhere))
    assert minted.returncode == 0 and minted.stdout.count(".") == 2, minted


@pytest.mark.parametrize("lifetime", ["0", "-60"])
def test_token_refuses_a_lifetime_that_is_already_over(tmp_path: Path, lifetime: str) -> None:
    DevState(tmp_path).issuer(DEV_ISSUER)
    refused = _token(dict(os.environ), "--user", "alice", "--state-dir", str(tmp_path),
                     "--lifetime", lifetime)
    assert refused.returncode == 2, refused
    assert refused.stdout == ""
    assert "--lifetime" in refused.stderr and "greater than 0" in refused.stderr
    minted = _token(dict(os.environ), "--user", "alice", "--state-dir", str(tmp_path),
                    "--lifetime", "1")
    assert minted.returncode == 0 and minted.stdout.strip()


def test_dev_on_a_busy_port_stops_before_provisioning(tmp_path: Path) -> None:
    busy = DevPlace(tmp_path / "pgdata", tmp_path / "xdg")
    try:
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            port = int(holder.getsockname()[1])
            result = subprocess.run([GATEWAY, "dev", "--port", str(port)], env=busy.env(),
                                    capture_output=True, text=True, timeout=300)
        assert result.returncode == 1, result
        assert result.stdout == ""  # no tokens, no curl lines
        errors = [line for line in result.stderr.splitlines() if "in use" in line]
        assert len(errors) == 1, result.stderr
        assert f"127.0.0.1:{port}" in errors[0] and "--port" in errors[0]
        assert "Traceback" not in result.stderr
        assert not busy.data_dir.exists()  # no database started
        assert not busy.state_dir.exists()  # no key, no provisioning
    finally:
        from oracleagentmemory import embedded

        embedded.stop(busy.data_dir)


def test_token_mints_a_token_of_the_dev_issuer(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    DevState(state_dir).issuer(DEV_ISSUER)  # what dev makes

    def mint(*options: str) -> dict[str, Any]:
        out = subprocess.run([GATEWAY, "token", *options, "--state-dir", str(state_dir)],
                             check=True, capture_output=True, text=True, timeout=60).stdout
        keys = KeySet.import_key_set(json.loads((state_dir / "jwks.json").read_text()))
        return dict(jwt.decode(out.strip(), keys, algorithms=["RS256"]).claims)

    claims = mint("--user", "dana", "--group", "support")
    assert claims["sub"] == "dana"
    assert claims["groups"] == ["support"]
    assert claims["aud"] == "oam-gateway-dev"
    assert claims["scope"] == "memory:read memory:write"
    assert claims["exp"] - claims["iat"] == 900
    assert (state_dir / "signing-key.json").stat().st_mode & 0o077 == 0
    read_only = mint("--user", "dana", "--scope", "memory:read", "--lifetime", "60")
    assert read_only["scope"] == "memory:read"
    assert read_only["exp"] - read_only["iat"] == 60
    assert read_only["groups"] == []  # not a demo user (no users.json yet): no groups


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_runs_the_gateway_of_a_settings_file(pg_url: str, tmp_path: Path,
                                                   workers: int) -> None:
    issuer = DevIssuer.create(tmp_path / "issuer", "https://issuer.serve.test")
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(issuer.jwks()), encoding="utf-8")
    settings = tmp_path / "gateway.toml"
    settings.write_text(
        'memory_store_id = "serve_test"\nschema_owner = "owner"\n'
        f'issuer = "{issuer.issuer}"\naudience = "serve-aud"\njwks_file = "{jwks}"\n'
        'tenant = "from-file"\n', encoding="utf-8")
    port = free_port()
    env = {**os.environ, "OAM_GATEWAY_DATABASE_URL": pg_url,  # the secrets from the environment
           "OAM_GATEWAY_APP_TOKEN": "oamapp.unused.unused"}
    process = subprocess.Popen([GATEWAY, "serve", "--settings", str(settings), "--port",
                                str(port), "--workers", str(workers)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        token = issuer.token("erin", audience="serve-aud", scope="memory:read")
        for _ in range(4 * workers):  # every worker process answers the same
            me = httpx.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {token}"},
                           timeout=10)
            assert me.status_code == 200, me.text
        assert me.json() == {"user_name": "erin", "groups": [], "tenant": "from-file",
                             "subject": "erin", "scopes": ["memory:read"]}
        assert httpx.get(f"{base}/readyz", timeout=10).status_code == 200
        wrong = issuer.token("erin", audience="another")
        assert httpx.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {wrong}"},
                         timeout=10).status_code == 401
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
