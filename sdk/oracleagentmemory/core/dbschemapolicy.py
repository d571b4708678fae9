"""Schema policies of DB-backed stores."""

from __future__ import annotations

from enum import Enum

from oracleagentmemory.errors import InvalidArgumentError


class SchemaPolicy(str, Enum):
    """How the store opens or prepares its managed schema."""

    REQUIRE_EXISTING = "require_existing"
    """Validate that the complete managed schema exists and is current; change nothing."""
    CREATE_IF_EMPTY = "create_if_empty"
    """Create the schema when no managed object exists; otherwise require it complete and
    current."""
    CREATE_IF_NECESSARY = "create_if_necessary"
    """Create missing managed objects and apply supported schema upgrades."""
    RECREATE = "recreate"
    """Drop and recreate every managed object. Destructive."""
    NO_CHECK = "no_check"
    """Skip validation and creation (Deep Data Security runtime; needs an end-user context)."""


def parse_schema_policy(value: object) -> SchemaPolicy:
    """Accept a :class:`SchemaPolicy` or its plain string value."""
    if isinstance(value, SchemaPolicy):
        return value
    if isinstance(value, str):
        try:
            return SchemaPolicy(value.lower())
        except ValueError:
            pass
    allowed = ", ".join(repr(p.value) for p in SchemaPolicy)
    raise InvalidArgumentError(
        f"schema_policy must be a SchemaPolicy or one of {allowed}; got {value!r}")
