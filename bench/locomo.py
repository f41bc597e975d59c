"""LoCoMo retrieval benchmark: memtool's own compress / search / context on long conversations.

Each conversation gets a fresh memory root. Every session transcript (the turns only: never the
gold summaries, observations or events stored in the same file) goes through `compress_many` at
its session time; then every question of categories 1-4 goes through `search` and `context`.
A retrieval is right when a hit's session is one of the question's evidence sessions.

Baselines computed on the same questions: BM25 over raw sessions (`bm25_raw`), the embedder's
vectors over raw sessions (`dense_raw`, its model named as `dense_model`) and a 1000-token context of raw 3-turn windows ranked by BM25
(`bm25_windows_context`).

`--typos SEED` misspells one word of 5+ letters in every question (a letter dropped, added, changed
or swapped with its neighbour; never the first letter), the same way for every channel: how search
holds up against a user's typing.

    python bench/locomo.py --data ../shared/bench/locomo-dev [--conversations 26,30] [--out FILE]

One JSON line goes to stdout, progress to stderr. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
import unicodedata
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from memtool import constants as C
from memtool.app import open_memory
from memtool.cache import cache_path
from memtool.context import pack
from memtool.dates import parse_when
from memtool.errors import BadInput
from memtool.memory import Memory, Session
from memtool.models import Entry
from memtool.scaffold import init
from memtool.search.engine import Hit, Query
from memtool.search.fill import fill_vectors
from memtool.store import Store
from memtool.text import STOPWORDS, content_words, count_tokens, stem_words, tokenize

SESSION_RE = re.compile(r"^session_(\d+)$")
EVIDENCE_SESSION_RE = re.compile(r"D\s*:?\s*(\d+)")  # "D3:5", "D8:6; D9:17", "D:11:26"
DIA_ID_RE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
CATEGORIES = (1, 2, 3, 4)  # 5 = adversarial (no answer in the conversation): left out everywhere
KS = (1, 3, 5, 10)
SEARCH_LIMIT = 10
CONTEXT_BUDGET = 1000
CONTEXT_HITS = 8  # hits `Memory.context` asks for (its default `limit`)
WINDOW_TURNS = 3
WINDOW_STRIDE = 3  # non-overlapping windows: overlapping ones would repeat turns inside the budget
MISS_K = 5
OBSERVATION_COVER = 0.6  # share of an observation's content words an entry must hold for it to count as kept
DUMP_TEXT_CHARS = 300
MODES = {"entries": ("entry",), "full": ("entry", "transcript")}
TYPO_WORD_RE = re.compile(r"[A-Za-z]{5,}")
ARTICLES_RE = re.compile(r"\b(?:a|an|the)\b")


# -- data ------------------------------------------------------------------------------------------
@dataclass
class Question:
    text: str
    answer: str
    category: int
    sessions: frozenset[int]
    evidence: list[str]


@dataclass
class Conversation:
    cid: str
    sessions: list[tuple[int, datetime | None, list[str]]]  # (number, time, transcript lines)
    questions: list[Question]
    turns: dict[str, str] = field(default_factory=dict)  # dia_id "D3:5" -> transcript line
    observations: dict[int, list[str]] = field(default_factory=dict)  # session -> the dataset authors' facts of it
    skipped: int = 0  # questions of categories 1-4 without a readable evidence session


def progress(cid: str, msg: str) -> None:
    print(f"[locomo {cid}] {msg}", file=sys.stderr, flush=True)


def turn_line(turn: dict) -> str:
    text = " ".join(str(turn.get("text") or "").split())
    line = f"{turn.get('speaker') or '?'}: {text}"
    caption = " ".join(str(turn.get("blip_caption") or "").split())
    return line + (f" [shares a photo: {caption}]" if caption else "")


def evidence_sessions(evidence) -> frozenset[int]:
    items = evidence if isinstance(evidence, list) else [evidence]
    return frozenset(int(n) for item in items for n in EVIDENCE_SESSION_RE.findall(str(item or "")))


def parse_conversation(cid: str, sample: dict) -> Conversation:
    conv = {**sample, **sample["conversation"]} if isinstance(sample.get("conversation"), dict) else sample
    sessions, turns = [], {}
    for key in sorted((k for k in conv if SESSION_RE.match(k)), key=lambda k: int(SESSION_RE.match(k)[1])):
        items = [t for t in conv[key] or [] if isinstance(t, dict)]
        if not items:
            continue
        n = int(SESSION_RE.match(key)[1])
        when = None
        raw_when = conv.get(f"{key}_date_time")
        if raw_when:
            try:
                when = parse_when(str(raw_when))
            except BadInput:
                progress(cid, f"{key}: cannot read the date {raw_when!r}; compressed as now")
        lines = [turn_line(t) for t in items]
        for t, line in zip(items, lines):
            m = DIA_ID_RE.search(str(t.get("dia_id") or ""))
            if m:
                turns[f"D{int(m[1])}:{int(m[2])}"] = line
        sessions.append((n, when, lines))
    questions, skipped = [], 0
    have = {n for n, _, _ in sessions}
    for qa in sample.get("qa") or []:
        try:
            category = int(qa.get("category"))
        except (TypeError, ValueError):
            continue
        if category not in CATEGORIES:
            continue
        evidence = qa.get("evidence") or []
        evidence = evidence if isinstance(evidence, list) else [evidence]
        gold = frozenset(s for s in evidence_sessions(evidence) if s in have)
        if not gold or "answer" not in qa or not str(qa.get("question") or "").strip():
            skipped += 1
            continue
        questions.append(Question(str(qa["question"]), str(qa["answer"]), category, gold, [str(e) for e in evidence]))
    return Conversation(cid, sessions, questions, turns, session_observations(sample, conv, have), skipped)


def session_observations(sample: dict, conv: dict, have: set[int]) -> dict[int, list[str]]:
    """`session_N_observation` (per speaker, [fact, dia_id] pairs) of each compressed session: the facts
    the dataset's authors wrote down about it, read beside the conversation or under `observation`."""
    pools = [conv, sample.get("observation") if isinstance(sample.get("observation"), dict) else {}]
    out: dict[int, list[str]] = {}
    for n in sorted(have):
        raw = next((pool[f"session_{n}_observation"] for pool in pools if isinstance(pool.get(f"session_{n}_observation"), dict)), {})
        facts = [
            str(item[0])
            for items in raw.values()
            if isinstance(items, list)
            for item in items
            if isinstance(item, (list, tuple)) and item and str(item[0]).strip()
        ]
        if facts:
            out[n] = facts
    return out


