"""The REST API's request and response bodies (pydantic): the OpenAPI schemas come from them.

Request bodies refuse unknown fields. None of them names the end user: the caller is the
verified principal. A body may still carry ``user_id`` (clients written against the SDK send
it); it must then equal the caller's own user name, or the request answers 403.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

__all__ = ["MAX_ID_LENGTH", "MAX_TTL_DAYS", "NOT_BLANK", "BatchAdd", "BatchDelete", "BatchIn",
           "BatchOperation", "BatchResult", "BatchUpdate", "Deleted", "ErasureReceipt", "Id", "Ids",
           "LinkedRecord", "Me", "MemoryIn", "MemoryPatch", "MemoryType", "MessageIn", "MessagesIn",
           "Metadata", "NonBlank", "OwnedBody", "Page", "PathId", "Problem", "ProfileIn", "Record",
           "RecordTypeName", "Relation", "RelationIn", "RelationPage", "RequestBody", "SearchHit",
           "SearchIn", "SearchOut", "ThreadIn", "ThreadPatch", "TtlDays"]

MAX_ID_LENGTH = 128
"""The longest id the stores keep (the SDK refuses longer ones)."""
MAX_TTL_DAYS = 36_500
"""The longest lifetime a record may be given, in days (100 years; longer is what ``null``,
never expiring, is for). Expiry times far beyond it overflow the timestamps that hold them."""


def _not_blank(value: str) -> str:
    """The SDK's rule for ids, queries and relation types, checked where the other rules of a
    body are (so that a blank value is the same ``invalid-request`` as an empty one)."""
    if not value.strip():
        raise PydanticCustomError("blank_string",
                                  "String should have a character other than whitespace")
    return value


NOT_BLANK = AfterValidator(_not_blank)


def _number(value: Any) -> Any:
    """A JSON number (``2`` or ``2.0``), not a boolean or a string that pydantic would turn
    into one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("whole_days", "Input should be a whole number of days")
    return value


TtlDays = Annotated[int, Field(ge=1, le=MAX_TTL_DAYS), BeforeValidator(_number)]
"""A lifetime in whole days, as the spec types ``ttl_days`` (``int``): ``2.0`` is 2, ``1.5`` is
refused."""
Metadata = dict[str, Any]
MemoryType = Literal["memory", "fact", "preference", "guideline"]
RecordTypeName = Literal["memory", "fact", "preference", "guideline", "message", "thread",
                         "thread_summary", "image", "user_profile", "agent_profile"]
NonBlank = Annotated[str, Field(min_length=1, json_schema_extra={"pattern": r"\S"}), NOT_BLANK]
"""Text with a character other than whitespace."""
Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH,
                          json_schema_extra={"pattern": r"\S"}), NOT_BLANK]
PathId = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH, pattern=r"^[^/]+$",
                              description=("A new record's id: not blank, no '/', so that it "
                                           "can be addressed as one path segment")), NOT_BLANK]


class RequestBody(BaseModel):
    """A request body: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


class OwnedBody(RequestBody):
    """A body that may name the caller (``user_id``), which must then be the caller."""

    user_id: str | None = Field(default=None, description=(
        "Optional; when given it must be the caller's own user name (the gateway never acts "
        "for another user)."))


class Problem(BaseModel):
    """An RFC 9457 problem document (``application/problem+json``)."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    code: str | None = Field(default=None, description="The SDK error's code, when one caused it.")


class Me(BaseModel):
    """The verified caller."""

    user_name: str
    subject: str
    groups: list[str]
    tenant: str
    scopes: list[str]


class ProfileIn(OwnedBody):
    """The caller's profile: what agents should know about them."""

    information: str = Field(min_length=1, description=(
        "What agents should know about the user, as text."))
    metadata: Metadata | None = Field(default=None, description=(
        "Free-form JSON object stored with the record."))


class Record(BaseModel):
    """A stored record as the API shows it (fields that do not apply to its type are absent)."""

    model_config = ConfigDict(extra="allow")

    id: str
    record_type: str
    content: Any = None
    timestamp: str | None = None
    metadata: Metadata | None = None
    status: str | None = None
    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None


class Page(BaseModel):
    """One page of a list, newest first; next_cursor fetches the next (older) page."""

    items: list[Record]
    next_cursor: str | None = None


class ThreadIn(OwnedBody):
    """A new thread of the caller."""

    thread_id: PathId | None = Field(default=None, description=(
        "The new thread's id; left out, one is generated."))
    agent_id: Id | None = Field(default=None, description=(
        "The thread's agent; left out, the thread gets a generated agent_id, which its "
        "messages carry."))
    metadata: Metadata | None = Field(default=None, description=(
        "Free-form JSON object stored with the record."))


class ThreadPatch(OwnedBody):
    """New metadata of a thread (replaced whole)."""

    metadata: Metadata | None


class MessageIn(RequestBody):
    """One message of a conversation."""

    role: Literal["user", "assistant", "system", "tool"] = Field(description=(
        "Who said it."))
    content: str = Field(description="What was said.")
    timestamp: str | None = Field(default=None, description=(
        "When it was said (ISO 8601); left out, now."))
    metadata: Metadata | None = Field(default=None, description=(
        "Free-form JSON object stored with the record."))


class MessagesIn(OwnedBody):
    """Messages appended to a thread, in order."""

    messages: list[MessageIn] = Field(min_length=1, description=(
        "The messages, oldest first."))


class Ids(BaseModel):
    """The ids of the records a request created."""

    ids: list[str]


