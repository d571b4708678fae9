"""Background work of one client: a bounded queue, one worker, per-thread waits.

A job runs as the end user who queued it, or not at all: it carries that caller's engine-level
end-user context and opens its own ``OracleMemoryEndUserSecurityContext`` scope with it, in an
otherwise empty context (nothing else of the caller's, nor of another job, leaks in). The
caller's own scope may have ended by then (a request finished); the job's scope is its own. When
that context can no longer be applied (the database refuses it, e.g. an expired token), the job
fails and writes nothing; the raw write that queued it is kept.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(eq=False)
class Job:
    """One unit of background work for ``key`` (a thread id)."""

    key: str
    run: Callable[[], None]
    security: Any | None
    """The engine-level end-user context of the caller (``None``: it had none)."""
    description: str
    done: threading.Event = field(default_factory=threading.Event)


class BackgroundWork:
    """The background queue of one client."""

    def __init__(self, capacity: int | None = None) -> None:
        self._queue: queue.Queue[Job | None] = queue.Queue(
            maxsize=queue_capacity() if capacity is None else capacity)
        self._lock = threading.Lock()
        self._pending: list[Job] = []
        self._accepting = True
        self._worker: threading.Thread | None = None

    @property
    def accepting(self) -> bool:
        """Whether new work is accepted (``False`` once closing)."""
        return self._accepting

    def submit(self, key: str, run: Callable[[], None], description: str,
               behavior: BackgroundExtractionQueueFullBehavior, put_timeout: float) -> bool:
        """Queue ``run`` in a copy of the caller's context; ``False`` when it was dropped.

        Raises:
            OperationTimeoutError: (a ``TimeoutError``) the queue stayed full for
                ``put_timeout`` seconds under ``WAIT_THEN_RAISE``.
        """
        if not self._accepting:
            LOG.warning("%s not queued: the client is closed", description)
            return False
        job = Job(key, run, active_security_context(), description)
        with self._lock:
            self._pending.append(job)
            self._start_worker()
        wait = behavior is not BackgroundExtractionQueueFullBehavior.DROP
        try:
            self._queue.put(job, block=wait, timeout=put_timeout if wait else None)
        except queue.Full:
            self._forget(job)
            if behavior is BackgroundExtractionQueueFullBehavior.WAIT_THEN_RAISE:
                raise OperationTimeoutError(
                    f"{description} not queued: the background queue stayed full for "
                    f"{put_timeout:g} s (the raw write is kept)") from None
            LOG.warning("%s dropped: the background queue is full (the raw write is kept)",
                        description)
            return False
        return True

    def wait(self, keys: Iterable[str] | None = None, timeout: float | None = None) -> bool:
        """Wait for the work accepted so far (for ``keys``, or all); ``False`` on timeout."""
        wanted = None if keys is None else set(keys)
        with self._lock:
            jobs = [j for j in self._pending if wanted is None or j.key in wanted]
        deadline = None if timeout is None else time.monotonic() + timeout
        for job in jobs:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not job.done.wait(left):
                return False
        return True

    def close(self, timeout: float | None) -> bool:
        """Stop accepting work and wait for what was accepted; ``False`` on timeout."""
        self._accepting = False
        finished = self.wait(None, timeout)
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)  # lets an idle worker end
        return finished

    def _start_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._work, name="oam-background",
                                            daemon=True)
            self._worker.start()

    def _forget(self, job: Job) -> None:
        with self._lock:
            if job in self._pending:
                self._pending.remove(job)
        job.done.set()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                contextvars.Context().run(_run_as, job)
            except Exception:  # a failed job counts as finished; its raw input is kept
                LOG.warning("%s failed", job.description, exc_info=True)
            finally:
                self._forget(job)


def _run_as(job: Job) -> None:
    """Run ``job`` inside its own end-user scope (or none, when it was queued without one)."""
    if job.security is None:
        job.run()
        return
    with OracleMemoryEndUserSecurityContext(job.security):
        job.run()