def fact_words(text: str) -> set[str]:
    """Content words, stemmed: a fact and an entry share a word however it is inflected."""
    return set(stem_words(content_words(text)))


def observation_coverage(facts: list[str], entry) -> tuple[int, int]:
    """(facts present, facts) for one session's entry: a fact is present when at least
    OBSERVATION_COVER of its content words are in the entry's summary, keywords, decisions, action
    items or entities (the rule of score_entries.py's key-fact coverage)."""
    ents = entry.entities
    text = " ".join([entry.summary, *entry.keywords, *entry.decisions, *entry.action_items, *ents.people, *ents.systems, *ents.dates])
    have = fact_words(text)
    present = 0
    for fact in facts:
        words = fact_words(fact)
        present += bool(words) and len(words & have) / len(words) >= OBSERVATION_COVER
    return present, len(facts)


def with_typo(text: str, rng: random.Random) -> str:
    """`text` with one word of 5+ letters (not a stopword) misspelled by one edit after its first letter."""
    spots = [m for m in TYPO_WORD_RE.finditer(text) if m.group().lower() not in STOPWORDS]
    if not spots:
        return text
    m = rng.choice(spots)
    w, i = m.group(), rng.randrange(1, len(m.group()) - 1)
    edit = rng.choice(("drop", "add", "change") if w[i] == w[i + 1] else ("drop", "add", "change", "swap"))  # 'pp' swapped is no typo
    letter = rng.choice([c for c in "abcdefghijklmnopqrstuvwxyz" if c != w[i].lower()])
    typo = {"drop": w[:i] + w[i + 1 :], "add": w[:i] + letter + w[i:], "change": w[:i] + letter + w[i + 1 :], "swap": w[:i] + w[i + 1] + w[i] + w[i + 2 :]}[
        edit
    ]
    return text[: m.start()] + typo + text[m.end() :]


