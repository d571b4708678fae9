"""``oam-admin``: argument parsing and dispatch.

Exit status: 0 success, 2 usage error (including a destructive command without ``--yes`` and a
secret on the command line), 1 failure. Errors are one ``error: ...`` line on stderr, never a
traceback. Results go to stdout, progress to stderr (``--quiet`` hides progress).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from oracleagentmemory import __version__
from oracleagentmemory.admin_cli import audit, check, db, identity, model, security, store
from oracleagentmemory.admin_cli._common import (
    POLICY_NAMES,
    RUNTIME_PASSWORD_ENV,
    URL_ENV,
    CliError,
    Console,
    UsageError,
    add_schema_owner,
    is_oracle_admin_url,
)
from oracleagentmemory.errors import DatabaseUnavailableError, UnsupportedFeatureError

Handler = Callable[[argparse.Namespace, Console], int]

_DESCRIPTION = (
    "The admin identity's tool for Oracle AI Agent Memory with Deep Data Security. It connects "
    "as the schema owner (store, purge-expired) or the policy administrator (policies, logins, "
    "applications, end users, grants), never as an end user."
)
_EPILOG = (
    f"Connection: --url, else ${URL_ENV}, else the embedded database (oam-admin db start). "
    "Secrets are read from standard input or the environment, never from the command line."
)


class _ParseError(Exception):
    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _MissingCommand(Exception):
    """No command (or no action of a command) was given: print that parser's help."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that reports errors to :func:`main` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        # A required group with one listed member (--schema-owner, the other spelling hidden)
        # reads as the single required option it is.
        message = re.sub(r"^one of the arguments (\S+) is required$",
                         r"the following arguments are required: \1", message)
        raise _ParseError(self, message)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """Bare ``oam-admin`` (or ``oam-admin store``) prints that level's help (status 2)."""
        if args is not None and not [a for a in args if a not in ("-q", "--quiet")] \
                and self._subparsers is not None:
            raise _MissingCommand(self)
        return super().parse_known_args(args, namespace)


def _common() -> argparse.ArgumentParser:
    """Options accepted before or after the command (``SUPPRESS``: later ones do not reset)."""
    common = _Parser(add_help=False, allow_abbrev=False)
    common.add_argument("--url", default=argparse.SUPPRESS, metavar="URL",
                        help=f"postgresql:// or oracle:// (TLS; oracle+tcp:// plain) URL of "
                             f"the admin identity, without a password (Oracle's comes from "
                             f"$OAM_ORACLE_PASSWORD; default: ${URL_ENV}, else the embedded "
                             f"database)")
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="hide progress messages")
    return common


