"""Shared fixtures: one embedded PostgreSQL server per test session, a fresh store per test.

Set ``OAM_TEST_PG_URL`` to run against an existing PostgreSQL 18 + pgvector server instead.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from oracleagentmemory import embedded
from oracleagentmemory.apis import IEmbedder
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy

_store_counter = itertools.count(1)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of the session's database (the embedded server, started once) as the superuser.

    The server requires passwords; the URL carries none: its ``passfile=`` names the superuser's
    password file in the data directory (``embedded.admin_passfile``).

    The data directory is a private temporary directory outside pytest's rotating base
    directory, so concurrent pytest runs cannot remove it under a running server.
    """
    external = os.environ.get("OAM_TEST_PG_URL")
    if external:
        yield external
        return
    parent = Path(tempfile.mkdtemp(prefix="oam-test-pg-"))
    data_dir = parent / "data"
    server = embedded.start(data_dir)
    try:
        yield server.url
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(parent, ignore_errors=True)


def new_store_id() -> str:
    """A memory_store_id unique within the test session (at most 16 characters)."""
    return f"t{os.getpid() % 10000}_{next(_store_counter)}"


class HashEmbedder(IEmbedder):
    """A deterministic local embedder: hashed words into ``dim`` buckets, L2-normalised."""

    def __init__(self, dim: int = 8) -> None:
        self._dim = dim
        self.calls: list[list[str]] = []

    @property
    def embedding_dimension(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                bucket = int(hashlib.sha256(word.encode()).hexdigest(), 16) % self._dim
                out[row, bucket] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
            if not norm:
                out[row, 0] = 1.0
        return out


StoreFactory = Callable[..., OracleDBMemoryStore]


@pytest.fixture
def make_store(pg_url: str) -> Iterator[StoreFactory]:
    """Build stores on fresh memory_store_ids (closed after the test)."""
    opened: list[OracleDBMemoryStore] = []

    def factory(**kwargs: Any) -> OracleDBMemoryStore:
        kwargs.setdefault("memory_store_id", new_store_id())
        kwargs.setdefault("schema_policy", SchemaPolicy.CREATE_IF_NECESSARY)
        embedder = kwargs.pop("embedder", None)
        pool = kwargs.pop("pool", pg_url)
        store = OracleDBMemoryStore(embedder, pool, **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> OracleDBMemoryStore:
    """A fresh store without vector storage (the spec's record examples need none)."""
    return make_store()


@pytest.fixture
def vector_store(make_store: StoreFactory) -> OracleDBMemoryStore:
    """A fresh store with 3-dimensional vector storage and no embedder."""
    return make_store(vector_dim=3)


@pytest.fixture(scope="session")
def dds(pg_url: str) -> Any:
    """The Deep Data Security environment (identities, applications, tokens); see tests/dds.py."""
    from dds import setup_environment

    return setup_environment(pg_url)
