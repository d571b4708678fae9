"""``oam-gateway``: run the gateway.

``oam-gateway serve --settings FILE`` serves the gateway the settings describe (a TOML file,
overridden by ``OAM_GATEWAY_*`` environment variables). ``oam-gateway dev`` starts the embedded
database, provisions a demo tenant on it through the admin identity
(``oam_gateway.dev.provision``), serves it on 127.0.0.1 with a development OAuth 2.1 authorization
server on the same origin (``oam_gateway.dev.authorization_server``: MCP clients and the console
sign the demo users in), and prints ``curl`` lines with tokens of the demo users; its key and the
tenant's secrets stay in ``--state-dir``. It binds its port before anything else, and on Ctrl+C
stops the embedded database if it started it (else says how to stop it). ``oam-gateway token --user
NAME`` mints a token from that issuer: the running ``dev``'s unless ``--state-dir`` names another;
it never makes a key. Development only: the issuer's private key is on this machine.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from oracleagentmemory.devissuer import DevIssuer
from oracleagentmemory.engines.postgres.driver_classes import DriverError
from oracleagentmemory.errors import OracleAgentMemoryError
from pydantic import SecretStr

from oam_gateway.config.settings import GatewaySettings, load_settings
from oam_gateway.dev.running import announce, running_devs, withdraw
from oam_gateway.dev.state import DevState, default_state_dir
from oam_gateway.middleware.request_log import configure_audit_log

__all__ = ["DEFAULT_SCOPE", "DEV_AUDIENCE", "DEV_ISSUER", "PRINTED_TOKEN_SECONDS", "main"]

DEV_ISSUER = "https://dev-issuer.oam.local"
"""The name of an issuer key made outside ``dev`` (``dev`` names it after the URL it serves:
its authorization server is the gateway's own origin)."""
DEV_AUDIENCE = "oam-gateway-dev"
DEFAULT_SCOPE = "memory:read memory:write"
PRINTED_TOKEN_SECONDS = 3600


def _progress(message: str) -> None:
    print(f"oam-gateway dev: {message}", file=sys.stderr, flush=True)


def _dev_settings(runtime_url: str, state: DevState, issuer_id: str) -> GatewaySettings:
    """Settings of the development gateway: the demo tenant, the dev issuer's keys."""
    from oam_gateway.dev import provision as demo
    from oam_gateway.dev.authorization_server import CONSOLE_CLIENT_ID

    return GatewaySettings(
        database_url=SecretStr(runtime_url), memory_store_id=demo.MEMORY_STORE_ID,
        schema_owner=demo.SCHEMA_OWNER, app_token_file=state.app_token_file,
        identity_provider=demo.IDENTITY_PROVIDER, embedder="wordllama",
        embedding_dimension=demo.VECTOR_DIM, search_strategy="hybrid",  # README "Recall"
        issuer=issuer_id, audience=DEV_AUDIENCE,
        jwks_file=state.jwks_file, console_client_id=CONSOLE_CLIENT_ID)


def _listen(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:``port`` (the gateway serves on it later)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    return sock


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends dev as Ctrl+C does, through its clean-up


def _leave_database(data_dir: Path, was_running: bool) -> None:
    """Stop the embedded database when this ``dev`` started it; else say it keeps running."""
    from oracleagentmemory import embedded

    if not embedded.is_running(data_dir):
        return
    stop = f"oam-admin db stop --data-dir {shlex.quote(str(data_dir))}"
    if was_running:
        _progress(f"the embedded database in {data_dir} keeps running (it ran before this dev "
                  f"started); to stop it: {stop}")
        return
    _progress(f"stopping the embedded database in {data_dir} (this dev started it) ...")
    try:
        embedded.stop(data_dir)
    except RuntimeError as error:
        _progress(f"{error}; to stop it: {stop}")
        return
    _progress(f"stopped the embedded database in {data_dir}")


def _run_dev(args: argparse.Namespace) -> int:
    """Bind the port, start the embedded database, provision the demo tenant, serve it until
    interrupted; then stop the database if this run started it."""
    from oracleagentmemory import embedded

    try:
        listener = _listen(args.port)
    except OSError as error:
        _progress(f"cannot serve on 127.0.0.1:{args.port}: {error.strerror or error}; stop what "
                  "listens there or pass --port with a free port (nothing was started)")
        return 1
    signal.signal(signal.SIGTERM, _interrupt)
    data_dir = embedded.default_data_dir()
    was_running = embedded.is_running(data_dir)
    state = DevState(Path(args.state_dir))
    base = f"http://127.0.0.1:{args.port}"
    issuer = state.issuer(base)  # the authorization server is the gateway's own origin
    _progress(f"WARNING: the development token issuer {issuer.issuer!r} (key in "
              f"{state.directory}) is for development only; never trust it in production")
    record = announce(base, state.directory)
    try:
        with listener:
            return _provision_and_serve(args, state, issuer, listener)
    except KeyboardInterrupt:
        return 130
    finally:
        withdraw(record)
        _leave_database(data_dir, was_running)


def _provision_and_serve(args: argparse.Namespace, state: DevState, issuer: DevIssuer,
                         listener: socket.socket) -> int:
    import uvicorn
    from oracleagentmemory import embedded

    from oam_gateway.app import create_app
    from oam_gateway.dev import provision as dev_provision
    from oam_gateway.dev.authorization_server import (
        DevAuthorizationServer,
        authorization_server_routes,
    )
    from oam_gateway.dev.flow import flow_lines
    from oam_gateway.tenancy.tenants import shared_embedder

    try:
        started = time.monotonic()
        _progress(f"starting the embedded database in {embedded.default_data_dir()} ...")
        server = embedded.start()
        _progress(f"starting the embedded database: done ({time.monotonic() - started:.1f} s)")
        tenant = dev_provision.provision(server.url, state, issuer, DEV_AUDIENCE, _progress)
        started = time.monotonic()
        _progress("loading the WordLlama embedder ...")
        embedder = shared_embedder("wordllama", dev_provision.VECTOR_DIM)
        assert embedder is not None
        embedder.embed(["warm up"])  # the model loads now, not on the first request
        _progress(f"loading the WordLlama embedder: done ({time.monotonic() - started:.1f} s)")
    except (OracleAgentMemoryError, DriverError, OSError) as error:
        _progress(f"failed: {error}")
        return 1
    settings = _dev_settings(tenant.runtime_url, state, issuer.issuer)
    base = f"http://127.0.0.1:{args.port}"
    tokens = {user: issuer.token(user, audience=DEV_AUDIENCE, groups=groups,
                                 lifetime_seconds=PRINTED_TOKEN_SECONDS, scope=DEFAULT_SCOPE)
              for user, groups in tenant.users.items()}
    state_arg = "" if Path(args.state_dir) == default_state_dir() else str(state.directory)
    authorization_server = DevAuthorizationServer(issuer, DEV_AUDIENCE, tenant.users)
    _progress(f"MCP clients sign in with OAuth at {base}/mcp (authorization server {base}, "
              f"metadata {base}/.well-known/oauth-authorization-server; demo users "
              f"{', '.join(tenant.users)})")
    _progress(f"people open their memory console at {base}/console (sign in as a demo user)")
    _progress(f"serving {base} (memory store {dev_provision.MEMORY_STORE_ID!r}); try:")
    print("\n".join(flow_lines(base, tokens, PRINTED_TOKEN_SECONDS, state_arg)), flush=True)
    configure_audit_log(sys.stderr)  # stdout holds the lines above
    gateway = uvicorn.Server(uvicorn.Config(
        create_app(settings, extra_routes=authorization_server_routes(authorization_server)),
        host="127.0.0.1", port=args.port, log_level="info",
        access_log=False))  # the audit events are the access log
    gateway.run(sockets=[listener])
    return 0 if gateway.started else 1


def _warn_unshared_console(settings: GatewaySettings, workers: int) -> None:
    """Log a WARNING when ``workers`` processes would each keep console state of their own."""
    from oam_gateway.console.routes import unshared_console

    consoles = any(tenant.console_client_id is not None
                   for tenant in settings.tenant_settings().values())
    unshared = unshared_console(settings) if consoles else ""
    if unshared:
        logging.getLogger("oam_gateway.cli").warning(
            "%d workers serve the console, but its %s: people signed in on one worker are "
            "signed out on another", workers, unshared)


def _run_serve(args: argparse.Namespace) -> int:
    """Serve the gateway of the settings file (or the environment) until interrupted."""
    import uvicorn

    from oam_gateway.app import create_app

    settings = load_settings(Path(args.settings) if args.settings else None)
    if args.workers > 1:  # each worker process loads the settings again and builds its app
        _warn_unshared_console(settings, args.workers)
        from oam_gateway.asgi import SETTINGS_FILE_ENV

        if args.settings:
            os.environ[SETTINGS_FILE_ENV] = str(Path(args.settings).resolve())
        uvicorn.run("oam_gateway.asgi:app_from_environment", factory=True,
                    workers=args.workers, host=args.host, port=args.port, log_level="info",
                    access_log=False)
        return 0
    configure_audit_log()  # one JSON line per request on standard output
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level="info",
                access_log=False)  # the audit events are the access log
    return 0


def _say(message: str) -> None:
    print(f"oam-gateway token: {message}", file=sys.stderr, flush=True)


def _token_state(given: str | None) -> DevState | None:
    """The state directory whose key signs: ``--state-dir``, else the running ``dev``'s, else
    the default one; ``None`` (said why) when several ``dev`` runs make it ambiguous."""
    running = running_devs()
    if given is not None:
        directory = Path(given).expanduser()
        if running and directory.resolve() not in {dev.state_dir for dev in running}:
            serving = "; ".join(f"{dev.base} from --state-dir {dev.state_dir}"
                                for dev in running)
            _say(f"warning: no running oam-gateway dev uses {directory} (serving: {serving}); "
                 "their gateways refuse this token")
        return DevState(directory)
    directories = {dev.state_dir for dev in running}
    if len(directories) > 1:
        serving = "; ".join(f"{dev.base} from --state-dir {dev.state_dir}" for dev in running)
        _say(f"several oam-gateway dev runs use different state directories ({serving}); pass "
             "--state-dir with the one whose gateway should accept the token")
        return None
    if directories:
        dev = running[0]
        if dev.state_dir != default_state_dir().resolve():
            _say(f"signing with the key of the oam-gateway dev serving {dev.base} "
                 f"(--state-dir {dev.state_dir})")
        return DevState(dev.state_dir)
    return DevState(default_state_dir())


def _run_token(args: argparse.Namespace) -> int:
    """Print a development token for ``--user`` (a demo user's groups unless ``--group``),
    signed with the key of the running ``dev`` or of ``--state-dir``; never makes a key."""
    state = _token_state(args.state_dir)
    if state is None:
        return 1
    issuer = state.existing_issuer()
    if issuer is None:
        running = "".join(f" (the oam-gateway dev serving {dev.base} runs with --state-dir "
                          f"{dev.state_dir})" for dev in running_devs()[:1])
        _say(f"no development issuer key in {state.directory}: token never makes one (a new "
             "key would sign tokens no gateway trusts); pass the --state-dir that "
             f"`oam-gateway dev` runs with, or start `oam-gateway dev` first{running}")
        return 1
    groups = args.group if args.group is not None else state.users().get(args.user, [])
    print(issuer.token(args.user, audience=DEV_AUDIENCE, groups=groups,
                       lifetime_seconds=args.lifetime, scope=args.scope))
    return 0


def _parser() -> argparse.ArgumentParser:
    """The command line of ``oam-gateway``."""
    top = argparse.ArgumentParser(prog="oam-gateway",
                                  description="The secure gateway of Oracle AI Agent Memory.")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve = commands.add_parser("serve", help="serve the gateway the settings describe")
    serve.add_argument("--settings", metavar="FILE",
                       help="a TOML settings file (OAM_GATEWAY_* variables override it)")
    serve.add_argument("--host", default="127.0.0.1", help="the address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="the port (default: 8080)")
    serve.add_argument("--workers", type=int, default=1, metavar="N",
                       help="worker processes (default: 1; each has its own pools and caches, and "
                            "with memory:// rate-limit storage its own counters: each worker "
                            "then allows the full rate)")
    dev = commands.add_parser("dev", help="provision a demo tenant on the embedded database "
                                          "and serve it on 127.0.0.1")
    dev.add_argument("--port", type=int, default=8080, help="the port (default: 8080)")
    token = commands.add_parser("token", help="mint a development token")
    token.add_argument("--user", required=True, help="the user the token names (sub claim)")
    token.add_argument("--group", action="append",
                       help="a group of the user; repeatable (default: a demo user's groups)")
    token.add_argument("--lifetime", type=_positive_seconds, default=900, metavar="SECONDS",
                       help="how long the token is valid, more than 0 (default: 900)")
    token.add_argument("--scope", default=DEFAULT_SCOPE,
                       help=f"the token's scopes, space-separated (default: {DEFAULT_SCOPE!r})")
    dev.add_argument("--state-dir", "--issuer-dir", dest="state_dir",
                     default=str(default_state_dir()), metavar="DIR",
                     help="the development issuer's key and the demo tenant's secrets "
                          f"(default: {default_state_dir()})")
    token.add_argument("--state-dir", "--issuer-dir", dest="state_dir", metavar="DIR",
                       help="the state directory of the oam-gateway dev whose gateway must "
                            "accept the token (default: that of the running oam-gateway dev, "
                            f"else {default_state_dir()}); its issuer key must exist")
    return top


def _positive_seconds(text: str) -> int:
    """``--lifetime``: a whole number of seconds above 0 (else the token is born expired)."""
    try:
        seconds = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0 (a token valid for {seconds} "
                                         "seconds is expired when it is made); got " + text)
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``oam-gateway``."""
    args = _parser().parse_args(argv)
    handler = {"serve": _run_serve, "dev": _run_dev, "token": _run_token}[args.command]
    return handler(args)
