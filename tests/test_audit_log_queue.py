"""The audit log's queued writer: events leave the request at once and reach the stream in
order, all of them, by the time the process has exited."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

_EMIT = textwrap.dedent("""
    import json, sys, threading
    from oam_gateway.middleware.request_log import audit_log, configure_audit_log

    configure_audit_log()
    emitted_on = threading.get_ident()
    for number in range({count}):
        audit_log.info(json.dumps({{"n": number}}))
    # The lines are written by another thread, never by the one that logs.
    print("queued-by", emitted_on, file=sys.stderr)
""")


def _run(count: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _EMIT.format(count=count)],
                          capture_output=True, text=True, timeout=60, check=True)


def test_every_event_reaches_standard_output_in_order_by_exit() -> None:
    done = _run(5000)
    lines = done.stdout.splitlines()
    assert [json.loads(line)["n"] for line in lines] == list(range(5000))


def test_no_event_means_no_output() -> None:
    """Positive control for the count above: the writer adds no line of its own."""
    assert _run(0).stdout == ""


def test_the_logging_call_does_not_write_the_line() -> None:
    """The handler on the audit logger queues; the stream is written by the listener."""
    from oam_gateway.middleware.request_log import audit_log, configure_audit_log

    class Recording:
        def __init__(self) -> None:
            self.writers: set[int] = set()
            self.text: list[str] = []

        def write(self, text: str) -> int:
            self.writers.add(threading.get_ident())
            self.text.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    stream = Recording()
    level, propagate = audit_log.level, audit_log.propagate
    handler = configure_audit_log(stream)  # type: ignore[arg-type]
    try:
        audit_log.info('{"n": 1}')
        # The listener writes soon after; wait for the line (no timing asserted).
        for _ in range(1000):
            if stream.text:
                break
            threading.Event().wait(0.01)
        assert "".join(stream.text) == '{"n": 1}\n'
        assert threading.get_ident() not in stream.writers
    finally:  # the audit logger as other tests expect it (their caplog sees its events)
        audit_log.removeHandler(handler)
        audit_log.setLevel(level)
        audit_log.propagate = propagate
