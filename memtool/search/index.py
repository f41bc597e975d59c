"""The derived search cache: every searchable document, its BM25 postings and its vector.

Documents: one per entry (its structured fields), one per transcript chunk (pointing at its entry)
and one per Markdown chunk of Layers 1 and 3. Everything here is rebuilt from the files when a
cheap stat fingerprint changes; arrays are memory-mapped so a cold search parses almost nothing.
Chunk vectors are reused across rebuilds by content hash, so only new text is embedded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memtool import constants as C
from memtool.chunking import chunk_lines, chunk_markdown
from memtool.errors import StoreCorrupt
from memtool.fsutil import atomic_write_bytes, atomic_write_text, locked
from memtool.models import Entry, parse_iso
from memtool.store import DAY_RE, Layout, Store
from memtool.text import tokenize

CACHE_VERSION = 4
KINDS = ("entry", "transcript", "log", "memory")
KIND_CODE = {k: i for i, k in enumerate(KINDS)}
IMPORTANCE_CODE = {"low": 0, "medium": 1, "high": 2, "critical": 3}
# BM25 field weights for entry documents: each field is repeated this many times in the indexed text.
FIELD_REPEAT = {"summary": 1, "keywords": 2, "topics": 1, "decisions": 1, "action_items": 1, "entities": 2}


def entry_search_text(e: Entry) -> str:
    ents = " ".join(e.entities.people + e.entities.systems + e.entities.dates)
    fields = {
        "summary": e.summary,
        "keywords": " ".join(e.keywords),
        "topics": " ".join(e.topics),
        "decisions": " ".join(e.decisions),
        "action_items": " ".join(e.action_items),
        "entities": ents,
    }
    return "\n".join(" ".join([text] * FIELD_REPEAT[name]) for name, text in fields.items() if text)


def _stat_sig(path: Path) -> str:
    try:
        st = path.stat()
    except FileNotFoundError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}"


def fingerprint(layout: Layout, model: str, archive: bool = False) -> str:
    """Changes whenever a file the cache is built from changes (size/mtime), appears or goes.
    With `archive`, the files under memory/archive/YYYY/ count too."""
    h = hashlib.sha256(f"v{CACHE_VERSION}|{model}".encode())
    for lay in _sources(layout, archive):
        h.update(f"{lay.index_dir}|".encode())
        if lay.index_dir.is_dir():
            with os.scandir(lay.index_dir) as it:
                for de in sorted(it, key=lambda d: d.name):
                    if de.name.endswith(".json") and DAY_RE.match(de.name[:-5]):
                        st = de.stat()
                        h.update(f"{de.name}:{st.st_size}:{st.st_mtime_ns}|".encode())
        for p in lay.markdown_files():
            h.update(f"{p}:{_stat_sig(p)}|".encode())
        for d in (lay.transcripts_dir, lay.embeddings_dir):
            h.update(f"{d}:{_stat_sig(d)}|".encode())
    return h.hexdigest()


def _sources(layout: Layout, archive: bool) -> list[Layout]:
    """The live layout, and with `archive` one layout per memory/archive/YYYY/ folder."""
    if not archive:
        return [layout]
    from memtool.archive import archive_layouts

    return [layout, *archive_layouts(layout)]


def superseded_by(entries: list[Entry]) -> dict[str, str]:
    """Old entry id -> the newest entry declaring `supersedes: [old id]`."""
    out: dict[str, str] = {}
    for e in sorted(entries, key=lambda e: (e.timestamp, e.id)):
        out.update((old, e.id) for old in e.supersedes if old != e.id)
    return out


@dataclass
class Doc:
    kind: str
    ref: str  # entry id, or "relative/path.md#L12"
    entry: str  # owning entry id ('' for Markdown chunks)
    text: str  # text shown / packed into context
    index_text: str  # text given to BM25 and the embedder
    ts: float  # epoch seconds
    session: str = ""
    importance: str = "medium"
    topics: tuple[str, ...] = ()
    trusted: bool = True
    line: int = 0
    pinned: bool = False
    superseded_by: str = ""  # id of the newer entry that supersedes this one


class SearchIndex:
    """Loaded view of the cache: per-doc arrays, the BM25 retriever, the vector matrix."""

    def __init__(self, folder: Path):
        self.folder = folder
        meta = json.loads((folder / "manifest.json").read_text())
        self.model = meta["model"]
        self.n = meta["n"]
        self.kind = np.load(folder / "kind.npy", mmap_mode="r")
        self.ts = np.load(folder / "ts.npy", mmap_mode="r")
        self.importance = np.load(folder / "importance.npy", mmap_mode="r")
        self.trusted = np.load(folder / "trusted.npy", mmap_mode="r")
        self.group = np.load(folder / "group.npy", mmap_mode="r")
        self.vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        self._offsets = np.load(folder / "offsets.npy", mmap_mode="r")
        self.pinned = np.load(folder / "pinned.npy", mmap_mode="r")
        self._bm25 = None
        self._group_keys: list[str] | None = None

    @property
    def group_keys(self) -> list[str]:
        """The result id of each group: an entry id, or a Markdown chunk's ref."""
        if self._group_keys is None:
            self._group_keys = json.loads((self.folder / "groups.json").read_text(encoding="utf-8"))
        return self._group_keys

    @property
    def bm25(self):
        if self._bm25 is None:
            import bm25s

            self._bm25 = bm25s.BM25.load(str(self.folder / "bm25"), mmap=True, show_progress=False, verbosity=0)
        return self._bm25

    def bm25_scores(self, query_terms: list[str]) -> np.ndarray:
        if self.n == 0 or not query_terms:
            return np.zeros(self.n, dtype=np.float32)
        vocab = self.bm25.vocab_dict
        terms = [t for t in query_terms if t in vocab]
        if not terms:
            return np.zeros(self.n, dtype=np.float32)
        return np.asarray(self.bm25.get_scores(terms), dtype=np.float32)

    def doc(self, i: int) -> dict:
        with open(self.folder / "docs.jsonl", "rb") as fh:
            fh.seek(int(self._offsets[i]))
            return json.loads(fh.readline())

    def docs(self, ids) -> list[dict]:
        with open(self.folder / "docs.jsonl", "rb") as fh:
            out = []
            for i in ids:
                fh.seek(int(self._offsets[int(i)]))
                out.append(json.loads(fh.readline()))
            return out


