"""The two data roles shipped with the product: own rows, and read access to global memories."""

from __future__ import annotations

from oam_policies.model import (
    AllOf,
    Always,
    AnyOf,
    DataRolePolicy,
    EndUserIs,
    Equals,
    ExistsVisible,
    IsNull,
    TableGrant,
)

OWN = EndUserIs("user_id")

MEMORY_RECORD_TYPES = ("memory", "fact", "guideline", "preference")
"""Record types stored in the memory table (their retrieval rows carry these types)."""

IS_MEMORY_CHUNK = AnyOf(tuple(Equals("record_type", t) for t in MEMORY_RECORD_TYPES))
"""A retrieval row of a memory-like record (a message may share a global memory's id)."""

_TIMES = ("event_ts",)
_SCOPE = ("thread_id", "user_id", "agent_id")

LINK_ENDPOINTS_OWNED = AllOf((
    OWN,
    ExistsVisible("memory", key="id", column="source_id", where=EndUserIs("user_id")),
    ExistsVisible("memory", key="id", column="target_id", where=EndUserIs("user_id")),
))
"""A link is writable when it and both endpoint memories are the user's own."""

CHUNK_PARENT_OWNED = AllOf((
    OWN,
    AnyOf((
        AllOf((IS_MEMORY_CHUNK, ExistsVisible("memory", key="id", column="record_id",
                                              where=EndUserIs("user_id")))),
        AllOf((Equals("record_type", "message"),
               ExistsVisible("message", key="id", column="record_id",
                             where=EndUserIs("user_id")))),
        AllOf((Equals("record_type", "user_profile"), EndUserIs("record_id"))),
        AllOf((Equals("record_type", "image"),
               ExistsVisible("document", key="id", column="record_id",
                             where=EndUserIs("user_id")))),
    )),
))
"""A retrieval row is writable when it and the record it indexes are the user's own.

Record ids are unique per owner, so the record is the one with the chunk's id and owner; a user
can never plant a chunk that indexes a global record or another user's.
"""

GLOBAL_ROW = IsNull("user_id")
"""A row that belongs to no user (written by the admin identity)."""

OWN_USER_ROWS = DataRolePolicy(
    name="own_user_rows",
    description="Read and write the rows whose user_id is the end user, and their own profile.",
    grants=(
        TableGrant("registry", Always(), select=True),
        TableGrant(
            "thread", OWN,
            insert_columns=("id", "user_id", "agent_id", "metadata", "runtime_config",
                            "runtime_state", *_TIMES),
            update_columns=("metadata", "runtime_config", "runtime_state", "next_seq_no", *_TIMES,
                            "updated_at"),
            delete=True,
        ),
        TableGrant(
            "thread_summary", OWN,
            insert_columns=("id", *_SCOPE, "content", "covered_through_seq_no", "metadata",
                            *_TIMES, "expires_at", "status"),
            update_columns=("content", "covered_through_seq_no", "metadata", *_TIMES,
                            "expires_at", "status", "updated_at"),
            delete=True,
        ),
        TableGrant(
            "message", OWN,
            insert_columns=("id", *_SCOPE, "role", "content", "content_parts", "seq_no",
                            "metadata", *_TIMES, "expires_at", "status"),
            update_columns=("content", "content_parts", "metadata", *_TIMES, "expires_at",
                            "status", "updated_at"),
            delete=True,
        ),
        TableGrant(
            "document", OWN,
            insert_columns=("id", *_SCOPE, "message_id", "mime_type", "description", "bytes",
                            "metadata", *_TIMES, "expires_at", "status"),
            update_columns=("mime_type", "description", "bytes", "metadata", *_TIMES,
                            "expires_at", "status", "updated_at"),
            delete=True,
        ),
        TableGrant(
            "memory", OWN,
            insert_columns=("id", "record_type", *_SCOPE, "content", "metadata", *_TIMES,
                            "expires_at", "status"),
            update_columns=("content", "metadata", *_TIMES, "expires_at", "status", "updated_at"),
            delete=True,
        ),
        TableGrant("record_chunks", OWN, delete=True),
        TableGrant(
            "record_chunks", CHUNK_PARENT_OWNED, select=False,
            insert_columns=("record_type", "record_id", "chunk_no", "chunk_text", *_SCOPE,
                            "embedding"),
            update_columns=("embedding",),
        ),
        TableGrant(
            "actor_profile", AllOf((Equals("actor_type", "user"), EndUserIs("actor_id"))),
            insert_columns=("actor_type", "actor_id", "content", "metadata", *_TIMES),
            update_columns=("content", "metadata", *_TIMES, "updated_at"),
            delete=True,
        ),
        TableGrant("memory_link", OWN, delete=True),
        TableGrant(
            "memory_link", LINK_ENDPOINTS_OWNED, select=False,
            insert_columns=("id", "user_id", "source_id", "source_type", "target_id",
                            "target_type", "relation_type", "opposite_relation_type", "metadata",
                            *_TIMES),
            update_columns=("relation_type", "opposite_relation_type", "metadata", *_TIMES,
                            "updated_at"),
        ),
    ),
)

GLOBAL_MEMORIES = DataRolePolicy(
    name="global_memories",
    description="Read memories whose user_id is NULL, their chunks, and the links between "
    "them.",
    grants=(
        TableGrant("registry", Always(), select=True),
        TableGrant("memory", GLOBAL_ROW),
        # A global memory's retrieval rows and links are global rows themselves: a row a user
        # wrote (their user_id) never passes for a global one.
        TableGrant("record_chunks", AllOf((IS_MEMORY_CHUNK, GLOBAL_ROW))),
        TableGrant("memory_link", GLOBAL_ROW),
    ),
)

SHIPPED_POLICIES: dict[str, DataRolePolicy] = {
    OWN_USER_ROWS.name: OWN_USER_ROWS,
    GLOBAL_MEMORIES.name: GLOBAL_MEMORIES,
}
"""Every policy the product ships, by name."""
