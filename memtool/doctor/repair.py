"""`memory doctor --fix`: repair what can be repaired without loss, move the rest into the quarantine
(memory/quarantine/<timestamp>/: nothing is ever deleted).

Under the store's lock, in this order: remove temp files; rewrite unreadable day files with every
entry that still parses (salvage: a day file cut off by a crash keeps every whole entry before the
cut, one holding git conflict markers the entries of both sides); dedupe (misplaced entries go to
their day, the same id or the same content twice keeps one, an archived copy of a live entry goes);
quarantine orphan transcripts and embeddings and broken embedding files; embed what has no current
vector; rebuild index.json when it is out of date (an unreadable one is quarantined first). The
Report returned is a check made after the repairs.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Sequence

from memtool import constants as C
from memtool.confine import is_regular
from memtool.dayfile import day_document, load_json
from memtool.doctor.checks import Checker, Report, content_duplicates, readable_text
from memtool.errors import ProviderError, StoreCorrupt
from memtool.fsutil import atomic_write_text, dumps_json
from memtool.index_json import write_index
from memtool.models import Entry
from memtool.session_vectors import entry_vectors, kept_sessions
from memtool.store import Layout, Quarantine, Store, archive_layouts

ENTRIES_RE = re.compile(r'"entries"\s*:\s*\[\s*')
SEPARATOR_RE = re.compile(r"\s*,?\s*")
# a conflict: <<<<<<< ours [||||||| base] ======= theirs >>>>>>> (each marker: the first 7 characters of a line)
HUNK_RE = re.compile(r"^<{7}[^\n]*\n(.*?)^(?:\|{7}[^\n]*\n.*?^)?={7}[^\n]*\n(.*?)^>{7}[^\n]*(?:\n|\Z)", re.M | re.S)


def salvage(text: str) -> dict[str, Entry]:
    """Every entry that parses in a damaged day file's text (both sides of a conflict), by id, the first of each."""
    kept: dict[str, Entry] = {}
    for side in conflict_sides(text) or (text,):
        for e in _entries_of(side):
            kept.setdefault(e.id, e)
    return kept


def conflict_sides(text: str) -> tuple[str, str] | None:
    """The two versions of a file holding git conflict markers (diff3 base sections dropped); None when
    it holds none, or a conflict that does not end."""
    if not HUNK_RE.search(text) or re.search(r"^<{7}", HUNK_RE.sub("", text), re.M):
        return None
    return HUNK_RE.sub(r"\1", text), HUNK_RE.sub(r"\2", text)


def parse_entries(data: object) -> list[Entry]:
    """The entries of a parsed day (or index) document that are valid; the others are skipped."""
    items = data.get("entries") if isinstance(data, dict) else data
    out = []
    for item in items if isinstance(items, list) else []:
        try:
            out.append(Entry.from_dict(item))
        except StoreCorrupt:
            continue  # this one stays only in the quarantined original
    return out


def _entries_of(text: str) -> list[Entry]:
    """The valid entries of a day file's text; when it is damaged (cut off, say), every whole entry
    before the damage."""
    try:
        return parse_entries(json.loads(text))
    except (json.JSONDecodeError, RecursionError):  # RecursionError: brackets nested thousands deep
        pass
    start = ENTRIES_RE.search(text)
    decoder, items, pos = json.JSONDecoder(), [], start.end() if start else len(text)
    while pos < len(text):
        try:
            item, pos = decoder.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError):
            break
        items.append(item)
        pos = SEPARATOR_RE.match(text, pos).end()  # type: ignore[union-attr]  # the pattern matches the empty string: never None
    return parse_entries(items)


def _canonical(e: Entry) -> str:
    return json.dumps(e.to_dict(), sort_keys=True)


