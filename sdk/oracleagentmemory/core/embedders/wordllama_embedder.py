"""A local embedder backed by WordLlama's static token embeddings (no network, no GPU)."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from oracleagentmemory.core._modelhttp import check_int
from oracleagentmemory.core.embedders.input_budget import InputBudget
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

WORDLLAMA_CONFIG = "l2_supercat"
"""The model the ``wordllama`` wheel ships (LLaMA-2 tokenizer, Matryoshka dimensions)."""

SHIPPED_DIMENSION = 256
"""The dimension of the weights inside the wheel; 64 and 128 are its truncations."""

_WEIGHTS = f"weights/{WORDLLAMA_CONFIG}_{SHIPPED_DIMENSION}.safetensors"
_TOKENIZER = f"tokenizers/{WORDLLAMA_CONFIG}_tokenizer_config.json"
_LOAD_LOCK = threading.Lock()


def _is_unicode(text: str) -> bool:
    """Whether ``text`` holds only whole characters (no lone UTF-16 surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def wordllama_package_dir() -> Path:
    """Where the ``wordllama`` package is installed (found without importing it)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise InvalidArgumentError(
            "the 'wordllama' package is not installed (pip install wordllama)")
    return Path(next(iter(spec.submodule_search_locations)))


def _import_inference_class() -> Any:
    """``wordllama.inference.WordLlamaInference``, keeping the root logger as it was.

    Importing ``wordllama`` calls ``logging.basicConfig(level=INFO)``, which would configure
    the application's root logger; its handlers and level are restored after the import.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        module = importlib.import_module("wordllama.inference")
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    return module.WordLlamaInference


@functools.lru_cache(maxsize=1)
def _load_model() -> Any:
    """The shipped model, loaded from the package directory only (downloads impossible).

    Reads the weights and the tokenizer files inside the wheel directly instead of calling
    ``WordLlama.load``, whose resolver falls back to Hugging Face downloads.
    """
    from safetensors import safe_open
    from tokenizers import Tokenizer

    package = wordllama_package_dir()
    weights, tokenizer_file = package / _WEIGHTS, package / _TOKENIZER
    for path in (weights, tokenizer_file):
        if not path.is_file():
            raise InvalidArgumentError(
                f"the wordllama package at {package} lacks {path.relative_to(package)}; "
                "reinstall wordllama>=0.4")
    with safe_open(str(weights), framework="np", device="cpu") as handle:
        matrix = handle.get_tensor("embedding.weight")
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    return _import_inference_class()(matrix, tokenizer, binary=False)


class WordLlamaEmbedder(InputBudget):
    """Embeds with WordLlama (``l2_supercat``): averaged static token embeddings.

    The model (LLaMA-2 tokenizer, 32k x 256 weights, 16 MB) ships inside the ``wordllama``
    wheel and is read from the installed package; nothing is ever downloaded. It captures
    word meaning ("kitten" is near "cat") far better than :class:`HashingEmbedder`, at a small
    fraction of a transformer's cost, but not word order or long-range context.
    ``embedding_dimension`` is 256, or 64 / 128 (the model's Matryoshka truncations). Vectors
    are L2-normalised; a text with no known token gets a fixed unit vector.
    ``max_input_tokens`` states the input budget chunking should respect (WordLlama itself
    does not truncate).
    """

    def __init__(self, embedding_dimension: int = SHIPPED_DIMENSION, *,
                 max_input_tokens: int | None = None, batch_size: int = 64) -> None:
        check_int(embedding_dimension, "embedding_dimension", 1)
        if embedding_dimension not in (64, 128, SHIPPED_DIMENSION):
            raise InvalidArgumentError(
                f"embedding_dimension must be 64, 128 or 256, got {embedding_dimension!r}",
                argument="embedding_dimension")
        if max_input_tokens is not None:
            check_int(max_input_tokens, "max_input_tokens", 1)
        self._dimension = embedding_dimension
        self._max_input_tokens = max_input_tokens
        self._batch_size = check_int(batch_size, "batch_size", 1)
        with _LOAD_LOCK:
            self._model = _load_model()

    @property
    def embedding_dimension(self) -> int:
        """Dimension of every vector."""
        return self._dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed ``texts``: shape ``(len(texts), embedding_dimension)``, float32, unit rows.

        Queries and documents share one encoding, so ``is_query`` does not change the vectors.
        """
        if isinstance(texts, str):
            raise InvalidArgumentTypeError("texts must be a sequence of str, not a str",
                                           argument="texts")
        items = list(texts)
        for n, text in enumerate(items):
            if not isinstance(text, str):
                raise InvalidArgumentTypeError(
                    f"texts[{n}] must be a str, got {type(text).__name__}", argument=f"texts[{n}]")
            if not text.isascii() and not _is_unicode(text):
                raise InvalidArgumentError(
                    f"texts[{n}] is not valid Unicode: it holds a lone surrogate",
                    argument=f"texts[{n}]")
        if not items:
            return np.zeros((0, self._dimension), dtype=np.float32)
        pooled = np.asarray(self._model.embed(items, norm=False, batch_size=self._batch_size),
                            dtype=np.float32)[:, : self._dimension]
        pooled = np.nan_to_num(pooled, nan=0.0, posinf=0.0, neginf=0.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        empty = norms[:, 0] == 0.0
        norms[empty] = 1.0
        vectors: npt.NDArray[np.float32] = (pooled / norms).astype(np.float32)
        vectors[empty, 0] = 1.0  # no known token: a fixed unit vector keeps cosine defined
        return vectors
