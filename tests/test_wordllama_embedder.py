"""WordLlamaEmbedder: real vectors from the model inside the wordllama wheel, offline."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.core.embedders import WordLlamaEmbedder
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


def test_vectors_have_the_contract_shape_dtype_and_unit_norm(embedder: WordLlamaEmbedder
                                                             ) -> None:
    assert isinstance(embedder, IEmbedder)
    assert embedder.embedding_dimension == 256
    vectors = embedder.embed(["The cat sat on the mat.", "Quarterly tax filing", ""])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 256)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert np.all(np.isfinite(vectors))
    assert embedder.embed([]).shape == (0, 256)
    # deterministic, and independent of the batch a text is embedded in
    np.testing.assert_array_equal(embedder.embed(["Quarterly tax filing"])[0], vectors[1])


def test_similar_sentences_are_closer_than_unrelated_ones(embedder: WordLlamaEmbedder) -> None:
    anchor, similar, unrelated = embedder.embed([
        "My kitten loves sleeping on the sofa.",
        "The cat likes to nap on the couch.",
        "The central bank raised interest rates again.",
    ])
    assert float(anchor @ similar) > float(anchor @ unrelated) + 0.15
    query = embedder.embed(["what does the user's pet do"], is_query=True)[0]
    documents = embedder.embed(["the dog chews toys all afternoon",
                                "invoice 4411 is due on friday"])
    assert float(documents[0] @ query) > float(documents[1] @ query)


def test_truncated_dimensions_are_renormalised_prefixes() -> None:
    small = WordLlamaEmbedder(64).embed(["a red bicycle"])
    full = WordLlamaEmbedder().embed(["a red bicycle"])
    assert small.shape == (1, 64)
    expected = full[0, :64] / np.linalg.norm(full[0, :64])
    np.testing.assert_allclose(small[0], expected, rtol=1e-4, atol=1e-6)


def test_async_twin_and_arguments(embedder: WordLlamaEmbedder) -> None:
    vectors = asyncio.run(embedder.embed_async(["hello world"]))
    np.testing.assert_array_equal(vectors, embedder.embed(["hello world"]))
    assert WordLlamaEmbedder(max_input_tokens=128).max_input_tokens == 128
    with pytest.raises(InvalidArgumentError):
        WordLlamaEmbedder(300)
    with pytest.raises(InvalidArgumentTypeError):
        embedder.embed("not a list")
    with pytest.raises(InvalidArgumentTypeError):
        embedder.embed(["ok", None])  # type: ignore[list-item]


def test_loading_leaves_the_root_logger_alone() -> None:
    script = textwrap.dedent("""
        import logging
        from oracleagentmemory.core.embedders import WordLlamaEmbedder
        WordLlamaEmbedder().embed(["x"])
        root = logging.getLogger()
        print(len(root.handlers), root.level)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.split() == ["0", str(logging.WARNING)]


NO_NETWORK = textwrap.dedent("""
    import json, socket
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(repr(args[1:] if args and isinstance(args[0], socket.socket) else args))
        raise OSError("network disabled by the test")
    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    # positive control: the guard sees a connection attempt
    try:
        socket.socket().connect(("127.0.0.1", 9))
    except OSError:
        pass
    control = len(attempts)
    attempts.clear()

    from oracleagentmemory.core.embedders import WordLlamaEmbedder
    vectors = WordLlamaEmbedder().embed(["offline embedding works", "second text"])
    print(json.dumps({"control": control, "attempts": attempts,
                      "shape": list(vectors.shape)}))
""")


def test_no_network_access_is_attempted(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "HF_HOME": str(tmp_path / "hf")}
    out = subprocess.run([sys.executable, "-c", NO_NETWORK], capture_output=True, text=True,
                         check=True, timeout=120, env=env)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["control"] == 1
    assert report["attempts"] == []
    assert report["shape"] == [2, 256]
    assert not (tmp_path / ".cache" / "wordllama").exists()
