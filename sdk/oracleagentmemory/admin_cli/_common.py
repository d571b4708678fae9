"""Shared pieces of ``oam-admin``: output, errors, connection URLs, secrets, policy names."""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import parse_qs, quote, urlsplit, urlunsplit

from oracleagentmemory.core.deepsec.admin import connect_admin
from oracleagentmemory.core.deepsec.policies import POLICY_BY_NAME, DeepDataSecurityPolicy
from oracleagentmemory.engines.security_admin import SecurityAdmin

URL_ENV = "OAM_ADMIN_URL"
"""Environment variable with the admin identity's connection URL."""

RUNTIME_PASSWORD_ENV = "OAM_RUNTIME_PASSWORD"
"""Environment variable with the password of a runtime login being created."""

POLICY_NAMES = tuple(POLICY_BY_NAME)
_ROLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


class CliError(Exception):
    """A failure reported as one ``error: ...`` line with exit status 1."""


class UsageError(Exception):
    """A usage mistake reported as one ``error: ...`` line with exit status 2."""


class Console:
    """Results go to stdout; progress, warnings and errors to stderr (``--quiet`` hides progress).

    Streams are looked up at write time, so in-process callers may redirect them.
    """

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet

    def out(self, text: str) -> None:
        """Print a result line on stdout."""
        print(text, file=sys.stdout, flush=True)

    def progress(self, message: str) -> None:
        """Print a progress line on stderr."""
        if not self.quiet:
            print(f"oam-admin: {message}", file=sys.stderr, flush=True)

    def warn(self, message: str) -> None:
        """Print a warning on stderr (never hidden)."""
        print(f"warning: {message}", file=sys.stderr, flush=True)


class _ProgressHandler(logging.Handler):
    """Forwards the SDK's INFO/WARNING log records (schema steps, purged tables) as progress."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.INFO)
        self._console = console

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self._console.warn(record.getMessage())
        else:
            self._console.progress(record.getMessage())


@contextmanager
def sdk_progress(console: Console) -> Iterator[None]:
    """Show the SDK's progress log records on stderr while a command runs."""
    logger = logging.getLogger("oracleagentmemory")
    handler = _ProgressHandler(console)
    previous = logger.level
    logger.addHandler(handler)
    if previous == logging.NOTSET or previous > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def url_has_password(url: str) -> bool:
    """Whether a connection URL carries a password (in the user info or the query string)."""
    try:
        parts = urlsplit(url)
        if parts.password:
            return True
        return any(v for v in parse_qs(parts.query).get("password", []))
    except ValueError:
        return False


def is_oracle_admin_url(url: str | None) -> bool:
    """Whether ``url`` names an Oracle database (``oracle://``, ``oracle+tcp://``...)."""
    if not url:
        return False
    from oracleagentmemory.engines.oracle.url import is_oracle_url

    return is_oracle_url(url)


def _checked_oracle_url(url: str, source: str) -> str:
    """An Oracle admin URL takes its password from ``$OAM_ORACLE_PASSWORD`` only."""
    from oracleagentmemory.engines.oracle.url import PASSWORD_ENV

    if url_has_password(url):
        raise UsageError(
            f"{source} must not contain a password (a command line is visible to other local "
            f"users and kept in shell history); put the Oracle password in {PASSWORD_ENV}")
    if not os.environ.get(PASSWORD_ENV):
        raise UsageError(f"no password for the Oracle login of {source}: set {PASSWORD_ENV}")
    return url


def admin_url(args: argparse.Namespace, console: Console) -> str:
    """The admin identity's URL: ``--url``, else ``$OAM_ADMIN_URL``, else the embedded database.

    A ``postgresql://`` URL given with ``--url`` carries no password (``PGPASSWORD`` or
    ``~/.pgpass`` do); an ``oracle://`` URL never does, its password is ``$OAM_ORACLE_PASSWORD``.
    """
    given = getattr(args, "url", None)
    if given:
        if is_oracle_admin_url(given):
            return _checked_oracle_url(str(given), "--url")
        if url_has_password(given):
            raise UsageError(
                "--url must not contain a password (the command line is visible to other local "
                f"users and kept in shell history); put the URL in {URL_ENV}, or the password "
                "in PGPASSWORD or ~/.pgpass"
            )
        return str(given)
    from_env = os.environ.get(URL_ENV)
    if from_env:
        if is_oracle_admin_url(from_env):
            return _checked_oracle_url(from_env, URL_ENV)
        return from_env
    from oracleagentmemory import embedded

    console.progress(f"no --url or {URL_ENV}: using the embedded database in "
                     f"{embedded.default_data_dir()}")
    return embedded.url()


