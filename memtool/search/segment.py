"""Reading the derived search cache: a built segment, and the base + deltas view the engine queries.

Everything here is memory-mapped numpy; writing lives in memtool/search/write.py (called by
memtool/search/index.py and memtool/search/delta.py).
"""

from __future__ import annotations

import json
import math
import mmap
import os
import weakref
from functools import cached_property
from pathlib import Path

import numpy as np

from memtool import confine
from memtool.errors import UnsafePath
from memtool.search.typos import DICTIONARY_FILE, SURFACE_FILE

DELTA_DIR = "delta"  # inside the cache folder: documents of files changed since the base build
FRESH_DIR = "fresh"  # inside the cache folder: documents of files changed since the delta's build
SOURCES_FILE = "sources.json"  # in every segment: each source file it holds -> [signature read at, first doc, end]
LENGTH_FILE = "length.npy"  # per document: its number of BM25 terms, as bm25s counted them
# A segment whose average document length is within this fraction of the live documents' keeps its
# length normalisation (scores then differ from a full rebuild's by less than this fraction): a large
# base beside a small delta, where re-deriving every posting would cost milliseconds per term.
AVGDL_TOLERANCE = 1e-4
KINDS = ("entry", "transcript", "log", "memory")
KIND_CODE = {k: i for i, k in enumerate(KINDS)}
OPEN_ATTEMPTS = 3  # a segment replaced while being opened is opened again, at most this many times
IMPORTANCE_CODE = {"low": 0, "medium": 1, "high": 2, "critical": 3}


# Files a search reads after opening (the arrays and postings are mapped at once). They are mapped
# when the segment is opened, so a reader keeps the build it opened after a newer one replaces the
# folder (another process's compress swaps in a delta; the renamed folder is then deleted).
KEPT_FILES = ("docs.jsonl", "groups.json", "bm25/params.index.json", SOURCES_FILE, SURFACE_FILE, DICTIONARY_FILE)


