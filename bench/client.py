"""Overhead of the agent-memory client over the store calls it wraps, and embedder recall.

One store (``--embedder``, WordLlama by default; ``SearchStrategy.VECTOR``) holds ``--memories``
memories (short sentences from a small seeded vocabulary, all of user ``u`` and agent ``a`` unless
``--users`` spreads them), loaded with ``store.add`` and ``VACUUM ANALYZE``d. An
``OracleAgentMemory`` is built over that same store (``store=``) with
``MemoryExtractionConfig(extract_memories=False)``. Then, each pair timed side by side in one
loop, the side that goes first alternating, after untimed warm-up:

* ``add_messages``: ``thread.add_messages([{"role", "content"}, ...])`` of ``--batch`` messages
  next to ``store.add(contents, "message", thread_ids=t, user_ids=u, agent_ids=a, roles=...)``
  of the same contents into another thread of the same user and agent (``--rounds`` calls each);
* ``thread.search``: ``thread.search(q)`` and reading ``formatted_content`` of every result next
  to ``store.search(q, 10, user_id=u, agent_id=a, thread_id=t, exact_user_match=True,
  exact_agent_match=True)`` (``--queries`` queries of three vocabulary words; both embed the
  query). The two must return the same records in the same order; mismatches are counted.

Printed: messages/s and per-call p50 of each side, search p50/p95 of each side, the ratios
(client / store: time per call, i.e. store rate over client rate for ``add_messages``) and the
median of the per-pair ratios (steadier on a busy machine). Goal (issue 10): client at most 1.2x
the store call. Then the client's own search steps, timed apart on the store's candidates of
the same queries (the post-search step, building the results and their ``formatted_content``),
next to the median per-pair difference. ``--profile N`` then runs more client calls under
``cProfile`` and prints the N functions with the most own time, and the client's own frames.

Recall: ``LABELLED`` holds short facts about varied topics, each with a paraphrased query that
shares few words with it. For the hashing embedder and WordLlama, a store (``vector_dim`` from
the embedder, vector search) holds the facts as memories of one user; each query searches that
user's memories (``k=10``) and the bench prints recall@1 and recall@10 (fraction of queries whose
fact is first / in the top 10), the mean reciprocal rank, and the recall@10 of an exact cosine
ranking in numpy (a check of the store's search).

Usage::

    .venv/bin/python bench/client.py [--memories 10000] [--users 1] [--rounds 200] [--batch 10]
                                     [--queries 300] [--warmup 30] [--embedder wordllama]
                                     [--profile N] [--url URL | --data-dir DIR]

Without ``--url`` the embedded PostgreSQL is started in a temporary directory (``--data-dir``:
in that directory, kept) and stopped at the end. The stores are dropped at the end.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import os
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from _embedded import add_server_arguments, bench_server
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core import (
    MemoryExtractionConfig,
    OracleAgentMemory,
    OracleDBMemoryStore,
    SchemaPolicy,
)
from oracleagentmemory.core._postsearch import run_post_search
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.embedders import HashingEmbedder, WordLlamaEmbedder
from oracleagentmemory.core.searchresult import OracleSearchResult
from oracleagentmemory.core.thread import OracleThread
from oracleagentmemory.engines.postgres import names as pg_names
from psycopg import sql

SEED = 20240613
K = 10
GOAL = 1.2
LOAD_BATCH = 2_000
AGENT = "agent-000"
EMBEDDERS = ("wordllama", "hashing")
_ids = itertools.count(1)
ROOT = Path(__file__).resolve().parent.parent

# --- workload -----------------------------------------------------------------------------------
SUBJECTS = ("the user", "my sister", "our team", "the manager", "a friend", "the client",
            "my doctor", "the landlord", "our neighbour", "the teacher")
VERBS = ("prefers", "mentioned", "booked", "cancelled", "bought", "recommended", "forgot",
         "asked about", "complained about", "scheduled")
OBJECTS = ("a table by the window", "the quarterly budget review", "vegetarian lasagna",
           "a flight to Lisbon", "the yoga class", "a new laptop", "the dentist appointment",
           "jazz concert tickets", "the rent increase", "a hiking trip", "green tea",
           "the project deadline", "a birthday cake", "the car insurance", "piano lessons",
           "the kitchen renovation", "a weekend in Rome", "running shoes", "the tax return",
           "a mystery novel")
WHENS = ("on Monday", "last week", "yesterday", "next month", "every morning", "in spring",
         "after lunch", "before the holidays", "on weekends", "tonight")


def sentences(rng: np.random.Generator, count: int) -> list[str]:
    """``count`` short sentences from the seeded vocabulary above."""
    parts = (SUBJECTS, VERBS, OBJECTS, WHENS)
    picks = [rng.integers(0, len(p), count) for p in parts]
    return [" ".join(p[int(i[n])] for p, i in zip(parts, picks, strict=True)).capitalize() + "."
            for n in range(count)]


def queries(rng: np.random.Generator, count: int) -> list[str]:
    """Search texts: an object and a time phrase, sometimes a verb."""
    texts = []
    for _ in range(count):
        words = [OBJECTS[int(rng.integers(0, len(OBJECTS)))],
                 WHENS[int(rng.integers(0, len(WHENS)))]]
        if rng.random() < 0.5:
            words.insert(0, VERBS[int(rng.integers(0, len(VERBS)))])
        texts.append(" ".join(words))
    return texts


LABELLED: tuple[tuple[str, str], ...] = (
    ("The user is allergic to peanuts.", "what nuts can't they eat?"),
    ("Their daughter Maya starts kindergarten in September.", "when does the kid begin school?"),
    ("The user drives a blue Subaru Outback.", "what car do they own?"),
    ("They moved from Chicago to Denver last spring.", "which city did they relocate to?"),
    ("The user works as a pediatric nurse.", "what is their job?"),
    ("They are training for the Boston marathon.", "which running race are they preparing for?"),
    ("The user prefers window seats on flights.", "where do they like to sit on a plane?"),
    ("Their golden retriever Biscuit is seven years old.", "what age is the pet?"),
    ("The user is vegetarian and avoids fish.", "do they eat meat?"),
    ("Their wedding anniversary is on June 14.", "when did they get married?"),
    ("The user plays cello in a community orchestra.", "what instrument do they perform on?"),
    ("They are learning Japanese for a trip to Kyoto.", "which language are they studying?"),
    ("The user's favourite author is Ursula K. Le Guin.", "whose novels do they love reading?"),
    ("They take blood pressure medication every morning.", "do they need daily prescriptions?"),
    ("The user's laptop is a 2021 MacBook Pro.", "what computer do they use?"),
    ("They are saving for a house deposit.", "what big purchase are they putting money aside for?"),
    ("The user dislikes cilantro.", "which herb should be left out of their food?"),
    ("Their mother lives in Lisbon.", "where is their mom based?"),
    ("The user is afraid of heights.", "do they have any phobias?"),
    ("They cycle to the office every day.", "how do they commute?"),
    ("The user supports Arsenal football club.", "which soccer team do they cheer for?"),
    ("Their budget for the new sofa is 800 dollars.", "how much can they spend on a couch?"),
    ("The user has type 1 diabetes.", "do they need insulin?"),
    ("They are lactose intolerant.", "can they have milk or cheese?"),
    ("The user's birthday is March 3.", "when were they born?"),
    ("They speak fluent Portuguese and Spanish.", "what tongues can they converse in?"),
    ("The user has two cats called Salt and Pepper.", "what animals live with them?"),
    ("They graduated from Edinburgh with a physics degree.", "where did they study science?"),
    ("The user prefers tea over coffee.", "what hot drink do they like?"),
    ("They are renovating their kitchen.", "what home improvement project is underway?"),
    ("The user wakes up at 5 am to meditate.", "what is their early routine?"),
    ("Their car insurance renews in November.", "when is the vehicle policy due?"),
    ("The user volunteers at an animal shelter on weekends.", "what charity work do they do?"),
    ("They are planning a honeymoon in Bali.", "where is the post-wedding getaway?"),
    ("The user is colour blind.", "can they distinguish red from green?"),
    ("They use a standing desk because of back pain.", "why do they work upright?"),
    ("The user's preferred programming language is Rust.", "what do they write software in?"),
    ("They grow tomatoes and basil on the balcony.", "what plants are in their garden?"),
    ("The user is a night owl and works best after 10 pm.", "when are they most productive?"),
    ("They broke their left wrist skiing in January.", "what injury did they get on the slopes?"),
    ("The user's landlord is raising the rent.", "is their housing cost going up?"),
    ("They collect vintage vinyl records.", "do they buy old music albums?"),
    ("The user meets the bank about a mortgage on Friday.", "when is the home loan appointment?"),
    ("Their son is allergic to bee stings.", "which insect is dangerous for the boy?"),
    ("The user is left-handed.", "which hand do they write with?"),
    ("The user's old Android phone keeps crashing.", "what is wrong with their mobile?"),
    ("They enjoy hiking in the Scottish Highlands.", "where do they like to trek?"),
    ("The user is a Buddhist.", "what religion do they practise?"),
    ("Their flight to Tokyo departs on the 12th.", "when do they fly to Japan?"),
    ("The user hates loud restaurants.", "what kind of dining places should be avoided?"),
    ("They play chess online every evening.", "which board game do they do at night?"),
    ("The user's favourite colour is teal.", "what hue do they like best?"),
    ("They work remotely for a Berlin startup.", "where is their employer located?"),
    ("The user gets migraines from bright screens.", "what triggers their headaches?"),
    ("Their grandmother turns ninety next week.", "whose big birthday is coming up?"),
)
"""(fact, paraphrased query) pairs: the query should find its fact."""


def make_embedder(name: str) -> IEmbedder:
    return WordLlamaEmbedder() if name == "wordllama" else HashingEmbedder()


# --- stores -------------------------------------------------------------------------------------
def open_store(url: str, embedder: IEmbedder) -> OracleDBMemoryStore:
    store_id = f"bc{os.getpid() % 10000}_{next(_ids)}"
    return OracleDBMemoryStore(embedder, url, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                               vector_dim=embedder.embedding_dimension, memory_store_id=store_id,
                               search_strategy=SearchStrategy.VECTOR)


def drop_store(store: OracleDBMemoryStore) -> None:
    with store._engine.session(store._names) as session:  # benchmark cleanup, not public API
        session.drop_store()
    store.close()


def user_name(n: int) -> str:
    return f"user-{n:03d}"


def load_memories(store: OracleDBMemoryStore, count: int, users: int) -> float:
    """``count`` memories of agent ``AGENT`` spread over ``users`` users; returns seconds."""
    rng = np.random.default_rng(SEED)
    start = time.perf_counter()
    for offset in range(0, count, LOAD_BATCH):
        size = min(LOAD_BATCH, count - offset)
        store.add(sentences(rng, size), "memory",
                  user_ids=[user_name(n % users) for n in range(offset, offset + size)],
                  agent_ids=AGENT)
        done = offset + size
        print(f"\r  store.add {done:,} memories ({done / (time.perf_counter() - start):,.0f} "
              "rec/s)", end="", flush=True)
    seconds = time.perf_counter() - start
    print(f" in {seconds:.1f} s", flush=True)
    return seconds


def vacuum_analyze(url: str, store: OracleDBMemoryStore) -> None:
    """Fresh statistics for the planner (else the first queries after a load plan blind)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for logical in ("memory", "record_chunks", "message", "thread"):
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(
                pg_names.table(store._names, logical)))


