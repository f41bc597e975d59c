"""Safe file primitives: atomic replace, crash-safe append, deterministic JSON, a cross-process lock."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from memtool import constants as C
from memtool.errors import LockBusy, NotAMemoryRoot, StorageError


def _storage_error(path: Path, exc: OSError, target: Path | None = None) -> StorageError:
    reason = {
        errno.ENOSPC: "the disk is full",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EDQUOT: "the disk quota is exceeded",
    }.get(exc.errno or 0, exc.strerror or str(exc))
    where = f"{path} (a symbolic link to {target})" if target is not None and target != path else f"{path}"
    return StorageError(f"cannot write {where}: {reason}. Nothing already stored was changed.")


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not supported on this platform / file system
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on directories; the rename is still atomic
    finally:
        os.close(fd)


_UMASK = os.umask(0)  # read once, at import (single-threaded): os.umask can only be read by setting it
os.umask(_UMASK)


def _target(path: Path) -> Path:
    """The file an atomic write to `path` replaces: `path`, or when it is a symbolic link (MEMORY.md
    kept in a dotfiles repository and linked), the end of its links, so that the link stays and its
    target gets the new bytes atomically (temp file and rename in the target's folder). A link to a
    file that does not exist creates that file, as open() and editors do, but only in a folder that
    exists: a missing folder at the far end of a link (a repository not checked out, a disk not
    mounted) is a StorageError, not made up here. A link loop is a StorageError.

    Hard links are not kept: the rename gives `path` a new inode, and the other names keep the old
    bytes. Writing in place instead would lose the all-or-nothing write that a crash relies on."""
    if not os.path.islink(path):
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        target = Path(os.path.realpath(path))
    except OSError as exc:  # ELOOP, or a link through a file (ENOTDIR)
        raise StorageError(f"cannot write {path}: it is a symbolic link that cannot be followed ({exc.strerror}). Nothing was changed.") from None
    if not target.parent.is_dir():
        raise StorageError(
            f"cannot write {path}: it is a symbolic link to {os.readlink(path)}, and the folder {target.parent} does not exist. "
            "Create that folder (or fix the link) and run again; nothing was changed."
        )
    return target


def _keep_attributes(fd: int, target: Path) -> None:
    """Give the temp file the owner and mode of the file it replaces, or for a new file the mode a
    plain open() would give it (mkstemp's temp files are 0600, which would hide memory from the rest
    of a team on a shared machine). The owner is kept when the process may set it (root); else the
    group when the writer belongs to it. EPERM (no right) and EINVAL (an id not mapped in this user
    namespace) leave the writer's ids, as a plain rewrite would."""
    try:
        old = os.stat(target)
    except OSError:
        os.fchmod(fd, 0o666 & ~_UMASK)
        return
    new = os.fstat(fd)
    if (new.st_uid, new.st_gid) != (old.st_uid, old.st_gid):
        for uid in (old.st_uid, -1):  # the owner needs privilege, the group only membership
            try:
                os.fchown(fd, uid, old.st_gid)
                break
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EINVAL):
                    raise
    os.fchmod(fd, old.st_mode & 0o7777)  # after fchown, which clears set-id bits


def atomic_write_bytes(path: Path, data: bytes | list[bytes | memoryview], durable: bool = True) -> None:
    """Write `data` (or its pieces one after another) to a temp file in the same folder, fsync, then rename over the target (through a
    symbolic link: see _target). `durable=False` skips both fsyncs (~5 ms, far more on a busy disk):
    only for derived files that are validated when read and rebuilt when damaged, since after a
    power cut they may be old, empty or partial."""
    path = Path(path)
    target = _target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _storage_error(path, exc, target) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            _keep_attributes(fh.fileno(), target)
            fh.writelines(data) if isinstance(data, list) else fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise _storage_error(path, exc, target) from None
    if durable:
        _fsync_dir(target.parent)


def atomic_write_text(path: Path, text: str, durable: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), durable)


