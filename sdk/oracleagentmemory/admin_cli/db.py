"""``oam-admin db start|stop|url``: the embedded PostgreSQL server."""

from __future__ import annotations

import argparse
from pathlib import Path

from oracleagentmemory import embedded
from oracleagentmemory.admin_cli._common import CliError, Console, url_for_user


def _data_dir(args: argparse.Namespace) -> Path:
    given = getattr(args, "data_dir", None)
    return Path(given).expanduser().resolve() if given else embedded.default_data_dir()


def run_db(args: argparse.Namespace, console: Console) -> int:
    """Start, stop or locate the embedded database."""
    data_dir = _data_dir(args)
    action: str = args.db_command
    if action == "start":
        console.progress(f"starting (or reusing) the embedded database in {data_dir}")
        url = embedded.start(data_dir).url
        console.out(url_for_user(url, args.user) if args.user else url)
        return 0
    if action == "stop":
        console.progress(f"stopping the embedded database in {data_dir}")
        stopped = embedded.stop(data_dir)
        console.out("stopped" if stopped else f"not running ({data_dir})")
        return 0
    if not embedded.is_running(data_dir):
        raise CliError(f"the embedded database in {data_dir} is not running; start it with "
                       "`oam-admin db start`")
    url = embedded.url(data_dir)
    console.out(url_for_user(url, args.user) if args.user else url)
    return 0
