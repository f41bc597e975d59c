"""Building the derived search cache: the documents (memtool/search/docs.py), their BM25 postings and
their vectors (memtool/search/vectors.py), written as memory-mapped segments (memtool/search/segment.py).

Everything here is rebuilt from the files when a cheap stat fingerprint changes; arrays are
memory-mapped so a cold search parses almost nothing. Vectors are reused across rebuilds, so only
new text is embedded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator

import numpy as np

from memtool import constants as C
from memtool.errors import LockBusy
from memtool.fsutil import atomic_write_text, locked
from memtool.models import Entry
from memtool.store import Layout, ParsedDays
from memtool.search.cues import doc_cues
from memtool.search.docs import Declared, Doc, collect_docs, read_entries, source_key, superseded_by
from memtool.search.typos import DICTIONARY_FILE, SURFACE_FILE, dictionary_text, surface_words
from memtool.search.segment import DELTA_DIR, FRESH_DIR, IMPORTANCE_CODE, KIND_CODE, LENGTH_FILE, SOURCES_FILE, SearchIndex, Segment, delta_on
from memtool.search.vectors import VECTOR_KEYS_FILE, ChunkVectorCache, embed_docs, vector_keys
from memtool.text import WORDS_VERSION, terms, words

CACHE_VERSION = f"12.{WORDS_VERSION}"  # the layout of the cache, and the word rules its BM25 terms were split by
DELTA_MIN_DOCS = 2000  # a delta may always grow this large before a full rebuild …
DELTA_FRACTION = 0.2  # … or this share of the base, whichever is larger
FRESH_MIN_DOCS = 500  # a fresh segment may always grow this large before the delta is rebuilt …
FRESH_FRACTION = 0.1  # … or this share of the delta, whichever is larger
LEVELS = (DELTA_DIR, FRESH_DIR)  # the delta segments, each built on the one before (the first on the base)
ENTRY_DAYS_FILE = "entry-days.json"  # in every segment: each entry's day file
TRANSCRIPTS_FILE = "transcripts.json"  # in every segment: kept transcripts' stats when read (the base's: all of them)


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

    files: dict[str, str]  # day files, then Markdown files, by source_key
    # kept transcripts by entry id (edited in place, they change no folder's mtime); None when not
    # taken: a search checks only the folder, since a stat per transcript would cost it ~7 ms per 1,000
    transcripts: dict[str, str] | None
    folder: str  # the transcripts folder's: it changes when a transcript is added or removed

    @classmethod
    def take(cls, layout: Layout, files: dict[str, str] | None = None, transcripts: bool = True) -> "Sigs":
        """Signatures now; `files`: those of the day and Markdown files, if the caller has just taken them."""
        folder = _stat_sig(layout.transcripts_dir)
        if files is None:
            files = {source_key(layout, p): _stat_sig(p) for p in [*layout.day_files(), *layout.markdown_files()]}
        return cls(files, _transcript_sigs(layout) if transcripts else None, folder)

    def with_transcripts(self, layout: Layout) -> "Sigs":
        return self if self.transcripts is not None else Sigs(self.files, _transcript_sigs(layout), self.folder)


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
    """Each kept transcript's size in bytes, by entry id, from the search cache's records: the base's
    of every transcript at its build, each delta's of its entries'. Only when the transcripts folder
    changed since the newest of those was built (a transcript added or removed that no record holds)
    is the folder listed, and just the transcripts no record holds stat-ed: a stat each cost every
    compress ~0.3 s at 100,000 transcripts, the listing ~0.2 s. One edited in place since it was
    recorded keeps its old size here."""
    chain = _chain(layout.cache_dir / C.SEARCH_DIR)
    recorded: dict[str, int] = {}
    whole = bool(chain)
    for path in chain:
        try:
            rec = json.loads((path / TRANSCRIPTS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            rec = None
        if not isinstance(rec, dict):
            whole = False
            continue
        recorded.update((eid, int(size)) for eid, sig in rec.items() if (size := str(sig).partition(":")[0]).isdigit())
    if whole and _manifest(chain[-1]).get("transcripts_dir") == _stat_sig(layout.transcripts_dir):
        return recorded
    out: dict[str, int] = {}
    for de in _kept_transcripts(layout):
        eid = de.name[:-3]
        if eid in recorded:
            out[eid] = recorded[eid]
            continue
        try:
            out[eid] = de.stat().st_size
        except FileNotFoundError:
            continue  # deleted while listing
    return out


def _chain(folder: Path) -> list[Path]:
    """The folders of the base segment and of the deltas built on it, in order, by their manifests
    (a delta left from an older build is not part of it)."""
    chain: list[Path] = []
    below: dict = {}
    for path in (folder, *(folder / name for name in LEVELS)):
        meta = _manifest(path)
        if not meta or (chain and meta.get("base_id") != below.get("build_id")):
            break
        chain.append(path)
        below = meta
    return chain


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


SUPERSEDES_FILE = "supersedes.json"  # in every segment: the entries that supersede others (Declared)


@dataclass
class Known:
    """What the caller (a sync) already read or computed, so that a build does not redo it."""

    days: ParsedDays = field(default_factory=dict)  # day files parsed, with the stat they were read at
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # entry vectors, keyed by entry_vector_key
    sigs: Sigs | None = None  # the files' signatures, taken before any of them was read



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


def _records(docs: list[Doc], entries: list[Entry], source_sigs: dict[str, str], transcripts: dict[str, str]) -> dict[str, str]:
    """What a segment records of what it was built from, so that the next delta can tell what changed
    since: each source file's signature and documents, each entry's day file, its kept transcript's
    signature, and the entries that supersede others."""
    ranges = {src: [sig, 0, 0] for src, sig in source_sigs.items()}
    for i, d in enumerate(docs):  # each source's documents are contiguous: [start, end)
        r = ranges.setdefault(d.source, ["-", 0, 0])
        if r[1] == r[2]:
            r[1] = i
        r[2] = i + 1
    day_of = {d.ref: d.source for d in docs if d.kind == "entry"}
    declared = [Declared(e.id, e.timestamp, list(e.supersedes), day_of.get(e.id, "")) for e in entries if e.supersedes]
    return {SOURCES_FILE: json.dumps(ranges, ensure_ascii=False), TRANSCRIPTS_FILE: json.dumps(transcripts),
            ENTRY_DAYS_FILE: json.dumps(day_of, ensure_ascii=False), SUPERSEDES_FILE: json.dumps(declared, ensure_ascii=False)}


def build(layout: Layout, embedder, folder: Path, progress=None, known: Known | None = None, sigs: Sigs | None = None) -> list[str]:
    """Build the base segment into `folder` from all the files (`sigs`: their signatures, if just
    taken). Returns problems found (bad files skipped)."""
    known = known or Known()
    sigs = sigs.with_transcripts(layout) if sigs else Sigs.take(layout)
    errors: list[str] = []
    docs, entries = collect_docs(layout, errors, parsed=known.days)
    cache = ChunkVectorCache(layout.cache_dir, embedder.model, embedder.dim)
    for name in LEVELS:
        cache.adopt(folder / name)
    vectors = embed_docs(layout, embedder, docs, entries, cache, errors, progress, fresh=known.vectors)
    extra = {**_records(docs, entries, sigs.files, sigs.transcripts), DICTIONARY_FILE: dictionary_text()}
    _write_segment(folder, docs, vectors, {"model": embedder.model, "transcripts_dir": sigs.folder}, extra)
    return errors


class Held:
    """What a chain of segments (the base, then the deltas built on it) holds, seen as one: a delta's
    source files replace the same files below it. Read from the records `_records` wrote."""

    def __init__(self, segments: list[Segment]):
        self.segments = segments
        self.sources: dict[str, str] = {}  # source file -> its signature when read
        self._touched: list[set[str]] = []  # per segment: the sources it holds again or drops
        for seg in segments:
            ranges = json.loads(seg.read(SOURCES_FILE))
            masked = seg.meta.get("masked", [])
            for src in masked:
                self.sources.pop(src, None)
            self.sources.update((src, r[0]) for src, r in ranges.items())
            self._touched.append({*masked, *ranges})

    def _record(self, seg: Segment, name: str):
        return json.loads((seg.folder / name).read_text(encoding="utf-8"))

    @cached_property
    def _entries(self) -> tuple[dict[str, str], dict[str, str]]:
        days: dict[str, str] = {}
        transcripts: dict[str, str] = {}
        for seg, touched in zip(self.segments, self._touched):
            transcripts = {i: sig for i, sig in transcripts.items() if days.get(i) not in touched}  # an orphan's stays
            days = {i: d for i, d in days.items() if d not in touched}
            days.update(self._record(seg, ENTRY_DAYS_FILE))
            transcripts.update(self._record(seg, TRANSCRIPTS_FILE))
        return days, transcripts

    @property
    def days(self) -> dict[str, str]:
        """Each held entry's day file."""
        return self._entries[0]

    @property
    def transcripts(self) -> dict[str, str]:
        """Each kept transcript's signature when it was read (the base's: every transcript then)."""
        return self._entries[1]

    @cached_property
    def declared(self) -> list[Declared]:
        """The held entries that supersede others."""
        out: list[Declared] = []
        for seg, touched in zip(self.segments, self._touched):
            out = [d for d in out if d.source not in touched]
            out.extend(Declared(*d) for d in self._record(seg, SUPERSEDES_FILE))
        return out


