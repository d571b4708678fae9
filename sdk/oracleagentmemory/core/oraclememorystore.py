"""``OracleMemoryStore``, the common base class of the SDK's stores, under the module path of its
name (defined in ``core.storebase``), with the record types the document table holds."""

from oracleagentmemory.apis.records import DOCUMENT_TYPES, MEMORY_TYPES
from oracleagentmemory.core.storebase import OracleMemoryStore

__all__ = ["DOCUMENT_TYPES", "MEMORY_TYPES", "OracleMemoryStore"]
