"""What the SDK's observability events cost on the hot path, with and without listeners.

An observed method (``@observed(MEMORY_STORE)``, as the store's methods are) and the observed
embedder call (``observability._operation.embed``) are timed against the same undecorated call,
``--calls`` calls a round, best of ``--rounds`` rounds, in three settings:

* ``none``: no listener registered (the default of every SDK user: one context-variable read);
* ``listener``: one listener that ignores what it receives (events built and delivered);
* ``contents``: the same listener asking for contents.

The wrapped calls do nothing, so the figures are the observation's own cost per call, in
nanoseconds; an SDK operation that reaches the database costs hundreds of microseconds.

Usage::

    .venv/bin/python bench/observability.py [--calls 200000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

import numpy as np
import numpy.typing as npt
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.observability import Event, EventListener, register_event_listeners
from oracleagentmemory.observability._operation import MEMORY_STORE, embed, observed

VECTORS = np.zeros((1, 4), dtype=np.float32)


class Plain:
    def get(self, record_type: str, record_id: str) -> None:
        return None


class Observed:
    @observed(MEMORY_STORE)
    def get(self, record_type: str, record_id: str) -> None:
        return None


class Still(IEmbedder):
    @property
    def embedding_dimension(self) -> int:
        return 4

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        return VECTORS


class Ignoring(EventListener):
    def __init__(self, include_contents: bool) -> None:
        self.include_contents = include_contents  # type: ignore[misc]

    def on_event(self, event: Event) -> None:
        return None


def best_ns(call: Callable[[], object], calls: int, rounds: int) -> float:
    """The best round's time per call, in nanoseconds."""
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter_ns()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter_ns() - began) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    plain, watched, embedder = Plain(), Observed(), Still()
    texts = ["a note"]
    base_get = best_ns(lambda: plain.get("memory", "m1"), args.calls, args.rounds)
    base_embed = best_ns(lambda: embedder.embed(texts), args.calls, args.rounds)
    print(f"undecorated: method {base_get:.0f} ns, embed {base_embed:.0f} ns per call")
    settings: dict[str, Callable[[], AbstractContextManager[object]]] = {
        "none": nullcontext,
        "listener": lambda: register_event_listeners([Ignoring(False)]),
        "contents": lambda: register_event_listeners([Ignoring(True)]),
    }
    for name, setting in settings.items():
        calls = args.calls if name == "none" else max(args.calls // 20, 1)
        with setting():
            get = best_ns(lambda: watched.get("memory", "m1"), calls, args.rounds)
            embedded = best_ns(lambda: embed(embedder, texts), calls, args.rounds)
        print(f"{name:>9}: observed method +{get - base_get:.0f} ns, "
              f"observed embed +{embedded - base_embed:.0f} ns per call")


if __name__ == "__main__":
    main()
