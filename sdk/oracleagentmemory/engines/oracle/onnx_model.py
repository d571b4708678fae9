"""ONNX embedding models in the database: load, drop and list them, as the schema owner.

The statements are pure builders (:class:`~.statement.Statement`, nothing executed); the
functions at the end run them on an ``oracledb.Connection`` of the schema owner (``oam-admin
model``). Not run against a live database: none is reachable where this was written.

Sources (AI Vector Search User's Guide / PL/SQL Packages Reference, ``DBMS_VECTOR``):

* ``LOAD_ONNX_MODEL(model_name IN VARCHAR2, model_data IN BLOB, metadata IN JSON DEFAULT
  JSON('{"function" : "embedding", "embeddingOutput" : "embedding", "input": {"input":
  ["DATA"]}}'))``: the BLOB overload, which needs no directory object on the server. The BLOB
  holds the same bytes as the ``.onnx`` file. Model names: ``[schema.]model``, the model at
  most 123 characters and an unquoted identifier; a model is at most 1 GB; loading needs the
  ``CREATE MINING MODEL`` privilege ("Import ONNX Models into Oracle AI Database End-to-End
  Example": ``GRANT CREATE MINING MODEL TO dmuser``).
* ``DROP_ONNX_MODEL(model_name, force)``; the end-to-end example drops with ``force => true``.
* ``USER_MINING_MODELS`` (Database Reference): ``MODEL_NAME``, ``MINING_FUNCTION``,
  ``ALGORITHM``, ``CREATION_DATE``, ``MODEL_SIZE`` (megabytes) of the models the user owns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import oracledb

from oracleagentmemory.engines.oracle.driver_errors import error_info, translate
from oracleagentmemory.engines.oracle.embedding import DEFAULT_ONNX_METADATA, model_name
from oracleagentmemory.engines.oracle.statement import Statement
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NotPermittedError,
)

MAX_MODEL_BYTES = 1024 ** 3
"""The largest model ``LOAD_ONNX_MODEL`` accepts (1 GB); a larger one is refused before any
byte is sent."""

LOB_WRITE_CHUNK_BYTES = 8 * 1024 * 1024
"""How many bytes each ``LOB.write`` sends while the model's temporary BLOB is filled."""

_INSUFFICIENT_PRIVILEGES = 1031  # ORA-01031

PRIVILEGE_HINT = ("loading an ONNX model needs the CREATE MINING MODEL privilege: connect as "
                  "the schema owner, and have an administrator run GRANT CREATE MINING MODEL "
                  "TO <owner>")


# --- statements -----------------------------------------------------------------------------
def load_statement(model: str, metadata: Mapping[str, Any] | None = None) -> Statement:
    """``DBMS_VECTOR.LOAD_ONNX_MODEL`` (BLOB overload) of ``model``: the bytes go in the
    ``model_data`` bind (a ``BLOB`` the caller fills, :func:`load_onnx_model`), the metadata is
    JSON text read with ``JSON(:metadata)`` (the documented default when omitted)."""
    return Statement(
        sql=("BEGIN DBMS_VECTOR.LOAD_ONNX_MODEL(model_name => :model_name, model_data => "
             ":model_data, metadata => JSON(:metadata)); END;"),
        binds={"model_name": model_name(model), "model_data": None,
               "metadata": json.dumps(_metadata(metadata))},
        input_sizes={"model_data": oracledb.DB_TYPE_BLOB})


def drop_statement(model: str) -> Statement:
    """``DBMS_VECTOR.DROP_ONNX_MODEL`` of ``model`` with ``force => TRUE``."""
    return Statement(
        sql="BEGIN DBMS_VECTOR.DROP_ONNX_MODEL(model_name => :model_name, force => TRUE); END;",
        binds={"model_name": model_name(model)})


def list_statement() -> Statement:
    """The models the connected user (the schema owner) owns, by name."""
    return Statement(
        sql=('SELECT model_name AS "model_name", mining_function AS "mining_function", '
             'algorithm AS "algorithm", creation_date AS "creation_date", '
             'model_size AS "model_size" FROM USER_MINING_MODELS ORDER BY model_name'),
        columns=("model_name", "mining_function", "algorithm", "creation_date", "model_size"))


