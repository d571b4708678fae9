"""Images through the agent-memory client: standalone images with model-written descriptions,
the spec's examples, image parts in thread messages, and end users kept apart."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from oracleagentmemory.apis import ImageContent, ImageMimeType, ImageRecord, TextContent
from oracleagentmemory.core import (
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    OracleAgentMemory,
    OracleDBMemoryStore,
)
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError
from scripted_llm import ScriptedCall, ScriptedLlm
from test_store_images import jpeg, png, webp

StoreFactory = Callable[..., OracleDBMemoryStore]
OFF = MemoryExtractionConfig(extract_memories=False)
INLINE_OFF = MemoryExtractionConfig(extract_memories=False,
                                    extraction_mode=MemoryExtractionMode.INLINE)


def stored(store: OracleDBMemoryStore, image_id: str) -> ImageRecord:
    record = store.get("image", image_id)
    assert isinstance(record, ImageRecord)
    return record


@pytest.fixture
def store(make_store: StoreFactory) -> OracleDBMemoryStore:
    return make_store(embedder=HashingEmbedder(64))


def test_spec_image_examples(store: OracleDBMemoryStore) -> None:
    client = OracleAgentMemory(store=store, memory_extraction_config=OFF)
    image_id = client.add_image(png(), description="Image description",
                                mime_type=ImageMimeType.PNG, image_id="img-1", user_id="u1")
    assert image_id == "img-1"
    images = client.list_images(user_id="u1", limit=10)
    assert [image.id for image in images] == ["img-1"]
    assert asyncio.run(client.list_images_async(user_id="u1", limit=10))[0].id == "img-1"
    [record] = images
    assert isinstance(record, ImageRecord) and record.content == "Image description"
    assert record.bytes is None and record.mime_type is ImageMimeType.PNG


def test_type_detected_bytes_checked_and_metadata_kept(store: OracleDBMemoryStore) -> None:
    client = OracleAgentMemory(store=store, memory_extraction_config=OFF)
    for data, mime in ((png(), "image/png"), (jpeg(), "image/jpeg"), (webp(), "image/webp")):
        image_id = client.add_image(data, user_id="u1", metadata={"k": mime})
        [record] = client.list_images(image_id=image_id, user_id="u1", include_bytes=True)
        assert (record.mime_type.value, record.bytes, record.metadata) == (mime, data, {"k": mime})
    with pytest.raises(InvalidArgumentError, match="PNG, JPEG or WebP"):
        client.add_image(b"not an image", user_id="u1")
    with pytest.raises(InvalidArgumentError):
        client.add_image(png(), mime_type="image/jpeg", user_id="u1")  # says JPEG, is PNG
    with pytest.raises(InvalidArgumentTypeError):
        client.add_image("png", user_id="u1")  # type: ignore[arg-type]
    assert len(client.list_images(user_id="u1")) == 3


def test_the_model_describes_images_inline_and_in_the_background(
        store: OracleDBMemoryStore) -> None:
    def caption(call: ScriptedCall) -> str:
        [message] = call.messages
        urls = [str(getattr(part, "url", "")) for part in message.parts]
        assert any(url.startswith("data:image/png") for url in urls)  # the image itself
        return "A red square on a white table"

    inline = OracleAgentMemory(store=store, llm=ScriptedLlm(responder=caption),
                               memory_extraction_config=INLINE_OFF)
    first = inline.add_image(png(), user_id="u1")
    assert stored(store, first).content == "A red square on a white table"
    background = OracleAgentMemory(store=store, llm=ScriptedLlm(responder=caption),
                                   memory_extraction_config=OFF)
    second = background.add_image(png(seed=3), user_id="u1")
    background.wait_for_memory_extraction(timeout=10)
    assert stored(store, second).content == "A red square on a white table"
    found = store.search("red square", 5, user_id="u1", exact_user_match=True,
                         record_types={"image"})
    assert {record.id for record, _ in found} == {first, second}
    failing = OracleAgentMemory(store=store, llm=ScriptedLlm(RuntimeError("down")),
                                memory_extraction_config=INLINE_OFF)
    third = failing.add_image(png(seed=5), user_id="u1")  # stored, undescribed
    assert stored(store, third).content is None


def test_update_image_keeps_what_is_omitted(store: OracleDBMemoryStore) -> None:
    llm = ScriptedLlm("A new caption")
    client = OracleAgentMemory(store=store, llm=llm, memory_extraction_config=INLINE_OFF)
    image_id = client.add_image(png(), description="old", user_id="u1", metadata={"a": 1})
    assert client.update_image(image_id, image=jpeg(), mime_type=ImageMimeType.JPEG) == image_id
    [record] = client.list_images(image_id=image_id, user_id="u1", include_bytes=True)
    assert (record.bytes, record.mime_type.value, record.content, record.metadata) == (
        jpeg(), "image/jpeg", "old", {"a": 1})
    client.update_image(image_id, description=None)  # the model writes a new one
    assert stored(store, image_id).content == "A new caption"
    client.update_image(image_id, description="set by hand", metadata={"b": 2})
    again = stored(store, image_id)
    assert (again.content, again.metadata) == ("set by hand", {"b": 2})
    with pytest.raises(InvalidArgumentError, match="mime_type"):
        client.update_image(image_id, image=png())
    with pytest.raises(KeyError):
        client.update_image("missing", description="x")
    assert client.delete_image(image_id) == 1
    assert client.delete_image(image_id) == 0


def test_thread_images_and_image_parts_in_messages(store: OracleDBMemoryStore) -> None:
    client = OracleAgentMemory(store=store, memory_extraction_config=OFF)
    thread = client.create_thread(thread_id="t", user_id="u1", agent_id="a1")
    standalone = thread.add_image(png(), description="a chart")
    [message_id] = thread.add_messages([{"role": "user", "content": [
        {"type": "text", "text": "look at this"},
        {"type": "image", "bytes": png(seed=9), "mime_type": "image/png",
         "description": "a photo of a cat"}]}])
    message = thread.get_message(message_id)
    assert not isinstance(message.content, str)
    text, image = message.content
    assert isinstance(text, TextContent) and text.text == "look at this"
    assert isinstance(image, ImageContent) and image.description == "a photo of a cat"
    assert image.bytes is None  # not loaded unless asked
    assert {r.id for r in thread.list_images()} == {standalone, image.id}
    assert stored(store, standalone).thread_id == "t"
    assert thread.delete_message(message_id) == 1
    assert [r.id for r in thread.list_images()] == [standalone]


def test_end_users_see_only_their_own_images(dds: Any) -> None:
    store_id = dds.new_store(vector_dim=None)
    with dds.runtime_store(store_id, "alice") as store:
        alice = OracleAgentMemory(store=store, memory_extraction_config=OFF)
        image_id = alice.add_image(png(), description="alice's passport scan", image_id="img-a")
        assert [r.id for r in alice.list_images()] == ["img-a"]  # positive control
    with dds.runtime_store(store_id, "bob") as store:
        bob = OracleAgentMemory(store=store, memory_extraction_config=OFF)
        assert bob.list_images() == []
        assert bob.list_images(user_id="alice") == []
        with pytest.raises(KeyError):
            bob.update_image(image_id, description="defaced")
        assert bob.delete_image(image_id) == 0
        own = bob.add_image(png(seed=1), description="bob's own")
        assert bob.update_image(own, description="edited") == own  # positive control
    with dds.runtime_store(store_id, "alice") as store:
        alice = OracleAgentMemory(store=store, memory_extraction_config=OFF)
        [record] = alice.list_images()
        assert record.content == "alice's passport scan"


@pytest.mark.parametrize("context", ["disabled", "caption", "image"])
def test_extraction_prompts_show_images_as_configured(store: OracleDBMemoryStore,
                                                      context: str) -> None:
    llm = ScriptedLlm('{"memories": []}', repeat_last=True)
    config = MemoryExtractionConfig(
        extraction_mode=MemoryExtractionMode.INLINE,
        memory_link_extraction_mode=MemoryLinkExtractionMode.DISABLED,
        memory_extraction_image_context=context)  # type: ignore[arg-type]
    client = OracleAgentMemory(store=store, llm=llm, memory_extraction_config=config)
    thread = client.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": [
        {"type": "text", "text": "my cat"},
        {"type": "image", "bytes": png(seed=2), "mime_type": "image/png",
         "description": "a grey cat asleep"}]}])
    [call] = llm.calls
    urls = [str(getattr(part, "url", "")) for m in call.messages for part in m.parts]
    conversation = str(getattr(call.messages[-1].parts[0], "text", ""))
    assert "my cat" in conversation
    assert ("[image: a grey cat asleep]" in conversation) is (context == "caption")
    assert any(url.startswith("data:image/png") for url in urls) is (context == "image")


def test_caption_context_needs_every_description(store: OracleDBMemoryStore,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLlm('{"memories": []}', repeat_last=True)
    config = MemoryExtractionConfig(
        extraction_mode=MemoryExtractionMode.INLINE,
        memory_link_extraction_mode=MemoryLinkExtractionMode.DISABLED,
        memory_extraction_image_context="caption")  # type: ignore[arg-type]
    client = OracleAgentMemory(store=store, llm=llm, memory_extraction_config=config)
    thread = client.create_thread(thread_id="t", user_id="u1")
    [message_id] = thread.add_messages([{"role": "user", "content": [
        {"type": "image", "bytes": png(), "mime_type": "image/png"}]}])
    assert llm.calls == [] and "needs a description" in caplog.text
    assert thread.get_message(message_id).id == message_id  # the message is kept


def test_image_limits_of_the_client_and_the_thread(store: OracleDBMemoryStore) -> None:
    small = ImageInputLimitConfig(max_raw_image_bytes=50)
    client = OracleAgentMemory(store=store, memory_extraction_config=OFF,
                               image_input_limit_config=small)
    big = png(width=64, height=64, seed=7)
    assert len(big) > 50
    with pytest.raises(InvalidArgumentError, match="max_raw_image_bytes=50"):
        client.add_image(big, user_id="u1")
    thread = client.create_thread(thread_id="t", user_id="u1")
    with pytest.raises(InvalidArgumentError, match=r"messages\[0\]\.content\[0\]"):
        thread.add_messages([{"role": "user", "content": [
            {"type": "image", "bytes": big, "mime_type": "image/png"}]}])
    roomy = client.create_thread(thread_id="t2", user_id="u1",
                                 image_input_limit_config=ImageInputLimitConfig(
                                     max_raw_image_bytes=1_000_000))
    assert len(roomy.add_messages([{"role": "user", "content": [
        {"type": "image", "bytes": big, "mime_type": "image/png"}]}])) == 1
    assert client.list_images(user_id="u1") != []
