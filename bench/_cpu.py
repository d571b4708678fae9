"""CPU counters of process trees and of the whole machine, read from ``/proc`` (Linux).

The benches use them to say where a run's CPU went: the gateway's processes, the database
server's, the load generator's, and how busy the machine was meanwhile.
"""

from __future__ import annotations

import glob
import os
import resource
from typing import Any

import psycopg

TICKS = os.sysconf("SC_CLK_TCK")
"""Clock ticks per second of ``/proc``'s CPU counters."""


def proc_stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (None: no such process)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None  # the process ended meanwhile
    return stat.rsplit(")", 1)[1].split()


def server_pid(conn: psycopg.Connection[Any]) -> int | None:
    """The postmaster of the server ``conn`` talks to (the parent of its backend), when that
    server runs on this machine."""
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    fields = proc_stat(row[0]) if row else None
    return int(fields[1]) if fields else None


def tree_cpu(root: int | None) -> dict[int, int] | None:
    """CPU ticks by process of ``root`` and all its descendants (None: not visible).

    Only that tree counts: other processes on the machine (another PostgreSQL server, a test
    suite running meanwhile) would otherwise add their CPU, and their exiting processes
    subtract it.
    """
    if root is None:
        return None
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for path in glob.glob("/proc/[0-9]*/stat"):
        pid = int(path.split("/")[2])
        fields = proc_stat(pid)
        if fields is not None:
            parents[pid] = int(fields[1])
            ticks[pid] = int(fields[11]) + int(fields[12])  # utime, stime
    members = {root} if root in ticks else set()
    grew = True
    while grew:
        new = {pid for pid, parent in parents.items() if parent in members} - members
        members |= new
        grew = bool(new)
    return {pid: ticks[pid] for pid in members} or None


def cpu_since(before: dict[int, int] | None, after: dict[int, int] | None) -> float | None:
    """CPU seconds a tree spent between two :func:`tree_cpu` snapshots (a process that started
    meanwhile counts from zero; one that ended is not counted)."""
    if before is None or after is None:
        return None
    return sum(t - before.get(pid, 0) for pid, t in after.items()) / TICKS


def machine_ticks() -> tuple[int, int]:
    """Busy and total CPU ticks of the whole machine so far (``/proc/stat``'s first line)."""
    with open("/proc/stat", encoding="ascii") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle, iowait
    total = sum(values[:8])  # guest time is already counted in user
    return total - idle, total


def own_cpu(children: bool = False) -> float:
    """CPU seconds of this process, every thread; with ``children``, also of its children that
    ended and were waited for (a ``wrk`` run)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    seconds = usage.ru_utime + usage.ru_stime
    if children:
        ended = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds += ended.ru_utime + ended.ru_stime
    return seconds
