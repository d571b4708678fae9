"""Admin API of the database write audit: enable, disable, seal, verify, list.

With the audit enabled, every INSERT, UPDATE, DELETE (and TRUNCATE) on a store's record tables
leaves audit rows written by the database in the same transaction (one row per record: operation,
record table, type, id and owner, the verified end user and application, the login, the
transaction id and times; never the record's contents). The runtime login can neither read nor
write the audit table. The admin identity seals the rows into signed checkpoints over a SHA-256
hash chain (:mod:`.audit_chain`) and verifies them later; verification names the first bad
record or checkpoint.

Every function runs as the admin identity (the schema owner or the policy administrator) and
refuses to run inside an end-user context. The audit objects live outside the versioned store
schema: ``enable_write_audit`` installs them (idempotent; run it again after ``store recreate``,
which replaces the record tables and their triggers but keeps the audit rows).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from oracleagentmemory.core.deepsec import audit_chain
from oracleagentmemory.core.deepsec._admin_session import refuse_in_context, store_names_of
from oracleagentmemory.core.deepsec.audit_chain import GENESIS, SigningKey
from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.engines.write_audit import (
    AuditRow,
    ChainEntry,
    CheckpointRow,
    SealedRow,
    WriteAuditAdmin,
    write_audit_admin_for,
)
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OracleAgentMemoryError,
)

__all__ = [
    "AuditChainError",
    "AuditCheckpoint",
    "AuditProblem",
    "AuditRow",
    "AuditVerification",
    "WriteAuditStatus",
    "disable_write_audit",
    "enable_write_audit",
    "list_write_audit",
    "seal_write_audit",
    "verify_write_audit",
    "write_audit_status",
]

KeySource = str | bytes | Path | Mapping[str, Any] | SigningKey
Progress = Callable[[str], None]


@dataclass(frozen=True)
class WriteAuditStatus:
    """Whether a store's writes are audited, and how far the audit is sealed."""

    owner_schema: str
    memory_store_id: str
    enabled: bool
    """Every record table has its audit triggers."""
    audited_tables: tuple[str, ...]
    missing_tables: tuple[str, ...]
    records: int
    checkpoints: int
    sealed_through: int
    """The highest sealed audit id (0 when nothing is sealed)."""


@dataclass(frozen=True)
class AuditCheckpoint:
    """A checkpoint written by :func:`seal_write_audit`."""

    seq: int
    first_id: int
    last_id: int
    row_count: int
    head: str
    """The chain head after ``last_id`` (hex): keep it outside the database to detect a later
    rollback of the audit (``verify_write_audit(trusted_checkpoint=(seq, head))``)."""
    key_id: str


@dataclass(frozen=True)
class AuditProblem:
    """The first thing that does not verify.

    ``kind``: ``changed`` (a sealed row's fields differ from what was sealed), ``deleted`` (a
    sealed row is gone), ``inserted`` (a row inside a sealed range that the chain does not
    hold), ``rewritten`` (the stored hashes were recomputed: the chain no longer reaches the
    signed head), ``bad_signature``, ``bad_checkpoint`` (a checkpoint altered, missing or out of
    sequence) or ``untrusted`` (the trusted checkpoint is absent or differs).
    """

    kind: str
    message: str
    record_id: int | None = None
    checkpoint_seq: int | None = None


@dataclass(frozen=True)
class AuditVerification:
    """The outcome of :func:`verify_write_audit`."""

    ok: bool
    problem: AuditProblem | None
    records_checked: int
    checkpoints_checked: int
    unsealed_records: int
    last_checkpoint_seq: int | None
    head: str | None

    @property
    def first_bad_record(self) -> int | None:
        """The id of the first bad audit record (``None`` when clean or a checkpoint is bad)."""
        return None if self.problem is None else self.problem.record_id


