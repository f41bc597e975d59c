"""Several caches searched as one: the project's, its private entries', the personal memory's.

A `UnionView` shows the engine (memtool/search/engine.py) the interface one store's view has: the
per-document columns side by side (each part's document ids shifted past the parts before it; a
Markdown document's ref, its result's id, named from the first part's root, or "personal:" for the
personal memory's, so that two roots' `memory/2026-12-02.md#L2` stay two), and BM25 scored over
all of them at once (one document count, one mean length, each term's document frequency summed),
so the roots searched together rank as one store holding all their files would (bench/locomo.py
--split measures it). Each document says which part it came from (`origin`,
`private`), and the hits carry it.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from memtool.search.read import K1, B, CacheView, View

COLUMNS = ("kind", "importance", "trusted", "pinned", "cues", "length", "ts", "alive")


@dataclass
class Part:
    """One store's view, and where its documents came from."""

    index: CacheView  # or the PostgreSQL one, which has its interface: what the engine reads
    origin: str  # "project" or "personal"
    private: bool = False
    where: str = ""  # what a Markdown document's ref starts with: "" (the first part), "memory/.private/", "personal:", ...


class UnionView(View):
    avgdl: float
    importance: np.ndarray
    trusted: np.ndarray
    pinned: np.ndarray
    cues: np.ndarray
    length: np.ndarray
    ts: np.ndarray
    group: np.ndarray

    def __init__(self, parts: list[Part]):
        self.parts = parts
        self.stale = False

    @contextmanager
    def reading(self) -> Iterator["UnionView"]:
        """Every part's read transaction, and the columns joined from what they read."""
        with ExitStack() as stack:
            for p in self.parts:
                stack.enter_context(p.index.reading())
            self._join()
            yield self

    def _join(self) -> None:
        sizes = [p.index.n for p in self.parts]
        self.offsets = np.cumsum([0, *sizes])[:-1].astype(np.int64)
        self.n = int(sum(sizes))
        for name in COLUMNS:
            setattr(self, name, np.concatenate([getattr(p.index, name) for p in self.parts]) if self.n else np.zeros(0))
        groups = [p.index.group.astype(np.int64) for p in self.parts]
        self.group_offsets = np.cumsum([0, *(int(g.max()) + 1 if g.size else 0 for g in groups)])[:-1]
        self.group = np.concatenate([g + off for g, off in zip(groups, self.group_offsets)]) if self.n else np.zeros(0, dtype=np.int64)
        self.live = int(sum(p.index.live for p in self.parts))
        self.avgdl = float(self.length[self.alive].sum()) / max(self.live, 1) if self.n else 0.0
        self.norm = (K1 * (1 - B) + K1 * B / (self.avgdl or 1.0) * self.length).astype(np.float32)
        self._of_kinds: dict[tuple[str, ...], np.ndarray] = {}
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        return self.postings_of([term])[term]

    def postings_of(self, terms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each term's postings over every part, each part asked once for the terms not read yet."""
        unread = [t for t in dict.fromkeys(terms) if t not in self._postings]
        if unread:
            of_parts = [p.index.postings_of(unread) for p in self.parts]
            for t in unread:
                got = [(of[t][0].astype(np.int64) + off, of[t][1]) for of, off in zip(of_parts, self.offsets.tolist())]
                self._postings[t] = np.concatenate([d for d, _ in got]), np.concatenate([f for _, f in got])
        return {t: self._postings[t] for t in terms}

    def alive_of_kinds(self, kinds: tuple[str, ...]) -> np.ndarray:
        mask = self._of_kinds.get(kinds)
        if mask is None:
            mask = self._of_kinds[kinds] = np.concatenate([p.index.alive_of_kinds(kinds) for p in self.parts])
            mask.flags.writeable = False
        return mask

    def surface_words(self) -> list[str]:
        return list(dict.fromkeys(w for p in self.parts for w in p.index.surface_words()))

    @property
    def group_keys(self) -> dict[int, str]:
        return {g + int(off): key for p, off in zip(self.parts, self.group_offsets.tolist()) for g, key in p.index.group_keys.items()}

    def dense_scores(self, qvec: np.ndarray) -> np.ndarray:
        return np.concatenate([p.index.dense_scores(qvec) for p in self.parts]) if self.n else np.zeros(0, dtype=np.float32)

    def _split(self, ids: np.ndarray) -> Iterator[tuple[int, slice]]:
        """(part number, the slice of ascending `ids` in that part)."""
        bounds = np.searchsorted(ids, [*self.offsets.tolist(), self.n])
        for i in range(len(self.parts)):
            yield i, slice(int(bounds[i]), int(bounds[i + 1]))

    def dense_scores_of(self, qvec: np.ndarray, ids: np.ndarray) -> np.ndarray:
        out = np.zeros(ids.size, dtype=np.float32)
        for i, at in self._split(ids):
            if at.stop > at.start:
                out[at] = self.parts[i].index.dense_scores_of(qvec, ids[at] - self.offsets[i])
        return out

    def docs(self, ids) -> list[dict]:
        """The documents, each with `origin` and `private` (and `group` shifted as this index numbers them)."""
        ids = [int(i) for i in ids]
        where = (np.searchsorted(self.offsets, ids, side="right") - 1).tolist()
        found: dict[int, dict] = {}
        for i in set(where):  # one read per part
            part, off = self.parts[i], int(self.offsets[i])
            mine = [d for d, w in zip(ids, where) if w == i]
            for d, doc in zip(mine, part.index.docs([d - off for d in mine])):
                ref = f"{part.where}{doc['ref']}" if not doc["entry"] else doc["ref"]  # unlike the project's own file#line
                found[d] = {**doc, "ref": ref, "origin": part.origin, "private": part.private}
        return [found[d] for d in ids]

    def entry_summary(self, entry_id: str) -> str:
        return next((s for s in (p.index.entry_summary(entry_id) for p in self.parts) if s), "")
