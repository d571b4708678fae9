"""``oam-admin audit``: the database write audit of a store (enable, seal, verify, list).

``enable`` installs the audit triggers (as the store's schema owner or the policy
administrator); ``seal`` verifies what is sealed, then signs the rows not sealed yet into
checkpoints with the admin's private key (``keygen`` makes one: Ed25519 by default) and prints
the new chain head as ``--trusted-checkpoint SEQ:HEAD``; ``verify`` recomputes the hash chain
with the public key (from a trusted checkpoint on, when given) and exits 1 naming the first bad
record or checkpoint; ``list`` prints audit rows as JSON lines. See
:mod:`oracleagentmemory.core.deepsec.audit`.

``--url`` (or ``OAM_ADMIN_URL``) names a PostgreSQL database (``postgresql://``) or an Oracle
one (``oracle://`` TLS, ``oracle+tcp://``; the store's schema owner, password in
``OAM_ORACLE_PASSWORD``): on Oracle the audit rows go to blockchain tables
(:mod:`oracleagentmemory.engines.oracle.audit_sql`).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
from pathlib import Path
from typing import Any

from oracleagentmemory.admin_cli._common import (
    CliError,
    Console,
    UsageError,
    add_schema_owner,
    admin_url,
    owner_schema,
    require_yes,
)
from oracleagentmemory.core.deepsec import audit_chain
from oracleagentmemory.core.deepsec.audit import (
    AuditChainError,
    AuditProblem,
    AuditRow,
    WriteAuditStatus,
    disable_write_audit,
    enable_write_audit,
    list_write_audit,
    seal_write_audit,
    verify_write_audit,
    write_audit_status,
)


def add_parsers(commands: Any, sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``audit`` command and its actions."""
    parser = sub(commands, "audit", run_audit,
                 "the database write audit of a store: enable, seal, verify, list", common)
    actions = parser.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    for action, text in (
        ("enable", "audit every write to the store's record tables from now on"),
        ("disable", "stop auditing the store's writes (rows and checkpoints stay); needs --yes"),
        ("status", "print whether the store is audited and how far it is sealed"),
        ("seal", "verify what is sealed (exit status 1 naming the first bad record or "
                 "checkpoint, and nothing sealed), then sign the audit rows not sealed yet "
                 "into checkpoints and print the new chain head to keep outside the "
                 "database"),
        ("verify", "recompute the hash chain and check the checkpoints' signatures; exit "
                   "status 1 naming the first bad record or checkpoint"),
        ("list", "print audit rows as JSON lines"),
        ("keygen", "create a signing key pair for seal (private PEM, public JWK)"),
    ):
        action_parser = sub(actions, action, None, text, common)
        if action == "keygen":
            action_parser.add_argument("--private-key", required=True, metavar="FILE",
                                       help="where to write the private key (mode 0600)")
            action_parser.add_argument("--public-key", required=True, metavar="FILE",
                                       help="where to write the public key (JWK)")
            action_parser.add_argument("--kind", choices=("Ed25519", "ES256"),
                                       default="Ed25519", help="key type (default: Ed25519)")
            continue
        action_parser.add_argument("--memory-store-id", required=True, metavar="ID",
                                   help="the memory store (its tables are named <ID>_<table>)")
        add_schema_owner(action_parser)
        if action == "disable":
            action_parser.add_argument("--yes", action="store_true",
                                       help="confirm this destructive command")
        if action == "seal":
            action_parser.add_argument("--signing-key", required=True, metavar="FILE",
                                       help="the private key (PEM or JWK) from audit keygen")
            action_parser.add_argument("--batch-size", type=int, default=100_000, metavar="N",
                                       help="rows per checkpoint (default: 100000)")
            action_parser.add_argument("--lock-timeout", type=float, default=30.0,
                                       metavar="SECONDS",
                                       help="how long to wait for writers in flight "
                                            "(default: 30)")
        if action == "verify":
            action_parser.add_argument("--public-key", required=True, metavar="FILE",
                                       help="the public key (JWK or PEM)")
        if action in ("seal", "verify"):
            action_parser.add_argument("--trusted-checkpoint", metavar="SEQ:HEAD",
                                       help="a chain head that seal printed and you kept "
                                            "outside the database: it must still be there, "
                                            "and the chain is checked on from it (detects a "
                                            "rollback, or a history rewritten and sealed "
                                            "again with the signing key)")
        if action == "list":
            action_parser.add_argument("--since", type=int, default=0, metavar="ID",
                                       help="only rows with an id above ID (default: 0)")
            action_parser.add_argument("--limit", type=int, default=100, metavar="N",
                                       help="at most N rows (default: 100)")


def _status_line(status: WriteAuditStatus) -> str:
    state = "enabled" if status.enabled else "disabled"
    if status.missing_tables and status.audited_tables:
        state = f"partial (not audited: {', '.join(status.missing_tables)})"
    return (f"write audit of {status.owner_schema}.{status.memory_store_id}: {state}; "
            f"{status.records} records, {status.checkpoints} checkpoints, sealed through "
            f"record {status.sealed_through}")


