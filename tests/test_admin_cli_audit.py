"""``oam-admin audit``: keygen, enable, seal, verify (clean and tampered), list, status, disable."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import psycopg
from cli_harness import Cli, cli, one_error
from dds import OWNER
from psycopg import sql

__all__ = ["cli"]


def _store_args(dds: Any, store_id: str, url: str | None = None) -> list[str]:
    return ["--url", url or dds.secadmin_url, "--memory-store-id", store_id,
            "--schema-owner", OWNER]


def _keys(cli: Cli, tmp_path: Path) -> tuple[str, str]:
    private, public = str(tmp_path / "audit.pem"), str(tmp_path / "audit.jwk")
    result = cli("audit", "keygen", "--private-key", private, "--public-key", public)
    assert result.code == 0, result
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    assert "d" not in json.loads(Path(public).read_text())  # no private part
    again = cli("audit", "keygen", "--private-key", private, "--public-key", public)
    one_error(again, 1, "exists")
    return private, public


def test_audit_flow_enable_seal_verify_tamper(cli: Cli, dds: Any, tmp_path: Path) -> None:
    private, public = _keys(cli, tmp_path)
    store_id = dds.new_store()
    enabled = cli("audit", "enable", *_store_args(dds, store_id))
    assert enabled.code == 0 and "enabled" in enabled.out, enabled
    with dds.runtime_store(store_id, "alice") as store:
        store.add(["a", "b", "c"], "memory", record_ids=["m1", "m2", "m3"])
        store.delete("memory", "m2")

    listed = cli("audit", "list", *_store_args(dds, store_id, dds.owner_url), "--limit", "1000")
    assert listed.code == 0, listed
    rows = [json.loads(line) for line in listed.out.splitlines()]
    memory = [(r["operation"], r["record_id"], r["end_user"], r["application"]) for r in rows
              if r["record_table"] == "memory"]
    assert memory == [("insert", "m1", "alice", "gw"), ("insert", "m2", "alice", "gw"),
                      ("insert", "m3", "alice", "gw"), ("delete", "m2", "alice", "gw")]
    since = cli("audit", "list", *_store_args(dds, store_id), "--since", str(rows[-2]["id"]))
    assert [json.loads(line)["id"] for line in since.out.splitlines()] == [rows[-1]["id"]]

    sealed = cli("audit", "seal", *_store_args(dds, store_id), "--signing-key", private)
    assert sealed.code == 0 and sealed.out.startswith("checkpoint 1: records"), sealed
    assert "nothing to seal" in cli("audit", "seal", *_store_args(dds, store_id),
                                    "--signing-key", private).out
    clean = cli("audit", "verify", *_store_args(dds, store_id), "--public-key", public)
    assert clean.code == 0 and clean.out.startswith("ok: "), clean
    head = clean.out.split("latest checkpoint ")[1].split(";")[0]
    trusted = cli("audit", "verify", *_store_args(dds, store_id), "--public-key", public,
                  "--trusted-checkpoint", head)
    assert trusted.code == 0, trusted
    status = cli("audit", "status", *_store_args(dds, store_id))
    assert f"sealed through record {rows[-1]['id']}" in status.out, status

    bad = rows[2]["id"]
    with psycopg.connect(dds.superuser_url) as conn:
        audit = sql.Identifier(OWNER, f"{store_id}_write_audit")
        conn.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(audit))
        conn.execute(sql.SQL("UPDATE {} SET end_user = 'bob' WHERE id = %s").format(audit),
                     [bad])
    tampered = cli("audit", "verify", *_store_args(dds, store_id), "--public-key", public)
    assert tampered.code == 1, tampered
    assert tampered.out.startswith(f"bad: record {bad} (changed)"), tampered
    assert "Traceback" not in tampered.err

    refused = cli("audit", "disable", *_store_args(dds, store_id))
    one_error(refused, 2, "--yes")
    disabled = cli("audit", "disable", *_store_args(dds, store_id), "--yes")
    assert disabled.code == 0 and "disabled" in disabled.out, disabled


def test_audit_errors_are_one_line(cli: Cli, dds: Any, tmp_path: Path) -> None:
    private, public = _keys(cli, tmp_path)
    store_id = dds.new_store()
    one_error(cli("audit", "seal", *_store_args(dds, store_id), "--signing-key", private), 1,
              "no write audit")
    one_error(cli("audit", "seal", *_store_args(dds, store_id), "--signing-key", public), 1,
              "private")
    one_error(cli("audit", "seal", *_store_args(dds, store_id), "--signing-key",
                  str(tmp_path / "missing.pem")), 1, "cannot read")
    one_error(cli("audit", "enable", *_store_args(dds, "nosuch")), 1, "does not exist")
    one_error(cli("audit", "verify", *_store_args(dds, store_id), "--public-key", public,
                  "--trusted-checkpoint", "x"), 2, "SEQ:HEAD")
    one_error(cli("audit", "enable", "--url", dds.secadmin_url, "--memory-store-id",
                  store_id), 2, "--schema-owner")
    assert cli("audit", "enable", *_store_args(dds, store_id)).code == 0
    one_error(cli("audit", "seal", *_store_args(dds, store_id, dds.runtime_url),
                  "--signing-key", private), 1, "may not seal")


def _tamper(dds: Any, store_id: str, *statements: tuple[str, list[Any]]) -> None:
    """Run ``statements`` on the audit tables as the database's superuser (an admin who also
    switches the append-only guard off); ``{audit}``, ``{chain}``, ``{checkpoint}`` name them."""
    tables = {name: sql.Identifier(OWNER, f"{store_id}_{table}") for name, table in (
        ("audit", "write_audit"), ("chain", "write_audit_chain"),
        ("checkpoint", "write_audit_checkpoint"))}
    with psycopg.connect(dds.superuser_url) as conn:
        for table in tables.values():
            conn.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(table))
        for statement, params in statements:
            conn.execute(sql.SQL(statement).format(**tables), params)


def _audited_writes(cli: Cli, dds: Any, store_id: str, user: str, ids: list[str]) -> None:
    with dds.runtime_store(store_id, user) as store:
        store.add([f"note {i}" for i in ids], "memory", record_ids=ids)


def _trusted_from(seal_output: str) -> str:
    """The ``SEQ:HEAD`` that ``seal`` prints for the operator to keep."""
    [line] = [x for x in seal_output.splitlines() if "--trusted-checkpoint" in x]
    return line.split("--trusted-checkpoint ", 1)[1].split()[0]


def test_seal_refuses_to_sign_on_top_of_a_tampered_chain(cli: Cli, dds: Any,
                                                         tmp_path: Path) -> None:
    private, public = _keys(cli, tmp_path)
    store_id = dds.new_store()
    store = _store_args(dds, store_id)
    assert cli("audit", "enable", *store).code == 0
    _audited_writes(cli, dds, store_id, "alice", ["t1", "t2", "t3"])
    first = cli("audit", "seal", *store, "--signing-key", private)
    assert first.code == 0 and first.out.startswith("checkpoint 1: records"), first
    # Positive control: on an untampered chain, more rows seal onto the last checkpoint.
    _audited_writes(cli, dds, store_id, "bob", ["t4"])
    second = cli("audit", "seal", *store, "--signing-key", private)
    assert second.code == 0 and second.out.startswith("checkpoint 2: records"), second
    assert _trusted_from(second.out).startswith("2:")
    assert cli("audit", "verify", *store, "--public-key", public,
               "--trusted-checkpoint", _trusted_from(second.out)).code == 0

    rows = [json.loads(line) for line in cli("audit", "list", *store, "--limit", "1000")
            .out.splitlines()]
    bad = rows[1]["id"]
    _tamper(dds, store_id, ("UPDATE {audit} SET end_user = 'mallory' WHERE id = %s", [bad]))
    _audited_writes(cli, dds, store_id, "alice", ["t5"])
    verified = cli("audit", "verify", *store, "--public-key", public)
    assert verified.code == 1 and verified.out.startswith(f"bad: record {bad} (changed)")
    refused = cli("audit", "seal", *store, "--signing-key", private)
    line = one_error(refused, 1, verified.out.strip())  # verify's own words
    assert "nothing sealed" in line
    assert refused.out == ""
    status = cli("audit", "status", *store)
    assert "2 checkpoints" in status.out, status  # nothing signed on top


def test_a_history_rewritten_and_resealed_with_the_key_fails_the_trusted_checkpoint(
        cli: Cli, dds: Any, tmp_path: Path) -> None:
    """Whoever holds the signing key and the database can rewrite every record and seal the
    result again: it verifies clean, except against a chain head kept outside the database."""
    private, public = _keys(cli, tmp_path)
    store_id = dds.new_store()
    store = _store_args(dds, store_id)
    assert cli("audit", "enable", *store).code == 0
    _audited_writes(cli, dds, store_id, "alice", ["r1", "r2"])
    sealed = cli("audit", "seal", *store, "--signing-key", private)
    assert sealed.code == 0, sealed
    kept = _trusted_from(sealed.out)  # what the operator keeps outside the database
    assert cli("audit", "verify", *store, "--public-key", public,
               "--trusted-checkpoint", kept).code == 0  # the positive control

    rows = [json.loads(line) for line in cli("audit", "list", *store).out.splitlines()]
    _tamper(dds, store_id,
            ("UPDATE {audit} SET end_user = 'mallory' WHERE id = %s", [rows[-1]["id"]]),
            ("DELETE FROM {chain}", []), ("DELETE FROM {checkpoint}", []))
    resealed = cli("audit", "seal", *store, "--signing-key", private)
    assert resealed.code == 0 and resealed.out.startswith("checkpoint 1: records"), resealed
    assert _trusted_from(resealed.out) != kept
    looks_clean = cli("audit", "verify", *store, "--public-key", public)
    assert looks_clean.code == 0, looks_clean  # the key and the database agree with each other
    caught = cli("audit", "verify", *store, "--public-key", public, "--trusted-checkpoint", kept)
    assert caught.code == 1, caught
    assert caught.out.startswith("bad: checkpoint 1 (untrusted)"), caught
