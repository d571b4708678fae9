"""``oam-admin check``: report drift of the runtime logins and applications.

A runtime login can change its own password and role-level settings (PostgreSQL); the database
cannot forbid it, so the admin checks for it. On Oracle it reports what a runtime login holds
beyond its two privileges (system privileges, roles, object privileges, owned objects). A
database without Deep Data Security is reported too (nothing there protects any row). Exit
status 1 when anything is found.
"""

from __future__ import annotations

import argparse

from oracleagentmemory.admin_cli._common import (
    Console,
    admin_connection,
    admin_url,
    is_oracle_admin_url,
)
from oracleagentmemory.core.deepsec.identities import runtime_login_drift


def password_rotation_hint(url: str) -> str:
    """What to run when a runtime password may have changed, in the URL's database's SQL."""
    rotate = "ALTER USER ... IDENTIFIED BY" if is_oracle_admin_url(url) \
        else "ALTER ROLE ... PASSWORD"
    return (f"a changed runtime password cannot be seen from here: rotate it with {rotate} "
            "if in doubt")


def run_check(args: argparse.Namespace, console: Console) -> int:
    """Print one line per finding; ``ok`` and status 0 when there is none."""
    url = admin_url(args, console)
    with admin_connection(url) as admin:
        console.progress("checking runtime logins and applications")
        findings = runtime_login_drift(admin)
    for finding in findings:
        console.out(finding)
    if not findings:
        console.out("ok: no drift")
    console.progress(password_rotation_hint(url))
    return 1 if findings else 0
