"""Turn windows and speaker names in the keyword ranking of messages (issue 24, item 2).

A message is scored with the matching messages up to two turns either side of it in its thread
(weights 1, 1/2, 1/4), so an answer that repeats none of the question's words is found next to
the turn that does; a message whose role the query names ranks above an equal one. Neighbours
obey every filter of the search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from conftest import StoreFactory
from oracleagentmemory.core import OracleDBMemoryStore, SearchStrategy

POSTGRESQL_ONLY = "checks PostgreSQL's keyword ranking of messages (Oracle Text ranks alone)"

CONVERSATION = [
    ("Melanie", "How was your week?"),
    ("Caroline", "Busy, the kids kept me running all week long"),
    ("Melanie", "Did you finally go to the pottery class?"),
    ("Caroline", "Yes, last Saturday, and I loved every minute"),
    ("Melanie", "That sounds wonderful"),
    ("Caroline", "It was calm and quiet there"),
    ("Melanie", "Shall we have lunch on Friday?"),
]
"""One thread: only turn 2 names the pottery class; turn 3 answers it."""


def _ids(results: Sequence[tuple[Any, float]]) -> list[str]:
    return [record.id for record, _ in results]


def _conversation(store: OracleDBMemoryStore, thread: str = "t1", prefix: str = "m",
                  user: str = "u1", **options: Any) -> list[str]:
    ids = [f"{prefix}{n}" for n in range(len(CONVERSATION))]
    store.add([text for _, text in CONVERSATION], "message", record_ids=ids,
              roles=[role for role, _ in CONVERSATION], user_ids=user, thread_ids=thread,
              **options)
    return ids


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_an_answer_without_the_query_words_is_found_next_to_the_question(
        make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    _conversation(store)
    found = _ids(store.search("pottery class", 10, user_id="u1", record_types=["message"]))
    # The matching turn first, then its neighbours by distance: the answer (one turn after)
    # and the turn before it, then the turns two away; nothing further away.
    assert found[0] == "m2"
    assert set(found[1:3]) == {"m1", "m3"}
    assert set(found[3:]) == {"m0", "m4"}
    # Positive control: the turns three away from the only match are not reached.
    assert "m5" not in found and "m6" not in found


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_neighbour_ranks_below_a_turn_that_matches_itself(make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    _conversation(store)
    store.add(["Pottery is my favourite class"], "message", record_ids=["other"],
              roles=["Jon"], user_ids="u1", thread_ids="t2")
    found = _ids(store.search("pottery class", 10, user_id="u1", record_types=["message"]))
    assert found.index("other") < found.index("m3")
    assert found.index("m2") < found.index("m3")


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_neighbours_come_from_the_same_thread_and_obey_the_filters(
        make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    _conversation(store, metadata=[{"keep": True}] * len(CONVERSATION))
    # Another thread of the same user, and another user's thread: no turn there matches.
    store.add(["Good morning", "Morning!"], "message", record_ids=["x0", "x1"],
              roles=["Jon", "Gina"], user_ids="u1", thread_ids="t3")
    _conversation(store, thread="t9", prefix="o", user="u2")
    store.update("message", "m3", metadata={"keep": False})
    mine: dict[str, Any] = {"user_id": "u1", "exact_user_match": True,
                            "record_types": ["message"]}
    found = _ids(store.search("pottery class", 10, **mine))
    assert "m3" in found and not {"x0", "x1"} & set(found)
    assert not any(i.startswith("o") for i in found)
    # A metadata filter applies to the neighbours too.
    kept = _ids(store.search("pottery class", 10, **mine,
                             metadata_filter={"keep": True}))
    assert "m3" not in kept and "m1" in kept
    # Another user's search has its own windows; a thread scope keeps them in that thread.
    theirs = _ids(store.search("pottery class", 10, user_id="u2", exact_user_match=True,
                               record_types=["message"]))
    assert theirs[0] == "o2" and "o3" in theirs and not any(i.startswith("m") for i in theirs)
    other_thread = _ids(store.search("pottery class", 10, thread_id="t3",
                                     exact_thread_match=True, record_types=["message"]))
    assert other_thread == []


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_message_whose_speaker_the_query_names_ranks_first(make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    # As many words in both chunks ("Melanie: Caroline adopted..." and "Caroline: I
    # adopted..."): BM25 ties them, and a tie breaks by id, "a" first.
    store.add(["Caroline adopted a puppy", "I adopted a puppy today"], "message",
              record_ids=["a", "b"], roles=["Melanie", "Caroline"], user_ids="u1",
              thread_ids=["t1", "t2"])
    options: dict[str, Any] = {"user_id": "u1", "record_types": ["message"]}
    assert _ids(store.search("What did Caroline adopt?", 2, **options)) == ["b", "a"]
    # Positive control: unnamed, the tie breaks by id.
    assert _ids(store.search("Who adopted a puppy?", 2, **options)) == ["a", "b"]


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_windows_apply_to_messages_only_and_every_arm_still_ranks(
        make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    _conversation(store)
    store.add(["Caroline's pottery class is on Saturdays", "unrelated note"], "memory",
              record_ids=["fact1", "note"], user_ids="u1")
    found = _ids(store.search("pottery class", 10, user_id="u1"))
    assert "fact1" in found and "m2" in found and "m3" in found
    assert "note" not in found  # a memory has no neighbours


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_a_message_from_the_month_the_query_names_ranks_first(make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    # The same words, sent in January, March and May 2023, in three threads: BM25 ties them,
    # and a tie breaks by id, "a" (January) first.
    store.add(["I bought a kayak"] * 3, "message", record_ids=["a", "b", "c"],
              roles=["Gina"] * 3, user_ids="u1", thread_ids=["t1", "t2", "t3"],
              timestamps=["2023-01-10T10:00:00+00:00", "2023-03-01T10:00:00+00:00",
                          "2023-05-03T10:00:00+00:00"])

    def first(query: str) -> str:
        return _ids(store.search(query, 3, user_id="u1", record_types=["message"]))[0]

    assert first("What did Gina buy on 1 March, 2023?") == "b"
    assert first("What did Gina buy in March?") == "b"
    assert first("What did Gina buy on May 3?") == "c"
    # Positive controls: another year, no month, or "may" as a verb leave the tie to the id.
    assert first("What did Gina buy in March 2022?") == "a"
    assert first("What did Gina buy?") == "a"
    assert first("What may Gina buy in kayak shops?") == "a"
