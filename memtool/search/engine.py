"""Query the derived index: filter, score two channels, fuse, group chunks under their entry.

A transcript chunk that matches returns its entry, with the chunk as the entry's best passage.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import islice
from typing import Callable, Iterable, Iterator, Mapping

import numpy as np

from memtool import constants as C
from memtool.dates import mentioned_periods
from memtool.search.cues import asked_cues
from memtool.search.read import IMPORTANCE_CODE, CacheView
from memtool.search.semantic import rescore, run_starts, sibling_sums
from memtool.search.typos import Terms
from memtool.search.union import UnionView

CHANNEL_DEPTH = 200  # candidates taken from each channel before fusion
MAX_PASSAGES = 3  # matching transcript passages kept per hit (the context packer may show them)
DATE_MATCH_FLOOR = 0.05  # date_match: documents less close to the named date than this (~3 windows out) gain nothing
NO_DECAY_IMPORTANCE = min(IMPORTANCE_CODE[i] for i in C.LIFECYCLE_EXEMPT_IMPORTANCE)  # this and above: no recency decay


@dataclass
class Query:
    text: str
    limit: int = 5
    kinds: tuple[str, ...] = ("entry", "transcript", "log", "memory")
    since: datetime | None = None
    until: datetime | None = None
    topic: str | None = None
    min_importance: str | None = None
    trusted_only: bool = False
    archive: bool = False  # also search memory/archive/ (a second cache over live + archived files)
    latest_only: bool = False  # leave out an entry when the newer one superseding it is a hit (the context bundle)


@dataclass
class Hit:
    id: str
    kind: str  # entry | log | memory
    score: float
    source_session: str
    timestamp: str
    text: str  # the entry summary, or the Markdown chunk
    passage: str = ""  # best matching raw transcript passage, when the match came from it
    passages: list[str] = field(default_factory=list)  # further matching passages of the same entry, best first
    ref: str = ""  # file#line of the best matching document
    trusted: bool = True
    channels: dict = field(default_factory=dict)
    superseded_by: str = ""  # id of a newer entry that supersedes this one (ranked above it when both match)
    newer_action_items: list[str] = field(default_factory=list)  # the open items of that newer entry (`Memory.search` fills them)
    newer_trusted: bool = True  # whether that newer entry's text is trusted
    decisions: list[str] = field(default_factory=list)  # an entry hit's own decisions and open items, where the context shows them
    action_items: list[str] = field(default_factory=list)
    origin: str = "project"  # the memory it came from: "project" (the root searched) or "personal" (memtool.search.union)
    private: bool = False  # from a root's private entries and log lines (memory/.private: never in git, nor a backup or export)

    @property
    def label(self) -> str:
        return origin_label(self.origin, self.private)


def origin_label(origin: str, private: bool) -> str:
    """How search and the context mark what is not of the project's shared files: "personal", "private", "personal, private" ("" otherwise)."""
    return ", ".join([*(["personal"] * (origin == "personal")), *(["private"] * private)])


@dataclass
class Weights:
    bm25: float = 1.0
    dense: float = 0.0
    dense_fallback: bool = True
    rrf_k: int = 60
    recency_half_life_days: float = 0.0
    access_boost: float = 0.0  # score x (1 + access_boost * ln(1 + times the entry was returned before))
    date_boost: float = 0.0  # BM25 x (1 + date_boost * closeness to a date the query names)
    date_match: float = 0.0  # + date_match x the best word-match score x closeness to a date the query names
    date_window_days: float = 7.0  # closeness falls to 1/e this many days outside the named period
    answer_cue_boost: float = 0.0  # BM25 x (1 + boost) for documents stating the time / duration a query asks for
    sibling_weight: float = 0.0  # an entry's best passage + w x its second + w^2 x its third (same entry)
    typo_weight: float = 0.0  # weight of the indexed words searched for a query word no document holds (0: none)
    semantic: float = 0.0  # word-matched results re-scored: lexical / best + semantic x z(best cosine) (memtool.search.semantic)