class AuditChainError(OracleAgentMemoryError, RuntimeError):
    """:func:`seal_write_audit` refused: what is already sealed does not verify (or changed
    while sealing), so nothing was signed on top of it. ``problem`` is the first bad record or
    checkpoint, as :func:`verify_write_audit` reports it; ``sealed``, the checkpoints this seal
    signed before it stopped (usually none)."""

    code = "audit_chain_broken"

    def __init__(self, problem: AuditProblem, sealed: list[AuditCheckpoint] | None = None
                 ) -> None:
        self.problem = problem
        self.sealed = list(sealed or [])
        super().__init__(f"{self.outcome}: the audit sealed so far does not verify: "
                         f"{problem.message}")

    @property
    def outcome(self) -> str:
        """``nothing sealed``, or which checkpoints this seal signed before it stopped."""
        if not self.sealed:
            return "nothing sealed"
        return f"sealed checkpoints {self.sealed[0].seq}..{self.sealed[-1].seq}, then stopped"


@contextmanager
def _audit_admin(connection: object, what: str) -> Iterator[WriteAuditAdmin]:
    refuse_in_context(what)
    admin = write_audit_admin_for(connection)
    try:
        yield admin
    finally:
        if admin is not connection:
            admin.close()


def _store(admin: WriteAuditAdmin, owner_schema: str, memory_store_id: str) -> StoreNames:
    if not isinstance(memory_store_id, str):
        raise InvalidArgumentTypeError("memory_store_id must be a str",
                                       argument="memory_store_id")
    names = store_names_of(owner_schema, memory_store_id)
    if not admin.store_exists(names):
        raise InvalidArgumentError(
            f"memory store {memory_store_id!r} does not exist in schema {names.schema!r}; "
            "create it first as the schema owner", argument="memory_store_id")
    return names


def _label(names: StoreNames) -> str:
    return f"{names.schema}.{names.store_key}"


def _status(admin: WriteAuditAdmin, names: StoreNames, store_id: str) -> WriteAuditStatus:
    state = admin.installation(names)
    assert names.schema is not None
    if not state.installed:
        return WriteAuditStatus(names.schema, store_id, False, state.audited_tables,
                                state.missing_tables, 0, 0, 0)
    checkpoints = admin.checkpoints(names)
    return WriteAuditStatus(names.schema, store_id, not state.missing_tables,
                            state.audited_tables, state.missing_tables, admin.count_after(names, 0),
                            len(checkpoints), checkpoints[-1].last_id if checkpoints else 0)


def enable_write_audit(connection: object, owner_schema: str,
                       memory_store_id: str) -> WriteAuditStatus:
    """Audit every write to a store's record tables from now on (idempotent).

    Creates the audit tables (owned by the store's table owner) and the triggers of every
    record table, and logs an ``audit_enabled`` row. Needs the Deep Data Security schema
    (``oam_sec``): the triggers read the verified end user from it.
    """
    with _audit_admin(connection, "enable_write_audit") as admin, admin.transaction():
        names = _store(admin, owner_schema, memory_store_id)
        if not admin.security_schema_installed():
            raise InvalidArgumentError(
                "the write audit names the verified end user, which needs the Deep Data "
                "Security schema: install the store's policies first "
                "(add_deep_data_security_policies, oam-admin policies add)",
                argument="memory_store_id")
        admin.install(names)
        return _status(admin, names, memory_store_id)


def disable_write_audit(connection: object, owner_schema: str,
                        memory_store_id: str) -> WriteAuditStatus:
    """Stop auditing a store's writes: drop the triggers, keep the audit rows and checkpoints
    (an ``audit_disabled`` row records it)."""
    with _audit_admin(connection, "disable_write_audit") as admin, admin.transaction():
        names = _store(admin, owner_schema, memory_store_id)
        admin.remove_triggers(names)
        return _status(admin, names, memory_store_id)


def write_audit_status(connection: object, owner_schema: str,
                       memory_store_id: str) -> WriteAuditStatus:
    """Whether a store's writes are audited, how many rows, how far sealed."""
    with _audit_admin(connection, "write_audit_status") as admin, admin.transaction():
        names = _store(admin, owner_schema, memory_store_id)
        return _status(admin, names, memory_store_id)


