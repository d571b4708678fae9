"""Shared fixtures: one database per engine per test session, a fresh store per test.

The behavioural fixtures (``make_store``, ``store``, ``vector_store``) run once per reachable
engine (``tests/provision/``): PostgreSQL always (the embedded server, or ``OAM_TEST_PG_URL``),
Oracle when its engine is available and ``OAM_TEST_ORACLE_DSN`` names a database or a container
runtime answers (``OAM_TEST_ORACLE_IMAGE``). A test that does not apply to an engine says so
with ``@pytest.mark.not_on_engine(name, reason=...)`` (``tests/provision/engine_marks.py``).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from oracle_dds import NOT_TESTED as ORACLE_DDS_NOT_TESTED
from oracleagentmemory.apis import IEmbedder
from oracleagentmemory.core import OracleDBMemoryStore, SchemaPolicy
from provision import engine_marks, reachable, statuses
from provision.oracle import ORACLE, OracleNotTested
from provision.oracle_container import container_image
from provision.postgres import POSTGRES

_store_counter = itertools.count(1)


def pytest_configure(config: pytest.Config) -> None:
    """Register the engine marker."""
    config.addinivalue_line("markers", engine_marks.MARKER_HELP)


def pytest_report_header() -> list[str]:
    """Which engines this run covers, and why the others are not run."""
    lines = [f"engine {status.name}: " + ("runs" if status.reason is None
                                          else f"not run ({status.reason})")
             for status in statuses()]
    if ORACLE.unavailable() is None and ORACLE.source() == "container":
        lines.append(f"engine {ORACLE.name}: in a container ({container_image()}), started by "
                     "the first Oracle test")
    return lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say again, after the results, which engines were not tested: a run without Oracle
    never counts as an Oracle pass."""
    for status in statuses():
        if status.reason is not None:
            terminalreporter.write_line(
                f"engine {status.name} was NOT tested: {status.reason}", yellow=True)
    if ORACLE.unavailable() is None and not ORACLE.reached:
        terminalreporter.write_line(
            f"engine {ORACLE.name}: the engine-neutral suite was NOT tested on it (no test "
            "of this run reached its database)",
            yellow=True)
    dds_reasons = list(ORACLE_DDS_NOT_TESTED)
    if (container_reason := ORACLE.deep_data_security_unavailable()) is not None:
        dds_reasons.append(container_reason)
    for reason in dds_reasons:
        terminalreporter.write_line(
            f"engine {ORACLE.name} Deep Data Security was NOT tested: {reason}", yellow=True)
    for line in engine_marks.summary_lines():
        terminalreporter.write_line(line, yellow=True)


ORACLE_ONLY_MODULES = frozenset({
    "test_deepsec_oracle_attacks.py", "test_oracle_write_audit_live.py"})
"""Modules that run only on Oracle with Deep Data Security: not collected at all (not even as
skipped) without Oracle, or on a container (no TCPS, no identity provider); the summary says
why."""


def oracle_only_modules_left_out() -> bool:
    """Whether this run leaves out :data:`ORACLE_ONLY_MODULES`."""
    return (ORACLE.unavailable() is not None
            or ORACLE.deep_data_security_unavailable() is not None)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave out the Oracle-only modules when they cannot run."""
    if collection_path.name in ORACLE_ONLY_MODULES and oracle_only_modules_left_out():
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The same for a module named on the command line (pytest collects it regardless)."""
    if oracle_only_modules_left_out():
        items[:] = [i for i in items if i.path.name not in ORACLE_ONLY_MODULES]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test of the behavioural fixtures on each reachable engine, except the engines
    a ``not_on_engine`` mark leaves out (a skip saying why)."""
    if "engine_name" in metafunc.fixturenames:
        left_out = engine_marks.engines_left_out(metafunc.definition)
        engine_marks.record(left_out)
        metafunc.parametrize("engine_name",
                             engine_marks.engine_params([p.name for p in reachable()], left_out),
                             scope="session")


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of the session's PostgreSQL database as the superuser (see tests/provision)."""
    with POSTGRES.database() as url:
        yield url


@pytest.fixture(scope="session")
def oracle_pool() -> Iterator[object]:
    """A pool on the session's Oracle database as the store owner (see tests/provision).
    A container that cannot start skips every Oracle test with the reason (the run's summary
    says Oracle was NOT tested), and leaves the PostgreSQL tests running."""
    with ExitStack() as stack:
        try:
            pool = stack.enter_context(ORACLE.database())
        except OracleNotTested as exc:
            pytest.skip(f"Oracle NOT tested: {exc}")
        yield pool


@pytest.fixture(scope="session")
def database_url(engine_name: str, request: pytest.FixtureRequest) -> object:
    """The admin's connection source for the engine under test: PostgreSQL's URL, or an
    Oracle pool (the Oracle engine takes pools and connections, not URLs)."""
    fixture = {POSTGRES.name: "pg_url", ORACLE.name: "oracle_pool"}[engine_name]
    return request.getfixturevalue(fixture)


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
def make_store(database_url: object) -> Iterator[StoreFactory]:
    """Build stores on fresh memory_store_ids of the engine under test (closed afterwards)."""
    opened: list[OracleDBMemoryStore] = []

    def factory(**kwargs: Any) -> OracleDBMemoryStore:
        kwargs.setdefault("memory_store_id", new_store_id())
        kwargs.setdefault("schema_policy", SchemaPolicy.CREATE_IF_NECESSARY)
        embedder = kwargs.pop("embedder", None)
        pool = kwargs.pop("pool", database_url)
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
