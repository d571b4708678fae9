"""``SearchScope``, under the module path the spec names (defined in ``apis.scope``)."""

from oracleagentmemory.apis.scope import SearchScope

__all__ = ["SearchScope"]