def _sub(group: Any, name: str, handler: Handler | None, help_text: str,
         common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = group.add_parser(
        name, help=help_text, description=help_text, parents=[common], allow_abbrev=False)
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


def _store_id(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--memory-store-id", required=True, metavar="ID",
                        help="the memory store (its tables are named <ID>_<table>)")


def _yes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", action="store_true", help="confirm this destructive command")


def _policy(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--policy", action="append", choices=POLICY_NAMES, metavar="POLICY",
                        help=f"{' or '.join(POLICY_NAMES)}; repeat for several (default: "
                             f"{default})")


def _shape(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vector-dim", type=int, metavar="N",
                        help="dimension of local vectors (omit for a store without vectors)")
    parser.add_argument("--search-strategy", choices=("vector", "keyword", "hybrid"),
                        help="how the store searches (default: vector with vectors, else "
                             "keyword)")
    parser.add_argument("--search-index-sync", choices=("on_commit", "manual", "auto"),
                        help="when the keyword index catches up with writes")
    parser.add_argument("--default-ttl-days", type=int, metavar="DAYS",
                        help="time to live of records added without one")
    parser.add_argument("--max-ttl-days", type=int, metavar="DAYS",
                        help="the longest time to live a record may have")


def _in_database_model(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--in-database-model", metavar="NAME",
                        help="Oracle only: embed with this in-database model (MODEL or "
                             "OWNER.MODEL, see `oam-admin model load`), whose dimension "
                             "--vector-dim gives; a hybrid store's index needs it")


def build_parser() -> argparse.ArgumentParser:
    """The complete ``oam-admin`` parser."""
    common = _common()
    parser = _Parser(prog="oam-admin", description=_DESCRIPTION, epilog=_EPILOG,
                     parents=[common], allow_abbrev=False)
    parser.add_argument("--version", action="version", version=f"oam-admin {__version__}",
                        help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    db_parser = _sub(commands, "db", db.run_db, "start, stop or locate the embedded database",
                     common)
    db_actions = db_parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    for action, text in (("start", "start (or reuse) the server and print its superuser's URL "
                                   "(no password in it: passfile= names the superuser's "
                                   "password file in the data directory)"),
                         ("stop", "stop the server"),
                         ("url", "print the superuser's URL of the running server")):
        sub = _sub(db_actions, action, None, text, common)
        sub.add_argument("--data-dir", metavar="DIR",
                         help="data directory (default: $OAM_EMBEDDED_PGDATA or a per-user one)")
        if action != "stop":
            sub.add_argument("--user", metavar="ROLE",
                             help="print the URL for this login role (no password and no "
                                  "password file: the role's client passes its password)")

    store_parser = _sub(commands, "store", store.run_store,
                        "create, check, upgrade or recreate a memory store (as its owner)", common)
    store_actions = store_parser.add_subparsers(dest="store_command", metavar="ACTION",
                                                required=True)
    for action, text in (
        ("create", "create the store when absent (SchemaPolicy.CREATE_IF_EMPTY); an existing "
                   "store must be complete and current"),
        ("check", "validate the store (REQUIRE_EXISTING) and print its version, mode and dim"),
        ("upgrade", "create missing objects and apply upgrades (CREATE_IF_NECESSARY)"),
        ("recreate", "drop and recreate the store, deleting every record (RECREATE); needs "
                     "--yes"),
    ):
        sub = _sub(store_actions, action, None, text, common)
        _store_id(sub)
        if action == "check":
            add_schema_owner(sub, required=False)
            sub.add_argument("--vector-dim", type=int, metavar="N",
                             help="check that the store's vectors have this dimension (with "
                                  "--in-database-model: the model's)")
        else:
            _shape(sub)
        _in_database_model(sub)
        if action == "recreate":
            _yes(sub)

    pol_parser = _sub(commands, "policies", security.run_policies,
                      "install, remove or list Deep Data Security policies of a store", common)
    pol_actions = pol_parser.add_subparsers(dest="policies_command", metavar="ACTION",
                                            required=True)
    for action, text in (("add", "install policies (row-level security, column privileges)"),
                         ("remove", "remove policies and their grants; needs --yes"),
                         ("list", "list the policies installed on the store")):
        sub = _sub(pol_actions, action, None, text, common)
        _store_id(sub)
        add_schema_owner(sub)
        if action != "list":
            _policy(sub, "all shipped policies")
        if action == "remove":
            _yes(sub)

    login_parser = _sub(commands, "runtime-login", security.run_runtime_login,
                        "create or drop the runtime application's database login", common)
    login_actions = login_parser.add_subparsers(dest="runtime_login_command", metavar="ACTION",
                                                required=True)
    sub = _sub(login_actions, "create", None,
               "create a login that can only log in and act for end users (PostgreSQL: the "
               "schema's runtime role; Oracle: CREATE SESSION and CREATE END USER SECURITY "
               "CONTEXT); it reaches the tables only through the policies", common)
    sub.add_argument("--login", required=True, metavar="NAME",
                     help="the login to create (lower-case letters, digits, underscores)")
    add_schema_owner(sub)
    sub.add_argument("--password-stdin", action="store_true",
                     help=f"read the password from standard input (else ${RUNTIME_PASSWORD_ENV})")
    sub = _sub(login_actions, "drop", None,
               "drop a runtime login (refused while a PostgreSQL application uses it); needs "
               "--yes",
               common)
    sub.add_argument("--login", required=True, metavar="NAME",
                     help="the runtime login to drop")
    _yes(sub)

    app_parser = _sub(commands, "application", security.run_application,
                      "register, bind, list, rotate or drop application identities", common)
    app_actions = app_parser.add_subparsers(dest="application_command", metavar="ACTION",
                                            required=True)
    for action, text in (
        ("create", "register an application bound to a runtime login; prints its database "
                   "access token once"),
        ("bind", "let an application act for more stores or identity providers"),
        ("unbind", "withdraw stores or identity providers from an application"),
        ("token-mode", "require (--on) or stop requiring (--off) identity-provider tokens"),
        ("show", "print an application's login, token mode, stores and identity providers"),
        ("list", "print every application's login, token mode, stores and identity providers"),
        ("rotate", "give an application a new key and print its new token once (the old one "
                   "stops working); needs --yes"),
        ("drop", "drop an application and its bindings (its token stops working); needs --yes"),
    ):
        sub = _sub(app_actions, action, None, text, common)
        if action != "list":
            sub.add_argument("--name", required=True, metavar="APP",
                             help="the application's name")
        if action in ("rotate", "drop"):
            _yes(sub)
        if action == "create":
            sub.add_argument("--login", required=True, metavar="NAME",
                             help="the runtime login allowed to use the token")
        if action in ("create", "bind", "unbind"):
            sub.add_argument("--store", action="append", metavar="ID",
                             help="a memory store (of --owner-schema) the application acts for; "
                                  "repeat for several")
            add_schema_owner(sub, required=False)
            sub.add_argument("--idp", action="append", metavar="NAME",
                             help="an identity provider whose users the application acts for")
        if action == "create":
            sub.add_argument("--require-token", action="store_true",
                             help="token mode: the token alone speaks for nobody; every end "
                                  "user comes with the identity provider's own token")
        if action == "token-mode":
            mode = sub.add_mutually_exclusive_group(required=True)
            mode.add_argument("--on", dest="require_token", action="store_true",
                              help="require an identity-provider token for every end user")
            mode.add_argument("--off", dest="require_token", action="store_false",
                              help="let the application key vouch for end users itself")

    user_parser = _sub(commands, "end-user", security.run_end_user,
                       "create, drop or list local end users", common)
    user_actions = user_parser.add_subparsers(dest="end_user_command", metavar="ACTION",
                                              required=True)
    for action, text in (("create", "create a local end user"),
                         ("drop", "drop a local end user and its grants; needs --yes"),
                         ("list", "list the local end users")):
        sub = _sub(user_actions, action, None, text, common)
        if action != "list":
            sub.add_argument("name", metavar="NAME", help="the local end user's name")
        if action == "drop":
            _yes(sub)

    for action, text in (("grant", "grant installed policies to end users or groups"),
                         ("revoke", "revoke policies from end users or groups")):
        sub = _sub(commands, action, security.run_grant, text, common)
        _store_id(sub)
        add_schema_owner(sub)
        sub.add_argument("--user", action="append", metavar="NAME", help="a local end user")
        sub.add_argument("--group", action="append", metavar="NAME",
                         help="an identity-provider group")
        sub.add_argument("--idp", metavar="NAME",
                         help="the identity provider of the --group names (default: the only "
                              "one registered)")
        _policy(sub, "every policy installed on the store")

    grants_parser = _sub(commands, "grants", security.run_grants_list,
                         "list grants of a store's policies", common)
    grants_actions = grants_parser.add_subparsers(dest="grants_command", metavar="ACTION",
                                                  required=True)
    sub = _sub(grants_actions, "list", None, "list each principal with its policies", common)
    _store_id(sub)
    add_schema_owner(sub)

    identity.add_parsers(commands, _sub, common)
    audit.add_parsers(commands, _sub, common)
    model.add_model_parser(commands, common)
    _sub(commands, "check", check.run_check,
         "report drift of runtime logins and applications (PostgreSQL: attributes, role "
         "settings, memberships, bindings; Oracle: any privilege, role, object grant or object "
         "beyond the two a runtime login holds); exit status 1 when any is found", common)

    sub = _sub(commands, "purge-expired", store.run_purge,
               "delete expired rows of a store (as its owner)", common)
    _store_id(sub)
    add_schema_owner(sub, required=False)
    return parser


def _refuse_secret_flags(argv: Sequence[str]) -> None:
    for token in argv:
        if token == "--":
            return
        if token == "--password" or token.startswith("--password="):
            raise UsageError(
                "--password is refused: secrets never go on the command line (visible to other "
                f"local users and kept in shell history); use --password-stdin or "
                f"${RUNTIME_PASSWORD_ENV}"
            )


_POSTGRESQL_ONLY = ("application", "idp")
"""Commands with no Oracle counterpart (the database's own identity provider and application
identities serve instead)."""


def _refuse_on_oracle(args: argparse.Namespace) -> None:
    """``application`` and ``idp`` on an Oracle URL: a usage error saying what to do instead."""
    url = getattr(args, "url", None) or os.environ.get(URL_ENV)
    if args.command not in _POSTGRESQL_ONLY or not is_oracle_admin_url(url):
        return
    from oracleagentmemory.engines.oracle import security_admin as oracle

    reason = oracle.NO_APPLICATIONS if args.command == "application" \
        else oracle.NO_IDENTITY_PROVIDERS
    raise UsageError(f"oam-admin {args.command} has no Oracle counterpart: {reason}")


def _unavailable(exc: DatabaseUnavailableError) -> str:
    """One line: what could not be reached, and the fix."""
    message = _one_line(exc)
    if "oam-admin db start" in message or exc.hint is not None:
        return message
    return f"{message}; is the server running? (`oam-admin db start` starts the embedded one)"


def _one_line(exc: BaseException) -> str:
    for line in str(exc).splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__


def _quiet_driver_logs() -> None:
    """Connection retries of the driver's pool must not print one warning each: the command
    reports an unreachable database once."""
    for name in ("psycopg", "psycopg.pool"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``oam-admin`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    console = Console()
    parser = build_parser()
    _quiet_driver_logs()
    try:
        _refuse_secret_flags(arguments)
        args = parser.parse_args(arguments)
        console.quiet = bool(getattr(args, "quiet", False))
        _refuse_on_oracle(args)
        handler: Handler = args.handler
        return handler(args, console)
    except _MissingCommand as exc:
        sys.stderr.write(exc.parser.format_help())
        print(f"error: the following arguments are required: "
              f"{'COMMAND' if exc.parser is parser else 'ACTION'}", file=sys.stderr)
        return 2
    except _ParseError as exc:
        sys.stderr.write(exc.parser.format_usage())
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (UsageError, UnsupportedFeatureError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except DatabaseUnavailableError as exc:
        print(f"error: {_unavailable(exc)}", file=sys.stderr)
        return 1
    except (CliError, Exception) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