def list_write_audit(connection: object, owner_schema: str, memory_store_id: str, *,
                     since_id: int = 0, limit: int = 100) -> list[AuditRow]:
    """At most ``limit`` audit rows with an id above ``since_id``, by id."""
    if isinstance(since_id, bool) or not isinstance(since_id, int) or since_id < 0:
        raise InvalidArgumentError("since_id must be an int >= 0", argument="since_id")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100_000:
        raise InvalidArgumentError("limit must be an int from 1 to 100000", argument="limit")
    with _audit_admin(connection, "list_write_audit") as admin, admin.transaction():
        names = _store(admin, owner_schema, memory_store_id)
        return admin.list_rows(names, since_id, limit)


def _chain(rows: list[AuditRow], previous_hash: bytes, previous_id: int | None,
           seq: int) -> tuple[list[ChainEntry], bytes]:
    entries = []
    for row in rows:
        previous_hash = audit_chain.chain_hash(previous_hash, row)
        entries.append(ChainEntry(row.id, previous_id, previous_hash, seq))
        previous_id = row.id
    return entries, previous_hash


def seal_write_audit(connection: object, owner_schema: str, memory_store_id: str,
                     signing_key: KeySource, *, batch_size: int = 100_000,
                     lock_timeout_seconds: float = 30.0,
                     trusted_checkpoint: tuple[int, str] | None = None,
                     progress: Progress | None = None) -> list[AuditCheckpoint]:
    """Seal every audit row not sealed yet into signed checkpoints (one per ``batch_size``).

    First waits (at most ``lock_timeout_seconds``) until no transaction that wrote audit rows is
    still in flight, so no row can later appear below the sealed ids; writers wait meanwhile.
    Then verifies what is already sealed, as :func:`verify_write_audit` does with the signing
    key's public half (from ``trusted_checkpoint`` on, when given), and raises
    :class:`AuditChainError` naming the first bad record or checkpoint instead of signing on
    top of it. Each checkpoint commits on its own. Returns the new checkpoints (empty:
    nothing to seal); keep the last one's ``(seq, head)`` outside the database.
    """
    key = audit_chain.load_key(signing_key)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidArgumentError("batch_size must be an int >= 1", argument="batch_size")
    audit_chain.sign_checkpoint(key, b"{}")  # a public key fails here, before any lock
    public = audit_chain.load_key(audit_chain.public_jwk(key))
    sealed: list[AuditCheckpoint] = []
    with _audit_admin(connection, "seal_write_audit") as admin:
        with admin.transaction():
            names = _store(admin, owner_schema, memory_store_id)
        horizon = admin.wait_for_writers(names, max(1, int(lock_timeout_seconds * 1000)))
        verified = _verify(admin, names, public, trusted_checkpoint, progress)
        if verified.problem is not None:
            raise AuditChainError(verified.problem)
        if horizon is None:
            return sealed
        # Sign only on top of the checkpoint verified above, then on this run's own: one
        # that changed in between (deleted, replaced, added) may cover records changed since.
        expected = (verified.last_checkpoint_seq, verified.head)
        while True:
            with admin.transaction():
                admin.lock_checkpoints(names)
                last = admin.last_checkpoint(names)
                found = (None, None) if last is None else (last.seq, last.head_hash.hex())
                if found != expected:
                    raise AuditChainError(_changed_while_sealing(expected[0]), sealed)
                after = 0 if last is None else last.last_id
                rows = admin.rows(names, after, horizon, batch_size) if after < horizon else []
                if not rows:
                    break
                seq = 1 if last is None else last.seq + 1
                previous = GENESIS if last is None else last.head_hash
                entries, head = _chain(rows, previous, None if last is None else last.last_id,
                                       seq)
                sealed_at, sealed_by = admin.seal_time()
                checkpoint = CheckpointRow(seq, rows[0].id, rows[-1].id, len(rows), head,
                                           previous, sealed_at, sealed_by, "", "")
                signature, kid = audit_chain.sign_checkpoint(
                    key, audit_chain.checkpoint_payload(_label(names), checkpoint))
                admin.write_seal(names, entries,
                                 replace(checkpoint, key_id=kid, signature=signature))
            sealed.append(AuditCheckpoint(seq, rows[0].id, rows[-1].id, len(rows), head.hex(),
                                          kid))
            expected = (seq, head.hex())
            if progress is not None:
                progress(f"checkpoint {seq}: sealed records {rows[0].id}..{rows[-1].id} "
                         f"({len(rows)} rows)")
    return sealed