def allowed_mask(index: CacheView | UnionView, q: Query) -> np.ndarray:
    """The documents `q` may return (read-only): alive (not deleted since, nor archived unless asked
    for), of its kinds, in its dates, of its importance and trust."""
    mask = index.alive_of_kinds(tuple(q.kinds))  # not to be changed in place: the index keeps it
    if q.since is not None:
        mask = mask & (index.ts >= q.since.timestamp())
    if q.until is not None:
        mask = mask & (index.ts < q.until.timestamp())
    if q.min_importance:
        mask = mask & (index.importance >= IMPORTANCE_CODE[q.min_importance])
    if q.trusted_only:
        mask = mask & index.trusted
    return mask


def date_closeness(ts: np.ndarray, periods: list, window_days: float) -> np.ndarray:
    """1 inside a period the query names, exp(-days outside / window) around it; the closest period counts."""
    best = np.zeros(ts.shape, dtype=np.float64)
    for start, end in periods:
        gap = np.maximum(start.timestamp() - ts, 0.0) + np.maximum(ts - end.timestamp(), 0.0)
        np.maximum(best, np.exp(-gap / (86400.0 * window_days)), out=best)
    return best


def with_dates(bm25: np.ndarray, ts: np.ndarray, periods: list, w: Weights, allowed: np.ndarray) -> np.ndarray:
    """A query that names a date: word-match scores x (1 + date_boost x closeness to it), then every
    document near it gains date_match x the best score (1 when no word matched) x its closeness, so
    that what was written then is found even when its words differ ("what did we do last Tuesday?")."""
    if w.date_boost > 0:
        hit = np.flatnonzero(bm25)
        bm25[hit] *= 1.0 + w.date_boost * date_closeness(ts[hit], periods, w.date_window_days)
    if w.date_match > 0:
        reach = -86400.0 * w.date_window_days * math.log(DATE_MATCH_FLOOR)  # closeness >= the floor
        inside = np.zeros(ts.shape, dtype=bool)
        for start, end in periods:
            inside |= (ts >= start.timestamp() - reach) & (ts <= end.timestamp() + reach)
        near = np.flatnonzero(inside)
        top = float(bm25[allowed].max())
        bm25[near] += (w.date_match * (top if top > 0 else 1.0) * date_closeness(ts[near], periods, w.date_window_days)).astype(np.float32)
    return bm25


def top_docs(scores: np.ndarray, allowed: np.ndarray, depth: int) -> np.ndarray:
    """The `depth` best allowed docs with a positive score in one channel, best first (a doc's rank is its place)."""
    cand = np.flatnonzero(allowed & (scores > 0))
    if cand.size > depth:
        cand = cand[np.argpartition(-scores[cand], depth - 1)[:depth]]
    return cand[np.argsort(-scores[cand], kind="stable")]


def weighted_rrf(channels: list[tuple[np.ndarray, float]], k: int) -> dict[int, float]:
    """score(d) = sum over channels (docs best first, weight) of weight / (k + rank of d in that channel)."""
    fused: dict[int, float] = {}
    for docs, weight in channels:
        if weight <= 0:
            continue
        for r, d in enumerate(docs.tolist(), 1):
            fused[d] = fused.get(d, 0.0) + weight / (k + r)
    return fused


def with_sibling_support(docs: np.ndarray, scores: np.ndarray, group: np.ndarray, weight: float) -> np.ndarray:
    """Re-rank a channel's docs (best first) so that a result's best document also counts its next
    best ones (`sibling_sums`). An entry whose transcript matches in several places rises."""
    s = scores[docs].astype(np.float64)
    for i, total in sibling_sums(docs, s, group, weight).values():
        s[i] = total
    return docs[np.argsort(-s, kind="stable")]


