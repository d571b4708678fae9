"""How the admin API reaches the database: one :class:`SecurityAdmin` transaction per call.

Every admin call refuses to run inside an end-user security context, then runs in one
transaction on the connection it is given (a driver connection, a URL, or an open
:class:`~oracleagentmemory.engines.security_admin.SecurityAdmin` from :func:`connect_admin`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from oracleagentmemory.core.deepsec.context import has_active_security_context
from oracleagentmemory.engines.identifiers import (
    StoreNames,
    store_names,
    validate_memory_store_id,
    validate_schema_owner,
)
from oracleagentmemory.engines.security_admin import SecurityAdmin, security_admin_for
from oracleagentmemory.errors import EndUserContextError, InvalidArgumentError


def refuse_in_context(what: str) -> None:
    """Raise :class:`EndUserContextError` when an end-user security context is active."""
    if has_active_security_context():
        raise EndUserContextError(
            f"{what} is administrative work and refuses to run inside an end-user security "
            "context; run it as the admin identity"
        )


def connect_admin(connection: object) -> SecurityAdmin:
    """An open admin session for ``connection`` (a URL or a driver connection).

    Use it as a context manager and pass it as the ``connection`` of admin calls to run them on
    one connection; it closes a connection it opened itself on exit.
    """
    refuse_in_context("connect_admin")
    return security_admin_for(connection)


@contextmanager
def admin_transaction(connection: object, what: str) -> Iterator[SecurityAdmin]:
    """The admin session of ``connection`` inside one transaction (refused in a context)."""
    refuse_in_context(what)
    admin = security_admin_for(connection)
    try:
        with admin.transaction():
            yield admin
    finally:
        if admin is not connection:
            admin.close()


def store_names_of(owner_schema: str, memory_store_id: str | None) -> StoreNames:
    """The validated names of a store in ``owner_schema`` (folded as the DDL folds them)."""
    owner = validate_schema_owner(owner_schema)
    store_id = None if memory_store_id is None else validate_memory_store_id(memory_store_id)
    return store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=owner,
                       fold="lower")


def require_store(admin: SecurityAdmin, names: StoreNames, memory_store_id: str | None) -> None:
    """Admin work names an existing store; a typo must not pass silently or fail in SQL."""
    if not admin.store_exists(names):
        raise InvalidArgumentError(
            f"memory store {memory_store_id!r} does not exist in schema {names.schema!r}; "
            "create it first as the schema owner", argument="memory_store_id"
        )
