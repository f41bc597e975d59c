"""Safe file primitives: atomic replace, crash-safe append, deterministic JSON, a cross-process lock."""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Iterator, NamedTuple, Sequence

from memtool import constants as C
from memtool.confine import CLOEXEC, locate, open_folder, safe_folder, walked
from memtool.errors import LockBusy, NotAMemoryRoot, StorageError, UnsafePath


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


def fsync_dir(folder: Path) -> None:
    with suppress(OSError):  # some platforms and file systems refuse it on folders; the rename is still atomic
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


UMASK = os.umask(0)  # read once, at import (single-threaded): os.umask can only be read by setting it
os.umask(UMASK)


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


def _keep_attributes(fd: int, old: os.stat_result | None) -> None:
    """Give the temp file the owner and mode of the file it replaces, or for a new file the mode a
    plain open() would give it (the temp files are made 0600, which would hide memory from the rest
    of a team on a shared machine). The owner is kept when the process may set it (root); else the
    group when the writer belongs to it. EPERM (no right) and EINVAL (an id not mapped in this user
    namespace) leave the writer's ids, as a plain rewrite would."""
    if old is None:
        os.fchmod(fd, 0o666 & ~UMASK)
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


def _old_stat_at(dfd: int, name: str, path: Path) -> os.stat_result | None:
    """The stat of the file `name` replaces in the folder `dfd`, or None; a link or a non-regular file is refused."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(
            f"cannot write {path}: it is a symbolic link, and memtool never writes through a link inside a memory root "
            "(only a linked MEMORY.md, USER.md or AGENTS.md). Nothing was changed; replace the link with a file."
        )
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"cannot write {path}: it is not a regular file. Nothing was changed.")
    return st


def _temp_at(dfd: int, name: str) -> tuple[int, str]:
    """A new temp file beside `name` in the folder `dfd` (O_EXCL|O_NOFOLLOW: never an existing file or link)."""
    while True:
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | CLOEXEC, 0o600, dir_fd=dfd), tmp
        except FileExistsError:
            continue


Data = bytes | list[bytes] | list[bytes | memoryview]  # the bytes of a file, or its pieces one after another


def write_all(fd: int, data: Data) -> None:
    for piece in data if isinstance(data, list) else [data]:
        view = memoryview(piece)
        while view:  # os.write may write less than asked (full disk)
            view = view[os.write(fd, view) :]


class FileSig(NamedTuple):
    """A file as memtool last read it: the one signature by which it tells that the file changed
    since. Kept as "size:mtime_ns" in the cache's text columns (str), as [size, mtime_ns] in JSON."""

    size: int
    mtime_ns: int

    def __str__(self) -> str:
        return f"{self.size}:{self.mtime_ns}"


