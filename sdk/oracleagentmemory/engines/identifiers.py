"""Validation of every database identifier the SDK builds. Quoting is done by each engine.

Length limits come from the engine (``EngineCapabilities.max_identifier_length``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

MAX_MEMORY_STORE_ID_LENGTH = 16
MAX_IDENTIFIER_LENGTH = 128

_STORE_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_SCHEMA_OWNER = re.compile(r"[A-Za-z][A-Za-z0-9_$#]*")
_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_]*")

MANAGED_TABLES: tuple[str, ...] = (
    "thread",
    "thread_summary",
    "actor_profile",
    "message",
    "document",
    "memory",
    "memory_link",
    "record_chunks",
)
"""Managed record tables of one memory store, in creation order."""

REGISTRY_TABLE = "agent_memory_store_registry"
"""The per-schema registry of memory stores (version, search mode, dimension, retention)."""


def validate_memory_store_id(value: object) -> str:
    """Validate ``memory_store_id``: a letter, then letters/digits/underscore, at most 16 chars."""
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(f"memory_store_id must be a str, got {type(value).__name__}")
    if not value or len(value) > MAX_MEMORY_STORE_ID_LENGTH or not _STORE_ID.fullmatch(value):
        raise InvalidArgumentError(
            "memory_store_id must start with a letter, contain only letters, digits and "
            f"underscores, and be at most {MAX_MEMORY_STORE_ID_LENGTH} characters; got {value!r}"
        )
    return value


def validate_table_name_prefix(value: object) -> str:
    """Validate the deprecated ``table_name_prefix`` (used verbatim in front of table names)."""
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(
            f"table_name_prefix must be a str, got {type(value).__name__}")
    if not _PREFIX.fullmatch(value):
        raise InvalidArgumentError(
            "table_name_prefix must start with a letter and contain only letters, digits and "
            f"underscores; got {value!r}", argument="table_name_prefix")
    return value


def validate_schema_owner(value: object) -> str:
    """Validate ``schema_owner``: an unquoted identifier (quoted, case-sensitive owners
    unsupported)."""
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(f"schema_owner must be a str, got {type(value).__name__}")
    if not value or len(value) > MAX_IDENTIFIER_LENGTH or not _SCHEMA_OWNER.fullmatch(value):
        raise InvalidArgumentError(
            "schema_owner must be an unquoted identifier (a letter, then letters, digits, "
            f"_, $ or #, at most {MAX_IDENTIFIER_LENGTH} characters); got {value!r}"
        )
    return value


@dataclass(frozen=True)
class StoreNames:
    """Names of one memory store's objects, normalised for the engine's case rules.

    ``schema`` is ``None`` when the store lives in the connection user's own schema.
    """

    schema: str | None
    store_key: str
    """Registry key: the normalised memory_store_id or prefix ('' for the unprefixed default)."""
    table_prefix: str
    max_identifier_length: int = 63
    """The engine's identifier length limit."""

    def table(self, name: str) -> str:
        """Unqualified name of managed table ``name``."""
        if name not in MANAGED_TABLES:
            raise InvalidArgumentError(f"unknown managed table {name!r}")
        return f"{self.table_prefix}{name}"

    def object_name(self, suffix: str) -> str:
        """Unqualified name of another managed object (an index), validated."""
        name = f"{self.table_prefix}{suffix}"
        if not _PREFIX.fullmatch(name) or len(name) > self.max_identifier_length:
            raise InvalidArgumentError(f"invalid managed object name {name!r}")
        return name


def store_names(
    *,
    memory_store_id: str | None,
    table_name_prefix: str | None,
    schema_owner: str | None,
    fold: str,
    max_identifier_length: int = 63,
) -> StoreNames:
    """Build :class:`StoreNames`; ``fold`` is ``'lower'`` (PostgreSQL) or ``'upper'`` (Oracle).

    Raises :class:`InvalidArgumentError` when a table name would exceed the engine's limit.
    """
    def norm(text: str) -> str:
        return text.lower() if fold == "lower" else text.upper()

    schema = norm(schema_owner) if schema_owner is not None else None
    if memory_store_id is not None:
        key, prefix, argument = norm(memory_store_id), f"{norm(memory_store_id)}_", \
            "memory_store_id"
    elif table_name_prefix is not None:
        key, prefix, argument = norm(table_name_prefix), norm(table_name_prefix), \
            "table_name_prefix"
    else:
        key, prefix, argument = "", "", ""
    longest = max(len(t) for t in MANAGED_TABLES)
    if len(prefix) + longest > max_identifier_length:
        raise InvalidArgumentError(
            f"{argument} is too long: table names would exceed the database's "
            f"{max_identifier_length}-character limit; got {key!r}", argument=argument)
    return StoreNames(schema=schema, store_key=key, table_prefix=prefix,
                      max_identifier_length=max_identifier_length)