# --- measurement --------------------------------------------------------------------------------
@dataclass
class Pair:
    """Seconds per call of the client and the store side, one entry per timed pair."""

    client: list[float] = field(default_factory=list)
    store: list[float] = field(default_factory=list)

    def ratios(self) -> list[float]:
        return [c / s for c, s in zip(self.client, self.store, strict=True)]


def alternate(rounds: int, warmup: int, client: Callable[[int], Any],
              store: Callable[[int], Any]) -> Pair:
    """Run ``client(n)`` and ``store(n)`` side by side ``warmup + rounds`` times, the side going
    first alternating; time the last ``rounds`` pairs."""
    pair = Pair()
    for n in range(warmup + rounds):
        sides = [(client, pair.client), (store, pair.store)]
        if n % 2:
            sides.reverse()
        for call, times in sides:
            start = time.perf_counter()
            call(n)
            elapsed = time.perf_counter() - start
            if n >= warmup:
                times.append(elapsed)
    return pair


def measure_add(client: OracleAgentMemory, user: str, rounds: int, warmup: int,
                batch: int) -> tuple[Pair, Callable[[int], Any]]:
    """``thread.add_messages`` next to ``store.add`` of the same messages (another thread)."""
    store = client.store
    client_thread = client.create_thread(user_id=user, agent_id=AGENT)
    store_thread = client.create_thread(user_id=user, agent_id=AGENT)
    texts = sentences(np.random.default_rng(SEED + 1), batch * (warmup + rounds))
    roles = ["user" if n % 2 == 0 else "assistant" for n in range(batch)]

    def contents(n: int) -> list[str]:
        start = (n % (warmup + rounds)) * batch
        return texts[start:start + batch]

    def client_call(n: int) -> Any:
        return client_thread.add_messages(
            [{"role": r, "content": c} for r, c in zip(roles, contents(n), strict=True)])

    def store_call(n: int) -> Any:
        return store.add(contents(n), "message", thread_ids=store_thread.thread_id,
                         user_ids=user, agent_ids=AGENT, roles=roles)

    return alternate(rounds, warmup, client_call, store_call), client_call


