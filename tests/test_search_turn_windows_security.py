"""Turn windows under row-level security: a neighbour is never another user's message.

Alice and bob each have a thread named ``t1`` (ids are unique per owner) with messages at the
same sequence numbers. Alice's keyword search reaches her own neighbour turns, never bob's, and
bob's search finds none of alice's, through the runtime login in each user's context.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dds import OWNER
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
from psycopg_pool import ConnectionPool

MESSAGES = {
    "alice": ["Did you finally go to the pottery class?", "Yes, last Saturday",
              "Lunch on Friday?"],
    "bob": ["My private diary entry", "A secret about the pottery class nobody knows",
            "Another private line"],
}


@contextmanager
def keyword_store_as(pool: ConnectionPool[Any], store_id: str, context: Any
                     ) -> Iterator[OracleDBMemoryStore]:
    with OracleMemoryEndUserSecurityContext(context):
        store = OracleDBMemoryStore(None, pool, schema_policy=SchemaPolicy.NO_CHECK,
                                    memory_store_id=store_id, schema_owner=OWNER,
                                    search_strategy="keyword")
        try:
            yield store
        finally:
            store.close()


def test_a_window_stays_in_its_owners_thread(dds: Any) -> None:
    store_id = dds.new_store()
    owner = dds.owner_store(store_id)
    try:
        for user, texts in MESSAGES.items():
            owner.add([None], "thread", record_ids=["t1"], user_ids=user)
            owner.add(texts, "message", record_ids=[f"{user}-{n}" for n in range(len(texts))],
                      thread_ids="t1", user_ids=user, roles="user",
                      embeddings=[[1.0, 0.0, 0.0]] * len(texts))
    finally:
        owner.close()
    with ConnectionPool(dds.runtime_url, min_size=1, max_size=1, open=True) as pool:
        with keyword_store_as(pool, store_id, dds.context("alice")) as alice:
            found = [r.id for r, _ in alice.search("pottery class", 10,
                                                   record_types=["message"])]
            # Her matching turn, then her neighbours (the answer among them); none of bob's,
            # though his turn 0 and 2 sit beside his own match at the same numbers.
            assert found[0] == "alice-0" and set(found) == {"alice-0", "alice-1", "alice-2"}
        with keyword_store_as(pool, store_id, dds.context("bob")) as bob:
            found = [r.id for r, _ in bob.search("pottery class", 10, record_types=["message"])]
            assert found[0] == "bob-1" and set(found) == {"bob-0", "bob-1", "bob-2"}
            assert [r.id for r, _ in bob.search("Saturday", 10,
                                                record_types=["message"])] == []