def load_conversations(data: Path, wanted: set[str] | None = None) -> list[Conversation]:
    """Every conversation in `data` (a folder of .json files, or one file); a file holds one sample or a list."""
    files = sorted(data.glob("*.json"), key=lambda p: (not p.stem.isdigit(), int(p.stem) if p.stem.isdigit() else 0, p.stem)) if data.is_dir() else [data]
    out = []
    for path in files:
        raw = json.loads(path.read_text(encoding="utf-8"))
        samples = raw if isinstance(raw, list) else [raw]
        for i, sample in enumerate(samples):
            cid = str(sample.get("sample_id") or (path.stem if len(samples) == 1 else f"{path.stem}-{i}"))
            cid = cid.removeprefix("conv-")
            if wanted and cid not in wanted and path.stem not in wanted:
                continue
            out.append(parse_conversation(cid, sample))
    return out


# -- metrics ---------------------------------------------------------------------------------------
def first_rank(ranked_sessions: list[int], gold: frozenset[int] | set[int], depth: int = SEARCH_LIMIT) -> int | None:
    """1-based rank of the first hit from a gold session within `depth`, or None."""
    for i, s in enumerate(ranked_sessions[:depth], 1):
        if s in gold:
            return i
    return None


def recall_at(rank: int | None, k: int) -> float:
    return 1.0 if rank is not None and rank <= k else 0.0


def reciprocal_rank(rank: int | None) -> float:
    return 1.0 / rank if rank else 0.0


def normalize(text: str) -> str:
    """SQuAD-style: lowercase, drop punctuation and the articles a/an/the, collapse whitespace."""
    text = "".join(ch for ch in str(text).lower() if not unicodedata.category(ch).startswith("P"))
    return " ".join(ARTICLES_RE.sub(" ", text).split())


def answer_in(answer: str, context: str) -> bool:
    """The normalised answer occurs in the normalised context, on word boundaries."""
    a = normalize(answer)
    return bool(a) and f" {a} " in f" {normalize(context)} "


def summarize(records: list[dict], with_context: bool = True) -> dict:
    """records: {"category", "rank"} (+ "aic" when with_context). Recall/MRR overall and per category."""

    def block(rs: list[dict]) -> dict:
        n = len(rs)

        def mean(values) -> float | None:  # None for an empty category
            return round(sum(values) / n, 4) if n else None

        out = {f"R@{k}": mean(recall_at(r["rank"], k) for r in rs) for k in KS}
        out["MRR"] = mean(reciprocal_rank(r["rank"]) for r in rs)
        if with_context:
            out["answer_in_context"] = mean(r["aic"] for r in rs)
        out["n"] = n
        return out

    res = block(records)
    res["by_category"] = {str(c): block([r for r in records if r["category"] == c]) for c in CATEGORIES}
    return res


def percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2) if values else 0.0