def atomic_write_many(items: list[tuple[Path, bytes]]) -> list[Path]:
    """atomic_write_bytes for many files: targets whose bytes are already right are left alone; the
    others are written to temps, fsynced in parallel (journal commits are shared), then renamed.

    A crash leaves every target either old or new, never torn. Returns the paths written.
    """
    from concurrent.futures import ThreadPoolExecutor

    todo = []
    for path, data in items:
        try:
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                continue
        except OSError:
            pass  # missing or unreadable: write it
        todo.append((path, _target(path), data))  # every link checked before anything is written
    temps: list[tuple[str, Path, Path]] = []  # temp file, the file it replaces, the path asked for
    doing: tuple[Path, Path | None] = (Path("."), None)  # the file an error is about
    try:
        with ThreadPoolExecutor(max_workers=C.FSYNC_THREADS) as pool:
            for start in range(0, len(todo), C.FSYNC_CHUNK):
                opened: list[int] = []
                try:
                    for path, target, data in todo[start : start + C.FSYNC_CHUNK]:
                        doing = (path, target)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
                        opened.append(fd)
                        temps.append((tmp, target, path))
                        _keep_attributes(fd, target)
                        view = memoryview(data)
                        while view:
                            view = view[os.write(fd, view):]
                    list(pool.map(os.fsync, opened))
                finally:
                    for fd in opened:
                        os.close(fd)
        for tmp, target, path in temps:
            doing = (path, target)
            os.replace(tmp, target)
    except OSError as exc:
        for tmp, _, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass  # already renamed, or never created
        raise _storage_error(doing[0], exc, doing[1]) from None
    for folder in {target.parent for _, target, _ in temps}:
        _fsync_dir(folder)
    return [path for _, _, path in temps]


def dumps_json(obj: Any) -> str:
    """Deterministic JSON: 2-space indent, UTF-8 kept readable, trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, dumps_json(obj))


def append_text(path: Path, text: str) -> None:
    """Append whole lines crash-safely: one O_APPEND write, then fsync.

    A crash can lose the line being written but never a line already written. If the file
    does not end with a newline (a previous torn write, or a hand edit), one is added first.
    If the disk refuses part of the line (full, quota), the file is cut back to its old size.
    """
    path = Path(path)
    data = text if text.endswith("\n") else text + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _storage_error(path, exc) from None
    size = -1
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    data = "\n" + data
        buf = memoryview(data.encode("utf-8"))
        while buf:  # os.write may write less than asked (full disk); never leave half a line
            buf = buf[os.write(fd, buf):]
        os.fsync(fd)
    except OSError as exc:
        try:
            if size >= 0:
                os.ftruncate(fd, size)
        except OSError:
            pass  # best effort: the next append starts on a fresh line anyway
        raise _storage_error(path, exc) from None
    finally:
        os.close(fd)


def make_folder(folder: Path) -> None:
    """Create `folder` and its parents if missing (for those who lock before anything is there)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _storage_error(folder, exc) from None


@contextmanager
def locked(lock_path: Path, timeout: float = 30.0, *, folder_must_exist: bool = False) -> Iterator[None]:
    """Cross-process exclusive lock, held briefly around each write.

    A lock never makes a tree of folders. Its own folder, when missing (a derived cache folder
    deleted by hand), is made only inside a folder that exists, and not at all with
    `folder_must_exist` (the store's lock: memory/ moved or deleted while a command runs is an
    error, not an empty memory/ made again). Callers that lock before there is anything (restore
    into a new root, the hooks' cache) make their folders first. (filelock makes a missing folder
    itself, so one removed between this check and the lock still comes back: a window of
    microseconds, not the length of a command.)"""
    from filelock import FileLock, Timeout

    folder = lock_path.parent
    if not folder.is_dir():
        gone = folder if folder_must_exist or os.path.lexists(folder) else folder.parent
        if not gone.is_dir():
            what = "is not a folder" if os.path.lexists(gone) else "does not exist"
            raise NotAMemoryRoot(
                f"cannot lock {lock_path}: {gone} {what} (moved or deleted while memtool was running?). "
                "Nothing was written and no folder was made again; put it back, or run `memory init` for a new store."
            )
        try:
            folder.mkdir(exist_ok=True)  # one level: not parents=True, which would make a vanished parent again
        except OSError as exc:
            raise _storage_error(folder, exc) from None
    try:
        lock = FileLock(str(lock_path), timeout=timeout)
        lock.acquire()
    except Timeout:
        raise LockBusy(f"another memtool process holds {lock_path} for more than {timeout:.0f}s; try again") from None
    except OSError as exc:
        raise _storage_error(lock_path, exc) from None
    try:
        yield
    finally:
        lock.release()
