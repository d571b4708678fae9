"""Small facts of the value types that Oracle's ``oracleagentmemory`` 26.8 has and code written
for it reads: ``OracleContextCard(message_format=...)``, ``PendingRecordBatch.texts`` (the
deprecated spelling of ``contents``), ``TextContent.type`` / ``ImageContent.type``, the records'
``linked_results`` default factory, and the embedder contract's probing default dimension."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from oracleagentmemory.apis import (
    IEmbedder,
    ImageContent,
    ImageMimeType,
    Message,
    PendingRecordBatch,
    TextContent,
)
from oracleagentmemory.apis.records import FactRecord, MemoryRecord, Record, ThreadRecord
from oracleagentmemory.core import OracleDBMemoryStore
from oracleagentmemory.core.contextcard import DEFAULT_MESSAGE_FORMAT, OracleContextCard
from oracleagentmemory.errors import (
    EmbeddingServiceError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)

MESSAGE = Message(role="user", content="a <b> & c", timestamp="2026-01-01T00:00:00Z")


# --- OracleContextCard(message_format=...) -------------------------------------------------------
def test_the_default_message_format_renders_xml() -> None:
    card = OracleContextCard("s", recent_messages=[MESSAGE])
    assert card.message_format == DEFAULT_MESSAGE_FORMAT
    assert ("    <message>\n      <timestamp>2026-01-01T00:00:00Z</timestamp>\n"
            "      <role>user</role>\n      <content>a &lt;b&gt; &amp; c</content>\n"
            "    </message>") in card.formatted_content


def test_a_message_format_renders_each_recent_message_escaped() -> None:
    card = OracleContextCard("s", recent_messages=[MESSAGE, Message(role="assistant",
                                                                     content="ok")],
                             message_format="[{role}] {content}")
    assert "  <recent_messages>\n    [user] a &lt;b&gt; &amp; c\n    [assistant] ok\n" \
        "  </recent_messages>" in card.content
    assert "<timestamp>" not in card.content


@pytest.mark.parametrize(("message_format", "error"), [
    ("{nope}", InvalidArgumentError), ("{}", InvalidArgumentError),
    ("{content.upper}", InvalidArgumentError), ("{content", InvalidArgumentError),
    (3, InvalidArgumentTypeError)])
def test_a_bad_message_format_is_refused(message_format: object,
                                         error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        OracleContextCard("s", message_format=message_format)  # type: ignore[arg-type]
    assert getattr(raised.value, "argument", None) == "message_format"


# --- PendingRecordBatch.texts --------------------------------------------------------------------
def test_texts_is_the_deprecated_spelling_of_contents(store: OracleDBMemoryStore) -> None:
    with pytest.warns(DeprecationWarning, match="contents="):
        old = PendingRecordBatch(texts=["pizza batch"], record_type="memory",
                                 record_ids="mem-batch-docs")
    assert old.contents == ["pizza batch"] and old.texts == ["pizza batch"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = PendingRecordBatch(contents=["tea"], record_type="memory", record_ids="m2")
    assert new.texts == ["tea"]
    assert store.add_batches([old, new]) == ["mem-batch-docs", "m2"]
    record = store.get("memory", "mem-batch-docs")
    assert isinstance(record, MemoryRecord) and record.content == "pizza batch"
    with pytest.raises(InvalidArgumentError) as both:
        PendingRecordBatch(contents=["a"], texts=["a"], record_type="memory")
    assert both.value.argument == "texts"


# --- content part kinds --------------------------------------------------------------------------
def test_content_parts_name_their_kind() -> None:
    text = TextContent("hi")
    image = ImageContent(b"\x89PNG", ImageMimeType.PNG, "a square")
    assert (TextContent.type, text.type) == ("text", "text")
    assert (ImageContent.type, image.type) == ("image", "image")
    assert "type" not in {f.name for f in dataclasses.fields(TextContent)}
    assert "type" not in {f.name for f in dataclasses.fields(ImageContent)}


# --- linked_results ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [Record, MemoryRecord, FactRecord, ThreadRecord])
def test_linked_results_default_to_a_fresh_empty_tuple(cls: type[Record]) -> None:
    [linked] = [f for f in dataclasses.fields(cls) if f.name == "linked_results"]
    assert linked.default_factory is tuple and linked.default is dataclasses.MISSING
    assert cls(id="r1").linked_results == ()


# --- the embedder contract's defaults ------------------------------------------------------------
class CountingEmbedder(IEmbedder):
    """Declares only ``embed``: the contract's defaults answer the rest."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        return np.ones((len(texts), self.width), dtype=np.float32)


def test_the_default_dimension_is_probed_once() -> None:
    embedder = CountingEmbedder(7)
    assert embedder.embedding_dimension == 7 and embedder.embedding_dimension == 7
    assert len(embedder.calls) == 1 and len(embedder.calls[0]) == 1
    assert embedder.max_input_tokens == 512 and len(embedder.calls) == 1


def test_a_probe_without_a_vector_is_an_embedding_service_error() -> None:
    with pytest.raises(EmbeddingServiceError, match="shape"):
        _ = CountingEmbedder(0).embedding_dimension
