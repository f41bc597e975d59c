"""The checks of `memory doctor`, in the order diagnose() runs them: each file of the store against
the per-day entry files, which are the truth; then each archive year the same way. Read-only: the
repairs are in repair.py. What they hand back: a Report of the Problems found (with what `--fix` did
about them), which the CLI renders (memtool/cli/doctor.py) or prints as JSON (Report.to_dict)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from memtool import confine
from memtool import constants as C
from memtool.config import Settings
from memtool.dayfile import CONFLICT_RE, load_json, read_day, sort_entries
from memtool.errors import StorageError, StoreCorrupt, UnsafePath
from memtool.models import Entry
from memtool.store import ArchiveLayout, Layout, Store, archive_layouts, read_passages

if TYPE_CHECKING:
    from memtool.providers import Embedder

ERROR, WARNING = "error", "warning"


@dataclass
class Problem:
    kind: str  # temp, forget, unparsable, conflict, misplaced, duplicate, index, orphan, embedding, pending, config, unsafe
    path: str  # relative to the memory root
    message: str
    line: int | None = None
    severity: str = ERROR
    fix: str = ""  # what `--fix` does about it; empty when it needs a person

    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass
class Report:
    root: str  # the fields in the order Report.to_dict gives them
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not any(p.severity == ERROR for p in self.problems)

    def add(self, *args, **kw) -> None:
        """Report a Problem(*args, **kw)."""
        self.problems.append(Problem(*args, **kw))

    def of(self, *kinds: str) -> list[Problem]:
        return [p for p in self.problems if p.kind in kinds]

    def to_dict(self) -> dict:
        return {"root": self.root, "healthy": self.healthy, **asdict(self)}


MD_CONFLICT_RE = re.compile(r"^<{7}(?: |$)(?:.*\n)*?^={7}$(?:.*\n)*?^>{7}(?: |$)", re.M)
SKIP_DIRS = (C.CACHE_DIR, C.QUARANTINE_DIR)
REBUILD_INDEX = "rebuild from the day files"
# index.json is derived from the day files and git-ignored: behind them after every `git pull` that
# brought entries, and absent in a fresh clone. Not an error: nothing is lost, and any write rebuilds it.
DERIVED_INDEX = "It is derived from the day files (normal after a git pull or in a fresh clone); the next write, `memory reindex` or --fix rebuilds it"
MERGE_CONFLICT_FIX = (  # a day file's "conflicts": memtool's merge driver met one entry edited two ways (memtool/gitmerge.py)
    '"entries" holds one version, "conflicts" both ("ours", "theirs"); put the right one in "entries", delete "conflicts", '
    "then `git add` the file and run `memory reindex`"
)
# an id met again: (what the message says, the fix when both copies are the same, the fix otherwise)
SAME_ID_TWICE = ("stored twice", "keep one", "keep the first, quarantine the other")
SAME_ID_LIVE = ("also live", "keep the live one", "keep the live one, quarantine this copy")


def split_location(exc: StoreCorrupt | UnicodeDecodeError, path: Path, text: str | None = None) -> tuple[str, int | None]:
    """(what, line) of a file that does not read: '<path>:<line>:<col>: what' -> ('what', line), as the
    report shows the path once; bytes not UTF-8 -> ('not UTF-8 (why)', their line in `text`, if given)."""
    if isinstance(exc, UnicodeDecodeError):
        line = None if text is None else text.encode("utf-8", errors="surrogateescape")[: exc.start].count(b"\n") + 1
        return f"not UTF-8 ({exc.reason})", line
    m = re.match(re.escape(str(path)) + r"(?::(\d+))?(?::\d+)?:?\s*", str(exc))
    if not m:
        return str(exc), None
    return str(exc)[m.end() :], int(m.group(1)) if m.group(1) else None


def readable_text(path: Path, errors: str = "surrogateescape") -> str:
    """A day file's text for telling a conflict from other damage; '' when memtool does not read it (confine)."""
    try:
        return confine.read_text(path, errors=errors)
    except (OSError, UnsafePath):
        return ""


