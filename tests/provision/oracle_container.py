"""An Oracle AI Database 26ai Free container for one test session (testcontainers).

Used when ``OAM_TEST_ORACLE_DSN`` is unset and a container runtime answers (the Docker API at
``DOCKER_HOST`` or the default socket; Podman through its Docker-compatible socket, as
testcontainers documents). NOT YET RUN: no container runtime answered where this was written;
the code follows testcontainers-python 4.15's ``OracleDbContainer`` (read in its source) and
python-oracledb's real API, and the paths without a database (no runtime, a failed pull) are
tested in ``tests/test_provision_oracle.py``.

The image is ``OAM_TEST_ORACLE_IMAGE``, by default :data:`DEFAULT_IMAGE`: gvenzl's *regular*
Oracle Database Free flavour, which keeps Oracle Text (the *slim* flavour, testcontainers'
default, removes it, so no CONTEXT or hybrid vector index could be built; a slim image is
refused). Once the database is up, as ``SYSTEM`` on ``FREEPDB1``:

1. Oracle Text must be installed (``DBA_REGISTRY`` component ``CONTEXT`` valid);
2. Deep Data Security is probed (``SELECT ORA_END_USER_CONTEXT.username FROM dual``;
   ORA-00900 / ORA-00904 / ORA-00942: the database has none);
3. ``deploy/oracle/bootstrap.sql`` creates the three identities with fresh passwords; its Deep
   Data Security grants are left out when the probe found no support (the owner needs none).

End-user security contexts need more than a container gives: python-oracledb refuses them on
plain TCP (DPY-2073) and the database refuses them without an OCI IAM or Entra ID database
access token (ORA-52602). The container listens on TCP only, so the Deep Data Security twins
never run on it; :attr:`ContainerDatabase.deep_data_security` says so, with the probe's result.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import oracledb
from oracleagentmemory.engines.oracle.context import USERNAME_QUERY
from oracleagentmemory.engines.oracle.driver_errors import error_info

from .oracle_bootstrap import (
    BOOTSTRAP_SQL,
    IDENTITY_VARIABLES,
    needs_deep_data_security,
    password_variables,
    render_bootstrap,
)

IMAGE_ENV = "OAM_TEST_ORACLE_IMAGE"

DEFAULT_IMAGE = "gvenzl/oracle-free:23.26.2"
"""gvenzl's regular flavour (Oracle Text kept) of Oracle AI Database 26ai Free, Release Update
23.26.2: the first with Deep Data Security (research note, sections 2.3 and 5)."""

SERVICE = "FREEPDB1"
"""The pluggable database every gvenzl image creates."""

LISTENER_PORT = 1521

ORACLE_TEXT_QUERY = "SELECT status FROM dba_registry WHERE comp_id = 'CONTEXT'"
"""Oracle Text's component status (Database Reference: DBA_REGISTRY; ``CONTEXT`` is Oracle
Text's component id)."""

NO_DEEP_DATA_SECURITY_CODES = frozenset({900, 904, 942})
"""ORA_END_USER_CONTEXT unknown: invalid statement, invalid identifier, no such table or view."""

NO_END_USER_CONTEXTS = (
    "end-user security contexts need TCPS (python-oracledb refuses plain TCP, DPY-2073) and an "
    "OCI IAM or Entra ID database access token (ORA-52602); the container listens on plain TCP "
    "only: set OAM_TEST_ORACLE_DSN and the settings of tests/oracle_dds.py for a TLS database")


class ContainerStartError(RuntimeError):
    """The container, or the database in it, could not be made ready; the message says why."""


@dataclass(frozen=True)
class Account:
    """One database login."""

    user: str
    password: str
    dsn: str

    @property
    def connect_string(self) -> str:
        """``user/password@dsn``, the form of ``OAM_TEST_ORACLE_*_DSN``."""
        return f"{self.user}/{self.password}@{self.dsn}"

    def connect(self) -> oracledb.Connection:
        return oracledb.connect(user=self.user, password=self.password, dsn=self.dsn)


@dataclass(frozen=True)
class ContainerDatabase:
    """A ready database in a container, with the identities of ``bootstrap.sql``."""

    image: str
    system: Account
    owner: Account
    policy_admin: Account
    runtime: Account
    deep_data_security: str
    """Why the Deep Data Security twins do not run on it (always set: see the module)."""


def container_image() -> str:
    """``OAM_TEST_ORACLE_IMAGE``, else :data:`DEFAULT_IMAGE`."""
    return os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE


def image_refusal(image: str) -> str | None:
    """Why ``image`` cannot serve the suite (``None``: it may). A slim flavour has no Oracle
    Text; other images are checked once running."""
    tag = image.rsplit("/", 1)[-1].partition(":")[2] or "latest"
    if "slim" in tag.split("-"):
        return (f"{image} is a slim image, which removes Oracle Text (no CONTEXT or hybrid "
                f"vector index): set {IMAGE_ENV} to a regular or full one, e.g. {DEFAULT_IMAGE}")
    return None