def collect_docs(layout: Layout, errors: list[str]) -> tuple[list[Doc], list[Entry]]:
    store = Store(layout)
    entries = list(store.iter_entries(errors))
    docs: list[Doc] = []
    newer = superseded_by(entries)
    for e in entries:
        ts = parse_iso(e.timestamp).timestamp()
        common = dict(entry=e.id, ts=ts, session=e.source_session, importance=e.importance, topics=tuple(e.topics), trusted=e.trusted,
                      pinned=e.pinned, superseded_by=newer.get(e.id, ""))
        docs.append(Doc(kind="entry", ref=e.id, text=e.summary, index_text=entry_search_text(e), **common))
        tpath = layout.transcript_file(e.id)
        if tpath.is_file():
            ttext = tpath.read_text(encoding="utf-8", errors="replace")
            for ch in chunk_lines(ttext):
                docs.append(Doc(kind="transcript", ref=f"{e.id}#L{ch.line}", text=ch.text, index_text=ch.text, line=ch.line, **common))
    for path in layout.markdown_files():
        rel = path.relative_to(layout.root).as_posix()
        daily = path.parent == layout.memory_dir or path.parent.parent == layout.archive_dir  # archived logs: memory/archive/YYYY/
        kind = "log" if DAY_RE.match(path.stem) and daily else "memory"
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            errors.append(f"{path}: not UTF-8 ({exc.reason}); skipped")
            continue
        ts = _md_time(path, kind)
        for ch in chunk_markdown(text):
            body = f"{ch.heading}\n{ch.text}" if ch.heading else ch.text
            docs.append(Doc(kind=kind, ref=f"{rel}#L{ch.line}", entry="", text=body, index_text=body, ts=ts, line=ch.line, session=""))
    return docs, entries


def _md_time(path: Path, kind: str) -> float:
    if kind == "log":
        from datetime import datetime

        return datetime.fromisoformat(path.stem).astimezone().timestamp()
    return path.stat().st_mtime


class ChunkVectorCache:
    """Document vectors reused across rebuilds: chunks by text hash, entries by id and content hash."""

    def __init__(self, folder: Path, model: str, dim: int):
        self.path = folder / f"chunkvec-{model}.npz"
        self.dim = dim
        self.table: dict[str, np.ndarray] = {}
        if self.path.is_file():
            data = np.load(self.path)
            self.table = dict(zip(data["keys"].tolist(), data["vecs"]))

    def save(self, keep: set[str]) -> None:
        keys = sorted(k for k in self.table if k in keep)
        vecs = np.stack([self.table[k] for k in keys]) if keys else np.zeros((0, self.dim), np.float32)
        import io

        buf = io.BytesIO()
        np.savez(buf, keys=np.array(keys), vecs=vecs)
        atomic_write_bytes(self.path, buf.getvalue())