# -- baselines over the raw turns ------------------------------------------------------------------
class RawBM25:
    def __init__(self, texts: list[str]):
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets DEBUG on import
        self.retriever = bm25s.BM25()
        self.retriever.index([tokenize(t) or [""] for t in texts], show_progress=False)
        self.vocab = self.retriever.vocab_dict

    def ranked(self, query: str) -> list[int]:
        """Document indices with a positive score, best first."""
        terms = [t for t in tokenize(query) if t in self.vocab]
        if not terms:
            return []
        scores = np.asarray(self.retriever.get_scores(terms), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")
        return [int(i) for i in order if scores[i] > 0]


def windows(conv: Conversation) -> list[str]:
    out = []
    for _, _, lines in conv.sessions:
        for start in range(0, max(1, len(lines) - WINDOW_TURNS + WINDOW_STRIDE), WINDOW_STRIDE):
            chunk = lines[start : start + WINDOW_TURNS]
            if chunk:
                out.append("\n".join(chunk))
    return out


def window_context(bm25: RawBM25, texts: list[str], query: str, budget: int = CONTEXT_BUDGET) -> str:
    taken: list[str] = []
    for i in bm25.ranked(query):
        if count_tokens("\n\n".join([*taken, texts[i]])) > budget:
            break
        taken.append(texts[i])
    return "\n\n".join(taken)


# -- the run ---------------------------------------------------------------------------------------
def fresh_memory(root: Path, overrides: dict) -> Memory:
    """A bare memory root: `memory init`, minus the Layer-3 templates (the budget goes to retrieval)."""
    init(root)
    for name in C.LAYER3_FILES:
        (root / name).unlink(missing_ok=True)
    return open_memory(root, **{"background_embed": False, **overrides})  # the run fills vectors itself, before any question


def split_memory(mem: Memory, base: Path, overrides: dict) -> Memory:
    """The merged root's entries (their day files, vectors and kept transcripts, byte for byte) split
    between a project root (even sessions) and a personal root (odd sessions) beside it, opened as a
    project with that personal memory (setting personal_root): what `--split` searches."""
    project, personal = fresh_memory(base / "project", overrides).layout, fresh_memory(base / "personal", overrides).layout
    entries = list(mem.store.iter_entries())
    for layout in (project, personal):
        mine = [e for e in entries if (hit_session(e) % 2 == 1) == (layout is personal)]
        Store(layout).write_entries(mine)
        for e in mine:
            for src, dst in ((mem.layout.transcript_file(e.id), layout.transcript_file(e.id)), (mem.layout.embedding_file(e.id), layout.embedding_file(e.id))):
                if src.is_file():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dst)
    split = open_memory(project.root, **{"background_embed": False, **overrides, "personal_root": str(personal.root)})
    for m in split.sources():
        m.view()  # the search cache built from the files, then every document's vector filled, as the merged root's
        filled = fill_vectors(m.layout, split.embedder)
        if filled.left:
            raise SystemExit(f"{m.layout.root}: {filled.left} documents without a vector ({'; '.join(filled.errors)})")
    return split


def context_text(mem: Memory, query: str, mode: str) -> str:
    """`full`: the product's own `Memory.context`. `entries`: the same packer fed entry-only hits."""
    if mode == "full":
        return mem.context(query, budget=CONTEXT_BUDGET).text
    hits = mem.search(Query(text=query, limit=CONTEXT_HITS, kinds=MODES["entries"])).hits
    return pack([], hits, None, CONTEXT_BUDGET, mem.settings.template).text


def hit_session(hit: Hit | Entry) -> int:
    try:
        return int(hit.source_session)
    except ValueError:
        return -1


def drop_passage_vectors(mem: Memory) -> None:
    """The store as it would be if transcripts' passages were never embedded: entries keep their
    vectors (the mean of their passages'), passages are found by their words alone."""
    with closing(sqlite3.connect(cache_path(mem.layout))) as conn, conn:
        conn.execute("DELETE FROM docvecs WHERE id IN (SELECT id FROM docs WHERE kind = 'transcript')")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', 'no-passage-vectors')")
    mem.invalidate()


VARIANT_RE = re.compile(r"^(none|words(\d+))$")


def passage_variant(mem: Memory, variant: str) -> dict:
    """The transcripts' passage vectors replaced as `variant` says (entries keep theirs): `none`, none
    at all; `wordsN`, each passage's vector made from its first N words only (what a cheaper fill
    would embed). Returns what embedding them cost: passages, CPU seconds (every thread), wall seconds."""
    m = VARIANT_RE.match(variant)
    if m is None:
        raise SystemExit(f"--passage-variants: {variant!r} is not none or wordsN")
    with closing(sqlite3.connect(cache_path(mem.layout))) as conn, conn:
        rows = conn.execute("SELECT id, text FROM docs WHERE kind = 'transcript' ORDER BY id").fetchall()
        cost = {"passages": len(rows), "cpu_s": 0.0, "wall_s": 0.0}
        conn.execute("DELETE FROM docvecs WHERE id IN (SELECT id FROM docs WHERE kind = 'transcript')")
        if m.group(2) and rows:
            words = int(m.group(2))
            texts = [" ".join(text.split()[:words]) for _, text in rows]
            t, c = time.perf_counter(), time.process_time()
            vecs = np.asarray(mem.embedder.embed_documents(texts), dtype=np.float32)
            cost["wall_s"], cost["cpu_s"] = round(time.perf_counter() - t, 2), round(time.process_time() - c, 2)
            conn.executemany("INSERT INTO docvecs VALUES (?, ?)", [(i, v.astype("<f2").tobytes()) for (i, _), v in zip(rows, vecs)])
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (f"variant-{variant}",))
    mem.invalidate()
    return cost


