"""Which ``oam-gateway dev`` processes are serving, and from which state directory.

Each running ``dev`` leaves one small file (``<pid>.json``: its process id, address and state
directory) in a per-user directory, and removes it when it ends. ``oam-gateway token`` reads
them so that, without ``--state-dir``, it signs with the key the running gateway trusts rather
than one it would refuse. A file whose process has ended (``dev`` was killed) is ignored and
removed.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from oam_gateway.dev.state import write_private

__all__ = ["RunningDev", "announce", "running_devs", "withdraw"]


def _running_dir() -> Path:
    """Where the running ``dev`` processes are recorded (a per-user directory)."""
    return Path(platformdirs.user_data_dir("oam-gateway")) / "dev-running"


@dataclass(frozen=True)
class RunningDev:
    """One ``oam-gateway dev`` serving ``base`` with the state in ``state_dir``."""

    pid: int
    base: str
    state_dir: Path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _written_by_me(record: Path) -> bool:
    """Whether ``record`` is a plain file of this user (not a link, pipe or another user's
    file, which would steer ``token`` to a key of theirs)."""
    info = record.lstat()
    getuid = getattr(os, "getuid", None)  # POSIX; elsewhere the directory's ACL decides
    return stat.S_ISREG(info.st_mode) and (getuid is None or info.st_uid == getuid())


def announce(base: str, state_dir: Path) -> Path:
    """Record this process as a ``dev`` serving ``base`` from ``state_dir``; returns the record
    (remove it with :func:`withdraw` when serving ends)."""
    _running_dir().mkdir(mode=0o700, parents=True, exist_ok=True)  # others may not add records
    record = _running_dir() / f"{os.getpid()}.json"
    write_private(record, json.dumps({"pid": os.getpid(), "base": base,
                                      "state_dir": str(state_dir.resolve())}))
    return record


def withdraw(record: Path) -> None:
    """Remove a record made by :func:`announce`."""
    record.unlink(missing_ok=True)


def running_devs() -> list[RunningDev]:
    """The ``dev`` processes serving now, by process id."""
    found = []
    for record in sorted(_running_dir().glob("*.json")):
        try:
            if not _written_by_me(record):
                continue  # planted: another user's file, or a link to one
            data = json.loads(record.read_text(encoding="utf-8"))
            dev = RunningDev(int(data["pid"]), str(data["base"]), Path(data["state_dir"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not one of ours
        if _alive(dev.pid):
            found.append(dev)
        else:
            record.unlink(missing_ok=True)
    return sorted(found, key=lambda dev: dev.pid)