@dataclass
class SearchRun:
    pair: Pair
    mismatches: int
    hits: float
    client_call: Callable[[int], Any]


def measure_search(client: OracleAgentMemory, thread: OracleThread, texts: list[str],
                   warmup: int) -> SearchRun:
    """``thread.search`` + ``formatted_content`` next to ``store.search`` with the same scope."""
    store = client.store
    client_ids: dict[int, list[str | None]] = {}
    store_ids: dict[int, list[str]] = {}

    def client_call(n: int) -> Any:
        results = thread.search(texts[n % len(texts)])
        rendered = [r.formatted_content for r in results]
        client_ids[n] = [r.id for r in results]
        return rendered

    def store_call(n: int) -> Any:
        found = store.search(texts[n % len(texts)], K, user_id=thread.user_id,
                             agent_id=thread.agent_id, thread_id=thread.thread_id,
                             exact_user_match=True, exact_agent_match=True)
        store_ids[n] = [record.id for record, _ in found]
        return found

    pair = alternate(len(texts) - warmup, warmup, client_call, store_call)
    mismatches = sum(client_ids[n] != store_ids[n] for n in client_ids)
    hits = statistics.mean(len(v) for v in store_ids.values())
    return SearchRun(pair, mismatches, hits, client_call)


CLIENT_FRAMES = (r"oracleagentmemory/core/(thread|oracleagentmemory|_client_search|_postsearch|"
                 r"_messages|_tokens|_xmltext|searchresult)\.py|asyncio/(runners|base_events)\.py")
