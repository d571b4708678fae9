"""Images in the store: ``"image"`` records and image parts of messages (spec 001, store API).

Image bytes are built here by hand (a real PNG through zlib; JPEG and WebP files whose container
structure is whole): the store checks formats by their headers and structure, not by decoding.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from conftest import HashEmbedder, StoreFactory
from dds import OWNER
from oracleagentmemory.apis.message import ImageContent, ImageMimeType, TextContent
from oracleagentmemory.apis.records import ImageRecord, MessageRecord
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core import OracleDBMemoryStore, SearchStrategy
from oracleagentmemory.core._images import STORE_MAX_IMAGE_BYTES, check_image_bytes
from oracleagentmemory.engines.identifiers import store_names
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError
from psycopg import sql
from test_deepsec_attacks import APPLY


def png(width: int = 2, height: int = 1, seed: int = 0) -> bytes:
    """A real RGB PNG (``seed`` varies the pixels, so two images differ)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    rows = b"".join(b"\x00" + bytes((seed + x) % 256 for x in range(3 * width))
                    for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def jpeg(scan: bytes = b"\x12\x34\x56") -> bytes:
    """A baseline JPEG container: SOI, APP0 (JFIF), SOF0, SOS, scan data, EOI."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">H", 11) + b"\x08\x00\x01\x00\x01\x01\x01\x11\x00"
    sos = b"\xff\xda" + struct.pack(">H", 8) + b"\x01\x01\x00\x00\x3f\x00"
    return b"\xff\xd8" + app0 + sof0 + sos + scan + b"\xff\xd9"


def webp() -> bytes:
    """A lossless WebP container (RIFF, WEBP, a VP8L chunk with its signature byte)."""
    payload = b"\x2f\x00\x00\x00\x00\x88\x88\x08"
    chunk = b"VP8L" + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


IMAGES: dict[str, Callable[[], bytes]] = {"image/png": png, "image/jpeg": jpeg,
                                          "image/webp": webp}


def add_image(store: OracleDBMemoryStore, data: bytes, mime: str = "image/png",
              **kwargs: Any) -> str:
    metadata = {"image_mime_type": mime, **kwargs.pop("extra_metadata", {})}
    return store.add([data], "image", metadata=[metadata], **kwargs)[0]


@pytest.fixture
def keyword_store(make_store: StoreFactory) -> OracleDBMemoryStore:
    return make_store(search_strategy=SearchStrategy.KEYWORD)


# --- records of each format ---------------------------------------------------------------------
@pytest.mark.parametrize("mime", sorted(IMAGES))
def test_each_format_round_trips_with_its_bytes_on_request(store: OracleDBMemoryStore,
                                                           mime: str) -> None:
    data = IMAGES[mime]()
    image_id = add_image(store, data, mime, user_ids="u1", thread_ids="t1", agent_ids="a1",
                         index_texts=["a picture"], extra_metadata={"source": "camera"})
    without = store.get("image", image_id)
    assert isinstance(without, ImageRecord)
    assert without.bytes is None
    assert without.mime_type is ImageMimeType(mime)
    assert without.content == "a picture"
    assert (without.user_id, without.thread_id, without.agent_id) == ("u1", "t1", "a1")
    assert without.message_id is None
    assert without.metadata == {"source": "camera"}  # the declared type is not returned
    with_bytes = store.get("image", image_id, include_bytes=True)
    assert isinstance(with_bytes, ImageRecord)
    assert with_bytes.bytes == data


def test_the_mime_type_key_alone_leaves_no_metadata(store: OracleDBMemoryStore) -> None:
    image_id = add_image(store, png())
    record = store.get("image", image_id)
    assert record is not None and record.metadata is None
    assert [r.id for r in store.list("image", metadata_filter=None)] == [image_id]


def test_an_enum_mime_type_is_accepted(store: OracleDBMemoryStore) -> None:
    [image_id] = store.add([jpeg()], "image", metadata={"image_mime_type": ImageMimeType.JPEG})
    record = store.get("image", image_id)
    assert isinstance(record, ImageRecord) and record.mime_type is ImageMimeType.JPEG


# --- bad images ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("declared", "actual"), [("image/jpeg", "image/png"),
                                                  ("image/png", "image/webp"),
                                                  ("image/webp", "image/jpeg")])
def test_a_declared_type_that_is_not_the_bytes_is_refused(store: OracleDBMemoryStore,
                                                          declared: str, actual: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"metadata\[1\]\.image_mime_type") as caught:
        store.add([png(), IMAGES[actual]()], "image",
                  metadata=[{"image_mime_type": "image/png"}, {"image_mime_type": declared}])
    assert caught.value.argument == "metadata[1].image_mime_type"
    assert store.list("image") == []


@pytest.mark.parametrize("mime", sorted(IMAGES))
def test_truncated_images_are_refused(store: OracleDBMemoryStore, mime: str) -> None:
    data = IMAGES[mime]()
    for cut in (len(data) - 1, len(data) // 2, 12):
        with pytest.raises(InvalidArgumentError, match=r"contents\[0\]") as caught:
            add_image(store, data[:cut], mime)
        assert caught.value.argument in ("contents[0]", "metadata[0].image_mime_type")
    add_image(store, data, mime)  # positive control: the whole file is accepted
    assert len(store.list("image")) == 1


@pytest.mark.parametrize("garbage", [b"hello world", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40,
                                     b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 20,
                                     b"\xff\xd8\xff\xd9"])
def test_garbage_bytes_are_refused(store: OracleDBMemoryStore, garbage: bytes) -> None:
    declared = {b"\x89P": "image/png", b"RI": "image/webp", b"\xff\xd8": "image/jpeg"}.get(
        garbage[:2], "image/png")
    with pytest.raises(InvalidArgumentError, match=r"contents\[0\]"):
        add_image(store, garbage, declared)


def test_a_corrupt_png_header_checksum_is_refused() -> None:
    data = bytearray(png())
    data[20] ^= 0x01  # width changes, the IHDR CRC no longer matches
    with pytest.raises(InvalidArgumentError, match="checksum"):
        check_image_bytes(bytes(data), "image/png", "contents[0]", "metadata[0].image_mime_type")


def test_the_size_limit_is_the_sdk_maximum(store: OracleDBMemoryStore) -> None:
    data = png()
    assert check_image_bytes(data, "image/png", "x", "y", max_bytes=len(data)) == data
    with pytest.raises(InvalidArgumentError, match="more than the limit"):
        check_image_bytes(data, "image/png", "x", "y", max_bytes=len(data) - 1)
    assert STORE_MAX_IMAGE_BYTES == 32 * 1024 * 1024
    padded = data + b"\x00" * (STORE_MAX_IMAGE_BYTES - len(data) + 1)  # data after IEND
    with pytest.raises(InvalidArgumentError, match=r"contents\[0\].*more than the limit"):
        add_image(store, padded)


@pytest.mark.parametrize(("metadata", "error", "argument"), [
    (None, InvalidArgumentError, "metadata[0].image_mime_type"),
    ({"source": "x"}, InvalidArgumentError, "metadata[0].image_mime_type"),
    ({"image_mime_type": "image/gif"}, InvalidArgumentError, "metadata[0].image_mime_type"),
    ({"image_mime_type": 3}, InvalidArgumentTypeError, "metadata[0].image_mime_type"),
])
def test_image_writes_need_a_supported_declared_type(store: OracleDBMemoryStore,
                                                     metadata: Any, error: type[Exception],
                                                     argument: str) -> None:
    with pytest.raises(error) as caught:
        store.add([png()], "image", metadata=[metadata])
    assert getattr(caught.value, "argument", None) == argument


@pytest.mark.parametrize("content", ["text", None, 42])
def test_image_contents_must_be_bytes(store: OracleDBMemoryStore, content: Any) -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"contents\[0\] must be bytes"):
        store.add([content], "image", metadata={"image_mime_type": "image/png"})


# --- include_bytes ------------------------------------------------------------------------------
def test_listing_images_loads_bytes_only_for_one_exact_record(store: OracleDBMemoryStore) -> None:
    first = add_image(store, png(seed=1), user_ids="u1")
    add_image(store, png(seed=2), user_ids="u1")
    assert all(r.bytes is None for r in store.list("image"))  # type: ignore[attr-defined]
    for kwargs in ({}, {"record_id": first}, {"user_id": "u1"}):
        with pytest.raises(InvalidArgumentError, match="include_bytes") as caught:
            store.list("image", include_bytes=True, **kwargs)
        assert caught.value.argument == "include_bytes"
    [record] = store.list("image", include_bytes=True, record_id=first, user_id="u1")
    assert isinstance(record, ImageRecord) and record.bytes == png(seed=1)
    assert store.list("image", include_bytes=True, record_id=first, user_id="u2") == []
    with pytest.raises(InvalidArgumentTypeError, match="include_bytes"):
        store.get("image", first, include_bytes="yes")


# --- image parts of messages --------------------------------------------------------------------
def parts_message(store: OracleDBMemoryStore, **kwargs: Any) -> tuple[str, list[Any]]:
    parts = [TextContent("look at this", id="p-text"),
             ImageContent(png(seed=7), ImageMimeType.PNG, "a red square", id="p-img"),
             ImageContent(jpeg(), ImageMimeType.JPEG, None, id="p-img2")]
    [message_id] = store.add([parts], "message", thread_ids="t1", user_ids="u1",
                             roles="user", **kwargs)
    return message_id, parts


def test_message_image_parts_round_trip(store: OracleDBMemoryStore) -> None:
    message_id, parts = parts_message(store)
    record = store.get("message", message_id)
    assert isinstance(record, MessageRecord)
    assert not isinstance(record.content, str)
    text, image, image2 = record.content
    assert text == parts[0]
    assert isinstance(image, ImageContent) and image.bytes is None
    assert (image.id, image.mime_type, image.description) == ("p-img", ImageMimeType.PNG,
                                                              "a red square")
    assert isinstance(image2, ImageContent) and image2.description is None
    loaded = store.get("message", message_id, include_bytes=True)
    assert isinstance(loaded, MessageRecord)
    assert tuple(loaded.content) == tuple(parts)
    [listed] = store.list("message", include_bytes=True)
    assert tuple(listed.content) == tuple(parts)
    [in_thread] = store.list_thread_messages("t1", include_bytes=True)
    assert tuple(in_thread.content) == tuple(parts)
    [no_bytes] = store.list_thread_messages("t1")
    assert all(getattr(p, "bytes", None) is None for p in no_bytes.content)


def test_message_image_parts_are_image_records_of_the_message(store: OracleDBMemoryStore) -> None:
    message_id, _ = parts_message(store)
    images = {r.id: r for r in store.list("image")}
    assert set(images) == {"p-img", "p-img2"}
    image = images["p-img"]
    assert isinstance(image, ImageRecord)
    assert (image.message_id, image.thread_id, image.user_id) == (message_id, "t1", "u1")
    with_bytes = store.get("image", "p-img", include_bytes=True)
    assert isinstance(with_bytes, ImageRecord) and with_bytes.bytes == png(seed=7)
    # A part changes and goes with its message, never on its own.
    assert store.update("image", "p-img", index_text="changed") == 0
    assert store.delete("image", "p-img") == 0
    assert store.get("image", "p-img") is not None


def test_bad_image_parts_are_refused_naming_the_part(store: OracleDBMemoryStore) -> None:
    cases: list[tuple[Any, str]] = [
        (ImageContent(png(), ImageMimeType.JPEG), r"contents\[0\]\[1\]\.mime_type"),
        (ImageContent(png()[:-3], ImageMimeType.PNG), r"contents\[0\]\[1\]\.bytes"),
        (ImageContent(None, ImageMimeType.PNG), r"contents\[0\]\[1\]\.bytes"),
        (ImageContent(png(), "image/gif"), r"contents\[0\]\[1\]\.mime_type"),  # type: ignore[arg-type]
    ]
    for part, pattern in cases:
        with pytest.raises((InvalidArgumentError, InvalidArgumentTypeError), match=pattern):
            store.add([[TextContent("x"), part]], "message", thread_ids="t1")
    assert store.list("message") == [] and store.list("image") == []


def test_updating_a_message_replaces_its_image_parts(store: OracleDBMemoryStore) -> None:
    message_id, _ = parts_message(store)
    new_parts = [ImageContent(webp(), ImageMimeType.WEBP, "a green circle", id="p-new")]
    assert store.update("message", message_id, content=new_parts) == 1
    assert [r.id for r in store.list("image")] == ["p-new"]
    loaded = store.get("message", message_id, include_bytes=True)
    assert isinstance(loaded, MessageRecord) and tuple(loaded.content) == tuple(new_parts)
    assert store.update("message", message_id, content="plain now") == 1
    assert store.list("image") == []


def test_deleting_a_message_deletes_its_image_parts(store: OracleDBMemoryStore) -> None:
    message_id, _ = parts_message(store)
    standalone = add_image(store, png(), thread_ids="t1", user_ids="u1")
    assert store.delete("message", message_id) == 1
    assert [r.id for r in store.list("image")] == [standalone]


def test_deleting_a_thread_deletes_its_images_and_message_parts(store: OracleDBMemoryStore
                                                                ) -> None:
    store.add([None], "thread", record_ids="t1", user_ids="u1")
    parts_message(store)
    add_image(store, png(seed=3), thread_ids="t1", user_ids="u1", index_texts=["in thread"])
    other = add_image(store, png(seed=4), thread_ids="t2", user_ids="u1")
    assert store.delete_thread("t1") == 1
    assert [r.id for r in store.list("image")] == [other]
    assert store.list("message") == []


def test_message_parts_expire_with_their_message(store: OracleDBMemoryStore) -> None:
    message_id, _ = parts_message(store, ttl_days=5)
    assert store.update("message", message_id, ttl_days=None) == 1
    assert store.update("message", message_id, timestamp="2020-01-01T00:00:00+00:00") == 1
    record = store.get("image", "p-img")
    assert record is not None and record.timestamp is not None
    assert record.timestamp.startswith("2020-01-01")


# --- updates of image records -------------------------------------------------------------------
def test_updating_an_image_replaces_bytes_type_and_description(keyword_store: OracleDBMemoryStore
                                                               ) -> None:
    store = keyword_store
    image_id = add_image(store, png(), index_texts=["a harbour at dawn"],
                         extra_metadata={"k": 1})
    assert store.update("image", image_id, content=jpeg(),
                        metadata={"image_mime_type": "image/jpeg", "k": 2}) == 1
    record = store.get("image", image_id, include_bytes=True)
    assert isinstance(record, ImageRecord)
    assert (record.bytes, record.mime_type, record.metadata) == (jpeg(), ImageMimeType.JPEG,
                                                                 {"k": 2})
    assert record.content == "a harbour at dawn"  # new bytes keep the description
    assert [r.id for r, _ in store.search("harbour", 5)] == [image_id]
    assert store.update("image", image_id, index_text="a mountain lake") == 1
    assert store.get("image", image_id).content == "a mountain lake"  # type: ignore[union-attr]
    assert store.search("harbour", 5) == []
    assert [r.id for r, _ in store.search("mountain", 5)] == [image_id]
    assert store.update("image", image_id, index_text=None) == 1
    assert store.get("image", image_id).content is None  # type: ignore[union-attr]
    assert store.search("mountain", 5) == []


def test_image_update_errors(store: OracleDBMemoryStore) -> None:
    image_id = add_image(store, png())
    with pytest.raises(InvalidArgumentError, match=r"metadata\.image_mime_type is required"):
        store.update("image", image_id, content=jpeg())
    with pytest.raises(InvalidArgumentError, match=r"metadata\.image_mime_type"):
        store.update("image", image_id, content=png(),
                     metadata={"image_mime_type": "image/jpeg"})
    with pytest.raises(InvalidArgumentError, match=r"metadata\.image_mime_type: .*with its bytes"):
        store.update("image", image_id, metadata={"image_mime_type": "image/jpeg"})
    with pytest.raises(InvalidArgumentTypeError, match="content must be bytes"):
        store.update("image", image_id, content="text",
                     metadata={"image_mime_type": "image/png"})
    assert store.update("image", image_id, metadata={"x": 1}) == 1
    record = store.get("image", image_id, include_bytes=True)
    assert isinstance(record, ImageRecord)
    assert (record.bytes, record.metadata) == (png(), {"x": 1})
    assert store.update("image", "missing", metadata={"x": 1}) == 0


# --- search -------------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", [SearchStrategy.KEYWORD, SearchStrategy.VECTOR,
                                      SearchStrategy.HYBRID])
def test_images_are_found_by_their_description_without_bytes(make_store: StoreFactory,
                                                             strategy: SearchStrategy) -> None:
    kwargs: dict[str, Any] = {"search_strategy": strategy}
    if strategy is not SearchStrategy.KEYWORD:
        kwargs.update(embedder=HashEmbedder(16), vector_dim=16)
    store = make_store(**kwargs)
    image_id = add_image(store, png(), user_ids="u1", index_texts=["sunset over the harbour"])
    store.add(["the quarterly report is due"], "memory", user_ids="u1")
    parts_message(store)
    store.add([[ImageContent(png(seed=9), ImageMimeType.PNG, "harbour cranes", id="p-h")]],
              "message", thread_ids="t9", user_ids="u1")
    found = store.search("harbour", 10, user_id="u1", exact_user_match=True)
    images = [r for r, _ in found if isinstance(r, ImageRecord)]
    assert {r.id for r in images} >= {image_id, "p-h"}
    assert all(r.bytes is None for r in images)
    only = store.search("harbour", 10, record_types={"image"})
    assert {r.record_type for r, _ in only} == {"image"}
    without = store.search("harbour", 10, record_types={"memory", "message"})
    assert not any(isinstance(r, ImageRecord) for r, _ in without)


# --- row security -------------------------------------------------------------------------------
def test_an_end_user_reaches_only_their_own_images(dds: Any) -> None:
    store_id = dds.new_store(vector_dim=None)
    with dds.runtime_store(store_id, "alice", search_strategy=SearchStrategy.KEYWORD) as alice:
        alice_image = add_image(alice, png(seed=1), index_texts=["alice holiday photo"],
                                record_ids="img-alice")
        [alice_message] = alice.add(
            [[ImageContent(jpeg(), ImageMimeType.JPEG, "alice receipt", id="part-alice")]],
            "message", thread_ids="t-alice")
    with dds.runtime_store(store_id, "bob", search_strategy=SearchStrategy.KEYWORD) as bob:
        bob_image = add_image(bob, png(seed=2), index_texts=["bob holiday photo"],
                              record_ids="img-bob")
        # Bob cannot read, list (with or without bytes), search, update or delete alice's images.
        assert bob.get("image", alice_image) is None
        assert bob.get("image", alice_image, include_bytes=True) is None
        assert bob.get("image", "part-alice", include_bytes=True) is None
        assert bob.get("message", alice_message, include_bytes=True) is None
        assert bob.list("image", include_bytes=True, record_id=alice_image,
                        user_id="alice") == []
        assert [r.id for r in bob.list("image")] == [bob_image]
        assert [r.id for r, _ in bob.search("holiday alice receipt", 10)] == [bob_image]
        assert bob.update("image", alice_image, content=jpeg(),
                          metadata={"image_mime_type": "image/jpeg"}) == 0
        assert bob.update("image", alice_image, index_text="hijacked") == 0
        assert bob.delete("image", alice_image) == 0
        assert bob.delete("message", alice_message) == 0
        # Positive control: the same calls work on bob's own image.
        own = bob.get("image", bob_image, include_bytes=True)
        assert isinstance(own, ImageRecord) and own.bytes == png(seed=2)
        assert bob.update("image", bob_image, index_text="bob mountain photo") == 1
        assert bob.update("image", bob_image, content=jpeg(),
                          metadata={"image_mime_type": "image/jpeg"}) == 1
        [listed] = bob.list("image", include_bytes=True, record_id=bob_image, user_id="bob")
        assert listed.bytes == jpeg()
        assert bob.delete("image", bob_image) == 1
    with dds.runtime_store(store_id, "alice", search_strategy=SearchStrategy.KEYWORD) as alice:
        image = alice.get("image", alice_image, include_bytes=True)
        assert isinstance(image, ImageRecord)
        assert (image.bytes, image.content) == (png(seed=1), "alice holiday photo")
        message = alice.get("message", alice_message, include_bytes=True)
        assert isinstance(message, MessageRecord)
        assert not isinstance(message.content, str)
        [part] = message.content
        assert isinstance(part, ImageContent) and part.bytes == jpeg()
        assert [r.id for r, _ in alice.search("holiday", 10)] == [alice_image]
        new_parts = [ImageContent(webp(), ImageMimeType.WEBP, "alice ticket", id="part-new")]
        assert alice.update("message", alice_message, content=new_parts) == 1
        assert sorted(r.id for r in alice.list("image")) == [alice_image, "part-new"]
        assert [r.id for r, _ in alice.search("ticket", 10)] == ["part-new"]
    with dds.runtime_store(store_id, "bob", search_strategy=SearchStrategy.KEYWORD) as bob:
        assert bob.update("message", alice_message, content=[
            ImageContent(png(), ImageMimeType.PNG, "bob's", id="part-bob")]) == 0
        assert bob.list("image") == []
    with dds.runtime_store(store_id, "alice", search_strategy=SearchStrategy.KEYWORD) as alice:
        loaded = alice.get("message", alice_message, include_bytes=True)
        assert isinstance(loaded, MessageRecord) and tuple(loaded.content) == tuple(new_parts)
        assert alice.delete("message", alice_message) == 1
        assert [r.id for r in alice.list("image")] == [alice_image]
        assert alice.delete_thread("t-alice") == 0  # no thread row; its rows are gone already


def test_raw_sql_cannot_index_or_reach_another_users_image(dds: Any) -> None:
    """The chunk policy: a retrieval row of an image is writable only for one's own image."""
    store_id = dds.new_store(vector_dim=None)
    with dds.runtime_store(store_id, "bob") as bob:
        add_image(bob, png(), record_ids="img-bob")
    with dds.runtime_store(store_id, "alice") as alice:
        add_image(alice, png(), record_ids="img-alice")
    names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=OWNER,
                        fold="lower")
    chunks = sql.Identifier(OWNER, names.table("record_chunks"))
    document = sql.Identifier(OWNER, names.table("document"))
    insert = sql.SQL("INSERT INTO {} (record_type, record_id, chunk_no, chunk_text, user_id) "
                     "VALUES ('image', %s, 0, 'planted', 'alice')").format(chunks)
    with psycopg.connect(dds.runtime_url) as conn:
        assert conn.execute(APPLY, [dds.context("alice").assertion()]).fetchone() == ("alice",)
        assert conn.execute(sql.SQL("SELECT id FROM {} ORDER BY id").format(document)
                            ).fetchall() == [("img-alice",)]
        assert conn.execute(sql.SQL("UPDATE {} SET bytes = 'x' WHERE id = 'img-bob'").format(
            document)).rowcount == 0
        conn.execute(insert, ["img-alice"])  # positive control: her own image
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(insert, ["img-bob"])
        conn.rollback()


