"""Export entries (jsonl, csv, a Markdown digest), and back up / restore the versioned files.

A backup is a .tar.gz of MEMORY.md, USER.md, AGENTS.md and memory/ without memory/.cache and
memory/.lock: members sorted, owners and gzip header time zeroed, so backing up an unchanged store
twice gives the same bytes. Restore checks every member before writing anything (no absolute
paths, '..', links or devices; only the files a backup holds) and never replaces a file silently:
without --force it refuses, with --force the replaced files go to memory/quarantine/<timestamp>/.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable

from memtool import constants as C
from memtool.dayfile import sort_entries
from memtool.errors import BadInput, StorageError, WouldOverwrite
from memtool.fsutil import atomic_write_bytes, atomic_write_many, locked, make_folder
from memtool.models import Entry, utcnow
from memtool.store import Layout


# -- export ------------------------------------------------------------------------------------------
def export_text(entries: Iterable[Entry], fmt: str) -> str:
    if fmt not in C.EXPORT_FORMATS:
        raise BadInput(f"--format must be one of {', '.join(C.EXPORT_FORMATS)}, got {fmt!r}")
    ordered = sort_entries(entries)
    return {"jsonl": _jsonl, "csv": _csv, "md": _markdown}[fmt](ordered)


def _jsonl(entries: list[Entry]) -> str:
    return "".join(json.dumps(e.to_dict(), ensure_ascii=False) + "\n" for e in entries)


def _csv(entries: list[Entry]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(C.EXPORT_CSV_COLUMNS)
    join = C.EXPORT_LIST_SEP.join
    for e in entries:
        writer.writerow([e.timestamp, e.id, e.source_session, e.importance, e.summary, join(e.keywords), join(e.topics),
                         join(e.decisions), join(e.action_items)])
    return buf.getvalue()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _markdown(entries: list[Entry]) -> str:
    lines = ["# Memory digest", ""]
    if not entries:
        return "\n".join([*lines, "No entries.", ""])
    lines += [f"{len(entries)} entries from {entries[0].day} to {entries[-1].day}. Times are UTC.", ""]
    day = None
    for e in entries:
        if e.day != day:
            day = e.day
            lines += [f"## {day}", ""]
        flags = "".join(f" · {f}" for f, on in (("pinned", e.pinned), ("pending", e.pending), ("untrusted", not e.trusted)) if on)
        lines += [f"### {e.timestamp[11:16]} · {e.source_session} · {e.importance}{flags}", "", _one_line(e.summary), ""]
        items = [f"- Decision: {_one_line(d)}" for d in e.decisions] + [f"- Action: {_one_line(a)}" for a in e.action_items]
        ents = e.entities.people + e.entities.systems
        if e.topics:
            items.append(f"- Topics: {', '.join(e.topics)}")
        if ents:
            items.append(f"- Names: {', '.join(ents)}")
        lines += [*items, "", f"`{e.id}` · {e.compression_ratio}", ""]
    return "\n".join(lines)


# -- backup ------------------------------------------------------------------------------------------
@dataclass
class BackupReport:
    path: str
    files: int
    bytes: int  # uncompressed size of the files
    archive_bytes: int

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def backup_members(layout: Layout, skip: Iterable[Path] = ()) -> list[tuple[str, Path]]:
    """(archive name, path) for every versioned file and folder, sorted by name."""
    skipped = {Path(p).resolve() for p in skip}
    out = [(name, layout.root / name) for name in C.LAYER3_FILES if (layout.root / name).is_file()]
    mem = layout.memory_dir
    out.append((C.MEMORY_DIR, mem))
    for dirpath, dirnames, filenames in os.walk(mem):
        here = Path(dirpath)
        if here == mem:
            dirnames[:] = [d for d in dirnames if d not in C.BACKUP_EXCLUDE]
            filenames = [f for f in filenames if f not in C.BACKUP_EXCLUDE]
        dirnames.sort()
        for name in (*dirnames, *filenames):
            path = here / name
            if path.resolve() not in skipped:
                out.append((path.relative_to(layout.root).as_posix(), path))
    return sorted(out)


def backup(layout: Layout, dest: Path) -> BackupReport:
    """Write the archive to a temp file next to `dest`, then rename it: a failed backup leaves no half archive.
    Holds the store's lock, so the files are a consistent snapshot (no write in the middle)."""
    layout.require()
    dest = Path(dest)
    if dest.is_dir():
        raise BadInput(f"{dest} is a folder; name the archive file, e.g. {dest / 'memory-backup.tar.gz'}")
    raw = io.BytesIO()
    total = files = 0
    with locked(layout.lock_file, folder_must_exist=True):
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, path in backup_members(layout, skip=[dest]):
                st = path.stat()  # follows a symlinked MEMORY.md: the backup holds its content
                info = tarfile.TarInfo(name)
                info.mtime, info.mode = int(st.st_mtime), stat.S_IMODE(st.st_mode)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                if stat.S_ISDIR(st.st_mode):
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                elif stat.S_ISREG(st.st_mode):
                    data = path.read_bytes()
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                    total += len(data)
                    files += 1
    data = raw.getvalue()
    atomic_write_bytes(dest, data)
    return BackupReport(str(dest), files, total, len(data))


# -- restore -----------------------------------------------------------------------------------------
@dataclass
class RestoreReport:
    restored: list[str] = field(default_factory=list)  # files written
    unchanged: int = 0  # files already byte-identical
    quarantined: list[str] = field(default_factory=list)  # replaced files, moved aside (--force)
    not_in_backup: list[str] = field(default_factory=list)  # files here the backup does not have: left alone

    def to_dict(self) -> dict:
        return {"restored": self.restored, "unchanged": self.unchanged, "quarantined": self.quarantined, "not_in_backup": self.not_in_backup}