class Doctor(Checker):
    """The checks, and `--fix`: repair() mends what can be mended without loss and quarantines the rest."""

    def repair(self) -> Report:
        """Fix what can be fixed without loss, quarantine the rest, and check again. An interrupted
        `memory forget` is finished first (its journal says what it was removing)."""
        from memtool.forget import finish_interrupted

        fixed: list[str] = []
        finished = finish_interrupted(self.layout, self.settings.compressor)
        if finished is not None:
            gone = [e["id"] for e in finished.entries] + finished.completed
            fixed.append(
                f"finished an interrupted `memory forget` of {', '.join(gone)}: removed {len(finished.removed)} files, "
                f"rewrote {len(finished.rewritten)}, purged {len(finished.caches)} caches"
            )
        with self.store.lock():
            q = Quarantine(self.layout)
            for tmp in self.temp_files():
                tmp.unlink()
                fixed.append(f"removed temp file {self.rel(tmp)}")
            archives = archive_layouts(self.layout)
            changed = self._repair_days(q, fixed, [self.layout])
            changed |= self._dedupe(q, fixed, [self.layout], {})
            if archives:
                self._repair_days(q, fixed, archives)
                self._dedupe(q, fixed, archives, {e.id: e for _, e in self.read_days()[0]})
            self._quarantine_strays(q, fixed)
            self._embed_missing(fixed, [self.layout, *archives])
            index = self.rel(self.layout.index_file)
            report = self._diagnose()
            if changed or any(p.path == index for p in report.problems):
                if any(p.path == index and p.kind != "index" for p in report.problems):
                    q.move(self.layout.index_file)  # unreadable: kept for the record, then rebuilt
                written = write_index(self.layout, self.settings.compressor)
                fixed.append(written.not_written or f"rebuilt {index} from the day files")
                report = self._diagnose()
        report.fixed, report.quarantined = fixed, q.moved
        return report

    def _index_entries(self) -> list[Entry]:
        try:
            return parse_entries(load_json(self.layout.index_file))
        except (StoreCorrupt, UnicodeDecodeError, FileNotFoundError):
            return []

    def _repair_days(self, q: Quarantine, fixed: list[str], folders: Sequence[Layout]) -> bool:
        """Unparsable or conflicted day files: keep every entry that parses (both sides of a conflict, and,
        for a live day, index.json's copy), quarantine the original."""
        _, bad = self.read_days(folders)
        indexed = cache(self._index_entries)  # read once, when a live day needs it
        for problem in bad:
            path = self.layout.root / problem.path
            kept = salvage(readable_text(path, errors="replace"))  # a link or FIFO: "" (confine)
            if path.parent == self.layout.index_dir:  # index.json lists live entries only
                for e in indexed():
                    if e.day == path.stem:
                        kept.setdefault(e.id, e)
            if is_regular(path):
                # a copy of the original (written and fsynced) first: a crash leaves it in place or in the quarantine
                q.write(path.relative_to(self.layout.memory_dir), path.read_bytes())
            else:
                q.move(path)  # a link or FIFO is set aside unread: there is nothing in it to lose
            atomic_write_text(path, day_document(path.stem, kept.values()))
            fixed.append(f"rewrote {problem.path} with the {len(kept)} entries that parse; the original is in {q.moved[-1]}")
        return bool(bad)

    def _dedupe(self, q: Quarantine, fixed: list[str], folders: Sequence[Layout], live: dict[str, Entry]) -> bool:
        """Misplaced entries go to their day (in the same folder); the same id twice keeps the first; the same
        content twice keeps the earlier. `live`: the live entries, when the folders are the archive's: an
        archived copy of one of them goes (the live copy is kept, as `memory archive` does)."""
        found, _ = self.read_days(folders)
        current: dict[Path, list[Entry]] = {}
        kept: dict[str, tuple[Path, Entry]] = {}
        removed: list[tuple[Path, Entry, str]] = []
        for path, e in found:
            current.setdefault(path, []).append(e)
            twin = kept[e.id][1] if e.id in kept else live.get(e.id)  # an id of a live entry is never kept here
            if twin is None:
                kept[e.id] = (path, e)
            elif twin.to_dict() != e.to_dict():
                why = "archived copy of a live entry" if e.id in live else f"same id as an entry kept in {twin.day}.json"
                removed.append((path, e, why + ", different content"))
        for lay in folders:  # its transcript and embedding are then of no entry: quarantined with the strays
            for e, first in content_duplicates(kept.values(), lay):
                removed.append((kept.pop(e.id)[0], e, f"same content as {first.id}"))
        for n, (path, e, why) in enumerate(removed, 1):  # each copy that goes is in the quarantine before it goes
            folder = path.parent.relative_to(self.layout.memory_dir).as_posix()
            q.write(f"{folder}/removed-{n}-{e.id}.json", dumps_json({"reason": why, "entry": e.to_dict()}))
        by_file: dict[Path, list[Entry]] = {path: [] for path in current}
        for path, e in kept.values():
            by_file.setdefault(path.parent / f"{e.day}.json", []).append(e)
        rewrites = [
            (path, current.get(path, []), new)
            for path, new in sorted(by_file.items())
            if sorted(map(_canonical, current.get(path, []))) != sorted(map(_canonical, new))
        ]
        rewrites.sort(key=lambda r: not {e.id for e in r[2]} - {e.id for e in r[1]})  # those an entry moves into first: a crash leaves it twice, never nowhere
        for path, old, new in rewrites:
            atomic_write_text(path, day_document(path.stem, new))
            fixed.append(f"rewrote {self.rel(path)}: {len(old)} -> {len(new)} entries")
        return bool(rewrites)

    def _quarantine_strays(self, q: Quarantine, fixed: list[str]) -> None:
        """Transcripts and embeddings of no entry, and broken embedding files, go to the quarantine; a
        transcript or embedding whose entry lives in another folder (live, or an archive year) that lacks
        it moves there instead: it may be the only copy (an interrupted archive or restore)."""
        folders = [*reversed(archive_layouts(self.layout)), self.layout]  # the last one an entry is in wins
        homes = {e.id: lay for lay in folders for _, e in self.read_days([lay])[0]}  # id -> the folder of its day file
        for p in self._diagnose().of("orphan", "embedding", "unparsable"):
            path = self.layout.root / p.path
            if not (p.fix.startswith("quarantine") and path.is_file()):
                continue
            home = homes.get(path.stem) if p.kind == "orphan" else None
            file_of = Layout.transcript_file if path.suffix == ".md" else Layout.passages_file if C.PASSAGES_DIR in path.parts[-3:] else Layout.embedding_file
            target = None if home is None else file_of(home, path.stem)
            if target is not None and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)  # one rename: the file is in one place or the other
                fixed.append(f"moved {p.path} to {self.rel(target)}, beside its entry")
            else:
                q.move(path)

    def _embed_missing(self, fixed: list[str], folders: Sequence[Layout]) -> None:
        """Embed the entries of the folders (live, archive years) that have no current vector."""
        if self.embedder is None:
            return
        todo: list[tuple[Store, Entry]] = []
        for lay in folders:
            store = Store(lay)
            found, _ = self.read_days([lay])
            # no vector file: one of another model is `memory reembed`'s; one of an entry edited since is kept
            # (written once: the search cache holds the edit's vector, see Store.write_embeddings)
            todo += [(store, e) for e in {e.id: e for _, e in found}.values() if not lay.embedding_file(e.id).is_file()]
        if not todo:
            return
        try:
            sessions = {k: v for store, e in todo for k, v in kept_sessions(store.layout, [e]).items()}
            vectors, _ = entry_vectors(self.embedder, [e for _, e in todo], sessions)
        except ProviderError as exc:
            fixed.append(f"could not embed {len(todo)} entries: {exc}")
            return
        for (store, e), v in zip(todo, vectors):
            store.write_embedding(e, self.embedder.model, v)
        fixed.append(f"embedded {len(todo)} entries with {self.embedder.model}")
