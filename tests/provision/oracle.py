"""Oracle AI Database 26ai: ``OAM_TEST_ORACLE_DSN``, or a container when a runtime answers.

Reachable only once the Oracle engine is available in this release (the engine registry says
so) and a database is: then every behavioural test also runs on Oracle.

- ``OAM_TEST_ORACLE_DSN`` (``user/password@connect_string``, the store owner) names a database
  someone prepared with ``deploy/oracle/bootstrap.sql``; the Deep Data Security twins take their
  other settings from ``tests/oracle_dds.py``.
- Otherwise, when a container runtime answers, one container per test session
  (``tests/provision/oracle_container.py``, image ``OAM_TEST_ORACLE_IMAGE``). It is started by
  the first test that needs Oracle, not at collection. If it cannot start, Oracle counts as not
  reachable from then on: the Oracle tests of the run are skipped with the reason and the
  run's last lines say Oracle was NOT tested. The Deep Data Security twins never run on a
  container (plain TCP, no identity provider; see
  :meth:`OracleProvisioner.deep_data_security_unavailable`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Literal

import oracledb
from oracleagentmemory.engines.registry import engine_entries

from .oracle_container import (
    NO_END_USER_CONTEXTS,
    ContainerDatabase,
    ContainerStartError,
    container_image,
    image_refusal,
    oracle_container,
    runtime_unavailable,
)

DSN_ENV = "OAM_TEST_ORACLE_DSN"

OWNER_POOL_MAX = 4

Source = Literal["dsn", "container"]


class OracleNotTested(RuntimeError):
    """Oracle was expected to run but could not be reached; the message says why."""


@functools.cache
def container_runtime_unavailable() -> str | None:
    """Why no container runtime can be used (asked once per process: it calls the runtime)."""
    return runtime_unavailable()


class OracleProvisioner:
    """An Oracle database named by ``OAM_TEST_ORACLE_DSN``, or one in a container."""

    name = "oracle"

    def __init__(self) -> None:
        self.failure: str | None = None
        """Why the session's database could not be reached, once that was tried and failed."""
        self.container: ContainerDatabase | None = None
        """The session's container once started (kept after it stops, for the summary)."""
        self.reached = False
        """Whether a test of this run got the database (a reachable Oracle no test reached
        was NOT tested either)."""

    def engine_unavailable(self) -> str | None:
        """Why this release has no Oracle engine (``None``: it has)."""
        entry = next(e for e in engine_entries() if e.name == self.name)
        return entry.unavailable

    def source(self) -> Source | None:
        """Where the database comes from: ``OAM_TEST_ORACLE_DSN``, a container, or nowhere."""
        if os.environ.get(DSN_ENV):
            return "dsn"
        if container_runtime_unavailable() is None:
            return "container"
        return None

    def unavailable(self) -> str | None:
        reason = self.engine_unavailable()
        if reason is not None:
            return reason
        if self.failure is not None:
            return self.failure
        source = self.source()
        if source == "dsn":
            return None
        if source == "container":
            return image_refusal(container_image())
        return f"set {DSN_ENV}, or run a container runtime ({container_runtime_unavailable()})"

    def deep_data_security_unavailable(self) -> str | None:
        """Why the Deep Data Security twins cannot run although Oracle can (``None``: they
        may, as far as is known before any connection; they probe further themselves)."""
        if self.unavailable() is not None or self.source() != "container":
            return None
        if self.container is not None:
            return f"on the container {self.container.image}: {self.container.deep_data_security}"
        return f"on a container: {NO_END_USER_CONTEXTS}"

    @contextmanager
    def database(self) -> Iterator[oracledb.ConnectionPool]:
        """A pool on the database as the store owner (the engine takes pools, not URLs).

        Raises :class:`OracleNotTested` when the database cannot be reached; the reason is kept
        in :attr:`failure` for the run's summary.
        """
        reason = self.unavailable()
        if reason is not None:
            raise OracleNotTested(reason)
        if self.source() == "dsn":
            user, password, dsn = parse_dsn(os.environ[DSN_ENV])
            with owner_pool(user, password, dsn) as pool:
                self.reached = True
                yield pool
            return
        with ExitStack() as stack:
            try:
                database = stack.enter_context(oracle_container(container_image()))
            except ContainerStartError as exc:
                self.failure = f"the Oracle container did not start: {exc}"
                raise OracleNotTested(self.failure) from exc
            self.container = database
            with owner_pool(database.owner.user, database.owner.password,
                            database.owner.dsn) as pool:
                self.reached = True
                yield pool


@contextmanager
def owner_pool(user: str, password: str, dsn: str) -> Iterator[oracledb.ConnectionPool]:
    """A small pool for the owner, closed at the end."""
    pool = oracledb.create_pool(user=user, password=password, dsn=dsn, min=1,
                                max=OWNER_POOL_MAX, increment=1)
    try:
        yield pool
    finally:
        pool.close(force=True)


def parse_dsn(value: str) -> tuple[str, str, str]:
    """``user/password@connect_string`` as its three parts (the form SQL*Plus takes)."""
    credentials, separator, dsn = value.partition("@")
    user, slash, password = credentials.partition("/")
    if not (separator and slash and user and password and dsn):
        raise RuntimeError("OAM_TEST_ORACLE_DSN must be user/password@host:port/service")
    return user, password, dsn


ORACLE = OracleProvisioner()