def run_conversation(
    conv: Conversation,
    root: Path,
    modes: list[str],
    limit: int | None,
    overrides: dict,
    misses: list[dict] | None,
    passage_vectors: bool = True,
    split_at: Path | None = None,
    variants: tuple[str, ...] = (),
) -> dict:
    mem = fresh_memory(root, overrides)
    t0 = time.perf_counter()
    entries = []
    kept = [0, 0]  # observations present in their session's entry, observations
    for n, when, lines in conv.sessions:
        made = mem.compress_many([Session(text="\n".join(lines), when=when, session=str(n), name=f"session_{n}")]).entries
        entries.extend(made)
        if made and n in conv.observations:
            present, total = observation_coverage(conv.observations[n], made[0])
            kept = [kept[0] + present, kept[1] + total]
    compress_s = time.perf_counter() - t0
    progress(conv.cid, f"compressed {len(conv.sessions)} sessions in {compress_s:.1f} s")
    filled = fill_vectors(mem.layout, mem.embedder)  # every document has its vector before any question (what a compress left to the background fill)
    if filled.left:
        raise SystemExit(f"{conv.cid}: {filled.left} documents without a vector ({'; '.join(filled.errors)})")
    if not passage_vectors:
        drop_passage_vectors(mem)
    split = split_memory(mem, split_at, overrides) if split_at is not None else None
    if split is not None and not passage_vectors:
        for m in split.sources():
            drop_passage_vectors(m)
    same = {m: [] for m in modes}  # per question: the split roots' hits are the merged root's (ids, in order)

    questions = conv.questions[:limit] if limit else conv.questions
    session_nums = [n for n, _, _ in conv.sessions]
    session_texts = ["\n".join(lines) for _, _, lines in conv.sessions]
    bm25 = RawBM25(session_texts)
    win_texts = windows(conv)
    win_bm25 = RawBM25(win_texts)
    svecs = mem.embedder.embed_documents(session_texts)
    qvecs = np.array([mem.embedder.embed_query(q.text) for q in questions]) if questions else np.zeros((0, svecs.shape[1]))

    recs: dict[str, list[dict]] = {
        m: [] for m in [*modes, *(f"{m}_split" for m in modes if split is not None), "bm25_raw", "dense_raw", "bm25_windows_context"]
    }
    latencies: list[float] = []
    split_latencies: list[float] = []  # the first split search builds no cache: split_memory built both
    cpu: dict[str, list[float]] = {"merged": [], "split": []}  # CPU time of each search (less bent by a busy machine than wall time)
    ctx_latencies: list[float] = []
    ctx_tokens: list[int] = []
    first_search_ms = None
    for qi, q in enumerate(questions):
        base = {"category": q.category}
        bm25_rank = first_rank([session_nums[i] for i in bm25.ranked(q.text)], q.sessions)
        dense_order = np.argsort(-(svecs @ qvecs[qi]), kind="stable")
        dense_rank = first_rank([session_nums[i] for i in dense_order], q.sessions)
        recs["bm25_raw"].append({**base, "rank": bm25_rank})
        recs["dense_raw"].append({**base, "rank": dense_rank})
        recs["bm25_windows_context"].append({**base, "rank": None, "aic": answer_in(q.answer, window_context(win_bm25, win_texts, q.text))})
        for mode in modes:
            t, c = time.perf_counter(), time.process_time()
            hits = mem.search(Query(text=q.text, limit=SEARCH_LIMIT, kinds=MODES[mode])).hits
            ms, cpu_ms = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
            if first_search_ms is None:
                first_search_ms = ms  # builds the search cache: reported apart
            else:
                latencies.append(ms)
                cpu["merged"].append(cpu_ms)
            t = time.perf_counter()
            ctx = context_text(mem, q.text, mode)
            ctx_latencies.append((time.perf_counter() - t) * 1000)
            ctx_tokens.append(count_tokens(ctx))
            rank = first_rank([hit_session(h) for h in hits], q.sessions)
            recs[mode].append({**base, "rank": rank, "aic": answer_in(q.answer, ctx)})
            if misses is not None and (rank is None or rank > MISS_K):
                misses.append(miss_record(conv, q, mode, rank, hits, bm25_rank, dense_rank))
            if split is not None:
                t, c = time.perf_counter(), time.process_time()
                apart = split.search(Query(text=q.text, limit=SEARCH_LIMIT, kinds=MODES[mode])).hits
                split_latencies.append((time.perf_counter() - t) * 1000)
                cpu["split"].append((time.process_time() - c) * 1000)
                same[mode].append([h.id for h in apart] == [h.id for h in hits])
                split_rank = first_rank([hit_session(h) for h in apart], q.sessions)
                recs[f"{mode}_split"].append({**base, "rank": split_rank, "aic": answer_in(q.answer, context_text(split, q.text, mode))})
    progress(conv.cid, f"{len(questions)} questions evaluated ({conv.skipped} skipped: no readable evidence session)")
    costs = {}
    if variants:  # the full vectors embedded the same way, for the cost of their passages beside the variants'
        with closing(sqlite3.connect(cache_path(mem.layout))) as conn:
            texts = [t for (t,) in conn.execute("SELECT text FROM docs WHERE kind = 'transcript'")]
        t, c = time.perf_counter(), time.process_time()
        mem.embedder.embed_documents(texts)
        costs["full"] = {"passages": len(texts), "cpu_s": round(time.process_time() - c, 2), "wall_s": round(time.perf_counter() - t, 2)}
    for variant in variants:  # the same questions in `full` mode, the passages' vectors as each variant makes them
        costs[variant] = passage_variant(mem, variant)
        recs[f"full@{variant}"] = [
            {
                "category": q.category,
                "rank": first_rank([hit_session(h) for h in mem.search(Query(text=q.text, limit=SEARCH_LIMIT, kinds=MODES["full"])).hits], q.sessions),
                "aic": answer_in(q.answer, context_text(mem, q.text, "full")),
            }
            for q in questions
        ]
        progress(conv.cid, f"variant {variant}: {costs[variant]}")
    ratios = [e.tokens_original / e.tokens_compressed for e in entries if e.tokens_compressed]
    return {
        "recs": recs,
        "variant_costs": costs,
        "latencies": latencies,
        "ctx_latencies": ctx_latencies,
        "ctx_tokens": ctx_tokens,
        "first_search_ms": first_search_ms,
        "ratios": ratios,
        "observations": kept,
        "compress_s": compress_s,
        "sessions": len(conv.sessions),
        "model": mem.embedder.model,
        "same_hits": same,
        "split_latencies": split_latencies,
        "cpu": cpu,
        "split_personal_entries": sum(m.origin == "personal" for m in split.sources() for _ in m.store.iter_entries()) if split is not None else 0,
    }