def _row_json(row: AuditRow) -> str:
    return json.dumps({
        "id": row.id, "tx_time": row.tx_time.isoformat(), "clock_time": row.clock_time.isoformat(),
        "operation": row.operation, "record_table": row.record_table,
        "record_type": row.record_type, "record_id": row.record_id,
        "record_owner": row.record_owner, "end_user": row.end_user,
        "application": row.application, "db_login": row.db_login, "txid": row.txid,
    }, ensure_ascii=False)


def _read_key(path: str, what: str) -> audit_chain.SigningKey:
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read the {what} {path!r}: {exc.strerror or exc}") from exc
    return audit_chain.load_key(data)


def _warn_if_readable(console: Console, path: str) -> None:
    mode = Path(path).stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        console.warn(f"the signing key {path!r} is readable by other users (chmod 600 it)")


def _bad(problem: AuditProblem) -> str:
    """The first bad record or checkpoint, in ``verify``'s words (``seal`` uses them too)."""
    where = (f"record {problem.record_id}" if problem.record_id is not None
             else f"checkpoint {problem.checkpoint_seq}")
    return f"bad: {where} ({problem.kind}): {problem.message}"


def _trusted(text: str | None) -> tuple[int, str] | None:
    if text is None:
        return None
    seq, _, head = text.partition(":")
    if not seq.isdigit() or len(head) != 64 or any(c not in "0123456789abcdefABCDEF"
                                                    for c in head):
        raise UsageError("--trusted-checkpoint must be SEQ:HEAD (a number, ':', 64 hex digits)")
    return int(seq), head


def _keygen(args: argparse.Namespace, console: Console) -> int:
    for path in (args.private_key, args.public_key):
        if Path(path).exists():
            raise CliError(f"{path!r} exists; choose another path (keys are never overwritten)")
    key = audit_chain.generate_signing_key(args.kind)
    fd = os.open(args.private_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(audit_chain.private_key_pem(key))
    public = audit_chain.public_jwk(key)
    Path(args.public_key).write_text(json.dumps(public, indent=2) + "\n", encoding="utf-8")
    console.warn(f"keep {args.private_key!r} secret: whoever holds it can sign checkpoints")
    console.out(f"key {public['kid']} ({args.kind}): private {args.private_key}, public "
                f"{args.public_key}")
    return 0


def run_audit(args: argparse.Namespace, console: Console) -> int:
    """audit enable / disable / status / seal / verify / list / keygen."""
    action: str = args.audit_command
    if action == "keygen":
        return _keygen(args, console)
    store_id: str = args.memory_store_id
    owner = owner_schema(args)
    if action == "disable":
        require_yes(args, f"audit disable stops auditing the writes of memory store "
                          f"{store_id!r} (its audit rows and checkpoints stay)")
    if action == "seal":
        key = _read_key(args.signing_key, "signing key")
        _warn_if_readable(console, args.signing_key)
    if action == "verify":
        public = _read_key(args.public_key, "public key")
    trusted = _trusted(getattr(args, "trusted_checkpoint", None))
    url = admin_url(args, console)
    if action == "enable":
        console.progress(f"installing the write audit of memory store {store_id!r} in schema "
                         f"{owner!r}")
        console.out(_status_line(enable_write_audit(url, owner, store_id)))
        return 0
    if action == "disable":
        console.out(_status_line(disable_write_audit(url, owner, store_id)))
        return 0
    if action == "status":
        console.out(_status_line(write_audit_status(url, owner, store_id)))
        return 0
    if action == "list":
        for row in list_write_audit(url, owner, store_id, since_id=args.since, limit=args.limit):
            console.out(_row_json(row))
        return 0
    if action == "seal":
        console.progress(f"verifying what is sealed of memory store {store_id!r}, then "
                         "sealing the rest (waiting for writers in flight)")
        try:
            sealed = seal_write_audit(url, owner, store_id, key, batch_size=args.batch_size,
                                      lock_timeout_seconds=args.lock_timeout,
                                      trusted_checkpoint=trusted, progress=console.progress)
        except AuditChainError as exc:
            raise CliError(f"{exc.outcome}: the audit sealed so far does not verify: "
                           f"{_bad(exc.problem)}") from exc
        for checkpoint in sealed:
            console.out(f"checkpoint {checkpoint.seq}: records {checkpoint.first_id}.."
                        f"{checkpoint.last_id} ({checkpoint.row_count}), head {checkpoint.head}")
        if not sealed:
            console.out("nothing to seal")
        else:
            console.out(f"chain head: --trusted-checkpoint {sealed[-1].seq}:{sealed[-1].head} "
                        "(keep it outside the database: with the signing key, whoever can "
                        "write the database can rewrite the history and seal it again; "
                        "`audit verify --trusted-checkpoint` then catches it)")
        return 0
    console.progress(f"verifying the write audit of memory store {store_id!r}")
    result = verify_write_audit(url, owner, store_id, public, trusted_checkpoint=trusted,
                                progress=console.progress)
    if result.problem is not None:
        console.out(_bad(result.problem))
        return 1
    latest = ("no checkpoint yet" if result.last_checkpoint_seq is None else
              f"latest checkpoint {result.last_checkpoint_seq}:{result.head}")
    console.out(f"ok: {result.records_checked} records and {result.checkpoints_checked} "
                f"checkpoints verified; {latest}; {result.unsealed_records} records not sealed "
                "yet")
    return 0
