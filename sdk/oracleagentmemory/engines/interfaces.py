"""The engine contracts the core speaks to, and the plain-data plans it passes.

The core validates arguments, owns every engine-neutral rule and turns each call into plans; an
engine turns plans into SQL for its database and declares what it can do in
:class:`EngineCapabilities`. Every engine offers the same observable behaviour. The contracts:

- :class:`Engine`: connections, pools and transactions of one database (one per store object);
- :class:`EngineSession`: the work of one transaction on one store;
- :class:`EndUserContext`: an engine-level end-user security context;
- :class:`oracleagentmemory.engines.security_admin.SecurityAdmin`: Deep Data Security admin.

Engines are found through :mod:`oracleagentmemory.engines.registry`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from enum import Enum
from typing import Any, Final, Literal, TypeVar, Union

import numpy as np
import numpy.typing as npt

from oracleagentmemory.engines.identifiers import StoreNames
from oracleagentmemory.errors import (  # noqa: F401  (re-exported for engines)
    DuplicateRecordError,
    DuplicateRelationError,
    SecurityContextError,
)
from oracleagentmemory.filtertree import And

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class EngineCapabilities:
    """What an engine supports, declared once; the core reads limits from here."""

    name: str
    """Short engine name (``"postgresql"``, ``"oracle"``)."""
    latest_schema_version: int
    """The managed schema version this engine creates and upgrades to."""
    identifier_fold: str
    """Case folding of unquoted identifiers: ``'lower'`` or ``'upper'``."""
    max_identifier_length: int
    """Longest identifier (table, index, role name) the database accepts."""
    max_indexed_vector_dim: int
    """Largest vector dimension the engine's vector index supports."""
    search_modes: frozenset[str] = frozenset({"vector", "keyword", "hybrid"})
    """Search strategies the engine runs (``SearchStrategy`` values)."""
    search_index_sync_modes: frozenset[str] = frozenset({"on_commit", "manual"})
    """``SearchIndexSyncMode`` values the engine honours."""


class EndUserContext(ABC):
    """An engine-level end-user security context (what ``create_end_user_security_context``
    returns). Engines whose driver has its own context type (``oracledb``) recognise that type
    through :meth:`Engine.recognises_context` instead."""

    kind: str
    """How the end user is named: ``"local"``, ``"idp"`` or ``"token"``."""
    username: str
    """The user name rows carry; empty until verified for a token."""

    @abstractmethod
    def verified_username(self) -> str | None:
        """The user name the database verified (``None`` until a token was first verified)."""


@dataclass(frozen=True)
class IdentityProviderUser:
    """An end user that the application authenticated with identity provider ``provider``.

    The application vouches for the user (its key signs the context); the provider, registered
    by the admin (``oam-admin idp add``) and bound to the application, is the user's namespace:
    their rows carry ``"<provider>:<username>"`` and their groups are the provider's groups.
    Applications in token mode cannot vouch: pass the provider's token (a ``str``) instead.
    """

    username: str
    groups: tuple[str, ...] = ()
    provider: str | None = None


class Unset(Enum):
    """Marks a plan field the operation leaves unchanged (or a filter it does not apply)."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset.UNSET
T = TypeVar("T")
OrUnset = Union[T, Literal[Unset.UNSET]]  # noqa: UP007  (a generic alias needs Union)
"""A plan field's value, or :data:`UNSET`."""

Keyset = tuple[datetime, str]
"""A keyset position: a row's order time (aware) and id; lists keep the rows strictly older."""


@dataclass
class ImageBody:
    """What an image record stores besides its scope: the validated bytes and their format, the
    description (its searchable text) and the message it is a part of (``None``: standalone)."""

    mime_type: str
    data: bytes
    description: str | None = None
    message_id: str | None = None


RecordContent = Union[str, tuple[str, Union[list[dict[str, Any]], None]], dict[str, Any],  # noqa: UP007
                      ImageBody, None]
"""What a record stores: text (memories, profiles), ``(text, parts)`` (messages), a summary
mapping (thread summaries), an image (:class:`ImageBody`) or nothing (threads)."""


