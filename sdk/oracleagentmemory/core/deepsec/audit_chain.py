"""The write audit's hash chain and checkpoint signatures (pure computation, no database).

Canonical encoding of an audit row (version 1, stable): the bytes ``b"oam-write-audit-v1\\0"``
followed by each field of :data:`~oracleagentmemory.engines.postgres.audit_sql.AUDIT_COLUMNS`
in that order (``id, tx_time, clock_time, operation, record_table, record_type, record_id,
record_owner, end_user, application, db_login, txid``), each as a 4-byte big-endian length and
its UTF-8 text, or the 4 bytes ``ff ff ff ff`` for NULL. Integers (``id``, ``txid``) are decimal
text; timestamps are the decimal number of microseconds since 1970-01-01T00:00:00Z.

Chain: ``hash(row) = SHA-256(hash(previous sealed row) || canonical(row))``; the row before the
first has the hash of 32 zero bytes (:data:`GENESIS`).

A checkpoint's payload is the JSON object ``{"v": 1, "store": "<schema>.<store key>", "seq",
"first_id", "last_id", "count", "head" (hex), "prev_head" (hex), "sealed_at" (microseconds since
the epoch), "sealed_by"}`` with sorted keys and no spaces, signed as a compact JWS (RFC 7515) by
the admin's Ed25519 key (``alg`` ``Ed25519``, RFC 9864) or P-256 key (``ES256``); ``kid`` is the
key's RFC 7638 thumbprint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OKPKey

from oracleagentmemory.engines.write_audit import AuditRow, CheckpointRow
from oracleagentmemory.errors import InvalidArgumentError

GENESIS = bytes(32)
"""The hash before the first sealed row."""
_DOMAIN = b"oam-write-audit-v1\0"
_NULL = b"\xff\xff\xff\xff"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
SigningKey = OKPKey | ECKey


def microseconds(moment: datetime) -> int:
    """Microseconds since the Unix epoch (exact)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return str(microseconds(value))
    return str(value)


def canonical_row(row: AuditRow) -> bytes:
    """The row's canonical encoding (see the module docstring)."""
    parts = [_DOMAIN]
    for value in (row.id, row.tx_time, row.clock_time, row.operation, row.record_table,
                  row.record_type, row.record_id, row.record_owner, row.end_user,
                  row.application, row.db_login, row.txid):
        text = _text(value)
        if text is None:
            parts.append(_NULL)
        else:
            data = text.encode("utf-8")
            parts.append(len(data).to_bytes(4, "big") + data)
    return b"".join(parts)


def chain_hash(previous: bytes, row: AuditRow) -> bytes:
    """The row's chain hash after ``previous``."""
    return hashlib.sha256(previous + canonical_row(row)).digest()


def checkpoint_payload(store: str, checkpoint: CheckpointRow) -> bytes:
    """The signed bytes of a checkpoint (see the module docstring)."""
    body = {"v": 1, "store": store, "seq": checkpoint.seq, "first_id": checkpoint.first_id,
            "last_id": checkpoint.last_id, "count": checkpoint.row_count,
            "head": checkpoint.head_hash.hex(), "prev_head": checkpoint.prev_head.hex(),
            "sealed_at": microseconds(checkpoint.sealed_at), "sealed_by": checkpoint.sealed_by}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _algorithm(key: SigningKey) -> str:
    if isinstance(key, OKPKey) and key.curve_name == "Ed25519":
        return "Ed25519"
    if isinstance(key, ECKey) and key.curve_name == "P-256":
        return "ES256"
    raise InvalidArgumentError("an audit signing key must be an Ed25519 or a P-256 key",
                               argument="signing_key")


def sign_checkpoint(key: SigningKey, payload: bytes) -> tuple[str, str]:
    """``(compact JWS, key id)`` of ``payload`` signed with the private ``key``."""
    if not key.is_private:
        raise InvalidArgumentError("sealing needs the private signing key (the public key only "
                                   "verifies)", argument="signing_key")
    alg, kid = _algorithm(key), key.thumbprint()
    return jws.serialize_compact({"alg": alg, "kid": kid}, payload, key,
                                 algorithms=[alg]), kid


def signature_problem(key: SigningKey, signature: str, payload: bytes) -> str | None:
    """Why ``signature`` is not ``key``'s signature of ``payload`` (``None`` when it is)."""
    alg = _algorithm(key)
    try:
        obj = jws.deserialize_compact(signature, key, algorithms=[alg])
    except (JoseError, ValueError) as exc:
        return f"the signature does not verify with the given public key ({exc})"
    if obj.protected.get("alg") != alg:
        return f"signed with {obj.protected.get('alg')!r}, expected {alg!r}"
    if obj.payload != payload:
        return "the signed payload differs from the stored checkpoint"
    return None


def generate_signing_key(kind: str = "Ed25519") -> SigningKey:
    """A new private signing key: ``Ed25519`` (default) or ``ES256`` (P-256)."""
    key: SigningKey
    if kind == "Ed25519":
        key = OKPKey.generate_key("Ed25519")
        return key
    if kind == "ES256":
        key = ECKey.generate_key("P-256")
        return key
    raise InvalidArgumentError(f"key kind must be Ed25519 or ES256; got {kind!r}",
                               argument="kind")


def private_key_pem(key: SigningKey) -> bytes:
    """The private key as PKCS#8 PEM."""
    return key.as_pem(private=True)


def public_jwk(key: SigningKey) -> dict[str, Any]:
    """The public key as a JWK (with its ``kid``)."""
    jwk = dict(key.as_dict(private=False))
    jwk["kid"] = key.thumbprint()
    return jwk


def load_key(source: str | bytes | Path | Mapping[str, Any] | SigningKey) -> SigningKey:
    """A key from a PEM or JWK (text, bytes, a mapping or a file path)."""
    if isinstance(source, (OKPKey, ECKey)):
        return source
    data: Any = source
    if isinstance(source, Path):
        data = source.read_bytes()
    if isinstance(data, (str, bytes)):
        text = data.decode() if isinstance(data, bytes) else data
        stripped = text.strip()
        if stripped.startswith("{"):
            data = json.loads(stripped)
        elif "-----BEGIN" not in stripped and Path(stripped).is_file():
            return load_key(Path(stripped))
        else:
            data = stripped.encode()
    kty = data.get("kty") if isinstance(data, Mapping) else None
    for cls in ((OKPKey,) if kty == "OKP" else (ECKey,) if kty == "EC" else (OKPKey, ECKey)):
        key: SigningKey
        try:
            key = cls.import_key(dict(data) if isinstance(data, Mapping) else data)
        except (JoseError, ValueError, TypeError):
            continue
        _algorithm(key)
        return key
    raise InvalidArgumentError("not an Ed25519 or P-256 key (PEM or JWK)", argument="key")
