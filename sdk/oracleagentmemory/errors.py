"""Typed errors of the SDK.

Every error the public API raises is one of these. Each subclasses the built-in exception the
spec names for its case (so ``except ValueError`` keeps working) and carries a stable ``code``
(mapped one to one to an HTTP problem type by the gateway) and, where it applies, the argument
or record it concerns. No raw database-driver error leaves the public API: a driver error the
SDK cannot classify more precisely becomes a :class:`DatabaseError` with the driver's error
as ``__cause__``.

This module imports nothing from the rest of the package: every layer may use it.
"""

from __future__ import annotations

from typing import ClassVar


class OracleAgentMemoryError(Exception):
    """Base of every error the SDK raises.

    Attributes:
        code: stable, machine-readable name of the error class (``"invalid_argument"``...).
        argument: the argument the error concerns (``"record_ids[2]"``), if any.
        record_id: the record (or relation) id the error concerns, if any.
        record_type: the record type the error concerns, if any.
    """

    code: ClassVar[str] = "oracle_agent_memory_error"

    def __init__(self, message: str, *, argument: str | None = None,
                 record_id: str | None = None, record_type: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.argument = argument
        self.record_id = record_id
        self.record_type = record_type


class InvalidArgumentError(OracleAgentMemoryError, ValueError):
    """An argument breaks its rule (a value out of range, a malformed filter...)."""

    code = "invalid_argument"


class InvalidArgumentTypeError(OracleAgentMemoryError, TypeError):
    """An argument has the wrong type."""

    code = "invalid_argument_type"


class DuplicateRecordError(InvalidArgumentError):
    """A record with this id (for this owner) already exists."""

    code = "duplicate_record"


class DuplicateRelationError(InvalidArgumentError):
    """A relation with this id, or between the same two records, already exists.

    ``record_id`` is the relation id when the clash is on the id, ``None`` when it is on the
    endpoint pair.
    """

    code = "duplicate_relation"


class RecordNotFoundError(InvalidArgumentError):
    """An operation names a record that does not exist or is not visible to the caller.

    Raised only where the spec makes a missing record an error (a relation endpoint, for
    instance); reads of a missing record return ``None`` and updates report it in their result.
    """

    code = "record_not_found"


class RecordKeyError(RecordNotFoundError, KeyError):
    """A client lookup by id found no visible record (also a ``KeyError``, as the spec has it:
    unknown threads, a thread's unknown messages, unknown memories)."""

    code = "record_key_not_found"

    def __str__(self) -> str:  # a plain KeyError would show the message quoted
        return self.message


class NotPermittedError(OracleAgentMemoryError, RuntimeError):
    """The database's row security refused a write (the policies do not allow this row)."""

    code = "not_permitted"


class EndUserContextError(OracleAgentMemoryError, RuntimeError):
    """An end-user security context is missing where required, or present where forbidden."""

    code = "end_user_context"


class SecurityContextError(EndUserContextError):
    """An end-user context could not be applied, verified or cleared on a connection.

    Raised too when the database refuses the context (forged, expired, revoked or unknown).
    """

    code = "security_context"


class SecurityContextSetupError(SecurityContextError):
    """No end user's context can be applied on this connection, whoever the end user: a
    deployment problem (a connection without TLS, a database without the capability, the
    service's own database access token or privileges), not the end user's credentials."""

    code = "security_context_setup"


class MemoryStoreSchemaError(OracleAgentMemoryError, RuntimeError):
    """The managed schema is missing, incomplete, outdated or incompatible with the request."""

    code = "schema"


class DatabaseUnavailableError(OracleAgentMemoryError, RuntimeError):
    """The database could not be reached within the connection timeout.

    ``hint`` says what to do (start the embedded server, check the URL...).
    """

    code = "database_unavailable"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message if hint is None else f"{message}; {hint}")
        self.hint = hint


class DatabaseError(OracleAgentMemoryError, RuntimeError):
    """A database error the SDK has no more precise class for (the driver error is the cause)."""

    code = "database_error"


class OperationTimeoutError(OracleAgentMemoryError, TimeoutError):
    """An operation ran longer than its bound (graph expansion, a statement timeout)."""

    code = "timeout"


class UnsupportedEngineError(OracleAgentMemoryError, NotImplementedError):
    """The connection belongs to a database whose engine is not available in this release."""

    code = "unsupported_engine"


class UnsupportedFeatureError(OracleAgentMemoryError, NotImplementedError):
    """A feature the spec defines that this release does not provide yet."""

    code = "unsupported_feature"


class EmbeddingServiceError(OracleAgentMemoryError, RuntimeError):
    """An embedding service failed or answered something that is not a valid embedding."""

    code = "embedding_service"


__all__ = [
    "DatabaseError",
    "DatabaseUnavailableError",
    "DuplicateRecordError",
    "DuplicateRelationError",
    "EmbeddingServiceError",
    "EndUserContextError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "MemoryStoreSchemaError",
    "NotPermittedError",
    "OperationTimeoutError",
    "OracleAgentMemoryError",
    "RecordKeyError",
    "RecordNotFoundError",
    "SecurityContextError",
    "SecurityContextSetupError",
    "UnsupportedEngineError",
    "UnsupportedFeatureError",
]
