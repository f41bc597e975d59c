"""Retention: `memory archive` moves old daily logs and entries to memory/archive/YYYY/.

memory/archive/YYYY/ is laid out like memory/ (YYYY-MM-DD.md logs, index/YYYY-MM-DD.json day files,
index/embeddings/YYYY-MM/<id>.vec, transcripts/YYYY-MM/<id>.md), so `ArchiveLayout` (memtool/store.py) lets the same code read both.
Nothing is deleted: every file is copied (written to a temp file, fsynced, renamed) before its live
source is removed, all under the root's lock. A crash therefore leaves every entry in exactly one
place or, at worst, in both; the next run resolves "both" by keeping the live copy. Pinned entries
and entries of high or critical importance never move.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from memtool import confine
from memtool import constants as C
from memtool.config import Settings
from memtool.dayfile import DAY_RE, day_document, read_day
from memtool.errors import NotFound, StorageError
from memtool.fsutil import atomic_write_bytes, atomic_write_text, dumps_json, fsync_dir
from memtool.index_json import write_index
from memtool.models import Entry, parse_iso, utcnow
from memtool.store import ArchiveLayout, Layout, Quarantine, Store, archive_layouts, get_archived


@dataclass
class ArchiveReport:
    dry_run: bool
    logs: list[str] = field(default_factory=list)  # "memory/2025-01-02.md -> memory/archive/2025/2025-01-02.md"
    entries: list[str] = field(default_factory=list)  # ids moved
    kept_pinned: list[str] = field(default_factory=list)  # old enough, but pinned
    kept_important: list[str] = field(default_factory=list)  # old enough, but high or critical
    resolved: list[str] = field(default_factory=list)  # leftovers of an interrupted run, put right
    log_retention_days: int = 0  # the settings it ran with
    entry_retention_days: int = 0


def archive(layout: Layout, settings: Settings, dry_run: bool = False, now: datetime | None = None) -> ArchiveReport:
    """`memory archive` and MCP memory_archive."""
    now = (now or utcnow()).astimezone()
    store = Store(layout)
    report = ArchiveReport(dry_run, log_retention_days=settings.log_retention_days, entry_retention_days=settings.entry_retention_days)
    with store.lock():
        _resolve(layout, store, report, dry_run)
        logs = _old_logs(layout, settings.log_retention_days, now)
        entries = _old_entries(layout, settings.entry_retention_days, now, report)
        for path in logs:
            dest = ArchiveLayout(layout.root, path.stem[:4]).daily_log(path.stem)
            report.logs.append(f"{layout.rel(path)} -> {layout.rel(dest)}")
            if not dry_run:
                _move_log(path, dest)
        report.entries = [e.id for _, e in entries]
        if entries and not dry_run:
            _move_entries(layout, entries)
        if not dry_run and (entries or report.resolved):
            write_index(store.layout, settings.compressor)
    return report


def archive_ids(layout: Layout, settings: Settings, ids: list[str], dry_run: bool = False) -> ArchiveReport:
    """`memory archive ID...`: move these live entries to memory/archive/YYYY/ whatever their age,
    pinned or important ones too (they were named); no daily log moves. Every id must name a live
    entry, else nothing moves (NotFound)."""
    ids = list(dict.fromkeys(i.strip() for i in ids))
    store = Store(layout)
    report = ArchiveReport(dry_run, log_retention_days=settings.log_retention_days, entry_retention_days=settings.entry_retention_days)
    with store.lock():
        _resolve(layout, store, report, dry_run)
        wanted = set(ids)
        entries = [(path, e) for path in layout.day_files() for e in read_day(path) if e.id in wanted]
        missing = wanted - {e.id for _, e in entries}
        if missing:
            archived = [i for i in sorted(missing) if get_archived(layout, i) is not None]
            raise NotFound(
                f"entry {archived[0]} is already archived" if archived else f"no live entry with id {sorted(missing)[0]}. `memory search` lists ids."
            )
        report.entries = [e.id for _, e in entries]
        if not dry_run:
            _move_entries(layout, entries)
            write_index(store.layout, settings.compressor)
    return report


# -- what moves ----------------------------------------------------------------------------------------
def _old_logs(layout: Layout, days: int, now: datetime) -> list[Path]:
    if days <= 0:
        return []
    cutoff = (now - timedelta(days=days)).date().isoformat()
    return sorted(p for p in layout.memory_dir.glob("*.md") if DAY_RE.match(p.stem) and p.stem < cutoff)


def _old_entries(layout: Layout, days: int, now: datetime, report: ArchiveReport) -> list[tuple[Path, Entry]]:
    """(day file, entry) of every entry to move. An unreadable day file raises: nothing is archived
    until `memory doctor --fix` has repaired it."""
    if days <= 0:
        return []
    cutoff = now - timedelta(days=days)
    moving: list[tuple[Path, Entry]] = []
    for path in layout.day_files():
        for e in read_day(path):
            if parse_iso(e.timestamp) >= cutoff:
                continue
            if e.pinned:
                report.kept_pinned.append(e.id)
            elif e.importance in C.LIFECYCLE_EXEMPT_IMPORTANCE:
                report.kept_important.append(e.id)
            else:
                moving.append((path, e))
    return moving


def _move_entries(layout: Layout, entries: list[tuple[Path, Entry]]) -> None:
    """Files first, then the archive day files, then the live day files, then the live files go."""
    files = [pair for _, e in entries for pair in _files(layout, e.id, ArchiveLayout(layout.root, e.day[:4]))]
    for src, dest in files:
        if src.is_file():
            atomic_write_bytes(dest, confine.read_bytes(src))  # temp file, fsync, rename, fsync the folder
    by_day: dict[str, list[Entry]] = {}
    for _, e in entries:
        by_day.setdefault(e.day, []).append(e)
    for day, moved in sorted(by_day.items()):
        dest = ArchiveLayout(layout.root, day[:4]).day_file(day)
        current = {e.id: e for e in read_day(dest)} if dest.is_file() else {}
        current.update((e.id, e) for e in moved)
        atomic_write_text(dest, day_document(day, current.values()))
    moving = {e.id for _, e in entries}
    for live in sorted({path for path, _ in entries}):
        # kept even when every entry moves: a teammate's concurrent change to that day then merges
        # in git instead of meeting a deleted file (modify/delete)
        atomic_write_text(live, day_document(live.stem, [e for e in read_day(live) if e.id not in moving]))
    for src, _ in files:
        _unlink(src)


def _files(layout: Layout, entry_id: str, arch: ArchiveLayout) -> list[tuple[Path, Path]]:
    """(live, archived) transcript, embedding and passages file of one entry."""
    return list(zip(layout.entry_files(entry_id), arch.entry_files(entry_id)))


def _resolve(lay: Layout, store: Store, report: ArchiveReport, dry_run: bool) -> None:
    """Put right what an interrupted run left. An entry both live and archived keeps its live copy;
    so does a log whose archived copy is the same; files copied ahead of their entry go back (or,
    if the live ones exist, are removed); the live transcript/embedding of an archived entry moves."""
    live = {e.id: e for e in store.iter_entries()}
    for arch in archive_layouts(lay):
        archived: set[str] = set()
        for path in arch.day_files():
            entries = read_day(path)
            rest = [e for e in entries if e.id not in live]
            archived.update(e.id for e in rest)
            for e in entries:
                if e.id not in live:
                    continue
                differs = e.to_dict() != live[e.id].to_dict()
                note = " (the archived copy differed; it is in memory/quarantine/)" if differs else ""
                report.resolved.append(f"entry {e.id} was both live and in {lay.rel(path)}: kept the live one{note}")
                if differs and not dry_run:
                    copy = dumps_json({"reason": "archived copy of an entry that is also live", "entry": e.to_dict()})
                    Quarantine(lay).write(f"{C.ARCHIVE_DIR}/{arch.year}/{C.INDEX_DIR}/{e.id}.json", copy)
            if len(rest) < len(entries) and not dry_run:
                if rest:
                    atomic_write_text(path, day_document(path.stem, rest))
                else:
                    _unlink(path)
        kinds = ((arch.transcript_files, lay.transcript_file), (arch.embedding_files, lay.embedding_file), (arch.passages_files, lay.passages_file))
        for files, live_file in kinds:
            for copy in sorted(Path(de.path) for de in files()):
                if copy.stem not in live or dry_run:
                    continue
                if live_file(copy.stem).is_file():  # copied ahead of its entry by a run that was cut short
                    _unlink(copy)
                else:  # the live entry's own file: take it back
                    _move(copy, live_file(copy.stem))
        for eid in sorted(archived):
            for src, dest in _files(lay, eid, arch):
                if src.is_file():
                    report.resolved.append(f"{lay.rel(src)} belongs to archived entry {eid}: moved to {lay.rel(dest)}")
                    if not dry_run:
                        _move(src, dest)
        for log in arch.markdown_files():
            twin = lay.daily_log(log.stem)
            if twin.is_file() and confine.read_bytes(twin) == confine.read_bytes(log):  # a different one is merged when it moves
                report.resolved.append(f"{lay.rel(twin)} was also in {lay.rel(log)}: kept the live one")
                if not dry_run:
                    _unlink(log)


# -- crash-safe file moves ---------------------------------------------------------------------------
def _move_log(src: Path, dest: Path) -> None:
    """Move a daily log; if the archive already holds a different log of that day (one written
    live again after its day was archived), the live lines are appended to it: nothing is lost."""
    data = confine.read_bytes(src)
    if dest.is_file():
        old = confine.read_bytes(dest)
        if old != data:
            heading = f"# {src.stem}\n".encode()
            body = data[len(heading) :] if data.startswith(heading) else data
            data = old + (b"" if old.endswith(b"\n") else b"\n") + body
    atomic_write_bytes(dest, data)
    _unlink(src)


def _move(src: Path, dest: Path) -> None:
    """Copy (atomically) then remove: a crash in between leaves the file in both places, never in neither."""
    atomic_write_bytes(dest, confine.read_bytes(src))
    _unlink(src)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot remove {path} (already copied to the archive): {exc.strerror}. Run `memory archive` again.") from None
    fsync_dir(path.parent)


__all__ = ["ArchiveReport", "archive", "archive_ids"]
