"""`memory backup` and `memory restore`: the versioned files to a .tar.gz and back.

A backup is a .tar.gz of MEMORY.md, USER.md, AGENTS.md and the files of memory/ the layout defines
(`allowed`), without memory/.cache and memory/.lock: members sorted, owners and gzip header time
zeroed, so backing up an unchanged store twice gives the same bytes. Only regular files are packed:
a symbolic link (but a linked Layer 3 file, memtool/confine.py), a FIFO, a device or a file of no
shape the layout defines (a restore would refuse it) is skipped and reported.

An archive to restore is someone else's choice of files: every member's header passes the
allow-list (`check_member`) over the whole archive before anything is written, and a refusal names
the member and why. The files are then streamed into a staging folder in memory/.cache, compared
with what is there, and moved into place with mode 0644. Without --force a restore never replaces a
file that differs; with --force the replaced files go to memory/quarantine/<timestamp>/.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import secrets
import shutil
import stat
import tarfile
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path, PurePosixPath
from typing import IO

from memtool import confine
from memtool import constants as C
from memtool.errors import BadInput, StorageError, UnsafePath, WouldOverwrite
from memtool.fsutil import UMASK, atomic_write_bytes, locked, make_folder
from memtool.scaffold import init_private
from memtool.store import Layout, Quarantine

# -- the layout's files: what a backup holds and a restore accepts ---------------------------------------------
_DAY = r"\d{4}-\d{2}-\d{2}"
_ID = r"[A-Za-z0-9][A-Za-z0-9._-]*"  # models.ID_RE: ids name files
_PART = r"[^./\\\x00-\x1f\x7f][^/\\\x00-\x1f\x7f]*"  # a name a person gave a folder or note: never hidden
_SHARD = rf"(?:\d{{4}}-\d{{2}}|{C.UNDATED_SHARD})"  # store.shard_of: an entry's month folder
_STORE = (
    rf"(?:{_DAY}\.md|{C.INDEX_DIR}/{C.INDEX_FILE}|{C.INDEX_DIR}/{re.escape(C.TOMBSTONES_FILE)}|{C.INDEX_DIR}/{_DAY}\.json"
    rf"|{C.INDEX_DIR}/(?:{C.EMBEDDINGS_DIR}|{C.PASSAGES_DIR})/{_SHARD}/{_ID}{re.escape(C.VECTOR_SUFFIX)}|{C.TRANSCRIPTS_DIR}/{_SHARD}/{_ID}\.md"
    # the layout before month folders (`memory migrate` moves them): a backup of an older store restores
    rf"|{C.INDEX_DIR}/{C.EMBEDDINGS_DIR}/{_ID}\.json|{C.TRANSCRIPTS_DIR}/{_ID}\.md)"
)
_RESERVED = f"(?:{C.INDEX_DIR}|{C.TRANSCRIPTS_DIR}|{C.ARCHIVE_DIR}|{C.QUARANTINE_DIR})/"
ALLOWED_FILES = [  # (what it is, the full name it has in an archive)
    ("a Layer 3 file", re.compile("|".join(re.escape(n) for n in C.LAYER3_FILES))),
    ("a store file", re.compile(rf"{C.MEMORY_DIR}/(?:{C.ARCHIVE_DIR}/\d{{4}}/)?{_STORE}")),
    (
        "the store's settings or git-ignore list",
        re.compile(rf"{C.MEMORY_DIR}/(?:{re.escape(C.CONFIG_FILE)}|{re.escape(C.GITIGNORE_FILE)}|{re.escape(C.REPORT_FILE)})"),
    ),
    ("a Markdown note", re.compile(rf"{C.MEMORY_DIR}/(?!{_RESERVED}){_PART}(?:/{_PART})*\.md")),
    ("a copy `memory doctor` set aside", re.compile(rf"{C.MEMORY_DIR}/{C.QUARANTINE_DIR}/{_PART}(?:/{_PART})*\.(?:md|json|yaml)")),
]
_FOLDER = re.compile(rf"{C.MEMORY_DIR}(?:/{_PART})*")
_LAYOUT_TEXT = (
    f"{', '.join(C.LAYER3_FILES)}, and under {C.MEMORY_DIR}/ day logs, day files, index.json, embeddings, "
    f"transcripts, archive years, Markdown notes, {C.CONFIG_FILE}"
)


PRIVATE = f"{C.MEMORY_DIR}/{C.PRIVATE_DIR}"  # the private entries' root (memtool.roots.private_root): only with --include-private


def allowed(name: str, is_dir: bool) -> bool:
    """`name` (posix, relative to the root) is a file (or folder) of the layout: the private entries'
    root (memory/.private: its .gitignore, and the files of a root's layout inside it) included."""
    if name == PRIVATE and is_dir or name == f"{PRIVATE}/{C.GITIGNORE_FILE}" and not is_dir:
        return True
    if name.startswith(PRIVATE + "/"):
        inner = name[len(PRIVATE) + 1 :]
        return not inner.startswith(PRIVATE) and not _excluded(inner) and allowed(inner, is_dir)
    if is_dir:
        return bool(_FOLDER.fullmatch(name))
    return any(rule.fullmatch(name) for _, rule in ALLOWED_FILES)


# -- backup -----------------------------------------------------------------------------------------------
@dataclass
class BackupReport:
    path: str
    files: int
    bytes: int  # uncompressed size of the files
    archive_bytes: int
    skipped: list[str] = field(default_factory=list)  # "name: why" for what was not packed


def _excluded(name: str) -> bool:
    """memory/.cache, memory/.lock, memory/.private and what is in them: never packed (the private root's only when asked)."""
    parts = name.split("/")
    return len(parts) > 1 and parts[0] == C.MEMORY_DIR and parts[1] in C.BACKUP_EXCLUDE


def backup_members(
    layout: Layout, skip: list[Path] | None = None, skipped: list[str] | None = None, include_private: bool = False
) -> list[tuple[str, Path, bool]]:
    """(archive name, path, is a folder) for every file and folder a backup holds, sorted by name. Links
    (but a linked Layer 3 file), FIFOs, devices and files of no shape the layout defines go into `skipped`.
    `include_private`: memory/.private too (the private entries and log lines), without its cache."""
    skipped = [] if skipped is None else skipped
    leave = {os.path.abspath(p) for p in skip or []}
    out: list[tuple[str, Path, bool]] = []
    for name in C.LAYER3_FILES:
        path = layout.root / name
        if os.path.lexists(path):
            if confine.is_regular(path):
                out.append((name, path, False))
            else:
                skipped.append(f"{name}: not a regular file (or a link to a file not named {name})")
    mem = layout.memory_dir
    out.append((C.MEMORY_DIR, mem, True))
    for dirpath, dirnames, filenames in os.walk(mem):  # never descends into a linked folder
        here = Path(dirpath)
        if here == mem:
            dirnames[:] = [d for d in dirnames if d not in C.BACKUP_EXCLUDE or (include_private and d == C.PRIVATE_DIR)]
            filenames = [f for f in filenames if f not in C.BACKUP_EXCLUDE]
        elif here == mem / C.PRIVATE_DIR / C.MEMORY_DIR:  # the private root's own memory/: its cache and lock stay
            dirnames[:] = [d for d in dirnames if d not in C.BACKUP_EXCLUDE]
            filenames = [f for f in filenames if f not in C.BACKUP_EXCLUDE]
        for entry in sorted(dirnames) + sorted(filenames):
            path = here / entry
            name = layout.rel(path)
            if str(path) in leave:
                continue
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                continue  # removed while we looked
            if stat.S_ISLNK(mode):
                skipped.append(f"{name}: a symbolic link (never packed: it could point out of the root)")
            elif not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                skipped.append(f"{name}: not a regular file (a FIFO, socket or device)")
            elif not allowed(name, stat.S_ISDIR(mode)):
                skipped.append(f"{name}: not a file of the memtool layout (a restore would refuse it)")
            else:
                out.append((name, path, stat.S_ISDIR(mode)))
    return sorted(out)


def backup(layout: Layout, dest: Path, include_private: bool = False) -> BackupReport:
    """Write the archive to a temp file next to `dest`, then rename it: a failed backup leaves no half archive.
    Holds the store's lock, so the files are a consistent snapshot (no write in the middle). A store in
    the layout before month folders is backed up as it is (before `memory migrate`, say)."""
    layout.require(legacy_ok=True)
    dest = Path(dest)
    if dest.is_dir():
        raise BadInput(f"{dest} is a folder; name the archive file, e.g. {dest / 'memory-backup.tar.gz'}")
    raw = io.BytesIO()
    sizes: list[int] = []  # of the files packed
    skipped: list[str] = []
    with locked(layout.lock_file, folder_must_exist=True):
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, path, is_dir in backup_members(layout, skip=[dest], skipped=skipped, include_private=include_private):
                info = tarfile.TarInfo(name)  # owner 0, no owner names
                try:
                    if is_dir:
                        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(os.lstat(path).st_mtime)
                        tar.addfile(info)
                        continue
                    data = confine.read_bytes(path, C.RESTORE_MAX_MEMBER_BYTES)  # the walk again: no link, no FIFO
                    info.mtime, info.mode = int(os.stat(path).st_mtime), C.RESTORE_FILE_MODE
                except FileNotFoundError:
                    continue
                except UnsafePath as exc:
                    skipped.append(f"{name}: {str(exc).removeprefix(str(path) + ': ')}")
                    continue
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                sizes.append(len(data))
    data = raw.getvalue()
    atomic_write_bytes(dest, data)
    return BackupReport(str(dest), len(sizes), sum(sizes), len(data), skipped)


# -- restore ----------------------------------------------------------------------------------------------
@dataclass
class RestoreReport:
    restored: list[str] = field(default_factory=list)  # files written
    unchanged: int = 0  # files already byte-identical
    quarantined: list[str] = field(default_factory=list)  # replaced files, moved aside (--force)
    not_in_backup: list[str] = field(default_factory=list)  # files here the backup does not have: left alone


@dataclass(frozen=True)
class Limits:
    """What a restore accepts at most (constants.py; lowered in tests)."""

    member_bytes: int = C.RESTORE_MAX_MEMBER_BYTES
    total_bytes: int = C.RESTORE_MAX_TOTAL_BYTES
    members: int = C.RESTORE_MAX_MEMBERS
    name_chars: int = C.RESTORE_MAX_NAME


@dataclass(frozen=True)
class Member:
    info: tarfile.TarInfo  # its header, as checked: what pass two extracts
    name: str  # the checked name, relative to the root
    is_dir: bool
    size: int


def _shown(name: str) -> str:
    return repr(name if len(name) <= 80 else name[:60] + "..." + name[-12:])


def check_member(m: tarfile.TarInfo, root: Path, limits: Limits) -> Member:
    """The member as restore will write it, or BadInput naming the first rule it breaks. The allow-list
    (`allowed`) alone refuses every bad name; the rules before it are there to say why."""
    pure = PurePosixPath(m.name)
    name = pure.as_posix()
    rules = (  # (broken, why), in the order they are told
        (len(m.name) > limits.name_chars, f"a name of {len(m.name)} characters (a memtool backup's are at most {limits.name_chars})"),
        (any(ord(ch) < 32 or ord(ch) == 127 for ch in m.name), "a control character (or NUL) in the name"),
        (m.name.startswith(("/", "\\")) or pure.is_absolute() or m.name[1:2] == ":", "absolute path"),
        (".." in pure.parts or "\\" in m.name, "'..' or a backslash in the path"),
        (m.issym() or m.islnk(), "a link; a memtool backup holds only files and folders"),
        (m.ischr() or m.isblk() or m.isfifo(), "a device or special file; a memtool backup holds only files and folders"),
        (m.issparse() or not (m.isreg() or m.isdir()), "not a plain file or folder; a memtool backup holds only those"),
        (
            any(part.startswith(".") for part in pure.parts) and not allowed(name, m.isdir()),
            "not part of a memtool backup: a hidden name (such as .git/ or .cache/) is never restored",
        ),
        (name in ("", ".") or not allowed(name, m.isdir()), f"not part of a memtool backup (only {_LAYOUT_TEXT} are)"),
        (m.isreg() and m.size > limits.member_bytes, f"{m.size:,} bytes, over the {limits.member_bytes:,}-byte limit for one file"),
    )
    why = next((why for broken, why in rules if broken), None)
    if why is None and hasattr(tarfile, "data_filter"):  # Python 3.12+ / 3.11.4+: the stdlib's own checks, as a second opinion
        try:
            tarfile.data_filter(m, str(root))
        except tarfile.FilterError as exc:
            why = str(exc)
    if why is not None:
        raise BadInput(f"archive member {_shown(m.name)}: {why}; refusing the archive, nothing was written")
    return Member(m, name, m.isdir(), m.size if m.isreg() else 0)


def _open_tar(fh: IO[bytes], archive: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(fileobj=fh, mode="r:gz")
    except (tarfile.ReadError, gzip.BadGzipFile, EOFError, OSError) as exc:
        raise BadInput(f"{archive}: not a .tar.gz archive ({exc})") from None


def check_archive(tar: tarfile.TarFile, archive: Path, root: Path, limits: Limits) -> list[Member]:
    """Pass one: every member's header checked (name, type, place, size, count), no file's bytes kept."""
    out: list[Member] = []
    names: set[str] = set()
    total = 0
    try:
        for m in tar:
            member = check_member(m, root, limits)
            if member.name in names:
                raise BadInput(f"archive member {_shown(m.name)}: appears twice; refusing the archive, nothing was written")
            total += member.size
            if total > limits.total_bytes:
                raise BadInput(f"{archive}: its files hold more than the {limits.total_bytes:,}-byte limit for a restore; nothing was written")
            if len(out) >= limits.members:
                raise BadInput(f"{archive}: more than {limits.members:,} members; nothing was written")
            names.add(member.name)
            out.append(member)
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, OSError) as exc:
        raise BadInput(f"{archive}: damaged archive ({exc}); nothing was written") from None
    if not any(n == C.MEMORY_DIR or n.startswith(C.MEMORY_DIR + "/") for n in names):
        raise BadInput(f"{archive}: no {C.MEMORY_DIR}/ folder inside; not a memtool backup")
    return out


def _stage(tar: tarfile.TarFile, archive: Path, members: list[Member], stage_fd: int) -> None:
    """Pass two: each file's bytes streamed into the staging folder as <member number>, mode 0644.
    Pass one's headers, from the same open archive, are what is extracted: each file has the checked
    name, type and size (tarfile reads exactly the header's size, and raises on fewer bytes)."""
    mode = C.RESTORE_FILE_MODE & ~UMASK
    try:
        for i, m in enumerate(members):
            if m.is_dir:
                continue
            fd = os.open(str(i), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=stage_fd)
            with open(fd, "wb") as out:
                shutil.copyfileobj(tar.extractfile(m.info), out, 1 << 20)  # type: ignore[arg-type]  # a regular file (member()): never None
                os.fchmod(fd, mode)
    except (tarfile.TarError, EOFError, gzip.BadGzipFile) as exc:
        raise BadInput(f"{archive}: damaged archive ({exc}); nothing was written") from None


def _same(stage_fd: int, staged: str, target: Path, size: int) -> bool | None:
    """Whether the file at `target` holds the staged bytes; None when there is none. A link (but a linked
    Layer 3 file's... which restore never writes through either), a folder or a FIFO there is WouldOverwrite."""
    if os.path.islink(target) or os.path.isdir(target):
        raise WouldOverwrite(f"{target} is a {'symbolic link' if os.path.islink(target) else 'folder'} here but a file in the backup; move it away first")
    try:
        fd = confine.open_read(target)
    except FileNotFoundError:
        return None
    except UnsafePath as exc:
        raise WouldOverwrite(f"{exc}; move it away first. Nothing was written.") from None
    with os.fdopen(fd, "rb") as b:
        if os.fstat(fd).st_size != size:
            return False
        with open(staged, "rb", opener=lambda p, f: os.open(p, f, dir_fd=stage_fd)) as a:
            return all(x == y for x, y in zip_longest(iter(lambda: a.read(1 << 20), b""), iter(lambda: b.read(1 << 20), b"")))


def _move(src_dir: int, src: str, root: Path, dest: str) -> None:
    """Rename src (in the folder src_dir) to root/dest, its folders opened (made) by confine's walk."""
    names = dest.split("/")
    dfd = confine.open_folder(str(root), names[:-1], root / dest, create=True)
    try:
        os.replace(src, names[-1], src_dir_fd=src_dir, dst_dir_fd=dfd)
        os.fsync(dfd)
    finally:
        os.close(dfd)


def restore(layout: Layout, archive: Path, force: bool = False, limits: Limits = Limits()) -> RestoreReport:
    archive = Path(archive)
    try:
        fh = open(archive, "rb")
    except FileNotFoundError:
        raise BadInput(f"{archive}: no such file") from None
    except OSError as exc:
        raise BadInput(f"{archive}: cannot read it ({exc.strerror})") from None
    with fh, _open_tar(fh, archive) as tar:
        members = check_archive(tar, archive, layout.root, limits)
        if any(m.name == PRIVATE or m.name.startswith(PRIVATE + "/") for m in members):
            init_private(layout.root)  # its .gitignore before any private file: restored entries stay out of git whatever the archive holds
        report = RestoreReport()
        make_folder(layout.memory_dir)  # restoring into a new root, which may not exist yet: a lock makes no tree
        with locked(layout.lock_file):
            stage_name = f"restore-{secrets.token_hex(6)}"
            stage_path = layout.cache_dir / stage_name
            try:
                stage_fd = confine.open_folder(str(layout.root), [C.MEMORY_DIR, C.CACHE_DIR, stage_name], stage_path, create=True)
            except OSError as exc:
                raise StorageError(f"cannot make the staging folder {stage_path}: {exc.strerror}") from None
            try:
                _stage(tar, archive, members, stage_fd)
                _put_in_place(layout, members, stage_fd, force, report)
            except OSError as exc:
                raise StorageError(f"restore stopped: {exc.strerror or exc} ({exc.filename or stage_path})") from None
            finally:
                os.close(stage_fd)
                shutil.rmtree(stage_path, ignore_errors=True)
            names = {m.name for m in members}
            quarantine = f"{C.MEMORY_DIR}/{C.QUARANTINE_DIR}/"
            report.not_in_backup = [n for n, _, is_dir in backup_members(layout) if n not in names and not is_dir and not n.startswith(quarantine)]
    return report


def _put_in_place(layout: Layout, members: list[Member], stage_fd: int, force: bool, report: RestoreReport) -> None:
    changed: list[tuple[int, Member]] = []
    existing: list[Member] = []
    for i, m in enumerate(members):
        target = layout.root / m.name
        if m.is_dir:
            if os.path.lexists(target) and (os.path.islink(target) or not target.is_dir()):
                raise WouldOverwrite(f"{m.name} is a file or link here but a folder in the backup; move it away first")
            continue
        same = _same(stage_fd, str(i), target, m.size)
        if same:
            report.unchanged += 1
            continue
        changed.append((i, m))
        if same is False:
            existing.append(m)
    if existing and not force:
        shown = ", ".join(m.name for m in existing[: C.RESTORE_LIST_MAX]) + (" ..." if len(existing) > C.RESTORE_LIST_MAX else "")
        raise WouldOverwrite(
            f"restoring would replace {len(existing)} file(s) that differ from the backup: {shown}. "
            "Nothing was written. Use --force to replace them (the current ones are kept in "
            f"{C.MEMORY_DIR}/{C.QUARANTINE_DIR}/<timestamp>/)."
        )
    aside = layout.rel(Quarantine(layout).folder) if existing else None
    for m in existing:
        names = m.name.split("/")
        sfd = confine.open_folder(str(layout.root), names[:-1], layout.root / m.name)
        try:
            _move(sfd, names[-1], layout.root, f"{aside}/{m.name}")
        finally:
            os.close(sfd)
        report.quarantined.append(f"{aside}/{m.name}")
    os.sync()  # the staged bytes on disk before any rename makes them the store's (one call, not an fsync per file)
    for i, m in changed:
        _move(stage_fd, str(i), layout.root, m.name)
        report.restored.append(m.name)
    for m in members:  # empty folders (memory/index/embeddings of a new store)
        if m.is_dir:
            os.close(confine.open_folder(str(layout.root), m.name.split("/"), layout.root / m.name, create=True))