# --- bulk writes, expiry, vectors ---------------------------------------------------------------
def test_bulk_writes_of_images_and_message_parts(store: OracleDBMemoryStore) -> None:
    """More records than one batch: the COPY path carries the bytes too."""
    datas = [png(seed=n) for n in range(5)]
    ids = store.add(datas, "image", metadata={"image_mime_type": "image/png"},
                    user_ids="u1", batch_size=2)
    for image_id, data in zip(ids, datas, strict=True):
        [record] = store.list("image", include_bytes=True, record_id=image_id, user_id="u1")
        assert isinstance(record, ImageRecord) and record.bytes == data
    messages = [[ImageContent(jpeg(bytes([n])), ImageMimeType.JPEG, f"part {n}", id=f"q{n}")]
                for n in range(4)]
    message_ids = store.add(messages, "message", thread_ids="t1", batch_size=2)
    loaded = store.list_thread_messages("t1", include_bytes=True)
    assert [m.id for m in loaded] == message_ids
    assert [tuple(m.content) for m in loaded] == [tuple(p) for p in messages]


def test_expired_images_are_hidden_and_purged(store: OracleDBMemoryStore) -> None:
    old = "2000-01-01T00:00:00+00:00"
    expired = add_image(store, png(seed=1), ttl_days=1, timestamps=old,
                        ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    kept = add_image(store, png(seed=2), ttl_days=1)
    store.add([[ImageContent(png(seed=3), ImageMimeType.PNG, id="gone")]], "message",
              thread_ids="t1", ttl_days=1, timestamps=old,
              ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    assert [r.id for r in store.list("image")] == [kept]
    assert store.get("image", expired) is None
    assert store.purge_expired() == 2  # the expired image and the expired message
    assert store.purge_expired() == 0


def test_image_descriptions_get_explicit_vectors(vector_store: OracleDBMemoryStore) -> None:
    store = vector_store
    image_id = add_image(store, png(), index_texts=["a cat"], embeddings=[[1.0, 0.0, 0.0]])
    store.add(["dogs"], "memory", embeddings=[[0.0, 1.0, 0.0]])
    [(first, distance), _] = store.search(None, 2, query_vector=[1.0, 0.0, 0.0])
    assert (first.id, round(distance, 6)) == (image_id, 0.0)
    assert store.update("image", image_id, embedding=[0.0, 0.0, 1.0]) == 1
    [(first, _), _] = store.search(None, 2, query_vector=[0.0, 0.0, 1.0])
    assert first.id == image_id
    assert store.update("image", image_id, status="invalid") == 1
    found = store.search(None, 2, query_vector=[0.0, 0.0, 1.0], include_invalid_results=False)
    assert image_id not in [r.id for r, _ in found] and found
