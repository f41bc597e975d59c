"""Building the derived search cache: every searchable document, its BM25 postings and its vector.

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
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

import numpy as np

from memtool import constants as C
from memtool.chunking import chunk_lines, chunk_markdown
from memtool.errors import ProviderError, StoreCorrupt
from memtool.fsutil import atomic_write_bytes, atomic_write_text, locked
from memtool.models import Entry, parse_iso
from memtool.store import DAY_RE, Layout, ParsedDays, Store, read_day
from memtool.search.cues import doc_cues
from memtool.search.typos import DICTIONARY_FILE, SURFACE_FILE, dictionary_text, surface_words
from memtool.search.segment import DELTA_DIR, IMPORTANCE_CODE, KIND_CODE, LENGTH_FILE, SearchIndex, Segment
from memtool.text import WORDS_VERSION, terms, words

CACHE_VERSION = f"11.{WORDS_VERSION}"  # the layout of the cache, and the word rules its BM25 terms were split by
DELTA_MIN_DOCS = 2000  # a delta may always grow this large before a full rebuild …
DELTA_FRACTION = 0.2  # … or this share of the base, whichever is larger
TRANSCRIPTS_FILE = "transcripts.json"  # inside the base segment: each kept transcript's stat at that build
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
        st = os.stat(path)
    except FileNotFoundError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}"


@dataclass
class Sigs:
    """Stat signatures of the files a cache is built from, taken before reading them: a file changed
    meanwhile shows as changed next time."""

    files: dict[str, str]  # day files, then Markdown files, by path
    # kept transcripts by entry id (edited in place, they change no folder's mtime); None when not
    # taken: a search checks only the folder, since a stat per transcript would cost it ~7 ms per 1,000
    transcripts: dict[str, str] | None

    @classmethod
    def take(cls, layout: Layout, files: dict[str, str] | None = None, transcripts: bool = True) -> "Sigs":
        """Signatures now; `files`: those of the day and Markdown files, if the caller has just taken them."""
        if files is None:
            files = {str(p): _stat_sig(p) for p in [*layout.day_files(), *layout.markdown_files()]}
        return cls(files, _transcript_sigs(layout) if transcripts else None)

    def with_transcripts(self, layout: Layout) -> "Sigs":
        return self if self.transcripts is not None else Sigs(self.files, _transcript_sigs(layout))


def _kept_transcripts(layout: Layout) -> Iterator[os.DirEntry]:
    """The kept transcripts' folder entries (none without the folder)."""
    try:
        with os.scandir(layout.transcripts_dir) as it:
            yield from (de for de in it if de.name.endswith(".md") and not de.name.startswith("."))
    except FileNotFoundError:
        pass  # no transcripts folder


def _transcript_sigs(layout: Layout) -> dict[str, str]:
    out: dict[str, str] = {}
    for de in _kept_transcripts(layout):
        try:
            st = de.stat()
        except FileNotFoundError:
            continue  # deleted while listing
        out[de.name[:-3]] = f"{st.st_size}:{st.st_mtime_ns}"
    return out