def content_duplicates(found: Iterable[tuple[Path, Entry]], layout: Layout) -> list[tuple[Entry, Entry]]:
    """(later, earlier) pairs of the folder's day file entries holding the same memory twice: same compressed fields and transcript."""
    groups: dict[str, list[Entry]] = {}
    for e in sort_entries(e for path, e in found if path.parent == layout.index_dir):
        record = {k: v for k, v in e.to_dict().items() if k not in ("id", "timestamp")}
        groups.setdefault(json.dumps(record, sort_keys=True), []).append(e)
    out: list[tuple[Entry, Entry]] = []
    for group in (g for g in groups.values() if len(g) > 1):
        first: dict[str, Entry] = {}
        for e in group:
            try:
                key = hashlib.sha256(confine.read_bytes(layout.transcript_file(e.id), C.MAX_DOC_BYTES)).hexdigest()
            except (FileNotFoundError, UnsafePath):
                key = ""
            earlier = first.setdefault(key, e)
            if earlier is not e:
                out.append((e, earlier))
    return out


class Checker:
    """The checks of one memory root, live store and archive. Read-only: diagnose() reports, changes nothing."""

    def __init__(self, layout: Layout, settings: Settings, embedder: Embedder | None, notes: list[Problem] | None = None):
        self.layout = layout
        self.store = Store(layout)
        self.settings = settings
        self.embedder = embedder
        self.notes = notes or []

    def rel(self, path: Path) -> str:
        return path.relative_to(self.layout.root).as_posix()

    def diagnose(self) -> Report:
        """The check, under the store's write lock so that no writer is half-way through; without it
        (reported) when it cannot be had: a read-only check still runs."""
        notes: list[Problem] = []
        with ExitStack() as stack:
            try:
                stack.enter_context(self.store.lock())
            except StorageError as exc:
                notes.append(Problem("lock", self.rel(self.layout.lock_file), f"checked without the lock: {exc}", severity=WARNING))
            report = self._diagnose()
        report.problems[:0] = notes
        return report

    def temp_files(self) -> list[Path]:
        """Temp files of interrupted writes anywhere under memory/, the archive included."""
        out: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(self.layout.memory_dir):
            if Path(dirpath) == self.layout.memory_dir:
                dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            out.extend(Path(dirpath) / f for f in filenames if f.startswith(".") and f.endswith(".tmp"))
        return sorted(out)

    def read_days(self, folders: Sequence[Layout] | None = None) -> tuple[list[tuple[Path, Entry]], list[Problem]]:
        """(day file, entry) for every entry of the folders' day files (default: the live store), and a
        problem for each day file that cannot be read."""
        found: list[tuple[Path, Entry]] = []
        bad: list[Problem] = []
        for lay in [self.layout] if folders is None else folders:
            for path in lay.day_files():
                try:
                    found.extend((path, e) for e in read_day(path))
                except (StoreCorrupt, UnicodeDecodeError) as exc:
                    text = readable_text(path)
                    kind = "conflict" if isinstance(exc, StoreCorrupt) and CONFLICT_RE.search(text) else "unparsable"
                    bad.append(Problem(kind, self.rel(path), *split_location(exc, path, text), fix="quarantine, keep what parses"))
        return found, bad

    def _diagnose(self) -> Report:
        lay = self.layout
        rep = Report(str(lay.root), problems=list(self.notes))
        for tmp in self.temp_files():
            rep.add("temp", self.rel(tmp), "temporary file left by an interrupted write", fix="remove")
        self._check_forget(rep)
        self._check_links(rep)
        entries = {i: e for i, (_, e) in self._check_entries(rep, [lay], {}).items()}
        self._check_index(rep, entries)
        self._check_files(rep, lay, entries, set())
        for e in entries.values():
            if e.pending:
                rep.add("pending", self.rel(lay.day_file(e.day)), f"entry {e.id} was compressed locally as a stand-in; run `memory retry`", severity=WARNING)
        for md in lay.markdown_files():
            self._check_markdown(rep, md)
        rep.counts = {
            "entries": len(entries),
            "day_files": len(lay.day_files()),
            "embeddings": sum(1 for _ in lay.embedding_files()),
            "transcripts": sum(1 for _ in lay.transcript_files()),
            "passages_files": sum(1 for _ in lay.passages_files()),
        }
        archives = archive_layouts(lay)
        if archives:
            archived = self._check_entries(rep, archives, entries)
            for arch in archives:
                here = {i: e for i, (path, e) in archived.items() if path.parent == arch.index_dir}
                self._check_files(rep, arch, here, archived.keys() - here.keys())
                for md in arch.markdown_files():
                    self._check_markdown(rep, md)
            rep.counts.update(archived_entries=len(archived), archived_day_files=sum(len(a.day_files()) for a in archives))
        return rep

    def _check_forget(self, rep: Report) -> None:
        from memtool.forget import journal_file, read_journal

        journal = journal_file(self.layout)
        if journal.exists():
            ids = read_journal(self.layout)[0]
            what = f"an interrupted `memory forget` of {len(ids)} entries ({', '.join(ids) or 'unreadable journal'}); their copies may remain"
            rep.add("forget", self.rel(journal), what, fix="finish it")

    def _check_entries(self, rep: Report, folders: Sequence[Layout], live: dict[str, Entry]) -> dict[str, tuple[Path, Entry]]:
        """Day files that cannot be read, misplaced and duplicate entries. `live`: the live entries, when
        the folders are the archive's. Returns the entries kept (the first of each id) with their day file."""
        found, bad = self.read_days(folders)
        rep.problems.extend(bad)
        for arch in (f for f in folders if isinstance(f, ArchiveLayout)):
            for path in arch.day_files():
                if path.stem[:4] != arch.year:
                    home = self.rel(ArchiveLayout(arch.root, path.stem[:4]).day_file(path.stem))
                    what = f"move it to {home} by hand (and its entries' transcripts and embeddings, if they are beside it)"
                    rep.add("misplaced", self.rel(path), f"a day of {path.stem[:4]} in the archive of {arch.year}; {what}")
        self._check_merge_conflicts(rep, {path for path, _ in found})
        kept: dict[str, tuple[Path, Entry]] = {}
        for path, e in found:
            if e.day != path.stem:
                rep.add("misplaced", self.rel(path), f"entry {e.id} (timestamp {e.timestamp}) belongs in {e.day}.json", fix="move it")
            twin = kept[e.id][1] if e.id in kept else live.get(e.id)
            if twin is None:
                kept[e.id] = (path, e)
                continue
            same = twin.to_dict() == e.to_dict()
            where, fix_same, fix_other = SAME_ID_TWICE if e.id in kept else SAME_ID_LIVE
            rep.add("duplicate", self.rel(path), f"entry {e.id} is {where}" + ("" if same else " with different content"), fix=fix_same if same else fix_other)
        for lay in folders:
            for dup, first in content_duplicates(kept.values(), lay):
                what = f"entry {dup.id} repeats entry {first.id} (same content)"
                rep.add("duplicate", self.rel(lay.day_file(dup.day)), what, fix="keep the earlier, quarantine this one")
        return kept

    def _check_merge_conflicts(self, rep: Report, paths: set[Path]) -> None:
        """Day files where memtool's merge driver met one entry edited two ways (memtool/gitmerge.py)."""
        for path in sorted(paths):
            text = path.read_text(encoding="utf-8", errors="replace")
            if '"conflicts"' not in text:
                continue
            data = load_json(path, text)
            for item in data.get("conflicts") or () if isinstance(data, dict) else ():
                entry_id = item.get("id") if isinstance(item, dict) else None
                rep.add("conflict", self.rel(path), f"entry {entry_id} was edited two ways on the two sides of a git merge: {MERGE_CONFLICT_FIX}")

    def _check_links(self, rep: Report) -> None:
        """Folders under memory/ that are symbolic links: every write into them is refused (memtool never
        follows a link inside a memory root), so compress and log would fail where doctor said healthy."""
        for dirpath, dirnames, _ in os.walk(self.layout.memory_dir):
            for name in dirnames:
                folder = Path(dirpath) / name
                if folder.is_symlink():
                    rep.add(
                        "unsafe",
                        self.rel(folder),
                        f"a symbolic link to {os.path.realpath(folder)}: memtool writes nothing through it; {confine.link_fix(folder)}",
                    )

    def _check_index(self, rep: Report, entries: dict[str, Entry]) -> None:
        path = self.layout.index_file
        where = self.rel(path)
        if not path.is_file():
            if entries:
                rep.add("index", where, f"missing; {len(entries)} entries are not listed. {DERIVED_INDEX}", severity=WARNING, fix=REBUILD_INDEX)
            return
        try:
            data = load_json(path)
            listed = {d["id"]: Entry.from_dict(d).to_dict() for d in data["entries"]}
        except StoreCorrupt as exc:
            kind = "conflict" if "conflict" in str(exc) else "unparsable"
            rep.add(kind, where, *split_location(exc, path), fix=REBUILD_INDEX)
            return
        except (TypeError, KeyError, UnicodeDecodeError) as exc:
            rep.add("unparsable", where, f"not a memtool index ({exc!r:.80})", fix=REBUILD_INDEX)
            return
        missing = entries.keys() - listed.keys()
        extra = listed.keys() - entries.keys()
        differ = [i for i in entries.keys() & listed.keys() if entries[i].to_dict() != listed[i]]
        if missing or extra or differ:
            counts = f"{len(missing)} entries missing, {len(extra)} extra, {len(differ)} differ"
            rep.add("index", where, f"out of date: {counts}. {DERIVED_INDEX}", severity=WARNING, fix=REBUILD_INDEX)

    def _check_files(self, rep: Report, lay: Layout, entries: dict[str, Entry], elsewhere: set[str]) -> None:
        """The embedding, transcript and passages files of one folder (live, or an archive year) against the entries
        of its day files. `elsewhere`: ids of entries archived in another year's folder (not orphans: that
        day file is reported as misplaced)."""
        store, seen = Store(lay), set()  # seen: entries with an embedding file here, current or reported
        kinds = (
            ("embedding", lay.embedding_files, lay.embedding_file),
            ("transcript", lay.transcript_files, lay.transcript_file),
            ("passage vectors", lay.passages_files, lay.passages_file),
        )
        for what, files, place in kinds:
            for f in sorted(Path(de.path) for de in files()):
                if f.stem in elsewhere:
                    continue
                if what == "embedding":
                    seen.add(f.stem)
                if f.stem not in entries:
                    rep.add("orphan", self.rel(f), f"{what} of no entry (a write was interrupted, or its entry was removed)", fix="quarantine")
                elif f != place(f.stem):
                    rep.add("orphan", self.rel(f), f"{what} in another month's folder", fix="quarantine")
                elif what == "embedding":
                    self._check_vector(rep, store, f)
                elif what == "passage vectors":
                    self._check_passages(rep, f)
        for e in entries.values():
            if e.id not in seen:
                what = f"entry {e.id} has no current embedding (search embeds it on the fly)"
                rep.add("pending", self.rel(lay.embedding_file(e.id)), what, severity=WARNING, fix="embed" if self.embedder else "")

    def _check_passages(self, rep: Report, f: Path) -> None:
        """One passages file at its place: readable and well-formed (derived: quarantined, the next
        `memory reindex` embeds its passages and writes it anew)."""
        try:
            read_passages(f)
        except StoreCorrupt as exc:
            rep.add("unparsable", self.rel(f), f"{exc}; `memory reindex` writes it anew", fix="quarantine")

    def _check_vector(self, rep: Report, store: Store, f: Path) -> None:
        """One embedding file at its place: readable, well-formed, of the configured embedder."""
        where = self.rel(f)
        try:
            data = store.read_embedding(f.stem)
        except (StoreCorrupt, UnicodeDecodeError) as exc:
            rep.add("unparsable", where, *split_location(exc, f), fix="quarantine, re-embed")
            return
        if data is None:
            return  # gone since listed
        vec, emb = data["embedding"], self.embedder
        if data.get("id", f.stem) != f.stem or data.get("dim") != len(vec) or not bool(np.isfinite(vec).all()):
            rep.add("embedding", where, f"malformed: id {data.get('id')!r}, dim {data.get('dim')!r}, {len(vec)} values", fix="quarantine, re-embed")
        elif emb is not None and (data.get("model") != emb.model or len(vec) != emb.dim):
            what = f"made with '{data.get('model')}' ({len(vec)} dims); the configured embedder is '{emb.model}' ({emb.dim} dims)"
            rep.add("embedding", where, what + ". Run `memory reembed`.")
        # else current; one made before an edit is kept too: written once, the search cache embeds the edit (Store.write_embeddings)

    def _check_markdown(self, rep: Report, path: Path) -> None:
        try:
            data = confine.read_bytes(path, C.MAX_DOC_BYTES)
        except FileNotFoundError:
            return
        except UnsafePath as exc:  # a link out of the root, a FIFO, a device, too large: never read
            rep.add("unsafe", self.rel(path), f"{exc}; memtool skips it (move it away or replace it with a file)", severity=WARNING)
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            rep.add("unparsable", self.rel(path), f"not UTF-8 at line {line} ({exc.reason}); fix the file by hand", line)
            return
        m = MD_CONFLICT_RE.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            rep.add("conflict", self.rel(path), "git conflict markers; resolve them by hand", line)
