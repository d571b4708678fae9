"""Remembered exact-or-HNSW choices: reused for a while, and never a reason for wrong results."""

from __future__ import annotations

import numpy as np
import pytest
from oracleagentmemory.core import OracleDBMemoryStore
from oracleagentmemory.engines import scan_choices
from oracleagentmemory.engines.postgres import search
from oracleagentmemory.engines.scan_choices import ScanChoices

POSTGRESQL_ONLY = (
    "patches the postgres engine's search module (PostgreSQL's exact-or-HNSW choice)")
"""Why the marked tests do not run on Oracle (``tests/provision/engine_marks.py``)."""


def _load(store: OracleDBMemoryStore, users: dict[str, int]) -> np.ndarray:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((sum(users.values()), 3)).astype(np.float32)
    owners = [user for user, count in users.items() for _ in range(count)]
    store.add([f"m{n}" for n in range(len(owners))], "memory", user_ids=owners,
              embeddings=list(vectors))
    return vectors


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_remembered_choice_is_reused_until_it_expires(
        vector_store: OracleDBMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    _load(vector_store, {"u1": 30, "u2": 5})
    choices: ScanChoices = vector_store._engine.scan_choices  # type: ignore[attr-defined]
    probes = []
    original = search._few_scoped_chunks

    def counting(*args: object, **kwargs: object) -> bool:
        probes.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(search, "_few_scoped_chunks", counting)
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    first = vector_store.search(None, 3, query_vector=query, user_id="u1",
                                exact_user_match=True, record_types={"memory"})
    second = vector_store.search(None, 3, query_vector=query, user_id="u1",
                                 exact_user_match=True, record_types={"memory"})
    assert [r.id for r, _ in first] == [r.id for r, _ in second] and len(first) == 3
    assert len(probes) == 1  # the second search reused the choice
    vector_store.search(None, 3, query_vector=query, user_id="u2", exact_user_match=True,
                        record_types={"memory"})
    assert len(probes) == 2  # another user filter: its own choice
    monkeypatch.setattr(scan_choices, "SCAN_CHOICE_SECONDS", -1.0)
    choices.put(("expired",), True)
    assert choices.get(("expired",)) is None


@pytest.mark.parametrize("remembered", [True, False])
@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_wrong_remembered_choice_still_returns_the_exact_results(
        vector_store: OracleDBMemoryStore, remembered: bool) -> None:
    """Whatever the remembered choice, the results equal a fresh exact search."""
    _load(vector_store, {"u1": 60, "u2": 40})
    query = np.array([0.3, -1.0, 0.2], dtype=np.float32)
    expected = [r.id for r, _ in vector_store.search(
        None, 10, query_vector=query, user_id="u1", exact_user_match=True,
        record_types={"memory"})]
    choices: ScanChoices = vector_store._engine.scan_choices  # type: ignore[attr-defined]
    for key in list(choices._choices):
        choices.put(key, remembered)
    assert choices._choices and all(v[0] is remembered for v in choices._choices.values())
    again = vector_store.search(None, 10, query_vector=query, user_id="u1",
                                exact_user_match=True, record_types={"memory"})
    assert [r.id for r, _ in again] == expected and len(expected) == 10