def miss_record(conv: Conversation, q: Question, mode: str, rank: int | None, hits: list[Hit], bm25_rank, dense_rank) -> dict:
    ids = [f"D{int(a)}:{int(b)}" for e in q.evidence for a, b in DIA_ID_RE.findall(e)]
    evidence_text = [conv.turns[i] for i in ids if i in conv.turns]
    return {
        "conversation": conv.cid,
        "mode": mode,
        "category": q.category,
        "question": q.text,
        "answer": q.answer,
        "evidence": q.evidence,
        "evidence_sessions": sorted(q.sessions),
        "evidence_text": evidence_text,
        "rank": rank,
        "bm25_raw_rank": bm25_rank,
        "dense_raw_rank": dense_rank,
        "top5": [{"session": h.source_session, "text": h.text[:DUMP_TEXT_CHARS], "passage": h.passage[:DUMP_TEXT_CHARS]} for h in hits[:MISS_K]],
    }


def aggregate(results: list[dict], modes: list[str]) -> dict:
    def recs(name: str) -> list[dict]:
        return [r for res in results for r in res["recs"][name]]

    out: dict = {mode: summarize(recs(mode)) for mode in modes}
    if all(res["recs"].get(f"{m}_split") is not None for res in results for m in modes) and results:
        for mode in modes:
            out[f"{mode}_split"] = summarize(recs(f"{mode}_split"))
            same = [x for res in results for x in res["same_hits"][mode]]
            out[f"{mode}_split"]["same_hits_as_merged"] = round(sum(same) / len(same), 4) if same else None
        out["split_personal_entries"] = sum(res["split_personal_entries"] for res in results)
        out["split_search_p50_ms"] = percentile([x for res in results for x in res["split_latencies"]], 50)
        for name in ("merged", "split"):
            out[f"{name}_search_cpu_p50_ms"] = percentile([x for res in results for x in res["cpu"][name]], 50)
    for name in dict.fromkeys(k for res in results for k in res["recs"] if "@" in k):
        out[name] = summarize(recs(name))
    if any(res["variant_costs"] for res in results):
        costs: dict[str, dict] = {}
        for res in results:
            for v, c in res["variant_costs"].items():
                acc = costs.setdefault(v, {"passages": 0, "cpu_s": 0.0, "wall_s": 0.0})
                acc.update({k: round(acc[k] + c[k], 2) for k in acc})
        for c in costs.values():
            c["passages_per_cpu_s"] = round(c["passages"] / c["cpu_s"], 1) if c["cpu_s"] else None
        out["variant_costs"] = costs
    out["bm25_raw"] = summarize(recs("bm25_raw"), with_context=False)
    out["bm25_windows_context"] = {"answer_in_context": summarize(recs("bm25_windows_context"))["answer_in_context"]}
    out["dense_raw"] = summarize(recs("dense_raw"), with_context=False)
    out["dense_model"] = ",".join(sorted({res["model"] for res in results}))
    ratios = [x for res in results for x in res["ratios"]]
    sessions = sum(res["sessions"] for res in results)
    lat = [x for res in results for x in res["latencies"]]
    ctx_lat = [x for res in results for x in res["ctx_latencies"]]
    tokens = [x for res in results for x in res["ctx_tokens"]]
    firsts = [res["first_search_ms"] for res in results if res["first_search_ms"] is not None]
    out.update(
        compression_ratio=round(sum(ratios) / len(ratios), 3) if ratios else 0.0,
        observation_coverage=round(sum(r["observations"][0] for r in results) / total_obs, 4)
        if (total_obs := sum(r["observations"][1] for r in results))
        else 0.0,
        observations=total_obs,
        compress_ms=round(1000 * sum(res["compress_s"] for res in results) / sessions, 2) if sessions else 0.0,
        search_p50_ms=percentile(lat, 50),
        search_p95_ms=percentile(lat, 95),
        first_search_ms=round(sum(firsts) / len(firsts), 2) if firsts else 0.0,
        context_p50_ms=percentile(ctx_lat, 50),
        context_max_tokens=max(tokens, default=0),
        context_over_budget=sum(t > CONTEXT_BUDGET for t in tokens),
        sessions=sessions,
    )
    return out