def _metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The model metadata: the documented default, or the caller's JSON object."""
    if metadata is None:
        return dict(DEFAULT_ONNX_METADATA)
    if not isinstance(metadata, Mapping):
        raise InvalidArgumentTypeError(
            f"metadata must be a JSON object (a mapping), got {type(metadata).__name__}",
            argument="metadata")
    try:
        json.dumps(dict(metadata))
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"metadata is not JSON: {exc}", argument="metadata") from None
    if "function" not in metadata:
        raise InvalidArgumentError(
            'metadata must name the model\'s machine learning function ("function": '
            '"embedding")', argument="metadata")
    return dict(metadata)


def check_model_bytes(model_bytes: object) -> bytes:
    """``model_bytes`` as ``bytes``: non-empty and at most :data:`MAX_MODEL_BYTES`."""
    if not isinstance(model_bytes, (bytes, bytearray, memoryview)):
        raise InvalidArgumentTypeError(
            f"model_bytes must be bytes, got {type(model_bytes).__name__}",
            argument="model_bytes")
    size = model_bytes.nbytes if isinstance(model_bytes, memoryview) else len(model_bytes)
    if size == 0:
        raise InvalidArgumentError("model_bytes is empty: an ONNX model file is needed",
                                   argument="model_bytes")
    if size > MAX_MODEL_BYTES:
        raise InvalidArgumentError(
            f"the model is {size} bytes; Oracle loads ONNX models of at most 1 GB "
            f"({MAX_MODEL_BYTES} bytes)", argument="model_bytes")
    return bytes(model_bytes)


# --- execution ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelInfo:
    """One row of ``USER_MINING_MODELS``."""

    name: str
    mining_function: str | None
    algorithm: str | None
    created: datetime | None
    size_mb: float | None


def _failure(exc: oracledb.Error, action: str) -> Exception:
    """The typed error of a failed model statement (ORA-01031: the missing privilege)."""
    if error_info(exc).code == _INSUFFICIENT_PRIVILEGES:
        return NotPermittedError(f"{action} was refused: {PRIVILEGE_HINT} "
                                 f"({error_info(exc).first_line})")
    return translate(exc)


def load_onnx_model(connection: oracledb.Connection, model: str, model_bytes: bytes,
                    metadata: Mapping[str, Any] | None = None) -> str:
    """Load ``model_bytes`` (an ONNX file's bytes) as in-database model ``model`` through
    ``connection`` (the schema owner's); returns the model's name as the database holds it.

    Everything is checked before a byte is sent: the name, the metadata, the size (at most
    1 GB). The bytes are written to a temporary BLOB in :data:`LOB_WRITE_CHUNK_BYTES` pieces
    and bound as ``model_data``. A user without ``CREATE MINING MODEL`` gets
    :class:`~oracleagentmemory.errors.NotPermittedError`.
    """
    statement = load_statement(model, metadata)
    data = check_model_bytes(model_bytes)
    try:
        blob = connection.createlob(oracledb.DB_TYPE_BLOB)
        for start in range(0, len(data), LOB_WRITE_CHUNK_BYTES):
            blob.write(data[start:start + LOB_WRITE_CHUNK_BYTES], start + 1)
        with connection.cursor() as cursor:
            cursor.setinputsizes(**statement.input_sizes)
            cursor.execute(statement.sql, {**statement.binds, "model_data": blob})
    except oracledb.Error as exc:
        raise _failure(exc, f"loading model {model_name(model)}") from exc
    return model_name(model)


def drop_onnx_model(connection: oracledb.Connection, model: str) -> str:
    """Drop in-database model ``model`` (``force``); returns its name."""
    statement = drop_statement(model)
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement.sql, dict(statement.binds))
    except oracledb.Error as exc:
        raise _failure(exc, f"dropping model {model_name(model)}") from exc
    return model_name(model)


def list_onnx_models(connection: oracledb.Connection) -> list[ModelInfo]:
    """The models the connected user owns (``USER_MINING_MODELS``), by name."""
    statement = list_statement()
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement.sql)
            rows = cursor.fetchall()
    except oracledb.Error as exc:
        raise _failure(exc, "listing models") from exc
    return [ModelInfo(name=str(r[0]), mining_function=None if r[1] is None else str(r[1]),
                      algorithm=None if r[2] is None else str(r[2]),
                      created=r[3] if isinstance(r[3], datetime) else None,
                      size_mb=None if r[4] is None else float(r[4])) for r in rows]