def boost(counts: np.ndarray, factor: float) -> np.ndarray:
    """Score multiplier for entries returned `counts` times before: 1 + factor * ln(1 + count)."""
    return 1.0 + factor * np.log1p(np.asarray(counts, dtype=np.float64))


def search(index: CacheView | UnionView, embedder, q: Query, w: Weights, access: Mapping[str, int] | None = None, *, terms: Terms) -> list[Hit]:
    """`access`: entry id -> times returned before (the access boost; Memory.search counts them). `terms`: the
    query's BM25 terms (`memtool.search.typos.query_terms`, whose typo fixes the caller reports)."""
    if index.n == 0 or not q.text.strip():
        return []
    allowed = allowed_mask(index, q)
    if not allowed.any():
        return []
    bm25 = index.bm25_scores(terms.terms, terms.weights)
    periods = mentioned_periods(q.text) if w.date_boost > 0 or w.date_match > 0 else []
    if periods:
        bm25 = with_dates(bm25, index.ts, periods, w, allowed)
    asked = asked_cues(q.text) if w.answer_cue_boost > 0 else 0
    if asked:
        hit = np.flatnonzero(bm25)
        bm25[hit] *= np.where(index.cues[hit] & asked, 1.0 + w.answer_cue_boost, 1.0)
    matched = top_docs(bm25, allowed, CHANNEL_DEPTH)
    lexical = with_sibling_support(matched, bm25, index.group, w.sibling_weight) if w.sibling_weight > 0 else matched
    channels = [(lexical, w.bm25)]
    # too few word matches: vectors fill in (a set, not np.unique, which imports numpy.ma: +25 ms cold)
    few = len(set(index.group[matched].tolist())) < q.limit
    semantic = w.semantic > 0 and w.bm25 > 0 and matched.size > 0
    want_dense = w.dense > 0 or (w.dense_fallback and few)
    qvec = embedder.embed_query(q.text) if want_dense or semantic else None
    dense = top_docs(index.dense_scores(qvec), allowed, CHANNEL_DEPTH) if want_dense and qvec is not None else None
    if w.dense > 0 and dense is not None:
        channels.append((dense, w.dense))
    fused = weighted_rrf(channels, w.rrf_k)
    if semantic and qvec is not None and len(channels) == 1:  # re-score by sizes: word matches alone ...
        fused = rescore(index, matched, bm25[matched], qvec, allowed, w.sibling_weight, w.semantic)
    elif semantic and qvec is not None:  # ... or the ranks fused with a dense channel
        ranked = sorted(fused.items(), key=lambda kv: -kv[1])
        fused = rescore(index, np.array([d for d, _ in ranked]), np.array([v for _, v in ranked]), qvec, allowed, 0.0, w.semantic)
    if dense is not None and few:  # fallback hits rank after every lexical hit, in vector order
        floor = min(fused.values(), default=1.0)
        for rank, d in enumerate(dense.tolist(), 1):
            fused.setdefault(d, floor / (2 + rank))
    if not fused:
        return []
    docs = np.fromiter(fused.keys(), dtype=np.int64)
    scores = np.fromiter(fused.values(), dtype=np.float64)
    if w.recency_half_life_days > 0:
        age_days = np.maximum(0.0, (time.time() - index.ts[docs]) / 86400.0)
        decay = 0.5 + 0.5 * np.power(0.5, age_days / w.recency_half_life_days)
        exempt = index.pinned[docs] | (index.importance[docs] >= NO_DECAY_IMPORTANCE)
        scores = scores * np.where(exempt, 1.0, decay)  # pinned and important entries do not fade
    if w.access_boost > 0 and access:
        keys = index.group_keys
        scores = scores * boost(np.array([access.get(keys[g], 0) for g in index.group[docs].tolist()]), w.access_boost)
    return _materialise(index, q, by_result(docs, scores, index.group))


