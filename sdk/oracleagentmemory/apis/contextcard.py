"""The context card contract, under its own module path (defined in ``apis.summary``)."""

from oracleagentmemory.apis.summary import ContextCard

__all__ = ["ContextCard"]