def _check_member(m: tarfile.TarInfo, root: Path, names: set[str]) -> str:
    """The member's safe relative name, or BadInput saying why the archive is refused."""
    where = f"archive member {m.name!r}"
    pure = PurePosixPath(m.name)
    if m.name.startswith(("/", "\\")) or pure.is_absolute() or (len(m.name) > 1 and m.name[1] == ":"):
        raise BadInput(f"{where}: absolute path; refusing the archive")
    if ".." in pure.parts or "\\" in m.name:
        raise BadInput(f"{where}: '..' or a backslash in the path; refusing the archive")
    if not (m.isreg() or m.isdir()):
        raise BadInput(f"{where}: a {'link' if m.issym() or m.islnk() else 'device or special file'}; a memtool backup holds only files and folders")
    name = pure.as_posix()
    top = pure.parts[0] if pure.parts else ""
    if name in ("", ".") or not (name in C.LAYER3_FILES or top == C.MEMORY_DIR) or (len(pure.parts) > 1 and pure.parts[1] in C.BACKUP_EXCLUDE):
        raise BadInput(f"{where}: not part of a memtool backup (only {', '.join(C.LAYER3_FILES)} and {C.MEMORY_DIR}/ are); refusing the archive")
    if name in names:
        raise BadInput(f"{where}: appears twice; refusing the archive")
    if hasattr(tarfile, "data_filter"):  # Python 3.12+ / 3.11.4+: the stdlib's own checks, as a second opinion
        try:
            tarfile.data_filter(m, str(root))
        except tarfile.FilterError as exc:
            raise BadInput(f"{where}: {exc}; refusing the archive") from None
    return name


def read_archive(archive: Path, root: Path) -> list[tuple[str, tarfile.TarInfo, bytes | None]]:
    """Every member checked, with its bytes (None for folders). Raises before anything is written."""
    try:
        tar = tarfile.open(archive, mode="r:gz")
    except FileNotFoundError:
        raise BadInput(f"{archive}: no such file") from None
    except (tarfile.ReadError, gzip.BadGzipFile, EOFError, OSError) as exc:
        raise BadInput(f"{archive}: not a .tar.gz archive ({exc})") from None
    out: list[tuple[str, tarfile.TarInfo, bytes | None]] = []
    names: set[str] = set()
    with tar:
        try:
            for m in tar:
                name = _check_member(m, root, names)
                names.add(name)
                fh = tar.extractfile(m) if m.isreg() else None
                out.append((name, m, fh.read() if fh else None))
        except (tarfile.TarError, EOFError, gzip.BadGzipFile, OSError) as exc:
            raise BadInput(f"{archive}: damaged archive ({exc})") from None
    if not any(n == C.MEMORY_DIR or n.startswith(C.MEMORY_DIR + "/") for n in names):
        raise BadInput(f"{archive}: no {C.MEMORY_DIR}/ folder inside; not a memtool backup")
    return out


def restore(layout: Layout, archive: Path, force: bool = False) -> RestoreReport:
    members = read_archive(Path(archive), layout.root)
    report = RestoreReport()
    make_folder(layout.memory_dir)  # restoring into a new root, which may not exist yet: a lock makes no tree
    with locked(layout.lock_file):
        changed: list[tuple[str, bytes, int]] = []
        for name, m, data in members:
            target = layout.root / name
            if data is None:
                if target.exists() and not target.is_dir():
                    raise WouldOverwrite(f"{name} is a file here but a folder in the backup; move it away first")
                continue
            if target.is_dir() or target.is_symlink():
                raise WouldOverwrite(f"{name} is a {'folder' if target.is_dir() else 'symlink'} here but a file in the backup; move it away first")
            if target.is_file() and target.read_bytes() == data:
                report.unchanged += 1
            else:
                changed.append((name, data, m.mode))
        existing = [name for name, _, _ in changed if (layout.root / name).exists()]
        if existing and not force:
            shown = ", ".join(existing[: C.RESTORE_LIST_MAX]) + (" ..." if len(existing) > C.RESTORE_LIST_MAX else "")
            raise WouldOverwrite(f"restoring would replace {len(existing)} file(s) that differ from the backup: {shown}. "
                                 "Nothing was written. Use --force to replace them (the current ones are kept in "
                                 f"{C.MEMORY_DIR}/{C.QUARANTINE_DIR}/<timestamp>/).")
        aside = _quarantine_folder(layout) if existing else None
        for name in existing:
            target, dest = layout.root / name, aside / name
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(target, dest)
            except OSError as exc:
                raise StorageError(f"cannot move {target} into {aside}: {exc.strerror}") from None
            report.quarantined.append(dest.relative_to(layout.root).as_posix())
        atomic_write_many([(layout.root / name, data) for name, data, _ in changed])  # fsyncs in parallel
        for name, _, mode in changed:
            os.chmod(layout.root / name, (mode & 0o777) | 0o600)  # as backed up, but always readable and writable by the owner
            report.restored.append(name)
        for name, _, data in members:  # empty folders (memory/index/embeddings of a new store)
            if data is None:
                (layout.root / name).mkdir(parents=True, exist_ok=True)
        names = {name for name, _, _ in members}
        quarantine = layout.quarantine_dir.relative_to(layout.root).as_posix() + "/"
        report.not_in_backup = [n for n, p in backup_members(layout) if n not in names and p.is_file() and not n.startswith(quarantine)]
    return report


def _quarantine_folder(layout: Layout) -> Path:
    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    folder, n = layout.quarantine_dir / stamp, 1
    while folder.exists():
        n += 1
        folder = layout.quarantine_dir / f"{stamp}-{n}"
    return folder
