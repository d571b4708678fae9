"""The README's "Deep Data Security walk-through" runs as written, so it cannot drift.

The section's fenced blocks run in order on a fresh embedded database in a private data
directory (``OAM_EMBEDDED_PGDATA``, which the README documents): ``bash`` blocks through
``bash -euo pipefail`` with the variables they export carried to the next block, ``python``
blocks in this process with those variables in ``os.environ``. Then the test checks, as an
attacker would, what the walk-through claims.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "Deep Data Security walk-through"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```\s*$", re.M | re.S)


def walkthrough_blocks() -> list[tuple[str, str]]:
    """``(language, code)`` of each fenced block of the section, in order."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(SECTION)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no '## {SECTION}' section"
    return [(lang, code) for lang, code in _FENCE.findall(match[1])]


def run_bash(code: str, env: dict[str, str], workdir: Path) -> tuple[str, dict[str, str]]:
    """Run one shell block; returns its stdout and the environment it leaves."""
    env_file = workdir / "env.bin"
    script = f"{code}\nenv -0 > {str(env_file)!r}\n"
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=workdir,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"block failed:\n{code}\nstdout:\n{proc.stdout}\n" \
                                 f"stderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    entries = env_file.read_bytes().decode().split("\0")
    return proc.stdout, dict(e.split("=", 1) for e in entries if "=" in e)


@pytest.fixture
def private_pgdata() -> Iterator[Path]:
    parent = Path(tempfile.mkdtemp(prefix="oam-readme-"))
    data_dir = parent / "data"
    try:
        yield data_dir
    finally:
        from oracleagentmemory import embedded

        embedded.stop(data_dir)
        shutil.rmtree(parent, ignore_errors=True)


def test_walkthrough_has_the_promised_steps() -> None:
    blocks = walkthrough_blocks()
    shell = "\n".join(code for lang, code in blocks if lang == "bash")
    python = [code for lang, code in blocks if lang == "python"]
    for step in (r"oam-admin store create ", r"oam-admin policies add ",
                 r"oam-admin runtime-login create ", r"oam-admin application create ",
                 r"oam-admin grant .*--group support\b", r"oam-admin idp add ",
                 r"--require-token"):
        assert re.search(step, shell), step
    assert "--password " not in shell and "--password=" not in shell
    assert len(python) == 1
    assert "schema_policy=SchemaPolicy.NO_CHECK" in python[0]
    assert "user_id" not in python[0].replace("record.user_id", "")


def test_readme_walkthrough_runs_as_written(private_pgdata: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OAM_") or k == "OAM_TEST_PG_URL"}
    env["OAM_EMBEDDED_PGDATA"] = str(private_pgdata)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    shell_output: list[str] = []
    printed: list[str] = []
    for lang, code in walkthrough_blocks():
        if lang == "bash":
            out, env = run_bash(code, env, tmp_path)
            shell_output.append(out)
        else:
            assert lang == "python", lang
            for key, value in env.items():
                if key.startswith("OAM_") or key.endswith("_TOKEN"):
                    monkeypatch.setenv(key, value)
            capsys.readouterr()
            exec(compile(code, f"{README}:{SECTION}", "exec"), {"__name__": "__readme__"})
            printed.append(capsys.readouterr().out)
            check_rows_written_by_the_runtime(env)
            check_token_mode(env)
        if lang == "bash" and "oam-admin grants list" in code:
            check_database_state(env)

    token = env["OAM_APP_TOKEN"]
    assert re.fullmatch(r"oamapp1\.support_gw\.[0-9a-f]{64}", token)
    assert "group corp:support: global_memories, own_user_rows" in "".join(shell_output)
    assert printed == ["corp:dana Dana wants follow-ups by email, not phone\n"]
    assert re.search(r"removed \d+ expired rows from memory store 'support'",
                     "".join(shell_output))


def check_database_state(env: dict[str, str]) -> None:
    """Before the runtime runs: the runtime login without a context sees and writes nothing."""
    admin_url = env["OAM_ADMIN_URL"]
    runtime_url = env["OAM_RUNTIME_URL"]
    assert urlsplit(runtime_url).username == "support_rt"
    assert urlsplit(runtime_url).password in (None, "")
    with psycopg.connect(admin_url) as admin:
        admin.execute("INSERT INTO public.support_memory (id, record_type, user_id, content) "
                      "VALUES ('seed', 'memory', 'dana', 'seeded by the admin')")
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        psycopg.connect(runtime_url)
    with psycopg.connect(runtime_url, password=env["OAM_RUNTIME_PASSWORD"]) as rt:
        assert rt.execute("SELECT count(*) FROM public.support_memory").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            rt.execute("SELECT * FROM oam_sec.application")
    with psycopg.connect(admin_url) as admin:
        admin.execute("DELETE FROM public.support_memory WHERE id = 'seed'")


def check_rows_written_by_the_runtime(env: dict[str, str]) -> None:
    """The runtime's write landed in dana's name although it never passed a user_id."""
    with psycopg.connect(env["OAM_ADMIN_URL"]) as admin:
        rows = admin.execute("SELECT user_id, content FROM public.support_memory").fetchall()
    assert rows == [("corp:dana", "Dana wants follow-ups by email, not phone")]


def check_token_mode(env: dict[str, str]) -> None:
    """In token mode the application token alone speaks for nobody, and a token of a user
    outside the granted group reads nothing; dana's own token still reads (positive control)."""
    from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
    from oracleagentmemory.core.deepsec import (
        IdentityProviderUser,
        OracleMemoryEndUserSecurityContext,
        create_end_user_security_context,
    )
    from oracleagentmemory.errors import SecurityContextError

    def notes(identity: object) -> list[str]:
        context = create_end_user_security_context(env["OAM_APP_TOKEN"], identity)
        with psycopg.connect(env["OAM_RUNTIME_URL"], password=env["OAM_RUNTIME_PASSWORD"],
                             autocommit=True) as conn, \
                OracleMemoryEndUserSecurityContext(context):
            store = OracleDBMemoryStore(None, conn, schema_policy=SchemaPolicy.NO_CHECK,
                                        memory_store_id="support", schema_owner="public")
            try:
                return [str(r.content) for r in store.list("memory")]
            finally:
                store.close()

    assert notes(env["DANA_TOKEN"]) == ["Dana wants follow-ups by email, not phone"]
    for vouched in (IdentityProviderUser("dana", ("support",), "corp"), ("dana", None)):
        with pytest.raises(SecurityContextError):
            notes(vouched)