def _changed_while_sealing(seq: int | None) -> AuditProblem:
    last = "there was no checkpoint" if seq is None else f"checkpoint {seq} was the last one"
    return AuditProblem(
        "bad_checkpoint", f"the checkpoints changed while sealing: {last} when it was verified "
        "or sealed, and no longer is; verify the audit", checkpoint_seq=seq)


class _Verifier:
    """Walks the checkpoints and the sealed rows in order; stops at the first problem."""

    def __init__(self, key: SigningKey, store: str, checkpoints: list[CheckpointRow],
                 start: CheckpointRow | None) -> None:
        self.key, self.store, self.checkpoints = key, store, checkpoints
        self.previous_cp = start
        self.head = GENESIS if start is None else start.head_hash
        self.last_id: int | None = None if start is None else start.last_id
        self.records = 0
        self.segment_rows = 0
        self.checked = 0

    def check_checkpoint(self, cp: CheckpointRow) -> AuditProblem | None:
        previous = self.previous_cp
        payload = audit_chain.checkpoint_payload(self.store, cp)
        problem = audit_chain.signature_problem(self.key, cp.signature, payload)
        if problem is not None:
            return AuditProblem("bad_signature", f"checkpoint {cp.seq}: {problem}",
                                checkpoint_seq=cp.seq)
        expected_seq = 1 if previous is None else previous.seq + 1
        if cp.seq != expected_seq:
            return AuditProblem("bad_checkpoint", f"checkpoint {expected_seq} is missing (the "
                                f"next one is {cp.seq})", checkpoint_seq=expected_seq)
        expected_head = GENESIS if previous is None else previous.head_hash
        if cp.prev_head != expected_head or cp.first_id > cp.last_id or (
                previous is not None and cp.first_id <= previous.last_id):
            return AuditProblem("bad_checkpoint", f"checkpoint {cp.seq} does not follow "
                                "checkpoint " + str(expected_seq - 1), checkpoint_seq=cp.seq)
        self.checked += 1
        return None

    def close_segment(self, cp: CheckpointRow) -> AuditProblem | None:
        if self.last_id != cp.last_id:
            return AuditProblem("deleted", f"record {cp.last_id}, the last one checkpoint "
                                f"{cp.seq} seals, is gone", record_id=cp.last_id,
                                checkpoint_seq=cp.seq)
        if self.head != cp.head_hash or self.segment_rows != cp.row_count:
            return AuditProblem("rewritten", f"checkpoint {cp.seq}: the chain through record "
                                f"{cp.last_id} does not reach its signed head: records "
                                f"{cp.first_id}..{cp.last_id} were rewritten",
                                checkpoint_seq=cp.seq)
        self.previous_cp = cp
        self.segment_rows = 0
        return None

    def check_row(self, sealed: SealedRow, cp: CheckpointRow) -> AuditProblem | None:
        ident = sealed.id
        if sealed.row is None:
            return AuditProblem("deleted", f"record {ident} was sealed in checkpoint "
                                f"{cp.seq} and is gone", record_id=ident, checkpoint_seq=cp.seq)
        if sealed.chain is None or sealed.chain.checkpoint_seq != cp.seq:
            return AuditProblem("inserted", f"record {ident} lies inside checkpoint {cp.seq}'s "
                                "range but was not sealed there (inserted after sealing)",
                                record_id=ident, checkpoint_seq=cp.seq)
        if sealed.chain.prev_id != self.last_id:
            stated = sealed.chain.prev_id
            if stated is not None and (self.last_id is None or stated > self.last_id):
                return AuditProblem("deleted", f"record {stated}, sealed before record "
                                    f"{ident}, is gone", record_id=stated,
                                    checkpoint_seq=cp.seq)
            return AuditProblem("inserted", f"record {self.last_id} is not the record sealed "
                                f"before record {ident} (inserted into the chain)",
                                record_id=self.last_id, checkpoint_seq=cp.seq)
        digest = audit_chain.chain_hash(self.head, sealed.row)
        if digest != sealed.chain.row_hash:
            return AuditProblem("changed", f"record {ident} differs from what checkpoint "
                                f"{cp.seq} sealed", record_id=ident, checkpoint_seq=cp.seq)
        self.head, self.last_id = digest, ident
        self.records += 1
        self.segment_rows += 1
        return None


