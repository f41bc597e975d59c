"""The read side of the cache (memtool/cache.py): a search's snapshot of it, CacheView, with the
per-document columns as arrays and postings, vectors and documents read on demand. Ranking stays in
Python (memtool/search/engine.py): BM25 is computed here from the postings over the live documents,
as bm25s's Lucene variant does."""

from __future__ import annotations

import json
import math
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from memtool.cache import SQLITE_VERSION, connect, read_meta, read_state
from memtool.store import Layout

KINDS = ("entry", "transcript", "log", "memory")
KIND_CODE = {k: i for i, k in enumerate(KINDS)}
IMPORTANCE_CODE = {"low": 0, "medium": 1, "high": 2, "critical": 3}
K1, B = 1.5, 0.75  # BM25 parameters (bm25s's defaults, which the ranking settings were tuned with)
DENSE_CHUNK_ROWS = 8192  # vectors `dense_scores` reads and scores at a time (12 MB as float32 at e5's size)
DENSE_HELD_BYTES = 64 << 20  # a reading process keeps every vector for `dense_scores` when they fit (float16: 87k documents at e5's size)
VECTOR_CACHE_ROWS = 200_000  # vectors a reading process keeps between searches (float16 rows: about 180 MB at e5's size)
MMAP_BYTES = 0x7FFF0000  # a reader maps up to this much of the cache (SQLite's largest mapping)
DEFERRED = "deferred"  # entries.transcript of an entry whose kept transcript's passages the words fill has yet to index
DOC_DTYPE = np.dtype(
    [
        ("kind", "i1"),
        ("importance", "i1"),
        ("trusted", "?"),
        ("pinned", "?"),
        ("cues", "u1"),
        ("alive", "?"),
        ("archived", "?"),
        ("length", "<i4"),
        ("group", "<i4"),
        ("ts", "<f8"),
    ]
)
DOC_FIELDS = ("kind", "ref", "entry", "text", "session", "ts", "importance", "topics", "trusted", "line", "superseded_by")  # what `docs` returns
DOCS_SQL = f"SELECT id, {', '.join(DOC_FIELDS)} FROM docs WHERE id IN (SELECT value FROM json_each(?))"


def transcript_sizes(layout: Layout) -> dict[str, int]:
    """Each kept transcript's size in bytes, by entry id, from the cache's records; the folder is
    listed (and the transcripts no record holds stat-ed) only when it changed since the cache last
    recorded it. One edited in place since it was recorded keeps its old size here."""
    rows = read_state(layout, f"SELECT id, transcript FROM entries WHERE archived = 0 AND transcript NOT IN ('-', '{DEFERRED}')") or ()
    try:
        recorded = {eid: int(sig.partition(":")[0]) for eid, sig in rows}
        meta = dict(read_state(layout, "SELECT key, value FROM meta") or ())
    except ValueError:  # a damaged cache: every transcript is stat-ed
        recorded, meta = {}, {}
    folder_then = meta.get("transcripts_dir", "") if meta.get("words_missing", "0") == "0" else ""  # deferred ones: stat-ed
    if folder_then and folder_then == str(layout.transcripts_stamp()):
        return recorded
    out: dict[str, int] = {}
    for de in layout.transcript_files():
        eid = de.name[:-3]
        try:
            out[eid] = recorded[eid] if eid in recorded else de.stat().st_size
        except FileNotFoundError:
            pass  # deleted while listing
    return out


# -- reading --------------------------------------------------------------------------------------
def summed_weights(query_terms: list[str], weights: list[float] | None) -> dict[str, float]:
    """Each distinct query term with its weights summed (default 1 each), in first-seen order."""
    summed: dict[str, float] = {}
    for term, weight in zip(query_terms, weights or [1.0] * len(query_terms)):
        summed[term] = summed.get(term, 0.0) + weight
    return summed


def bm25(n: int, live: int, norm: np.ndarray, weighted: Iterable[tuple[float, tuple[np.ndarray, np.ndarray]]]) -> np.ndarray:
    """BM25 scores of `n` documents from each term's (weight, (documents, term frequencies)); `norm` is
    each document's length normalisation, `live` the live document count the IDF is taken over. The one
    sum SQLite's, PostgreSQL's and a union of caches' views share."""
    out = np.zeros(n, dtype=np.float32)
    for weight, (docs, tfs) in weighted:
        if not docs.size:
            continue
        idf = math.log(1 + (live - docs.size + 0.5) / (docs.size + 0.5))
        tf = tfs.astype(np.float32)
        out[docs] += np.float32(weight * idf) * tf / (tf + norm[docs])
    return out