def by_result(docs: np.ndarray, scores: np.ndarray, group: np.ndarray) -> Iterator[list[tuple[int, float]]]:
    """The documents grouped under their result (an entry with its transcript chunks): results in
    the order of their best document, each with its best MAX_PASSAGES + 1 documents, best first."""
    order = np.argsort(-scores, kind="stable")
    docs, scores = docs[order], scores[order]
    groups = group[docs]
    by_group = np.argsort(groups, kind="stable")  # each result's documents together, best first
    starts = run_starts(groups[by_group])
    ends = np.append(starts[1:], groups.size)
    for k in np.argsort(by_group[starts]).tolist():  # results by the rank of their best document
        at = by_group[starts[k] : min(ends[k], starts[k] + MAX_PASSAGES + 1)]
        yield list(zip(docs[at].tolist(), scores[at].tolist()))


def _batches(
    index: CacheView | UnionView, ranked: Iterable[list[tuple[int, float]]], wanted: Callable[[], int]
) -> Iterator[tuple[list[tuple[int, float]], list[dict]]]:
    """(members, their documents) of each result in rank order, the documents read `wanted()` results at
    a time (one read for a page of results, not one per result: a round trip each on a server).
    Each result adds at most one hit, so no batch reads documents past the one that fills the page."""
    ranked = iter(ranked)
    while batch := list(islice(ranked, max(wanted(), 1))):
        docs = index.docs(i for members in batch for i, _ in members)
        at = 0
        for members in batch:
            yield members, docs[at : at + len(members)]
            at += len(members)


def _materialise(index: CacheView | UnionView, q: Query, ranked: Iterable[list[tuple[int, float]]]) -> list[Hit]:
    hits: list[Hit] = []
    ids: set[str] = set()  # of the results taken so far
    for members, (d, *rest) in _batches(index, ranked, lambda: q.limit - len(hits)):
        score = members[0][1]
        result_id = d["entry"] or d["ref"]
        if q.latest_only and d.get("superseded_by") in ids:  # an older version of a hit already in
            ids.add(result_id)  # and the versions before it give way too (a chain: first <- second <- third)
            hits = [h for h in hits if h.superseded_by != result_id]
            continue
        if q.topic and q.topic.lower() not in (t.lower() for t in d["topics"]):
            continue
        hit = Hit(
            id=result_id,
            kind="entry" if d["kind"] == "transcript" else d["kind"],
            score=round(score, 6),
            source_session=d["session"],
            timestamp=datetime.fromtimestamp(d["ts"], tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            text=index.entry_summary(d["entry"]) if d["kind"] == "transcript" else d["text"],
            passage=d["text"] if d["kind"] == "transcript" else "",
            passages=[x["text"] for x in rest if x["kind"] == "transcript"],
            ref=d["ref"],
            trusted=d["trusted"],
            superseded_by=d.get("superseded_by", ""),
            origin=d.get("origin", "project"),
            private=d.get("private", False),
        )
        hits.append(hit)
        ids.add(result_id)
        if q.latest_only and any(h.superseded_by == result_id for h in hits):  # older versions found first give way
            hits = [h for h in hits if h.superseded_by != result_id]
        if len(hits) >= q.limit:
            break
    return newer_first(hits)


def newer_first(hits: list[Hit]) -> list[Hit]:
    """Move a superseded hit to just below the hit that supersedes it, when both matched."""
    present = {h.id for h in hits}
    waiting: dict[str, list[Hit]] = {}  # newer id -> older hits held back until it is placed
    out: list[Hit] = []
    placed: set[str] = set()

    def place(h: Hit) -> None:
        if h.id in placed:
            return
        out.append(h)
        placed.add(h.id)
        for older in waiting.pop(h.id, []):
            place(older)

    for h in hits:
        if h.superseded_by in present and h.superseded_by not in placed:
            waiting.setdefault(h.superseded_by, []).append(h)
        else:
            place(h)
    for h in hits:  # a supersedes-cycle (hand edits) leaves hits waiting on each other: keep their order
        place(h)
    return out