def message_body(content: RecordContent | Unset) -> tuple[str, list[dict[str, Any]] | None]:
    """A message plan's ``(text, parts)``."""
    if not isinstance(content, tuple):
        raise TypeError(f"a message's content is (text, parts), got {type(content).__name__}")
    return content


@dataclass
class RegistryRow:
    """Managed metadata of one memory store."""

    schema_version: int
    search_mode: str
    vector_dim: int | None
    default_ttl_days: int | None
    max_ttl_days: int | None
    search_index_sync: str


@dataclass
class SchemaState:
    """What exists in the database for one memory store."""

    registry: RegistryRow | None
    registry_table_exists: bool
    existing_tables: frozenset[str]
    """Logical names (``memory``, ``message``...) of managed tables that exist."""
    embedding_dim: int | None
    """Dimension of the chunk table's embedding column, ``None`` when it has none."""


@dataclass
class SchemaOptions:
    """What the store asks the schema to provide."""

    vector_dim: int | None
    search_mode: str
    search_index_sync: str
    default_ttl_days: int | None
    max_ttl_days: int | None
    in_database_model: str | None = None
    """The in-database model of the store's embedder (``OracleDBEmbedder.model``), ``None``
    when the embedder is another one; a hybrid index that embeds in the database needs it."""
    in_database_vectorizer: dict[str, Any] | None = None
    """That embedder's vectorizer preference (``OracleDBEmbedder.get_vectorizer_config_json``):
    ``{"model", "input_name"?}`` or, for a provider the database calls, ``{"embedder_spec"}``."""


@dataclass
class ChunkRow:
    """One retrieval row: chunk text and/or vector."""

    text: str | None
    vector: Vector | None


class ExpiryAnchor(Enum):
    """An expiry anchor that only the database knows."""

    RECORD_CREATION = "record_creation"
    """When the record was created: the inserting transaction's time."""


@dataclass(frozen=True)
class Expiry:
    """When a record expires: ``lifetime`` after ``anchor``. Core decides both; an engine only
    resolves :attr:`ExpiryAnchor.RECORD_CREATION` (see :meth:`instant`)."""

    lifetime: timedelta
    anchor: datetime | ExpiryAnchor

    def instant(self, created_at: datetime) -> datetime:
        """The expiry instant of a record created at ``created_at``, in UTC (elapsed time:
        adding to a zoned wall clock would shift by a daylight-saving change)."""
        base = created_at if isinstance(self.anchor, ExpiryAnchor) else self.anchor
        return base.astimezone(timezone.utc) + self.lifetime


@dataclass
class RowPlan:
    """One record to insert."""

    record_type: str
    record_id: str
    content: RecordContent
    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    role: str | None = None
    event_ts: datetime | None = None
    metadata: dict[str, Any] | None = None
    expiry: Expiry | None = None
    """``None``: the record never expires."""
    status: str = "valid"
    seq_no: int = 0
    """Assigned by the engine for messages (per-thread order, from 0)."""
    chunks: list[ChunkRow] = field(default_factory=list)
    attachments: list[RowPlan] = field(default_factory=list)
    """Messages only: the image plans of its image parts (same scope and expiry, their
    ``ImageBody.message_id`` the message), inserted with it."""


@dataclass
class UpdatePlan:
    """Changes to one record; fields left at ``UNSET`` are unchanged."""

    record_type: str
    record_id: str
    content: OrUnset[RecordContent] = UNSET
    metadata: OrUnset[dict[str, Any] | None] = UNSET
    event_ts: OrUnset[datetime | None] = UNSET
    status: OrUnset[str] = UNSET
    expiry: OrUnset[Expiry | None] = UNSET
    """``Expiry`` or ``None`` (never expires): replace the expiry; ``UNSET``: keep it."""
    chunks: OrUnset[list[ChunkRow]] = UNSET
    """``list[ChunkRow]``: replace the retrieval rows; ``UNSET``: keep them."""
    chunk_vectors: OrUnset[list[Vector | None]] = UNSET
    """``list[Vector | None]`` aligned with the existing rows: rewrite only their vectors."""
    runtime_config: OrUnset[dict[str, Any] | None] = UNSET
    """Threads only: the durable runtime configuration (replaced whole)."""
    runtime_state: OrUnset[dict[str, Any] | None] = UNSET
    """Threads only: the mutable runtime state, such as extraction progress (replaced whole)."""
    description: OrUnset[str | None] = UNSET
    """Images only: the new description (``content`` then carries new bytes and format)."""
    attachments: OrUnset[list[RowPlan]] = UNSET
    """Messages only: the image plans that replace the message's image parts (their scope and
    expiry are the stored message's)."""