class View:
    """What SQLite's, PostgreSQL's and a union's snapshots share over their columns and `postings`."""

    n: int
    live: int
    kind: np.ndarray
    alive: np.ndarray
    norm: np.ndarray
    _of_kinds: dict[tuple[str, ...], np.ndarray]
    postings: Callable[[str], tuple[np.ndarray, np.ndarray]]
    conn: Any  # SQLite's or PostgreSQL's connection

    @property
    def group_keys(self) -> dict[int, str]:
        """The result id of each group: an entry id, or a Markdown chunk's ref."""
        return dict(self.conn.execute("SELECT id, key FROM groups").fetchall())

    def alive_of_kinds(self, kinds: tuple[str, ...]) -> np.ndarray:
        """Which documents are alive (and not archived, unless searched) and of these kinds (read-only)."""
        mask = self._of_kinds.get(kinds)
        if mask is None:
            mask = self._of_kinds[kinds] = np.isin(self.kind, [KIND_CODE[k] for k in kinds]) & self.alive
            mask.flags.writeable = False
        return mask

    def doc_freq(self, term: str) -> int:
        return int(self.postings(term)[0].size) if self.n else 0

    def postings_of(self, terms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The postings of each of `terms` (a server's view reads those it lacks in one round trip)."""
        return {t: self.postings(t) for t in terms}

    def bm25_scores(self, query_terms: list[str], weights: list[float] | None = None) -> np.ndarray:
        """BM25 (Lucene IDF, as bm25s) of every document for the query terms over the live documents,
        each term times its weight (default 1; a repeated term counts again)."""
        summed = summed_weights(query_terms, weights)
        postings = self.postings_of(list(summed))
        return bm25(self.n, self.live, self.norm, ((w, postings[t]) for t, w in summed.items()))


class CacheView(View):
    """A read snapshot of the cache: the per-document columns as arrays, postings and documents read
    on demand in the same read transaction (a change committed meanwhile by another process is not
    seen: the view stays whole). `archive`: archived documents are searched too."""

    def __init__(self, path: Path, archive: bool = False):
        self.path = path
        self.archive = archive
        self.conn = connect(path)
        self.conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")  # postings and vectors read from the mapping, not a read() per page
        self.stale = False  # read while another process was changing it (open_view)
        self.generation = ""
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        with self.reading():
            pass

    @contextmanager
    def reading(self) -> Iterator["CacheView"]:
        """A read transaction: what is read inside it is of one committed state. The columns are read
        again when a change set was committed since they were (another process's, or a forget)."""
        self.conn.execute("BEGIN")
        with self.conn:
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            if row is None or row[0] != self.generation:
                self._load()
            self._postings = {}  # a term's postings, read once per search (the typo check and BM25 both ask)
            yield self

    def meta_counts(self) -> dict[str, str]:
        """The counts the change sets and fills record (vectors_missing, vectors_total, words_missing), inside reading()."""
        return dict(self.conn.execute("SELECT key, value FROM meta WHERE key IN ('vectors_missing', 'vectors_total', 'words_missing')").fetchall())

    def _load(self) -> None:
        meta = read_meta(self.conn)
        if meta.get("version") != SQLITE_VERSION:
            raise ValueError(f"{self.path}: version {meta.get('version')!r}, expected {SQLITE_VERSION}")
        self.generation = meta.get("generation", "")
        row = self.conn.execute("SELECT data FROM columns WHERE name = 'docs'").fetchone()
        cols = np.frombuffer(row[0], dtype=DOC_DTYPE) if row else np.zeros(0, dtype=DOC_DTYPE)
        self.n = int(cols.shape[0])
        names = ("kind", "importance", "trusted", "pinned", "cues", "length", "group", "ts")  # one array each
        self.kind, self.importance, self.trusted, self.pinned, self.cues, self.length, self.group, self.ts = (np.ascontiguousarray(cols[n]) for n in names)
        self.alive = cols["alive"] & (cols["archived"] == 0) if not self.archive else np.ascontiguousarray(cols["alive"])
        self.live = int(self.alive.sum())
        self._every_doc_alive = self.live == self.n  # (a fresh build): postings need no filtering
        self._of_kinds: dict[tuple[str, ...], np.ndarray] = {}
        self.avgdl = float(self.length[self.alive].sum()) / max(self.live, 1)
        self.norm = (K1 * (1 - B) + K1 * B / (self.avgdl or 1.0) * self.length).astype(np.float32)  # BM25's length term per document
        self.dim = int(meta.get("dim", "0"))
        # float16 vectors read so far in this snapshot, by document id: a process that searches again
        # reads only the candidates it has not read yet (at most VECTOR_CACHE_ROWS kept)
        self._vector_rows: dict[int, bytes] = {}
        self._dense: tuple[np.ndarray, np.ndarray] | None = None  # (ids, float16 vectors) of every vector, when they fit DENSE_HELD_BYTES

    def close(self) -> None:
        self.conn.close()

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The live documents holding `term`, and how often each holds it (read once per `reading`)."""
        if term in self._postings:
            return self._postings[term]
        rows = self.conn.execute("SELECT docs, tfs FROM postings WHERE term = ? ORDER BY rowid", (term,)).fetchall()
        docs = np.frombuffer(b"".join(d for d, _ in rows), dtype="<i4")
        tfs = np.frombuffer(b"".join(t for _, t in rows), dtype="<u2")
        if docs.size and not self._every_doc_alive:
            keep = self.alive[docs]
            docs, tfs = docs[keep], tfs[keep]
        self._postings[term] = docs, tfs
        return docs, tfs

    def surface_words(self) -> list[str]:
        return [w for (w,) in self.conn.execute("SELECT word FROM words")]

    def dense_scores(self, qvec: np.ndarray) -> np.ndarray:
        """Cosine of every document with the query (0 for a document without a vector). The vectors
        are scored `DENSE_CHUNK_ROWS` at a time: memory stays that chunk and the n scores, plus the
        snapshot's float16 vectors when they fit DENSE_HELD_BYTES (a process that searches again,
        as the MCP server does, then reads them once)."""
        out = np.zeros(self.n, dtype=np.float32)
        q = qvec.astype(np.float32)
        for at, vecs in self._vector_chunks():
            if vecs.shape[1] != q.shape[0]:  # vectors of another size than the query's: no cosine
                return np.zeros(self.n, dtype=np.float32)
            out[at] = vecs.astype(np.float32) @ q
        return out

    def _vector_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(document ids, their float16 vectors), DENSE_CHUNK_ROWS at a time, in id order."""
        if self._dense is not None:
            ids, vecs = self._dense
            for lo in range(0, ids.size, DENSE_CHUNK_ROWS):
                yield ids[lo : lo + DENSE_CHUNK_ROWS], vecs[lo : lo + DENSE_CHUNK_ROWS]
            return
        keep = self.n * max(self.dim, 1) * 2 <= DENSE_HELD_BYTES
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        rows = self.conn.execute("SELECT id, vec FROM docvecs ORDER BY id")
        while chunk := rows.fetchmany(DENSE_CHUNK_ROWS):
            at = np.fromiter((r[0] for r in chunk), dtype=np.int64, count=len(chunk))
            vecs = np.frombuffer(b"".join(r[1] for r in chunk), dtype="<f2").reshape(len(chunk), -1)
            if keep:
                parts.append((at, vecs))
            yield at, vecs
        if keep and parts and len({v.shape[1] for _, v in parts}) == 1:  # read to the end: kept for the next search
            self._dense = (np.concatenate([a for a, _ in parts]), np.concatenate([v for _, v in parts]))

    def dense_scores_of(self, qvec: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Cosine of documents `ids` (ascending) with the query (0 for one without a vector): only
        their vectors are read, and only those this snapshot has not read before."""
        out = np.zeros(ids.size, dtype=np.float32)
        if qvec.shape[0] != self.dim:
            return out
        held = self._vector_rows
        wanted = ids.tolist()
        new = [i for i in wanted if i not in held]
        if new:
            if len(held) + len(new) > VECTOR_CACHE_ROWS:
                held.clear()
            held.update(self.conn.execute("SELECT id, vec FROM docvecs WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(new),)))
        blobs = [held.get(i) for i in wanted]  # a document without a vector is asked for again next time: it may get one
        have = np.fromiter((b is not None for b in blobs), dtype=bool, count=len(blobs))
        if have.any():
            vecs = np.frombuffer(b"".join(b for b in blobs if b is not None), dtype="<f2").reshape(-1, self.dim)
            out[have] = vecs.astype(np.float32) @ qvec.astype(np.float32)
        return out

    def docs(self, ids) -> list[dict]:
        ids = [int(i) for i in ids]
        rows = self.conn.execute(DOCS_SQL, (json.dumps(ids),))
        by_id = {r[0]: dict(zip(DOC_FIELDS, r[1:]), topics=json.loads(r[8]), trusted=bool(r[9])) for r in rows}
        return [by_id[i] for i in ids]

    def entry_summary(self, entry_id: str) -> str:
        row = self.conn.execute("SELECT text FROM docs WHERE entry = ? AND kind = 'entry'", (entry_id,)).fetchone()
        return row[0] if row else ""


def vector_gap(conn: sqlite3.Connection) -> tuple[int, int]:
    """(documents without a vector, documents) in the cache as `conn` sees it."""
    missing = conn.execute("SELECT count(*) FROM docs WHERE id NOT IN (SELECT id FROM docvecs)").fetchone()[0]
    return missing, conn.execute("SELECT count(*) FROM docs").fetchone()[0]


def held_vectors(conn: sqlite3.Connection, model: str, keys: list[str]) -> dict[str, np.ndarray]:
    """The vectors the cache holds for these keys and this model, as float32."""
    rows = conn.execute("SELECT key, vec FROM vectors WHERE model = ? AND key IN (SELECT value FROM json_each(?))", (model, json.dumps(list(set(keys)))))
    return {k: np.frombuffer(v, dtype="<f2").astype(np.float32) for k, v in rows}
