"""Common base of the SDK's stores: the asynchronous twins of every store method."""

from __future__ import annotations

import asyncio
from typing import Any

from oracleagentmemory.apis.memorystore import IMemoryStore, PendingRecordBatch
from oracleagentmemory.apis.records import MessageRecord, Record
from oracleagentmemory.apis.relations import RecordRelation


class OracleMemoryStore(IMemoryStore):
    """Store interface used by ``OracleAgentMemory``.

    The ``*_async`` methods run their synchronous twin in a worker thread; context variables
    (such as an active end-user security context) follow the call into that thread.
    """

    async def add_async(self, *args: Any, **kwargs: Any) -> list[str]:
        """Asynchronous :meth:`add`."""
        return await asyncio.to_thread(self.add, *args, **kwargs)

    async def add_batches_async(self, batches: list[PendingRecordBatch],
                                **store_kwargs: Any) -> list[str]:
        """Asynchronous :meth:`add_batches`."""
        return await asyncio.to_thread(self.add_batches, batches, **store_kwargs)

    async def add_user_async(self, *args: Any, **kwargs: Any) -> str:
        """Asynchronous :meth:`add_user`."""
        return await asyncio.to_thread(self.add_user, *args, **kwargs)

    async def add_agent_async(self, *args: Any, **kwargs: Any) -> str:
        """Asynchronous :meth:`add_agent`."""
        return await asyncio.to_thread(self.add_agent, *args, **kwargs)

    async def get_async(self, *args: Any, **kwargs: Any) -> Record | None:
        """Asynchronous :meth:`get`."""
        return await asyncio.to_thread(self.get, *args, **kwargs)

    async def list_async(self, *args: Any, **kwargs: Any) -> list[Record]:
        """Asynchronous :meth:`list`."""
        return await asyncio.to_thread(self.list, *args, **kwargs)

    async def list_thread_messages_async(self, *args: Any, **kwargs: Any) -> list[MessageRecord]:
        """Asynchronous :meth:`list_thread_messages`."""
        return await asyncio.to_thread(self.list_thread_messages, *args, **kwargs)

    async def update_async(self, *args: Any, **kwargs: Any) -> int:
        """Asynchronous :meth:`update`."""
        return await asyncio.to_thread(self.update, *args, **kwargs)

    async def delete_async(self, *args: Any, **kwargs: Any) -> int:
        """Asynchronous :meth:`delete`."""
        return await asyncio.to_thread(self.delete, *args, **kwargs)

    async def delete_thread_async(self, thread_id: str) -> int:
        """Asynchronous :meth:`delete_thread`."""
        return await asyncio.to_thread(self.delete_thread, thread_id)

    async def search_async(self, *args: Any, **kwargs: Any) -> list[tuple[Record, float]]:
        """Asynchronous :meth:`search`."""
        return await asyncio.to_thread(self.search, *args, **kwargs)

    async def add_relations_async(self, *args: Any, **kwargs: Any) -> list[str]:
        """Asynchronous :meth:`add_relations`."""
        return await asyncio.to_thread(self.add_relations, *args, **kwargs)

    async def get_relation_async(self, *args: Any, **kwargs: Any) -> RecordRelation | None:
        """Asynchronous :meth:`get_relation`."""
        return await asyncio.to_thread(self.get_relation, *args, **kwargs)

    async def list_relations_async(self, *args: Any, **kwargs: Any) -> list[RecordRelation]:
        """Asynchronous :meth:`list_relations`."""
        return await asyncio.to_thread(self.list_relations, *args, **kwargs)

    async def update_relations_async(self, *args: Any, **kwargs: Any) -> list[str]:
        """Asynchronous :meth:`update_relations`."""
        return await asyncio.to_thread(self.update_relations, *args, **kwargs)

    async def delete_relations_async(self, *args: Any, **kwargs: Any) -> int:
        """Asynchronous :meth:`delete_relations`."""
        return await asyncio.to_thread(self.delete_relations, *args, **kwargs)