@dataclass
class RecordQuery:
    """A read of records of one type."""

    record_type: str
    record_id: OrUnset[str] = UNSET
    thread_id: OrUnset[str | None] = UNSET
    user_id: OrUnset[str | None] = UNSET
    agent_id: OrUnset[str | None] = UNSET
    metadata_filter: OrUnset[And | None] = UNSET
    """``UNSET``: no filter; ``None``: records without metadata; :class:`And`: compiled filter."""
    limit: int | None = None
    """Most recent ``limit`` rows (returned oldest first); ``None`` for all."""
    older_than: OrUnset[Keyset | None] = UNSET
    """``UNSET``: "most recent" is by insertion order; otherwise by ``(coalesce(event_ts,
    created_at), id)`` (ids by code point), and a :data:`Keyset` keeps only the rows strictly
    before it (``None``: from the newest)."""
    include_bytes: bool = False
    """Images: load their bytes (``bytes`` is ``None`` otherwise). Message image parts' bytes
    come from :meth:`EngineSession.select_message_images`."""


@dataclass
class MessageQuery:
    """A read of a thread's messages by sequence number."""

    thread_id: str
    last_n: int | None = None
    range_start_seq_no: int | None = None
    range_end_seq_no: int | None = None


@dataclass
class SearchPlan:
    """One search: filters are exact; ``scope`` maps a chunk column to ``UNSET``/``None``/id."""

    mode: str
    """``'vector'``, ``'keyword'`` or ``'hybrid'``."""
    k: int
    record_types: tuple[str, ...]
    vector: Vector | None = None
    text: str | None = None
    scope: dict[str, OrUnset[str | None]] = field(default_factory=dict)
    metadata_filter: And | None = None
    include_invalid: bool = True


Candidate = tuple[str, str, float]
"""One retrieval row's ``(record_type, record_id, distance)``; smaller distances are better."""


@dataclass(frozen=True)
class CandidateRound:
    """One round of search candidates, chunk rows best first, per ranking side.

    ``sides`` holds one list for vector or keyword search and two for hybrid search (vector,
    then keyword). Each arm of a side returns at most the round's ``budget`` rows (a side with
    one arm, at most ``budget`` in all), so a side shorter than ``budget`` is complete.
    """

    sides: tuple[list[Candidate], ...]
    exact: bool
    """Whether the round was exact (``False``: an approximate index may have missed rows)."""


class CandidateSource(ABC):
    """An engine's candidates for one search plan; the core asks for rounds until it has ``k``
    distinct records or knows there are no more (``core._search_loop``)."""

    @abstractmethod
    def round(self, budget: int, exact: bool | None) -> CandidateRound:
        """Candidates within ``budget`` rows per arm. ``exact=None`` (the first round) lets the
        engine choose between an exact scan and its approximate index; ``True`` forces exact."""


@dataclass(frozen=True)
class SearchHit:
    """A ranked record: its type, id and distance (smaller is better)."""

    record_type: str
    record_id: str
    distance: float


@dataclass
class RelationRow:
    """One relation to insert."""

    id: str
    source_id: str
    source_type: str
    target_id: str
    target_type: str
    relation_type: str
    opposite_relation_type: str
    event_ts: datetime | None
    metadata: dict[str, Any] | None
    user_id: str | None = None
    """The owner of both endpoints (``None``: global memories); set from the stored memories."""


@dataclass
class RelationQuery:
    """A read of relations; ``UNSET`` fields do not filter."""

    relation_id: OrUnset[str] = UNSET
    relation_type: OrUnset[str] = UNSET
    source_id: OrUnset[str] = UNSET
    source_type: OrUnset[str] = UNSET
    target_id: OrUnset[str] = UNSET
    target_type: OrUnset[str] = UNSET
    metadata_filter: OrUnset[And | None] = UNSET
    limit: int | None = None
    older_than: OrUnset[Keyset | None] = UNSET
    """Like :attr:`RecordQuery.older_than`, by ``(created_at, id)``."""


