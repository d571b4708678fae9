"""``oam-gateway``: run the gateway.

``oam-gateway serve --settings FILE`` serves the gateway the settings describe (a TOML file,
overridden by ``OAM_GATEWAY_*`` environment variables). ``oam-gateway dev`` serves it on
127.0.0.1 against the embedded database, trusting a local development token issuer (its key
kept in ``--issuer-dir``), and prints how to get a token; ``oam-gateway token --user NAME``
mints one from that issuer. Development only: the issuer's private key is on this machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import platformdirs
from oracleagentmemory.devissuer import DevIssuer
from pydantic import SecretStr

from oam_gateway.settings import GatewaySettings, load_settings

DEV_ISSUER = "https://dev-issuer.oam.local"
DEV_AUDIENCE = "oam-gateway-dev"
DEV_IDENTITY_PROVIDER = "dev"
DEV_MEMORY_STORE_ID = "demo"
DEV_SCHEMA_OWNER = "oam_demo"
JWKS_FILE = "jwks.json"


def default_issuer_dir() -> Path:
    """Where ``dev`` keeps the development issuer's key and JWKS."""
    return Path(platformdirs.user_data_dir("oam-gateway")) / "dev-issuer"


def dev_issuer(directory: Path) -> DevIssuer:
    """The development issuer in ``directory`` (created on first use); its JWKS written next."""
    issuer = (DevIssuer.load(directory) if (directory / "issuer.json").exists()
              else DevIssuer.create(directory, DEV_ISSUER))
    (directory / JWKS_FILE).write_text(json.dumps(issuer.jwks()), encoding="utf-8")
    return issuer


def dev_settings(database_url: str, issuer: DevIssuer, issuer_dir: Path) -> GatewaySettings:
    """Settings of the development gateway: the embedded database, the dev issuer's keys."""
    return GatewaySettings(
        database_url=SecretStr(database_url), memory_store_id=DEV_MEMORY_STORE_ID,
        schema_owner=DEV_SCHEMA_OWNER, issuer=issuer.issuer, audience=DEV_AUDIENCE,
        jwks_file=issuer_dir / JWKS_FILE, identity_provider=DEV_IDENTITY_PROVIDER)


def run_dev(args: argparse.Namespace) -> int:
    """Start the embedded database and serve the gateway on 127.0.0.1 until interrupted."""
    import uvicorn
    from oracleagentmemory import embedded

    from oam_gateway.app import create_app

    issuer_dir = Path(args.issuer_dir)
    issuer = dev_issuer(issuer_dir)
    settings = dev_settings(embedded.url(), issuer, issuer_dir)
    base = f"http://127.0.0.1:{args.port}"
    print(f"oam-gateway dev: serving {base} (embedded database; development issuer "
          f"{issuer.issuer!r}, never use it in production)", file=sys.stderr)
    print("get a token and call the gateway:\n"
          f"  TOKEN=$(oam-gateway token --user alice --issuer-dir {issuer_dir})\n"
          f'  curl -H "Authorization: Bearer $TOKEN" {base}/v1/me\n'
          f"  curl {base}/readyz", file=sys.stderr)
    uvicorn.run(create_app(settings), host="127.0.0.1", port=args.port, log_level="info")
    return 0


def run_serve(args: argparse.Namespace) -> int:
    """Serve the gateway of the settings file (or the environment) until interrupted."""
    import uvicorn

    from oam_gateway.app import create_app

    settings = load_settings(Path(args.settings) if args.settings else None)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level="info")
    return 0


def run_token(args: argparse.Namespace) -> int:
    """Print a development token for ``--user``."""
    issuer = dev_issuer(Path(args.issuer_dir))
    print(issuer.token(args.user, audience=DEV_AUDIENCE, groups=args.group or [],
                       lifetime_seconds=args.lifetime))
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
    dev = commands.add_parser("dev", help="serve on 127.0.0.1 with the embedded database")
    dev.add_argument("--port", type=int, default=8080, help="the port (default: 8080)")
    token = commands.add_parser("token", help="mint a development token")
    token.add_argument("--user", required=True, help="the user the token names (sub claim)")
    token.add_argument("--group", action="append", help="a group of the user; repeatable")
    token.add_argument("--lifetime", type=int, default=900, metavar="SECONDS",
                       help="how long the token is valid (default: 900)")
    for command in (dev, token):
        command.add_argument("--issuer-dir", default=str(default_issuer_dir()), metavar="DIR",
                             help="the development issuer's key directory")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``oam-gateway``."""
    args = parser().parse_args(argv)
    handler = {"serve": run_serve, "dev": run_dev, "token": run_token}[args.command]
    return handler(args)
