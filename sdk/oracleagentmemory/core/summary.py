"""``OracleSummary``, a thread's summary, under the module path of its name (defined in
``core.contextcard`` beside the context card that holds it)."""

from oracleagentmemory.core.contextcard import OracleSummary

__all__ = ["OracleSummary"]