def _trusted_start(checkpoints: list[CheckpointRow], trusted: tuple[int, str] | None
                   ) -> tuple[CheckpointRow | None, list[CheckpointRow], AuditProblem | None]:
    if trusted is None:
        return None, checkpoints, None
    seq, head = trusted
    found = next((cp for cp in checkpoints if cp.seq == seq), None)
    if found is None or found.head_hash.hex() != head.lower():
        what = "is gone" if found is None else "has another head"
        return None, [], AuditProblem("untrusted", f"the trusted checkpoint {seq} {what}",
                                      checkpoint_seq=seq)
    return found, [cp for cp in checkpoints if cp.seq > seq], None


def verify_write_audit(connection: object, owner_schema: str, memory_store_id: str,
                       public_key: KeySource, *,
                       trusted_checkpoint: tuple[int, str] | None = None,
                       progress: Progress | None = None) -> AuditVerification:
    """Recompute the hash chain and check every checkpoint's signature with ``public_key``.

    From the first row, or after ``trusted_checkpoint`` (``(seq, head hex)`` kept outside the
    database; it must still be there, with that head). Stops at the first problem: a changed,
    deleted or inserted record, a rewritten range, a bad or missing checkpoint.
    """
    key = audit_chain.load_key(public_key)
    with _audit_admin(connection, "verify_write_audit") as admin:
        with admin.transaction():
            names = _store(admin, owner_schema, memory_store_id)
        return _verify(admin, names, key, trusted_checkpoint, progress)


def _verify(admin: WriteAuditAdmin, names: StoreNames, key: SigningKey,
            trusted_checkpoint: tuple[int, str] | None,
            progress: Progress | None) -> AuditVerification:
    with admin.transaction():
        checkpoints = admin.checkpoints(names)
    start, todo, problem = _trusted_start(checkpoints, trusted_checkpoint)
    verifier = _Verifier(key, _label(names), todo, start)
    if problem is None and todo:
        problem = _walk(admin, names, verifier, todo, progress)
    last = checkpoints[-1] if checkpoints else None
    with admin.transaction():
        unsealed = admin.count_after(names, 0 if last is None else last.last_id)
    return AuditVerification(problem is None, problem, verifier.records, verifier.checked,
                             unsealed, None if last is None else last.seq,
                             None if last is None else last.head_hash.hex())


def _walk(admin: WriteAuditAdmin, names: StoreNames, verifier: _Verifier,
          todo: list[CheckpointRow], progress: Progress | None) -> AuditProblem | None:
    index = 0
    problem = verifier.check_checkpoint(todo[0])
    if problem is not None:
        return problem
    after = 0 if verifier.last_id is None else verifier.last_id
    with closing(admin.sealed_rows(names, after, todo[-1].last_id)) as stream:
        for count in itertools.count(1):
            sealed = next(stream, None)
            while index < len(todo) and (sealed is None or sealed.id > todo[index].last_id):
                problem = verifier.close_segment(todo[index])
                if problem is not None:
                    return problem
                index += 1
                if index < len(todo):
                    problem = verifier.check_checkpoint(todo[index])
                    if problem is not None:
                        return problem
            if sealed is None:
                return None
            problem = verifier.check_row(sealed, todo[index])
            if problem is not None:
                return problem
            if progress is not None and count % 100_000 == 0:
                progress(f"verified {count} records")
    return None  # pragma: no cover - the loop returns
