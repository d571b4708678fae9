"""``oam-admin store ... --in-database-model``: the in-database embedder a store opens with.

On Oracle a ``hybrid`` store's hybrid vector index embeds with the in-database model of an
``OracleDBEmbedder``; the engine refuses to create one without it. ``--in-database-model NAME``
(with ``--vector-dim N``, the model's dimension) makes the store command open one small pool
from the admin URL, give it to both the embedder and the store, and close it afterwards. The
options are checked before anything connects.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import oracledb

from oracleagentmemory.admin_cli._common import URL_ENV, UsageError, is_oracle_admin_url
from oracleagentmemory.core.embedders.oracle_db import MAX_EMBEDDING_DIMENSION, OracleDBEmbedder
from oracleagentmemory.engines.oracle.driver_errors import translate
from oracleagentmemory.engines.oracle.embedding import model_name
from oracleagentmemory.engines.oracle.url import parse_oracle_url
from oracleagentmemory.errors import InvalidArgumentError

POOL_MIN = 0
POOL_MAX = 2
"""The store command's pool: no connection until the store needs one, at most two."""

MODEL_OPTION = "--in-database-model"

HYBRID_NEEDS_MODEL = (
    f"--search-strategy hybrid on Oracle needs {MODEL_OPTION} NAME and --vector-dim N (the "
    "model's dimension): the store's hybrid vector index embeds with that in-database model "
    "(load one with `oam-admin model load`)")


def given_url(args: argparse.Namespace) -> str | None:
    """The URL the command will connect to, as ``admin_url`` picks it (``None``: the embedded
    PostgreSQL), read without starting or reaching anything."""
    return getattr(args, "url", None) or os.environ.get(URL_ENV) or None


def check_model_options(args: argparse.Namespace) -> str | None:
    """Validate ``--in-database-model`` against the URL and ``--vector-dim`` (usage errors,
    before connecting); the model's name as the database resolves it, or ``None``."""
    model = getattr(args, "in_database_model", None)
    oracle = is_oracle_admin_url(given_url(args))
    if model is None:
        if oracle and getattr(args, "search_strategy", None) == "hybrid":
            raise UsageError(HYBRID_NEEDS_MODEL)
        return None
    if not oracle:
        url = given_url(args)
        scheme = "the embedded PostgreSQL database" if url is None else (
            url.split("://", 1)[0].lower() if "://" in url else "a URL without a scheme")
        raise UsageError(
            f"{MODEL_OPTION} names a model stored in an Oracle database: it needs an oracle:// "
            f"URL of the schema owner (--url or ${URL_ENV}), got {scheme} (PostgreSQL has no "
            "in-database models)")
    dimension = getattr(args, "vector_dim", None)
    if dimension is None:
        raise UsageError(f"{MODEL_OPTION} needs --vector-dim N, the dimension of the vectors "
                         "the model produces")
    if not 1 <= dimension <= MAX_EMBEDDING_DIMENSION:
        raise UsageError(f"--vector-dim must be from 1 to {MAX_EMBEDDING_DIMENSION} with "
                         f"{MODEL_OPTION}, got {dimension}")
    try:
        return model_name(model)
    except InvalidArgumentError as exc:
        raise UsageError(f"{MODEL_OPTION}: {exc}") from None


@dataclass(frozen=True)
class StoreSource:
    """What ``OracleDBMemoryStore`` opens with: the URL (its engine opens and closes a pool of
    its own) or, with an in-database model, the command's pool and the embedder on it."""

    pool: object
    embedder: OracleDBEmbedder | None = None


def _open_pool(url: str) -> oracledb.ConnectionPool:
    """A pool of at most :data:`POOL_MAX` connections; none is opened before the first use."""
    arguments = parse_oracle_url(url).connect_arguments()
    try:
        return oracledb.create_pool(**arguments, min=POOL_MIN, max=POOL_MAX, increment=1)
    except oracledb.Error as exc:
        raise translate(exc) from exc


@contextmanager
def store_source(url: str, model: str | None, dimension: int | None) -> Iterator[StoreSource]:
    """The store's source for the command's duration; the pool it opened is closed on exit
    (the store leaves a pool it is given open)."""
    if model is None:
        yield StoreSource(url)
        return
    assert dimension is not None
    pool = _open_pool(url)
    try:
        yield StoreSource(pool, OracleDBEmbedder(pool, model, embedding_dimension=dimension))
    finally:
        # a failure closing the pool must not hide the command's own result or error
        with suppress(oracledb.Error):
            pool.close(force=True)
