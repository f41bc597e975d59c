"""Keeping the derived search cache up to date: when a cheap stat fingerprint of the files changes,
the documents (memtool/search/docs.py) of what changed go into a delta segment
(memtool/search/delta.py), or everything into a new base (`build`), with their vectors
(memtool/search/vectors.py), written by memtool/search/write.py and read memory-mapped by
memtool/search/segment.py, so a cold search parses almost nothing. Vectors are reused across
builds, so only new text is embedded.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from memtool import confine
from memtool import constants as C
from memtool.dayfile import ParsedDays
from memtool.errors import LockBusy, UnsafePath
from memtool.fsutil import atomic_write_text, locked
from memtool.search.delta import LEVELS, Held, build_delta
from memtool.search.docs import collect_docs, source_key
from memtool.search.segment import SearchIndex
from memtool.search.typos import DICTIONARY_FILE, dictionary_text
from memtool.search.vectors import ChunkVectorCache, embed_docs
from memtool.search.write import CACHE_VERSION, TRANSCRIPTS_FILE, file_sig, manifest, records, write_segment
from memtool.store import Layout


BUILD_LOCK_WAIT_S = 300  # how long a compress or a sync waits for another process's build of the cache
BUSY_NOTE = ("the search cache is being updated by another memtool process (a compress or a sync); this search "
             "read it as it was before, so the latest change may be missing")


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
        folder = file_sig(layout.transcripts_dir)
        if files is None:
            files = {source_key(layout, p): file_sig(p) for p in [*layout.day_files(), *layout.markdown_files()]}
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
    segments = chain(layout.cache_dir / C.SEARCH_DIR)
    recorded: dict[str, int] = {}
    whole = bool(segments)
    for path in segments:
        try:
            rec = json.loads(confine.read_bytes(path / TRANSCRIPTS_FILE))
        except (OSError, ValueError, UnsafePath):
            rec = None
        if not isinstance(rec, dict):
            whole = False
            continue
        recorded.update((eid, int(size)) for eid, sig in rec.items() if (size := str(sig).partition(":")[0]).isdigit())
    if whole and manifest(segments[-1]).get("transcripts_dir") == file_sig(layout.transcripts_dir):
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


def chain(folder: Path) -> list[Path]:
    """The folders of the base segment and of the deltas built on it, in order, by their manifests
    (a delta left from an older build is not part of it)."""
    out: list[Path] = []
    below: dict = {}
    for path in (folder, *(folder / name for name in LEVELS)):
        meta = manifest(path)
        if not meta or (out and meta.get("base_id") != below.get("build_id")):
            break
        out.append(path)
        below = meta
    return out


def fingerprint(layout: Layout, model: str, archive: bool = False, sigs: Sigs | None = None) -> str:
    """Changes whenever a day or Markdown file changes (size/mtime), appears or goes, and whenever a
    transcript appears or goes (its folder's mtime). With `archive`, the files under
    memory/archive/YYYY/ count too. `sigs`: the live files' signatures, when the caller has just
    taken them. A transcript edited in place is seen by a sync, which also compares `transcripts_digest`."""
    h = hashlib.sha256(f"v{CACHE_VERSION}|{model}".encode())
    for lay in _sources(layout, archive):
        now = sigs if sigs is not None and lay is layout else Sigs.take(lay, transcripts=False)
        h.update(json.dumps([now.files, file_sig(lay.transcripts_dir), file_sig(lay.embeddings_dir)]).encode())
    return h.hexdigest()


def transcripts_digest(sigs: Sigs) -> str:
    return hashlib.sha256(json.dumps(sigs.transcripts, sort_keys=True).encode()).hexdigest() if sigs.transcripts is not None else ""


def _sources(layout: Layout, archive: bool) -> list[Layout]:
    """The live layout, and with `archive` one layout per memory/archive/YYYY/ folder."""
    if not archive:
        return [layout]
    from memtool.archive import archive_layouts

    return [layout, *archive_layouts(layout)]


@dataclass
class Known:
    """What the caller (a sync) already read or computed, so that a build does not redo it."""

    days: ParsedDays = field(default_factory=dict)  # day files parsed, with the stat they were read at
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # entry vectors, keyed by entry_vector_key
    sigs: Sigs | None = None  # the files' signatures, taken before any of them was read



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
    extra = {**records(docs, entries, sigs.files, sigs.transcripts), DICTIONARY_FILE: dictionary_text()}
    write_segment(folder, docs, vectors, {"model": embedder.model, "transcripts_dir": sigs.folder}, extra)
    return errors


class CacheBusy(Exception):
    """Another process is building the cache, and a build of this model is there to be read meanwhile."""

    def __init__(self, folder: Path):
        super().__init__(str(folder))
        self.folder = folder


def _readable(folder: Path, model: str) -> bool:
    """Whether `folder` holds a base segment this embedder's queries can read (as it is)."""
    meta = manifest(folder)
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

    def stamped() -> list[str]:  # the fingerprint, then the transcripts' digest when it was known
        return stamp.read_text().split("\n") if stamp.is_file() else [""]

    def fresh() -> bool:
        have = stamped()
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
        if fresh():
            return folder  # another process built it while we waited
        if not (digest and stamped()[0] == fp and _as_read(folder, sigs)):  # else only the transcripts'
            # digest was missing (a compress records none) and the sync after it finds each as read
            problems = None
            for level in (() if archive else (2, 1)):  # a fresh segment on the delta, else a new delta
                if problems is None:
                    problems = build_delta(layout, embedder, folder, level, sigs, known or Known(), progress)
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


def _as_read(folder: Path, sigs: Sigs) -> bool:
    """Whether every kept transcript of a held entry is as the segment holding it read it."""
    try:
        return not Held(chain(folder)).stale_days(sigs.transcripts or {})
    except (OSError, ValueError, KeyError, TypeError):
        return False  # a record cut off: build


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