def transcript_sizes(layout: Layout) -> dict[str, int]:
    """Each kept transcript's size in bytes, by entry id. Sizes the search cache recorded at its last
    full build are taken from that record, so only the transcripts added since are stat-ed: a stat
    each cost every compress ~0.3 s at 100,000 transcripts. One edited in place since that build
    keeps its old size here."""
    try:
        recorded = json.loads((layout.cache_dir / C.SEARCH_DIR / TRANSCRIPTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = None
    recorded = recorded if isinstance(recorded, dict) else {}
    out: dict[str, int] = {}
    for de in _kept_transcripts(layout):
        eid = de.name[:-3]
        size = str(recorded.get(eid, "")).partition(":")[0]
        if size.isdigit():
            out[eid] = int(size)
            continue
        try:
            out[eid] = de.stat().st_size
        except FileNotFoundError:
            continue  # deleted while listing
    return out


def fingerprint(layout: Layout, model: str, archive: bool = False, sigs: Sigs | None = None) -> str:
    """Changes whenever a day or Markdown file changes (size/mtime), appears or goes, and whenever a
    transcript appears or goes (its folder's mtime). With `archive`, the files under
    memory/archive/YYYY/ count too. `sigs`: the live files' signatures, when the caller has just
    taken them. A transcript edited in place is seen by a sync, which also compares `transcripts_digest`."""
    h = hashlib.sha256(f"v{CACHE_VERSION}|{model}".encode())
    for lay in _sources(layout, archive):
        now = sigs if sigs is not None and lay is layout else Sigs.take(lay, transcripts=False)
        h.update(json.dumps([now.files, _stat_sig(lay.transcripts_dir), _stat_sig(lay.embeddings_dir)]).encode())
    return h.hexdigest()


def transcripts_digest(sigs: Sigs) -> str:
    return hashlib.sha256(json.dumps(sigs.transcripts, sort_keys=True).encode()).hexdigest() if sigs.transcripts is not None else ""


def _sources(layout: Layout, archive: bool) -> list[Layout]:
    """The live layout, and with `archive` one layout per memory/archive/YYYY/ folder."""
    if not archive:
        return [layout]
    from memtool.archive import archive_layouts

    return [layout, *archive_layouts(layout)]


SUPERSEDES_FILE = "supersedes.json"  # inside the base segment: the entries that supersede others (Declared)
VECTOR_KEYS_FILE = "vector-keys.json"  # inside a delta segment: the ChunkVectorCache key of each row of its vectors.npy


class Declared(NamedTuple):
    """An entry that supersedes others, as the base segment records it (supersedes.json)."""

    id: str
    timestamp: str
    supersedes: list[str]
    source: str  # its day file


def superseded_by(entries: Iterable[Entry | Declared]) -> dict[str, str]:
    """Old entry id -> the newest entry declaring `supersedes: [old id]`. Hand edits can close a
    cycle (a supersedes b, b supersedes a): its newest entry is then superseded by none, so one
    version of it is always current."""
    order = sorted(entries, key=lambda e: (e.timestamp, e.id))
    out: dict[str, str] = {}
    for e in order:
        out.update((old, e.id) for old in e.supersedes if old != e.id)
    rank = {e.id: i for i, e in enumerate(order)}
    done: set[str] = set()
    for start in list(out):
        path: list[str] = []
        x = start
        while x in out and x not in done and x not in path:
            path.append(x)
            x = out[x]
        if x in path:  # back where the walk has been: a cycle
            cycle = path[path.index(x):]
            del out[max(cycle, key=lambda i: rank.get(i, -1))]
        done.update(path)
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
    source: str = ""  # the file it came from (day file or Markdown file)


@dataclass
class Known:
    """What the caller (a sync) already read or computed, so that a build does not redo it."""

    days: ParsedDays = field(default_factory=dict)  # day files parsed, with the stat they were read at
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # entry vectors, keyed by entry_vector_key
    sigs: Sigs | None = None  # the files' signatures, taken before any of them was read


def read_entries(layout: Layout, errors: list[str], only: list[str] | None = None, parsed: ParsedDays | None = None) -> tuple[list[Entry], list[str]]:
    """The entries of every day file (or of the day files in `only`), and the day file of each."""
    entries: list[Entry] = []
    sources: list[str] = []
    for path in layout.day_files() if only is None else [Path(s) for s in only if s.endswith(".json")]:
        try:
            day = read_day(path, parsed)
        except FileNotFoundError:
            continue  # deleted since it was listed: its signature shows it as gone next time
        except (StoreCorrupt, UnicodeDecodeError) as exc:
            errors.append(str(exc))
            continue
        entries.extend(day)
        sources.extend([str(path)] * len(day))
    return entries, sources


def collect_docs(layout: Layout, errors: list[str], only: list[str] | None = None, parsed: ParsedDays | None = None,
                 newer: dict[str, str] | None = None) -> tuple[list[Doc], list[Entry]]:
    """Documents of every source file (day files, then Markdown), each source's docs contiguous.
    With `only`, just the sources named there (paths as str, in that order: day files before Markdown
    files); day files in `parsed` are not read again. `newer`: old id -> superseding id over every
    entry (default: worked out from the entries read)."""
    entries, sources = read_entries(layout, errors, only, parsed)
    docs: list[Doc] = []
    newer = superseded_by(entries) if newer is None else newer
    for e, source in zip(entries, sources):
        ts = parse_iso(e.timestamp).timestamp()
        common = dict(entry=e.id, ts=ts, session=e.source_session, importance=e.importance, topics=tuple(e.topics), trusted=e.trusted,
                      pinned=e.pinned, superseded_by=newer.get(e.id, ""), source=source)
        docs.append(Doc(kind="entry", ref=e.id, text=e.summary, index_text=entry_search_text(e), **common))
        tpath = layout.transcript_file(e.id)
        if tpath.is_file():
            ttext = tpath.read_text(encoding="utf-8", errors="replace")
            for ch in chunk_lines(ttext):
                docs.append(Doc(kind="transcript", ref=f"{e.id}#L{ch.line}", text=ch.text, index_text=ch.text, line=ch.line, **common))
    for path in layout.markdown_files() if only is None else [Path(s) for s in only if s.endswith(".md")]:
        rel = path.relative_to(layout.root).as_posix()
        daily = path.parent == layout.memory_dir or path.parent.parent == layout.archive_dir  # archived logs: memory/archive/YYYY/
        kind = "log" if daily and _is_date(path.stem) else "memory"
        try:
            data = path.read_bytes()
            ts = _md_time(path, kind)
        except FileNotFoundError:
            continue  # deleted since it was listed
        text = data.decode("utf-8", errors="replace")  # a person's file: one bad byte must not hide the rest
        if "\ufffd" in text and "\ufffd".encode() not in data:
            errors.append(f"{path}: not valid UTF-8; the bytes that are not were read as U+FFFD")
        if path.parent == layout.root and _untouched_template(path.name, text):
            continue  # still the file `memory init` wrote: boilerplate, not memory
        for ch in chunk_markdown(text):
            body = f"{ch.heading}\n{ch.text}" if ch.heading else ch.text
            docs.append(Doc(kind=kind, ref=f"{rel}#L{ch.line}", entry="", text=body, index_text=body, ts=ts, line=ch.line, session="", source=str(path)))
    return docs, entries


def _untouched_template(name: str, text: str) -> bool:
    from memtool.scaffold import is_untouched_template  # importlib.resources: only when building

    return is_untouched_template(name, text)


def _is_date(name: str) -> bool:
    """A daily log's name: YYYY-MM-DD and a real day ("2026-13-45.md" is just a Markdown file)."""
    from datetime import date

    try:
        return bool(DAY_RE.match(name)) and date.fromisoformat(name) is not None
    except ValueError:
        return False


def _md_time(path: Path, kind: str) -> float:
    if kind == "log":
        from datetime import datetime

        return datetime.fromisoformat(path.stem).astimezone().timestamp()
    return path.stat().st_mtime


class ChunkVectorCache:
    """Document vectors reused across rebuilds: chunks by text hash, entries by id and content hash.

    Stored as a memory-mapped matrix plus its list of keys; vectors added since are held in memory
    until `save`."""

    def __init__(self, folder: Path, model: str, dim: int):
        self.base = folder / f"vectors-{model}"
        self.model = model
        self.dim = dim
        self.rows: dict[str, int] = {}
        self.matrix = np.zeros((0, dim), np.float32)
        self.added: dict[str, np.ndarray] = {}
        keys, vecs = self.base.with_suffix(".keys.json"), self.base.with_suffix(".npy")
        if keys.is_file() and vecs.is_file():
            try:
                self.rows = {k: i for i, k in enumerate(json.loads(keys.read_text()))}
                self.matrix = np.load(vecs, mmap_mode="r")
            except ValueError:
                self.rows = {}  # unreadable cache: start again, it is only a cache
            if self.matrix.shape != (len(self.rows), dim):
                self.rows, self.matrix = {}, np.zeros((0, dim), np.float32)

    def fill(self, keys: list[str], out: np.ndarray) -> list[int]:
        """out[i] = the vector held for keys[i]; returns the positions of the keys not held. The
        memory-mapped rows are read in one gather."""
        at: list[int] = []
        rows: list[int] = []
        missing: list[int] = []
        for i, key in enumerate(keys):
            vec = self.added.get(key)
            if vec is not None:
                out[i] = vec
            elif (row := self.rows.get(key)) is not None:
                at.append(i)
                rows.append(row)
            else:
                missing.append(i)
        if rows:
            out[at] = self.matrix[rows]
        return missing

    def put(self, key: str, vec: np.ndarray) -> None:
        self.added[key] = vec

    def adopt(self, delta: Path) -> None:
        """Take the vectors a delta segment holds that this cache lacks: a delta does not save the
        cache, so without this the full build replacing it would embed its documents again (with a
        model such as e5, seconds per session). Zero rows (the embedder failed then) are left out."""
        try:
            if json.loads((delta / "manifest.json").read_text(encoding="utf-8")).get("model") != self.model:
                return
            keys = json.loads((delta / VECTOR_KEYS_FILE).read_text(encoding="utf-8"))
            vecs = np.load(delta / "vectors.npy", mmap_mode="r")
        except (OSError, ValueError):
            return  # no delta, or one cut off: its documents are embedded again
        if vecs.shape != (len(keys), self.dim):
            return
        for key, vec in zip(keys, vecs):
            if key not in self.rows and key not in self.added and vec.any():
                self.added[key] = np.array(vec)

    def save(self, keep: set[str]) -> None:
        keys = sorted(keep & (set(self.rows) | set(self.added)))
        vecs = np.zeros((len(keys), self.dim), np.float32)
        self.fill(keys, vecs)
        import io

        buf = io.BytesIO()
        np.save(buf, vecs.astype(np.float32))
        atomic_write_bytes(self.base.with_suffix(".npy.tmpsave"), buf.getvalue())
        os.replace(self.base.with_suffix(".npy.tmpsave"), self.base.with_suffix(".npy"))
        atomic_write_text(self.base.with_suffix(".keys.json"), json.dumps(keys))


def entry_vector_key(e: Entry) -> str:
    """How an entry's vector is keyed in ChunkVectorCache: its id and content hash."""
    return f"entry:{e.id}:{e.content_hash()}"


def vector_keys(docs: list[Doc], by_id: dict[str, Entry]) -> list[str]:
    """Each document's key in ChunkVectorCache: an entry's id and content hash, a chunk's text hash."""
    return [entry_vector_key(by_id[d.ref]) if d.kind == "entry" else hashlib.sha1(d.index_text.encode("utf-8", "surrogatepass")).hexdigest() for d in docs]


def _vectors(layout: Layout, embedder, docs: list[Doc], entries: list[Entry], cache: ChunkVectorCache, errors: list[str], progress=None,
             save: bool = True, fresh: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """A vector per document: entries from `fresh` (vectors the caller just computed), the cache or
    their embedding files, the rest from the cache or embedded now. Only what nothing holds is embedded.
    If the embedder fails (a remote one unreachable), the rest keep a zero vector, said in `errors`:
    words still find them, and a later build (the next change, `memory reindex --full`) embeds them."""
    store = Store(layout)
    dim = embedder.dim
    by_id = {e.id: e for e in entries}
    keys = vector_keys(docs, by_id)
    for key, vec in (fresh or {}).items():
        cache.put(key, vec)
    vectors = np.zeros((len(docs), dim), dtype=np.float32)
    missing: list[int] = []
    for i in cache.fill(keys, vectors):
        d = docs[i]
        vec = store.vector_for(by_id[d.ref], embedder.model, dim) if d.kind == "entry" else None  # first build, or the entry changed
        if vec is None:
            missing.append(i)
        else:
            vectors[i] = vec
            cache.put(keys[i], vec)
    step = 512
    for s in range(0, len(missing), step):
        idx = missing[s : s + step]
        try:  # what each vector embeds: an entry's embed_text, a chunk's own text
            vecs = embedder.embed_documents([by_id[docs[i].ref].embed_text() if docs[i].kind == "entry" else docs[i].index_text for i in idx])
        except ProviderError as exc:  # no retry per batch: a service that is down would cost a timeout each
            errors.append(f"{len(missing) - s} documents have no vector yet ({exc}); search finds them by their words")
            break
        for i, v in zip(idx, vecs):
            vectors[i] = v
            cache.put(keys[i], v)
        if progress:
            progress(len(idx))
    if save:
        cache.save(set(keys))
    return vectors


def _write_segment(folder: Path, docs: list[Doc], vectors: np.ndarray, meta: dict, extra: dict[str, str] | None = None) -> None:
    """Write a segment next to `folder`, then swap it in (readers holding the old one keep their maps)."""
    import bm25s

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
    (tmp / "groups.json").write_text(json.dumps(list(groups), ensure_ascii=False), encoding="utf-8")  # a new folder, swapped in whole
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
    corpus, cues, surface = [], np.zeros(len(docs), dtype=np.uint8), set()
    for i, d in enumerate(docs):  # each text split into words once: BM25 terms, answer cues, words for typos
        ws = words(d.index_text)
        corpus.append(terms(ws) or [""])
        cues[i] = doc_cues(ws)
        surface |= surface_words(ws)
    np.save(tmp / "cues.npy", cues)
    np.save(tmp / LENGTH_FILE, np.array([len(c) for c in corpus], dtype=np.int32))  # as bm25s counts them
    (tmp / SURFACE_FILE).write_text("\n".join(sorted(surface)), encoding="utf-8")
    retriever = bm25s.BM25()
    retriever.index(corpus or [[""]], show_progress=False)
    retriever.save(str(tmp / "bm25"), show_progress=False)
    for name, text in (extra or {}).items():
        (tmp / name).write_text(text, encoding="utf-8")
    meta = {**meta, "n": len(docs), "groups": len(groups), "version": CACHE_VERSION, "build_id": uuid.uuid4().hex}
    (tmp / "manifest.json").write_text(json.dumps(meta), encoding="utf-8")
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    tmp.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def build(layout: Layout, embedder, folder: Path, progress=None, known: Known | None = None, sigs: Sigs | None = None) -> list[str]:
    """Build the base segment into `folder` from all the files (`sigs`: their signatures, if just
    taken). Returns problems found (bad files skipped)."""
    known = known or Known()
    sigs = sigs.with_transcripts(layout) if sigs else Sigs.take(layout)
    errors: list[str] = []
    docs, entries = collect_docs(layout, errors, parsed=known.days)
    cache = ChunkVectorCache(layout.cache_dir, embedder.model, embedder.dim)
    cache.adopt(folder / DELTA_DIR)
    vectors = _vectors(layout, embedder, docs, entries, cache, errors, progress, fresh=known.vectors)
    ranges = {src: [sig, 0, 0] for src, sig in sigs.files.items()}
    for i, d in enumerate(docs):  # each source's documents are contiguous: [start, end)
        r = ranges.setdefault(d.source, ["-", 0, 0])
        if r[1] == r[2]:
            r[1] = i
        r[2] = i + 1
    # the transcripts as read, and each entry's day file: an edited transcript re-collects that day
    extra = {"sources.json": json.dumps(ranges, ensure_ascii=False), TRANSCRIPTS_FILE: json.dumps(sigs.transcripts),
             "entry-days.json": json.dumps({d.ref: d.source for d in docs if d.kind == "entry"}, ensure_ascii=False),
             SUPERSEDES_FILE: json.dumps(_declared(docs, entries), ensure_ascii=False),
             DICTIONARY_FILE: dictionary_text()}
    _write_segment(folder, docs, vectors, {"model": embedder.model}, extra)
    return errors


def build_delta(layout: Layout, embedder, folder: Path, progress=None, known: Known | None = None, sigs: Sigs | None = None) -> list[str] | None:
    """Put the documents of files changed since the base build into a delta segment (`sigs`: the
    files' signatures, if just taken). None when a full build is the right thing: no base, another
    model, too much changed, or a change the delta cannot express (an entry superseding another, a
    change outside the source files)."""
    sigs = sigs or Sigs.take(layout)
    try:
        base = Segment(folder)
        ranges = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
        if sigs.transcripts is not None:
            transcripts = json.loads((folder / TRANSCRIPTS_FILE).read_text(encoding="utf-8"))
            edited = {i for i in {*transcripts, *sigs.transcripts} if transcripts.get(i) != sigs.transcripts.get(i)}
        else:  # a search's refresh, with no transcript stats: keep the edits the last delta covered
            edited = set(_delta_meta(folder, base).get("edited", []))
        days = json.loads((folder / "entry-days.json").read_text(encoding="utf-8")) if edited else {}
    except (OSError, ValueError, KeyError):
        return None
    if base.model != embedder.model or base.meta.get("version") != CACHE_VERSION:
        return None
    stale_days = {days[i] for i in edited if i in days}  # else its entry's day file is new or changed (or it has no entry)
    changed = [src for src, sig in sigs.files.items() if ranges.get(src, [None])[0] != sig or src in stale_days]
    removed = sorted(set(ranges) - set(sigs.files))
    if not changed and not removed:
        return None
    known = known or Known()
    errors: list[str] = []
    # which entries supersede which, over the base and the changed files: a changed entry may mark one
    # of an unchanged day (a resumed session), or lose its mark; that day's documents are collected again
    changed_entries, _ = read_entries(layout, [], only=changed, parsed=known.days)  # problems: reported below
    try:
        base_declared = [Declared(*d) for d in json.loads((folder / SUPERSEDES_FILE).read_text(encoding="utf-8"))]
        newer, also = _supersessions(folder, base_declared, changed_entries, {*changed, *removed})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    changed = [*changed, *also]
    docs, entries = collect_docs(layout, errors, only=changed, parsed=known.days, newer=newer)
    if len(docs) > max(DELTA_MIN_DOCS, DELTA_FRACTION * base.n):
        return None
    # reuse cached vectors, and the delta's being replaced; the cache is saved by the next full build
    cache = ChunkVectorCache(layout.cache_dir, embedder.model, embedder.dim)
    cache.adopt(folder / DELTA_DIR)
    vectors = _vectors(layout, embedder, docs, entries, cache, errors, progress, save=False, fresh=known.vectors)
    masked = sorted((set(changed) & set(ranges)) | set(removed))
    meta = {"model": embedder.model, "base_id": base.meta["build_id"], "masked": masked, "edited": sorted(edited)}
    keys = vector_keys(docs, {e.id: e for e in entries})
    _write_segment(folder / DELTA_DIR, docs, vectors, meta, {VECTOR_KEYS_FILE: json.dumps(keys)})
    return errors


def _declared(docs: list[Doc], entries: list[Entry]) -> list[Declared]:
    """The entries that supersede others, with their day files (the base segment's supersedes.json)."""
    source = {d.ref: d.source for d in docs if d.kind == "entry" and d.ref}
    return [Declared(e.id, e.timestamp, list(e.supersedes), source.get(e.id, "")) for e in entries if e.supersedes]


def _supersessions(folder: Path, base_declared: list[Declared], entries: list[Entry], touched: set[str]) -> tuple[dict[str, str], list[str]]:
    """Old id -> superseding id over base and changed files alike, and the unchanged day files holding
    an entry whose mark that changes (their documents must be collected again)."""
    kept = [d for d in base_declared if d.source not in touched]
    newer = superseded_by([*kept, *(e for e in entries if e.supersedes)])
    before = superseded_by(base_declared)
    moved = {i for i in {*before, *newer} if before.get(i) != newer.get(i)}
    if not moved:
        return newer, []
    days = json.loads((folder / "entry-days.json").read_text(encoding="utf-8"))
    return newer, sorted({days[i] for i in moved if i in days} - touched)


def _delta_meta(folder: Path, base: Segment) -> dict:
    """The manifest of the delta segment built on `base`, or {} (none, or built on another base)."""
    try:
        meta = json.loads((folder / DELTA_DIR / "manifest.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return meta if meta.get("base_id") == base.meta["build_id"] else {}


def refresh_index(layout: Layout, embedder, progress=None, errors: list[str] | None = None, archive: bool = False, known: Known | None = None) -> Path:
    """Bring the cache up to date if the files changed since it was built: a small delta segment for
    a few changed files, a full build otherwise; returns its folder. With `archive`, a second cache
    (memory/.cache/search-archive) over the live and the archived files, always built in full.
    `known`: what the caller already parsed and embedded (live cache only)."""
    folder = layout.cache_dir / (C.ARCHIVE_SEARCH_DIR if archive else C.SEARCH_DIR)
    stamp = folder / "fingerprint"
    # taken before anything is read: a build reuses them. A sync brings every transcript's stat too.
    sigs = None if archive else (known and known.sigs) or Sigs.take(layout, transcripts=False)
    fp = fingerprint(layout, embedder.model, archive, sigs)
    digest = transcripts_digest(sigs) if sigs else ""

    def fresh() -> bool:  # the stamp: fingerprint, then the transcripts' digest when it was known
        have = stamp.read_text().split("\n") if stamp.is_file() else [""]
        return have[0] == fp and (not digest or have[1:] == [digest])

    if fresh():
        return folder
    with locked(layout.cache_dir / "build.lock", timeout=300):
        if not fresh():  # else another process built it while we waited
            problems = None if archive else build_delta(layout, embedder, folder, progress, known, sigs)
            if problems is None:
                if archive:
                    from memtool.archive import LiveAndArchive

                    source: Layout = LiveAndArchive(layout.root)
                    known = None
                else:
                    source = layout
                    sigs = sigs.with_transcripts(layout)  # a full build records every transcript's stat
                    digest = transcripts_digest(sigs)
                problems = build(source, embedder, folder, progress, known, sigs)
            if errors is not None:
                errors.extend(problems)
            atomic_write_text(stamp, fp + (f"\n{digest}" if digest else ""), durable=False)  # damaged, it only mismatches: one rebuild
    return folder


def open_index(layout: Layout, embedder, progress=None, errors: list[str] | None = None, archive: bool = False) -> SearchIndex:
    """The cache, brought up to date first (refresh_index). A damaged cache (cut off by a crash or a
    power cut: it is derived, so written without fsync) is rebuilt from the files."""
    folder = refresh_index(layout, embedder, progress, errors, archive)
    try:
        return SearchIndex(folder)
    except (OSError, ValueError, KeyError) as exc:
        if errors is not None:
            errors.append(f"{folder} was damaged ({exc}); rebuilt from the files")
        (folder / "fingerprint").unlink(missing_ok=True)
        return SearchIndex(refresh_index(layout, embedder, progress, errors, archive))
