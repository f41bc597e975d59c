"""Which memory root a command serves: --root, $MEMTOOL_ROOT, or the nearest one up from here.

Apart from memtool.app so that `memory serve` names its root without loading the core.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from memtool import constants as C
from memtool.errors import NotAMemoryRoot


def resolve_root(root: str | Path | None = None) -> Path:
    """--root, else $MEMTOOL_ROOT, else the nearest folder upwards from here holding memory/."""
    for given, named in ((root, "--root"), (os.environ.get(C.ENV_ROOT), C.ENV_ROOT)):
        if given:
            return _named_root(Path(given).expanduser(), named)
    here = Path.cwd().resolve()
    return _upwards(here) or here


def _upwards(here: Path) -> Path | None:
    """The nearest folder from `here` upwards holding memory/index/, or None."""
    return next((folder for folder in (here, *here.parents) if (folder / C.MEMORY_DIR / C.INDEX_DIR).is_dir()), None)


def _named_root(path: Path, named: str) -> Path:
    """The absolute root `path` stands for, through symbolic links. A root that does not exist yet is
    fine (`memory init` makes it), but not one behind a symbolic link to nothing (a dotfiles or
    project folder not checked out, a disk not mounted): `init` would make the folder at the link's
    far end, and other commands would name that folder, not the link. A link loop is an error too."""
    try:
        return path.resolve(strict=True)
    except RuntimeError:  # a link loop, in pathlib before Python 3.13
        loop = True
    except OSError as exc:  # missing, or under a file: init and require() say what is in the way
        loop = exc.errno == errno.ELOOP
    if loop:
        raise NotAMemoryRoot(f"{named} {path} cannot be followed: a symbolic link loop. Fix the path or the link.")
    for part in (path, *path.parents):
        if os.path.islink(part) and not os.path.exists(part):
            where = f"{named} {path} is" if part == path else f"{named} {path}: {part} is"
            raise NotAMemoryRoot(
                f"{where} a symbolic link to {os.path.realpath(part)}, which does not exist. "
                "Create it (check out or mount what it points to) or fix the link; nothing was created."
            )
    return path.resolve()


def personal_root(setting: str) -> Path | None:
    """The personal memory root the setting `personal_root` names: a path, "off" (none), or "" for
    $XDG_DATA_HOME/memtool (default ~/.local/share/memtool; a relative XDG_DATA_HOME is ignored, as
    the XDG spec says). It may not exist yet: `memory init --personal` (or a first `--personal`
    write) makes it."""
    if setting == C.PERSONAL_OFF:
        return None
    if setting:
        path = Path(setting).expanduser()
        if not path.is_absolute():
            raise NotAMemoryRoot(f"personal_root {setting!r} is not an absolute path; give one like ~/.local/share/memtool, or 'off'")
        return _named_root(path, "personal_root")
    base = os.environ.get(C.ENV_DATA_HOME, "")
    return _named_root(Path(base if os.path.isabs(base) else Path.home() / ".local" / "share") / C.USER_CONFIG_DIR, "the personal root")


def private_root(root: Path) -> Path:
    """The root of a memory root's private entries and log lines: memory/.private (ignored by git)."""
    return root / C.MEMORY_DIR / C.PRIVATE_DIR


def found_root(root: str | Path | None = None) -> bool:
    """Whether `resolve_root` names a root the user chose (--root, $MEMTOOL_ROOT) or found one upwards."""
    return bool(root or os.environ.get(C.ENV_ROOT)) or _upwards(Path.cwd().resolve()) is not None