"""The client's own modules (and the event loop its search runs), for the profile's second view."""


def search_pieces(client: OracleAgentMemory, thread: OracleThread, texts: list[str],
                  pair: Pair) -> dict[str, float]:
    """Median ms of the client's own search steps, timed apart (interleaved) on the store's
    candidates for the same queries, next to the median per-pair difference client - store."""
    store = client.store
    found = [store.search(text, K, user_id=thread.user_id, agent_id=thread.agent_id,
                          thread_id=thread.thread_id, exact_user_match=True,
                          exact_agent_match=True) for text in texts]
    config = thread._search_config  # what thread.search applies (None: no configuration)
    steps: dict[str, Callable[[int], Any]] = {
        "post-search step (run_post_search)": lambda n: run_post_search(config, texts[n],
                                                                        found[n]),
        f"{K} OracleSearchResult + formatted_content": lambda n: [
            OracleSearchResult(d, r).formatted_content for r, d in found[n]],
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    for n in range(len(texts)):
        order = list(steps.items())[::-1 if n % 2 else 1]
        for name, step in order:
            start = time.perf_counter()
            step(n)
            times[name].append((time.perf_counter() - start) * 1e3)
    measured = {name: statistics.median(v) for name, v in times.items()}
    overhead = statistics.median(c - s for c, s in zip(pair.client, pair.store, strict=True))
    rest = overhead * 1e3 - sum(measured.values())
    return {"client - store, median per pair": overhead * 1e3, **measured,
            "rest (the difference: scope, arguments, noise)": rest}


def profile(calls: Sequence[tuple[str, Callable[[int], Any]]], repeat: int, top: int) -> None:
    """Run each client call ``repeat`` more times under cProfile; print the top entries by own
    time, then the client's own frames by cumulative time (where the wrapper's time goes)."""
    for name, call in calls:
        profiler = cProfile.Profile()
        profiler.enable()
        for n in range(repeat):
            call(n)
        profiler.disable()
        for title, sort, restriction in (("all functions, by own time", "tottime", ()),
                                         ("client frames, by cumulative time", "cumulative",
                                          (CLIENT_FRAMES,))):
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats(sort).print_stats(*restriction, top)
            print(f"\ncProfile of {repeat} x {name} (client side), {title}, top {top}:")
            lines = out.getvalue().splitlines()
            start = next((i for i, ln in enumerate(lines) if "ncalls" in ln), 0)
            print("\n".join("  " + ln.replace(str(ROOT), "") for ln in lines[start:]
                             if ln.strip()))


# --- recall -------------------------------------------------------------------------------------
@dataclass
class Recall:
    embedder: str
    dim: int
    at1: float
    at10: float
    mrr: float
    exact_at10: float
    """recall@10 of the exact cosine ranking (numpy), as a check of the store's search."""


def measure_recall(url: str, name: str) -> Recall:
    """Recall of ``LABELLED`` queries against their facts, stored as one user's memories."""
    embedder = make_embedder(name)
    store = open_store(url, embedder)
    try:
        facts = [fact for fact, _ in LABELLED]
        ids = store.add(facts, "memory", user_ids="recall-user")
        vacuum_analyze(url, store)
        ranks = []
        for fact_id, (_, query) in zip(ids, LABELLED, strict=True):
            found = [record.id for record, _ in store.search(
                query, K, user_id="recall-user", exact_user_match=True,
                record_types={"memory"})]
            ranks.append(found.index(fact_id) + 1 if fact_id in found else None)
    finally:
        drop_store(store)
    return Recall(name, embedder.embedding_dimension,
                  sum(r == 1 for r in ranks) / len(ranks),
                  sum(r is not None for r in ranks) / len(ranks),
                  statistics.mean(1 / r if r else 0.0 for r in ranks), exact_recall(embedder))


def exact_recall(embedder: IEmbedder) -> float:
    """recall@10 of ``LABELLED`` ranked by exact cosine similarity (unit vectors: dot)."""
    facts = embedder.embed([fact for fact, _ in LABELLED])
    asked = embedder.embed([query for _, query in LABELLED], is_query=True)
    order = np.argsort(-(asked @ facts.T), axis=1, kind="stable")[:, :K]
    return float(np.mean([n in order[n] for n in range(len(LABELLED))]))


# --- report -------------------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


@dataclass
class Row:
    operation: str
    unit: str
    client: float
    store: float
    ratio: float
    pair_ratio: float


def table_rows(add: Pair, batch: int, search: Pair) -> list[Row]:
    add_rate = (batch * len(add.client) / sum(add.client), batch * len(add.store) / sum(add.store))
    add_median = statistics.median(add.ratios())
    rows = [Row(f"add_messages ({batch}/call)", "msg/s", add_rate[0], add_rate[1],
                add_rate[1] / add_rate[0], add_median),
            Row("add_messages p50", "ms", pct(add.client, 50) * 1e3, pct(add.store, 50) * 1e3,
                pct(add.client, 50) / pct(add.store, 50), add_median)]
    search_median = statistics.median(search.ratios())
    for q in (50, 95):
        c, s = pct(search.client, q) * 1e3, pct(search.store, q) * 1e3
        rows.append(Row(f"thread.search p{q}", "ms", c, s, c / s, search_median))
    return rows


def print_table(rows: list[Row]) -> bool:
    print()
    print("client: thread.add_messages / thread.search + formatted_content of every result")
    print("store:  store.add(contents, 'message', ...) / store.search(q, 10, same scope)")
    print("ratio:  client time / store time (for msg/s: store rate / client rate); "
          "pair median: median of the per-pair ratios")
    header = (f"{'operation':<26} {'unit':>5} {'client':>10} {'store':>10} {'ratio':>7} "
              f"{'pair median':>11}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r.operation:<26} {r.unit:>5} {r.client:>10,.2f} {r.store:>10,.2f} "
              f"{r.ratio:>6.2f}x {r.pair_ratio:>10.2f}x")
    print("-" * len(header))
    met = all(r.ratio <= GOAL for r in rows)
    print(f"goal: client at most {GOAL}x the store call for every row: "
          f"{'met' if met else 'NOT met'}")
    return met


def print_pieces(pieces: dict[str, float]) -> None:
    print()
    print("where the client's search time goes (median ms per call; the steps timed apart on the "
          "store's candidates of the same queries):")
    for name, ms in pieces.items():
        print(f"  {name:<44} {ms:7.3f}")


def print_recall(results: list[Recall]) -> None:
    print()
    print(f"recall on {len(LABELLED)} labelled (fact, paraphrased query) pairs, the facts "
          f"stored as one user's memories, vector search, k={K} (chance recall@10 "
          f"{K / len(LABELLED):.2f}):")
    header = (f"{'embedder':<12} {'dim':>4} {'recall@1':>9} {'recall@10':>10} {'MRR':>6} "
              f"{'exact recall@10':>15}")
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r.embedder:<12} {r.dim:>4} {r.at1:>9.3f} {r.at10:>10.3f} {r.mrr:>6.3f} "
              f"{r.exact_at10:>15.3f}")
    print("-" * len(header))
    print("exact recall@10: the same queries ranked by exact cosine similarity in numpy (a check "
          "of the store's search)")


