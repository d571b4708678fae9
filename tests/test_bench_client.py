"""``bench/client.py`` in a smoke run: it prints its table and recall figures, and cleans up."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import psycopg
import pytest
from oracleagentmemory.core.embedders import HashingEmbedder

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
STOPWORDS = frozenset({
    "the", "a", "an", "is", "are", "do", "does", "did", "they", "their", "them", "what", "which",
    "where", "when", "who", "whose", "how", "can", "of", "in", "on", "to", "for", "with", "and",
    "or", "at", "be", "by", "any", "from", "up"})


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH_DIR))  # the bench imports its sibling ``_embedded``
    spec = importlib.util.spec_from_file_location("bench_client", BENCH_DIR / "client.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def bench_tables(url: str, prefix: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE %s",
                           [prefix.replace("_", r"\_") + "%"]).fetchone()
    assert row is not None
    return int(row[0])


def store_prefix(bench: ModuleType) -> str:
    return f"bc{bench.os.getpid() % 10000}_"


def test_smoke_run_prints_the_table_the_goal_and_both_recalls(
        bench: ModuleType, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--url", pg_url, "--memories", "120", "--users", "2", "--rounds", "4",
                       "--batch", "3", "--queries", "6", "--warmup", "1",
                       "--embedder", "hashing"]) == 0
    out = capsys.readouterr().out
    rows = {m[0]: m[1:] for m in re.findall(
        r"^(add_messages \(3/call\)|add_messages p50|thread\.search p50|thread\.search p95)"
        r"\s+\S+\s+([\d,.]+)\s+([\d,.]+)\s+([\d.]+)x", out, re.M)}
    assert len(rows) == 4, out
    for operation, (client, store, ratio) in rows.items():
        c, s = float(client.replace(",", "")), float(store.replace(",", ""))
        assert c > 0 and s > 0
        expected = s / c if operation.endswith("/call)") else c / s  # msg/s: store rate/client
        assert float(ratio) == pytest.approx(expected, rel=0.02, abs=0.006)
    assert "results differ on 0 of 7 queries" in out  # the client returns the store's records
    assert re.search(r"^goal: client at most 1\.2x the store call for every row: (met|NOT met)$",
                     out, re.M)
    recall = {m[0]: (float(m[1]), float(m[2]), float(m[3])) for m in re.findall(
        r"^(hashing|wordllama)\s+\d+\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)$", out, re.M)}
    assert set(recall) == {"hashing", "wordllama"}
    # the paraphrases share no content word with their facts: meaning must carry the search
    assert recall["wordllama"][1] > recall["hashing"][1] + 0.3
    assert recall["wordllama"][0] > recall["hashing"][0]
    assert recall["wordllama"][2] > recall["hashing"][2] + 0.3  # the exact ranking agrees
    assert re.search(r"^  post-search step \(run_post_search\)\s+[\d.]+$", out, re.M)
    assert "reproduce: .venv/bin/python bench/client.py --memories 120 --users 2" in out
    assert bench_tables(pg_url, store_prefix(bench)) == 0  # every store it made is dropped


def test_the_table_check_sees_a_bench_store_until_it_is_dropped(bench: ModuleType,
                                                                pg_url: str) -> None:
    store = bench.open_store(pg_url, HashingEmbedder(16))
    assert bench_tables(pg_url, store_prefix(bench)) > 0  # positive control for the test above
    bench.drop_store(store)
    assert bench_tables(pg_url, store_prefix(bench)) == 0


def test_paraphrased_queries_share_no_content_word_with_their_facts(bench: ModuleType) -> None:
    def words(text: str) -> set[str]:
        return set(re.findall(r"[a-z0-9']+", text.lower())) - STOPWORDS

    facts = [fact for fact, _ in bench.LABELLED]
    assert len(facts) >= 40 and len(set(facts)) == len(facts)
    assert [(f, q) for f, q in bench.LABELLED if words(f) & words(q)] == []


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--users", "5", "--memories", "4"],
                                  ["--warmup", "-1"], ["--embedder", "nope"]])
def test_bad_options_are_refused(bench: ModuleType, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        bench.main(argv)
    assert raised.value.code == 2
