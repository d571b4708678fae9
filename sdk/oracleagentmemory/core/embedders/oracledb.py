"""``OracleDBEmbedder`` under the module path ``core.embedders.oracledb`` (defined in
``core.embedders.oracle_db``)."""

from oracleagentmemory.core.embedders.oracle_db import OracleDBEmbedder

__all__ = ["OracleDBEmbedder"]
