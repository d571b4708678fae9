"""Identity-provider commands: register providers (``idp``), bind applications, a dev issuer.

``idp add`` registers a provider whose tokens the database verifies itself (token mode): its
issuer, audience, signing keys (a JWKS file, or a URL this tool fetches), the claims that carry
the user name and the groups, and its namespace (the name: its users' rows carry
``<name>:<user>``). ``dev-issuer`` is a local stand-in provider for development and tests.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import httpx

from oracleagentmemory.admin_cli._common import (
    CliError,
    Console,
    UsageError,
    admin_connection,
    admin_url,
    require_yes,
)
from oracleagentmemory.core.deepsec import identities
from oracleagentmemory.devissuer import DevIssuer

JWKS_FETCH_TIMEOUT_SECONDS = 10.0


def load_jwks(args: argparse.Namespace) -> dict[str, Any]:
    """The JWKS named by ``--jwks-file`` or ``--jwks-url``, checked to hold RSA signing keys."""
    if bool(args.jwks_file) == bool(args.jwks_url):
        raise UsageError("give exactly one of --jwks-file PATH or --jwks-url URL")
    try:
        if args.jwks_file:
            document = json.loads(Path(args.jwks_file).read_text(encoding="utf-8"))
        else:
            response = httpx.get(args.jwks_url, timeout=JWKS_FETCH_TIMEOUT_SECONDS,
                                 follow_redirects=False)
            response.raise_for_status()
            document = response.json()
    except (OSError, ValueError, httpx.HTTPError) as exc:
        raise CliError(f"cannot read the JWKS: {exc}") from exc
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise CliError("the JWKS has no \"keys\" list")
    usable = [k for k in keys if isinstance(k, dict) and k.get("kty") == "RSA"
              and isinstance(k.get("n"), str) and isinstance(k.get("e"), str)
              and "d" not in k]
    if not usable:
        raise CliError("the JWKS holds no public RSA key (RS256 is the only algorithm accepted)")
    return {"keys": usable}


def run_idp(args: argparse.Namespace, console: Console) -> int:
    """idp add / refresh / list / remove."""
    action: str = args.idp_command
    if action == "remove":
        require_yes(args, f"idp remove unregisters identity provider {args.name!r}: its users "
                          "can no longer sign in through any application")
    jwks = load_jwks(args) if action in ("add", "refresh") else None
    with admin_connection(admin_url(args, console)) as admin:
        if action == "add":
            assert jwks is not None
            identities.add_identity_provider(admin, args.name, issuer=args.issuer,
                                             audience=args.audience, jwks=jwks,
                                             user_claim=args.user_claim,
                                             groups_claim=args.groups_claim)
            console.out(f"identity provider {args.name!r} registered ({len(jwks['keys'])} "
                        f"key(s)); its users' rows carry '{args.name}:<{args.user_claim}>'")
        elif action == "refresh":
            assert jwks is not None
            identities.refresh_identity_provider_keys(admin, args.name, jwks)
            console.out(f"identity provider {args.name!r}: {len(jwks['keys'])} key(s) now")
        elif action == "list":
            for provider in identities.list_identity_providers(admin):
                console.out(
                    f"{provider.name}: issuer {provider.issuer}, audience {provider.audience}, "
                    f"user claim {provider.user_claim}, groups claim {provider.groups_claim}, "
                    f"keys {', '.join(provider.key_ids) or '-'}, applications "
                    f"{', '.join(provider.applications) or '-'}")
        elif not identities.remove_identity_provider(admin, args.name):
            raise CliError(f"no identity provider {args.name!r} is registered")
        else:
            console.out(f"identity provider {args.name!r} removed")
    return 0


def bindings(args: argparse.Namespace) -> tuple[list[tuple[str, str]], list[str]]:
    """``(stores, identity providers)`` named by ``--store`` / ``--schema-owner`` / ``--idp``.

    Stores are ``(schema, store id)`` as given; the admin API validates and folds them.
    """
    stores: list[str] = args.store or []
    if stores and not args.owner_schema:
        raise UsageError("--store needs --schema-owner (the schema that holds the store)")
    return ([(str(args.owner_schema).lower(), s.lower()) for s in stores],
            list(args.idp or []))


def run_dev_issuer(args: argparse.Namespace, console: Console) -> int:
    """dev-issuer init / jwks / token: a local identity provider for development and tests."""
    action: str = args.dev_issuer_command
    if action == "init":
        issuer = DevIssuer.create(args.dir, args.issuer)
        console.progress(f"development issuer {issuer.issuer!r}: private key in {args.dir} "
                         "(mode 0600); never use it in production")
        console.out(issuer.issuer)
        return 0
    loaded = DevIssuer.load(args.dir)
    if action == "jwks":
        console.out(json.dumps(loaded.jwks()))
        return 0
    console.out(loaded.token(args.subject, audience=args.audience, groups=args.group or [],
                             lifetime_seconds=args.lifetime))
    return 0


def add_parsers(commands: Any, sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``idp`` and ``dev-issuer`` commands."""
    idp_parser = sub(commands, "idp", run_idp,
                     "register identity providers whose tokens the database verifies", common)
    actions = idp_parser.add_subparsers(dest="idp_command", metavar="ACTION", required=True)
    for action, text in (
        ("add", "register a provider (its name is its users' namespace)"),
        ("refresh", "replace a provider's signing keys (key rotation)"),
        ("list", "list the registered providers"),
        ("remove", "unregister a provider; needs --yes"),
    ):
        parser = sub(actions, action, None, text, common)
        if action != "list":
            parser.add_argument("--name", required=True, metavar="NAME",
                                help="the provider's name and namespace (lower case)")
        if action == "add":
            parser.add_argument("--issuer", required=True, metavar="ISS",
                                help="the tokens' iss claim, exactly")
            parser.add_argument("--audience", required=True, metavar="AUD",
                                help="the aud claim the tokens must carry")
            parser.add_argument("--user-claim", default="sub", metavar="CLAIM",
                                help="the claim that carries the user name (default: sub)")
            parser.add_argument("--groups-claim", default="groups", metavar="CLAIM",
                                help="the claim that lists the groups (default: groups)")
        if action in ("add", "refresh"):
            source = parser.add_mutually_exclusive_group(required=True)
            source.add_argument("--jwks-file", metavar="PATH", help="the provider's JWKS")
            source.add_argument("--jwks-url", metavar="URL",
                                help="fetch the JWKS from this URL (by this tool, now)")
        if action == "remove":
            parser.add_argument("--yes", action="store_true",
                                help="confirm this destructive command")

    dev_parser = sub(commands, "dev-issuer", run_dev_issuer,
                     "a local development identity provider (RS256 tokens, a JWKS)", common)
    actions = dev_parser.add_subparsers(dest="dev_issuer_command", metavar="ACTION",
                                        required=True)
    for action, text in (("init", "create a signing key in --dir and print the issuer"),
                         ("jwks", "print the public keys (JWKS)"),
                         ("token", "print a signed token for --subject")):
        parser = sub(actions, action, None, text, common)
        parser.add_argument("--dir", required=True, metavar="DIR",
                            help="the directory that keeps the issuer's key")
        if action == "init":
            parser.add_argument("--issuer", default="https://dev-issuer.oam.local",
                                metavar="ISS", help="the issuer identifier (iss claim)")
        if action == "token":
            parser.add_argument("--subject", required=True, metavar="USER",
                                help="the user the token names (sub claim)")
            parser.add_argument("--audience", required=True, metavar="AUD",
                                help="the aud claim (the audience registered with idp add)")
            parser.add_argument("--group", action="append", metavar="GROUP",
                                help="a group of the user (groups claim); repeat for several")
            parser.add_argument("--lifetime", type=int, default=300, metavar="SECONDS",
                                help="how long the token is valid (default: 300)")
