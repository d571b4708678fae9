"""Keyword ranking and what a message's retrieval text holds (issue 24: recall on LoCoMo).

PostgreSQL's keyword index analyses English (stemming, stop words) and ranks by BM25 over the
chunks the search can see; a message's chunks carry its role (``"role: text"``) while its stored
content stays the caller's. An existing store gets the English index through the schema upgrade.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
import pytest
from conftest import StoreFactory, new_store_id
from oracleagentmemory.core import SchemaPolicy, SearchStrategy
from oracleagentmemory.core._schema import SchemaRequest, open_schema
from oracleagentmemory.engines import make_engine
from oracleagentmemory.engines.identifiers import store_names

POSTGRESQL_ONLY = (
    "checks PostgreSQL's keyword analysis and BM25 ranking, or alters its schema directly "
    "(Oracle Text ranks with its own analysers)")
"""Why the marked tests do not run on Oracle (``tests/provision/engine_marks.py``)."""


def _ids(results: Sequence[tuple[Any, float]]) -> list[str]:
    return [record.id for record, _ in results]


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_keyword_search_stems_words_and_skips_stop_words(make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    store.add(["Caroline hiked up the mountain trail",
               "when did you go, when did they, did we"], "memory",
              record_ids=["hike", "filler"], user_ids="u1")
    results = store.search("When did Caroline go hiking?", 2, user_id="u1")
    # "hiking" finds "hiked" (one stem), and "when"/"did" weigh nothing.
    assert _ids(results)[0] == "hike"
    # A query of stop words alone matches nothing; a content word still does (positive control).
    assert _ids(store.search("when did they", 2, user_id="u1")) == []
    assert _ids(store.search("mountains", 2, user_id="u1")) == ["hike"]


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_keyword_rank_weights_rare_words_above_repeated_common_ones(
        make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    common = [f"pizza night number {n} with friends" for n in range(8)]
    store.add([*common, "pizza pizza pizza pizza", "a zeppelin ride over the bay"], "memory",
              record_ids=[*(f"c{n}" for n in range(8)), "repeat", "rare"], user_ids="u1")
    results = store.search("pizza zeppelin", 3, user_id="u1")
    assert _ids(results)[0] == "rare"  # the word in one chunk of ten outweighs one in nine
    assert _ids(results)[1] == "repeat"  # among the common word's chunks, the most frequent


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_keyword_statistics_count_only_what_the_search_may_return(
        make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    # Another user's chunks make "zeppelin" common store-wide; a search of u1's records alone
    # counts u1's chunks, where it is rare. (Under the gateway's row-level security a caller's
    # statistics likewise count only rows the caller can read.)
    store.add([f"zeppelin {n}" for n in range(20)], "memory",
              record_ids=[f"o{n}" for n in range(20)], user_ids="other")
    store.add(["pizza pizza pizza", "pizza party", "pizza time", "zeppelin"], "memory",
              record_ids=["p3", "p1", "p2", "z"], user_ids="u1")
    results = store.search("pizza zeppelin", 4, user_id="u1", exact_user_match=True)
    assert _ids(results)[0] == "z"
    assert set(_ids(results)) == {"p3", "p1", "p2", "z"}


def test_a_message_is_found_by_its_speaker_and_keeps_its_content(
        make_store: StoreFactory) -> None:
    store = make_store(search_strategy=SearchStrategy.KEYWORD)
    store.add(["I went to a support group yesterday", "The weather was lovely"], "message",
              record_ids=["m1", "m2"], roles=["Caroline", "Melanie"], user_ids="u1",
              thread_ids=["t1", "t2"])  # apart: a thread's neighbours share their matches
    found = store.search("Caroline", 5, user_id="u1", record_types=["message"])
    assert _ids(found) == ["m1"]
    assert found[0][0].content == "I went to a support group yesterday"
    # Positive control: the text itself is indexed as before.
    assert _ids(store.search("weather", 5, user_id="u1", record_types=["message"])) == ["m2"]
    # Caller-owned chunks (index_texts) stay as given: no role is added to them.
    store.add(["hello"], "message", record_ids=["m3"], roles=["Caroline"], user_ids="u1",
              thread_ids="t3", index_texts=["greeting words"])
    assert "m3" not in _ids(store.search("Caroline", 5, user_id="u1",
                                         record_types=["message"]))


@pytest.mark.not_on_engine("oracle", reason=POSTGRESQL_ONLY)
def test_an_existing_store_is_upgraded_to_the_english_keyword_index(
        make_store: StoreFactory, pg_url: str) -> None:
    store_id = new_store_id()
    engine = make_engine(pg_url)
    try:
        names = store_names(memory_store_id=store_id, table_name_prefix=None, schema_owner=None,
                            fold=engine.fold)
        open_schema(engine, names, SchemaPolicy.CREATE_IF_NECESSARY, None, SchemaRequest(
            vector_dim=None, vector_dim_given=False, search_mode=None,
            search_index_sync="on_commit", retention=None, latest_version=7,
            max_indexed_vector_dim=engine.capabilities.max_indexed_vector_dim))
    finally:
        engine.close()
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"INSERT INTO {store_id}_memory (id, record_type, content) "
                     "VALUES ('m1', 'memory', 'Caroline hiked the trails')")
        conn.execute(f"INSERT INTO {store_id}_record_chunks (record_type, record_id, chunk_no, "
                     "chunk_text) VALUES ('memory', 'm1', 0, 'Caroline hiked the trails')")
    upgraded = make_store(memory_store_id=store_id, search_strategy=SearchStrategy.KEYWORD,
                          schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    assert _ids(upgraded.search("hiking trail", 5)) == ["m1"]
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(f'SELECT search_tsv::text FROM "{store_id}_record_chunks"').fetchone()
        indexes = {r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s",
            [f"{store_id}_record_chunks"]).fetchall()}
    assert row is not None and "'hike'" in row[0] and "'the'" not in row[0]
    assert f"{store_id}_record_chunks_tsv_ix" in indexes
