"""Delta segments: the documents of the files changed since the segment below was built, so that a
change costs what changed, not a full build. Two levels: the delta on the base, and a fresh segment
on the delta (memtool/search/index.py decides which to build; memtool/search/segment.py reads them
as one index with the base)."""

from __future__ import annotations

import json
import shutil
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from memtool.models import Entry
from memtool.search.docs import Declared, collect_docs, read_entries, superseded_by
from memtool.search.segment import DELTA_DIR, FRESH_DIR, SOURCES_FILE, Segment, delta_on
from memtool.search.vectors import VECTOR_KEYS_FILE, ChunkVectorCache, embed_docs, vector_keys
from memtool.search.write import CACHE_VERSION, ENTRY_DAYS_FILE, SUPERSEDES_FILE, TRANSCRIPTS_FILE, file_sig, manifest, records, write_segment
from memtool.store import Layout

if TYPE_CHECKING:
    from memtool.search.index import Known, Sigs

DELTA_MIN_DOCS = 2000  # a delta may always grow this large before a full rebuild …
DELTA_FRACTION = 0.2  # … or this share of the base, whichever is larger
FRESH_MIN_DOCS = 500  # a fresh segment may always grow this large before the delta is rebuilt …
FRESH_FRACTION = 0.1  # … or this share of the delta, whichever is larger
LEVELS = (DELTA_DIR, FRESH_DIR)  # the delta segments, each built on the one before (the first on the base)


class Held:
    """What a chain of segments (the base, then the deltas built on it) holds, seen as one: a delta's
    source files replace the same files below it. Read from the records `write.records` wrote (the
    caller holds the build lock: no segment is replaced meanwhile)."""

    def __init__(self, folders: list[Path]):
        self.folders = folders
        self.sources: dict[str, str] = {}  # source file -> its signature when read
        self._touched: list[set[str]] = []  # per segment: the sources it holds again or drops
        for folder in folders:
            ranges = self._record(folder, SOURCES_FILE)
            masked = manifest(folder).get("masked", [])
            for src in masked:
                self.sources.pop(src, None)
            self.sources.update((src, r[0]) for src, r in ranges.items())
            self._touched.append({*masked, *ranges})

    def _record(self, folder: Path, name: str):
        return json.loads((folder / name).read_text(encoding="utf-8"))

    def stale_days(self, transcripts: dict[str, str]) -> set[str]:
        """The day files of the held entries whose kept transcript is not as it was read (edited in
        place, added or removed): `transcripts`, every kept transcript's signature now."""
        had = self.transcripts
        edited = {i for i in {*had, *transcripts} if had.get(i) != transcripts.get(i)}
        return {self.days[i] for i in edited if i in self.days}  # else its entry's day file is new or changed (or it has no entry)

    @cached_property
    def _entries(self) -> tuple[dict[str, str], dict[str, str]]:
        days: dict[str, str] = {}
        transcripts: dict[str, str] = {}
        for folder, touched in zip(self.folders, self._touched):
            transcripts = {i: sig for i, sig in transcripts.items() if days.get(i) not in touched}  # an orphan's stays
            days = {i: d for i, d in days.items() if d not in touched}
            days.update(self._record(folder, ENTRY_DAYS_FILE))
            transcripts.update(self._record(folder, TRANSCRIPTS_FILE))
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
        for folder, touched in zip(self.folders, self._touched):
            out = [d for d in out if d.source not in touched]
            out.extend(Declared(*d) for d in self._record(folder, SUPERSEDES_FILE))
        return out


def build_delta(layout: Layout, embedder, folder: Path, level: int, sigs: Sigs, known: Known, progress=None) -> list[str] | None:
    """Put the documents of the files changed since the segment below was built into a delta segment
    (`sigs`: the files' signatures, taken before reading them): level 1, LEVELS[0], on the base, replacing both
    deltas; level 2, LEVELS[1], on the level-1 delta, replacing only itself. A session's compress
    then rewrites what changed since the level-1 delta was built, not every change since the base.
    None when this level is not the right thing: no segment below, another model, too much changed
    (DELTA_* / FRESH_*), or nothing the files' signatures show (the caller goes a level down; below
    level 1, a full build)."""
    try:
        below = [Segment(folder)]
        for name in LEVELS[: level - 1]:
            below.append(delta_on(below[-1], folder / name))
        if below[-1] is None:
            return None
        replaced = [m for name in LEVELS[level - 1 :] if (m := manifest(folder / name))]
        held = Held([seg.folder for seg in below])
        # a sync brings every transcript's stat, so edits in place show
        stale_days = held.stale_days(sigs.transcripts) if sigs.transcripts is not None else set()
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
    extra = {**records(docs, entries, {src: sigs.files.get(src, "-") for src in changed}, transcripts),
             VECTOR_KEYS_FILE: json.dumps(vector_keys(docs, {e.id: e for e in entries}))}
    write_segment(folder / LEVELS[level - 1], docs, vectors, meta, extra)
    for name in LEVELS[level:]:  # built on the delta just replaced: no longer opened, so removed
        shutil.rmtree(folder / name, ignore_errors=True)
    return errors


def _transcript_sig(layout: Layout, eid: str, sigs: Sigs) -> str:
    if sigs.transcripts is not None:
        return sigs.transcripts.get(eid, "-")
    return file_sig(layout.transcript_file(eid))


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
