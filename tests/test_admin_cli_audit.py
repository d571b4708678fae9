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
