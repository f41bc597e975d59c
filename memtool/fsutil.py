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
from memtool.errors import StorageError


def _storage_error(path: Path, exc: OSError) -> StorageError:
    reason = {
        errno.ENOSPC: "the disk is full",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EDQUOT: "the disk quota is exceeded",
    }.get(exc.errno or 0, exc.strerror or str(exc))
    return StorageError(f"cannot write {path}: {reason}. Nothing already stored was changed.")


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


def _mode_for(path: Path) -> int:
    """The mode a rewritten file keeps, or the one a plain open() would give a new file (mkstemp's
    temp files are 0600, which would hide memory from the rest of a team on a shared machine)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_UMASK


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Write to a temp file in the same folder, fsync, then rename over the target. `durable=False`
    skips both fsyncs (~5 ms, far more on a busy disk): only for derived files that are validated
    when read and rebuilt when damaged, since after a power cut they may be old, empty or partial."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _storage_error(path, exc) from None
    try:
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise _storage_error(path, exc) from None
    if durable:
        _fsync_dir(path.parent)


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
        todo.append((path, data))
    temps: list[tuple[str, Path]] = []
    try:
        with ThreadPoolExecutor(max_workers=C.FSYNC_THREADS) as pool:
            for start in range(0, len(todo), C.FSYNC_CHUNK):
                opened: list[int] = []
                try:
                    for path, data in todo[start : start + C.FSYNC_CHUNK]:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
                        opened.append(fd)
                        os.fchmod(fd, _mode_for(path))
                        temps.append((tmp, path))
                        view = memoryview(data)
                        while view:
                            view = view[os.write(fd, view):]
                    list(pool.map(os.fsync, opened))
                finally:
                    for fd in opened:
                        os.close(fd)
        for tmp, path in temps:
            os.replace(tmp, path)
    except OSError as exc:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass  # already renamed, or never created
        raise _storage_error(temps[-1][1] if temps else Path("."), exc) from None
    for folder in {path.parent for _, path in temps}:
        _fsync_dir(folder)
    return [path for _, path in temps]


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


@contextmanager
def locked(lock_path: Path, timeout: float = 30.0) -> Iterator[None]:
    """Cross-process exclusive lock, held briefly around each write."""
    from filelock import FileLock, Timeout

    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(lock_path), timeout=timeout)
        lock.acquire()
    except Timeout:
        raise StorageError(f"another memtool process holds {lock_path} for more than {timeout:.0f}s; try again") from None
    except OSError as exc:
        raise _storage_error(lock_path, exc) from None
    try:
        yield
    finally:
        lock.release()