def build_delta(layout: Layout, embedder, folder: Path, level: int, progress=None, known: Known | None = None, sigs: Sigs | None = None) -> list[str] | None:
    """Put the documents of the files changed since the segment below was built into a delta segment
    (`sigs`: the files' signatures, if just taken): level 1, LEVELS[0], on the base, replacing both
    deltas; level 2, LEVELS[1], on the level-1 delta, replacing only itself. A session's compress
    then rewrites what changed since the level-1 delta was built, not every change since the base.
    None when this level is not the right thing: no segment below, another model, too much changed
    (DELTA_* / FRESH_*), or nothing the files' signatures show (the caller goes a level down; below
    level 1, a full build)."""
    sigs = sigs or Sigs.take(layout)
    try:
        below = [Segment(folder)]
        for name in LEVELS[: level - 1]:
            below.append(delta_on(below[-1], folder / name))
        if below[-1] is None:
            return None
        replaced = [m for name in LEVELS[level - 1 :] if (m := _manifest(folder / name))]
        held = Held(below)
        edited = set()
        if sigs.transcripts is not None:  # a sync: every transcript's stat, so edits in place show
            had = held.transcripts
            edited = {i for i in {*had, *sigs.transcripts} if had.get(i) != sigs.transcripts.get(i)}
        stale_days = {held.days[i] for i in edited if i in held.days}  # else its entry's day file is new or changed (or it has no entry)
    except (OSError, ValueError, KeyError):
        return None
    base = below[0]
    if base.model != embedder.model or base.meta.get("version") != CACHE_VERSION:
        return None
    # what the segments replaced hold again (an edited transcript's day, a day whose mark moved) stays held
    carried = {src for m in replaced for src in m.get("masked", [])}
    changed = [src for src, sig in sigs.files.items() if held.sources.get(src) != sig or src in stale_days or src in carried]
    removed = sorted(set(held.sources) - set(sigs.files))
    if not changed and not removed:
        return None
    known = known or Known()
    errors: list[str] = []
    # which entries supersede which, over the held and the changed files: a changed entry may mark one
    # of an unchanged day (a resumed session), or lose its mark; that day's documents are collected again
    changed_entries, _ = read_entries(layout, [], only=changed, parsed=known.days)  # problems: reported below
    try:
        newer, also = _supersessions(held, changed_entries, {*changed, *removed})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if also:
        changed_entries += read_entries(layout, [], only=also, parsed=known.days)[0]
        changed = [*changed, *also]
    # the transcripts' signatures before they are read: one edited meanwhile shows as changed next time
    transcripts = {e.id: sig for e in changed_entries if (sig := _transcript_sig(layout, e.id, sigs)) != "-"}
    docs, entries = collect_docs(layout, errors, only=changed, parsed=known.days, newer=newer)
    limit = max(DELTA_MIN_DOCS, DELTA_FRACTION * base.n) if level == 1 else max(FRESH_MIN_DOCS, FRESH_FRACTION * below[-1].n)
    if len(docs) > limit:
        return None
    # reuse cached vectors, and the deltas'; the cache is saved by the next full build
    cache = ChunkVectorCache(layout.cache_dir, embedder.model, embedder.dim)
    for name in LEVELS:
        cache.adopt(folder / name)
    vectors = embed_docs(layout, embedder, docs, entries, cache, errors, progress, save=False, fresh=known.vectors)
    masked = sorted((set(changed) & set(held.sources)) | set(removed))
    meta = {"model": embedder.model, "base_id": below[-1].meta["build_id"], "masked": masked, "transcripts_dir": sigs.folder}
    extra = {**_records(docs, entries, {src: sigs.files.get(src, "-") for src in changed}, transcripts),
             VECTOR_KEYS_FILE: json.dumps(vector_keys(docs, {e.id: e for e in entries}))}
    _write_segment(folder / LEVELS[level - 1], docs, vectors, meta, extra)
    for name in LEVELS[level:]:  # built on the delta just replaced: no longer opened, so removed
        shutil.rmtree(folder / name, ignore_errors=True)
    return errors