def reproduce_command(args: argparse.Namespace) -> str:
    parts = [".venv/bin/python bench/client.py", f"--memories {args.memories}",
             f"--users {args.users}", f"--rounds {args.rounds}", f"--batch {args.batch}",
             f"--queries {args.queries}", f"--warmup {args.warmup}",
             f"--embedder {args.embedder}"]
    if args.profile:
        parts.append(f"--profile {args.profile}")
    if args.data_dir:
        parts.append(f"--data-dir {args.data_dir}")
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000,
                        help="memories in the searched store (default 10000)")
    parser.add_argument("--users", type=int, default=1,
                        help="users the memories are spread over; the measured thread's user "
                             "is user-000 (default 1: all of them are its)")
    parser.add_argument("--rounds", type=int, default=200,
                        help="timed add_messages calls per side (default 200)")
    parser.add_argument("--batch", type=int, default=10, help="messages per call (default 10)")
    parser.add_argument("--queries", type=int, default=300,
                        help="timed searches per side (default 300)")
    parser.add_argument("--warmup", type=int, default=30,
                        help="untimed pairs before each measurement (default 30)")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="wordllama",
                        help="embedder of the measured store (default wordllama)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile the client calls and print the top N functions")
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    if (min(args.memories, args.users, args.rounds, args.batch, args.queries) < 1
            or args.warmup < 0 or args.profile < 0 or args.users > args.memories):
        parser.error("--memories, --users, --rounds, --batch and --queries must be positive "
                     "(--users at most --memories); --warmup and --profile not negative")
    began = time.perf_counter()
    with bench_server(args.url, args.data_dir) as url:
        user = user_name(0)
        print(f"{args.memories:,} memories over {args.users} user(s) ({user} owns "
              f"{len(range(0, args.memories, args.users)):,}), embedder {args.embedder}, "
              f"k={K}; add_messages: {args.rounds} timed calls of {args.batch} per side, "
              f"search: {args.queries} timed queries per side, {args.warmup} warm-up pairs "
              f"each; {os.cpu_count()} CPUs", flush=True)
        store = open_store(url, make_embedder(args.embedder))
        try:
            load_memories(store, args.memories, args.users)
            vacuum_analyze(url, store)
            client = OracleAgentMemory(
                store=store,
                memory_extraction_config=MemoryExtractionConfig(extract_memories=False))
            try:
                thread = client.create_thread(user_id=user, agent_id=AGENT)
                texts = queries(np.random.default_rng(SEED + 2), args.warmup + args.queries)
                search = measure_search(client, thread, texts, args.warmup)
                print(f"  search: {search.hits:.1f} results per query; client and store "
                      f"results differ on {search.mismatches} of {len(texts)} queries "
                      "(warm-up included)",
                      flush=True)
                add, add_call = measure_add(client, user, args.rounds, args.warmup, args.batch)
                print_table(table_rows(add, args.batch, search.pair))
                print_pieces(search_pieces(client, thread, texts, search.pair))
                if args.profile:
                    profile([("thread.search + formatted_content", search.client_call),
                             (f"thread.add_messages of {args.batch}", add_call)],
                            max(args.rounds, args.queries) // 2 or 1, args.profile)
            finally:
                client.close()
        finally:
            drop_store(store)
        print_recall([measure_recall(url, name) for name in ("hashing", "wordllama")])
        print(f"\ntotal run time {time.perf_counter() - began:.0f} s")
        print(f"reproduce: {reproduce_command(args)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
