"""Database engines. Each engine package is the only place that writes SQL for its database.

The core reaches engines only through :mod:`~oracleagentmemory.engines.interfaces` (the
contracts), :mod:`~oracleagentmemory.engines.registry` (which engine serves a connection) and the
factories below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracleagentmemory.engines.interfaces import IdentityProviderUser
from oracleagentmemory.engines.registry import make_engine, recognises_context

if TYPE_CHECKING:
    from oracleagentmemory.engines.postgres.assertion import PostgresEndUserSecurityContext


def create_end_user_security_context(database_access_token: str, end_user_identity: Any,
                                     data_roles: Any = None, attributes: Any = None,
                                     ) -> PostgresEndUserSecurityContext:
    """Create a PostgreSQL end-user security context (see
    :func:`oracleagentmemory.engines.postgres.assertion.create_end_user_security_context`).

    On Oracle, use ``oracledb``'s own function of the same name.
    """
    from oracleagentmemory.engines.postgres.assertion import (
        create_end_user_security_context as create,
    )

    return create(database_access_token, end_user_identity, data_roles, attributes)


__all__ = [
    "IdentityProviderUser",
    "create_end_user_security_context",
    "make_engine",
    "recognises_context",
]