def _transcript_sig(layout: Layout, eid: str, sigs: Sigs) -> str:
    if sigs.transcripts is not None:
        return sigs.transcripts.get(eid, "-")
    return _stat_sig(layout.transcript_file(eid))


def _manifest(folder: Path) -> dict:
    """A segment's manifest; {} when there is none or it cannot be read (a cut-off one is rebuilt)."""
    try:
        meta = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _supersessions(held: Held, entries: list[Entry], touched: set[str]) -> tuple[dict[str, str], list[str]]:
    """Old id -> superseding id over held and changed files alike, and the unchanged day files holding
    an entry whose mark that changes (their documents must be collected again)."""
    kept = [d for d in held.declared if d.source not in touched]
    newer = superseded_by([*kept, *(e for e in entries if e.supersedes)])
    before = superseded_by(held.declared)
    moved = {i for i in {*before, *newer} if before.get(i) != newer.get(i)}
    if not moved:
        return newer, []
    return newer, sorted({held.days[i] for i in moved if i in held.days} - touched)


BUILD_LOCK_WAIT_S = 300  # how long a compress or a sync waits for another process's build of the cache
BUSY_NOTE = ("the search cache is being updated by another memtool process (a compress or a sync); this search "
             "read it as it was before, so the latest change may be missing")