def build(layout: Layout, embedder, folder: Path, progress=None) -> list[str]:
    """Build the cache into `folder` from the files. Returns problems found (bad files skipped)."""
    import bm25s

    errors: list[str] = []
    docs, entries = collect_docs(layout, errors)
    store = Store(layout)
    dim = embedder.dim
    vectors = np.zeros((len(docs), dim), dtype=np.float32)
    cache = ChunkVectorCache(layout.cache_dir, embedder.model, dim)
    missing: list[int] = []
    keys: list[str] = []
    texts: list[str] = []  # what each vector embeds: an entry's embed_text, a chunk's own text
    by_id = {e.id: e for e in entries}
    for i, d in enumerate(docs):
        if d.kind == "entry":
            e = by_id[d.ref]
            key, text = f"entry:{e.id}:{e.content_hash()}", e.embed_text()
            if key not in cache.table:  # first build, or the entry changed: its embedding file
                vec = store.vector_for(e, embedder.model, dim)
                if vec is not None:
                    cache.table[key] = vec
        else:
            text = d.index_text
            key = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        keys.append(key)
        texts.append(text)
        if key in cache.table:
            vectors[i] = cache.table[key]
        else:
            missing.append(i)
    step = 512
    for s in range(0, len(missing), step):
        idx = missing[s : s + step]
        vecs = embedder.embed_documents([texts[i] for i in idx])
        for i, v in zip(idx, vecs):
            vectors[i] = v
            cache.table[keys[i]] = v
        if progress:
            progress(len(idx))
    cache.save(set(keys))

    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    groups: dict[str, int] = {}
    group = np.array([groups.setdefault(d.entry or d.ref, len(groups)) for d in docs], dtype=np.int32)
    np.save(tmp / "kind.npy", np.array([KIND_CODE[d.kind] for d in docs], dtype=np.int8))
    np.save(tmp / "ts.npy", np.array([d.ts for d in docs], dtype=np.float64))
    np.save(tmp / "importance.npy", np.array([IMPORTANCE_CODE.get(d.importance, 1) for d in docs], dtype=np.int8))
    np.save(tmp / "trusted.npy", np.array([d.trusted for d in docs], dtype=bool))
    np.save(tmp / "pinned.npy", np.array([d.pinned for d in docs], dtype=bool))
    atomic_write_text(tmp / "groups.json", json.dumps(list(groups), ensure_ascii=False))
    np.save(tmp / "group.npy", group)
    np.save(tmp / "vectors.npy", vectors)
    offsets = []
    with open(tmp / "docs.jsonl", "wb") as fh:
        for d in docs:
            offsets.append(fh.tell())
            rec = {"kind": d.kind, "ref": d.ref, "entry": d.entry, "text": d.text, "session": d.session, "ts": d.ts,
                   "importance": d.importance, "topics": list(d.topics), "trusted": d.trusted, "line": d.line,
                   "superseded_by": d.superseded_by}
            fh.write(json.dumps(rec, ensure_ascii=False).encode("utf-8") + b"\n")
    np.save(tmp / "offsets.npy", np.array(offsets, dtype=np.int64))
    retriever = bm25s.BM25()
    corpus = [tokenize(d.index_text) or [""] for d in docs]
    if docs:
        retriever.index(corpus, show_progress=False)
    else:
        retriever.index([[""]], show_progress=False)
    retriever.save(str(tmp / "bm25"), show_progress=False)
    atomic_write_text(tmp / "manifest.json", json.dumps({"model": embedder.model, "n": len(docs), "version": CACHE_VERSION}))
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    tmp.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
    return errors


def open_index(layout: Layout, embedder, progress=None, errors: list[str] | None = None, archive: bool = False) -> SearchIndex:
    """Load the cache, rebuilding it first if the files changed since it was built. With `archive`,
    a second cache (memory/.cache/search-archive) over the live and the archived files."""
    folder = layout.cache_dir / (C.ARCHIVE_SEARCH_DIR if archive else "search")
    stamp = folder / "fingerprint"
    fp = fingerprint(layout, embedder.model, archive)
    if stamp.is_file() and stamp.read_text() == fp:
        return SearchIndex(folder)
    with locked(layout.cache_dir / "build.lock", timeout=300):
        fp = fingerprint(layout, embedder.model, archive)
        if not (stamp.is_file() and stamp.read_text() == fp):
            if archive:
                from memtool.archive import LiveAndArchive

                source: Layout = LiveAndArchive(layout.root)
            else:
                source = layout
            problems = build(source, embedder, folder, progress)
            if errors is not None:
                errors.extend(problems)
            atomic_write_text(stamp, fp)
    return SearchIndex(folder)


__all__ = ["SearchIndex", "open_index", "build", "fingerprint", "KINDS", "KIND_CODE", "StoreCorrupt"]
