"""``OracleMemoryStore``: the common base class of the SDK's stores (``oracleagentmemory.core``).

The store contract, its asynchronous twins included, is
:class:`~oracleagentmemory.apis.IMemoryStore`; this class is the type ``OracleAgentMemory`` works
with, whatever the store behind it.
"""

from __future__ import annotations

from oracleagentmemory.apis.memorystore import IMemoryStore


class OracleMemoryStore(IMemoryStore):
    """Store interface used by ``OracleAgentMemory``.

    Every synchronous method has an ``*_async`` twin with the same signature that runs it in a
    worker thread; context variables (such as an active end-user security context) follow the
    call into that thread.
    """