class CacheBusy(Exception):
    """Another process is building the cache, and a build of this model is there to be read meanwhile."""

    def __init__(self, folder: Path):
        super().__init__(str(folder))
        self.folder = folder


def _readable(folder: Path, model: str) -> bool:
    """Whether `folder` holds a base segment this embedder's queries can read (as it is)."""
    meta = _manifest(folder)
    return meta.get("model") == model and meta.get("version") == CACHE_VERSION


def refresh_index(layout: Layout, embedder, progress=None, errors: list[str] | None = None, archive: bool = False, known: Known | None = None,
                  wait: bool = True) -> Path:
    """Bring the cache up to date if the files changed since it was built: for a few changed files a
    small segment of those changed since the delta was built (`fresh`), or a new delta of those
    changed since the base was built (`build_delta`); a full build otherwise. Returns its folder. With `archive`, a second cache
    (memory/.cache/search-archive) over the live and the archived files, always built in full.
    `known`: what the caller already parsed and embedded (live cache only). Without `wait`, raises
    CacheBusy rather than wait while another process builds, if there is a cache to read meanwhile."""
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
    readable = not wait and _readable(folder, embedder.model)
    with ExitStack() as held:
        try:
            held.enter_context(locked(layout.cache_dir / "build.lock", timeout=0 if readable else BUILD_LOCK_WAIT_S))
        except LockBusy:
            if readable:
                raise CacheBusy(folder) from None
            raise
        if not fresh():  # else another process built it while we waited
            problems = None
            for level in (() if archive else (2, 1)):  # a fresh segment on the delta, else a new delta
                if problems is None:
                    problems = build_delta(layout, embedder, folder, level, progress, known, sigs)
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
    power cut: it is derived, so written without fsync) is rebuilt from the files. While another
    process builds it (a detached session-end compress: a full build takes a minute at 100,000
    entries), the cache is read as it was, said in `errors`, and the index is marked `stale`."""
    stale = False
    try:
        folder = refresh_index(layout, embedder, progress, errors, archive, wait=False)
    except CacheBusy as busy:
        folder, stale = busy.folder, True
    try:
        index = SearchIndex(folder)
    except (OSError, ValueError, KeyError) as exc:
        if errors is not None:
            errors.append(f"{folder} was damaged ({exc}); rebuilt from the files")
        (folder / "fingerprint").unlink(missing_ok=True)
        return SearchIndex(refresh_index(layout, embedder, progress, errors, archive))
    if stale:
        index.stale = True
        if errors is not None:
            errors.append(BUSY_NOTE)
    return index