class MemoryIn(OwnedBody):
    """A new memory of the caller."""

    content: str = Field(min_length=1, description="What to remember, as text.")
    memory_type: MemoryType = Field(default="memory", description=(
        "The kind of memory: memory, fact, preference or guideline."))
    memory_id: PathId | None = Field(default=None, description=(
        "The new memory's id; left out, one is generated."))
    thread_id: Id | None = Field(default=None, description=(
        "The thread it belongs to, if any."))
    agent_id: Id | None = Field(default=None, description="The agent it belongs to, if any.")
    metadata: Metadata | None = Field(default=None, description=(
        "Free-form JSON object stored with the record."))
    timestamp: str | None = Field(default=None, description=(
        "When it happened (ISO 8601); left out, now."))
    ttl_days: TtlDays | None = Field(default=None, description=(
        f"Whole days after which it expires (1 to {MAX_TTL_DAYS}). Left out, the store's "
        "default lifetime applies (by default none: it does not expire); null, it does not "
        "expire (or lives the store's maximum lifetime, when the store sets one)."))


class MemoryPatch(OwnedBody):
    """Changes to a memory: omitted fields are kept, metadata is replaced whole."""

    content: str | None = Field(default=None, min_length=1, description="The new content.")
    metadata: Metadata | None = Field(default=None, description=(
        "The new metadata (replaces the old whole)."))
    status: Literal["valid", "invalid"] | None = Field(default=None, description=(
        "invalid hides the memory from searches (unless they include invalid results)."))


class BatchAdd(MemoryIn):
    """Add one memory."""

    op: Literal["add"]


class BatchUpdate(MemoryPatch):
    """Change one memory."""

    op: Literal["update"]
    id: Id


class BatchDelete(OwnedBody):
    """Delete one memory."""

    op: Literal["delete"]
    id: Id


BatchOperation = Annotated[BatchAdd | BatchUpdate | BatchDelete, Field(discriminator="op")]


class BatchIn(OwnedBody):
    """Operations applied in one transaction: all of them or none."""

    operations: list[BatchOperation] = Field(min_length=1)


class BatchResult(BaseModel):
    """The outcome of each operation, in order (the id it created, changed or deleted)."""

    results: list[dict[str, Any]]


class SearchIn(OwnedBody):
    """A search of the caller's records."""

    query: NonBlank = Field(description="What to look for, in words.")
    k: int = Field(default=10, ge=1, description="How many results at most.")
    record_types: list[RecordTypeName] | None = Field(default=None, description=(
        "Only records of these types; left out, every type."))
    thread_id: Id | None = Field(default=None, description=(
        "Only this thread's records (an exact match): memories stored without a thread are "
        "left out."))
    agent_id: Id | None = Field(default=None, description=(
        "Only this agent's records (an exact match): memories stored without an agent are left "
        "out. A thread created without agent_id has a generated one."))
    metadata_filter: dict[str, Any] | None = Field(default=None, description=(
        "Only records whose metadata matches: each key's value must equal the given one, or "
        "satisfy an operator object ($array_contains, $array_contains_any, $not)."))
    num_hops: int = Field(default=0, ge=0, le=5, description=(
        "How many relations to follow from each result to the memories linked to it."))
    include_invalid_results: bool = Field(default=False, description=(
        "Also find memories marked invalid."))
    formatted: bool = Field(default=False, description=(
        "Also answer the results rendered as prompt text (the SDK's formatted content)."))


class LinkedRecord(Record):
    """A record a search result reaches through a relation (``num_hops`` > 0)."""

    relation_id: str
    relation_type: str = Field(description=(
        "The relation's type read from the record this one is linked under: the relation's own "
        "type from its source (`supports`), the opposite type from its target "
        "(`is_supported_by`)."))
    linked: list[LinkedRecord] = Field(default_factory=list, description=(
        "The records linked on from this one (the next hop)."))


class SearchHit(BaseModel):
    """One search result."""

    record: Record
    distance: float | None = None
    linked: list[LinkedRecord] = Field(default_factory=list)


class SearchOut(BaseModel):
    """Search results, best first."""

    results: list[SearchHit]
    formatted: str | None = None


class RelationIn(OwnedBody):
    """A directed relation between two of the caller's memories."""

    source_record_id: Id = Field(description="The memory the relation starts from.")
    source_record_type: MemoryType = Field(description="The source memory's type.")
    target_record_id: Id = Field(description="The memory the relation points to.")
    target_record_type: MemoryType = Field(description="The target memory's type.")
    relation_type: NonBlank = Field(max_length=256, description=(
        "What the relation says, read from the source (supports, about...)."))
    opposite_relation_type: NonBlank | None = Field(default=None, max_length=256, description=(
        "What it says read from the target (is_supported_by...), if it has a name."))
    relation_id: PathId | None = Field(default=None, description=(
        "The new relation's id; left out, one is generated."))
    metadata: Metadata | None = Field(default=None, description=(
        "Free-form JSON object stored with the record."))


class Relation(BaseModel):
    """A stored relation."""

    model_config = ConfigDict(extra="allow")

    id: str
    source_record_id: str
    source_record_type: str
    target_record_id: str
    target_record_type: str
    relation_type: str
    opposite_relation_type: str | None = None
    timestamp: str | None = None
    metadata: Metadata | None = None


class RelationPage(BaseModel):
    """One page of relations, newest first."""

    items: list[Relation]
    next_cursor: str | None = None


class Deleted(BaseModel):
    """How many records a delete removed."""

    deleted: int


class ErasureReceipt(BaseModel):
    """What ``DELETE /v1/me`` erased: counts per record type and of relations (``relation``),
    and when."""

    user_name: str
    erased_at: str
    counts: dict[str, int]