@dataclass
class RelationChange:
    """Replacement values for one relation; ``UNSET`` fields stay."""

    relation_id: str
    relation_type: OrUnset[str] = UNSET
    opposite_relation_type: OrUnset[str] = UNSET
    event_ts: OrUnset[datetime | None] = UNSET
    metadata: OrUnset[dict[str, Any] | None] = UNSET


class EngineSession(ABC):
    """Work on one physical connection inside one transaction, on the store :attr:`names`."""

    names: StoreNames
    """The store every method works on (bound by :meth:`Engine.session`)."""

    # --- schema lifecycle -------------------------------------------------------------
    @abstractmethod
    def lock_store(self) -> None:
        """Serialise schema lifecycle work on this store until the transaction ends."""

    @abstractmethod
    def read_schema_state(self) -> SchemaState:
        """Inspect which managed objects exist and read the registry row."""

    @abstractmethod
    def bypasses_row_security(self) -> bool:
        """Whether this connection's user escapes the store's row security (a superuser, a
        role that bypasses it, or the owner of the tables or a member of the owner)."""

    @abstractmethod
    def apply_schema_version(self, version: int, options: SchemaOptions) -> None:
        """Apply the DDL step that brings the store from ``version - 1`` to ``version``."""

    @abstractmethod
    def add_embedding_storage(self, dim: int) -> None:
        """Add vector storage to a store created without it."""

    @abstractmethod
    def write_registry(self, row: RegistryRow) -> None:
        """Insert or replace the registry row of the store."""

    @abstractmethod
    def drop_store(self) -> None:
        """Drop every managed object of the store and its registry row."""

    # --- records ----------------------------------------------------------------------
    @abstractmethod
    def insert_rows(self, rows: Sequence[RowPlan], batch_size: int) -> None:
        """Insert records and their retrieval rows; raise :class:`DuplicateRecordError`."""

    @abstractmethod
    def select_records(self, query: RecordQuery) -> list[dict[str, Any]]:
        """Visible (unexpired) rows of one record type, oldest first."""

    @abstractmethod
    def select_thread_messages(
        self, query: MessageQuery
    ) -> list[dict[str, Any]]:
        """Visible messages of one thread in sequence order."""

    @abstractmethod
    def select_message_images(self, messages: Sequence[tuple[str, str | None]]
                              ) -> dict[tuple[str, str], bytes]:
        """The stored bytes of the image parts of messages ``(message id, owner)``, by
        ``(message id, part id)``."""

    @abstractmethod
    def count_chunks(self, record_type: str, record_id: str) -> int:
        """Number of retrieval rows of one record."""

    @abstractmethod
    def record_exists(self, record_type: str, record_id: str) -> bool:
        """Whether the record row exists (expired or not), locking it for update."""

    @abstractmethod
    def select_event_ts(
        self, record_type: str, record_id: str
    ) -> datetime | None:
        """Stored event timestamp of one record."""

    @abstractmethod
    def update_record(self, plan: UpdatePlan) -> int:
        """Apply ``plan``; returns 0 or 1."""

    @abstractmethod
    def delete_record(self, record_type: str, record_id: str) -> int:
        """Delete one record with its retrieval rows (and links); returns 0 or 1."""

    @abstractmethod
    def delete_actor_scope(self, actor_column: str, actor_id: str) -> None:
        """Delete threads owned by an actor (with their scoped rows) and its remaining rows."""

    @abstractmethod
    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread with its messages, memories, summaries and retrieval rows."""

    @abstractmethod
    def purge_expired(self) -> int:
        """Physically delete expired rows; returns how many records were removed."""

    # --- search -----------------------------------------------------------------------
    @abstractmethod
    def candidate_source(self, plan: SearchPlan) -> CandidateSource:
        """The engine's candidate rounds for one search (the core runs the loop)."""

    @abstractmethod
    def select_records_by_keys(self, keys: Sequence[tuple[str, str]], last: bool = False
                               ) -> dict[tuple[str, str], dict[str, Any]]:
        """Visible rows of ``(record_type, record_id)`` keys. ``last``: the session did
        nothing but read before and runs nothing after, so the engine may end the transaction
        with the read (a later statement would run in a transaction of its own)."""

    @abstractmethod
    def select_linked_memories(self, ids: Sequence[str],
                               plan: SearchPlan) -> list[dict[str, Any]]:
        """Memories among ``ids`` that pass the plan's scope, type, expiry and metadata filters."""

    # --- relations --------------------------------------------------------------------
    @abstractmethod
    def memory_types(self, ids: Sequence[str]
                     ) -> dict[str, list[tuple[str, str | None]]]:
        """``(record type, owner)`` of each stored memory among ``ids`` (ids are unique per
        owner), the caller's own (non-NULL owner) first."""

    @abstractmethod
    def insert_relations(self, rows: Sequence[RelationRow]) -> None:
        """Insert relations; raise :class:`DuplicateRelationError` for a related pair."""

    @abstractmethod
    def select_relations(self, query: RelationQuery) -> list[dict[str, Any]]:
        """Matching relations in creation order."""

    @abstractmethod
    def update_relation(self, change: RelationChange) -> bool:
        """Apply one relation change; returns whether the relation exists."""

    @abstractmethod
    def delete_relations(self, relation_ids: Sequence[str]
                         ) -> list[tuple[str, str]]:
        """Delete relations; returns ``(target_id, relation_type)`` of the deleted ones."""

    @abstractmethod
    def recompute_status(self, memory_ids: Sequence[str]) -> None:
        """INVALID while a lifecycle relation targets a memory, VALID otherwise."""

    @abstractmethod
    def links_touching(self, node_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Relations with an endpoint among ``node_ids``."""

    def links_within_hops(self, node_ids: Sequence[str], hops: int, limit: int
                          ) -> list[dict[str, Any]] | None:
        """In one query, every relation :meth:`links_touching` could return while walking
        ``hops`` hops from ``node_ids`` (each visible link with an endpoint fewer than ``hops``
        links from them, stepping only through visible memories), in creation order; ``None``
        when more than ``limit`` are in reach, or when the engine cannot walk in one query
        (the default): the core then walks hop by hop.
        """
        return None


class Engine(ABC):
    """A database engine behind a connection, a pool or a URL."""

    capabilities: EngineCapabilities
    """What this engine supports (limits, latest schema version, search modes)."""

    @property
    def fold(self) -> str:
        """Case folding of unquoted identifiers: ``'lower'`` or ``'upper'``."""
        return self.capabilities.identifier_fold

    @abstractmethod
    def __init__(self, source: object) -> None:
        """Take a driver connection or pool, or a URL (see :meth:`accepts`)."""

    @classmethod
    @abstractmethod
    def accepts(cls, source: object) -> bool:
        """Whether ``source`` (a connection, a pool or a URL) belongs to this engine."""

    @classmethod
    @abstractmethod
    def recognises_context(cls, security_context: object) -> bool:
        """Whether ``security_context`` is an end-user context this engine can apply."""

    def verified_username(self, security: object) -> str | None:
        """The user name the database verified for end-user context ``security``, or ``None``
        while it has not verified one (the core then runs one operation and asks again).

        The default asks an :class:`EndUserContext`, or reads a ``username`` of a driver's own
        context type; an engine whose driver's context names no user (``oracledb``) answers
        with the name its own verification saw.
        """
        if isinstance(security, EndUserContext):
            return security.verified_username()
        username = getattr(security, "username", None)
        return username if isinstance(username, str) and username else None

    @abstractmethod
    def session(self, names: StoreNames,
                security: Any | None = None) -> AbstractContextManager[EngineSession]:
        """Acquire a connection and open a transaction on the store ``names``; commit on
        success, roll back on error.

        With ``security`` (an end-user security context), apply it to the connection and verify
        the database sees that end user before any work, and clear it (verified) afterwards.
        """

    @abstractmethod
    def close(self) -> None:
        """Release what the engine owns (a pool it created); borrowed pools stay open."""
