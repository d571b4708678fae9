"""Background work of one client: a bounded queue, one worker, per-thread waits.

A job runs as the end user who queued it, or not at all: it carries that caller's engine-level
end-user context and opens its own ``OracleMemoryEndUserSecurityContext`` scope with it, in an
otherwise empty context (nothing else of the caller's, nor of another job, leaks in). The
caller's own scope may have ended by then (a request finished); the job's scope is its own. When
that context can no longer be applied (the database refuses it, e.g. an expired token), the job
fails and writes nothing; the raw write that queued it is kept.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.core.deepsec.context import (
    OracleMemoryEndUserSecurityContext,
    active_security_context,
)
from oracleagentmemory.core.memoryextraction import BackgroundExtractionQueueFullBehavior
from oracleagentmemory.errors import InvalidArgumentError, OperationTimeoutError

LOG = logging.getLogger("oracleagentmemory.background")

DEFAULT_QUEUE_CAPACITY = 64
"""Jobs that may wait at once (``OAM_BACKGROUND_QUEUE_CAPACITY`` overrides it)."""


def queue_capacity() -> int:
    """The configured queue capacity."""
    raw = os.environ.get("OAM_BACKGROUND_QUEUE_CAPACITY")
    if raw is None:
        return DEFAULT_QUEUE_CAPACITY
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidArgumentError(
            f"OAM_BACKGROUND_QUEUE_CAPACITY must be a positive integer, got {raw!r}",
            argument="OAM_BACKGROUND_QUEUE_CAPACITY")
    return value


WorkKey = tuple[str | None, str]
"""Whose work it is and on what: (the end user it runs as, or ``None``; the thread id)."""


@dataclass(eq=False)
class Job:
    """One unit of background work on ``key``."""

    key: WorkKey
    run: Callable[[], None]
    security: Any | None
    """The engine-level end-user context of the caller (``None``: it had none)."""
    description: str
    owners: tuple[str | None, str | None] = (None, None)
    """The (user id, agent id) of the thread the job works on."""
    done: threading.Event = field(default_factory=threading.Event)


class BackgroundWork:
    """The background work of one client: a queue per end user, served in turn.

    Each end user may have ``capacity`` jobs waiting (``OAM_BACKGROUND_QUEUE_CAPACITY``,
    default 64), so one user filling their share never drops or delays another's work beyond
    one job per user ahead of it; one worker takes the users' queues round-robin.
    """

    def __init__(self, capacity: int | None = None) -> None:
        self._capacity = queue_capacity() if capacity is None else capacity
        self._changed = threading.Condition()
        self._queues: dict[str | None, deque[Job]] = {}
        self._turns: deque[str | None] = deque()
        self._pending: list[Job] = []
        self._accepting = True
        self._stopping = False
        self._worker: threading.Thread | None = None

    @property
    def accepting(self) -> bool:
        """Whether new work is accepted (``False`` once closing)."""
        return self._accepting

    def submit(self, key: WorkKey, run: Callable[[], None], description: str,
               behavior: BackgroundExtractionQueueFullBehavior, put_timeout: float,
               owners: tuple[str | None, str | None] = (None, None)) -> bool:
        """Queue ``run`` to run as the caller's end user; ``False`` when it was dropped.

        Raises:
            OperationTimeoutError: (a ``TimeoutError``) the caller's queue stayed full for
                ``put_timeout`` seconds under ``WAIT_THEN_RAISE``.
        """
        job = Job(key, run, active_security_context(), description, owners)
        user = key[0]
        deadline = time.monotonic() + put_timeout
        with self._changed:
            while self._accepting and len(self._queues.get(user, ())) >= self._capacity:
                left = deadline - time.monotonic()
                if behavior is BackgroundExtractionQueueFullBehavior.DROP or left <= 0:
                    if behavior is BackgroundExtractionQueueFullBehavior.WAIT_THEN_RAISE:
                        raise OperationTimeoutError(
                            f"{description} not queued: the background queue stayed full for "
                            f"{put_timeout:g} s (the raw write is kept)")
                    LOG.warning("%s dropped: the background queue is full (the raw write is "
                                "kept)", description)
                    return False
                self._changed.wait(left)
            if not self._accepting:
                LOG.warning("%s not queued: the client is closed", description)
                return False
            waiting = self._queues.setdefault(user, deque())
            if not waiting:
                self._turns.append(user)
            waiting.append(job)
            self._pending.append(job)
            self._start_worker()
            self._changed.notify_all()
        return True

    def wait(self, keys: Iterable[WorkKey] | None = None, timeout: float | None = None,
             *, end_user: str | None | _NotSetMarker = NOT_SET_MARKER,
             user_id: str | None | _NotSetMarker = NOT_SET_MARKER,
             agent_id: str | None | _NotSetMarker = NOT_SET_MARKER) -> bool:
        """Wait for the work accepted so far (on ``keys``, or all; or that of ``end_user`` on
        the threads of ``user_id`` / ``agent_id``); ``False`` on timeout."""
        wanted = None if keys is None else set(keys)

        def chosen(job: Job) -> bool:
            return ((wanted is None or job.key in wanted)
                    and (end_user is NOT_SET_MARKER or job.key[0] == end_user)
                    and (user_id is NOT_SET_MARKER or job.owners[0] == user_id)
                    and (agent_id is NOT_SET_MARKER or job.owners[1] == agent_id))

        with self._changed:
            jobs = [j for j in self._pending if chosen(j)]
        deadline = None if timeout is None else time.monotonic() + timeout
        for job in jobs:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not job.done.wait(left):
                return False
        return True

    def close(self, timeout: float | None) -> bool:
        """Stop accepting work and wait for what was accepted; ``False`` on timeout."""
        with self._changed:
            self._accepting = False
            self._changed.notify_all()
        finished = self.wait(None, timeout)
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        return finished

    def _start_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._work, name="oam-background",
                                            daemon=True)
            self._worker.start()

    def _next(self) -> Job | None:
        """The next user's next job, or ``None`` once stopping with nothing left."""
        with self._changed:
            while not self._turns:
                if self._stopping:
                    return None
                self._changed.wait()
            user = self._turns.popleft()
            waiting = self._queues[user]
            job = waiting.popleft()
            if waiting:
                self._turns.append(user)
            else:
                del self._queues[user]
            self._changed.notify_all()  # a queue slot is free
            return job

    def _finish(self, job: Job) -> None:
        with self._changed:
            if job in self._pending:
                self._pending.remove(job)
        job.done.set()

    def _work(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            try:
                contextvars.Context().run(_run_as, job)
            except Exception:  # a failed job counts as finished; its raw input is kept
                LOG.warning("%s failed", job.description, exc_info=True)
            finally:
                self._finish(job)


def _run_as(job: Job) -> None:
    """Run ``job`` inside its own end-user scope (or none, when it was queued without one)."""
    if job.security is None:
        job.run()
        return
    with OracleMemoryEndUserSecurityContext(job.security):
        job.run()