def parse_overrides(items: list[str]) -> dict:
    """NAME=VALUE pairs; a VALUE that reads as JSON (0.8, true, [..]) is taken as such, else as text."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects NAME=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="LoCoMo retrieval benchmark for memtool (prints one JSON line).")
    p.add_argument("--data", type=Path, required=True, help="folder of LoCoMo conversation .json files (or one file)")
    p.add_argument("--conversations", default="", help="comma-separated conversation ids (file stems), default all")
    p.add_argument("--mode", choices=("entries", "full", "both"), default="both")
    p.add_argument("--limit-questions", type=int, default=0, help="only the first N questions (categories 1-4) per conversation")
    p.add_argument("--per-conversation", action="store_true", help="add a per-conversation breakdown")
    p.add_argument("--dump-misses", type=Path, help="JSONL of questions whose evidence session is not in the top 5")
    p.add_argument("--out", type=Path, help="also write the JSON line to this file")
    p.add_argument("--workdir", type=Path, help="keep the memory roots here (default: a temp dir, deleted)")
    p.add_argument("--typos", type=int, metavar="SEED", help="misspell one word per question (seeded), for every channel alike")
    p.add_argument("--no-passage-vectors", action="store_true", help="search with the transcripts' passages unembedded (entries keep their vectors)")
    p.add_argument(
        "--passage-variants",
        default="",
        help="comma-separated: after the normal questions, the `full` questions again with the passages' vectors made another way "
        "(none: no passage vectors; wordsN: from each passage's first N words), each with what embedding them cost",
    )
    p.add_argument("--entry-passages", type=int, help=f"passages an entry's vector averages at most (default {C.ENTRY_VECTOR_PASSAGES})")
    p.add_argument(
        "--split",
        action="store_true",
        help="also search each conversation split between two roots, a project (even sessions) and a personal memory (odd), and compare with the merged root",
    )
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=VALUE", help="setting override, e.g. dense_weight=0.8 (repeatable)")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    started = time.perf_counter()
    wanted = {c.strip().removeprefix("conv-") for c in args.conversations.split(",") if c.strip()} or None
    convs = []
    for conv in load_conversations(args.data, wanted):
        if conv.sessions:
            convs.append(conv)
        else:
            progress(conv.cid, "no session with turns; skipped")
    if not convs:
        raise SystemExit(f"no conversations found in {args.data}" + (f" with ids {sorted(wanted)}" if wanted else ""))
    if args.typos is not None:
        rng = random.Random(args.typos)
        for conv in convs:
            for q in conv.questions:
                q.text = with_typo(q.text, rng)
    modes = ["entries", "full"] if args.mode == "both" else [args.mode]
    if args.entry_passages:
        C.ENTRY_VECTOR_PASSAGES = args.entry_passages  # a knob of this run only (memtool/session_vectors.py reads it per call)
    overrides = parse_overrides(args.settings)
    misses: list[dict] | None = [] if args.dump_misses else None
    variants = tuple(v.strip() for v in args.passage_variants.split(",") if v.strip())
    for v in variants:
        if VARIANT_RE.match(v) is None:
            raise SystemExit(f"--passage-variants: {v!r} is not none or wordsN")
    results = []
    with tempfile.TemporaryDirectory(prefix="memtool-locomo-") as tmp:
        base = args.workdir or Path(tmp)
        for conv in convs:
            root = base / f"conv-{conv.cid}"
            if root.exists() and any(root.iterdir()):
                raise SystemExit(f"{root} is not empty; give an empty --workdir")
            split_at = base / f"split-{conv.cid}" if args.split else None
            results.append(
                run_conversation(conv, root, modes, args.limit_questions or None, overrides, misses, not args.no_passage_vectors, split_at, variants)
            )
    out = aggregate(results, modes)
    out["n"] = out["bm25_raw"]["n"]
    out["skipped_questions"] = sum(c.skipped for c in convs)
    out["conversations"] = [c.cid for c in convs]
    if overrides:
        out["settings"] = overrides
    out["entry_passages"], out["passage_vectors"] = C.ENTRY_VECTOR_PASSAGES, not args.no_passage_vectors
    if args.typos is not None:
        out["typos_seed"] = args.typos
    if args.per_conversation:
        out["per_conversation"] = {c.cid: aggregate([r], modes) for c, r in zip(convs, results)}
    out["seconds"] = round(time.perf_counter() - started, 1)
    line = json.dumps(out)
    print(line, flush=True)
    if args.out:
        args.out.write_text(line + "\n", encoding="utf-8")
    if args.dump_misses is not None:
        args.dump_misses.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in misses or []), encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