def stat_sig(path: str | os.PathLike) -> FileSig | None:
    """The FileSig of a file or folder, None when it cannot be stat-ed (not there)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileSig(st.st_size, st.st_mtime_ns)


def atomic_write_bytes(path: Path, data: Data) -> None:
    """Write `data` to a temp file in the same folder, fsync, then rename over the target.
    Under a memory root the folder is opened by confine's walk and a link in place of the file is refused
    (UnsafePath); a linked Layer 3 file, or a path outside any root, is written through its link (see _target)."""
    atomic_write_many([(Path(path), data)], skip_same=False)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_many(items: Sequence[tuple[Path, Data]], skip_same: bool = True) -> list[Path]:
    """atomic_write_bytes for many files: targets whose bytes are already right are left alone (unless
    not `skip_same`); the others are written to temps, fsynced in parallel (journal commits are shared),
    then renamed. Every folder and link is checked (confine's walk, each folder opened once) before
    anything is written.

    A crash leaves every target either old or new, never torn. Returns the paths written.
    """
    folders: dict[tuple[str, ...], int] = {}  # each folder opened once (made when missing)
    # (path asked for, the link's target or None, folder fd, name in it, stat of the file replaced)
    todo: list[tuple[Path, Path | None, int, str, os.stat_result | None, Data]] = []
    temps: list[tuple[str, int, str, Path, Path | None]] = []  # temp file, its folder fd, the name it replaces, path, target
    doing: tuple[Path, Path | None] = (Path("."), None)  # the file an error is about
    try:
        for path, data in items:
            doing = (path, None)
            where = walked(path)
            if where is None:  # outside any root, or a linked Layer 3 file: its folder as the OS finds it
                target = _target(path)
                doing = (path, target)
                target.parent.mkdir(parents=True, exist_ok=True)
                root, names = str(target.parent), [target.name]
            else:  # under a memory root: by confine's walk
                target, (root, names) = None, where
            key, name = (root, *names[:-1]), names[-1]
            if key not in folders:
                folders[key] = open_folder(root, names[:-1], path, create=True)
            dfd = folders[key]
            old = _old_stat_at(dfd, name, path)
            if skip_same and old is not None and old.st_size == len(data):
                with suppress(OSError), open(name, "rb", opener=lambda n, flags: os.open(n, flags | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)) as f:
                    if f.read(len(data) + 1) == data:
                        continue  # already right: left alone
            todo.append((path, target, dfd, name, old, data))
        for start in range(0, len(todo), C.FSYNC_CHUNK):
            opened: list[int] = []
            try:
                for path, target, dfd, name, old, data in todo[start : start + C.FSYNC_CHUNK]:
                    doing = (path, target)
                    fd, tmp = _temp_at(dfd, name)
                    opened.append(fd)
                    temps.append((tmp, dfd, name, path, target))
                    _keep_attributes(fd, old)
                    write_all(fd, data)
                _fsync_all(opened)
            finally:
                for fd in opened:
                    os.close(fd)
        for tmp, dfd, name, path, target in temps:
            doing = (path, target)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        for fd in {dfd for _, dfd, _, _, _ in temps}:
            with suppress(OSError):  # as in fsync_dir
                os.fsync(fd)
    except (OSError, UnsafePath) as exc:
        for tmp, dfd, *_ in temps:
            with suppress(OSError):  # already renamed
                os.unlink(tmp, dir_fd=dfd)
        if isinstance(exc, UnsafePath):
            raise
        raise _storage_error(doing[0], exc, doing[1]) from None
    finally:
        for fd in folders.values():
            os.close(fd)
    return [path for _, _, _, path, _ in temps]


def _fsync_all(fds: list[int]) -> None:
    """fsync every file; several in parallel, since their journal commits are shared."""
    if len(fds) < 2:  # in this thread: strace's fault injection (tests/test_fault_injection.py) counts calls per thread
        list(map(os.fsync, fds))
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=C.FSYNC_THREADS) as pool:
        list(pool.map(os.fsync, fds))


def dumps_json(obj: Any) -> str:
    """Deterministic JSON: 2-space indent, UTF-8 kept readable, trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def append_text(path: Path, text: str) -> None:
    """Append whole lines crash-safely: one O_APPEND write, then fsync.

    A crash can lose the line being written but never a line already written. If the file
    does not end with a newline (a previous torn write, or a hand edit), one is added first.
    If the disk refuses part of the line (full, quota), the file is cut back to its old size.
    """
    data = text if text.endswith("\n") else text + "\n"
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | CLOEXEC
    where = locate(path)
    try:
        if where is None or not where[1]:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, flags, 0o644)
        else:  # under a memory root: no link on the way, nor in place of the file (a dangling one is never created)
            dfd = open_folder(where[0], where[1][:-1], path, create=True)
            try:
                fd = os.open(where[1][-1], flags | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO):
                    raise UnsafePath(
                        f"cannot append to {path}: it is a symbolic link or not a regular file, and memtool never "
                        "writes through a link inside a memory root. Nothing was changed; replace it with a file."
                    ) from None
                raise
            finally:
                os.close(dfd)
    except OSError as exc:
        raise _storage_error(path, exc) from None
    size = -1
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"cannot append to {path}: not a regular file. Nothing was changed.")
        size = st.st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = "\n" + data
        write_all(fd, data.encode("utf-8"))  # all of it, or cut back below: never half a line
        os.fsync(fd)
    except OSError as exc:
        if size >= 0:
            with suppress(OSError):  # best effort: the next append starts on a fresh line anyway
                os.ftruncate(fd, size)
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
    safe_folder(folder)  # under a memory root: reached without a link (memtool/confine.py), or UnsafePath
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
