"""Confinement: the one place a file under a memory root is opened.

Every `Layout` registers its root here. A path under a registered root is opened by a walk from the
root, one folder at a time, each with O_NOFOLLOW|O_DIRECTORY relative to the folder before it
(openat), and the file itself with O_NOFOLLOW: a symbolic link anywhere below the root (a committed
`memory/index -> /etc`, `memory/<today>.md -> ~/.bashrc`) is refused, and since every step opens a
folder it already holds, swapping a folder for a link between two steps cannot redirect it.
Reads are opened with O_NONBLOCK (a FIFO never blocks), refused unless fstat says a regular file,
and capped (at most cap+1 bytes are read). The root itself may be a link: it is the user's choice.

The one exception: a Layer 3 file at the root (MEMORY.md, USER.md, AGENTS.md) that is a link the
user made to keep it elsewhere (a dotfiles repository) is followed when it ends at a regular file of
the same name: `MEMORY.md -> ~/dotfiles/proj/MEMORY.md` is read and written through, while
`MEMORY.md -> ~/.bashrc` or `-> ~/.ssh/id_ed25519` is refused like any other link.

Paths under no registered root (an archive the user names, an agent's config file) are opened as
given. Refusals are `UnsafePath`, a StorageError: writers let it stop the command (nothing written),
readers skip the file with a warning naming it and why.
"""

from __future__ import annotations

import errno
import os
import shlex
import stat
from contextlib import suppress
from pathlib import Path

from memtool import constants as C
from memtool.errors import UnsafePath

_ROOTS: set[str] = set()  # absolute memory roots, as Layout holds them
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | CLOEXEC


def register_root(root: Path | str) -> None:
    _ROOTS.add(os.path.abspath(os.fspath(root)))


def locate(path: Path | str) -> tuple[str, list[str]] | None:
    """(root, names below it) when `path` lies under a registered root (the nearest), else None."""
    s = os.fspath(path)
    if not os.path.isabs(s):
        s = os.path.join(os.getcwd(), s)
    head = s
    while head not in _ROOTS:
        up = os.path.dirname(head)
        if up == head:
            return None
        head = up
    rest = s[len(head) :].strip(os.sep)
    return head, rest.split(os.sep) if rest else []


def walked(path: Path | str) -> tuple[str, list[str]] | None:
    """(root, names below it) when `path` is opened by the walk from its root: under a registered root,
    not the root itself, and not a Layer 3 file there that is a link (the one kind of link followed,
    and only to a file of its own name: MEMORY.md -> .../MEMORY.md, else UnsafePath)."""
    where = locate(path)
    if where is None or not where[1]:
        return None
    if len(where[1]) == 1 and where[1][0] in C.LAYER3_FILES and os.path.islink(path):
        target = os.path.realpath(path)
        if os.path.basename(target) != where[1][0]:
            raise UnsafePath(
                f"{path} is a symbolic link to {target}: a linked {where[1][0]} must point to a file named {where[1][0]} "
                "(a dotfiles copy), so it was not opened"
            )
        return None
    return where


def link_fix(link: Path | str) -> str:
    """How to mend a symbolic link (or a file) where a memory root needs a real folder or file."""
    if not os.path.islink(link):
        return f"move it away ({shlex.quote(str(link))} is not a folder)"
    here, target = shlex.quote(str(link)), shlex.quote(os.path.realpath(link))
    what = "folder" if os.path.isdir(link) else "file"
    return f"replace the link with the {what} itself: `rm {here} && cp -a {target} {here}` (or `rm {here}` to start it anew)"


def _refusal(path: Path | str, exc: OSError, shown: str) -> OSError | UnsafePath:
    """What to raise for `exc`, met opening `shown`: a missing file or a denied permission as is, else UnsafePath."""
    if isinstance(exc, (FileNotFoundError, PermissionError)):
        return exc
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        what = "a symbolic link" if os.path.islink(shown) else "not a folder"
        return UnsafePath(f"{path}: {shown} is {what}, and memtool never follows links inside a memory root; {link_fix(shown)}")
    if exc.errno == errno.ENXIO:
        return UnsafePath(f"{path}: not a regular file (a FIFO or socket)")
    return UnsafePath(f"{path}: {exc.strerror or exc}")


def open_folder(root: str, names: list[str], path: Path | str, create: bool = False) -> int:
    """A descriptor of root/names[0]/names[1]/..., each step opened without following a link; with
    `create`, missing folders are made (inside the folder just opened). Raises UnsafePath for a link
    or a non-folder on the way, FileNotFoundError for a missing one without `create`."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | CLOEXEC)
    try:
        for i, name in enumerate(names):
            if name in ("", ".", ".."):
                raise UnsafePath(f"{path}: {name!r} in a path below the memory root")
            try:
                nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):  # made meanwhile by another process: opened below, still without following a link
                    os.mkdir(name, 0o777, dir_fd=fd)
                nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _refusal(path, exc, os.path.join(root, *names[: i + 1])) from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_read(path: Path | str) -> int:
    """A read descriptor of a regular file, opened as the module docstring says. Raises UnsafePath for
    a link, a FIFO, a device or a socket; FileNotFoundError when missing."""
    where = walked(path)
    if where is None:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | CLOEXEC)
    else:
        root, names = where
        dfd = open_folder(root, names[:-1], path)
        try:
            fd = os.open(names[-1], _READ_FLAGS, dir_fd=dfd)
        except OSError as exc:
            raise _refusal(path, exc, str(path)) from None
        finally:
            os.close(dfd)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            raise UnsafePath(f"{path}: {kind}, not a regular file; skipped")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: Path | str, cap: int = C.MAX_STORE_FILE_BYTES) -> bytes:
    """The bytes of a regular file, at most `cap`: a larger one raises UnsafePath naming the cap
    (only cap+1 bytes are ever read, whatever the file claims)."""
    fd = open_read(path)
    try:
        chunks, got = [], 0
        while got <= cap:
            chunk = os.read(fd, min(cap + 1 - got, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    if got > cap:
        raise UnsafePath(f"{path}: larger than the {cap:,}-byte limit for a file memtool reads; skipped")
    return b"".join(chunks)


def read_text(path: Path | str, cap: int = C.MAX_STORE_FILE_BYTES, errors: str = "strict") -> str:
    return read_bytes(path, cap).decode("utf-8", errors=errors)


def read_optional_text(path: Path | str, cap: int, problems: list[str], message: str = "{}") -> str | None:
    """A Markdown or transcript file's text (invalid UTF-8 replaced), None when it does not exist; one
    that is a link out of the root, not a regular file or over `cap` is reported into `problems`
    (`message` with the reason in its {}) and read as None."""
    try:
        return read_text(path, cap, errors="replace")
    except FileNotFoundError:
        return None
    except UnsafePath as exc:
        problems.append(message.format(exc))
        return None


def is_regular(path: Path | str) -> bool:
    """`path` is a regular file that reads would open: no link below the root (but a Layer 3 one), no FIFO or device."""
    try:
        os.close(open_read(path))
    except (OSError, UnsafePath):
        return False
    return True


def safe_folder(path: Path | str, create: bool = False) -> None:
    """Check (and with `create` make) the folder `path` by the same walk: UnsafePath when a link or a
    file stands on the way. For code that then writes inside it by name (the search cache builder)."""
    where = locate(path)
    if where is None:
        if create:
            os.makedirs(path, exist_ok=True)
        return
    os.close(open_folder(where[0], where[1], path, create=create))
