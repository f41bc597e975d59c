"""Safe file primitives: atomic replace, crash-safe append, deterministic JSON, a cross-process lock."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temp file in the same folder, fsync, then rename over the target."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _storage_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise _storage_error(path, exc) from None
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_many(items: list[tuple[Path, bytes]]) -> None:
    """atomic_write_bytes for many files with one flush to disk: write temps, sync once, rename, fsync folders.

    Per-file fsync costs ~1 ms each; a batch of embedding files pays it once. A crash leaves every
    target either old or new, never torn.
    """
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in items:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        if hasattr(os, "sync"):
            os.sync()
        else:  # no sync(2) on this platform: flush each file
            for tmp, _ in temps:
                with open(tmp, "rb+") as fh:
                    os.fsync(fh.fileno())
        for tmp, path in temps:
            os.replace(tmp, path)
    except OSError as exc:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise _storage_error(temps[-1][1] if temps else Path("."), exc) from None
    for folder in {path.parent for _, path in temps}:
        _fsync_dir(folder)


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