def url_for_user(url: str, user: str) -> str:
    """``url`` with ``user`` as the login, without a password and without ``url``'s password file
    (the admin's ``passfile=``): the login's application passes its own password."""
    if not _ROLE_NAME.fullmatch(user):
        raise UsageError(f"--user must be a lower-case role name; got {user!r}")
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    query = "&".join(p for p in parts.query.split("&")
                     if p and p.split("=", 1)[0] not in ("password", "passfile"))
    return urlunsplit((parts.scheme, f"{quote(user, safe='')}@{host}", parts.path, query,
                       parts.fragment))


@contextmanager
def admin_connection(url: str) -> Iterator[SecurityAdmin]:
    """One admin session for the whole command: every admin call runs its own transaction.

    Connecting takes at most a few seconds; a database that cannot be reached raises one
    :class:`~oracleagentmemory.errors.DatabaseUnavailableError` (reported by ``main``).
    """
    with connect_admin(url) as admin:
        yield admin


def add_schema_owner(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``--schema-owner`` (``--owner-schema`` stays accepted, unlisted); a required one is
    required by the parser in either spelling (a required group of the two), so the usage and
    the help show it as required."""
    group: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup = parser
    if required:
        group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--schema-owner", dest="owner_schema", metavar="SCHEMA",
                       help="the schema (owner) that holds the store's tables"
                            + (" (required)" if required else ""))
    group.add_argument("--owner-schema", dest="owner_schema", help=argparse.SUPPRESS)


def owner_schema(args: argparse.Namespace) -> str:
    """``--schema-owner`` (or its old spelling ``--owner-schema``), which the command needs."""
    value = getattr(args, "owner_schema", None)
    if not value:
        raise UsageError(f"{args.command} needs --schema-owner SCHEMA (the schema that holds "
                         "the store's tables)")
    return str(value)


def read_secret(args: argparse.Namespace, env_name: str, what: str) -> str:
    """A secret from stdin (``--password-stdin``) or from ``env_name``; never from argv."""
    if getattr(args, "password_stdin", False):
        if sys.stdin is None:
            raise UsageError(f"--password-stdin: no standard input to read the {what} from")
        if sys.stdin.isatty():
            secret = getpass.getpass(f"{what}: ")
        else:
            secret = sys.stdin.read()
            if secret.endswith("\n"):
                secret = secret[:-1]
                if secret.endswith("\r"):
                    secret = secret[:-1]
        source = "standard input"
    elif os.environ.get(env_name):
        secret = os.environ[env_name]
        source = env_name
    else:
        raise UsageError(
            f"no {what}: pipe it to --password-stdin or set {env_name} (secrets are never "
            "taken from the command line)"
        )
    if not secret:
        raise UsageError(f"the {what} read from {source} is empty")
    return secret


def chosen_policies(names: Sequence[str] | None) -> list[DeepDataSecurityPolicy] | None:
    """Policies named by ``--policy`` (``None`` when the option was not given)."""
    if not names:
        return None
    return [POLICY_BY_NAME[n] for n in dict.fromkeys(names)]


def policy_label(policies: Sequence[DeepDataSecurityPolicy]) -> str:
    """Comma-separated policy names."""
    return ", ".join(p.declaration.name for p in policies)


def require_yes(args: argparse.Namespace, consequence: str) -> None:
    """Refuse a destructive command without ``--yes`` (nothing has been touched yet)."""
    if not getattr(args, "yes", False):
        raise UsageError(f"{consequence}; pass --yes to confirm")
