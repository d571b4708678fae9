"""``oam-admin check``: report drift of the runtime logins and applications.

A runtime login can change its own password and role-level settings; the database cannot
forbid it, so the admin checks for it. Exit status 1 when anything is found.
"""

from __future__ import annotations

import argparse

from oracleagentmemory.admin_cli._common import Console, admin_connection, admin_url
from oracleagentmemory.core.deepsec.identities import runtime_login_drift


def run_check(args: argparse.Namespace, console: Console) -> int:
    """Print one line per finding; ``ok`` and status 0 when there is none."""
    with admin_connection(admin_url(args, console)) as admin:
        console.progress("checking runtime logins and applications")
        findings = runtime_login_drift(admin)
    for finding in findings:
        console.out(finding)
    if not findings:
        console.out("ok: no drift")
    console.progress("a changed runtime password cannot be seen from here: rotate it with "
                     "ALTER ROLE ... PASSWORD if in doubt")
    return 1 if findings else 0