def runtime_unavailable() -> str | None:
    """Why no container runtime can start the database (``None``: the Docker API answers)."""
    try:
        import docker  # type: ignore[import-untyped]
        import testcontainers  # noqa: F401  (only whether it is installed)
    except ImportError as exc:
        return f"testcontainers is not installed ({exc}; pip install -e '.[dev]')"
    where = os.environ.get("DOCKER_HOST") or "the default Docker socket"
    try:
        client = docker.from_env(timeout=10)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # docker.errors.DockerException, or the transport's own error
        return f"no container runtime answers at {where} ({first_line(exc)})"
    return None


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _oracle_db_container_class() -> Any:
    """testcontainers' ``OracleDbContainer`` (4.15 moved it to ``testcontainers.community``;
    ``testcontainers.oracle`` is its home before, and a deprecated shim since)."""
    try:
        module = importlib.import_module("testcontainers.community.oracle")
    except ImportError:  # testcontainers < 4.15
        module = importlib.import_module("testcontainers.oracle")
    return module.OracleDbContainer


def new_password() -> str:
    """A password Oracle accepts inside double quotes (letters first, then hex digits)."""
    return "Oam" + secrets.token_hex(12)


@contextmanager
def oracle_container(image: str | None = None) -> Iterator[ContainerDatabase]:
    """Start ``image`` (:func:`container_image` by default), prepare it, yield it, stop it.

    Raises :class:`ContainerStartError` (the container is stopped) when the image is refused,
    the runtime cannot pull or start it, the database never says it is ready, or preparing it
    fails.
    """
    image = image or container_image()
    refusal = image_refusal(image)
    if refusal is not None:
        raise ContainerStartError(refusal)
    system_password = new_password()
    container: Any = None
    try:
        # The constructor already reaches the Docker API; start() pulls the image, starts it and
        # waits for the log line "DATABASE IS READY TO USE!" (TC_MAX_TRIES seconds by default).
        container = _oracle_db_container_class()(image=image, oracle_password=system_password,
                                                 port=LISTENER_PORT, dbname=SERVICE)
        container.start()
        host = container.get_container_host_ip()
        port = container.get_exposed_port(LISTENER_PORT)
    except Exception as exc:  # the runtime's errors vary (docker.errors, TimeoutError...)
        _stop_quietly(container)
        raise ContainerStartError(f"{image} did not start: {first_line(exc)}") from exc
    dsn = f"{host}:{port}/{SERVICE}"
    try:
        database = prepare(image, Account("SYSTEM", system_password, dsn))
    except BaseException:
        _stop_quietly(container)
        raise
    try:
        yield database
    finally:
        _stop_quietly(container)


def _stop_quietly(container: Any) -> None:
    if container is None:
        return
    # A container already gone, or a runtime gone away: nothing is left to stop.
    with contextlib.suppress(Exception):
        container.stop()


def prepare(image: str, system: Account) -> ContainerDatabase:
    """Check Oracle Text, probe Deep Data Security and run ``bootstrap.sql`` as ``system``."""
    text = BOOTSTRAP_SQL.read_text(encoding="utf-8")
    passwords = {name: new_password() for name in password_variables(text)}
    script = render_bootstrap(text, passwords)
    try:
        with system.connect() as conn, conn.cursor() as cur:
            missing_text = oracle_text_missing(cur)
            if missing_text is not None:
                raise ContainerStartError(f"{image}: {missing_text}")
            no_support = deep_data_security_missing(cur)
            for statement in script.statements:
                if no_support is not None and needs_deep_data_security(statement):
                    continue
                cur.execute(statement)
    except oracledb.Error as exc:
        raise ContainerStartError(
            f"{image}: preparing the database as SYSTEM failed ({error_info(exc).first_line})"
        ) from exc
    accounts = {role: Account(script.identities[role], passwords[f"{variable}_password"],
                              system.dsn)
                for role, variable in IDENTITY_VARIABLES.items()}
    probe = no_support if no_support is not None else "the database knows ORA_END_USER_CONTEXT"
    return ContainerDatabase(image=image, system=system, owner=accounts["owner"],
                             policy_admin=accounts["policy_admin"], runtime=accounts["runtime"],
                             deep_data_security=f"{probe}; {NO_END_USER_CONTEXTS}")


def oracle_text_missing(cur: oracledb.Cursor) -> str | None:
    """Why the database has no usable Oracle Text (``None``: component CONTEXT is VALID)."""
    cur.execute(ORACLE_TEXT_QUERY)
    row = cur.fetchone()
    if row is None:
        return "Oracle Text is not installed (no CONTEXT component in DBA_REGISTRY)"
    if row[0] != "VALID":
        return f"Oracle Text is {row[0]}, not VALID (DBA_REGISTRY component CONTEXT)"
    return None


def deep_data_security_missing(cur: oracledb.Cursor) -> str | None:
    """Why the database has no Deep Data Security (``None``: ``ORA_END_USER_CONTEXT`` is known)."""
    try:
        cur.execute(USERNAME_QUERY)
        cur.fetchall()
    except oracledb.DatabaseError as exc:
        info = error_info(exc)
        if info.code in NO_DEEP_DATA_SECURITY_CODES:
            return f"the database has no Deep Data Security ({info.first_line})"
        raise
    return None