class Segment:
    """One built folder: per-doc arrays, the BM25 retriever, the vector matrix, the doc records."""

    def __init__(self, folder: Path):
        self.folder = folder
        for attempt in range(OPEN_ATTEMPTS):  # another process may swap in a newer build meanwhile
            build = _build_id(folder)
            try:
                self._open()
            except (OSError, ValueError):
                if _build_id(folder) == build:  # no swap meanwhile: missing or damaged
                    raise
                continue
            if _build_id(folder) == self.meta.get("build_id"):  # every file is of the build opened
                return
        raise ValueError(f"{folder}: replaced by newer builds while being opened, {OPEN_ATTEMPTS} times")

    def _open(self) -> None:
        folder = self.folder
        _only_regular_files(folder)
        self.meta = json.loads(folder.joinpath("manifest.json").read_bytes())
        self._files = {name: _keep(folder / name) for name in KEPT_FILES}
        self.model = self.meta["model"]
        self.n = self.meta["n"]
        self.kind = _mapped(folder / "kind.npy")
        self.ts = _mapped(folder / "ts.npy")
        self.importance = _mapped(folder / "importance.npy")
        self.trusted = _mapped(folder / "trusted.npy")
        self.group = _mapped(folder / "group.npy")
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        self.vectors = vectors.view(np.ndarray)
        self._vectors_at = vectors.offset  # where the rows start in the file (after the .npy header)
        self._vectors_file = open(folder / "vectors.npy", "rb", buffering=0)  # read by vector_rows
        weakref.finalize(self, self._vectors_file.close)  # closed with the segment
        self._offsets = _mapped(folder / "offsets.npy")
        self.pinned = _mapped(folder / "pinned.npy")
        self.cues = _mapped(folder / "cues.npy")  # memtool.search.cues bits per document
        self.length = _mapped(folder / LENGTH_FILE)
        self._csc: tuple | None = None
        self._surface: list[str] | None = None
        self._dictionary: frozenset[str] | None = None
        self._group_keys: list[str] | None = None
        self._check()

    def _check(self) -> None:
        """Raise ValueError when the folder is visibly damaged (a cut-off file after a crash or a power
        cut: segment files are not fsynced), so that the caller rebuilds it instead of failing later."""
        arrays = (self.kind, self.ts, self.importance, self.trusted, self.group, self.vectors, self._offsets, self.pinned, self.cues, self.length)
        if any(a.shape[0] != self.n for a in arrays):
            raise ValueError(f"{self.folder}: arrays do not match the manifest's {self.n} documents")
        if self.n:
            if len(self._files["docs.jsonl"] or b"") <= int(self._offsets[-1]):
                raise ValueError(f"{self.folder}/docs.jsonl is cut off")
            vocab, data, indices, indptr = self._postings()
            if indptr.shape[0] < len(vocab) or data.shape[0] != indices.shape[0] or int(indptr[-1]) != data.shape[0]:
                raise ValueError(f"{self.folder}/bm25 does not hold a whole index")

    @property
    def group_keys(self) -> list[str]:
        """The result id of each group: an entry id, or a Markdown chunk's ref."""
        if self._group_keys is None:
            self._group_keys = json.loads(self.read("groups.json"))
        return self._group_keys

    def _postings(self) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]:
        """bm25s's saved index, memory-mapped: term ids, and per term the documents holding it with
        their precomputed BM25 scores (CSC: data/indices sliced by indptr). bm25s builds it; reading
        it needs only numpy, which keeps bm25s (and the tqdm and importlib.metadata it pulls in) out
        of a cold search."""
        if self._csc is None:
            d = self.folder / "bm25"
            vocab = json.loads((d / "vocab.index.json").read_text(encoding="utf-8"))
            arrays = [_mapped(d / f"{name}.csc.index.npy") for name in ("data", "indices", "indptr")]
            self._csc = (vocab, *arrays)
        return self._csc

    def known(self, terms: list[str]) -> list[str]:
        vocab = self._postings()[0] if self.n else {}
        return [t for t in terms if t in vocab]

    def scores(self, terms: list[str], weights: list[float] | None = None) -> np.ndarray:
        """The BM25 score of every document for these query terms (as bm25s.BM25.get_scores), each
        term's scores times its weight (default 1)."""
        out = np.zeros(self.n, dtype=np.float32)
        for term, weight in zip(terms, weights or [1.0] * len(terms)):
            docs, part = self.postings(term)
            out[docs] += part if weight == 1.0 else part * np.float32(weight)  # a term's postings name each document once
        return out

    def doc_freq(self, term: str) -> int:
        """Documents containing `term` (the length of its postings list)."""
        if not self.n:
            return 0
        vocab, _, _, indptr = self._postings()
        tid = vocab.get(term)
        return 0 if tid is None else int(indptr[tid + 1] - indptr[tid])

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The documents containing `term` and their BM25 scores for it."""
        tid = self._postings()[0].get(term) if self.n else None
        if tid is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        _, data, indices, indptr = self._postings()
        start, end = int(indptr[tid]), int(indptr[tid + 1])
        return np.asarray(indices[start:end]), np.asarray(data[start:end])

    @cached_property
    def bm25_params(self) -> tuple[float, float, float]:
        """k1 and b the BM25 scores were computed with (bm25s's saved parameters), and the average
        document length they were normalised by."""
        params = json.loads(self.read("bm25/params.index.json"))
        return float(params["k1"]), float(params["b"]), float(np.asarray(self.length, dtype=np.float64).mean())

    def surface_words(self) -> list[str]:
        """The documents' distinct words as written (memtool.search.typos), read on first use."""
        if self._surface is None:
            self._surface = self._lines(SURFACE_FILE)
        return self._surface

    def dictionary(self) -> frozenset[str]:
        """Words a query means as written (memtool.search.typos; base segments only), read on first use."""
        if self._dictionary is None:
            self._dictionary = frozenset(self._lines(DICTIONARY_FILE))
        return self._dictionary

    def _lines(self, name: str) -> list[str]:
        text = self.read(name).decode("utf-8") if self.n else ""
        return text.split("\n") if text else []

    def read(self, name: str) -> bytes:
        """One of the KEPT_FILES files, as it was when the segment was opened."""
        data = self._files[name]
        if data is None:
            raise FileNotFoundError(f"{self.folder / name}: not in this build")
        return data[:]

    def vector_rows(self, rows: np.ndarray) -> np.ndarray:
        """Rows `rows` (ascending) of the vector matrix, read from the file in runs of adjacent rows
        rather than through the mapping: on a current kernel a page fault maps the whole large
        page-cache folio around a row, and the few hundred scattered rows the semantic stage reads
        put 300 MB more in a cold search's resident set at 100,000 entries (file-backed, but counted)."""
        out = np.empty((rows.size, self.vectors.shape[1]), dtype=self.vectors.dtype)
        size = out.shape[1] * out.itemsize
        if out.size == 0:
            return out
        view = memoryview(out).cast("B")
        run_starts = np.flatnonzero(np.diff(rows, prepend=-2) != 1).tolist()
        for a, b in zip(run_starts, run_starts[1:] + [rows.size]):
            self._vectors_file.seek(self._vectors_at + int(rows[a]) * size)
            if self._vectors_file.readinto(view[a * size : b * size]) != (b - a) * size:
                raise ValueError(f"{self.folder}/vectors.npy is cut off")
        return out

    def doc(self, i: int) -> dict:
        return self.docs([i])[0]

    def docs(self, ids) -> list[dict]:
        data = self._files["docs.jsonl"]
        out = []
        for i in ids:
            start = int(self._offsets[int(i)])
            out.append(json.loads(data[start : data.find(b"\n", start)]))
        return out


def delta_on(base: Segment, folder: Path) -> Segment | None:
    """The delta segment built on `base` (the base segment, or the delta under a fresh one), if any:
    one left from an older build is not opened, and one swapped in while opening is checked again on
    its own manifest."""
    try:
        if json.loads(confine.read_bytes(folder / "manifest.json")).get("base_id") != base.meta.get("build_id"):
            return None
        delta = Segment(folder)
    except (FileNotFoundError, UnsafePath):  # none yet (or being swapped in: this reader keeps the base it opened)
        return None
    return delta if delta.meta.get("base_id") == base.meta.get("build_id") else None


def _build_id(folder: Path) -> str | None:
    try:
        return json.loads(confine.read_bytes(folder / "manifest.json")).get("build_id")
    except (FileNotFoundError, ValueError, UnsafePath):  # none (or mid-swap), damaged, or not a regular file
        return None


def _only_regular_files(folder: Path) -> None:
    """ValueError (a damaged cache: rebuilt) unless the folder, reached without a link (memtool/confine.py),
    holds only regular files and folders (bm25, delta segments): a cache a clone brought may hold a FIFO or a link out."""
    try:
        confine.safe_folder(folder)
    except UnsafePath as exc:
        raise ValueError(str(exc)) from None
    for d in (folder, folder / "bm25"):
        with os.scandir(d) as it:
            for e in it:
                if not (e.is_file(follow_symlinks=False) or e.is_dir(follow_symlinks=False)):  # folders: bm25, delta segments (checked when opened)
                    raise ValueError(f"{e.path}: not a regular file; the search cache is rebuilt")


def _keep(path: Path) -> mmap.mmap | bytes | None:
    """The file mapped read-only (it stays readable after the file is replaced or deleted), b"" when
    empty, None when the build has none (a delta has no dictionary or sources)."""
    try:
        with open(path, "rb") as fh:
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if fh.seek(0, 2) else b""
    except FileNotFoundError:
        return None


def _mapped(path: Path) -> np.ndarray:
    """A saved array, memory-mapped, as a plain ndarray: indexing np.memmap runs its Python-level
    __getitem__ (about 2 microseconds a call, and a search makes about a hundred)."""
    return np.load(path, mmap_mode="r").view(np.ndarray)


def _idf(df: int, n: int) -> float:
    """BM25's (Lucene) inverse document frequency, as bm25s computes it."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _renormalised(seg: Segment, docs: np.ndarray, scores: np.ndarray, avgdl: float) -> np.ndarray:
    """A term's BM25 scores in `seg` without their IDF, with document length normalised by `avgdl`
    instead of the segment's own average (unless the two are within AVGDL_TOLERANCE). bm25s stored
    idf x tf / (tf + k1 x (1 - b + b x dl / avgdl)); tf, a whole number, is recovered from it exactly."""
    k1, b, own = seg.bm25_params
    if abs(own / avgdl - 1) <= AVGDL_TOLERANCE:
        return scores / np.float32(_idf(docs.size, seg.n))
    dl = seg.length[docs].astype(np.float64)  # the postings' lengths only: a term's cost stays its document count
    tfc = scores.astype(np.float64) / _idf(docs.size, seg.n)
    tf = np.rint(tfc * k1 * (1 - b + b * dl / own) / (1 - tfc))
    return (tf / (tf + k1 * (1 - b + b * dl / avgdl))).astype(np.float32)


class SearchIndex:
    """The base segment, plus at most two delta segments on it: `delta` holds the files changed since
    the base was built, `fresh` those changed since the delta was built (memtool.search.index: a
    session's compress then rewrites only what changed since the last delta, not every change since
    the base). Documents of a source file that a segment above holds again, or that is gone, are
    masked out (`alive`). BM25 scores of all segments are rescaled term by term to the IDF of the live
    documents, so they compare as if one index had been built. Without a delta the base arrays are
    used as they are."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.base = Segment(folder)
        self.model = self.base.model
        self.stale = False  # read while another process was bringing it up to date (open_index)
        self.segments = [self.base]
        for name in (DELTA_DIR, FRESH_DIR):  # each built on the one before it
            above = delta_on(self.segments[-1], folder / name)
            if above is None:
                break
            self.segments.append(above)
        self.deltas = self.segments[1:]
        self.starts = np.cumsum([0, *(seg.n for seg in self.segments)])  # each segment's first document
        self.n = int(self.starts[-1])
        if not self.deltas:
            b = self.base
            self.alive = None
            self.kind, self.ts, self.importance, self.trusted, self.pinned, self.group = b.kind, b.ts, b.importance, b.trusted, b.pinned, b.group
            self.cues = b.cues
            return
        alive = np.ones(self.n, dtype=bool)
        ranges = [json.loads(seg.read(SOURCES_FILE)) for seg in self.segments[:-1]]  # of the segments below the top
        for j, seg in enumerate(self.deltas, 1):
            for source in seg.meta["masked"]:
                for below, start in zip(ranges[:j], self.starts):
                    if source in below:
                        alive[start + below[source][1] : start + below[source][2]] = False
        self.alive = alive

        def joined(name: str) -> np.ndarray:
            return np.concatenate([getattr(seg, name) for seg in self.segments])

        self.kind, self.ts, self.importance, self.trusted, self.pinned, self.cues = (joined(a) for a in ("kind", "ts", "importance", "trusted", "pinned", "cues"))
        groups = np.cumsum([0, *(seg.meta["groups"] for seg in self.segments)])
        self.group = np.concatenate([np.asarray(seg.group) + g for seg, g in zip(self.segments, groups)])

    @property
    def group_keys(self) -> list[str]:
        return [k for seg in self.segments for k in seg.group_keys]

    def bm25_scores(self, query_terms: list[str], weights: list[float] | None = None) -> np.ndarray:
        """BM25 of every document for the query terms (each times its weight, default 1; a repeated
        term counts again). With deltas, each segment's scores are re-derived with the IDF and the
        average document length of the live documents of all, as one index built over them would
        have them."""
        if not self.deltas:
            return self.base.scores(query_terms, weights) if self.n else np.zeros(0, dtype=np.float32)
        live, avgdl = self._live_stats
        out = np.zeros(self.n, dtype=np.float32)
        summed: dict[str, float] = {}
        for term, weight in zip(query_terms, weights or [1.0] * len(query_terms)):
            summed[term] = summed.get(term, 0.0) + weight
        for term, weight in summed.items():
            posts = [(seg, start, *seg.postings(term)) for seg, start in zip(self.segments, self.starts)]
            df = sum(int(self.alive[start + docs].sum()) for _, start, docs, _ in posts)  # live documents only (doc_freq)
            if not df:
                continue
            idf = np.float32(weight * _idf(df, live))
            for seg, start, docs, scores in posts:
                if docs.size:
                    out[start + docs] += idf * _renormalised(seg, docs, scores, avgdl)
        return np.where(self.alive, out, 0.0).astype(np.float32)

    @cached_property
    def _live_stats(self) -> tuple[int, float]:
        """How many documents are live (not masked out), and their average BM25 length."""
        lengths = np.concatenate([np.asarray(seg.length, dtype=np.int64) for seg in self.segments])
        live = int(self.alive.sum())
        return live, int(lengths[self.alive].sum()) / max(live, 1)

    def doc_freq(self, term: str) -> int:
        """Live documents holding `term`: those of every segment not masked out by one above it (their
        files changed: the segment above holds their new versions). Counting the masked ones too made
        the IDF negative when most of the base was masked, and such a term then matched nothing."""
        if not self.deltas:
            return self.base.doc_freq(term)
        return sum(int(self.alive[start + seg.postings(term)[0]].sum()) for seg, start in zip(self.segments, self.starts))

    def dictionary(self) -> frozenset[str]:
        return self.base.dictionary()

    def surface_words(self) -> list[str]:
        return [w for seg in self.segments for w in seg.surface_words()]

    def dense_scores(self, qvec: np.ndarray) -> np.ndarray:
        parts = [np.asarray(seg.vectors @ qvec, dtype=np.float32) for seg in self.segments]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def dense_scores_of(self, qvec: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Cosine of documents `ids` (ascending) with the query: only their rows are read."""
        cuts = np.searchsorted(ids, self.starts)
        parts = [np.asarray(seg.vector_rows(ids[cuts[j] : cuts[j + 1]] - self.starts[j]) @ qvec, dtype=np.float32)
                 for j, seg in enumerate(self.segments) if cuts[j] < cuts[j + 1]]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)

    def doc(self, i: int) -> dict:
        return self.docs([i])[0]

    def docs(self, ids) -> list[dict]:
        ids = [int(i) for i in ids]
        where = np.searchsorted(self.starts, ids, side="right") - 1 if ids else []
        by_seg = [iter(seg.docs([i - int(self.starts[j]) for i, w in zip(ids, where) if w == j])) for j, seg in enumerate(self.segments)]
        return [next(by_seg[w]) for w in where]
