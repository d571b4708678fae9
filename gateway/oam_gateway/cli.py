"""``oam-gateway``: run the gateway.

``oam-gateway serve --settings FILE`` serves the gateway the settings describe (a TOML file,
overridden by ``OAM_GATEWAY_*`` environment variables). ``oam-gateway dev`` starts the embedded
database, provisions a demo tenant on it through the admin identity (``oam_gateway.dev_provision``),
serves it on 127.0.0.1 trusting a local development token issuer, and prints ``curl`` lines with
tokens of the demo users; its key and the tenant's secrets stay in ``--state-dir``.
``oam-gateway token --user NAME`` mints a token from that issuer. Development only: the issuer's
private key is on this machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg
from oracleagentmemory.errors import OracleAgentMemoryError
from pydantic import SecretStr

from oam_gateway.dev_state import DevState, default_state_dir
from oam_gateway.request_log import configure_audit_log
from oam_gateway.settings import GatewaySettings, load_settings

DEV_ISSUER = "https://dev-issuer.oam.local"
DEV_AUDIENCE = "oam-gateway-dev"
DEFAULT_SCOPE = "memory:read memory:write"
PRINTED_TOKEN_SECONDS = 3600


def _progress(message: str) -> None:
    print(f"oam-gateway dev: {message}", file=sys.stderr, flush=True)


def dev_settings(runtime_url: str, state: DevState, issuer_id: str) -> GatewaySettings:
    """Settings of the development gateway: the demo tenant, the dev issuer's keys."""
    from oam_gateway import dev_provision as demo

    return GatewaySettings(
        database_url=SecretStr(runtime_url), memory_store_id=demo.MEMORY_STORE_ID,
        schema_owner=demo.SCHEMA_OWNER, app_token_file=state.app_token_file,
        identity_provider=demo.IDENTITY_PROVIDER, embedder="wordllama",
        embedding_dimension=demo.VECTOR_DIM, issuer=issuer_id, audience=DEV_AUDIENCE,
        jwks_file=state.jwks_file)


def run_dev(args: argparse.Namespace) -> int:
    """Start the embedded database, provision the demo tenant, serve it until interrupted."""
    import uvicorn
    from oracleagentmemory import embedded

    from oam_gateway import dev_provision
    from oam_gateway.app import create_app
    from oam_gateway.dev_flow import flow_lines
    from oam_gateway.tenants import shared_embedder

    state = DevState(Path(args.state_dir))
    issuer = state.issuer(DEV_ISSUER)
    _progress(f"WARNING: the development token issuer {issuer.issuer!r} (key in "
              f"{state.directory}) is for development only; never trust it in production")
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
    except (OracleAgentMemoryError, psycopg.Error, OSError) as error:
        _progress(f"failed: {error}")
        return 1
    settings = dev_settings(tenant.runtime_url, state, issuer.issuer)
    base = f"http://127.0.0.1:{args.port}"
    tokens = {user: issuer.token(user, audience=DEV_AUDIENCE, groups=groups,
                                 lifetime_seconds=PRINTED_TOKEN_SECONDS, scope=DEFAULT_SCOPE)
              for user, groups in tenant.users.items()}
    state_arg = "" if Path(args.state_dir) == default_state_dir() else str(state.directory)
    _progress(f"serving {base} (memory store {dev_provision.MEMORY_STORE_ID!r}); try:")
    print("\n".join(flow_lines(base, tokens, PRINTED_TOKEN_SECONDS, state_arg)), flush=True)
    configure_audit_log(sys.stderr)  # stdout holds the lines above
    uvicorn.run(create_app(settings), host="127.0.0.1", port=args.port, log_level="info",
                access_log=False)  # the audit events are the access log
    return 0


def run_serve(args: argparse.Namespace) -> int:
    """Serve the gateway of the settings file (or the environment) until interrupted."""
    import uvicorn

    from oam_gateway.app import create_app

    settings = load_settings(Path(args.settings) if args.settings else None)
    if args.workers > 1:  # each worker process loads the settings again and builds its app
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


def run_token(args: argparse.Namespace) -> int:
    """Print a development token for ``--user`` (a demo user's groups unless ``--group``)."""
    state = DevState(Path(args.state_dir))
    issuer = state.issuer(DEV_ISSUER)
    groups = args.group if args.group is not None else state.users().get(args.user, [])
    print(issuer.token(args.user, audience=DEV_AUDIENCE, groups=groups,
                       lifetime_seconds=args.lifetime, scope=args.scope))
    return 0


def parser() -> argparse.ArgumentParser:
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
    token.add_argument("--lifetime", type=int, default=900, metavar="SECONDS",
                       help="how long the token is valid (default: 900)")
    token.add_argument("--scope", default=DEFAULT_SCOPE,
                       help=f"the token's scopes, space-separated (default: {DEFAULT_SCOPE!r})")
    for command in (dev, token):
        command.add_argument("--state-dir", "--issuer-dir", dest="state_dir",
                             default=str(default_state_dir()), metavar="DIR",
                             help="the development issuer's key and the demo tenant's secrets "
                                  f"(default: {default_state_dir()})")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``oam-gateway``."""
    args = parser().parse_args(argv)
    handler = {"serve": run_serve, "dev": run_dev, "token": run_token}[args.command]
    return handler(args)
