"""Print an access token of the compose demo's development issuer for one user.

Run inside the compose project (the issuer's key lives in the provision service's volume)::

    docker compose -f deploy/compose.yaml run --rm --no-deps --entrypoint python provision \
        /opt/oam-deploy/demo_token.py alice

The token carries the ``memory:read memory:write`` scopes and the group the provisioning
granted the policies to. Development only: a real identity provider issues the tokens.
"""

from __future__ import annotations

import argparse
import os

from oracleagentmemory.devissuer import DevIssuer


def main() -> None:
    """Parse the command line and print the token."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("user", help="the user the token names (sub claim)")
    parser.add_argument("--scope", default="memory:read memory:write")
    parser.add_argument("--lifetime", type=int, default=900, metavar="SECONDS")
    args = parser.parse_args()
    issuer = DevIssuer.load(os.environ.get("OAM_ISSUER_DIR", "/var/lib/oam-issuer"))
    print(issuer.token(args.user, audience=os.environ.get("OAM_AUDIENCE", "oam-gateway"),
                       groups=[os.environ.get("OAM_GROUP", "users")],
                       lifetime_seconds=args.lifetime, scope=args.scope))


if __name__ == "__main__":
    main()
