"""Text that is not valid Unicode is the caller's error, typed, on every path into the database.

A Python ``str`` may hold a lone UTF-16 surrogate (a JSON body's ``"\\ud800"`` decodes to one);
no database can store it. Before, the SDK let the driver's ``UnicodeEncodeError`` escape (ids,
content, keyset positions), answered ``DatabaseError`` for metadata (JSON escaped it as
``\\udc00``, which the database refused) and WordLlama's tokenizer raised a ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import StoreFactory
from oracleagentmemory.apis import OlderThan
from oracleagentmemory.core import OracleDBMemoryStore
from oracleagentmemory.core.embedders import WordLlamaEmbedder
from oracleagentmemory.errors import InvalidArgumentError

LONE = ("\ud800", "\udfff", "\udc00\ud800")
"""A lone high, a lone low, and a pair the wrong way round."""

WHOLE = "\U0001f600"
"""A valid surrogate pair's character (an emoji): the positive control."""

Operation = Callable[[OracleDBMemoryStore, str], object]

OPERATIONS: dict[str, Operation] = {
    "content": lambda s, bad: s.add([f"coffee {bad}"], record_type="memory", user_ids="u1"),
    "metadata value": lambda s, bad: s.add(["coffee"], record_type="memory", user_ids="u1",
                                           metadata={"k": f"v{bad}"}),
    "metadata key": lambda s, bad: s.add(["coffee"], record_type="memory", user_ids="u1",
                                         metadata={f"k{bad}": "v"}),
    "record id": lambda s, bad: s.add(["coffee"], record_type="memory", user_ids="u1",
                                      record_ids=f"m{bad}"),
    "user id": lambda s, bad: s.add(["coffee"], record_type="memory", user_ids=f"u{bad}"),
    "get": lambda s, bad: s.get("memory", f"m{bad}"),
    "keyset position": lambda s, bad: s.list(
        "memory", user_id="u1", older_than=OlderThan("2026-01-01T00:00:00+00:00", f"m{bad}")),
    "metadata filter": lambda s, bad: s.list("memory", user_id="u1",
                                             metadata_filter={"k": f"v{bad}"}),
}


@pytest.mark.parametrize("bad", LONE)
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_lone_surrogate_is_an_invalid_argument(make_store: StoreFactory, operation: str,
                                                 bad: str) -> None:
    store = make_store()
    run = OPERATIONS[operation]
    with pytest.raises(InvalidArgumentError, match="not valid Unicode"):
        run(store, bad)
    # Positive control: the same call with a whole character goes through, and the store (and
    # its connection) serves the next write.
    run(store, WHOLE)
    [record_id] = store.add(["tea after the failure"], record_type="memory", user_ids="u1")
    assert store.get("memory", record_id) is not None


def test_wordllama_refuses_text_that_is_not_unicode() -> None:
    embedder = WordLlamaEmbedder()
    with pytest.raises(InvalidArgumentError, match=r"texts\[1\] is not valid Unicode"):
        embedder.embed(["fine", "bad \ud800 text"])
    vectors = embedder.embed(["fine", f"good {WHOLE} text"])
    assert vectors.shape == (2, embedder.embedding_dimension)
